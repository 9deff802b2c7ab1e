/* The driver's own alternatives for the two calls whose targets are ratios to the raw driver
 * (issue 35): for the queue-ordered pair, cuMemAllocAsync (the stream's device's current pool)
 * against cuMemAllocFromPoolAsync on the device's default pool, each followed by
 * cuMemFreeAsync; for the argument update of a one-kernel graph, cuGraphExecKernelNodeSetParams
 * with kernelParams (one pointer per parameter) against the same call with `extra` (the packed
 * argument buffer). No ordo: which driver call the CUDA backend should make. ABBA rounds of
 * batches of 1,000 calls (the stream synchronised after each batch, untimed); medians with the
 * quartiles of the per-round ratios.
 * Built on the GPU machine: cc -O2 -I<cuda>/include driver_probe.c -lcuda
 * Usage: driver_probe [rounds] */
#include <stdint.h>
#include <string.h>

#include "abba.h"
#include "gpu_bench.h"

enum { N = 1000, SIZE = 1 << 20 };

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry spin(.param .u64 n, .param .u64 p, .param .u32 k)\n{\n ret;\n}\n";

static CUstream stream;
static CUmemoryPool pool;
static CUgraphExec exec;
static CUgraphNode node;
static CUDA_KERNEL_NODE_PARAMS captured;

static void sync_stream(void) { CU(cuStreamSynchronize(stream)); }

static double pair_async(void) {
  double t0 = now();
  for (int i = 0; i < N; i++) {
    CUdeviceptr a;
    CU(cuMemAllocAsync(&a, SIZE, stream));
    CU(cuMemFreeAsync(a, stream));
  }
  double t = (now() - t0) / N;
  sync_stream();
  return t;
}

static double pair_pool(void) {
  double t0 = now();
  for (int i = 0; i < N; i++) {
    CUdeviceptr a;
    CU(cuMemAllocFromPoolAsync(&a, SIZE, pool, stream));
    CU(cuMemFreeAsync(a, stream));
  }
  double t = (now() - t0) / N;
  sync_stream();
  return t;
}

static struct __attribute__((packed, aligned(8))) {
  uint64_t n, p;
  uint32_t k;
} packed;

static double update_params(void) {
  double t0 = now();
  for (int i = 0; i < N; i++) {
    uint64_t n = (uint64_t)i, p = 0;
    uint32_t k = 7;
    void *params[3] = {&n, &p, &k};
    CUDA_KERNEL_NODE_PARAMS u = captured;
    u.kernelParams = params;
    u.extra = NULL;
    CU(cuGraphExecKernelNodeSetParams(exec, node, &u));
  }
  return (now() - t0) / N;
}

static double update_extra(void) {
  double t0 = now();
  for (int i = 0; i < N; i++) {
    packed.n = (uint64_t)i;
    packed.p = 0;
    packed.k = 7;
    size_t size = 20;
    void *extra[5] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    CUDA_KERNEL_NODE_PARAMS u = captured;
    u.kernelParams = NULL;
    u.extra = extra;
    CU(cuGraphExecKernelNodeSetParams(exec, node, &u));
  }
  return (now() - t0) / N;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 50;
  CUdevice dev = primary_context();
  CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CU(cuDeviceGetDefaultMemPool(&pool, dev));
  uint64_t threshold = UINT64_MAX;
  CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));

  CUmodule module;
  CUfunction fn;
  CU(cuModuleLoadData(&module, ptx));
  CU(cuModuleGetFunction(&fn, module, "spin"));
  CUgraph graph;
  CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  uint64_t n = 1, p = 0;
  uint32_t k = 7;
  void *params[3] = {&n, &p, &k};
  CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL));
  CU(cuStreamEndCapture(stream, &graph));
  size_t count = 1;
  CU(cuGraphGetNodes(graph, &node, &count));
  CU(cuGraphKernelNodeGetParams(node, &captured));
  CU(cuGraphInstantiate(&exec, graph, 0));

  for (int w = 0; w < 3; w++) pair_async(), pair_pool(), update_params(), update_extra();
  printf("| driver call | A ns | B ns | B / A: median [p25, p75] | |\n|---|---|---|---|---|\n");
  abba_report("1 MiB pair: cuMemAllocAsync (A) vs cuMemAllocFromPoolAsync on the default pool (B)", pair_async,
              pair_pool, rounds, "probe");
  abba_report("graph update: kernelParams (A) vs extra, packed buffer (B)", update_params, update_extra, rounds,
              "probe");
  CU(cuGraphLaunch(exec, stream));
  sync_stream();
  CU(cuGraphExecDestroy(exec));
  CU(cuGraphDestroy(graph));
  CU(cuStreamDestroy(stream));
  CU(cuModuleUnload(module));
  CU(cuDevicePrimaryCtxRelease(dev));
  return 0;
}

/* The MLIR runtime ABI through libordo.so against the driver calls upstream's wrappers make,
 * in one process, ABBA rounds, per-round ratios with quartiles.
 *
 * 1. launch: mgpuLaunchKernel vs cuLaunchKernel (batches of 1000 empty-kernel launches on one
 *    stream, then a synchronise), target <= 1.02x.
 * 2. the synchronous gpu.launch_func sequence MLIR emits: get function, stream create, launch,
 *    stream synchronize, stream destroy. Baseline: the five driver calls upstream's
 *    CudaRuntimeWrappers.cpp makes for them (cuModuleGetFunction, cuStreamCreate,
 *    cuLaunchKernel, cuStreamSynchronize, cuStreamDestroy), written here directly (upstream's
 *    library itself is not built on this machine); target <= 0.65x.
 *
 * Built on the GPU machine: cc -O2 -I<cuda>/include mlir_bench.c gpu-bin/mlir/libordo.so.0
 *   -lcuda -Wl,-rpath,gpu-bin/mlir -o mlir_bench */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void *mgpuModuleLoadJIT(void *data, int32_t opt);
void *mgpuModuleGetFunction(void *module, const char *name);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuLaunchKernel(void *f, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by, int64_t bz,
                      int32_t smem, void *stream, void **params, void **extra, int64_t count);

static const char PTX[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry empty() { ret; }\n";

#define CHECK(x)                                                                   \
  do {                                                                             \
    CUresult r_ = (x);                                                             \
    if (r_ != CUDA_SUCCESS) { fprintf(stderr, "%s failed: %d\n", #x, (int)r_); exit(1); } \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static CUmodule raw_module;
static CUfunction raw_fn;
static CUstream raw_stream, raw_blocking;
static void *o_module, *o_fn, *o_stream;

enum { LAUNCHES = 1000, SEQUENCES = 300, ROUNDS = 12 };

static double raw_launches(void) {
  double t = now();
  for (int i = 0; i < LAUNCHES; i++) CHECK(cuLaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, NULL, NULL));
  CHECK(cuStreamSynchronize(raw_stream));
  return (now() - t) / LAUNCHES;
}

/* The same on a blocking stream (CU_STREAM_DEFAULT), the kind ordo's queues are (so that calls
 * without a queue, on the legacy stream, are ordered after queued work). */
static double raw_blocking_launches(void) {
  double t = now();
  for (int i = 0; i < LAUNCHES; i++) CHECK(cuLaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_blocking, NULL, NULL));
  CHECK(cuStreamSynchronize(raw_blocking));
  return (now() - t) / LAUNCHES;
}

static double ordo_launches(void) {
  double t = now();
  for (int i = 0; i < LAUNCHES; i++) mgpuLaunchKernel(o_fn, 1, 1, 1, 1, 1, 1, 0, o_stream, NULL, NULL, 0);
  mgpuStreamSynchronize(o_stream);
  return (now() - t) / LAUNCHES;
}

static double raw_sequence(void) {
  double t = now();
  for (int i = 0; i < SEQUENCES; i++) {
    CUfunction f;
    CUstream s;
    CHECK(cuModuleGetFunction(&f, raw_module, "empty"));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuStreamDestroy(s));
  }
  return (now() - t) / SEQUENCES;
}

static double ordo_sequence(void) {
  double t = now();
  for (int i = 0; i < SEQUENCES; i++) {
    void *f = mgpuModuleGetFunction(o_module, "empty");
    void *s = mgpuStreamCreate();
    mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
    mgpuStreamSynchronize(s);
    mgpuStreamDestroy(s);
  }
  return (now() - t) / SEQUENCES;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void report(const char *name, double (*bare)(void), double (*ordo)(void), const char *target) {
  double ratios[ROUNDS], b_sum = 0, o_sum = 0;
  for (int r = 0; r < ROUNDS; r++) { /* ABBA */
    double b1 = bare(), o1 = ordo(), o2 = ordo(), b2 = bare();
    ratios[r] = (o1 + o2) / (b1 + b2);
    b_sum += b1 + b2;
    o_sum += o1 + o2;
  }
  qsort(ratios, ROUNDS, sizeof ratios[0], cmp);
  printf("| %s | %.0f ns | %.0f ns | %.3f [%.3f, %.3f] | %s |\n", name, b_sum / (2 * ROUNDS), o_sum / (2 * ROUNDS),
         ratios[ROUNDS / 2], ratios[ROUNDS / 4], ratios[(3 * ROUNDS) / 4], target);
}

int main(void) {
  /* ordo first (its init retains the primary context), then the same primary context for the
   * driver calls. */
  o_module = mgpuModuleLoadJIT((void *)PTX, 2);
  o_fn = mgpuModuleGetFunction(o_module, "empty");
  o_stream = mgpuStreamCreate();
  if (!o_module || !o_fn || !o_stream) { fprintf(stderr, "mgpu setup failed\n"); return 1; }
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&raw_module, PTX));
  CHECK(cuModuleGetFunction(&raw_fn, raw_module, "empty"));
  CHECK(cuStreamCreate(&raw_stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&raw_blocking, CU_STREAM_DEFAULT));
  raw_launches(); raw_blocking_launches(); ordo_launches(); raw_sequence(); ordo_sequence(); /* warm-up */
  printf("| benchmark | driver calls | libordo mgpu* | ordo / driver, per-round median [p25, p75] | target |\n");
  printf("|---|---|---|---|---|\n");
  report("mgpuLaunchKernel vs cuLaunchKernel (batches of 1000, then a synchronise)", raw_launches, ordo_launches,
         "<= 1.02");
  report("mgpuLaunchKernel vs cuLaunchKernel on a blocking stream (as ordo's queues are)", raw_blocking_launches,
         ordo_launches, "(informational)");
  report("synchronous launch sequence: get function, stream create, launch, synchronize, destroy", raw_sequence,
         ordo_sequence, "<= 0.65");
  CHECK(cuStreamDestroy(raw_stream));
  CHECK(cuStreamDestroy(raw_blocking));
  CHECK(cuModuleUnload(raw_module));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  mgpuStreamDestroy(o_stream);
  return 0;
}

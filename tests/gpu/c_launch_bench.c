/* Empty-kernel launches through the C ABI (ordo_launch) vs raw cuLaunchKernel, side by side in
 * one process, on the same device and primary context. libcuda is opened with dlopen, so this
 * builds with only a C compiler: cc -O2 -I ffi/include tests/gpu/c_launch_bench.c libordo.a
 * -ldl -lgcc_s -lutil -lrt -lpthread -lm -lc. Prints table rows like cuda_bench. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ordo.h"

typedef int CUresult;
typedef void *Ptr;
static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(Ptr *, int);
static CUresult (*cuDevicePrimaryCtxRelease)(int);
static CUresult (*cuCtxSetCurrent)(Ptr);
static CUresult (*cuModuleLoadData)(Ptr *, const void *);
static CUresult (*cuModuleGetFunction)(Ptr *, Ptr, const char *);
static CUresult (*cuStreamCreate)(Ptr *, unsigned);
static CUresult (*cuStreamSynchronize)(Ptr);
static CUresult (*cuLaunchKernel)(Ptr, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Ptr,
                                  void **, void **);

#define LOAD(name, symbol)                                           \
  do {                                                               \
    *(void **)(&name) = dlsym(lib, symbol);                          \
    if (!name) {                                                     \
      fprintf(stderr, "missing %s\n", symbol);                       \
      exit(1);                                                       \
    }                                                                \
  } while (0)
#define CU(call)                                                     \
  do {                                                               \
    if ((call) != 0) {                                               \
      fprintf(stderr, "%s failed\n", #call);                         \
      exit(1);                                                       \
    }                                                                \
  } while (0)
#define OK(call)                                                     \
  do {                                                               \
    if ((call) != ORDO_SUCCESS) {                                    \
      fprintf(stderr, "%s: %s\n", #call, ordo_last_error_detail());  \
      exit(1);                                                       \
    }                                                                \
  } while (0)

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

static Ptr raw_fn, raw_stream;
static ordo_queue_t queue;
static ordo_kernel_t kernel;
static const ordo_launch_dims_t one = {{1, 1, 1}, {1, 1, 1}, 0};

static void raw_launch(void) { CU(cuLaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, NULL, NULL)); }
static void raw_sync(void) { CU(cuStreamSynchronize(raw_stream)); }
static void ordo_launch1(void) { OK(ordo_launch(queue, kernel, &one, NULL, NULL, 0)); }
static void ordo_sync(void) { OK(ordo_queue_synchronize(queue)); }

static double throughput(int n, void (*launch)(void), void (*sync)(void)) {
  double t = now_ns();
  for (int i = 0; i < n; i++) launch();
  sync();
  return (now_ns() - t) / n;
}

static double submit(int batch, void (*launch)(void), void (*sync)(void)) {
  double t = now_ns();
  for (int i = 0; i < batch; i++) launch();
  double ns = (now_ns() - t) / batch;
  sync();
  return ns;
}

#define ROUNDS 9

int main(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "libcuda.so.1 not found\n");
    return 2;
  }
  LOAD(cuInit, "cuInit");
  LOAD(cuDeviceGet, "cuDeviceGet");
  LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  LOAD(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  LOAD(cuCtxSetCurrent, "cuCtxSetCurrent");
  LOAD(cuModuleLoadData, "cuModuleLoadData");
  LOAD(cuModuleGetFunction, "cuModuleGetFunction");
  LOAD(cuStreamCreate, "cuStreamCreate");
  LOAD(cuStreamSynchronize, "cuStreamSynchronize");
  LOAD(cuLaunchKernel, "cuLaunchKernel");

  OK(ordo_init());
  ordo_platform_t platform;
  ordo_platform_info_t info;
  OK(ordo_platform_get(1, &platform)); /* 0 is the host backend, 1 CUDA */
  OK(ordo_platform_get_info(platform, &info));
  if (!info.present) {
    fprintf(stderr, "CUDA absent: %s\n", (const char *)info.absent_reason);
    return 2;
  }
  ordo_device_t device;
  const void *image;
  size_t size;
  ordo_program_t program;
  OK(ordo_device_get(platform, 0, &device));
  OK(ordo_builtin_program_image(device, &image, &size));
  OK(ordo_program_load(device, image, size, &program));
  OK(ordo_kernel_get(program, "empty", &kernel));
  OK(ordo_queue_create(device, &queue));

  /* The raw side: same device, same primary context, its own module and stream. */
  char *ptx = malloc(size + 1);
  for (size_t i = 0; i < size; i++) ptx[i] = ((const char *)image)[i];
  ptx[size] = 0;
  int dev;
  Ptr ctx, module;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CU(cuModuleLoadData(&module, ptx));
  CU(cuModuleGetFunction(&raw_fn, module, "empty"));
  CU(cuStreamCreate(&raw_stream, 1));

  /* ABBA rounds (raw, ordo, ordo, raw); per-round ratio (o1 + o2) / (r1 + r2). */
  static double r[4 * ROUNDS], o[4 * ROUNDS], q[4 * ROUNDS];
  for (int i = 0; i < ROUNDS; i++) {
    double r1 = throughput(100000, raw_launch, raw_sync), o1 = throughput(100000, ordo_launch1, ordo_sync);
    double o2 = throughput(100000, ordo_launch1, ordo_sync), r2 = throughput(100000, raw_launch, raw_sync);
    r[2 * i] = r1, r[2 * i + 1] = r2, o[2 * i] = o1, o[2 * i + 1] = o2, q[i] = (o1 + o2) / (r1 + r2);
  }
  double rt = median(r, 2 * ROUNDS), ot = median(o, 2 * ROUNDS);
  qsort(q, ROUNDS, sizeof *q, cmp);
  printf("| C ABI: launch throughput, 100k in a row | ns/launch | %.3f | %.3f | %.4f | %.4f [%.4f, %.4f] |\n", rt, ot,
         ot / rt, q[ROUNDS / 2], q[ROUNDS / 4], q[3 * ROUNDS / 4]);
  for (int i = 0; i < 4 * ROUNDS; i++) {
    double s1[50], s2[50], s3[50], s4[50];
    for (int j = 0; j < 50; j++) s1[j] = submit(32, raw_launch, raw_sync);
    for (int j = 0; j < 50; j++) s2[j] = submit(32, ordo_launch1, ordo_sync);
    for (int j = 0; j < 50; j++) s3[j] = submit(32, ordo_launch1, ordo_sync);
    for (int j = 0; j < 50; j++) s4[j] = submit(32, raw_launch, raw_sync);
    double r1 = median(s1, 50), o1 = median(s2, 50), o2 = median(s3, 50), r2 = median(s4, 50);
    r[i] = (r1 + r2) / 2, o[i] = (o1 + o2) / 2, q[i] = (o1 + o2) / (r1 + r2);
  }
  double rs = median(r, 4 * ROUNDS), os = median(o, 4 * ROUNDS);
  qsort(q, 4 * ROUNDS, sizeof *q, cmp);
  printf("| C ABI: launch submit cost, batches of 32 | ns/launch | %.3f | %.3f | %.4f | %.4f [%.4f, %.4f] |\n", rs, os,
         os / rs, q[2 * ROUNDS], q[ROUNDS], q[3 * ROUNDS]);
  CU(cuDevicePrimaryCtxRelease(dev));
  OK(ordo_shutdown());
  ordo_teardown_report_t report;
  OK(ordo_last_teardown_report(&report));
  free(ptx);
  return report.failure_count == 0 ? 0 : 1;
}

/* Empty-kernel launches through the C ABI (ordo_launch) vs raw cuLaunchKernel, side by side in
 * one process, on the same device and primary context: first with the benchmark's own module
 * and stream (a blocking stream, the kind ordo's queues are), then on the very CUfunction and
 * CUstream behind ordo's handles (ordo_kernel_native, ordo_queue_native), so that the arms differ
 * only in ordo's code. By default ordo's objects are made first; with the argument `raw-first`
 * the benchmark's are (the process's first stream and module are not its second). libcuda is
 * opened with dlopen, so this builds with only a C compiler: cc -O2 -I ffi/include
 * tests/gpu/c_launch_bench.c libordo.a -ldl -lgcc_s -lutil -lrt -lpthread -lm -lc. Prints table
 * rows like cuda_bench. */
#include <string.h>
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

static Ptr raw_fn, raw_stream, ordo_fn, ordo_stream;
static ordo_queue_t queue;
static ordo_kernel_t kernel;
static const ordo_launch_dims_t one = {{1, 1, 1}, {1, 1, 1}, 0};

static void raw_launch(void) { CU(cuLaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, NULL, NULL)); }
static void raw_sync(void) { CU(cuStreamSynchronize(raw_stream)); }
static void same_launch(void) { CU(cuLaunchKernel(ordo_fn, 1, 1, 1, 1, 1, 1, 0, ordo_stream, NULL, NULL)); }
static void same_sync(void) { CU(cuStreamSynchronize(ordo_stream)); }
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

/* The two rows (throughput and submit cost) of ordo_launch against `raw`, ABBA rounds (raw, ordo,
 * ordo, raw) with the per-round ratio (o1 + o2) / (r1 + r2). */
static void rows(const char *what, void (*raw)(void), void (*raw_sync_fn)(void)) {
  static double r[4 * ROUNDS], o[4 * ROUNDS], q[4 * ROUNDS];
  for (int i = 0; i < ROUNDS; i++) {
    double r1 = throughput(100000, raw, raw_sync_fn), o1 = throughput(100000, ordo_launch1, ordo_sync);
    double o2 = throughput(100000, ordo_launch1, ordo_sync), r2 = throughput(100000, raw, raw_sync_fn);
    r[2 * i] = r1, r[2 * i + 1] = r2, o[2 * i] = o1, o[2 * i + 1] = o2, q[i] = (o1 + o2) / (r1 + r2);
  }
  double rt = median(r, 2 * ROUNDS), ot = median(o, 2 * ROUNDS);
  qsort(q, ROUNDS, sizeof *q, cmp);
  printf("| C ABI%s: launch throughput, 100k in a row | ns/launch | %.3f | %.3f | %.4f | %.4f [%.4f, %.4f] | <= 1.02 |\n", what,
         rt, ot, ot / rt, q[ROUNDS / 2], q[ROUNDS / 4], q[3 * ROUNDS / 4]);
  for (int i = 0; i < 4 * ROUNDS; i++) {
    double s1[50], s2[50], s3[50], s4[50];
    for (int j = 0; j < 50; j++) s1[j] = submit(32, raw, raw_sync_fn);
    for (int j = 0; j < 50; j++) s2[j] = submit(32, ordo_launch1, ordo_sync);
    for (int j = 0; j < 50; j++) s3[j] = submit(32, ordo_launch1, ordo_sync);
    for (int j = 0; j < 50; j++) s4[j] = submit(32, raw, raw_sync_fn);
    double r1 = median(s1, 50), o1 = median(s2, 50), o2 = median(s3, 50), r2 = median(s4, 50);
    r[i] = (r1 + r2) / 2, o[i] = (o1 + o2) / 2, q[i] = (o1 + o2) / (r1 + r2);
  }
  double rs = median(r, 4 * ROUNDS), os = median(o, 4 * ROUNDS);
  qsort(q, 4 * ROUNDS, sizeof *q, cmp);
  printf("| C ABI%s: launch submit cost, batches of 32 | ns/launch | %.3f | %.3f | %.4f | %.4f [%.4f, %.4f] | <= 1.02 |\n", what,
         rs, os, os / rs, q[2 * ROUNDS], q[ROUNDS], q[3 * ROUNDS]);
}

/* The benchmark's module (from `ptx`), function and blocking stream, in the primary context. */
static int raw_objects(const char *ptx, Ptr *module) {
  int dev;
  Ptr ctx;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CU(cuModuleLoadData(module, ptx));
  CU(cuModuleGetFunction(&raw_fn, *module, "empty"));
  CU(cuStreamCreate(&raw_stream, 0)); /* CU_STREAM_DEFAULT: blocking, as ordo's queues are */
  return dev;
}

int main(int argc, char **argv) {
  if (argc > 2 || (argc == 2 && strcmp(argv[1], "raw-first") != 0)) {
    fprintf(stderr, "usage: c_launch_bench [raw-first]\n");
    return 2;
  }
  int raw_first = argc == 2;
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
  /* ordo's built-in CUDA image (PTX, not NUL-terminated): the raw side loads the same text. */
  OK(ordo_builtin_program_image(device, &image, &size));
  char *ptx = malloc(size + 1);
  memcpy(ptx, image, size);
  ptx[size] = 0;
  int dev = 0;
  Ptr module;
  if (raw_first) dev = raw_objects(ptx, &module);
  printf("objects made first: %s\n", raw_first ? "the benchmark's (raw-first)" : "ordo's");
  OK(ordo_program_load(device, image, size, &program));
  OK(ordo_kernel_get(program, "empty", &kernel));
  OK(ordo_queue_create(device, &queue));
  if (!raw_first) dev = raw_objects(ptx, &module);
  OK(ordo_kernel_native(kernel, &ordo_fn));
  OK(ordo_queue_native(queue, &ordo_stream));

  rows("", raw_launch, raw_sync);
  rows(", same CUfunction and CUstream", same_launch, same_sync);
  CU(cuDevicePrimaryCtxRelease(dev));
  OK(ordo_shutdown());
  ordo_teardown_report_t report;
  OK(ordo_last_teardown_report(&report));
  free(ptx);
  return report.failure_count == 0 ? 0 : 1;
}

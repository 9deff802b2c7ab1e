/* Two builds of libordo.so (feature `offload`) in one process: each loaded with dlopen from its
 * own path (its own statics, its own runtime, queue and module), each launch measured against the
 * driver on that build's own CUfunction and CUstream (ordo_kernel_native, ordo_queue_native).
 * Rounds of raw A, ol A, ol B, raw B, raw B, ol B, ol A, raw A (batches of 1000 launches, then a
 * synchronise), so that what moves between processes (placement, the benchmark's own layout,
 * another tenant) moves both builds alike; what stays is each build's own cost, code layout
 * included. Prints per kernel each build's olLaunchKernel / cuLaunchKernel and the ratio of the
 * two (B's over A's), per-round medians with quartiles. A diagnosis for changes to the launch
 * path (tests/gpu/bench_ab.sh runs builds in separate processes).
 * Built on the GPU machine: cc -O2 -I<cuda>/include inproc_ab.c -lcuda -ldl
 * Usage: inproc_ab kernels.ptx A/libordo.so.0 B/libordo.so.0 [rounds] */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "abba.h"
#include "gpu_bench.h"

typedef struct { uint64_t raw; } ordo_handle_t;

enum { N = 1000 };

typedef struct {
  ol_result_t (*init)(void);
  ol_result_t (*iterate)(bool (*)(ol_handle, void *), void *);
  ol_result_t (*get_device_info)(ol_handle, int, size_t, void *);
  ol_result_t (*create_queue)(ol_handle, ol_handle *);
  ol_result_t (*create_program)(ol_handle, const void *, size_t, ol_handle *);
  ol_result_t (*get_symbol)(ol_handle, const char *, int, ol_handle *);
  ol_result_t (*launch)(ol_handle, ol_handle, ol_handle, const void *, size_t, const ol_kernel_launch_size_args_t *);
  ol_result_t (*sync)(ol_handle);
  int (*queue_native)(ordo_handle_t, void **);
  int (*kernel_native)(ordo_handle_t, void **);
  ol_handle gpu, queue, program, empty, add;
  CUfunction empty_fn, add_fn;
  CUstream stream;
} build_t;

static build_t A, B;
static const ol_kernel_launch_size_args_t one = {1, {1, 1, 1}, {1, 1, 1}, 0};
static struct { void *a, *b, *c; uint32_t n; } add_args;
static void *add_params[4] = {&add_args.a, &add_args.b, &add_args.c, &add_args.n};

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p) { fprintf(stderr, "%s: %s\n", name, dlerror()); exit(1); }
  return p;
}

static build_t *iterating;
static bool first_gpu(ol_handle device, void *user) {
  (void)user;
  uint32_t type = 0;
  if (!iterating->get_device_info(device, 0 /* OL_DEVICE_INFO_TYPE */, sizeof type, &type) && type == 2 /* GPU */ &&
      !iterating->gpu)
    iterating->gpu = device;
  return true;
}

static void load(build_t *b, const char *path, const char *ptx, size_t len) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "%s: %s\n", path, dlerror()); exit(1); }
  b->init = sym(lib, "olInit");
  b->iterate = sym(lib, "olIterateDevices");
  b->get_device_info = sym(lib, "olGetDeviceInfo");
  b->create_queue = sym(lib, "olCreateQueue");
  b->create_program = sym(lib, "olCreateProgram");
  b->get_symbol = sym(lib, "olGetSymbol");
  b->launch = sym(lib, "olLaunchKernel");
  b->sync = sym(lib, "olSyncQueue");
  b->queue_native = sym(lib, "ordo_queue_native");
  b->kernel_native = sym(lib, "ordo_kernel_native");
  OL(b->init());
  iterating = b;
  OL(b->iterate(first_gpu, NULL));
  if (!b->gpu) { fprintf(stderr, "%s: no GPU device\n", path); exit(1); }
  OL(b->create_queue(b->gpu, &b->queue));
  OL(b->create_program(b->gpu, ptx, len, &b->program));
  OL(b->get_symbol(b->program, "empty", 0, &b->empty));
  OL(b->get_symbol(b->program, "vector_add_f32", 0, &b->add));
  if (b->queue_native((ordo_handle_t){(uint64_t)(uintptr_t)b->queue}, (void **)&b->stream) ||
      b->kernel_native((ordo_handle_t){(uint64_t)(uintptr_t)b->empty}, (void **)&b->empty_fn) ||
      b->kernel_native((ordo_handle_t){(uint64_t)(uintptr_t)b->add}, (void **)&b->add_fn)) {
    fprintf(stderr, "%s: ordo_*_native failed\n", path);
    exit(1);
  }
}

static int use_add;
static double raw(build_t *b) {
  CUfunction f = use_add ? b->add_fn : b->empty_fn;
  void **params = use_add ? add_params : NULL;
  double t = now();
  for (int i = 0; i < N; i++) CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, b->stream, params, NULL));
  CU(cuStreamSynchronize(b->stream));
  return (now() - t) / N;
}
static double ol(build_t *b) {
  ol_handle k = use_add ? b->add : b->empty;
  const void *args = use_add ? (const void *)&add_args : NULL;
  size_t size = use_add ? sizeof add_args : 0;
  double t = now();
  for (int i = 0; i < N; i++)
    if (b->launch(b->queue, b->gpu, k, args, size, &one)) { fprintf(stderr, "olLaunchKernel failed\n"); exit(1); }
  OL(b->sync(b->queue));
  return (now() - t) / N;
}

static void row(const char *name, double *v, int rounds) {
  qsort(v, rounds, sizeof v[0], abba_cmp);
  printf("| %s | %.3f [%.3f, %.3f] |\n", name, v[rounds / 2], v[rounds / 4], v[(3 * rounds) / 4]);
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: inproc_ab kernels.ptx A/libordo.so.0 B/libordo.so.0 [rounds]\n"); return 2; }
  int rounds = argc > 4 ? atoi(argv[4]) : 96;
  (void)abba_report; /* abba.h's other forms, not used here */
  (void)abba_calls;
  size_t len;
  const char *ptx = read_ptx(argv[1], &len);
  load(&A, argv[2], ptx, len);
  load(&B, argv[3], ptx, len);
  primary_context();
  double *ra = malloc(sizeof(double) * rounds), *rb = malloc(sizeof(double) * rounds);
  double *ba = malloc(sizeof(double) * rounds), *bb = malloc(sizeof(double) * rounds);
  printf("A = %s, B = %s, %d rounds of raw A, ol A, ol B, raw B, raw B, ol B, ol A, raw A (batches of %d)\n",
         argv[2], argv[3], rounds, N);
  printf("| row | per-round median [p25, p75] |\n|---|---|\n");
  for (use_add = 0; use_add < 2; use_add++) {
    const char *kernel = use_add ? "vector_add_f32" : "empty";
    raw(&A), ol(&A), ol(&B), raw(&B); /* warm-up */
    for (int r = 0; r < rounds; r++) {
      double r1 = raw(&A), a1 = ol(&A), b1 = ol(&B), s1 = raw(&B);
      double s2 = raw(&B), b2 = ol(&B), a2 = ol(&A), r2 = raw(&A);
      ra[r] = (a1 + a2) / (r1 + r2);
      rb[r] = (b1 + b2) / (s1 + s2);
      ba[r] = rb[r] / ra[r];
      bb[r] = (b1 + b2) / (a1 + a2);
    }
    char name[160];
    snprintf(name, sizeof name, "%s: A olLaunchKernel / cuLaunchKernel (same objects)", kernel);
    row(name, ra, rounds);
    snprintf(name, sizeof name, "%s: B olLaunchKernel / cuLaunchKernel (same objects)", kernel);
    row(name, rb, rounds);
    snprintf(name, sizeof name, "%s: B's ratio / A's ratio", kernel);
    row(name, ba, rounds);
    snprintf(name, sizeof name, "%s: B's olLaunchKernel / A's olLaunchKernel", kernel);
    row(name, bb, rounds);
  }
  return 0;
}

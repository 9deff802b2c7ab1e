/* liboffload's olLaunchKernel through libordo.so vs a raw cuLaunchKernel loop, in one process,
 * ABBA rounds, per-round ratios with quartiles. Both sides launch the same kernels from the same
 * PTX (tests/offload/kernels.ptx, built by clang-22) on a blocking stream (ordo's queues are
 * blocking streams, so that work without a queue is ordered after them), in the device's primary
 * context (the one ordo uses):
 *   1. `empty()`: no arguments;
 *   2. `vector_add_f32(a, b, c, n)` with n = 0: four arguments, one packed struct on ordo's side
 *      (checked against the kernel's parameter layout, handed to the driver whole as `extra`),
 *      kernelParams on the driver's.
 * Then the same two comparisons with the very CUfunction and CUstream behind ordo's handles
 * (ordo_kernel_native, ordo_queue_native) on the driver's side, so that the arms differ only in
 * ordo's code. Diagnosis rows (informational) separate the parts: the driver call on the very
 * stream behind ordo's queue, the driver call with the CUfunction behind ordo's kernel against
 * the benchmark's on that stream, and on ordo's CUfunction and stream against the benchmark's
 * (what rows 1-4 hold of the driver's own difference between the two sets of objects), ordo's
 * own C ABI (ordo_launch) on the same queue and kernel. The
 * floor rows (informational, when liblaunch_shim.so is linked: launch_shim.c) measure what any
 * library in front of the driver costs here — a function of its own shared object that only
 * forwards to cuLaunchKernel — and olLaunchKernel against that function; with
 * OFFLOAD_BENCH_SHIM_VARIANTS set, also launch_shim.c's variants, one against the next.
 * Each arm: batches of 1000 launches then a synchronise (96 rounds), and 301 rounds of 200.
 * Target <= 1.02x. The ol* functions are declared here (the GPU machine has no OffloadAPI.h; the
 * types are the header's, checked on the CPU by tests/offload/layout.c).
 * Built on the GPU machine: cc -O2 -I<cuda>/include offload_bench.c libordo.so.0 -lcuda
 *   [liblaunch_shim.so]
 * Usage: offload_bench kernels.ptx [raw-first] (raw-first: the benchmark's module and stream are
 * made before ordo's objects; tests/gpu/run.sh runs both orders, three processes each, and
 * tests/gpu/bench_rows.sh gives each row's median over the processes). */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abba.h"
#include "gpu_bench.h"

/* Launches per batch (LONG) and per short round (SHORT), and the rounds of each. */
enum { LONG = 1000, ROUNDS = 96, SHORT = 200, SHORT_ROUNDS = 301 };

typedef struct { uint64_t raw; } ordo_queue_t;
int ordo_queue_native(ordo_queue_t queue, void **out); /* ordo's C ABI: the queue's CUstream */
typedef struct { uint64_t raw; } ordo_kernel_t;
/* the kernel's CUfunction (weak: a libordo from before it runs the other rows only) */
int ordo_kernel_native(ordo_kernel_t kernel, void **out) __attribute__((weak));
typedef struct { uint32_t grid[3], block[3], shared_mem_bytes; } ordo_launch_dims_t;
int ordo_launch(ordo_queue_t queue, ordo_kernel_t kernel, const ordo_launch_dims_t *dims, void *const *args,
                const size_t *sizes, uint32_t count);
ol_result_t olInit(void);
ol_result_t olShutDown(void);
ol_result_t olIterateDevices(bool (*cb)(ol_handle, void *), void *data);
ol_result_t olGetDeviceInfo(ol_handle device, uint32_t prop, size_t size, void *value);
ol_result_t olCreateQueue(ol_handle device, ol_handle *queue);
ol_result_t olDestroyQueue(ol_handle queue);
ol_result_t olSyncQueue(ol_handle queue);
ol_result_t olCreateProgram(ol_handle device, const void *data, size_t size, ol_handle *program);
ol_result_t olDestroyProgram(ol_handle program);
ol_result_t olGetSymbol(ol_handle program, const char *name, uint32_t kind, ol_handle *symbol);
ol_result_t olLaunchKernel(ol_handle queue, ol_handle device, ol_handle kernel, const void *args, size_t size,
                           const ol_kernel_launch_size_args_t *launch);
/* tests/gpu/launch_shim.c (weak: a link without liblaunch_shim.so runs the other rows only). */
int launch_shim_init(void) __attribute__((weak));
typedef CUresult shim_fn(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                         void **, void **);
shim_fn launch_shim __attribute__((weak)), launch_shim_call __attribute__((weak)),
    launch_shim_frame __attribute__((weak)), launch_shim_gate __attribute__((weak));



static ol_handle gpu, queue, program, ol_empty, ol_add;
static CUstream stream, ordo_stream;
static CUfunction raw_empty, raw_add, ordo_empty_fn, ordo_add_fn;
static const ol_kernel_launch_size_args_t one = {1, {1, 1, 1}, {1, 1, 1}, 0};
static struct { const float *a, *b; float *c; uint32_t n; } add_args;

static bool first_gpu(ol_handle d, void *u) {
  (void)u;
  uint32_t type = 0;
  if (!olGetDeviceInfo(d, 0 /* OL_DEVICE_INFO_TYPE */, sizeof type, &type) && type == 2 /* GPU */ && !gpu) gpu = d;
  return true;
}

/* n launches then a synchronise, per launch: timed to the end of the synchronise, or
 * (host_only) before it, which is the host's share alone. */
static double raw_timed(CUfunction f, void **params, int n, int host_only) {
  double t = now(), host;
  for (int i = 0; i < n; i++) CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL));
  host = now() - t;
  CU(cuStreamSynchronize(stream));
  return (host_only ? host : now() - t) / n;
}

static double ol_timed(ol_handle k, const void *args, size_t size, int n, int host_only) {
  double t = now(), host;
  for (int i = 0; i < n; i++) OL(olLaunchKernel(queue, gpu, k, args, size, &one));
  host = now() - t;
  OL(olSyncQueue(queue));
  return (host_only ? host : now() - t) / n;
}

static double raw_batch(CUfunction f, void **params, int n) { return raw_timed(f, params, n, 0); }

/* The driver call on the very stream ordo's queue is (with ordo's own CUfunction, the two
 * sides differ only in ordo's code). */
static double raw_same(CUfunction f, void **params, int n) {
  CUstream own = stream;
  stream = ordo_stream;
  double t = raw_timed(f, params, n, 0);
  stream = own;
  return t;
}
/* The benchmark's own function on ordo's stream: separates the stream from ordo's code. */
static double raw_on_ordo_stream(void) { return raw_same(raw_empty, NULL, LONG); }
static void *add_params[4];
/* The benchmark's vector_add_f32 on ordo's stream: with same_add_long, separates the function. */
static double raw_add_on_ordo_stream(void) { return raw_same(raw_add, add_params, LONG); }
static double ol_batch(ol_handle k, const void *args, size_t size, int n) { return ol_timed(k, args, size, n, 0); }

static double raw_empty_long(void) { return raw_batch(raw_empty, NULL, LONG); }
static double ol_empty_long(void) { return ol_batch(ol_empty, NULL, 0, LONG); }
static double raw_empty_short(void) { return raw_batch(raw_empty, NULL, SHORT); }
static double ol_empty_short(void) { return ol_batch(ol_empty, NULL, 0, SHORT); }
static double raw_add_long(void) { return raw_batch(raw_add, add_params, LONG); }
static double ol_add_long(void) { return ol_batch(ol_add, &add_args, sizeof add_args, LONG); }
static double raw_add_short(void) { return raw_batch(raw_add, add_params, SHORT); }
static double same_empty_long(void) { return raw_same(ordo_empty_fn, NULL, LONG); }
static double same_empty_short(void) { return raw_same(ordo_empty_fn, NULL, SHORT); }
static double same_add_long(void) { return raw_same(ordo_add_fn, add_params, LONG); }
static double same_add_short(void) { return raw_same(ordo_add_fn, add_params, SHORT); }
static double ol_add_short(void) { return ol_batch(ol_add, &add_args, sizeof add_args, SHORT); }

/* ordo's own C ABI on the same queue and kernel (the ol handles are ordo handles): separates
 * the ol* layer from ordo's core. */
static double ordo_c_empty(void) {
  const ordo_launch_dims_t d = {{1, 1, 1}, {1, 1, 1}, 0};
  ordo_queue_t q = {(uint64_t)(uintptr_t)queue};
  ordo_kernel_t k = {(uint64_t)(uintptr_t)ol_empty};
  double t = now();
  for (int i = 0; i < LONG; i++)
    if (ordo_launch(q, k, &d, NULL, NULL, 0)) { fprintf(stderr, "ordo_launch failed\n"); exit(1); }
  OL(olSyncQueue(queue));
  return (now() - t) / LONG;
}
/* One launch each, for ABBA at the grain of a call (abba_calls). */
static void same_empty_one(void) { CU(cuLaunchKernel(ordo_empty_fn, 1, 1, 1, 1, 1, 1, 0, ordo_stream, NULL, NULL)); }
static void ol_empty_one(void) { OL(olLaunchKernel(queue, gpu, ol_empty, NULL, 0, &one)); }
static void ordo_c_one(void) {
  static const ordo_launch_dims_t d = {{1, 1, 1}, {1, 1, 1}, 0};
  if (ordo_launch((ordo_queue_t){(uint64_t)(uintptr_t)queue}, (ordo_kernel_t){(uint64_t)(uintptr_t)ol_empty}, &d,
                  NULL, NULL, 0)) { fprintf(stderr, "ordo_launch failed\n"); exit(1); }
}
/* The floor: the driver reached through a forwarding function of launch_shim.c (in its own shared
 * object), LONG empty-kernel launches on the same CUfunction and CUstream as ordo's. */
static double shim_variant_long(shim_fn *shim) {
  double t = now();
  for (int i = 0; i < LONG; i++) CU(shim(ordo_empty_fn, 1, 1, 1, 1, 1, 1, 0, ordo_stream, NULL, NULL));
  CU(cuStreamSynchronize(ordo_stream));
  return (now() - t) / LONG;
}
static double shim_same_empty_long(void) { return shim_variant_long(launch_shim); }
static double shim_call_long(void) { return shim_variant_long(launch_shim_call); }
static double shim_frame_long(void) { return shim_variant_long(launch_shim_frame); }
static double shim_gate_long(void) { return shim_variant_long(launch_shim_gate); }
static void shim_empty_one(void) { CU(launch_shim(ordo_empty_fn, 1, 1, 1, 1, 1, 1, 0, ordo_stream, NULL, NULL)); }
static void sync_ordo_stream(void) { CU(cuStreamSynchronize(ordo_stream)); }
static double raw_add_enqueue(void) { return raw_timed(raw_add, add_params, 100, 1); }
static double ol_add_enqueue(void) { return ol_timed(ol_add, &add_args, sizeof add_args, 100, 1); }


/* A row of batches of LONG launches, `rounds` ABBA rounds; `what` names the row with one %d for
 * the batch size (the counts in a row's name come from the constants that make the row). */
static void report_batches_for(const char *what, double (*bare)(void), double (*ordo)(void), int rounds,
                               const char *target) {
  char name[224];
  int n = snprintf(name, sizeof name, what, LONG);
  snprintf(name + n, sizeof name - n, ", %d rounds", rounds);
  abba_report(name, bare, ordo, rounds, target);
}
static void report_batches(const char *what, double (*bare)(void), double (*ordo)(void), int rounds) {
  report_batches_for(what, bare, ordo, rounds, "<= 1.02");
}
/* A row of SHORT_ROUNDS rounds of SHORT launches each. */
static void report_short(const char *what, double (*bare)(void), double (*ordo)(void)) {
  char name[192];
  snprintf(name, sizeof name, "%s, %d rounds of %d", what, SHORT_ROUNDS, SHORT);
  abba_report(name, bare, ordo, SHORT_ROUNDS, "<= 1.02");
}

/* The benchmark's own module, functions and stream, in the primary context. */
static CUdevice raw_objects(const char *ptx, CUmodule *module) {
  CUdevice dev = primary_context();
  CU(cuModuleLoadData(module, ptx));
  CU(cuModuleGetFunction(&raw_empty, *module, "empty"));
  CU(cuModuleGetFunction(&raw_add, *module, "vector_add_f32"));
  CU(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  return dev;
}

int main(int argc, char **argv) {
  if (argc < 2 || (argc > 2 && strcmp(argv[2], "raw-first") != 0)) {
    fprintf(stderr, "usage: offload_bench kernels.ptx [raw-first]\n");
    return 2;
  }
  size_t len;
  const char *ptx = read_ptx(argv[1], &len);
  /* Rows 1-4 compare objects made in some order (the process's first stream and module, or its
   * second): by default ordo's are made first; with `raw-first` the benchmark's are. */
  bool raw_first = argc > 2;
  CUmodule module;
  CUdevice dev = raw_first ? raw_objects(ptx, &module) : 0;
  printf("objects made first: %s\n", raw_first ? "the benchmark's (raw-first)" : "ordo's");
  /* Where the loader put libcuda relative to libordo (tests/gpu/placement.sh moves it). */
  printf("olLaunchKernel - cuLaunchKernel: %+lld bytes\n",
         (long long)(intptr_t)((uintptr_t)olLaunchKernel - (uintptr_t)cuLaunchKernel));
  OL(olInit());
  OL(olIterateDevices(first_gpu, NULL));
  if (!gpu) { fprintf(stderr, "no GPU device\n"); return 1; }
  OL(olCreateQueue(gpu, &queue));
  OL(olCreateProgram(gpu, ptx, len, &program));
  OL(olGetSymbol(program, "empty", 0, &ol_empty));
  OL(olGetSymbol(program, "vector_add_f32", 0, &ol_add));
  if (!raw_first) dev = raw_objects(ptx, &module);
  if (ordo_queue_native((ordo_queue_t){(uint64_t)(uintptr_t)queue}, (void **)&ordo_stream) != 0) {
    fprintf(stderr, "ordo_queue_native failed\n");
    return 1;
  }
  if (ordo_kernel_native && (ordo_kernel_native((ordo_kernel_t){(uint64_t)(uintptr_t)ol_empty}, (void **)&ordo_empty_fn) ||
                             ordo_kernel_native((ordo_kernel_t){(uint64_t)(uintptr_t)ol_add}, (void **)&ordo_add_fn))) {
    fprintf(stderr, "ordo_kernel_native failed\n");
    return 1;
  }
  add_params[0] = &add_args.a;
  add_params[1] = &add_args.b;
  add_params[2] = &add_args.c;
  add_params[3] = &add_args.n;
  raw_empty_long(); ol_empty_long(); raw_add_long(); ol_add_long(); /* warm-up */
  printf("| benchmark | cuLaunchKernel | olLaunchKernel (libordo) | ordo / driver, per-round median [p25, p75] | target |\n");
  printf("|---|---|---|---|---|\n");
  report_batches("empty kernel, batches of %d then a synchronise", raw_empty_long, ol_empty_long, ROUNDS);
  report_short("empty kernel", raw_empty_short, ol_empty_short);
  report_batches("vector_add_f32 (4 arguments, packed and split), batches of %d", raw_add_long, ol_add_long, ROUNDS);
  report_short("vector_add_f32", raw_add_short, ol_add_short);
  if (ordo_empty_fn) {
    report_batches("same CUfunction and CUstream: empty kernel, batches of %d", same_empty_long, ol_empty_long,
                   2 * ROUNDS);
    report_short("same CUfunction and CUstream: empty kernel", same_empty_short, ol_empty_short);
    report_batches("same CUfunction and CUstream: vector_add_f32, batches of %d", same_add_long, ol_add_long,
                   2 * ROUNDS);
    report_short("same CUfunction and CUstream: vector_add_f32", same_add_short, ol_add_short);
    abba_calls("same CUfunction and CUstream: host time of an empty-kernel launch, ABBA of single launches (50000 "
               "rounds)", same_empty_one, ol_empty_one, sync_ordo_stream, 50000, "<= 1.02");
    abba_calls("diagnosis: ordo_launch (ordo's C ABI) vs cuLaunchKernel, same CUfunction and CUstream, ABBA of single "
               "launches (50000 rounds)", same_empty_one, ordo_c_one, sync_ordo_stream, 50000, "(informational)");
    if (launch_shim && launch_shim_init() == 0) {
      report_batches_for("floor: a forwarding call in its own shared object (launch_shim.c) vs cuLaunchKernel, same "
                         "CUfunction and CUstream, empty kernel, batches of %d", same_empty_long, shim_same_empty_long,
                         2 * ROUNDS, "(informational)");
      abba_calls("floor: the forwarding call vs cuLaunchKernel, same CUfunction and CUstream, ABBA of single launches "
                 "(50000 rounds)", same_empty_one, shim_empty_one, sync_ordo_stream, 50000, "(informational)");
      report_batches_for("olLaunchKernel vs the forwarding call, same CUfunction and CUstream, empty kernel, batches "
                         "of %d", shim_same_empty_long, ol_empty_long, 2 * ROUNDS, "(informational)");
      /* The shim's variants (a decomposition, about 15 s a process): only when asked, so that
       * tests/gpu/run.sh stays within one device call. */
      if (getenv("OFFLOAD_BENCH_SHIM_VARIANTS") && launch_shim_call && launch_shim_frame && launch_shim_gate) {
        report_batches_for("floor, called: the driver returns through the shim, vs the forwarding jump (empty kernel, "
                           "batches of %d)", shim_same_empty_long, shim_call_long, 2 * ROUNDS, "(informational)");
        report_batches_for("floor, called from a 512-byte frame, vs called (empty kernel, batches of %d)",
                           shim_call_long, shim_frame_long, 2 * ROUNDS, "(informational)");
        report_batches_for("floor, called inside a per-thread in-flight count, vs called (empty kernel, batches of %d)",
                           shim_call_long, shim_gate_long, 2 * ROUNDS, "(informational)");
        report_batches_for("olLaunchKernel vs the call inside an in-flight count (empty kernel, batches of %d)",
                           shim_gate_long, ol_empty_long, 2 * ROUNDS, "(informational)");
      }
    } else {
      printf("launch_shim: not linked (the floor rows are left out)\n");
    }
  } else {
    printf("ordo_kernel_native: not in this libordo (the same-CUfunction rows are left out)\n");
  }
  abba_report("diagnosis: cuLaunchKernel on ordo's own stream vs on the benchmark's (empty kernel, 1000)",
                raw_empty_long, raw_on_ordo_stream, ROUNDS, "(informational)");
  if (ordo_empty_fn) {
    abba_report("diagnosis: cuLaunchKernel with ordo's CUfunction vs the benchmark's, both on ordo's stream (empty "
                "kernel, 1000)", raw_on_ordo_stream, same_empty_long, ROUNDS, "(informational)");
    abba_report("diagnosis: vector_add_f32 with ordo's CUfunction vs the benchmark's, both on ordo's stream "
                "(kernelParams, 1000)", raw_add_on_ordo_stream, same_add_long, ROUNDS, "(informational)");
    /* What rows 1-4 hold of the driver alone: its launch on ordo's CUfunction and CUstream
     * against the benchmark's, the objects the arms of those rows use. */
    abba_report("diagnosis: cuLaunchKernel on ordo's CUfunction and stream vs on the benchmark's (empty kernel, 1000)",
                raw_empty_long, same_empty_long, ROUNDS, "(informational)");
    abba_report("diagnosis: vector_add_f32 on ordo's CUfunction and stream vs on the benchmark's (kernelParams, 1000)",
                raw_add_long, same_add_long, ROUNDS, "(informational)");
  }
  abba_report("diagnosis: olLaunchKernel vs cuLaunchKernel on ordo's own stream (empty kernel, 1000)",
                raw_on_ordo_stream, ol_empty_long, ROUNDS, "(informational)");
  abba_report("diagnosis: ordo_launch (ordo's C ABI) vs cuLaunchKernel on ordo's own stream (empty kernel, 1000)",
                raw_on_ordo_stream, ordo_c_empty, ROUNDS, "(informational)");
  abba_report("diagnosis: olLaunchKernel vs ordo_launch, same queue and kernel (empty kernel, 1000)", ordo_c_empty,
                ol_empty_long, ROUNDS, "(informational)");
  abba_report("host time of a vector_add_f32 launch (100 enqueued, timed before the synchronise)",
                raw_add_enqueue, ol_add_enqueue, SHORT_ROUNDS, "(informational)");
  CU(cuStreamDestroy(stream));
  CU(cuModuleUnload(module));
  CU(cuDevicePrimaryCtxRelease(dev));
  OL(olDestroyQueue(queue));
  OL(olDestroyProgram(program));
  OL(olShutDown());
  return 0;
}

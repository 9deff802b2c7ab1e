/* The MLIR runtime ABI through libordo.so, in one process, ABBA rounds, per-round ratios with
 * quartiles.
 *
 * 1. launch: mgpuLaunchKernel vs cuLaunchKernel, target <= 1.02x. First with the very CUfunction
 *    and CUstream behind ordo's handles (ordo_kernel_native, ordo_queue_native), so that the two
 *    arms differ only in ordo's code (batches of 1000 empty-kernel launches, then a synchronise,
 *    48 rounds; and 301 rounds of 200; and ABBA rounds of single launches, each timed on its own,
 *    50000 rounds: the host time of a launch, least moved by host noise); then against the
 *    benchmark's own module and stream (24 rounds of 1000; 301 of 200), which adds the driver's
 *    cost difference between two streams.
 * 2. the synchronous gpu.launch_func sequence MLIR emits: get function, stream create, launch,
 *    stream synchronize, stream destroy, against the same five calls through upstream's
 *    wrappers (argv[1]: a libmlir_cuda_runtime built from upstream's CudaRuntimeWrappers.cpp,
 *    loaded with dlopen so both libraries live in one process), target <= 0.65x; and against
 *    the five driver calls those wrappers make, written directly (informational).
 * 3. steady state never waits for another thread: while one thread sits in
 *    mgpuStreamSynchronize on a 400 ms kernel, another runs 200 synchronous sequences; they must
 *    all finish before the long kernel does. As a control, an exclusive call (mgpuMemAlloc of a
 *    new size) made during such a synchronise is timed too: it waits, and that is printed.
 *
 * Built on the GPU machine: cc -O2 -I<cuda>/include mlir_bench.c gpu-bin/mlir/libordo.so.0
 *   -lcuda -ldl -lpthread -Wl,-rpath,gpu-bin/mlir -o mlir_bench
 * Exit status: 1 when a setup step or check 3 fails. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "abba.h"
#include "gpu_bench.h"

typedef struct { uint64_t raw; } ordo_queue_t;
typedef struct { uint64_t raw; } ordo_kernel_t;
int ordo_queue_native(ordo_queue_t queue, void **out); /* ordo's C ABI: the queue's CUstream */
/* ... and the kernel's CUfunction (weak: a libordo from before it ran the other rows only) */
int ordo_kernel_native(ordo_kernel_t kernel, void **out) __attribute__((weak));
void *mgpuModuleLoadJIT(void *data, int32_t opt);
void *mgpuModuleGetFunction(void *module, const char *name);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t size, void *stream, _Bool host_shared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuLaunchKernel(void *f, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by, int64_t bz,
                      int32_t smem, void *stream, void **params, void **extra, int64_t count);

static const char PTX[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry empty() { ret; }\n"
    ".visible .entry spin(.param .u64 ns) {\n"
    "  .reg .u64 %t0, %t1, %d, %lim;\n  .reg .pred %p;\n"
    "  ld.param.u64 %lim, [ns];\n  mov.u64 %t0, %globaltimer;\n"
    "LOOP:\n  mov.u64 %t1, %globaltimer;\n  sub.u64 %d, %t1, %t0;\n"
    "  setp.lt.u64 %p, %d, %lim;\n  @%p bra LOOP;\n  ret;\n}\n";

/* Upstream's wrappers, through dlopen. */
static struct {
  void *(*module_load)(void *, size_t);
  void *(*get_function)(void *, const char *);
  void *(*stream_create)(void);
  void (*stream_destroy)(void *);
  void (*stream_synchronize)(void *);
  void (*launch)(void *, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, int32_t, void *, void **,
                 void **, size_t);
} up;
static void *up_module;



static CUmodule raw_module;
static CUfunction raw_fn, ordo_fn;
static CUstream raw_stream, raw_blocking, ordo_stream;
static void *o_module, *o_fn, *o_stream;

enum { LAUNCHES = 1000, SEQUENCES = 300, ROUNDS = 24, SAME_ROUNDS = 48 };

/* n empty-kernel launches on a driver stream / through libordo, per launch: timed to the end of
 * the synchronise, or (host_only) before it, which is the host's share alone. */
static double raw_batch_of(CUfunction f, CUstream s, int n, int host_only) {
  double t = now(), host;
  for (int i = 0; i < n; i++) CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  host = now() - t;
  CU(cuStreamSynchronize(s));
  return (host_only ? host : now() - t) / n;
}

static double raw_batch(CUstream s, int n, int host_only) { return raw_batch_of(raw_fn, s, n, host_only); }

static double ordo_batch(int n, int host_only) {
  double t = now(), host;
  for (int i = 0; i < n; i++) mgpuLaunchKernel(o_fn, 1, 1, 1, 1, 1, 1, 0, o_stream, NULL, NULL, 0);
  host = now() - t;
  mgpuStreamSynchronize(o_stream);
  return (host_only ? host : now() - t) / n;
}

/* Short batches, many rounds: drift of the host between the two arms of a round matters less.
 * ENQUEUES launches are timed before the synchronise (the queue does not fill). */
enum { SHORT = 200, SHORT_ROUNDS = 301, ENQUEUES = 100 };
static double raw_launches(void) { return raw_batch(raw_stream, LAUNCHES, 0); }
static double ordo_launches(void) { return ordo_batch(LAUNCHES, 0); }
static double raw_short(void) { return raw_batch(raw_stream, SHORT, 0); }
static double ordo_short(void) { return ordo_batch(SHORT, 0); }
static double raw_enqueue(void) { return raw_batch(raw_stream, ENQUEUES, 1); }
static double ordo_enqueue(void) { return ordo_batch(ENQUEUES, 1); }
/* On a blocking stream (CU_STREAM_DEFAULT), the kind ordo's own queues are (so that calls
 * without a queue, on the legacy stream, are ordered after queued work). */
static double raw_blocking_launches(void) { return raw_batch(raw_blocking, LAUNCHES, 0); }
/* The driver call on the very stream behind ordo's (pooled) MLIR stream: separates the stream from
 * ordo's code. */
static double raw_ordo_stream_launches(void) { return raw_batch(ordo_stream, LAUNCHES, 0); }
/* The driver call with ordo's own CUfunction on ordo's own CUstream: the two arms differ only in
 * ordo's code. */
static double raw_same_launches(void) { return raw_batch_of(ordo_fn, ordo_stream, LAUNCHES, 0); }
static double raw_same_short(void) { return raw_batch_of(ordo_fn, ordo_stream, SHORT, 0); }
static double raw_same_enqueue(void) { return raw_batch_of(ordo_fn, ordo_stream, ENQUEUES, 1); }
/* One launch each, for ABBA at the grain of a call (abba_calls). */
static void raw_same_one(void) { CU(cuLaunchKernel(ordo_fn, 1, 1, 1, 1, 1, 1, 0, ordo_stream, NULL, NULL)); }
static void ordo_one(void) { mgpuLaunchKernel(o_fn, 1, 1, 1, 1, 1, 1, 0, o_stream, NULL, NULL, 0); }
static void sync_ordo_stream(void) { CU(cuStreamSynchronize(ordo_stream)); }
enum { CALL_ROUNDS = 50000 };

static double raw_sequence(void) {
  double t = now();
  for (int i = 0; i < SEQUENCES; i++) {
    CUfunction f;
    CUstream s;
    CU(cuModuleGetFunction(&f, raw_module, "empty"));
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CU(cuStreamSynchronize(s));
    CU(cuStreamDestroy(s));
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

static double upstream_sequence(void) {
  double t = now();
  for (int i = 0; i < SEQUENCES; i++) {
    void *f = up.get_function(up_module, "empty");
    void *s = up.stream_create();
    up.launch(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
    up.stream_synchronize(s);
    up.stream_destroy(s);
  }
  return (now() - t) / SEQUENCES;
}

static int load_upstream(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "dlopen %s: %s\n", path, dlerror()); return 0; }
#define SYM(field, name) if (!(*(void **)&up.field = dlsym(lib, name))) { fprintf(stderr, "no %s\n", name); return 0; }
  SYM(module_load, "mgpuModuleLoad") SYM(get_function, "mgpuModuleGetFunction")
  SYM(stream_create, "mgpuStreamCreate") SYM(stream_destroy, "mgpuStreamDestroy")
  SYM(stream_synchronize, "mgpuStreamSynchronize") SYM(launch, "mgpuLaunchKernel")
#undef SYM
  up_module = up.module_load((void *)PTX, sizeof PTX);
  return up_module != NULL;
}

/* Check 3: a long synchronise on one thread, synchronous sequences on another. */
static volatile int long_started;
static double long_done_at;
static void *o_spin;

static void *long_sync(void *arg) {
  (void)arg;
  void *s = mgpuStreamCreate();
  uint64_t ns = 400000000ull;
  void *params[] = {&ns};
  mgpuLaunchKernel(o_spin, 1, 1, 1, 1, 1, 1, 0, s, params, NULL, 1);
  __atomic_store_n(&long_started, 1, __ATOMIC_RELEASE);
  mgpuStreamSynchronize(s);
  long_done_at = now();
  mgpuStreamDestroy(s);
  return NULL;
}

static int check_no_waiting(void) {
  /* Steady state for two threads: two pooled streams, the function looked up. */
  void *a = mgpuStreamCreate(), *b = mgpuStreamCreate();
  mgpuStreamDestroy(a);
  mgpuStreamDestroy(b);
  pthread_t th;
  long_started = 0;
  double t0 = now();
  pthread_create(&th, NULL, long_sync, NULL);
  while (!__atomic_load_n(&long_started, __ATOMIC_ACQUIRE)) usleep(100);
  usleep(20000); /* well inside the other thread's synchronise */
  double ts = now(), worst = 0;
  enum { N = 200 };
  for (int i = 0; i < N; i++) {
    double t = now();
    void *f = mgpuModuleGetFunction(o_module, "empty");
    void *s = mgpuStreamCreate();
    mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
    mgpuStreamSynchronize(s);
    mgpuStreamDestroy(s);
    if (now() - t > worst) worst = now() - t;
  }
  double te = now();
  pthread_join(th, NULL);
  int ok = te < long_done_at;
  printf("%s: %d synchronous sequences during another thread's 400 ms synchronise: %.1f us each, worst %.1f us, "
         "all done %.0f ms before it returned (it returned after %.0f ms)\n",
         ok ? "PASS" : "FAIL", N, (te - ts) / N / 1e3, worst / 1e3, (long_done_at - te) / 1e6,
         (long_done_at - t0) / 1e6);
  /* Control: an exclusive call (a new allocation) during the same kind of synchronise waits. */
  long_started = 0;
  pthread_create(&th, NULL, long_sync, NULL);
  while (!__atomic_load_n(&long_started, __ATOMIC_ACQUIRE)) usleep(100);
  usleep(20000);
  double ta = now();
  void *p = mgpuMemAlloc(1 << 20, NULL, 0);
  double tb = now();
  pthread_join(th, NULL);
  mgpuMemFree(p, NULL);
  printf("control (informational): mgpuMemAlloc, an exclusive call, made during the same synchronise took %.0f ms%s\n",
         (tb - ta) / 1e6, tb >= long_done_at - 1e6 ? " (it waited for the synchronise)" : "");
  return ok;
}


static void report(const char *name, double (*bare)(void), double (*ordo)(void), const char *target) {
  abba_report(name, bare, ordo, ROUNDS, target);
}


int main(int argc, char **argv) {
  /* ordo first (its init retains the primary context), then the same primary context for the
   * driver calls. */
  o_module = mgpuModuleLoadJIT((void *)PTX, 2);
  o_fn = mgpuModuleGetFunction(o_module, "empty");
  o_stream = mgpuStreamCreate();
  o_spin = mgpuModuleGetFunction(o_module, "spin");
  if (!o_module || !o_fn || !o_stream || !o_spin) { fprintf(stderr, "mgpu setup failed\n"); return 1; }
  if (ordo_queue_native((ordo_queue_t){(uint64_t)(uintptr_t)o_stream}, (void **)&ordo_stream) != 0) {
    fprintf(stderr, "ordo_queue_native failed\n");
    return 1;
  }
  if (ordo_kernel_native && ordo_kernel_native((ordo_kernel_t){(uint64_t)(uintptr_t)o_fn}, (void **)&ordo_fn) != 0) {
    fprintf(stderr, "ordo_kernel_native failed\n");
    return 1;
  }
  CUdevice dev = primary_context();
  CU(cuModuleLoadData(&raw_module, PTX));
  CU(cuModuleGetFunction(&raw_fn, raw_module, "empty"));
  CU(cuStreamCreate(&raw_stream, CU_STREAM_NON_BLOCKING));
  CU(cuStreamCreate(&raw_blocking, CU_STREAM_DEFAULT));
  if (ordo_fn) raw_same_launches();
  raw_launches(); raw_blocking_launches(); ordo_launches(); raw_sequence(); ordo_sequence();
  /* (warm-up) */
  printf("| benchmark | driver calls | libordo mgpu* | ordo / driver, per-round median [p25, p75] | target |\n");
  printf("|---|---|---|---|---|\n");
  if (ordo_fn) {
    abba_report("mgpuLaunchKernel vs cuLaunchKernel, same CUfunction and CUstream (batches of 1000, then a "
                "synchronise)", raw_same_launches, ordo_launches, SAME_ROUNDS, "<= 1.02");
    abba_report("mgpuLaunchKernel vs cuLaunchKernel, same CUfunction and CUstream, 301 rounds of 200 launches then "
                "a synchronise", raw_same_short, ordo_short, SHORT_ROUNDS, "<= 1.02");
    report("host time of a launch, same CUfunction and CUstream (100 enqueued, timed before the synchronise)",
           raw_same_enqueue, ordo_enqueue, "(informational)");
    abba_calls("host time of a launch, same CUfunction and CUstream, ABBA of single launches (50000 rounds)",
               raw_same_one, ordo_one, sync_ordo_stream, CALL_ROUNDS, "<= 1.02");
  } else {
    printf("ordo_kernel_native: not in this libordo (the same-CUfunction rows are left out)\n");
  }
  report("mgpuLaunchKernel vs cuLaunchKernel on the benchmark's own module and stream (batches of 1000, then a "
         "synchronise)", raw_launches, ordo_launches, "<= 1.02");
  abba_report("mgpuLaunchKernel vs cuLaunchKernel on the benchmark's own module and stream, 301 rounds of 200 "
              "launches then a synchronise", raw_short, ordo_short, SHORT_ROUNDS, "<= 1.02");
  report("mgpuLaunchKernel vs cuLaunchKernel on a blocking stream (as ordo's queues are)", raw_blocking_launches,
         ordo_launches, "(informational)");
  report("diagnosis: cuLaunchKernel on ordo's own stream vs on the benchmark's non-blocking one", raw_launches,
         raw_ordo_stream_launches, "(informational)");
  report("diagnosis: mgpuLaunchKernel vs cuLaunchKernel on ordo's own stream", raw_ordo_stream_launches,
         ordo_launches, "(informational)");
  report("host time of a launch (100 enqueued, timed before the synchronise)", raw_enqueue, ordo_enqueue,
         "(informational)");
  report("synchronous launch sequence: get function, stream create, launch, synchronize, destroy (vs the driver "
         "calls upstream makes, written directly)", raw_sequence, ordo_sequence, "(informational)");
  int status = 0;
  if (argc > 1 && load_upstream(argv[1])) {
    upstream_sequence();
    report("synchronous launch sequence vs upstream's CudaRuntimeWrappers (five mgpu* calls each)", upstream_sequence,
           ordo_sequence, "<= 0.65");
  } else {
    printf("upstream wrappers: not loaded (no library given or it failed to load)\n");
    status = 1;
  }
  if (!check_no_waiting()) status = 1;
  CU(cuStreamDestroy(raw_stream));
  CU(cuStreamDestroy(raw_blocking));
  CU(cuModuleUnload(raw_module));
  CU(cuDevicePrimaryCtxRelease(dev));
  mgpuStreamDestroy(o_stream);
  return status;
}

/* What raises the cost of a cuLaunchKernel loop on this host: the bare loop against the same
 * loop with one kind of extra work before each launch (the kinds of work a runtime's launch path
 * does), ABBA rounds in one process, on one CUfunction and CUstream (a blocking stream, as
 * ordo's queues are). A diagnosis for the launch benchmarks (offload_bench.c, c_launch_bench.c):
 * it says which costs a runtime in front of the driver should avoid. No libordo is involved.
 *   - a full fence (`lock or`, what a SeqCst fence compiles to) and `mfence`;
 *   - 16 loads from 16 cache lines that the driver's own work may have evicted;
 *   - 16 stores to 16 such lines;
 *   - a call through a pointer into ~60 predictable branches (code and branch-predictor footprint);
 *   - a thread-local read in this executable (the cheap model) for scale;
 *   - a chain of 6 dependent loads, each on its own page (a handle's slot, then the entry it
 *     names, then the function it calls through: the shape of a runtime's lookups);
 *   - a call into 40 never-taken branches (predictable: only their code and predictor entries);
 *   - a call into 512 bytes, 2 KiB and 8 KiB of straight-line code (8-byte no-ops: the
 *     instruction-cache footprint, to see how it scales).
 * And the driver against itself, where a runtime's launch differs from a hand-written one only
 * in the objects or the argument form it uses:
 *   - `vector_add_f32` with its arguments as kernelParams vs one packed buffer (`extra`,
 *     CU_LAUNCH_PARAM_BUFFER_POINTER, as liboffload's plugin and ordo's olLaunchKernel pass them);
 *   - `vector_add_f32` from a second module of the same PTX (loaded with cuModuleLoadDataEx and a
 *     JIT log buffer, as ordo loads) vs the first, and the empty kernel on a second stream;
 *   - both kernels from a third module, loaded as the first, whose parameters were described
 *     with cuFuncGetParamInfo (as ordo does at a kernel's first packed launch), vs the first.
 * Also prints whether membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is available (ordo's calls
 * then need no fence) and the kernel release.
 * Built on the GPU machine: cc -O2 -I<cuda>/include launch_probe.c -lcuda
 * Usage: launch_probe kernels.ptx */
#define _GNU_SOURCE
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "abba.h"
#include "gpu_bench.h"


enum { N = 1000, ROUNDS = 24, LINES = 16 };
static CUfunction fn, add_fn, add_fn_b, empty_b, empty_q, add_fn_q;
static CUstream stream, stream_b;
static struct { void *a, *b, *c; uint32_t n; } add_args;
static void *add_params[4] = {&add_args.a, &add_args.b, &add_args.c, &add_args.n};
/* Lines 4160 bytes apart: distinct sets, no adjacent-line prefetch. */
static volatile char far_lines[LINES * 4160];
static __thread volatile int local_value;
/* A pointer chain through 6 pages (4160 bytes apart, as far_lines). */
enum { CHAIN = 6 };
static void *chain_pages[CHAIN * 4160 / sizeof(void *)];

static void launch(void) { CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL)); }

__attribute__((noinline)) static int branches(int x) {
#define B(k) if ((x >> (k % 7)) & 1) x += k; else x ^= k;
  B(1) B(2) B(3) B(4) B(5) B(6) B(7) B(8) B(9) B(10) B(11) B(12) B(13) B(14) B(15) B(16) B(17) B(18) B(19) B(20)
  B(21) B(22) B(23) B(24) B(25) B(26) B(27) B(28) B(29) B(30) B(31) B(32) B(33) B(34) B(35) B(36) B(37) B(38) B(39)
  B(40) B(41) B(42) B(43) B(44) B(45) B(46) B(47) B(48) B(49) B(50) B(51) B(52) B(53) B(54) B(55) B(56) B(57) B(58)
  B(59) B(60)
#undef B
  return x;
}
static int (*volatile branches_ptr)(int) = branches;
static volatile int sink;

static double batch(void (*extra)(void)) {
  double t = now();
  for (int i = 0; i < N; i++) {
    if (extra) extra();
    launch();
  }
  CU(cuStreamSynchronize(stream));
  return (now() - t) / N;
}
static void lock_or(void) { __asm__ volatile("lock orl $0, (%%rsp)" ::: "memory", "cc"); }
static void mfence(void) { __asm__ volatile("mfence" ::: "memory"); }
static void loads(void) {
  int s = 0;
  for (int i = 0; i < LINES; i++) s += far_lines[i * 4160];
  sink = s;
}
static void stores(void) {
  for (int i = 0; i < LINES; i++) far_lines[i * 4160] = (char)i;
}
static void code(void) { sink = branches_ptr(sink); }
static void chain(void) {
  void **p = chain_pages;
  for (int i = 0; i < CHAIN; i++) p = (void **)*p;
  sink = (int)(uintptr_t)p;
}
static volatile int zero;
__attribute__((noinline)) static int never_taken(int x) {
#define T(k) if (__builtin_expect(x == 1000 + k, 0)) sink = k;
  T(1) T(2) T(3) T(4) T(5) T(6) T(7) T(8) T(9) T(10) T(11) T(12) T(13) T(14) T(15) T(16) T(17) T(18) T(19) T(20)
  T(21) T(22) T(23) T(24) T(25) T(26) T(27) T(28) T(29) T(30) T(31) T(32) T(33) T(34) T(35) T(36) T(37) T(38) T(39)
  T(40)
#undef T
  return x;
}
static int (*volatile never_taken_ptr)(int) = never_taken;
__attribute__((noinline)) static void straight_code(void) {
  __asm__ volatile(".rept 256\n\t.byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00\n\t.endr" ::: "memory");
}
static void (*volatile straight_ptr)(void) = straight_code;
__attribute__((noinline)) static void straight_code_512(void) {
  __asm__ volatile(".rept 64\n\t.byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00\n\t.endr" ::: "memory");
}
static void (*volatile straight_512_ptr)(void) = straight_code_512;
__attribute__((noinline)) static void straight_code_8k(void) {
  __asm__ volatile(".rept 1024\n\t.byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00\n\t.endr" ::: "memory");
}
static void (*volatile straight_8k_ptr)(void) = straight_code_8k;
static void predictable(void) { sink = never_taken_ptr(zero); }
static void footprint(void) { straight_ptr(); }
static void footprint_512(void) { straight_512_ptr(); }
static void footprint_8k(void) { straight_8k_ptr(); }
static void tls(void) { local_value++; }

/* `n` launches of `f` on `st` with its arguments in either form, then a synchronise. */
static double batch_of(CUfunction f, CUstream st, void **params, int packed) {
  /* Where the last parameter ends (the driver wants the parameters' size, not the struct's
   * padded one: ordo passes the buffer up to the kernel's parameter end too). */
  size_t size = offsetof(__typeof__(add_args), n) + sizeof add_args.n;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &add_args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  double t = now();
  for (int i = 0; i < N; i++)
    CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, st, packed ? NULL : params, packed ? extra : NULL));
  CU(cuStreamSynchronize(st));
  return (now() - t) / N;
}
static double add_params_form(void) { return batch_of(add_fn, stream, add_params, 0); }
static double add_packed_form(void) { return batch_of(add_fn, stream, NULL, 1); }
static double add_second_module(void) { return batch_of(add_fn_b, stream, add_params, 0); }
static double empty_second_stream(void) { return batch_of(fn, stream_b, NULL, 0); }
static double empty_second_module(void) { return batch_of(empty_b, stream, NULL, 0); }
static double empty_first(void) { return batch_of(fn, stream, NULL, 0); }
static double empty_queried(void) { return batch_of(empty_q, stream, NULL, 0); }
static double add_queried(void) { return batch_of(add_fn_q, stream, add_params, 0); }

static double bare(void) { return batch(NULL); }
static double with_lock_or(void) { return batch(lock_or); }
static double with_mfence(void) { return batch(mfence); }
static double with_loads(void) { return batch(loads); }
static double with_stores(void) { return batch(stores); }
static double with_code(void) { return batch(code); }
static double with_tls(void) { return batch(tls); }
static double with_chain(void) { return batch(chain); }
static double with_predictable(void) { return batch(predictable); }
static double with_footprint(void) { return batch(footprint); }
static double with_footprint_512(void) { return batch(footprint_512); }
static double with_footprint_8k(void) { return batch(footprint_8k); }

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: launch_probe kernels.ptx\n"); return 2; }
  size_t len;
  const char *ptx = read_ptx(argv[1], &len);
  struct utsname u;
  uname(&u);
  long query = syscall(SYS_membarrier, 0, 0, 0);
  long reg = query >= 0 && (query & (1 << 4)) ? syscall(SYS_membarrier, 1 << 4, 0, 0) : -1;
  printf("kernel %s; membarrier query %ld, private expedited registration %ld (%s)\n", u.release, query, reg,
         reg == 0 ? "available: ordo's calls take no fence" : "unavailable: ordo's calls take a full fence");
  CUmodule module;
  CUdevice dev = primary_context();
  CU(cuModuleLoadData(&module, ptx));
  CU(cuModuleGetFunction(&fn, module, "empty"));
  CU(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  CU(cuStreamCreate(&stream_b, CU_STREAM_DEFAULT));
  CU(cuModuleGetFunction(&add_fn, module, "vector_add_f32"));
  static char log[4096];
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule module_b;
  CU(cuModuleLoadDataEx(&module_b, ptx, 2, options, values));
  CU(cuModuleGetFunction(&add_fn_b, module_b, "vector_add_f32"));
  CU(cuModuleGetFunction(&empty_b, module_b, "empty"));
  /* A third module, loaded as the first, whose functions' parameters are described
   * (cuFuncGetParamInfo, as ordo asks at a kernel's first packed launch). */
  CUmodule module_q;
  CU(cuModuleLoadData(&module_q, ptx));
  CU(cuModuleGetFunction(&empty_q, module_q, "empty"));
  CU(cuModuleGetFunction(&add_fn_q, module_q, "vector_add_f32"));
  CUfunction described[] = {empty_q, add_fn_q};
  for (int f = 0; f < 2; f++)
    for (size_t i = 0;; i++) {
      size_t offset, size;
      if (cuFuncGetParamInfo(described[f], i, &offset, &size) != CUDA_SUCCESS) break;
    }
  (void)abba_calls; /* abba.h's other form, not used here */
  for (int i = 0; i < CHAIN; i++) /* page i points into page i + 1; the last to itself */
    chain_pages[i * 4160 / sizeof(void *)] = &chain_pages[(i + (i + 1 < CHAIN)) * 4160 / sizeof(void *)];
  bare();
  printf("| extra work before each launch (batches of %d, then a synchronise) | bare | with it | ratio [p25, p75] | |\n", N);
  printf("|---|---|---|---|---|\n");
  abba_report("a full fence (lock or)", bare, with_lock_or, ROUNDS, "");
  abba_report("mfence", bare, with_mfence, ROUNDS, "");
  abba_report("16 loads from 16 lines", bare, with_loads, ROUNDS, "");
  abba_report("16 stores to 16 lines", bare, with_stores, ROUNDS, "");
  abba_report("an indirect call into 60 branches", bare, with_code, ROUNDS, "");
  abba_report("a thread-local increment", bare, with_tls, ROUNDS, "");
  abba_report("a chain of 6 dependent loads, one page each", bare, with_chain, ROUNDS, "");
  abba_report("an indirect call into 40 never-taken branches", bare, with_predictable, ROUNDS, "");
  abba_report("an indirect call into 512 bytes of straight-line code", bare, with_footprint_512, ROUNDS, "");
  abba_report("an indirect call into 2 KiB of straight-line code", bare, with_footprint, ROUNDS, "");
  abba_report("an indirect call into 8 KiB of straight-line code", bare, with_footprint_8k, ROUNDS, "");
  abba_report("nothing (control)", bare, bare, ROUNDS, "");
  printf("| the driver against itself (batches of %d) | first | second | ratio [p25, p75] | |\n", N);
  printf("|---|---|---|---|---|\n");
  abba_report("vector_add_f32: packed buffer (extra) vs kernelParams, same function and stream", add_params_form,
              add_packed_form, ROUNDS, "");
  abba_report("vector_add_f32: second module (cuModuleLoadDataEx, JIT log) vs first, kernelParams", add_params_form,
              add_second_module, ROUNDS, "");
  abba_report("empty: second module vs first", empty_first, empty_second_module, ROUNDS, "");
  abba_report("empty: second blocking stream vs first", empty_first, empty_second_stream, ROUNDS, "");
  abba_report("empty: a third module's, parameters described (cuFuncGetParamInfo), vs first", empty_first,
              empty_queried, ROUNDS, "");
  abba_report("vector_add_f32: the third module's, parameters described, vs first, kernelParams", add_params_form,
              add_queried, ROUNDS, "");
  CU(cuStreamDestroy(stream_b));
  CU(cuModuleUnload(module_b));
  CU(cuModuleUnload(module_q));
  CU(cuStreamDestroy(stream));
  CU(cuModuleUnload(module));
  CU(cuDevicePrimaryCtxRelease(dev));
  return 0;
}

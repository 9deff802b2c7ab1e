/* The least a runtime linked as a shared library can put in front of the driver: a function of
 * its own shared object that forwards to cuLaunchKernel through a pointer looked up with dlsym (as
 * ordo's CUDA backend looks it up). No checks, no tables: with -O2 the call is one jump. The floor
 * rows of offload_bench.c measure it against the driver called directly, in the same processes
 * as olLaunchKernel's rows, to separate what any library in front of the driver costs on this
 * host from what ordo's code costs. Three more forwarding functions add, one at a time, what any
 * runtime's launch has around the driver's call, to tell its costs apart: a call that returns
 * through the shim (not a jump), that call from a 512-byte frame, and that call inside a
 * per-thread in-flight count (a thread-local read, a counter written before and after, a shared
 * word read: the shape of ordo's gate).
 * Built on the GPU machine: cc -O2 -shared -fPIC -I<cuda>/include launch_shim.c -ldl
 *   -o liblaunch_shim.so. tests/gpu/run.sh links it into offload_bench after -lcuda, so that the
 *   loader still maps libordo and libcuda next to each other, with --no-as-needed (offload_bench
 *   refers to it weakly, which the linker does not count as a need). */
#include <cuda.h>
#include <dlfcn.h>
#include <stddef.h>

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
static launch_fn driver;

/* Looks up the driver's cuLaunchKernel in the libcuda the process has loaded: 0, or -1. */
int launch_shim_init(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return -1;
  driver = (launch_fn)dlsym(lib, "cuLaunchKernel");
  return driver ? 0 : -1;
}

/* cuLaunchKernel, forwarded (with -O2: one jump). */
CUresult launch_shim(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                     unsigned shared, CUstream stream, void **params, void **extra) {
  return driver(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

static volatile CUresult last;

/* cuLaunchKernel, called: the driver returns into the shim, which returns to its caller. */
CUresult launch_shim_call(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, CUstream stream, void **params, void **extra) {
  CUresult r = driver(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
  last = r;
  return r;
}

/* launch_shim_call from a 512-byte frame (written, so that it is not optimised away). */
CUresult launch_shim_frame(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned shared, CUstream stream, void **params, void **extra) {
  volatile char frame[512];
  for (size_t i = 0; i < sizeof frame; i += 64) frame[i] = (char)i;
  CUresult r = driver(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
  last = r + frame[64];
  return r;
}

/* launch_shim_call inside a per-thread in-flight count, as a runtime's gate keeps one. */
static struct { volatile unsigned calls; char pad[60]; } counts[64];
static volatile unsigned phase = 4;
static __thread unsigned slot_plus_one __attribute__((tls_model("initial-exec")));
static unsigned next_slot;
CUresult launch_shim_gate(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, CUstream stream, void **params, void **extra) {
  if (!slot_plus_one) slot_plus_one = 1 + (__atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED) & 63);
  volatile unsigned *calls = &counts[slot_plus_one - 1].calls;
  *calls = *calls + 1;
  if (phase != 4) { *calls = *calls - 1; return CUDA_ERROR_NOT_INITIALIZED; }
  CUresult r = driver(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
  *calls = *calls - 1;
  return r;
}

/* The least a runtime linked as a shared library can put in front of the driver: a function of
 * its own shared object that forwards to cuLaunchKernel through a pointer looked up with dlsym (as
 * ordo's CUDA backend looks it up). No checks, no tables: with -O2 the call is one jump. The floor
 * rows of offload_bench.c measure it against the driver called directly, in the same processes
 * as olLaunchKernel's rows, to separate what any library in front of the driver costs on this
 * host from what ordo's code costs.
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

/* cuLaunchKernel, forwarded. */
CUresult launch_shim(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                     unsigned shared, CUstream stream, void **params, void **extra) {
  return driver(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

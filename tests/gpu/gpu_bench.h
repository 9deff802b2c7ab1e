/* What the GPU benchmarks built against cuda.h share (mlir_bench.c, offload_bench.c,
 * launch_probe.c, inproc_ab.c, driver_probe.c): the driver-call check, reading the kernels' PTX
 * file, device 0's primary context made current (the one ordo uses), and liboffload's types and
 * result check (the GPU machine has no OffloadAPI.h; they are the header's, whose values and
 * layouts tests/offload/layout.c checks on the CPU). c_launch_bench.c builds without cuda.h and
 * keeps its own. */
#ifndef ORDO_GPU_BENCH_H
#define ORDO_GPU_BENCH_H
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CU(x)                                                                              \
  do {                                                                                     \
    CUresult r_ = (x);                                                                     \
    if (r_ != CUDA_SUCCESS) { fprintf(stderr, "%s failed: %d\n", #x, (int)r_); exit(1); } \
  } while (0)

/* The file at `path`, NUL-terminated, in a static buffer (1 MiB); its length in `*len`. */
static const char *read_ptx(const char *path, size_t *len) {
  static char ptx[1 << 20];
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  *len = fread(ptx, 1, sizeof ptx - 1, f);
  fclose(f);
  ptx[*len] = 0;
  return ptx;
}

/* Device 0's primary context, retained and made current on this thread. */
static CUdevice primary_context(void) {
  CUdevice dev;
  CUcontext ctx;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  return dev;
}

typedef struct { uint32_t Code; const char *Details; } ol_error_struct_t;
typedef const ol_error_struct_t *ol_result_t;
typedef void *ol_handle;
typedef struct { uint32_t x, y, z; } ol_dimensions_t;
typedef struct {
  size_t Dimensions;
  ol_dimensions_t NumGroups, GroupSize;
  size_t DynSharedMemory;
} ol_kernel_launch_size_args_t;

#define OL(x)                                                                                        \
  do {                                                                                               \
    ol_result_t r_ = (x);                                                                            \
    if (r_) { fprintf(stderr, "%s failed: %u %s\n", #x, r_->Code, r_->Details); exit(1); }          \
  } while (0)

/* Each bench uses some of these. */
static inline void gpu_bench_unused(void) { (void)read_ptx; (void)primary_context; }
#endif

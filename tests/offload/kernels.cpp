// Kernels of the liboffload conformance suite (tests/offload/conformance.c) for CUDA devices:
// plain C++ with clang's <gpuintrin.h>, compiled to PTX by build.sh. The global variable and the
// `mixed` kernel check olGetSymbol's global variables and olLaunchKernel's argument layout.
#include <gpuintrin.h>
#include <stdint.h>

extern "C" {
__gpu_kernel void vector_add_f32(const float *a, const float *b, float *c, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i < n) c[i] = a[i] + b[i];
}

[[gnu::visibility("protected")]] uint32_t ol_test_global[4] = {1, 2, 3, 4};

__gpu_kernel void add_global(uint32_t *out) {
  uint32_t i = __gpu_thread_id_x();
  if (i < 4) out[i] = ol_test_global[i] + 10;
}

// Parameters at offsets 0, 8, 16 and 24 of the packed argument struct.
__gpu_kernel void mixed(char c, double d, uint16_t s, int64_t *out) {
  out[0] = c;
  out[1] = (int64_t)d;
  out[2] = s;
}

// Does nothing: the launch benchmark's kernel.
__gpu_kernel void empty() {}
}

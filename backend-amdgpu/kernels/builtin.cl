// ordo's built-in AMDGPU program, in OpenCL C for clang's amdgcn target without device
// libraries (-nogpulib): work-item ids come from clang builtins. Rebuilt by build.sh; the code
// objects beside it are checked in.

static inline uint global_x(void) {
  return __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
}

// c[i] = a[i] + b[i] for i < n.
__kernel void vector_add_f32(__global const float *a, __global const float *b, __global float *c, uint n) {
  uint i = global_x();
  if (i < n) c[i] = a[i] + b[i];
}

// *out += x[i] for i < n (atomic; the caller zeroes *out first).
__kernel void reduce_sum_f32(__global const float *x, __global float *out, uint n) {
  uint i = global_x();
  if (i < n) __atomic_fetch_add(out, x[i], __ATOMIC_RELAXED);
}

// Do nothing (launch-overhead measurements; tests that need two argument-free kernels).
__kernel void empty(void) {}
__kernel void noop(void) {}

// Mixed scalar and pointer arguments and dynamic LDS (`scratch`, sized by the launch's dynamic
// shared memory): out[i] = scale * tag + offset + i, staged through LDS.
__kernel void mixed_args(float scale, __global float *out, long offset, __local float *scratch, char tag, uint n) {
  uint lid = __builtin_amdgcn_workitem_id_x();
  uint i = global_x();
  scratch[lid] = scale * (float)tag + (float)offset;
  __builtin_amdgcn_s_barrier();
  if (i < n) out[i] = scratch[lid] + (float)i;
}

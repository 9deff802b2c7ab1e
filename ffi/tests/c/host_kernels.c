/* Host kernels written in C: a program of C functions registered with
 * ordo_host_program_register, loaded by name on the host device, launched with checked
 * arguments (and through a packed argument layout), plus every refusal of the registration. */
#include <stdint.h>

#include "check.h"

/* out[i] = in[i] * factor for the thread's global index i < n. */
static ordo_status_t scale(const ordo_host_thread_t *t, void *const *args) {
  float *out = *(float *const *)args[0];
  const float *in = *(const float *const *)args[1];
  float factor = *(const float *)args[2];
  uint32_t n = *(const uint32_t *)args[3];
  uint32_t i = t->block[0] * t->block_dim[0] + t->thread[0];
  if (i < n) out[i] = in[i] * factor;
  return ORDO_SUCCESS;
}

/* Each thread adds its index + 1 to the block's local counter; the last writes out[block]. */
static ordo_status_t block_sum(const ordo_host_thread_t *t, void *const *args) {
  uint32_t *out = *(uint32_t *const *)args[0];
  if (t->local == NULL || t->local_len < sizeof(uint32_t)) return ORDO_ERROR_INVALID_VALUE;
  uint32_t *counter = (uint32_t *)t->local;
  *counter += t->thread[0] + 1;
  if (t->thread[0] + 1 == t->block_dim[0]) out[t->block[0]] = *counter;
  return ORDO_SUCCESS;
}

/* Fails every launch (its status is the launch's error, reported by the synchronise). */
static ordo_status_t refuse(const ordo_host_thread_t *t, void *const *args) {
  (void)t;
  (void)args;
  return ORDO_ERROR_INVALID_VALUE;
}

static const size_t scale_params[] = {sizeof(float *), sizeof(const float *), sizeof(float), sizeof(uint32_t)};
static const size_t one_pointer[] = {sizeof(uint32_t *)};
static const ordo_host_kernel_t kernels[] = {
    {"scale", scale, scale_params, 4},
    {"refuse", refuse, NULL, 0},
    {"block_sum", block_sum, one_pointer, 1},
};

int main(void) {
  /* Registration, before init: refusals first (nothing is registered by them). */
  static const size_t zero[] = {0};
  static const ordo_host_kernel_t no_fn[] = {{"x", NULL, NULL, 0}};
  static const ordo_host_kernel_t no_name[] = {{NULL, refuse, NULL, 0}};
  static const ordo_host_kernel_t zero_size[] = {{"x", refuse, zero, 1}};
  static const ordo_host_kernel_t no_sizes[] = {{"x", refuse, NULL, 2}};
  static const ordo_host_kernel_t twice[] = {{"x", refuse, NULL, 0}, {"x", refuse, NULL, 0}};
  EXPECT(ordo_host_program_register(NULL, kernels, 3), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_host_program_register("c.kernels", NULL, 3), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_host_program_register("", kernels, 3), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_host_program_register("bad", no_fn, 1), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_host_program_register("bad", no_name, 1), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_host_program_register("bad", zero_size, 1), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_host_program_register("bad", no_sizes, 1), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_host_program_register("bad", twice, 2), ORDO_ERROR_INVALID_ARGUMENT);
  OK(ordo_host_program_register("c.kernels", kernels, 3));
  OK(ordo_host_program_register("c.kernels", kernels, 3)); /* the same table again: nothing */
  EXPECT(ordo_host_program_register("c.kernels", kernels, 1), ORDO_ERROR_INVALID_ARGUMENT);

  OK(ordo_init());
  ordo_device_t d = host_device();
  ordo_program_t prog;
  ordo_kernel_t k, bad;
  ordo_queue_t q;
  EXPECT(ordo_program_load(d, "bad", 3, &prog), ORDO_ERROR_INVALID_BINARY); /* never registered */
  OK(ordo_program_load(d, "c.kernels", strlen("c.kernels"), &prog));
  OK(ordo_kernel_get(prog, "scale", &k));
  OK(ordo_kernel_get(prog, "refuse", &bad));
  EXPECT(ordo_kernel_get(prog, "missing", &bad), ORDO_ERROR_NOT_FOUND);
  OK(ordo_queue_create(d, &q));

  enum { N = 1000 };
  static float in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = (float)i;
  void *din, *dout;
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, sizeof in, &din));
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, sizeof out, &dout));
  OK(ordo_memcpy(din, in, sizeof in, ORDO_COPY_HOST_TO_DEVICE));
  float factor = 2.5f;
  uint32_t n = N;
  void *args[] = {&dout, &din, &factor, &n};
  size_t sizes[] = {sizeof dout, sizeof din, sizeof factor, sizeof n};
  ordo_launch_dims_t dims = {{8, 1, 1}, {128, 1, 1}, 0};
  OK(ordo_launch(q, k, &dims, args, sizes, 4));
  OK(ordo_memcpy(out, dout, sizeof out, ORDO_COPY_DEVICE_TO_HOST)); /* waits for the launch */
  for (int i = 0; i < N; i++) {
    if (out[i] != 2.5f * (float)i) {
      fprintf(stderr, "element %d: %g\n", i, (double)out[i]);
      return 1;
    }
  }
  /* The declared sizes are checked: a wrong one fails the launch itself. */
  size_t wrong[] = {sizeof dout, sizeof din, sizeof(double), sizeof n};
  EXPECT(ordo_launch(q, k, &dims, args, wrong, 4), ORDO_ERROR_INVALID_SIZE);
  /* The parameter layout is the declared sizes as a C struct. */
  ordo_param_slot_t layout[8];
  size_t count = 0;
  OK(ordo_kernel_param_layout(k, layout, 8, &count));
  if (count != 4 || layout[2].offset != 16 || layout[3].offset != 20 || layout[3].size != 4) {
    fprintf(stderr, "layout: %zu parameters\n", count);
    return 1;
  }
  /* Local memory: zeroed for each block, common to its threads. */
  ordo_kernel_t sum;
  OK(ordo_kernel_get(prog, "block_sum", &sum));
  uint32_t sums[3] = {0};
  void *dsums;
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, sizeof sums, &dsums));
  void *sum_args[] = {&dsums};
  size_t sum_sizes[] = {sizeof dsums};
  ordo_launch_dims_t blocks = {{3, 1, 1}, {4, 1, 1}, sizeof(uint32_t)};
  OK(ordo_launch(q, sum, &blocks, sum_args, sum_sizes, 1));
  OK(ordo_memcpy(sums, dsums, sizeof sums, ORDO_COPY_DEVICE_TO_HOST));
  if (sums[0] != 10 || sums[1] != 10 || sums[2] != 10) {
    fprintf(stderr, "block sums %u %u %u\n", sums[0], sums[1], sums[2]);
    return 1;
  }
  ordo_launch_dims_t too_much = {{1, 1, 1}, {1, 1, 1}, 48 * 1024 + 1};
  EXPECT(ordo_launch(q, sum, &too_much, sum_args, sum_sizes, 1), ORDO_ERROR_INVALID_VALUE);
  /* A kernel's error status fails its launch, reported by the queue's synchronise. */
  OK(ordo_launch(q, bad, &dims, NULL, NULL, 0));
  EXPECT(ordo_queue_synchronize(q), ORDO_ERROR_INVALID_VALUE);
  OK(ordo_queue_synchronize(q));
  OK(ordo_shutdown());
  return 0;
}

/* Shared by ordo's C test programs: status checks that print only on failure, and a workload
 * that runs a verified vector add on the host platform. */
#ifndef ORDO_TEST_CHECK_H
#define ORDO_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ordo.h"

#define EXPECT(call, want)                                                                         \
  do {                                                                                             \
    ordo_status_t got_ = (call);                                                                   \
    if (got_ != (want)) {                                                                          \
      fprintf(stderr, "%s:%d: %s returned %d (%s: %s), expected %d (%s)\n", __FILE__, __LINE__,    \
              #call, (int)got_, ordo_status_string(got_), ordo_last_error_detail(), (int)(want),   \
              ordo_status_string(want));                                                           \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#define OK(call) EXPECT(call, ORDO_SUCCESS)

/* The whole file at `path` in a malloc'ed buffer (NULL if unreadable), its length in `*size`. */
static inline unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long end = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *bytes = end > 0 ? (unsigned char *)malloc((size_t)end) : NULL;
  if (bytes != NULL && fread(bytes, 1, (size_t)end, f) != (size_t)end) {
    free(bytes);
    bytes = NULL;
  }
  fclose(f);
  *size = end > 0 ? (size_t)end : 0;
  return bytes;
}

#define N_ELEMENTS 4096

/* The host platform's device 0 (the host backend is registered first). */
static inline ordo_device_t host_device(void) {
  ordo_platform_t p;
  ordo_device_t d;
  OK(ordo_platform_get(0, &p));
  OK(ordo_device_get(p, 0, &d));
  return d;
}

/* Loads ordo.builtin, runs vector_add_f32 on N_ELEMENTS floats and checks every element.
 * Leaves the queue, program and buffers live unless `release` is set. */
static inline void run_vector_add(int release) {
  ordo_device_t d = host_device();
  ordo_queue_t q;
  ordo_program_t prog;
  ordo_kernel_t k;
  void *a, *b, *c;
  static float x[N_ELEMENTS], y[N_ELEMENTS], z[N_ELEMENTS];
  size_t bytes = sizeof x;
  OK(ordo_queue_create(d, &q));
  OK(ordo_program_load(d, "ordo.builtin", strlen("ordo.builtin"), &prog));
  OK(ordo_kernel_get(prog, "vector_add_f32", &k));
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, bytes, &a));
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, bytes, &b));
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, bytes, &c));
  for (int i = 0; i < N_ELEMENTS; i++) {
    x[i] = (float)i;
    y[i] = 0.5f * (float)i;
  }
  OK(ordo_memcpy(a, x, bytes, ORDO_COPY_HOST_TO_DEVICE));
  OK(ordo_memcpy_async(q, b, y, bytes, ORDO_COPY_HOST_TO_DEVICE));
  uint32_t n = N_ELEMENTS;
  void *args[] = {&a, &b, &c, &n};
  size_t sizes[] = {sizeof a, sizeof b, sizeof c, sizeof n};
  ordo_launch_dims_t dims = {{N_ELEMENTS / 256, 1, 1}, {256, 1, 1}, 0};
  OK(ordo_launch(q, k, &dims, args, sizes, 4));
  OK(ordo_queue_synchronize(q));
  OK(ordo_memcpy(z, c, bytes, ORDO_COPY_DEVICE_TO_HOST));
  for (int i = 0; i < N_ELEMENTS; i++) {
    if (z[i] != x[i] + y[i]) {
      fprintf(stderr, "element %d: %f != %f\n", i, (double)z[i], (double)(x[i] + y[i]));
      exit(1);
    }
  }
  if (release) {
    OK(ordo_mem_free(a));
    OK(ordo_mem_free(b));
    OK(ordo_mem_free(c));
    OK(ordo_program_unload(prog));
    OK(ordo_queue_destroy(q));
  }
}

/* The report of the last final shutdown must be clean and have released `allocations`. */
static inline void expect_clean_report(uint32_t allocations) {
  ordo_teardown_report_t r;
  OK(ordo_last_teardown_report(&r));
  if (r.failure_count != 0 || r.overflow != 0 || r.released[6] != allocations) {
    fprintf(stderr, "report: %u failures, %u allocations released (expected %u)\n", r.failure_count,
            r.released[6], allocations);
    exit(1);
  }
}

#endif

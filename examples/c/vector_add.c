/* ordo from C: on every device of every present platform (the host backend, and CUDA GPUs
 * when a driver is present), load ordo's built-in program, add two vectors, check every element,
 * and shut down. Build and run: see docs/c-abi.md. */
#include <stdio.h>
#include <stdlib.h>

#include "ordo.h"

#define CHECK(call)                                                                        \
  do {                                                                                     \
    ordo_status_t s_ = (call);                                                             \
    if (s_ != ORDO_SUCCESS) {                                                              \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ordo_status_string(s_), ordo_last_error_detail()); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

#define N (1 << 16)

static float a[N], b[N], c[N];

static int add_on(ordo_device_t device) {
  const void *image;
  size_t image_size;
  ordo_program_t program;
  ordo_kernel_t kernel;
  ordo_queue_t queue;
  void *da, *db, *dc;
  CHECK(ordo_builtin_program_image(device, &image, &image_size));
  CHECK(ordo_program_load(device, image, image_size, &program));
  CHECK(ordo_kernel_get(program, "vector_add_f32", &kernel));
  CHECK(ordo_queue_create(device, &queue));
  CHECK(ordo_mem_alloc(device, ORDO_MEM_DEVICE, sizeof a, &da));
  CHECK(ordo_mem_alloc(device, ORDO_MEM_DEVICE, sizeof b, &db));
  CHECK(ordo_mem_alloc(device, ORDO_MEM_DEVICE, sizeof c, &dc));
  CHECK(ordo_memcpy(da, a, sizeof a, ORDO_COPY_HOST_TO_DEVICE));
  CHECK(ordo_memcpy(db, b, sizeof b, ORDO_COPY_HOST_TO_DEVICE));
  uint32_t n = N;
  void *args[] = {&da, &db, &dc, &n};
  size_t sizes[] = {sizeof da, sizeof db, sizeof dc, sizeof n};
  ordo_launch_dims_t dims = {{N / 256, 1, 1}, {256, 1, 1}, 0};
  CHECK(ordo_launch(queue, kernel, &dims, args, sizes, 4));
  CHECK(ordo_queue_synchronize(queue));
  CHECK(ordo_memcpy(c, dc, sizeof c, ORDO_COPY_DEVICE_TO_HOST));
  for (int i = 0; i < N; i++) {
    if (c[i] != a[i] + b[i]) {
      fprintf(stderr, "element %d is wrong\n", i);
      return 1;
    }
  }
  /* The queue, program and buffers are left to ordo_shutdown, which releases them in order. */
  return 0;
}

int main(void) {
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = 2.0f * (float)i;
  }
  CHECK(ordo_init());
  uint32_t platforms;
  CHECK(ordo_platform_count(&platforms));
  for (uint32_t p = 0; p < platforms; p++) {
    ordo_platform_t platform;
    ordo_platform_info_t info;
    CHECK(ordo_platform_get(p, &platform));
    CHECK(ordo_platform_get_info(platform, &info));
    if (!info.present) {
      printf("platform %s: absent (%s)\n", (const char *)info.name, (const char *)info.absent_reason);
      continue;
    }
    for (uint32_t d = 0; d < info.device_count; d++) {
      ordo_device_t device;
      ordo_info_value_t name;
      CHECK(ordo_device_get(platform, d, &device));
      CHECK(ordo_device_get_info(device, ORDO_DEVICE_INFO_NAME, &name));
      if (add_on(device) != 0) return 1;
      printf("platform %s device %u (%s): %d of %d elements correct\n", (const char *)info.name, d,
             (const char *)name.text, N, N);
    }
  }
  CHECK(ordo_shutdown());
  ordo_teardown_report_t report;
  CHECK(ordo_last_teardown_report(&report));
  printf("teardown: %u allocations released, %u failures\n", report.released[6], report.failure_count);
  return report.failure_count == 0 ? 0 : 1;
}

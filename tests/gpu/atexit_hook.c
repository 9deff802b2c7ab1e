/* ordo_shutdown_at_exit with live CUDA objects and a kernel still running when main returns.
 * The hook runs before the CUDA driver's own exit handlers, so ordo releases everything itself:
 * the checker (registered before ordo, so it runs after the hook) reads the report and requires
 * no failure, nothing released by the driver, and every object counted; a late explicit
 * ordo_shutdown is turned away quietly. Exit 0 and an empty stderr mean success; 2: no CUDA.
 * Built on the device by tests/gpu/run.sh with docs/c-abi.md's link line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ordo.h"

#define OK(call)                                                                                   \
  do {                                                                                             \
    ordo_status_t s_ = (call);                                                                     \
    if (s_ != ORDO_SUCCESS) {                                                                      \
      fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, ordo_status_string(s_),   \
              ordo_last_error_detail());                                                           \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static uint32_t cuda_devices;

static void check_after_ordo(void) {
  ordo_teardown_report_t r;
  uint32_t phase, refs;
  OK(ordo_get_state(&phase, &refs));
  OK(ordo_last_teardown_report(&r));
  /* platform, device, queue, event, program, kernel, allocation, graph, communicator */
  uint32_t want[9] = {2, 1 + cuda_devices, 1, 1, 1, 2, 3, 0, 0};
  printf("atexit hook (C): phase=%u sequence=%llu failures=%u released_by_driver=%u released=[%u %u %u %u %u %u %u %u %u]\n",
         phase, (unsigned long long)r.sequence, r.failure_count, r.released_by_driver, r.released[0], r.released[1],
         r.released[2], r.released[3], r.released[4], r.released[5], r.released[6], r.released[7], r.released[8]);
  fflush(stdout);
  int bad = phase != 0 || r.sequence != 1 || r.failure_count != 0 || r.overflow != 0 || r.released_by_driver != 0 ||
            memcmp(r.released, want, sizeof want) != 0;
  if (ordo_shutdown() != ORDO_ERROR_UNINITIALIZED) bad = 1; /* a late explicit shutdown: turned away */
  if (bad) {
    fprintf(stderr, "the at-exit teardown was not ordo's own, complete and clean\n");
    _Exit(3);
  }
}

int main(void) {
  if (atexit(check_after_ordo) != 0) return 1;
  OK(ordo_init());
  OK(ordo_shutdown_at_exit());
  ordo_platform_t cuda;
  ordo_platform_info_t info;
  OK(ordo_platform_get(1, &cuda));
  OK(ordo_platform_get_info(cuda, &info));
  if (!info.present) {
    printf("CUDA absent: %s\n", (const char *)info.absent_reason);
    _Exit(2);
  }
  cuda_devices = info.device_count;
  ordo_device_t d;
  ordo_queue_t q;
  ordo_event_t e;
  ordo_program_t p;
  ordo_kernel_t spin, add;
  const void *image;
  size_t size;
  void *dev, *host, *managed;
  OK(ordo_device_get(cuda, 0, &d));
  OK(ordo_queue_create(d, &q));
  OK(ordo_event_create(d, &e));
  OK(ordo_builtin_program_image(d, &image, &size));
  OK(ordo_program_load(d, image, size, &p));
  OK(ordo_kernel_get(p, "spin_cycles", &spin));
  OK(ordo_kernel_get(p, "vector_add_f32", &add));
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, 1 << 20, &dev));
  OK(ordo_mem_alloc(d, ORDO_MEM_HOST, 1 << 16, &host));
  OK(ordo_mem_alloc(d, ORDO_MEM_MANAGED, 1 << 16, &managed));
  OK(ordo_fill(dev, 7, 1, 1 << 20, q));
  uint64_t cycles = 300000000; /* about 0.15 s: still running when main returns */
  void *args[] = {&cycles};
  size_t sizes[] = {sizeof cycles};
  ordo_launch_dims_t one = {{1, 1, 1}, {1, 1, 1}, 0};
  OK(ordo_launch(q, spin, &one, args, sizes, 1));
  OK(ordo_event_record(e, q));
  return 0; /* no shutdown: the hook does it */
}

/* Links the no_std build of ordo's C library (host backend only, no Rust std), gives it its
 * arena and wait step as a firmware host does, and runs init -> alloc -> copy -> launch ->
 * verify -> shutdown, with a host function that waits for the queue's next execution point.
 * Exit status 0 when all of it worked. */
#include <stdio.h>
#include <string.h>

#include "ordo.h"

#define CHECK(call)                                                                  \
  do {                                                                               \
    if ((call) != ORDO_SUCCESS) {                                                    \
      fprintf(stderr, "%s failed: %s\n", #call, ordo_last_error_detail());           \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

/* The firmware's own world: the host arena (placed where the firmware wants it) and the wait
 * step (an RTOS would yield here). */
static _Alignas(256) unsigned char arena[64 * 1024];
static unsigned waits;
static void wait_step(void) { waits++; }

static void count_call(void *calls) { (*(unsigned *)calls)++; }

int main(void) {
  uint32_t platforms;
  ordo_platform_info_t info;
  ordo_platform_t p;
  ordo_device_t d;
  ordo_queue_t q;
  ordo_program_t prog;
  ordo_kernel_t k;
  const void *image;
  size_t image_size;
  void *da, *db, *dc;
  float a[512], b[512], c[512];
  for (int i = 0; i < 512; i++) a[i] = b[i] = (float)i;
  if (ordo_shutdown_at_exit() != ORDO_ERROR_UNSUPPORTED) return 2;
  CHECK(ordo_set_wait_hook(wait_step));
  /* Without std and without an arena, the host platform is absent and says why. */
  CHECK(ordo_init());
  CHECK(ordo_platform_get(0, &p));
  CHECK(ordo_platform_get_info(p, &info));
  if (info.present || info.status != ORDO_ERROR_NOT_PRESENT || strlen((const char *)info.absent_reason) == 0) return 8;
  CHECK(ordo_shutdown());
  if (ordo_set_host_arena(NULL, sizeof arena) != ORDO_ERROR_NULL_POINTER) return 9;
  if (ordo_set_host_arena(arena, 16) != ORDO_ERROR_INVALID_SIZE) return 10;
  CHECK(ordo_set_host_arena(arena, sizeof arena));
  if (ordo_set_host_arena(arena, sizeof arena) != ORDO_ERROR_BUSY) return 11;
  CHECK(ordo_init());
  CHECK(ordo_platform_count(&platforms));
  if (platforms != 1) return 3; /* host only */
  CHECK(ordo_platform_get(0, &p));
  CHECK(ordo_device_get(p, 0, &d));
  CHECK(ordo_builtin_program_image(d, &image, &image_size));
  CHECK(ordo_program_load(d, image, image_size, &prog));
  CHECK(ordo_kernel_get(prog, "vector_add_f32", &k));
  CHECK(ordo_queue_create(d, &q));
  CHECK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, sizeof a, &da));
  CHECK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, sizeof b, &db));
  CHECK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, sizeof c, &dc));
  CHECK(ordo_memcpy(da, a, sizeof a, ORDO_COPY_HOST_TO_DEVICE));
  CHECK(ordo_memcpy(db, b, sizeof b, ORDO_COPY_HOST_TO_DEVICE));
  uint32_t n = 512;
  void *args[] = {&da, &db, &dc, &n};
  size_t sizes[] = {sizeof da, sizeof db, sizeof dc, sizeof n};
  ordo_launch_dims_t dims = {{2, 1, 1}, {256, 1, 1}, 0};
  CHECK(ordo_launch(q, k, &dims, args, sizes, 4));
  /* Without std a queue's work waits for an execution point (the queue's synchronise or query,
   * a copy without a queue, ...): the host function has not run yet, then the query runs it. */
  unsigned calls = 0;
  int32_t done = 0;
  CHECK(ordo_queue_host_function(q, count_call, &calls));
  if (calls != 0) return 13;
  CHECK(ordo_queue_query(q, &done));
  if (calls != 1 || !done) return 14;
  CHECK(ordo_memcpy(c, dc, sizeof c, ORDO_COPY_DEVICE_TO_HOST));
  for (int i = 0; i < 512; i++)
    if (c[i] != 2.0f * (float)i) return 4;
  if (ordo_mem_free((char *)da + 4) != ORDO_ERROR_INVALID_ARGUMENT) return 5;
  if (strlen(ordo_last_error_detail()) == 0) return 6;
  CHECK(ordo_shutdown());
  if (ordo_queue_synchronize(q) != ORDO_ERROR_UNINITIALIZED) return 7;
  /* Memory came from the firmware's arena. */
  if ((unsigned char *)da < arena || (unsigned char *)da >= arena + sizeof arena) return 12;
  CHECK(ordo_set_wait_hook(NULL));
  printf("no_std C library: init, alloc, copy, launch, verify, shutdown: ok\n");
  return 0;
}

/* ordo_shutdown_at_exit before init: the hook is registered after the backends are up, so it
 * runs before a handler registered earlier, which then sees ordo uninitialised and every call
 * turned away quietly. */
#include "check.h"

static ordo_queue_t leftover;
static void *leftover_memory;

static void after_ordo(void) {
  uint32_t phase, refs;
  OK(ordo_get_state(&phase, &refs));
  if (phase != 0) {
    fprintf(stderr, "the at-exit hook did not run first\n");
    _Exit(1);
  }
  expect_clean_report(4);
  EXPECT(ordo_queue_synchronize(leftover), ORDO_ERROR_UNINITIALIZED);
  EXPECT(ordo_mem_free(leftover_memory), ORDO_ERROR_UNINITIALIZED);
}

int main(void) {
  if (atexit(after_ordo) != 0) return 1;
  OK(ordo_shutdown_at_exit());
  OK(ordo_shutdown_at_exit()); /* idempotent */
  OK(ordo_init());
  OK(ordo_init()); /* two references: the hook drops both */
  run_vector_add(0);
  OK(ordo_queue_create(host_device(), &leftover));
  OK(ordo_mem_alloc(host_device(), ORDO_MEM_HOST, 64, &leftover_memory));
  return 0;
}

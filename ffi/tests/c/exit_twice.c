/* Nested init/shutdown, then one shutdown too many: an error, nothing else. */
#include "check.h"

int main(void) {
  OK(ordo_init());
  OK(ordo_init());
  run_vector_add(0);
  OK(ordo_shutdown());
  uint32_t phase, refs;
  OK(ordo_get_state(&phase, &refs));
  if (phase != 2 || refs != 1) return 1;
  OK(ordo_shutdown());
  expect_clean_report(3);
  EXPECT(ordo_shutdown(), ORDO_ERROR_UNINITIALIZED);
  EXPECT(ordo_shutdown(), ORDO_ERROR_UNINITIALIZED);
  /* A fresh start after a full shutdown. */
  OK(ordo_init());
  run_vector_add(1);
  OK(ordo_shutdown());
  expect_clean_report(0);
  EXPECT(ordo_shutdown(), ORDO_ERROR_UNINITIALIZED);
  return 0;
}

/* Final shutdown from main, with objects still live: teardown releases them. */
#include "check.h"

int main(void) {
  OK(ordo_init());
  run_vector_add(0);
  OK(ordo_shutdown());
  expect_clean_report(3);
  uint32_t phase, refs;
  OK(ordo_get_state(&phase, &refs));
  return phase == 0 ? 0 : 1;
}

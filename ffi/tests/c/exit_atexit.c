/* Final shutdown from an atexit handler. */
#include "check.h"

static void shut_down(void) {
  OK(ordo_shutdown());
  expect_clean_report(3);
}

int main(void) {
  OK(ordo_init());
  if (atexit(shut_down) != 0) return 1;
  run_vector_add(0);
  return 0;
}

/* Never shut down: exit must still be quiet (ordo registers no destructors of its own). */
#include "check.h"

int main(void) {
  OK(ordo_init());
  run_vector_add(0);
  return 0;
}

/* The timing and reporting the GPU benchmarks share: a monotonic clock in ns, and ABBA rounds of
 * a baseline and ordo's side in one process, printed as a Markdown row with the per-round ratio's
 * median and quartiles. Included by mlir_bench.c and offload_bench.c. */
#ifndef ORDO_ABBA_H
#define ORDO_ABBA_H
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int abba_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* `rounds` rounds of bare, ordo, ordo, bare; the row: mean ns of each side, the median
 * [p25, p75] of the per-round ratio ordo / bare, and `target`. */
static void abba_report(const char *name, double (*bare)(void), double (*ordo)(void), int rounds,
                        const char *target) {
  double *ratios = malloc(sizeof(double) * rounds), b_sum = 0, o_sum = 0;
  for (int r = 0; r < rounds; r++) {
    double b1 = bare(), o1 = ordo(), o2 = ordo(), b2 = bare();
    ratios[r] = (o1 + o2) / (b1 + b2);
    b_sum += b1 + b2;
    o_sum += o1 + o2;
  }
  qsort(ratios, rounds, sizeof ratios[0], abba_cmp);
  printf("| %s | %.0f ns | %.0f ns | %.3f [%.3f, %.3f] | %s |\n", name, b_sum / (2 * rounds), o_sum / (2 * rounds),
         ratios[rounds / 2], ratios[rounds / 4], ratios[(3 * rounds) / 4], target);
  free(ratios);
}
#endif

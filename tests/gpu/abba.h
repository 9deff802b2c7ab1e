/* The timing and reporting the GPU benchmarks share: a monotonic clock in ns, and ABBA rounds of
 * a baseline and ordo's side in one process — of whole batches, or of single calls — printed as
 * a Markdown row with the per-round ratio's median and quartiles. Included by mlir_bench.c and
 * offload_bench.c. */
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
/* ABBA at the grain of one call: `rounds` rounds of bare(), ordo(), ordo(), bare(), each call
 * timed on its own (the host's time in the call: for a launch, the submission), `sync()` untimed
 * after every 64 rounds so that the queue never fills. Host noise (an interrupt, another
 * tenant) lands on one call of one round and moves that round's ratio only; the median over many
 * rounds does not see it. The row: the median ns per call of each side, the median [p25, p75] of
 * the per-round ratio, and the median per-round difference (ordo - bare) per call, in ns. */
static void abba_calls(const char *name, void (*bare)(void), void (*ordo)(void), void (*sync)(void), int rounds,
                       const char *target) {
  double *ratios = malloc(sizeof(double) * rounds), *diffs = malloc(sizeof(double) * rounds);
  double *b_each = malloc(sizeof(double) * rounds), *o_each = malloc(sizeof(double) * rounds);
  for (int r = 0; r < rounds; r++) {
    double t0 = now();
    bare();
    double t1 = now();
    ordo();
    (void)now(); /* as many clock reads inside each side's time */
    ordo();
    double t3 = now();
    bare();
    double t4 = now();
    double b = (t1 - t0) + (t4 - t3), o = (t3 - t1);
    ratios[r] = o / b;
    diffs[r] = (o - b) / 2;
    b_each[r] = b / 2;
    o_each[r] = o / 2;
    if (r % 64 == 63) sync();
  }
  sync();
  qsort(ratios, rounds, sizeof ratios[0], abba_cmp);
  qsort(diffs, rounds, sizeof diffs[0], abba_cmp);
  qsort(b_each, rounds, sizeof b_each[0], abba_cmp);
  qsort(o_each, rounds, sizeof o_each[0], abba_cmp);
  printf("| %s | %.0f ns | %.0f ns | %.3f [%.3f, %.3f]; ordo - driver per call: %+.0f ns [%+.0f, %+.0f] | %s |\n", name,
         b_each[rounds / 2], o_each[rounds / 2], ratios[rounds / 2], ratios[rounds / 4], ratios[(3 * rounds) / 4],
         diffs[rounds / 2], diffs[rounds / 4], diffs[(3 * rounds) / 4], target);
  free(ratios);
  free(diffs);
  free(b_each);
  free(o_each);
}
#endif

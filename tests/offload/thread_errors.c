/* ol* results of threads that have exited: each of 64 threads fails two ol* calls and exits.
 * Every result must stay readable after its thread is gone, unchanged by later failures of other
 * threads, and (ordo) the memory behind them must stay reachable: run under valgrind with
 * definite leaks as errors, nothing may be lost (ordo once leaked a 1 KiB struct per thread).
 * Links against any implementation of liboffload's API. Exit status 0 when every check holds.
 */
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <offload/OffloadAPI.h>

#define THREADS 64

static ol_result_t results[THREADS][2];

/* Fails two calls; keeps their results where `arg` says (NULL: drops them, as most programs do
 * once they have looked at the code). */
static void *fail_twice(void *arg) {
  ol_result_t *mine = arg;
  /* NULL devices: INVALID_NULL_HANDLE. */
  char name[64];
  ol_result_t r0 = olGetDeviceInfo(NULL, OL_DEVICE_INFO_NAME, sizeof name, name);
  ol_result_t r1 = olMemAlloc(NULL, OL_ALLOC_TYPE_DEVICE, 16, NULL);
  if (mine != NULL) {
    mine[0] = r0;
    mine[1] = r1;
  } else if (r0 == NULL || r1 == NULL) {
    abort();
  }
  return NULL;
}

/* Runs `fail_twice` on THREADS threads, in waves of 8 (threads come and go while others fail). */
static int churn(bool keep) {
  for (int wave = 0; wave < THREADS; wave += 8) {
    pthread_t threads[8];
    for (int i = 0; i < 8; i++) {
      if (pthread_create(&threads[i], NULL, fail_twice, keep ? (void *)results[wave + i] : NULL) != 0) {
        printf("FAIL pthread_create\n");
        return 1;
      }
    }
    for (int i = 0; i < 8; i++) pthread_join(threads[i], NULL);
  }
  return 0;
}

static int check(const char *what, ol_result_t r, ol_errc_t code) {
  if (r == NULL || r->Code != code || r->Details == NULL || r->Details[0] == '\0') {
    if (r == NULL)
      printf("FAIL %s: success\n", what);
    else
      printf("FAIL %s: code %d (want %d), detail \"%s\"\n", what, (int)r->Code, (int)code,
             r->Details == NULL ? "(null)" : r->Details);
    return 1;
  }
  return 0;
}

int main(void) {
  if (olInit() != NULL) {
    printf("FAIL olInit\n");
    return 1;
  }
  int failures = 0;
  /* Threads whose results are dropped (nothing may be lost with them), then threads whose
   * results are read after they exited. */
  if (churn(false) != 0 || churn(true) != 0) return 1;
  char first[2][256];
  for (int k = 0; k < 2; k++) snprintf(first[k], sizeof first[k], "%s", results[0][k]->Details);
  for (int t = 0; t < THREADS; t++) {
    failures += check("olGetDeviceInfo(NULL)", results[t][0], OL_ERRC_INVALID_NULL_HANDLE);
    failures += check("olMemAlloc(NULL)", results[t][1], OL_ERRC_INVALID_NULL_HANDLE);
    for (int k = 0; k < 2 && failures == 0; k++) {
      if (strcmp(results[t][k]->Details, first[k]) != 0) {
        printf("FAIL thread %d's detail %d changed: \"%s\" vs \"%s\"\n", t, k, results[t][k]->Details, first[k]);
        failures++;
      }
    }
  }
  if (olShutDown() != NULL) {
    printf("FAIL olShutDown\n");
    failures++;
  }
  if (failures == 0) printf("PASS %d threads, %d results each\n", THREADS, 2);
  return failures != 0;
}

/* Threads churning init / use / shutdown through the C API while others call without a
 * reference. A thread holding a reference sees every call succeed; the others see success,
 * ORDO_ERROR_UNINITIALIZED or a stale-handle error, never anything else. */
#include <pthread.h>

#include "check.h"

#define ITERATIONS 300

static void *with_reference(void *arg) {
  (void)arg;
  for (int i = 0; i < ITERATIONS; i++) {
    OK(ordo_init());
    run_vector_add(1);
    OK(ordo_shutdown());
  }
  return NULL;
}

static int allowed(ordo_status_t s) {
  return s == ORDO_SUCCESS || s == ORDO_ERROR_UNINITIALIZED || s == ORDO_ERROR_INVALID_HANDLE ||
         s == ORDO_ERROR_NOT_FOUND;
}

static void *without_reference(void *arg) {
  (void)arg;
  for (int i = 0; i < ITERATIONS * 4; i++) {
    ordo_platform_t p;
    ordo_device_t d;
    ordo_queue_t q;
    ordo_event_t e;
    ordo_status_t s = ordo_platform_get(0, &p);
    if (!allowed(s)) goto bad;
    if (s != ORDO_SUCCESS) continue;
    s = ordo_device_get(p, 0, &d);
    if (!allowed(s)) goto bad;
    if (s != ORDO_SUCCESS) continue;
    s = ordo_queue_create(d, &q);
    if (!allowed(s)) goto bad;
    if (s == ORDO_SUCCESS && !allowed(ordo_queue_destroy(q))) goto bad;
    /* Handle-named objects only: a freed address may be handed out again in a later epoch, and
     * freeing it then would free that epoch's allocation (as cuMemFree would). */
    s = ordo_event_create(d, &e);
    if (!allowed(s)) goto bad;
    if (s == ORDO_SUCCESS && !allowed(ordo_event_destroy(e))) goto bad;
  }
  return NULL;
bad:
  fprintf(stderr, "a call without a reference returned a status the model does not allow\n");
  exit(1);
}

static void *churn(void *arg) {
  (void)arg;
  for (int i = 0; i < ITERATIONS * 2; i++) {
    OK(ordo_init());
    OK(ordo_shutdown());
  }
  return NULL;
}

int main(void) {
  pthread_t t[6];
  void *(*fns[6])(void *) = {with_reference, with_reference, without_reference, without_reference, churn, churn};
  for (int i = 0; i < 6; i++) {
    if (pthread_create(&t[i], NULL, fns[i], NULL) != 0) return 1;
  }
  for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
  uint32_t phase, refs;
  OK(ordo_get_state(&phase, &refs));
  return phase == 0 ? 0 : 1;
}

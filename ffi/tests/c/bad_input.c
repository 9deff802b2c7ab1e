/* Every C function against bad input: NULL pointers, null / stale / wrong-kind / forged /
 * earlier-epoch handles, zero and huge sizes, unknown enumeration values, double release, calls
 * before init and after shutdown. Each case expects its specific status, and out-parameters keep
 * their sentinel values on failure. */
#include <stdint.h>

#include "check.h"

#define FORGED 0x00ffffffffffffffULL

static ordo_launch_dims_t one = {{1, 1, 1}, {1, 1, 1}, 0};

/* Every function that takes the lifecycle gate, with harmless arguments. */
static void all_uninitialized(ordo_device_t d, ordo_queue_t q, ordo_event_t e, ordo_program_t p, ordo_kernel_t k,
                              void *m) {
  const ordo_status_t U = ORDO_ERROR_UNINITIALIZED;
  uint32_t u32 = 77;
  int32_t i32 = 77;
  float f = 77;
  void *ptr = (void *)0x77;
  char buf[8];
  ordo_platform_t pl = {77};
  ordo_platform_info_t pi;
  ordo_info_value_t iv;
  ordo_device_t dd = {77};
  ordo_queue_t qq = {77};
  ordo_event_t ee = {77};
  ordo_program_t pp = {77};
  ordo_kernel_t kk = {77};
  EXPECT(ordo_platform_count(&u32), U);
  EXPECT(ordo_platform_get(0, &pl), U);
  EXPECT(ordo_platform_get_info(pl, &pi), U);
  EXPECT(ordo_device_get(pl, 0, &dd), U);
  EXPECT(ordo_device_get_info(d, ORDO_DEVICE_INFO_NAME, &iv), U);
  EXPECT(ordo_mem_alloc(d, ORDO_MEM_DEVICE, 16, &ptr), U);
  EXPECT(ordo_mem_free(m), U);
  EXPECT(ordo_memcpy(m, buf, 8, ORDO_COPY_HOST_TO_DEVICE), U);
  EXPECT(ordo_memcpy_async(q, m, buf, 8, ORDO_COPY_HOST_TO_DEVICE), U);
  EXPECT(ordo_fill(m, 0, 1, 8, (ordo_queue_t){0}), U);
  EXPECT(ordo_queue_create(d, &qq), U);
  EXPECT(ordo_queue_destroy(q), U);
  EXPECT(ordo_queue_synchronize(q), U);
  EXPECT(ordo_queue_query(q, &i32), U);
  EXPECT(ordo_queue_wait_event(q, e), U);
  EXPECT(ordo_event_create(d, &ee), U);
  EXPECT(ordo_event_destroy(e), U);
  EXPECT(ordo_event_record(e, q), U);
  EXPECT(ordo_event_synchronize(e), U);
  EXPECT(ordo_event_query(e, &i32), U);
  EXPECT(ordo_event_elapsed_ms(e, e, &f), U);
  EXPECT(ordo_program_load(d, "ordo.builtin", 12, &pp), U);
  EXPECT(ordo_program_unload(p), U);
  EXPECT(ordo_kernel_get(p, "vector_add_f32", &kk), U);
  EXPECT(ordo_launch(q, k, &one, NULL, NULL, 0), U);
  ordo_graph_t gg = {77};
  EXPECT(ordo_mem_alloc_async(q, 16, &ptr), U);
  EXPECT(ordo_mem_free_async(q, m), U);
  EXPECT(ordo_mem_info(m, NULL, NULL, NULL, NULL), U);
  EXPECT(ordo_queue_begin_capture(q), U);
  EXPECT(ordo_queue_end_capture(q, &gg), U);
  EXPECT(ordo_queue_is_capturing(q, &u32), U);
  EXPECT(ordo_queue_is_capturing(q, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_queue_trim(q, NULL), U);
  ordo_cache_stats_t cs0;
  EXPECT(ordo_device_cache_stats(d, &cs0), U);
  EXPECT(ordo_device_cache_stats(d, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_graph_launch(gg, q), U);
  EXPECT(ordo_graph_kernel_count(gg, &u32), U);
  EXPECT(ordo_graph_set_args(gg, 0, k, NULL, NULL, 0), U);
  EXPECT(ordo_graph_destroy(gg), U);
  ordo_comm_t cc = {77};
  ordo_comm_id_t cid;
  uint32_t cr = 77;
  ordo_collective_t cp = {{77}, q, ORDO_COLLECTIVE_ALL_REDUCE, ORDO_DATA_FLOAT32, ORDO_REDUCE_SUM, 0, 1, m, m};
  EXPECT(ordo_comm_create_all(&d, 1, &cc), U);
  EXPECT(ordo_comm_unique_id(pl, &cid), U);
  EXPECT(ordo_comm_create_rank(d, &cid, 0, 1, 1000, &cc), U);
  EXPECT(ordo_comm_info(cc, &cr, &cr, &dd), U);
  EXPECT(ordo_comm_native(cc, &ptr), U);
  EXPECT(ordo_collective(&cp, 1), U);
  EXPECT(ordo_comm_destroy(cc), U);
  EXPECT(ordo_comm_abort(cc), U);
  if (cc.raw != 77 || cr != 77) {
    fprintf(stderr, "a communicator out-parameter was written outside init\n");
    exit(1);
  }
  EXPECT(ordo_shutdown(), U);
  if (u32 != 77 || i32 != 77 || f != 77 || ptr != (void *)0x77 || pl.raw != 77 || dd.raw != 77 || qq.raw != 77 ||
      ee.raw != 77 || pp.raw != 77 || kk.raw != 77 || gg.raw != 77) {
    fprintf(stderr, "an out-parameter was written on failure\n");
    exit(1);
  }
}

/* The documented check order, for every function: a NULL out-parameter first, then the lifecycle,
 * then every other argument. Outside init, each call below has every other argument wrong (an
 * unknown enumeration, a bad value or size, a NULL input pointer, an empty name, a null handle)
 * and must still say ORDO_ERROR_UNINITIALIZED; with its out-parameter NULL as well, it must say
 * ORDO_ERROR_NULL_POINTER. */
static void check_order_outside_init(void) {
  const ordo_status_t U = ORDO_ERROR_UNINITIALIZED, N = ORDO_ERROR_NULL_POINTER;
  const ordo_platform_t pl0 = {0};
  const ordo_device_t d0 = {0};
  const ordo_queue_t q0 = {0};
  const ordo_event_t e0 = {0};
  const ordo_program_t p0 = {0};
  const ordo_kernel_t k0 = {0};
  const ordo_launch_dims_t zero = {{0, 0, 0}, {0, 0, 0}, 0};
  uint32_t u32 = 77;
  int32_t i32 = 77;
  float f = 77;
  void *ptr = (void *)0x77;
  ordo_platform_t pl = {77};
  ordo_platform_info_t pi;
  ordo_info_value_t iv;
  ordo_device_t dd = {77};
  ordo_queue_t qq = {77};
  ordo_event_t ee = {77};
  ordo_program_t pp = {77};
  ordo_kernel_t kk = {77};
  /* rows: (bad arguments, good out-parameter) -> U; (bad arguments, NULL out-parameter) -> N */
  EXPECT(ordo_platform_count(&u32), U);
  EXPECT(ordo_platform_count(NULL), N);
  EXPECT(ordo_platform_get(UINT32_MAX, &pl), U);
  EXPECT(ordo_platform_get(UINT32_MAX, NULL), N);
  EXPECT(ordo_platform_get_info(pl0, &pi), U);
  EXPECT(ordo_platform_get_info(pl0, NULL), N);
  EXPECT(ordo_device_get(pl0, UINT32_MAX, &dd), U);
  EXPECT(ordo_device_get(pl0, UINT32_MAX, NULL), N);
  EXPECT(ordo_device_get_info(d0, 777, &iv), U);
  EXPECT(ordo_device_get_info(d0, 777, NULL), N);
  EXPECT(ordo_mem_alloc(d0, 77, 0, &ptr), U);
  EXPECT(ordo_mem_alloc(d0, 77, 0, NULL), N);
  EXPECT(ordo_mem_free(NULL), U);
  EXPECT(ordo_memcpy(NULL, NULL, SIZE_MAX, 77), U);
  EXPECT(ordo_memcpy(NULL, NULL, 0, 77), U);
  EXPECT(ordo_memcpy_async(q0, NULL, NULL, SIZE_MAX, 77), U);
  EXPECT(ordo_fill(NULL, 0x1ffff, 3, SIZE_MAX, q0), U);
  EXPECT(ordo_fill(NULL, 0, 1, 0, q0), U);
  EXPECT(ordo_queue_create(d0, &qq), U);
  EXPECT(ordo_queue_create(d0, NULL), N);
  EXPECT(ordo_queue_destroy(q0), U);
  EXPECT(ordo_queue_synchronize(q0), U);
  EXPECT(ordo_queue_query(q0, &i32), U);
  EXPECT(ordo_queue_query(q0, NULL), N);
  EXPECT(ordo_queue_wait_event(q0, e0), U);
  EXPECT(ordo_event_create(d0, &ee), U);
  EXPECT(ordo_event_create(d0, NULL), N);
  EXPECT(ordo_event_destroy(e0), U);
  EXPECT(ordo_event_record(e0, q0), U);
  EXPECT(ordo_event_synchronize(e0), U);
  EXPECT(ordo_event_query(e0, &i32), U);
  EXPECT(ordo_event_query(e0, NULL), N);
  EXPECT(ordo_event_elapsed_ms(e0, e0, &f), U);
  EXPECT(ordo_event_elapsed_ms(e0, e0, NULL), N);
  EXPECT(ordo_program_load(d0, NULL, SIZE_MAX, &pp), U);
  EXPECT(ordo_program_load(d0, NULL, SIZE_MAX, NULL), N);
  EXPECT(ordo_program_unload(p0), U);
  EXPECT(ordo_kernel_get(p0, NULL, &kk), U);
  EXPECT(ordo_kernel_get(p0, "", &kk), U);
  EXPECT(ordo_kernel_get(p0, NULL, NULL), N);
  EXPECT(ordo_launch(q0, k0, NULL, NULL, NULL, 3), U);
  EXPECT(ordo_launch(q0, k0, &zero, NULL, NULL, 0), U);
  EXPECT(ordo_builtin_program_image(d0, (const void **)&ptr, NULL), N);
  EXPECT(ordo_builtin_program_image(d0, NULL, (size_t *)&ptr), N);
  EXPECT(ordo_builtin_program_image(d0, (const void **)&ptr, (size_t *)&ptr), U);
  ordo_graph_t gg = {77};
  EXPECT(ordo_mem_alloc_async(q0, 0, &ptr), U);
  EXPECT(ordo_mem_alloc_async(q0, 0, NULL), N);
  EXPECT(ordo_mem_free_async(q0, NULL), U);
  EXPECT(ordo_queue_begin_capture(q0), U);
  EXPECT(ordo_queue_end_capture(q0, &gg), U);
  EXPECT(ordo_queue_end_capture(q0, NULL), N);
  EXPECT(ordo_graph_launch((ordo_graph_t){0}, q0), U);
  EXPECT(ordo_graph_destroy((ordo_graph_t){0}), U);
  EXPECT(ordo_program_compile(d0, "__global__ void k() {}", NULL, 0, NULL), N);
  EXPECT(ordo_program_compile(d0, NULL, NULL, 0, &pp), U);
  EXPECT(ordo_graph_kernel_count((ordo_graph_t){0}, NULL), N);
  EXPECT(ordo_graph_kernel_count((ordo_graph_t){0}, &u32), U);
  EXPECT(ordo_graph_set_args((ordo_graph_t){0}, 0, k0, NULL, NULL, 1), U);
  if (gg.raw != 77) {
    fprintf(stderr, "an out-parameter was written on failure\n");
    exit(1);
  }
  if (u32 != 77 || i32 != 77 || f != 77 || ptr != (void *)0x77 || pl.raw != 77 || dd.raw != 77 || qq.raw != 77 ||
      ee.raw != 77 || pp.raw != 77 || kk.raw != 77) {
    fprintf(stderr, "an out-parameter was written on failure\n");
    exit(1);
  }
}

/* Communicators and collectives on the host device (the reference engine): every misuse gets its
 * status and changes nothing; a valid all-reduce works; a destroyed communicator is stale. */
static void communicators(ordo_device_t d, ordo_queue_t q) {
  const ordo_status_t N = ORDO_ERROR_NULL_POINTER;
  ordo_comm_t c = {77}, c2[2] = {{77}, {77}};
  uint32_t rank = 77, size = 77;
  ordo_device_t cd = {77};
  void *native = (void *)0x77;
  ordo_comm_id_t id;
  memset(&id, 0x77, sizeof id);
  EXPECT(ordo_comm_create_all(NULL, 1, &c), N);
  EXPECT(ordo_comm_create_all(&d, 1, NULL), N);
  EXPECT(ordo_comm_create_all(&d, 0, &c), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_comm_create_all(&d, 65, &c), ORDO_ERROR_INVALID_ARGUMENT);
  ordo_device_t twice[2] = {d, d};
  EXPECT(ordo_comm_create_all(twice, 2, c2), ORDO_ERROR_INVALID_ARGUMENT);
  ordo_device_t forged = {FORGED};
  EXPECT(ordo_comm_create_all(&forged, 1, &c), ORDO_ERROR_INVALID_HANDLE);
  ordo_platform_t pl;
  OK(ordo_platform_get(0, &pl));
  EXPECT(ordo_comm_unique_id(pl, NULL), N);
  EXPECT(ordo_comm_unique_id(pl, &id), ORDO_ERROR_UNSUPPORTED); /* the host device joins one process */
  EXPECT(ordo_comm_create_rank(d, NULL, 0, 1, 1000, &c), N);
  EXPECT(ordo_comm_create_rank(d, &id, 0, 1, 1000, NULL), N);
  EXPECT(ordo_comm_create_rank(d, &id, 1, 1, 1000, &c), ORDO_ERROR_INVALID_VALUE);
  EXPECT(ordo_comm_create_rank(d, &id, 0, 0, 1000, &c), ORDO_ERROR_INVALID_VALUE);
  EXPECT(ordo_comm_create_rank(d, &id, 0, 1, 0, &c), ORDO_ERROR_INVALID_VALUE);
  EXPECT(ordo_comm_create_rank(d, &id, 0, 1, 1000, &c), ORDO_ERROR_UNSUPPORTED);
  if (c.raw != 77 || c2[0].raw != 77 || c2[1].raw != 77) {
    fprintf(stderr, "a communicator was written on failure\n");
    exit(1);
  }
  OK(ordo_comm_create_all(&d, 1, &c));
  EXPECT(ordo_comm_info(c, NULL, &size, &cd), N);
  EXPECT(ordo_comm_info(c, &rank, &size, NULL), N);
  OK(ordo_comm_info(c, &rank, &size, &cd));
  if (rank != 0 || size != 1 || cd.raw != d.raw) {
    fprintf(stderr, "ordo_comm_info: rank %u of %u\n", rank, size);
    exit(1);
  }
  EXPECT(ordo_comm_native(c, NULL), N);
  EXPECT(ordo_comm_native(c, &native), ORDO_ERROR_UNSUPPORTED);

  float *buf;
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, 64, (void **)&buf));
  float h[16];
  for (int i = 0; i < 16; i++) h[i] = (float)i;
  OK(ordo_memcpy(buf, h, sizeof h, ORDO_COPY_HOST_TO_DEVICE));
  ordo_collective_t part = {c, q, ORDO_COLLECTIVE_ALL_REDUCE, ORDO_DATA_FLOAT32, ORDO_REDUCE_SUM, 0, 16, buf, buf};
  ordo_collective_t bad;
  EXPECT(ordo_collective(NULL, 1), N);
  EXPECT(ordo_collective(&part, 0), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_collective(&part, 65), ORDO_ERROR_INVALID_ARGUMENT);
  bad = part, bad.kind = 7;
  EXPECT(ordo_collective(&bad, 1), ORDO_ERROR_INVALID_ENUMERATION);
  bad = part, bad.data_type = 10;
  EXPECT(ordo_collective(&bad, 1), ORDO_ERROR_INVALID_ENUMERATION);
  bad = part, bad.op = 5;
  EXPECT(ordo_collective(&bad, 1), ORDO_ERROR_INVALID_ENUMERATION);
  bad = part, bad.send = NULL;
  EXPECT(ordo_collective(&bad, 1), N);
  bad = part, bad.count = 17; /* past the allocation */
  EXPECT(ordo_collective(&bad, 1), ORDO_ERROR_INVALID_SIZE);
  bad = part, bad.count = SIZE_MAX / 2; /* the byte count overflows */
  EXPECT(ordo_collective(&bad, 1), ORDO_ERROR_INVALID_SIZE);
  bad = part, bad.kind = ORDO_COLLECTIVE_BROADCAST, bad.peer = 1; /* not a rank */
  EXPECT(ordo_collective(&bad, 1), ORDO_ERROR_INVALID_VALUE);
  bad = part, bad.kind = ORDO_COLLECTIVE_SEND; /* no receive to pair with */
  EXPECT(ordo_collective(&bad, 1), ORDO_ERROR_INVALID_ARGUMENT);
  bad = part, bad.queue = (ordo_queue_t){0};
  EXPECT(ordo_collective(&bad, 1), ORDO_ERROR_NULL_HANDLE);
  bad = part, bad.comm = (ordo_comm_t){FORGED};
  EXPECT(ordo_collective(&bad, 1), ORDO_ERROR_INVALID_HANDLE);
  ordo_collective_t both[2] = {part, part}; /* the one rank named twice */
  EXPECT(ordo_collective(both, 2), ORDO_ERROR_INVALID_ARGUMENT);
  float back[16];
  OK(ordo_memcpy(back, buf, sizeof back, ORDO_COPY_DEVICE_TO_HOST));
  if (memcmp(back, h, sizeof h) != 0) {
    fprintf(stderr, "a refused collective wrote memory\n");
    exit(1);
  }
  /* A valid one (one rank: the sum of one) and a send with its receive. */
  OK(ordo_collective(&part, 1));
  ordo_collective_t pair[2] = {part, part};
  pair[0].kind = ORDO_COLLECTIVE_SEND, pair[1].kind = ORDO_COLLECTIVE_RECV;
  OK(ordo_collective(pair, 2));
  OK(ordo_queue_synchronize(q));
  OK(ordo_memcpy(back, buf, sizeof back, ORDO_COPY_DEVICE_TO_HOST));
  if (memcmp(back, h, sizeof h) != 0) {
    fprintf(stderr, "a one-rank all-reduce changed its buffer\n");
    exit(1);
  }
  OK(ordo_comm_destroy(c));
  EXPECT(ordo_comm_destroy(c), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_comm_abort(c), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_comm_info(c, &rank, &size, &cd), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_collective(&part, 1), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_comm_destroy((ordo_comm_t){0}), ORDO_ERROR_NULL_HANDLE);
  EXPECT(ordo_comm_destroy((ordo_comm_t){q.raw}), ORDO_ERROR_INVALID_HANDLE); /* another kind */
  OK(ordo_comm_create_all(&d, 1, &c));
  OK(ordo_comm_abort(c));
  EXPECT(ordo_comm_abort(c), ORDO_ERROR_INVALID_HANDLE);
  OK(ordo_mem_free(buf));
}

int main(void) {
  ordo_device_t d0 = {0};
  ordo_queue_t q0 = {0};
  ordo_event_t e0 = {0};
  ordo_program_t p0 = {0};
  ordo_kernel_t k0 = {0};
  ordo_teardown_report_t report;

  /* Before init. */
  EXPECT(ordo_last_teardown_report(&report), ORDO_ERROR_NOT_FOUND);
  all_uninitialized(d0, q0, e0, p0, k0, (void *)0x1000);
  check_order_outside_init();

  /* Objects of an earlier epoch. */
  OK(ordo_init());
  ordo_device_t old_d = host_device();
  ordo_queue_t old_q;
  ordo_event_t old_e;
  ordo_program_t old_p;
  ordo_kernel_t old_k;
  OK(ordo_queue_create(old_d, &old_q));
  OK(ordo_event_create(old_d, &old_e));
  OK(ordo_program_load(old_d, "ordo.builtin", 12, &old_p));
  OK(ordo_kernel_get(old_p, "vector_add_f32", &old_k));
  OK(ordo_shutdown());
  OK(ordo_init());

  ordo_device_t d = host_device();
  ordo_queue_t q, dead_q;
  ordo_event_t e, e2, dead_e;
  ordo_program_t p, dead_p;
  ordo_kernel_t k, dead_k;
  void *m, *dead_m;
  OK(ordo_queue_create(d, &q));
  OK(ordo_queue_create(d, &dead_q));
  OK(ordo_event_create(d, &e));
  OK(ordo_event_create(d, &e2));
  OK(ordo_event_create(d, &dead_e));
  OK(ordo_program_load(d, "ordo.builtin", 12, &p));
  OK(ordo_program_load(d, "ordo.builtin\0", 13, &dead_p));
  OK(ordo_kernel_get(p, "vector_add_f32", &k));
  OK(ordo_kernel_get(dead_p, "vector_add_f32", &dead_k));
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, 1024, &m));
  OK(ordo_mem_alloc(d, ORDO_MEM_HOST, 64, &dead_m));
  OK(ordo_queue_destroy(dead_q));
  OK(ordo_event_destroy(dead_e));
  OK(ordo_program_unload(dead_p));
  OK(ordo_mem_free(dead_m));

  /* Double release. */
  EXPECT(ordo_queue_destroy(dead_q), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_event_destroy(dead_e), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_program_unload(dead_p), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_mem_free(dead_m), ORDO_ERROR_NOT_FOUND);
  EXPECT(ordo_mem_free(NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_mem_free((char *)m + 8), ORDO_ERROR_INVALID_ARGUMENT);

  /* NULL out-parameters and pointer arguments. */
  EXPECT(ordo_platform_count(NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_platform_get(0, NULL), ORDO_ERROR_NULL_POINTER);
  ordo_platform_t pl;
  OK(ordo_platform_get(0, &pl));
  EXPECT(ordo_platform_get_info(pl, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_device_get(pl, 0, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_device_get_info(d, ORDO_DEVICE_INFO_NAME, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_mem_alloc(d, ORDO_MEM_DEVICE, 16, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_memcpy(NULL, "x", 1, ORDO_COPY_HOST_TO_DEVICE), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_memcpy(m, NULL, 1, ORDO_COPY_HOST_TO_DEVICE), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_queue_create(d, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_queue_query(q, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_event_create(d, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_event_query(e, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_event_elapsed_ms(e, e2, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_program_load(d, NULL, 12, &p0), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_program_load(d, "ordo.builtin", 12, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_kernel_get(p, NULL, &k0), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_kernel_get(p, "vector_add_f32", NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_launch(q, k, NULL, NULL, NULL, 0), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_launch(q, k, &one, NULL, NULL, 4), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_get_state(NULL, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_last_teardown_report(NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_mem_alloc_async(q, 16, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_queue_end_capture(q, NULL), ORDO_ERROR_NULL_POINTER);
  if (p0.raw != 0 || k0.raw != 0) return 1;

  /* Null, stale, wrong-kind, forged and earlier-epoch handles. */
  int32_t done = 5;
  uint32_t kernels = 5;
  float ms = 5;
  ordo_queue_t bad_q[] = {{0}, dead_q, old_q, {e.raw}, {FORGED}};
  ordo_status_t bad_q_status[] = {ORDO_ERROR_NULL_HANDLE, ORDO_ERROR_INVALID_HANDLE, ORDO_ERROR_INVALID_HANDLE,
                                  ORDO_ERROR_INVALID_HANDLE, ORDO_ERROR_INVALID_HANDLE};
  for (int i = 0; i < 5; i++) {
    EXPECT(ordo_queue_synchronize(bad_q[i]), bad_q_status[i]);
    EXPECT(ordo_queue_query(bad_q[i], &done), bad_q_status[i]);
    EXPECT(ordo_queue_wait_event(bad_q[i], e), bad_q_status[i]);
    EXPECT(ordo_queue_destroy(bad_q[i]), bad_q_status[i]);
    EXPECT(ordo_event_record(e, bad_q[i]), bad_q_status[i]);
    EXPECT(ordo_launch(bad_q[i], k, &one, NULL, NULL, 0), bad_q_status[i]);
    if (i > 0) EXPECT(ordo_memcpy_async(bad_q[i], m, "abcd", 4, ORDO_COPY_HOST_TO_DEVICE), bad_q_status[i]);
    if (i > 0) EXPECT(ordo_fill(m, 1, 1, 4, bad_q[i]), bad_q_status[i]);
    void *out = (void *)0x77;
    ordo_graph_t g0 = {0};
    EXPECT(ordo_mem_alloc_async(bad_q[i], 16, &out), bad_q_status[i]);
    EXPECT(ordo_queue_begin_capture(bad_q[i]), bad_q_status[i]);
    EXPECT(ordo_queue_end_capture(bad_q[i], &g0), bad_q_status[i]);
    uint32_t capturing = 7;
    EXPECT(ordo_queue_is_capturing(bad_q[i], &capturing), bad_q_status[i]);
    size_t released = 77;
    EXPECT(ordo_queue_trim(bad_q[i], &released), bad_q_status[i]);
    if (released != 77) return 1;
    if (out != (void *)0x77 || g0.raw != 0 || capturing != 7) return 1;
  }
  ordo_graph_t bad_g[] = {{0}, {q.raw}, {FORGED}};
  for (int i = 0; i < 3; i++) {
    ordo_status_t want = i == 0 ? ORDO_ERROR_NULL_HANDLE : ORDO_ERROR_INVALID_HANDLE;
    EXPECT(ordo_graph_launch(bad_g[i], q), want);
    EXPECT(ordo_graph_kernel_count(bad_g[i], &kernels), want);
    EXPECT(ordo_graph_set_args(bad_g[i], 0, k, NULL, NULL, 0), want);
    EXPECT(ordo_graph_destroy(bad_g[i]), want);
  }
  if (kernels != 5) return 1;
  EXPECT(ordo_memcpy_async((ordo_queue_t){0}, m, "abcd", 4, ORDO_COPY_HOST_TO_DEVICE), ORDO_ERROR_NULL_HANDLE);
  ordo_event_t bad_e[] = {{0}, dead_e, old_e, {q.raw}, {FORGED}};
  for (int i = 0; i < 5; i++) {
    ordo_status_t want = i == 0 ? ORDO_ERROR_NULL_HANDLE : ORDO_ERROR_INVALID_HANDLE;
    EXPECT(ordo_event_record(bad_e[i], q), want);
    EXPECT(ordo_event_synchronize(bad_e[i]), want);
    EXPECT(ordo_event_query(bad_e[i], &done), want);
    EXPECT(ordo_event_elapsed_ms(bad_e[i], e, &ms), want);
    EXPECT(ordo_event_elapsed_ms(e, bad_e[i], &ms), want);
    EXPECT(ordo_queue_wait_event(q, bad_e[i]), want);
    EXPECT(ordo_event_destroy(bad_e[i]), want);
  }
  ordo_program_t bad_p[] = {{0}, dead_p, old_p, {k.raw}, {FORGED}};
  for (int i = 0; i < 5; i++) {
    ordo_status_t want = i == 0 ? ORDO_ERROR_NULL_HANDLE : ORDO_ERROR_INVALID_HANDLE;
    EXPECT(ordo_kernel_get(bad_p[i], "vector_add_f32", &k0), want);
    EXPECT(ordo_program_unload(bad_p[i]), want);
  }
  ordo_kernel_t bad_k[] = {{0}, dead_k, old_k, {p.raw}, {FORGED}};
  for (int i = 0; i < 5; i++) {
    EXPECT(ordo_launch(q, bad_k[i], &one, NULL, NULL, 0), i == 0 ? ORDO_ERROR_NULL_HANDLE : ORDO_ERROR_INVALID_HANDLE);
  }
  ordo_device_t bad_d[] = {{0}, old_d, {q.raw}, {FORGED}};
  ordo_info_value_t iv;
  void *ptr = (void *)0x77;
  for (int i = 0; i < 4; i++) {
    ordo_status_t want = i == 0 ? ORDO_ERROR_NULL_HANDLE : ORDO_ERROR_INVALID_HANDLE;
    EXPECT(ordo_device_get_info(bad_d[i], ORDO_DEVICE_INFO_NAME, &iv), want);
    EXPECT(ordo_mem_alloc(bad_d[i], ORDO_MEM_DEVICE, 16, &ptr), want);
    EXPECT(ordo_queue_create(bad_d[i], &q0), want);
    EXPECT(ordo_event_create(bad_d[i], &e0), want);
    EXPECT(ordo_program_load(bad_d[i], "ordo.builtin", 12, &p0), want);
    ordo_cache_stats_t cs = {77, 77, 77, 77};
    EXPECT(ordo_device_cache_stats(bad_d[i], &cs), want);
    if (cs.bytes != 77 || cs.blocks != 77) return 1;
  }
  EXPECT(ordo_platform_get_info((ordo_platform_t){0}, NULL), ORDO_ERROR_NULL_POINTER);
  ordo_platform_info_t pi;
  EXPECT(ordo_platform_get_info((ordo_platform_t){0}, &pi), ORDO_ERROR_NULL_HANDLE);
  EXPECT(ordo_platform_get_info((ordo_platform_t){d.raw}, &pi), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_device_get((ordo_platform_t){FORGED}, 0, &d0), ORDO_ERROR_INVALID_HANDLE);
  if (done != 5 || ms != 5 || ptr != (void *)0x77 || q0.raw || e0.raw || p0.raw || k0.raw || d0.raw) return 1;

  /* Indices, sizes and enumeration values. */
  uint32_t count = 0;
  OK(ordo_platform_count(&count));
  EXPECT(ordo_platform_get(count, &pl), ORDO_ERROR_INVALID_VALUE);
  EXPECT(ordo_device_get(pl, 1, &d0), ORDO_ERROR_INVALID_VALUE);
  EXPECT(ordo_device_get_info(d, 99, &iv), ORDO_ERROR_INVALID_ENUMERATION);
  EXPECT(ordo_mem_alloc(d, 3, 16, &ptr), ORDO_ERROR_INVALID_ENUMERATION);
  EXPECT(ordo_mem_alloc(d, ORDO_MEM_DEVICE, 0, &ptr), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_mem_alloc(d, ORDO_MEM_DEVICE, SIZE_MAX, &ptr), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_mem_alloc(d, ORDO_MEM_DEVICE, (size_t)1 << 40, &ptr), ORDO_ERROR_OUT_OF_RESOURCES);
  /* Queue-ordered memory and graphs on the host platform: sizes, memory that is not
   * queue-ordered, a double free; a capture's misuse (nested, synchronised, an event record on
   * the host device), an empty graph launched, destroyed once. */
  EXPECT(ordo_mem_alloc_async(q, 0, &ptr), ORDO_ERROR_INVALID_SIZE);
  void *ordered = NULL;
  OK(ordo_mem_alloc_async(q, 64, &ordered));
  EXPECT(ordo_mem_free_async(q, m), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_mem_free_async(q, NULL), ORDO_ERROR_NULL_POINTER);
  /* Inside a live allocation: not its start (the header's word), and it stays live. */
  EXPECT(ordo_mem_free_async(q, (char *)ordered + 8), ORDO_ERROR_INVALID_ARGUMENT);
  {
    void *base = (void *)0x77;
    size_t size = 77;
    ordo_mem_kind_t kind = 77;
    ordo_device_t dev = {77};
    OK(ordo_mem_info((char *)ordered + 8, &base, &size, &kind, &dev));
    if (base != ordered || size != 64 || kind != ORDO_MEM_ORDERED || dev.raw != d.raw) {
      fprintf(stderr, "ordo_mem_info: %p %zu %u\n", base, size, (unsigned)kind);
      return 1;
    }
    OK(ordo_mem_info(ordered, NULL, NULL, NULL, NULL));
    EXPECT(ordo_mem_info(NULL, &base, &size, &kind, &dev), ORDO_ERROR_NULL_POINTER);
    OK(ordo_mem_free_async(q, ordered));
    base = (void *)0x77;
    EXPECT(ordo_mem_info(ordered, &base, &size, &kind, &dev), ORDO_ERROR_NOT_FOUND);
    if (base != (void *)0x77) return 1;
  }
  EXPECT(ordo_mem_free_async(q, ordered), ORDO_ERROR_NOT_FOUND);
  /* The cache: the freed block serves the queue's next allocation of its size; trim gives it
   * back, once. */
  {
    void *again = NULL;
    size_t released = 77;
    ordo_cache_stats_t cs;
    OK(ordo_mem_alloc_async(q, 64, &again));
    if (again != ordered) return 1;
    OK(ordo_device_cache_stats(d, &cs));
    if (cs.hits != 1 || cs.blocks != 0) return 1;
    OK(ordo_mem_free_async(q, again));
    OK(ordo_device_cache_stats(d, &cs));
    if (cs.bytes != 64 || cs.blocks != 1) return 1;
    OK(ordo_queue_trim(q, &released));
    if (released != 64) return 1;
    OK(ordo_queue_trim(q, NULL));
    OK(ordo_device_cache_stats(d, &cs));
    if (cs.bytes != 0 || cs.blocks != 0) return 1;
  }
  uint32_t capturing = 7;
  OK(ordo_queue_is_capturing(q, &capturing));
  if (capturing != 0) return 1;
  OK(ordo_queue_begin_capture(q));
  OK(ordo_queue_is_capturing(q, &capturing));
  if (capturing != 1) return 1;
  EXPECT(ordo_queue_trim(q, NULL), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_queue_is_capturing(q, NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_queue_begin_capture(q), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_queue_synchronize(q), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_event_record(e, q), ORDO_ERROR_UNSUPPORTED);
  ordo_graph_t g = {0};
  OK(ordo_queue_end_capture(q, &g));
  OK(ordo_queue_is_capturing(q, &capturing));
  if (capturing != 0) return 1;
  EXPECT(ordo_queue_end_capture(q, &g), ORDO_ERROR_INVALID_ARGUMENT);
  uint32_t launches = 7;
  OK(ordo_graph_kernel_count(g, &launches));
  if (launches != 0) return 1;
  OK(ordo_graph_launch(g, q));
  OK(ordo_queue_synchronize(q));
  /* A graph launched into a capture: refused before the backend, the capture goes on. */
  {
    ordo_graph_t inner = {0};
    OK(ordo_queue_begin_capture(q));
    EXPECT(ordo_graph_launch(g, q), ORDO_ERROR_INVALID_ARGUMENT);
    EXPECT(ordo_queue_synchronize(q), ORDO_ERROR_INVALID_ARGUMENT); /* still capturing */
    OK(ordo_queue_end_capture(q, &inner));
    OK(ordo_graph_destroy(inner));
  }
  OK(ordo_graph_destroy(g));
  EXPECT(ordo_graph_destroy(g), ORDO_ERROR_INVALID_HANDLE);
  char buf[2048];
  /* Host registration: arguments first; the host platform registers (the range is its memory as
   * it is), an overlapping range is refused, ordo_mem_free refuses the registration (nothing
   * changed), and ordo_host_unregister ends it, once. */
  EXPECT(ordo_host_register(d, NULL, 16), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_host_register(d, buf, 0), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_host_register(d, buf, sizeof buf), ORDO_SUCCESS);
  EXPECT(ordo_host_register(d, buf + 16, 16), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_mem_free(buf), ORDO_ERROR_NOT_FOUND);
  EXPECT(ordo_host_unregister(NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_host_unregister(buf + 16), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_host_unregister(buf), ORDO_SUCCESS);
  EXPECT(ordo_host_unregister(buf), ORDO_ERROR_NOT_FOUND);
  EXPECT(ordo_mem_free(buf), ORDO_ERROR_NOT_FOUND);
  /* Zero bytes: success and nothing done, whatever the pointers (as CUDA and MLIR code expect);
   * the direction and a given queue are still checked. */
  EXPECT(ordo_memcpy(m, buf, 0, ORDO_COPY_HOST_TO_DEVICE), ORDO_SUCCESS);
  EXPECT(ordo_memcpy(NULL, NULL, 0, ORDO_COPY_DEVICE_TO_DEVICE), ORDO_SUCCESS);
  EXPECT(ordo_memcpy(NULL, NULL, 0, 77), ORDO_ERROR_INVALID_ENUMERATION);
  EXPECT(ordo_memcpy_async((ordo_queue_t){FORGED}, NULL, NULL, 0, ORDO_COPY_HOST_TO_DEVICE), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_memcpy(m, buf, 1025, ORDO_COPY_HOST_TO_DEVICE), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_memcpy(m, buf, SIZE_MAX, ORDO_COPY_HOST_TO_DEVICE), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_memcpy((char *)m + 1000, buf, 25, ORDO_COPY_HOST_TO_DEVICE), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_memcpy(buf, dead_m, 4, ORDO_COPY_DEVICE_TO_HOST), ORDO_ERROR_NOT_FOUND);
  EXPECT(ordo_memcpy(buf, (void *)0x1000, 4, ORDO_COPY_DEVICE_TO_HOST), ORDO_ERROR_NOT_FOUND);
  EXPECT(ordo_memcpy(m, buf, 4, 3), ORDO_ERROR_INVALID_ENUMERATION);
  EXPECT(ordo_memcpy(m, dead_m, 4, ORDO_COPY_DEVICE_TO_DEVICE), ORDO_ERROR_NOT_FOUND);
  EXPECT(ordo_fill(m, 0, 1, 0, (ordo_queue_t){0}), ORDO_SUCCESS);
  EXPECT(ordo_fill(NULL, 0, 4, 0, (ordo_queue_t){0}), ORDO_SUCCESS);
  EXPECT(ordo_fill(m, 0, 4, 0, (ordo_queue_t){FORGED}), ORDO_ERROR_INVALID_HANDLE);
  EXPECT(ordo_fill(m, 0, 4, 257, (ordo_queue_t){0}), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_fill(m, 0, 3, 1, (ordo_queue_t){0}), ORDO_ERROR_INVALID_VALUE);
  EXPECT(ordo_fill(m, 300, 1, 1, (ordo_queue_t){0}), ORDO_ERROR_INVALID_VALUE);
  EXPECT(ordo_fill((char *)m + 2, 1, 4, 1, (ordo_queue_t){0}), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_fill(NULL, 1, 4, 1, (ordo_queue_t){0}), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_program_load(d, "ordo.builtin", 0, &p0), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_program_load(d, "ordo.builtin", SIZE_MAX, &p0), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_program_load(d, "no.such.program", 15, &p0), ORDO_ERROR_INVALID_BINARY);
  /* CUDA C++ compiles for CUDA devices only; bad pointers first. */
  const char *opts[] = {"-std=c++17", NULL};
  EXPECT(ordo_program_compile(d, "__global__ void k() {}", NULL, 0, &p0), ORDO_ERROR_UNSUPPORTED);
  EXPECT(ordo_program_compile(d, NULL, NULL, 0, &p0), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_program_compile(d, "__global__ void k() {}", NULL, 1, &p0), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_program_compile(d, "__global__ void k() {}", opts, 2, &p0), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_program_compile(d, "\xff", opts, 1, &p0), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_program_compile((ordo_device_t){0}, "x", opts, 1, &p0), ORDO_ERROR_NULL_HANDLE);
  /* The timeline: bad paths, and no trace to stop. */
  EXPECT(ordo_trace_start(NULL), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_trace_start("\xff"), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_trace_start("/nonexistent-ordo-dir/trace.json"), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_trace_start("/"), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_trace_stop(), ORDO_ERROR_NOT_FOUND);
  EXPECT(ordo_kernel_get(p, "no_such_kernel", &k0), ORDO_ERROR_NOT_FOUND);
  EXPECT(ordo_kernel_get(p, "", &k0), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_kernel_get(p, "\xff\xfe", &k0), ORDO_ERROR_INVALID_ARGUMENT);
  EXPECT(ordo_event_elapsed_ms(e, e2, &ms), ORDO_ERROR_INVALID_ARGUMENT); /* never recorded */

  /* Launch dimensions and arguments. */
  ordo_launch_dims_t zero_grid = {{0, 1, 1}, {1, 1, 1}, 0};
  ordo_launch_dims_t zero_block = {{1, 1, 1}, {1, 1, 0}, 0};
  ordo_launch_dims_t too_big = {{1, 1, 1}, {2048, 1, 1}, 0};
  EXPECT(ordo_launch(q, k, &zero_grid, NULL, NULL, 0), ORDO_ERROR_INVALID_VALUE);
  EXPECT(ordo_launch(q, k, &zero_block, NULL, NULL, 0), ORDO_ERROR_INVALID_VALUE);
  EXPECT(ordo_launch(q, k, &too_big, NULL, NULL, 0), ORDO_ERROR_INVALID_VALUE);
  uint32_t n = 1;
  void *args[] = {&m, &m, &m, &n};
  size_t sizes[] = {sizeof m, sizeof m, sizeof m, sizeof n};
  size_t wrong_sizes[] = {sizeof m, sizeof m, sizeof m, 8};
  void *null_arg[] = {&m, NULL, &m, &n};
  EXPECT(ordo_launch(q, k, &one, null_arg, sizes, 4), ORDO_ERROR_NULL_POINTER);
  EXPECT(ordo_launch(q, k, &one, args, wrong_sizes, 4), ORDO_ERROR_INVALID_SIZE);
  EXPECT(ordo_launch(q, k, &one, args, sizes, 3), ORDO_ERROR_INVALID_ARGUMENT); /* too few for the kernel */
  OK(ordo_launch(q, k, &one, args, sizes, 4));

  communicators(d, q);

  /* Status strings and details. */
  if (strcmp(ordo_status_string(ORDO_SUCCESS), "success") != 0) return 1;
  if (strcmp(ordo_status_string(-3), "unknown status") != 0) return 1;
  if (strcmp(ordo_status_string(ORDO_ERROR_INTERNAL), "internal error") != 0) return 1;
  EXPECT(ordo_mem_free(dead_m), ORDO_ERROR_NOT_FOUND);
  if (strstr(ordo_last_error_detail(), "not a live allocation") == NULL) {
    fprintf(stderr, "detail: %s\n", ordo_last_error_detail());
    return 1;
  }

  /* After the final shutdown, everything is turned away. */
  OK(ordo_shutdown());
  expect_clean_report(1);
  all_uninitialized(d, q, e, p, k, m);
  check_order_outside_init();
  return 0;
}

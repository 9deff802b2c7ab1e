/* A conformance suite for LLVM 22.1.8 liboffload's ol* API (Debian's offload/OffloadAPI.h),
 * written against the header's documentation, plus ordo's own guarantees. It links against any
 * implementation: ordo's libordo.so (feature `offload`) or Debian's libLLVMOffload.so.22.1.
 *
 * Each case runs in a child process of its own (a crash is a result, CRASH, not the end of the
 * run), initialises the library itself, and prints one line: "name<TAB>RESULT<TAB>detail" with
 * RESULT one of PASS, FAIL, SKIP, CRASH. Where the header is silent, a case expects what ordo
 * documents (docs/liboffload.md), and says so in its comment.
 *
 * The device under test is the first GPU, else the first device that is not liboffload's host device. Its program
 * image comes from the file named by OL_TEST_IMAGE (CUDA: PTX built by clang-22 from
 * kernels.cpp; ordo's host platform: a file holding "ordo.builtin"); the image has the kernel
 * vector_add_f32(const float *, const float *, float *, uint32_t) and, when OL_TEST_GLOBAL names
 * it, a global variable uint32_t[4] = {1, 2, 3, 4} read by kernel add_global(uint32_t *out).
 * OL_TEST_ONLY=name runs one case. Exit status: 0 when no case FAILed or CRASHed.
 */
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <offload/OffloadAPI.h>

/* ---- helpers ---------------------------------------------------------------------------- */

static char msg[1024];
static const char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(msg, sizeof msg, f, ap);
  va_end(ap);
  return msg;
}

static int code(ol_result_t r) { return r ? (int)r->Code : OL_ERRC_SUCCESS; }

#define SKIP(why) return "SKIP: " why
#define EXPECT(call, want)                                                                      \
  do {                                                                                          \
    ol_result_t r_ = (call);                                                                    \
    if (code(r_) != (want))                                                                     \
      return fmt("%s: got %d (%s), want %d", #call, code(r_), r_ && r_->Details ? r_->Details : "", \
                 (int)(want));                                                                  \
  } while (0)
#define OK(call) EXPECT(call, OL_ERRC_SUCCESS)
#define CHECK(cond)                                                                             \
  do {                                                                                          \
    if (!(cond)) return fmt("line %d: %s is false", __LINE__, #cond);                          \
  } while (0)

static ol_device_handle_t host_dev, accel;
static ol_platform_backend_t accel_backend;
static char *image;
static size_t image_size;
static const char *global_name;
static int devices_seen;
static bool accel_is_gpu;

static bool find(ol_device_handle_t d, void *u) {
  (void)u;
  devices_seen++;
  ol_device_type_t t;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof t, &t)) return true;
  if (t == OL_DEVICE_TYPE_HOST) {
    if (!host_dev) host_dev = d;
  } else if (!accel || (t == OL_DEVICE_TYPE_GPU && !accel_is_gpu)) {
    accel = d; /* a GPU is preferred to any other device */
    accel_is_gpu = t == OL_DEVICE_TYPE_GPU;
  }
  return true;
}

/* Finds the devices (after olInit). */
static void discover(void) {
  host_dev = accel = NULL;
  devices_seen = 0;
  accel_is_gpu = false;
  olIterateDevices(find, NULL);
  if (accel) {
    ol_platform_handle_t p;
    if (!olGetDeviceInfo(accel, OL_DEVICE_INFO_PLATFORM, sizeof p, &p))
      olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof accel_backend, &accel_backend);
  }
}

static void load_image(void) {
  const char *path = getenv("OL_TEST_IMAGE");
  global_name = getenv("OL_TEST_GLOBAL");
  if (!path) return;
  FILE *f = fopen(path, "rb");
  if (!f) return;
  fseek(f, 0, SEEK_END);
  image_size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  image = malloc(image_size + 1);
  image_size = fread(image, 1, image_size, f);
  image[image_size] = 0;
  fclose(f);
}

#define NEED_ACCEL() \
  if (!accel) SKIP("no device besides the host device")
#define NEED_PROGRAM()            \
  NEED_ACCEL();                   \
  if (!image) SKIP("no program image (OL_TEST_IMAGE)")

static const char *load(ol_program_handle_t *p) {
  OK(olCreateProgram(accel, image, image_size, p));
  return NULL;
}

static const char *kernel(ol_program_handle_t *p, ol_symbol_handle_t *k, const char *name) {
  const char *e = load(p);
  if (e) return e;
  OK(olGetSymbol(*p, name, OL_SYMBOL_KIND_KERNEL, k));
  return NULL;
}

#define TRY(expr)                 \
  do {                            \
    const char *e_ = (expr);      \
    if (e_) return e_;            \
  } while (0)

/* ---- lifecycle ---------------------------------------------------------------------------- */
/* Cases named noinit_* run before any olInit. */

static const char *noinit_platform_info_uninitialized(void) {
  char b[8];
  EXPECT(olGetPlatformInfo(NULL, OL_PLATFORM_INFO_NAME, sizeof b, b), OL_ERRC_UNINITIALIZED);
  return NULL;
}
static const char *noinit_iterate_uninitialized(void) {
  EXPECT(olIterateDevices(find, NULL), OL_ERRC_UNINITIALIZED);
  return NULL;
}
static const char *noinit_mem_alloc_uninitialized(void) {
  void *m;
  EXPECT(olMemAlloc(NULL, OL_ALLOC_TYPE_DEVICE, 0, &m), OL_ERRC_UNINITIALIZED);
  return NULL;
}
static const char *noinit_launch_uninitialized(void) {
  EXPECT(olLaunchKernel(NULL, NULL, NULL, NULL, 0, NULL), OL_ERRC_UNINITIALIZED);
  return NULL;
}
static const char *noinit_shutdown_uninitialized(void) {
  EXPECT(olShutDown(), OL_ERRC_UNINITIALIZED);
  return NULL;
}
static const char *noinit_error_has_details(void) {
  ol_result_t r = olShutDown();
  CHECK(r && r->Details && strlen(r->Details) > 0);
  return NULL;
}
static const char *noinit_init_shutdown(void) {
  OK(olInit());
  OK(olShutDown());
  return NULL;
}
static const char *noinit_init_is_counted(void) {
  OK(olInit());
  OK(olInit());
  OK(olShutDown());
  discover();
  CHECK(host_dev != NULL); /* still initialised after one of two shutdowns */
  OK(olShutDown());
  EXPECT(olShutDown(), OL_ERRC_UNINITIALIZED);
  return NULL;
}
static const char *noinit_calls_after_final_shutdown(void) {
  OK(olInit());
  discover();
  OK(olShutDown());
  char b[64];
  EXPECT(olGetDeviceInfo(host_dev, OL_DEVICE_INFO_NAME, sizeof b, b), OL_ERRC_UNINITIALIZED);
  EXPECT(olIterateDevices(find, NULL), OL_ERRC_UNINITIALIZED);
  return NULL;
}
static const char *noinit_ten_cycles(void) {
  int first = -1;
  for (int i = 0; i < 10; i++) {
    OK(olInit());
    discover();
    if (first < 0) first = devices_seen;
    CHECK(devices_seen == first && host_dev);
    OK(olShutDown());
  }
  return NULL;
}
/* ordo: a handle from before the final shutdown is stale after the next olInit. */
static const char *noinit_device_handle_from_earlier_init(void) {
  OK(olInit());
  discover();
  ol_device_handle_t old = accel;
  OK(olShutDown());
  OK(olInit());
  discover();
  if (!old) SKIP("no device besides the host device");
  char b[64];
  EXPECT(olGetDeviceInfo(old, OL_DEVICE_INFO_NAME, sizeof b, b), OL_ERRC_INVALID_DEVICE);
  OK(olGetDeviceInfo(accel, OL_DEVICE_INFO_NAME, sizeof b, b));
  return NULL;
}
/* ordo: teardown with live objects releases them; their handles are stale afterwards. */
static const char *noinit_teardown_with_live_objects(void) {
  OK(olInit());
  discover();
  if (!accel) SKIP("no device besides the host device");
  ol_queue_handle_t q;
  ol_event_handle_t e;
  void *m;
  OK(olCreateQueue(accel, &q));
  OK(olCreateEvent(q, &e));
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 256, &m));
  ol_program_handle_t p = NULL;
  if (image) OK(olCreateProgram(accel, image, image_size, &p));
  OK(olShutDown());
  OK(olInit());
  EXPECT(olSyncQueue(q), OL_ERRC_INVALID_QUEUE);
  EXPECT(olSyncEvent(e), OL_ERRC_INVALID_EVENT);
  EXPECT(olMemFree(m), OL_ERRC_NOT_FOUND);
  if (p) EXPECT(olDestroyProgram(p), OL_ERRC_INVALID_ARGUMENT);
  OK(olShutDown());
  return NULL;
}
/* Exit with objects alive and no olShutDown: the process exits 0, silently (checked by the runner
 * and the harness: exit status 0 and nothing on stderr). */
static const char *exit_without_shutdown(void) {
  discover();
  if (accel) {
    ol_queue_handle_t q;
    void *m;
    OK(olCreateQueue(accel, &q));
    OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 256, &m));
    ol_program_handle_t p;
    if (image) OK(olCreateProgram(accel, image, image_size, &p));
  }
  return "EXIT";
}

/* ---- devices and platforms ------------------------------------------------------------- */

static int calls;
static bool stop_at_first(ol_device_handle_t d, void *u) {
  (void)d;
  (void)u;
  calls++;
  return false;
}
static const char *iterate_null_callback(void) {
  EXPECT(olIterateDevices(NULL, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *iterate_stops_when_callback_returns_false(void) {
  OK(olIterateDevices(stop_at_first, NULL));
  CHECK(calls == 1);
  return NULL;
}
static const char *iterate_has_one_host_device(void) {
  discover();
  CHECK(host_dev != NULL);
  ol_platform_handle_t p;
  OK(olGetDeviceInfo(host_dev, OL_DEVICE_INFO_PLATFORM, sizeof p, &p));
  ol_platform_backend_t b;
  OK(olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b));
  CHECK(b == OL_PLATFORM_BACKEND_HOST);
  return NULL;
}

static ol_platform_handle_t host_platform(void) {
  ol_platform_handle_t p = NULL;
  discover();
  olGetDeviceInfo(host_dev, OL_DEVICE_INFO_PLATFORM, sizeof p, &p);
  return p;
}

static const char *platform_info_strings(void) {
  ol_platform_handle_t p = host_platform();
  for (int prop = OL_PLATFORM_INFO_NAME; prop <= OL_PLATFORM_INFO_VERSION; prop++) {
    size_t size = 0;
    OK(olGetPlatformInfoSize(p, prop, &size));
    char *b = calloc(1, size);
    OK(olGetPlatformInfo(p, prop, size, b));
    CHECK(strlen(b) + 1 == size);
    free(b);
  }
  return NULL;
}
static const char *platform_info_backend_size(void) {
  size_t size = 0;
  OK(olGetPlatformInfoSize(host_platform(), OL_PLATFORM_INFO_BACKEND, &size));
  CHECK(size == sizeof(ol_platform_backend_t));
  return NULL;
}
static const char *platform_info_unknown_enum(void) {
  char b[64];
  EXPECT(olGetPlatformInfo(host_platform(), OL_PLATFORM_INFO_LAST, sizeof b, b), OL_ERRC_INVALID_ENUMERATION);
  return NULL;
}
static const char *platform_info_size_unknown_enum(void) {
  size_t s;
  EXPECT(olGetPlatformInfoSize(host_platform(), 1000, &s), OL_ERRC_INVALID_ENUMERATION);
  return NULL;
}
static const char *platform_info_zero_size(void) {
  char b[64];
  EXPECT(olGetPlatformInfo(host_platform(), OL_PLATFORM_INFO_NAME, 0, b), OL_ERRC_INVALID_SIZE);
  return NULL;
}
static const char *platform_info_too_small(void) {
  char b[64];
  EXPECT(olGetPlatformInfo(host_platform(), OL_PLATFORM_INFO_NAME, 1, b), OL_ERRC_INVALID_SIZE);
  return NULL;
}
static const char *platform_info_null_value(void) {
  EXPECT(olGetPlatformInfo(host_platform(), OL_PLATFORM_INFO_NAME, 8, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *platform_info_null_handle(void) {
  char b[8];
  EXPECT(olGetPlatformInfo(NULL, OL_PLATFORM_INFO_NAME, sizeof b, b), OL_ERRC_INVALID_NULL_HANDLE);
  return NULL;
}
static const char *platform_info_size_null_out(void) {
  EXPECT(olGetPlatformInfoSize(host_platform(), OL_PLATFORM_INFO_NAME, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *platform_info_forged_handle(void) {
  char b[64];
  EXPECT(olGetPlatformInfo((ol_platform_handle_t)0x10, OL_PLATFORM_INFO_NAME, sizeof b, b), OL_ERRC_INVALID_PLATFORM);
  return NULL;
}

static const char *device_info_host_type(void) {
  discover();
  ol_device_type_t t;
  OK(olGetDeviceInfo(host_dev, OL_DEVICE_INFO_TYPE, sizeof t, &t));
  CHECK(t == OL_DEVICE_TYPE_HOST);
  return NULL;
}
static const char *all_props(ol_device_handle_t d) {
  for (int prop = 0; prop < OL_DEVICE_INFO_LAST; prop++) {
    size_t size = 0;
    ol_result_t r = olGetDeviceInfoSize(d, prop, &size);
    if (r) return fmt("olGetDeviceInfoSize(%d): %d %s", prop, r->Code, r->Details);
    void *b = calloc(1, size + 1);
    r = olGetDeviceInfo(d, prop, size, b);
    free(b);
    if (r) return fmt("olGetDeviceInfo(%d): %d %s", prop, r->Code, r->Details);
  }
  return NULL;
}
static const char *device_info_every_property_host(void) {
  discover();
  return all_props(host_dev);
}
static const char *device_info_every_property_device(void) {
  discover();
  NEED_ACCEL();
  return all_props(accel);
}
static const char *device_info_device_type(void) {
  discover();
  NEED_ACCEL();
  ol_device_type_t t;
  OK(olGetDeviceInfo(accel, OL_DEVICE_INFO_TYPE, sizeof t, &t));
  CHECK(t == OL_DEVICE_TYPE_GPU || t == OL_DEVICE_TYPE_CPU);
  uint32_t n;
  OK(olGetDeviceInfo(accel, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, sizeof n, &n));
  CHECK(n > 0);
  ol_dimensions_t dims;
  OK(olGetDeviceInfo(accel, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION, sizeof dims, &dims));
  CHECK(dims.x > 0 && dims.x <= n);
  return NULL;
}
static const char *device_info_platform_is_consistent(void) {
  discover();
  NEED_ACCEL();
  ol_platform_handle_t p1, p2;
  OK(olGetDeviceInfo(accel, OL_DEVICE_INFO_PLATFORM, sizeof p1, &p1));
  OK(olGetDeviceInfo(accel, OL_DEVICE_INFO_PLATFORM, sizeof p2, &p2));
  CHECK(p1 == p2 && p1 != host_platform());
  return NULL;
}
static const char *device_info_name_size(void) {
  discover();
  size_t size;
  OK(olGetDeviceInfoSize(host_dev, OL_DEVICE_INFO_NAME, &size));
  char b[256] = {0};
  OK(olGetDeviceInfo(host_dev, OL_DEVICE_INFO_NAME, sizeof b, b));
  CHECK(strlen(b) + 1 == size);
  return NULL;
}
static const char *device_info_unknown_enum(void) {
  discover();
  char b[64];
  EXPECT(olGetDeviceInfo(host_dev, 99, sizeof b, b), OL_ERRC_INVALID_ENUMERATION);
  return NULL;
}
static const char *device_info_zero_size(void) {
  discover();
  char b[64];
  EXPECT(olGetDeviceInfo(host_dev, OL_DEVICE_INFO_NAME, 0, b), OL_ERRC_INVALID_SIZE);
  return NULL;
}
static const char *device_info_too_small(void) {
  discover();
  char b[64];
  EXPECT(olGetDeviceInfo(host_dev, OL_DEVICE_INFO_NAME, 1, b), OL_ERRC_INVALID_SIZE);
  return NULL;
}
static const char *device_info_null_value(void) {
  discover();
  EXPECT(olGetDeviceInfo(host_dev, OL_DEVICE_INFO_NAME, 8, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *device_info_null_handle(void) {
  char b[8];
  EXPECT(olGetDeviceInfo(NULL, OL_DEVICE_INFO_NAME, sizeof b, b), OL_ERRC_INVALID_NULL_HANDLE);
  return NULL;
}
static const char *device_info_size_null_out(void) {
  discover();
  EXPECT(olGetDeviceInfoSize(host_dev, OL_DEVICE_INFO_NAME, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *device_info_forged_handle(void) {
  char b[64];
  EXPECT(olGetDeviceInfo((ol_device_handle_t)0x10, OL_DEVICE_INFO_NAME, sizeof b, b), OL_ERRC_INVALID_DEVICE);
  return NULL;
}

/* ---- memory ------------------------------------------------------------------------------ */

static const char *mem_alloc_zero_size(void) {
  discover();
  void *m;
  EXPECT(olMemAlloc(host_dev, OL_ALLOC_TYPE_HOST, 0, &m), OL_ERRC_INVALID_SIZE);
  return NULL;
}
static const char *mem_alloc_null_out(void) {
  discover();
  EXPECT(olMemAlloc(host_dev, OL_ALLOC_TYPE_HOST, 64, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *mem_alloc_null_device(void) {
  void *m;
  EXPECT(olMemAlloc(NULL, OL_ALLOC_TYPE_HOST, 64, &m), OL_ERRC_INVALID_NULL_HANDLE);
  return NULL;
}
/* Silent in the header; ordo: the host device allocates nothing (host memory is the program's). */
static const char *mem_alloc_on_host_device(void) {
  discover();
  void *m;
  EXPECT(olMemAlloc(host_dev, OL_ALLOC_TYPE_DEVICE, 64, &m), OL_ERRC_UNSUPPORTED);
  return NULL;
}
static const char *mem_alloc_unknown_type(void) {
  discover();
  NEED_ACCEL();
  void *m;
  EXPECT(olMemAlloc(accel, OL_ALLOC_TYPE_LAST, 64, &m), OL_ERRC_INVALID_ENUMERATION);
  return NULL;
}
static const char *mem_round_trip(ol_alloc_type_t type) {
  discover();
  NEED_ACCEL();
  void *m;
  OK(olMemAlloc(accel, type, 1024, &m));
  CHECK(m != NULL);
  unsigned char in[1024], out[1024];
  for (int i = 0; i < 1024; i++) in[i] = (unsigned char)(i * 7);
  OK(olMemcpy(NULL, m, accel, in, host_dev, sizeof in));
  OK(olMemcpy(NULL, out, host_dev, m, accel, sizeof out));
  CHECK(memcmp(in, out, sizeof in) == 0);
  OK(olMemFree(m));
  return NULL;
}
static const char *mem_device_round_trip(void) { return mem_round_trip(OL_ALLOC_TYPE_DEVICE); }
static const char *mem_host_round_trip(void) { return mem_round_trip(OL_ALLOC_TYPE_HOST); }
static const char *mem_managed_round_trip(void) { return mem_round_trip(OL_ALLOC_TYPE_MANAGED); }
static const char *mem_free_null(void) {
  EXPECT(olMemFree(NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
/* Silent in the header; ordo: an unknown address is NOT_FOUND. */
static const char *mem_free_unknown(void) {
  int x = 0;
  EXPECT(olMemFree(&x), OL_ERRC_NOT_FOUND);
  return NULL;
}
static const char *mem_free_twice(void) {
  discover();
  NEED_ACCEL();
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &m));
  OK(olMemFree(m));
  EXPECT(olMemFree(m), OL_ERRC_NOT_FOUND);
  return NULL;
}
static const char *mem_free_interior(void) {
  discover();
  NEED_ACCEL();
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &m));
  EXPECT(olMemFree((char *)m + 8), OL_ERRC_INVALID_ARGUMENT);
  OK(olMemFree(m));
  return NULL;
}
static const char *mem_info_interior_pointer(void) {
  discover();
  NEED_ACCEL();
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 300, &m));
  void *base = NULL;
  size_t size = 0;
  ol_device_handle_t d = NULL;
  ol_alloc_type_t t = OL_ALLOC_TYPE_LAST;
  const char *inner = (char *)m + 299;
  OK(olGetMemInfo(inner, OL_MEM_INFO_BASE, sizeof base, &base));
  OK(olGetMemInfo(inner, OL_MEM_INFO_SIZE, sizeof size, &size));
  OK(olGetMemInfo(inner, OL_MEM_INFO_DEVICE, sizeof d, &d));
  OK(olGetMemInfo(inner, OL_MEM_INFO_TYPE, sizeof t, &t));
  CHECK(base == m && size == 300 && d == accel && t == OL_ALLOC_TYPE_DEVICE);
  OK(olMemFree(m));
  return NULL;
}
static const char *mem_info_sizes(void) {
  discover();
  NEED_ACCEL();
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_HOST, 64, &m));
  size_t s[4];
  for (int p = 0; p < 4; p++) OK(olGetMemInfoSize(m, p, &s[p]));
  CHECK(s[0] == sizeof(void *) && s[1] == sizeof(void *) && s[2] == sizeof(size_t) && s[3] == sizeof(ol_alloc_type_t));
  ol_alloc_type_t t;
  OK(olGetMemInfo(m, OL_MEM_INFO_TYPE, sizeof t, &t));
  CHECK(t == OL_ALLOC_TYPE_HOST);
  OK(olMemFree(m));
  return NULL;
}
static const char *mem_info_not_found(void) {
  int x = 0;
  size_t s;
  EXPECT(olGetMemInfo(&x, OL_MEM_INFO_SIZE, sizeof s, &s), OL_ERRC_NOT_FOUND);
  return NULL;
}
static const char *mem_info_after_free(void) {
  discover();
  NEED_ACCEL();
  void *m;
  size_t s;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &m));
  OK(olMemFree(m));
  EXPECT(olGetMemInfo(m, OL_MEM_INFO_SIZE, sizeof s, &s), OL_ERRC_NOT_FOUND);
  return NULL;
}
static const char *mem_info_null_pointer(void) {
  size_t s;
  EXPECT(olGetMemInfo(NULL, OL_MEM_INFO_SIZE, sizeof s, &s), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *mem_info_zero_size(void) {
  int x = 0;
  size_t s;
  EXPECT(olGetMemInfo(&x, OL_MEM_INFO_SIZE, 0, &s), OL_ERRC_INVALID_SIZE);
  return NULL;
}
static const char *mem_info_too_small(void) {
  discover();
  NEED_ACCEL();
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &m));
  size_t s;
  EXPECT(olGetMemInfo(m, OL_MEM_INFO_SIZE, 1, &s), OL_ERRC_INVALID_SIZE);
  OK(olMemFree(m));
  return NULL;
}
static const char *mem_info_unknown_enum(void) {
  discover();
  NEED_ACCEL();
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &m));
  size_t s;
  EXPECT(olGetMemInfo(m, OL_MEM_INFO_LAST, sizeof s, &s), OL_ERRC_INVALID_ENUMERATION);
  OK(olMemFree(m));
  return NULL;
}
static const char *memcpy_host_to_host(void) {
  discover();
  char a[16] = "hello", b[16] = {0};
  OK(olMemcpy(NULL, b, host_dev, a, host_dev, 6));
  CHECK(strcmp(b, "hello") == 0);
  return NULL;
}
static const char *memcpy_zero_size(void) {
  discover();
  char a[4] = "abc", b[4] = "xyz";
  OK(olMemcpy(NULL, b, host_dev, a, host_dev, 0));
  CHECK(strcmp(b, "xyz") == 0);
  return NULL;
}
static const char *memcpy_null_destination(void) {
  discover();
  char a[4];
  EXPECT(olMemcpy(NULL, NULL, host_dev, a, host_dev, 4), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *memcpy_null_device(void) {
  discover();
  char a[4], b[4];
  EXPECT(olMemcpy(NULL, b, NULL, a, host_dev, 4), OL_ERRC_INVALID_NULL_HANDLE);
  return NULL;
}
/* "If a queue is specified, at least one device must be a non-host device." */
static const char *memcpy_host_to_host_on_queue(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  OK(olCreateQueue(accel, &q));
  char a[4] = "abc", b[4];
  EXPECT(olMemcpy(q, b, host_dev, a, host_dev, 4), OL_ERRC_INVALID_ARGUMENT);
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *memcpy_on_queue_round_trip(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  void *m;
  OK(olCreateQueue(accel, &q));
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &m));
  char in[64], out[64];
  for (int i = 0; i < 64; i++) in[i] = (char)i;
  OK(olMemcpy(q, m, accel, in, host_dev, 64));
  OK(olMemcpy(q, out, host_dev, m, accel, 64));
  OK(olSyncQueue(q));
  CHECK(memcmp(in, out, 64) == 0);
  OK(olMemFree(m));
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *memcpy_device_to_device(void) {
  discover();
  NEED_ACCEL();
  void *a, *b;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &a));
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &b));
  char in[64], out[64];
  memset(in, 0x5a, sizeof in);
  OK(olMemcpy(NULL, a, accel, in, host_dev, 64));
  OK(olMemcpy(NULL, b, accel, a, accel, 64));
  OK(olMemcpy(NULL, out, host_dev, b, accel, 64));
  CHECK(memcmp(in, out, 64) == 0);
  OK(olMemFree(a));
  OK(olMemFree(b));
  return NULL;
}
/* Silent in the header; ordo: a range past the end of its allocation is INVALID_SIZE. */
static const char *memcpy_past_the_end(void) {
  discover();
  NEED_ACCEL();
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &m));
  char in[128] = {0};
  EXPECT(olMemcpy(NULL, m, accel, in, host_dev, 128), OL_ERRC_INVALID_SIZE);
  OK(olMemFree(m));
  return NULL;
}
/* Silent in the header; ordo: device memory named with the host device is refused. */
static const char *memcpy_device_pointer_as_host(void) {
  discover();
  NEED_ACCEL();
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &m));
  char in[64] = {0};
  EXPECT(olMemcpy(NULL, m, host_dev, in, host_dev, 64), OL_ERRC_INVALID_ARGUMENT);
  OK(olMemFree(m));
  return NULL;
}
static const char *fill_and_check(ol_queue_handle_t q, size_t offset, const void *pattern, size_t psize, size_t n) {
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 256, &m));
  unsigned char zero[256] = {0}, out[256];
  OK(olMemcpy(NULL, m, accel, zero, host_dev, sizeof zero));
  OK(olMemFill(q, (char *)m + offset, psize, pattern, n));
  if (q) OK(olSyncQueue(q));
  OK(olMemcpy(NULL, out, host_dev, m, accel, sizeof out));
  OK(olMemFree(m));
  for (size_t i = 0; i < sizeof out; i++) {
    unsigned char want = (i >= offset && i < offset + n) ? ((const unsigned char *)pattern)[(i - offset) % psize] : 0;
    if (out[i] != want) return fmt("pattern of %zu bytes at +%zu: byte %zu is %u, want %u", psize, offset, i, out[i], want);
  }
  return NULL;
}
static const char *mem_fill_small_patterns(void) {
  discover();
  NEED_ACCEL();
  uint8_t p1 = 0xab;
  uint16_t p2 = 0x1234;
  uint32_t p4 = 0xdeadbeef;
  TRY(fill_and_check(NULL, 0, &p1, 1, 100));
  TRY(fill_and_check(NULL, 2, &p2, 2, 100));
  TRY(fill_and_check(NULL, 4, &p4, 4, 100));
  return NULL;
}
static const char *mem_fill_large_pattern(void) {
  discover();
  NEED_ACCEL();
  const unsigned char p12[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const unsigned char p3[3] = {0xa, 0xb, 0xc};
  const unsigned char p64[64] = {[0] = 1, [17] = 2, [63] = 3};
  TRY(fill_and_check(NULL, 8, p12, 12, 120));
  TRY(fill_and_check(NULL, 1, p3, 3, 99));
  TRY(fill_and_check(NULL, 0, p64, 64, 128));
  return NULL;
}
static const char *mem_fill_on_queue(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  OK(olCreateQueue(accel, &q));
  uint32_t p4 = 0x01020304;
  const unsigned char p6[6] = {9, 8, 7, 6, 5, 4};
  TRY(fill_and_check(q, 0, &p4, 4, 64));
  TRY(fill_and_check(q, 3, p6, 6, 60));
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *mem_fill_size_not_multiple(void) {
  char b[16];
  uint32_t p = 0;
  EXPECT(olMemFill(NULL, b, 4, &p, 10), OL_ERRC_INVALID_SIZE);
  return NULL;
}
static const char *mem_fill_null_pointer(void) {
  uint32_t p = 0;
  EXPECT(olMemFill(NULL, NULL, 4, &p, 8), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *mem_fill_null_pattern(void) {
  char b[16];
  EXPECT(olMemFill(NULL, b, 4, NULL, 8), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
/* Registration is a backend capability: CUDA registers; a platform without it says UNSUPPORTED. */
static const char *mem_register_and_unregister(void) {
  discover();
  NEED_ACCEL();
  size_t n = 1 << 16;
  char *buf = aligned_alloc(4096, n);
  void *pinned = NULL;
  ol_result_t r = olMemRegister(accel, buf, n, 0, &pinned);
  if (code(r) == OL_ERRC_UNSUPPORTED && accel_backend == OL_PLATFORM_BACKEND_UNKNOWN) SKIP("the device cannot register host memory");
  OK(r);
  CHECK(pinned != NULL);
  void *m;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 64, &m));
  memset(buf, 0x3c, 64);
  OK(olMemcpy(NULL, m, accel, pinned, host_dev, 64));
  memset(buf, 0, 64);
  OK(olMemcpy(NULL, pinned, host_dev, m, accel, 64));
  CHECK(buf[0] == 0x3c && buf[63] == 0x3c);
  OK(olMemFree(m));
  OK(olMemUnregister(accel, pinned));
  free(buf);
  return NULL;
}
/* liboffload's tests: the same range registered twice succeeds (each registration is undone by
   one unregister); a range overlapping a registration is INVALID_ARGUMENT. */
static const char *mem_register_twice_and_overlapping(void) {
  discover();
  NEED_ACCEL();
  size_t n = 1 << 12;
  char *buf = aligned_alloc(4096, 2 * n);
  void *p1 = NULL, *p2 = NULL, *p3 = NULL;
  ol_result_t r = olMemRegister(accel, buf, n, 0, &p1);
  if (code(r) == OL_ERRC_UNSUPPORTED && accel_backend == OL_PLATFORM_BACKEND_UNKNOWN) SKIP("the device cannot register host memory");
  OK(r);
  OK(olMemRegister(accel, buf, n, 0, &p2));
  CHECK(p1 != NULL && p2 != NULL);
  EXPECT(olMemRegister(accel, buf + 8, n, 0, &p3), OL_ERRC_INVALID_ARGUMENT);
  OK(olMemUnregister(accel, p1));
  OK(olMemUnregister(accel, p2));
  EXPECT(olMemUnregister(accel, p1), OL_ERRC_INVALID_ARGUMENT);
  free(buf);
  return NULL;
}
static const char *mem_register_zero_size(void) {
  discover();
  char b[16];
  void *p;
  EXPECT(olMemRegister(host_dev, b, 0, 0, &p), OL_ERRC_INVALID_SIZE);
  return NULL;
}
static const char *mem_register_null_pointer(void) {
  discover();
  void *p;
  EXPECT(olMemRegister(host_dev, NULL, 16, 0, &p), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
/* Silent in the header; ordo: the host device registers nothing. */
static const char *mem_register_on_host_device(void) {
  discover();
  char b[16];
  void *p;
  EXPECT(olMemRegister(host_dev, b, sizeof b, 0, &p), OL_ERRC_UNSUPPORTED);
  return NULL;
}
/* Silent in the header; liboffload's own tests (UnregisteredPtrUnRegister) expect INVALID_ARGUMENT. */
static const char *mem_unregister_unknown(void) {
  discover();
  NEED_ACCEL();
  char b[16];
  EXPECT(olMemUnregister(accel, b), OL_ERRC_INVALID_ARGUMENT);
  return NULL;
}

/* ---- queues and events ------------------------------------------------------------------- */

static const char *queue_create_destroy(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(accel, &q));
  CHECK(q != NULL);
  OK(olSyncQueue(q));
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *queue_null_out(void) {
  discover();
  EXPECT(olCreateQueue(host_dev, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
/* Silent in the header; ordo: the host device has no queues. */
static const char *queue_on_host_device(void) {
  discover();
  ol_queue_handle_t q;
  EXPECT(olCreateQueue(host_dev, &q), OL_ERRC_UNSUPPORTED);
  return NULL;
}
static const char *queue_destroyed_twice(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  OK(olCreateQueue(accel, &q));
  OK(olDestroyQueue(q));
  EXPECT(olDestroyQueue(q), OL_ERRC_INVALID_QUEUE);
  EXPECT(olSyncQueue(q), OL_ERRC_INVALID_QUEUE);
  return NULL;
}
static const char *queue_sync_null(void) {
  EXPECT(olSyncQueue(NULL), OL_ERRC_INVALID_NULL_HANDLE);
  return NULL;
}
static const char *queue_sync_forged(void) {
  EXPECT(olSyncQueue((ol_queue_handle_t)0x10), OL_ERRC_INVALID_QUEUE);
  return NULL;
}
static const char *queue_info(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  OK(olCreateQueue(accel, &q));
  ol_device_handle_t d;
  OK(olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, sizeof d, &d));
  CHECK(d == accel);
  OK(olSyncQueue(q));
  bool empty = false;
  size_t size;
  OK(olGetQueueInfoSize(q, OL_QUEUE_INFO_EMPTY, &size));
  CHECK(size == sizeof(bool));
  OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  CHECK(empty);
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *queue_info_unknown_enum(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  OK(olCreateQueue(accel, &q));
  char b[16];
  EXPECT(olGetQueueInfo(q, OL_QUEUE_INFO_LAST, sizeof b, b), OL_ERRC_INVALID_ENUMERATION);
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *queue_info_forged(void) {
  char b[16];
  EXPECT(olGetQueueInfo((ol_queue_handle_t)0x10, OL_QUEUE_INFO_DEVICE, sizeof b, b), OL_ERRC_INVALID_QUEUE);
  return NULL;
}
static const char *event_create_sync_destroy(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  ol_event_handle_t e = NULL;
  OK(olCreateQueue(accel, &q));
  OK(olCreateEvent(q, &e));
  CHECK(e != NULL);
  OK(olSyncEvent(e));
  bool done = false;
  OK(olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  CHECK(done);
  ol_queue_handle_t eq = NULL;
  OK(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof eq, &eq));
  CHECK(eq == q);
  OK(olDestroyEvent(e));
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *event_info_sizes(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  ol_event_handle_t e;
  OK(olCreateQueue(accel, &q));
  OK(olCreateEvent(q, &e));
  size_t s0, s1;
  OK(olGetEventInfoSize(e, OL_EVENT_INFO_QUEUE, &s0));
  OK(olGetEventInfoSize(e, OL_EVENT_INFO_IS_COMPLETE, &s1));
  CHECK(s0 == sizeof(void *) && s1 == sizeof(bool));
  char b[16];
  EXPECT(olGetEventInfo(e, OL_EVENT_INFO_LAST, sizeof b, b), OL_ERRC_INVALID_ENUMERATION);
  OK(olDestroyEvent(e));
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *event_create_null_queue(void) {
  ol_event_handle_t e;
  EXPECT(olCreateEvent(NULL, &e), OL_ERRC_INVALID_NULL_HANDLE);
  return NULL;
}
static const char *event_create_null_out(void) {
  EXPECT(olCreateEvent((ol_queue_handle_t)0x10, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *event_destroyed_twice(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  ol_event_handle_t e;
  OK(olCreateQueue(accel, &q));
  OK(olCreateEvent(q, &e));
  OK(olDestroyEvent(e));
  EXPECT(olDestroyEvent(e), OL_ERRC_INVALID_EVENT);
  EXPECT(olSyncEvent(e), OL_ERRC_INVALID_EVENT);
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *event_sync_forged(void) {
  EXPECT(olSyncEvent((ol_event_handle_t)0x10), OL_ERRC_INVALID_EVENT);
  return NULL;
}
static const char *event_outlives_its_queue(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  ol_event_handle_t e;
  OK(olCreateQueue(accel, &q));
  OK(olCreateEvent(q, &e));
  OK(olDestroyQueue(q));
  OK(olSyncEvent(e));
  OK(olDestroyEvent(e));
  return NULL;
}
static const char *wait_events_null_list(void) {
  EXPECT(olWaitEvents((ol_queue_handle_t)0x10, NULL, 1), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *wait_events_null_entry(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  OK(olCreateQueue(accel, &q));
  ol_event_handle_t list[2] = {NULL, NULL};
  OK(olCreateEvent(q, &list[0]));
  EXPECT(olWaitEvents(q, list, 2), OL_ERRC_INVALID_NULL_HANDLE);
  OK(olDestroyEvent(list[0]));
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *wait_events_forged_entry(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  OK(olCreateQueue(accel, &q));
  ol_event_handle_t list[1] = {(ol_event_handle_t)0x10};
  EXPECT(olWaitEvents(q, list, 1), OL_ERRC_INVALID_EVENT);
  OK(olDestroyQueue(q));
  return NULL;
}

/* Host functions. */
static volatile int flag, hits;
static unsigned char *pinned_view;
static int seen_first;
static void count_hit(void *u) {
  (void)u;
  __atomic_add_fetch(&hits, 1, __ATOMIC_SEQ_CST);
}
static void wait_for_flag(void *u) {
  (void)u;
  for (int i = 0; i < 5000 && !__atomic_load_n(&flag, __ATOMIC_SEQ_CST); i++) usleep(1000);
}
static pthread_t ran_on;
static void record_thread(void *u) {
  (void)u;
  ran_on = pthread_self();
}
static void read_pinned(void *u) {
  (void)u;
  seen_first = pinned_view[0];
}
static const char *host_function_runs(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  OK(olCreateQueue(accel, &q));
  hits = 0;
  OK(olLaunchHostFunction(q, count_hit, NULL));
  OK(olLaunchHostFunction(q, count_hit, NULL));
  OK(olSyncQueue(q));
  CHECK(hits == 2);
  OK(olDestroyQueue(q));
  return NULL;
}
/* Work after a host function waits for it; across two queues through an event. */
static const char *host_function_blocks_queues(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q1, q2;
  OK(olCreateQueue(accel, &q1));
  OK(olCreateQueue(accel, &q2));
  OK(olLaunchHostFunction(q1, record_thread, NULL));
  OK(olSyncQueue(q1));
  if (pthread_equal(ran_on, pthread_self()))
    SKIP("this device runs host functions on the submitting thread when submitted (nothing to block)");
  hits = 1;
  flag = 0;
  OK(olLaunchHostFunction(q1, wait_for_flag, NULL));
  ol_event_handle_t e;
  OK(olCreateEvent(q1, &e));
  OK(olWaitEvents(q2, &e, 1));
  OK(olLaunchHostFunction(q2, count_hit, NULL));
  usleep(100 * 1000);
  int early = hits;
  bool empty = true, done = true;
  OK(olGetQueueInfo(q2, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  OK(olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  __atomic_store_n(&flag, 1, __ATOMIC_SEQ_CST);
  OK(olSyncQueue(q2));
  CHECK(early == 1 && !empty && !done && hits == 2);
  OK(olDestroyEvent(e));
  OK(olDestroyQueue(q1));
  OK(olDestroyQueue(q2));
  return NULL;
}
/* A host function sees the results of the copies enqueued before it. */
static const char *host_function_after_copy(void) {
  discover();
  NEED_ACCEL();
  ol_queue_handle_t q;
  void *dev, *host;
  OK(olCreateQueue(accel, &q));
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 4096, &dev));
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_HOST, 4096, &host));
  unsigned char v = 0x77;
  OK(olMemFill(q, dev, 1, &v, 4096));
  pinned_view = host;
  seen_first = -1;
  OK(olMemcpy(q, host, host_dev, dev, accel, 4096));
  OK(olLaunchHostFunction(q, read_pinned, NULL));
  OK(olSyncQueue(q));
  CHECK(seen_first == 0x77);
  OK(olMemFree(dev));
  OK(olMemFree(host));
  OK(olDestroyQueue(q));
  return NULL;
}
static const char *host_function_null_callback(void) {
  EXPECT(olLaunchHostFunction((ol_queue_handle_t)0x10, NULL, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *host_function_null_queue(void) {
  EXPECT(olLaunchHostFunction(NULL, count_hit, NULL), OL_ERRC_INVALID_NULL_HANDLE);
  return NULL;
}

/* ---- programs, symbols and launches ----------------------------------------------------- */

static const char *program_create_destroy(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p = NULL;
  OK(olCreateProgram(accel, image, image_size, &p));
  CHECK(p != NULL);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *program_image_is_copied(void) {
  discover();
  NEED_PROGRAM();
  char *copy = malloc(image_size);
  memcpy(copy, image, image_size);
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  OK(olCreateProgram(accel, copy, image_size, &p));
  memset(copy, 0, image_size);
  free(copy);
  OK(olGetSymbol(p, "vector_add_f32", OL_SYMBOL_KIND_KERNEL, &k));
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *program_null_data(void) {
  discover();
  ol_program_handle_t p;
  EXPECT(olCreateProgram(host_dev, NULL, 16, &p), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *program_null_out(void) {
  discover();
  EXPECT(olCreateProgram(host_dev, "x", 1, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
/* Silent in the header; ordo: an empty image is INVALID_SIZE. */
static const char *program_zero_size(void) {
  discover();
  NEED_ACCEL();
  ol_program_handle_t p;
  EXPECT(olCreateProgram(accel, "x", 0, &p), OL_ERRC_INVALID_SIZE);
  return NULL;
}
static const char *program_invalid_binary(void) {
  discover();
  NEED_ACCEL();
  ol_program_handle_t p;
  const char junk[] = "\x7f" "ELF this is not a program";
  EXPECT(olCreateProgram(accel, junk, sizeof junk, &p), OL_ERRC_INVALID_BINARY);
  return NULL;
}
/* Silent in the header (there is no INVALID_PROGRAM code); ordo: INVALID_ARGUMENT. */
static const char *program_destroyed_twice(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  TRY(load(&p));
  OK(olDestroyProgram(p));
  EXPECT(olDestroyProgram(p), OL_ERRC_INVALID_ARGUMENT);
  return NULL;
}
static const char *program_destroy_forged(void) {
  EXPECT(olDestroyProgram((ol_program_handle_t)0x10), OL_ERRC_INVALID_ARGUMENT);
  return NULL;
}
/* Silent in the header; ordo: the host device runs no programs. */
static const char *program_on_host_device(void) {
  discover();
  ol_program_handle_t p;
  EXPECT(olCreateProgram(host_dev, "abc", 3, &p), OL_ERRC_UNSUPPORTED);
  return NULL;
}
static const char *valid_binary_true(void) {
  discover();
  NEED_PROGRAM();
  bool valid = false;
  OK(olIsValidBinary(accel, image, image_size, &valid));
  CHECK(valid);
  return NULL;
}
static const char *valid_binary_junk(void) {
  discover();
  NEED_ACCEL();
  bool valid = true;
  const char junk[] = "\x7f" "ELF this is not a program";
  OK(olIsValidBinary(accel, junk, sizeof junk, &valid));
  CHECK(!valid);
  return NULL;
}
/* A cubin for another architecture (OL_TEST_FOREIGN; the GPU run passes an sm_80 cubin on sm_90). */
static const char *valid_binary_other_architecture(void) {
  discover();
  NEED_ACCEL();
  const char *path = getenv("OL_TEST_FOREIGN");
  if (!path) SKIP("no image for another architecture (OL_TEST_FOREIGN)");
  FILE *f = fopen(path, "rb");
  if (!f) return fmt("cannot open %s", path);
  static char foreign[1 << 20];
  size_t n = fread(foreign, 1, sizeof foreign, f);
  fclose(f);
  bool valid = true;
  OK(olIsValidBinary(accel, foreign, n, &valid));
  CHECK(!valid);
  return NULL;
}
static const char *valid_binary_zero_size(void) {
  discover();
  bool valid = true;
  OK(olIsValidBinary(host_dev, "abc", 0, &valid));
  CHECK(!valid);
  return NULL;
}
static const char *valid_binary_null_out(void) {
  discover();
  EXPECT(olIsValidBinary(host_dev, "abc", 3, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *symbol_same_name_same_handle(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t a, b;
  TRY(kernel(&p, &a, "vector_add_f32"));
  OK(olGetSymbol(p, "vector_add_f32", OL_SYMBOL_KIND_KERNEL, &b));
  CHECK(a == b);
  ol_symbol_kind_t kind = OL_SYMBOL_KIND_LAST;
  OK(olGetSymbolInfo(a, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  CHECK(kind == OL_SYMBOL_KIND_KERNEL);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *symbol_not_found(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(load(&p));
  EXPECT(olGetSymbol(p, "no_such_kernel", OL_SYMBOL_KIND_KERNEL, &k), OL_ERRC_NOT_FOUND);
  EXPECT(olGetSymbol(p, "no_such_global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &k), OL_ERRC_NOT_FOUND);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *symbol_unknown_kind(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(load(&p));
  EXPECT(olGetSymbol(p, "vector_add_f32", OL_SYMBOL_KIND_LAST, &k), OL_ERRC_INVALID_ENUMERATION);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *symbol_null_name(void) {
  ol_symbol_handle_t k;
  EXPECT(olGetSymbol((ol_program_handle_t)0x10, NULL, OL_SYMBOL_KIND_KERNEL, &k), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *symbol_info_kernel_has_no_address(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  void *addr;
  EXPECT(olGetSymbolInfo(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr), OL_ERRC_SYMBOL_KIND);
  size_t size;
  EXPECT(olGetSymbolInfoSize(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, &size), OL_ERRC_SYMBOL_KIND);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *symbol_stale_after_program_destroyed(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  OK(olDestroyProgram(p));
  ol_symbol_kind_t kind;
  EXPECT(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind, &kind), OL_ERRC_INVALID_ARGUMENT);
  return NULL;
}
static const char *symbol_info_forged(void) {
  ol_symbol_kind_t kind;
  EXPECT(olGetSymbolInfo((ol_symbol_handle_t)0x10, OL_SYMBOL_INFO_KIND, sizeof kind, &kind), OL_ERRC_INVALID_ARGUMENT);
  return NULL;
}
static const char *global_variable(void) {
  discover();
  NEED_PROGRAM();
  if (!global_name) SKIP("the image has no global variable (OL_TEST_GLOBAL)");
  ol_program_handle_t p;
  ol_symbol_handle_t g, g2, k;
  TRY(load(&p));
  OK(olGetSymbol(p, global_name, OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  OK(olGetSymbol(p, global_name, OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g2));
  CHECK(g == g2);
  ol_symbol_kind_t kind;
  void *addr = NULL;
  size_t size = 0;
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof size, &size));
  CHECK(kind == OL_SYMBOL_KIND_GLOBAL_VARIABLE && addr && size == 16);
  uint32_t v[4];
  OK(olMemcpy(NULL, v, host_dev, addr, accel, sizeof v));
  CHECK(v[0] == 1 && v[3] == 4);
  uint32_t w[4] = {100, 200, 300, 400};
  OK(olMemcpy(NULL, addr, accel, w, host_dev, sizeof w));
  OK(olGetSymbol(p, "add_global", OL_SYMBOL_KIND_KERNEL, &k));
  void *out;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 16, &out));
  struct { void *out; } args = {out};
  ol_kernel_launch_size_args_t l = {1, {1, 1, 1}, {4, 1, 1}, 0};
  OK(olLaunchKernel(NULL, accel, k, &args, sizeof args, &l));
  OK(olMemcpy(NULL, v, host_dev, out, accel, sizeof v));
  CHECK(v[0] == 110 && v[3] == 410);
  OK(olMemFree(out));
  OK(olDestroyProgram(p));
  return NULL;
}
/* ordo: a global variable's memory belongs to its program: olMemFree refuses it. */
static const char *global_variable_is_not_freed(void) {
  discover();
  NEED_PROGRAM();
  if (!global_name) SKIP("the image has no global variable (OL_TEST_GLOBAL)");
  ol_program_handle_t p;
  ol_symbol_handle_t g;
  TRY(load(&p));
  OK(olGetSymbol(p, global_name, OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  void *addr;
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
  EXPECT(olMemFree(addr), OL_ERRC_INVALID_ARGUMENT);
  size_t size;
  OK(olGetMemInfo((char *)addr + 4, OL_MEM_INFO_SIZE, sizeof size, &size));
  CHECK(size == 16);
  OK(olDestroyProgram(p));
  EXPECT(olGetMemInfo(addr, OL_MEM_INFO_SIZE, sizeof size, &size), OL_ERRC_NOT_FOUND);
  return NULL;
}

struct add_args {
  const float *a, *b;
  float *c;
  uint32_t n;
};
static const char *vector_add(ol_queue_handle_t q, ol_symbol_handle_t k, uint32_t n) {
  size_t bytes = n * sizeof(float);
  float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
  for (uint32_t i = 0; i < n; i++) {
    ha[i] = (float)i;
    hb[i] = 2.0f * (float)i;
    hc[i] = -1.0f;
  }
  void *a, *b, *c;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, bytes, &a));
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, bytes, &b));
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, bytes, &c));
  OK(olMemcpy(NULL, a, accel, ha, host_dev, bytes));
  OK(olMemcpy(NULL, b, accel, hb, host_dev, bytes));
  struct add_args args = {a, b, c, n};
  ol_kernel_launch_size_args_t l = {1, {(n + 127) / 128, 1, 1}, {128, 1, 1}, 0};
  OK(olLaunchKernel(q, accel, k, &args, sizeof args, &l));
  if (q) OK(olSyncQueue(q));
  OK(olMemcpy(NULL, hc, host_dev, c, accel, bytes));
  for (uint32_t i = 0; i < n; i++)
    if (hc[i] != 3.0f * (float)i) return fmt("c[%u] = %f, want %f", i, hc[i], 3.0 * i);
  OK(olMemFree(a));
  OK(olMemFree(b));
  OK(olMemFree(c));
  free(ha);
  free(hb);
  free(hc);
  return NULL;
}
static const char *launch_on_queue(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  ol_queue_handle_t q;
  TRY(kernel(&p, &k, "vector_add_f32"));
  OK(olCreateQueue(accel, &q));
  TRY(vector_add(q, k, 1000));
  OK(olDestroyQueue(q));
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *launch_without_queue_is_synchronous(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  TRY(vector_add(NULL, k, 4096));
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *launch_mixed_argument_layout(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(load(&p));
  if (code(olGetSymbol(p, "mixed", OL_SYMBOL_KIND_KERNEL, &k)) == OL_ERRC_NOT_FOUND) SKIP("the image has no kernel mixed");
  void *out;
  OK(olMemAlloc(accel, OL_ALLOC_TYPE_DEVICE, 24, &out));
  struct { char c; double d; uint16_t s; int64_t *out; } args = {-5, 1e9, 65535, out};
  ol_kernel_launch_size_args_t l = {1, {1, 1, 1}, {1, 1, 1}, 0};
  OK(olLaunchKernel(NULL, accel, k, &args, sizeof args, &l));
  int64_t v[3];
  OK(olMemcpy(NULL, v, host_dev, out, accel, sizeof v));
  CHECK(v[0] == -5 && v[1] == 1000000000 && v[2] == 65535);
  OK(olMemFree(out));
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *launch_null_size_args(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  EXPECT(olLaunchKernel(NULL, accel, k, NULL, 0, NULL), OL_ERRC_INVALID_NULL_POINTER);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *launch_size_without_data(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  ol_kernel_launch_size_args_t l = {1, {1, 1, 1}, {1, 1, 1}, 0};
  EXPECT(olLaunchKernel(NULL, accel, k, NULL, 8, &l), OL_ERRC_INVALID_ARGUMENT);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *launch_null_kernel(void) {
  discover();
  NEED_ACCEL();
  ol_kernel_launch_size_args_t l = {1, {1, 1, 1}, {1, 1, 1}, 0};
  EXPECT(olLaunchKernel(NULL, accel, NULL, NULL, 0, &l), OL_ERRC_INVALID_NULL_HANDLE);
  return NULL;
}
static const char *launch_queue_of_another_device(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  ol_queue_handle_t q;
  TRY(kernel(&p, &k, "vector_add_f32"));
  OK(olCreateQueue(accel, &q));
  struct add_args args = {0};
  ol_kernel_launch_size_args_t l = {1, {1, 1, 1}, {1, 1, 1}, 0};
  EXPECT(olLaunchKernel(q, host_dev, k, &args, sizeof args, &l), OL_ERRC_INVALID_DEVICE);
  OK(olDestroyQueue(q));
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *launch_global_is_not_a_kernel(void) {
  discover();
  NEED_PROGRAM();
  if (!global_name) SKIP("the image has no global variable (OL_TEST_GLOBAL)");
  ol_program_handle_t p;
  ol_symbol_handle_t g;
  TRY(load(&p));
  OK(olGetSymbol(p, global_name, OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  ol_kernel_launch_size_args_t l = {1, {1, 1, 1}, {1, 1, 1}, 0};
  EXPECT(olLaunchKernel(NULL, accel, g, NULL, 0, &l), OL_ERRC_SYMBOL_KIND);
  size_t gs;
  EXPECT(olCalculateOptimalOccupancy(accel, g, 0, &gs), OL_ERRC_SYMBOL_KIND);
  OK(olDestroyProgram(p));
  return NULL;
}
/* Silent in the header; ordo: arguments smaller than the kernel's parameters are INVALID_SIZE. */
static const char *launch_arguments_too_small(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  struct add_args args = {0};
  ol_kernel_launch_size_args_t l = {1, {1, 1, 1}, {1, 1, 1}, 0};
  EXPECT(olLaunchKernel(NULL, accel, k, &args, 8, &l), OL_ERRC_INVALID_SIZE);
  OK(olDestroyProgram(p));
  return NULL;
}
/* Silent in the header; ordo: zero groups or work items are INVALID_VALUE. */
static const char *launch_zero_groups(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  struct add_args args = {0};
  ol_kernel_launch_size_args_t l = {1, {0, 1, 1}, {1, 1, 1}, 0};
  EXPECT(olLaunchKernel(NULL, accel, k, &args, sizeof args, &l), OL_ERRC_INVALID_VALUE);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *launch_stale_kernel(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  OK(olDestroyProgram(p));
  struct add_args args = {0};
  ol_kernel_launch_size_args_t l = {1, {1, 1, 1}, {1, 1, 1}, 0};
  EXPECT(olLaunchKernel(NULL, accel, k, &args, sizeof args, &l), OL_ERRC_INVALID_ARGUMENT);
  return NULL;
}
static const char *launch_stale_queue(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  ol_queue_handle_t q;
  TRY(kernel(&p, &k, "vector_add_f32"));
  OK(olCreateQueue(accel, &q));
  OK(olDestroyQueue(q));
  struct add_args args = {0};
  ol_kernel_launch_size_args_t l = {1, {1, 1, 1}, {1, 1, 1}, 0};
  EXPECT(olLaunchKernel(q, accel, k, &args, sizeof args, &l), OL_ERRC_INVALID_QUEUE);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *occupancy(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  size_t gs = 0;
  OK(olCalculateOptimalOccupancy(accel, k, 0, &gs));
  uint32_t max;
  OK(olGetDeviceInfo(accel, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, sizeof max, &max));
  CHECK(gs >= 1 && gs <= max);
  OK(olDestroyProgram(p));
  return NULL;
}
static const char *occupancy_null_out(void) {
  discover();
  EXPECT(olCalculateOptimalOccupancy(host_dev, (ol_symbol_handle_t)0x10, 0, NULL), OL_ERRC_INVALID_NULL_POINTER);
  return NULL;
}
static const char *occupancy_null_kernel(void) {
  discover();
  size_t gs;
  EXPECT(olCalculateOptimalOccupancy(host_dev, NULL, 0, &gs), OL_ERRC_INVALID_NULL_HANDLE);
  return NULL;
}

/* ---- errors and threads ------------------------------------------------------------------ */

static ol_result_t thread_result;
static void *fail_in_thread(void *u) {
  (void)u;
  thread_result = olSyncQueue(NULL);
  return NULL;
}
/* ordo: the error struct is per thread: another thread's failure leaves this one's unchanged. */
static const char *error_struct_is_per_thread(void) {
  int x = 0;
  ol_result_t mine = olMemFree(&x);
  CHECK(mine != NULL);
  int code_before = mine->Code;
  char before[256];
  snprintf(before, sizeof before, "%s", mine->Details);
  pthread_t t;
  pthread_create(&t, NULL, fail_in_thread, NULL);
  pthread_join(t, NULL);
  CHECK(thread_result != NULL && thread_result->Code == OL_ERRC_INVALID_NULL_HANDLE);
  CHECK((int)mine->Code == code_before && strcmp(mine->Details, before) == 0);
  return NULL;
}
static void *launch_in_threads(void *u) {
  ol_symbol_handle_t k = u;
  return (void *)vector_add(NULL, k, 256);
}
static const char *launches_from_four_threads(void) {
  discover();
  NEED_PROGRAM();
  ol_program_handle_t p;
  ol_symbol_handle_t k;
  TRY(kernel(&p, &k, "vector_add_f32"));
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, launch_in_threads, k);
  const char *first = NULL;
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    if (r && !first) first = r;
  }
  if (first) return first;
  OK(olDestroyProgram(p));
  return NULL;
}

/* ---- the runner ---------------------------------------------------------------------------- */

#define CASE(name) {#name, name}
static const struct {
  const char *name;
  const char *(*run)(void);
} cases[] = {
    CASE(noinit_platform_info_uninitialized), CASE(noinit_iterate_uninitialized),
    CASE(noinit_mem_alloc_uninitialized), CASE(noinit_launch_uninitialized),
    CASE(noinit_shutdown_uninitialized), CASE(noinit_error_has_details), CASE(noinit_init_shutdown),
    CASE(noinit_init_is_counted), CASE(noinit_calls_after_final_shutdown), CASE(noinit_ten_cycles),
    CASE(noinit_device_handle_from_earlier_init), CASE(noinit_teardown_with_live_objects),
    CASE(exit_without_shutdown),
    CASE(iterate_null_callback), CASE(iterate_stops_when_callback_returns_false), CASE(iterate_has_one_host_device),
    CASE(platform_info_strings), CASE(platform_info_backend_size), CASE(platform_info_unknown_enum),
    CASE(platform_info_size_unknown_enum), CASE(platform_info_zero_size), CASE(platform_info_too_small),
    CASE(platform_info_null_value), CASE(platform_info_null_handle), CASE(platform_info_size_null_out),
    CASE(platform_info_forged_handle),
    CASE(device_info_host_type), CASE(device_info_every_property_host), CASE(device_info_every_property_device),
    CASE(device_info_device_type), CASE(device_info_platform_is_consistent), CASE(device_info_name_size),
    CASE(device_info_unknown_enum), CASE(device_info_zero_size), CASE(device_info_too_small),
    CASE(device_info_null_value), CASE(device_info_null_handle), CASE(device_info_size_null_out),
    CASE(device_info_forged_handle),
    CASE(mem_alloc_zero_size), CASE(mem_alloc_null_out), CASE(mem_alloc_null_device), CASE(mem_alloc_on_host_device),
    CASE(mem_alloc_unknown_type), CASE(mem_device_round_trip), CASE(mem_host_round_trip),
    CASE(mem_managed_round_trip), CASE(mem_free_null), CASE(mem_free_unknown), CASE(mem_free_twice),
    CASE(mem_free_interior), CASE(mem_info_interior_pointer), CASE(mem_info_sizes), CASE(mem_info_not_found),
    CASE(mem_info_after_free), CASE(mem_info_null_pointer), CASE(mem_info_zero_size), CASE(mem_info_too_small),
    CASE(mem_info_unknown_enum),
    CASE(memcpy_host_to_host), CASE(memcpy_zero_size), CASE(memcpy_null_destination), CASE(memcpy_null_device),
    CASE(memcpy_host_to_host_on_queue), CASE(memcpy_on_queue_round_trip), CASE(memcpy_device_to_device),
    CASE(memcpy_past_the_end), CASE(memcpy_device_pointer_as_host),
    CASE(mem_fill_small_patterns), CASE(mem_fill_large_pattern), CASE(mem_fill_on_queue),
    CASE(mem_fill_size_not_multiple), CASE(mem_fill_null_pointer), CASE(mem_fill_null_pattern),
    CASE(mem_register_and_unregister), CASE(mem_register_zero_size), CASE(mem_register_null_pointer),
    CASE(mem_register_on_host_device), CASE(mem_unregister_unknown), CASE(mem_register_twice_and_overlapping),
    CASE(queue_create_destroy), CASE(queue_null_out), CASE(queue_on_host_device), CASE(queue_destroyed_twice),
    CASE(queue_sync_null), CASE(queue_sync_forged), CASE(queue_info), CASE(queue_info_unknown_enum),
    CASE(queue_info_forged),
    CASE(event_create_sync_destroy), CASE(event_info_sizes), CASE(event_create_null_queue),
    CASE(event_create_null_out), CASE(event_destroyed_twice), CASE(event_sync_forged),
    CASE(event_outlives_its_queue), CASE(wait_events_null_list), CASE(wait_events_null_entry),
    CASE(wait_events_forged_entry),
    CASE(host_function_runs), CASE(host_function_blocks_queues), CASE(host_function_after_copy),
    CASE(host_function_null_callback), CASE(host_function_null_queue),
    CASE(program_create_destroy), CASE(program_image_is_copied), CASE(program_null_data), CASE(program_null_out),
    CASE(program_zero_size), CASE(program_invalid_binary), CASE(program_destroyed_twice),
    CASE(program_destroy_forged), CASE(program_on_host_device),
    CASE(valid_binary_true), CASE(valid_binary_junk), CASE(valid_binary_other_architecture), CASE(valid_binary_zero_size), CASE(valid_binary_null_out),
    CASE(symbol_same_name_same_handle), CASE(symbol_not_found), CASE(symbol_unknown_kind), CASE(symbol_null_name),
    CASE(symbol_info_kernel_has_no_address), CASE(symbol_stale_after_program_destroyed), CASE(symbol_info_forged),
    CASE(global_variable), CASE(global_variable_is_not_freed),
    CASE(launch_on_queue), CASE(launch_without_queue_is_synchronous), CASE(launch_mixed_argument_layout),
    CASE(launch_null_size_args), CASE(launch_size_without_data), CASE(launch_null_kernel),
    CASE(launch_queue_of_another_device), CASE(launch_global_is_not_a_kernel), CASE(launch_arguments_too_small),
    CASE(launch_zero_groups), CASE(launch_stale_kernel), CASE(launch_stale_queue),
    CASE(occupancy), CASE(occupancy_null_out), CASE(occupancy_null_kernel),
    CASE(error_struct_is_per_thread), CASE(launches_from_four_threads),
};

int main(void) {
  load_image();
  const char *only = getenv("OL_TEST_ONLY");
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (only && strcmp(only, cases[i].name) != 0) continue;
    fflush(stdout);
    int fds[2];
    if (pipe(fds) != 0) return 2;
    pid_t child = fork();
    if (child == 0) {
      close(fds[0]);
      alarm(60);
      const char *r = NULL;
      if (strncmp(cases[i].name, "noinit_", 7) == 0) {
        r = cases[i].run();
      } else {
        ol_result_t init = olInit();
        r = init ? fmt("olInit: %d %s", init->Code, init->Details) : cases[i].run();
      }
      if (r && strcmp(r, "EXIT") == 0) {
        dprintf(fds[1], "PASS\texits without olShutDown");
        exit(7); /* atexit handlers and static destructors run */
      }
      if (!r) {
        dprintf(fds[1], "PASS\t");
      } else if (strncmp(r, "SKIP: ", 6) == 0) {
        dprintf(fds[1], "SKIP\t%s", r + 6);
      } else {
        dprintf(fds[1], "FAIL\t%s", r);
      }
      _exit(0);
    }
    close(fds[1]);
    char out[1200] = {0};
    size_t n = 0;
    ssize_t got;
    while (n < sizeof out - 1 && (got = read(fds[0], out + n, sizeof out - 1 - n)) > 0) n += (size_t)got;
    close(fds[0]);
    int st = 0;
    waitpid(child, &st, 0);
    bool exits = strcmp(cases[i].name, "exit_without_shutdown") == 0;
    if (WIFSIGNALED(st)) {
      printf("%s\tCRASH\tsignal %d\n", cases[i].name, WTERMSIG(st));
      failed++;
    } else if (exits && WEXITSTATUS(st) != 7 && strncmp(out, "PASS", 4) == 0) {
      printf("%s\tFAIL\texit status %d, want 7\n", cases[i].name, WEXITSTATUS(st));
      failed++;
    } else if (n == 0) {
      printf("%s\tFAIL\tno result (exit status %d)\n", cases[i].name, WEXITSTATUS(st));
      failed++;
    } else {
      for (char *c = out; *c; c++)
        if (*c == '\n') *c = ' ';
      printf("%s\t%s\n", cases[i].name, out);
      if (strncmp(out, "FAIL", 4) == 0) failed++;
    }
  }
  return failed ? 1 : 0;
}

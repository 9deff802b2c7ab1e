// Final shutdown from a C++ static object's destructor; a static constructed earlier (so
// destroyed later) calls ordo after the teardown and must get errors, quietly.
#include "check.h"

namespace {

ordo_queue_t stale_queue;
void *stale_memory;

struct LateUser {
  ~LateUser() {
    EXPECT(ordo_queue_synchronize(stale_queue), ORDO_ERROR_UNINITIALIZED);
    EXPECT(ordo_mem_free(stale_memory), ORDO_ERROR_UNINITIALIZED);
    EXPECT(ordo_shutdown(), ORDO_ERROR_UNINITIALIZED);
    uint32_t phase = 9, refs = 9;
    OK(ordo_get_state(&phase, &refs));
    if (phase != 0) std::exit(1);
  }
};

struct Session {
  Session() { OK(ordo_init()); }
  ~Session() {
    OK(ordo_shutdown());
    expect_clean_report(4);
  }
};

LateUser late_user;  // constructed first, destroyed last
Session session;     // constructed second, destroyed first

}  // namespace

int main() {
  run_vector_add(0);
  OK(ordo_queue_create(host_device(), &stale_queue));
  OK(ordo_mem_alloc(host_device(), ORDO_MEM_DEVICE, 128, &stale_memory));
  return 0;
}

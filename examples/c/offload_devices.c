/* A liboffload (ol*) program run on ordo: list every device with its platform, then on each
 * device that is not liboffload's host device allocate memory, copy 16 bytes there and back and
 * check them. It is written against LLVM 22's offload/OffloadAPI.h only, so it links against
 * ordo's libordo.so (feature `offload`) or libLLVMOffload.so alike. Build and run: see
 * docs/liboffload.md. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <offload/OffloadAPI.h>

#define MAX_DEVICES 16

static ol_device_handle_t devices[MAX_DEVICES], host;
static int count;

static bool collect(ol_device_handle_t device, void *unused) {
  (void)unused;
  ol_device_type_t type;
  if (olGetDeviceInfo(device, OL_DEVICE_INFO_TYPE, sizeof type, &type) == OL_SUCCESS && type == OL_DEVICE_TYPE_HOST)
    host = device;
  else if (count < MAX_DEVICES)
    devices[count++] = device;
  return true;
}

static int failed(const char *what, ol_result_t r) {
  fprintf(stderr, "%s: error %d: %s\n", what, (int)r->Code, r->Details ? r->Details : "");
  olShutDown();
  return 1;
}

int main(void) {
  ol_result_t r;
  if ((r = olInit())) return failed("olInit", r);
  if ((r = olIterateDevices(collect, NULL))) return failed("olIterateDevices", r);
  for (int i = 0; i < count; i++) {
    char name[128], platform_name[128];
    ol_platform_handle_t platform;
    if ((r = olGetDeviceInfo(devices[i], OL_DEVICE_INFO_NAME, sizeof name, name))) return failed("name", r);
    if ((r = olGetDeviceInfo(devices[i], OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform)))
      return failed("platform", r);
    if ((r = olGetPlatformInfo(platform, OL_PLATFORM_INFO_NAME, sizeof platform_name, platform_name)))
      return failed("platform name", r);
    uint8_t out[16], back[16] = {0};
    for (int j = 0; j < 16; j++) out[j] = (uint8_t)(j * 7 + i);
    void *mem;
    if ((r = olMemAlloc(devices[i], OL_ALLOC_TYPE_DEVICE, sizeof out, &mem))) return failed("olMemAlloc", r);
    if ((r = olMemcpy(NULL, mem, devices[i], out, host, sizeof out))) return failed("olMemcpy to", r);
    if ((r = olMemcpy(NULL, back, host, mem, devices[i], sizeof back))) return failed("olMemcpy back", r);
    if ((r = olMemFree(mem))) return failed("olMemFree", r);
    printf("%s: %s: 16 bytes there and back %s\n", platform_name, name, memcmp(out, back, 16) ? "DIFFER" : "match");
  }
  if ((r = olShutDown())) return failed("olShutDown", r);
  return 0;
}

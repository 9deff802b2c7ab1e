/* A host image whose constructor calls back into ordo while ordo is loading it: it forks (the
 * child exits at once), registers a C kernel table, and tries to load another host image. The
 * loading program (host_image_init.c, linked with -rdynamic) holds the results and the other
 * image's bytes. Before ordo released its locks around the loader, the fork hung in ordo's fork
 * handler and the nested load hung on the image list's lock. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ordo.h"

/* The loading program's. */
extern int ctor_fork_status;
extern ordo_status_t ctor_register_status;
extern ordo_status_t ctor_nested_status;
extern const unsigned char *nested_image;
extern size_t nested_image_size;

static ordo_status_t noop(const ordo_host_thread_t *t, void *const *args) {
  (void)t;
  (void)args;
  return ORDO_SUCCESS;
}

static const ordo_host_kernel_t registered[] = {{"noop", noop, NULL, 0}};

const ordo_host_kernel_t ordo_host_kernels[] = {{"noop", noop, NULL, 0}};
const uint32_t ordo_host_kernel_count = 1;

__attribute__((constructor)) static void calls_ordo_while_loaded(void) {
  pid_t pid = fork();
  if (pid == 0) _exit(7);
  int status = 0;
  ctor_fork_status = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  ctor_register_status = ordo_host_program_register("ctor.registered", registered, 1);
  ordo_platform_t platform;
  ordo_device_t device;
  ordo_program_t program;
  ctor_nested_status = ordo_platform_get(0, &platform);
  if (ctor_nested_status == ORDO_SUCCESS) ctor_nested_status = ordo_device_get(platform, 0, &device);
  if (ctor_nested_status == ORDO_SUCCESS)
    ctor_nested_status = ordo_program_load(device, nested_image, nested_image_size, &program);
}

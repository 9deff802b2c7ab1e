/* A host image whose initialisers call ordo (host_image_ctor.c): loading it returns, the
 * constructor's fork and C registration worked, and its attempt to load another host image
 * was refused with ORDO_ERROR_BUSY (documented); afterwards both images load. An alarm ends the
 * program if anything hangs. Linked with -rdynamic: the image uses ordo and the globals below
 * from this program. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <unistd.h>

#include "check.h"

int ctor_fork_status = -2;
ordo_status_t ctor_register_status = -1;
ordo_status_t ctor_nested_status = -1;
const unsigned char *nested_image;
size_t nested_image_size;

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: host_image_init <image-with-constructor.so> <image.so>\n");
    return 2;
  }
  alarm(60);
  size_t size = 0;
  unsigned char *image = read_file(argv[1], &size);
  unsigned char *other = read_file(argv[2], &nested_image_size);
  if (image == NULL || other == NULL) {
    fprintf(stderr, "cannot read the images\n");
    return 2;
  }
  nested_image = other;
  OK(ordo_init());
  ordo_device_t d = host_device();
  ordo_program_t p, registered, q;
  ordo_kernel_t k;
  OK(ordo_program_load(d, image, size, &p));
  if (ctor_fork_status != 7 || ctor_register_status != ORDO_SUCCESS || ctor_nested_status != ORDO_ERROR_BUSY) {
    fprintf(stderr, "constructor: fork %d, register %d, nested load %d\n", ctor_fork_status,
            (int)ctor_register_status, (int)ctor_nested_status);
    return 1;
  }
  OK(ordo_kernel_get(p, "noop", &k));
  OK(ordo_program_load(d, "ctor.registered", strlen("ctor.registered"), &registered));
  OK(ordo_kernel_get(registered, "noop", &k));
  OK(ordo_program_load(d, other, nested_image_size, &q));
  OK(ordo_kernel_get(q, "add", &k));
  OK(ordo_program_unload(q));
  OK(ordo_program_unload(registered));
  OK(ordo_program_unload(p));
  free(image);
  free(other);
  OK(ordo_shutdown());
  return 0;
}

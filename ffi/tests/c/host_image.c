/* Host images: a shared object exporting ordo_host_kernels, read into memory and loaded with
 * ordo_program_load on the host device; the same image loaded twice; a kernel launched with
 * checked arguments; and every refusal (another machine, a truncated image, no table). */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

/* Runs add(data, step, n) over 4 blocks of 64 and checks every element is old + step. */
static int run_add(ordo_device_t d, ordo_kernel_t k, uint32_t *values, uint32_t step) {
  enum { N = 250 };
  void *dev;
  ordo_queue_t q;
  OK(ordo_queue_create(d, &q));
  OK(ordo_mem_alloc(d, ORDO_MEM_DEVICE, N * sizeof(uint32_t), &dev));
  OK(ordo_memcpy(dev, values, N * sizeof(uint32_t), ORDO_COPY_HOST_TO_DEVICE));
  uint32_t n = N;
  void *args[] = {&dev, &step, &n};
  size_t sizes[] = {sizeof dev, sizeof step, sizeof n};
  ordo_launch_dims_t dims = {{4, 1, 1}, {64, 1, 1}, 0};
  OK(ordo_launch(q, k, &dims, args, sizes, 3));
  size_t wrong[] = {sizeof dev, sizeof(uint64_t), sizeof n};
  EXPECT(ordo_launch(q, k, &dims, args, wrong, 3), ORDO_ERROR_INVALID_SIZE);
  OK(ordo_queue_synchronize(q));
  uint32_t out[N];
  OK(ordo_memcpy(out, dev, sizeof out, ORDO_COPY_DEVICE_TO_HOST));
  for (int i = 0; i < N; i++) {
    if (out[i] != values[i] + step) {
      fprintf(stderr, "element %d: %u, not %u\n", i, out[i], values[i] + step);
      return 1;
    }
  }
  OK(ordo_mem_free(dev));
  OK(ordo_queue_destroy(q));
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: host_image <image.so> <image-without-table.so>\n");
    return 2;
  }
  size_t size = 0, bare_size = 0;
  unsigned char *image = read_file(argv[1], &size);
  unsigned char *bare = read_file(argv[2], &bare_size);
  if (image == NULL || bare == NULL || size < 64) {
    fprintf(stderr, "cannot read the images\n");
    return 2;
  }
  OK(ordo_init());
  ordo_device_t d = host_device();
  uint32_t values[250];
  for (int i = 0; i < 250; i++) values[i] = (uint32_t)(i * 3);

  ordo_program_t p1, p2, refused;
  ordo_kernel_t k1, k2;
  OK(ordo_program_load(d, image, size, &p1));
  OK(ordo_kernel_get(p1, "add", &k1));
  EXPECT(ordo_kernel_get(p1, "missing", &k2), ORDO_ERROR_NOT_FOUND);
  if (run_add(d, k1, values, 7) != 0) return 1;
  /* The same image again (another copy of its bytes): a program of its own, the same code. */
  unsigned char *copy = malloc(size);
  if (copy == NULL) return 2;
  memcpy(copy, image, size);
  OK(ordo_program_load(d, copy, size, &p2));
  OK(ordo_kernel_get(p2, "add", &k2));
  OK(ordo_program_unload(p1));
  ordo_queue_t q;
  OK(ordo_queue_create(d, &q));
  uint32_t n = 0, step = 0;
  void *dev = NULL;
  void *args[] = {&dev, &step, &n};
  size_t sizes[] = {sizeof dev, sizeof step, sizeof n};
  ordo_launch_dims_t dims = {{1, 1, 1}, {1, 1, 1}, 0};
  EXPECT(ordo_launch(q, k1, &dims, args, sizes, 3), ORDO_ERROR_INVALID_HANDLE); /* unloaded */
  OK(ordo_queue_destroy(q));
  if (run_add(d, k2, values, 1) != 0) return 1;
  OK(ordo_program_unload(p2));

  /* Refusals: another machine's image, a truncated image, a library without the table. */
  copy[18] ^= 0x55;
  EXPECT(ordo_program_load(d, copy, size, &refused), ORDO_ERROR_INVALID_BINARY);
  EXPECT(ordo_program_load(d, image, 64, &refused), ORDO_ERROR_INVALID_BINARY);
  EXPECT(ordo_program_load(d, bare, bare_size, &refused), ORDO_ERROR_INVALID_BINARY);
  free(copy);
  free(image);
  free(bare);
  OK(ordo_shutdown());
  return 0;
}

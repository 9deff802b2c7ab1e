/* A host image: a shared object for the host's architecture that exports a kernel table in
 * ordo_host_program_register's format. host_image.c reads it into memory and loads it on the
 * host device. Built with -DNO_TABLE it exports no table (a library ordo must refuse). */
#include <stdint.h>

#include "ordo.h"

#ifndef NO_TABLE
/* data[i] += step for the thread's global index i < n. */
static ordo_status_t add(const ordo_host_thread_t *t, void *const *args) {
  uint32_t *data = *(uint32_t *const *)args[0];
  uint32_t step = *(const uint32_t *)args[1];
  uint32_t n = *(const uint32_t *)args[2];
  uint32_t i = t->block[0] * t->block_dim[0] + t->thread[0];
  if (i < n) data[i] += step;
  return ORDO_SUCCESS;
}

static const size_t add_params[] = {sizeof(uint32_t *), sizeof(uint32_t), sizeof(uint32_t)};

const ordo_host_kernel_t ordo_host_kernels[] = {{"add", add, add_params, 3}};
const uint32_t ordo_host_kernel_count = 1;
#else
int not_a_kernel_table = 1;
#endif

/* Internal: a bootstrap's recovery round (core/boot/bootstrap_recover.c). */
#ifndef HIDET_NCCL_CORE_BOOT_BOOTSTRAP_RECOVER_INT_H_
#define HIDET_NCCL_CORE_BOOT_BOOTSTRAP_RECOVER_INT_H_

#include "hidet_nccl/bootstrap.h"

/* The round with the whole deadline timeout (seconds, checked): on success *kept (malloc'ed,
 * the caller frees) has *old_size entries, 1 for each old rank that goes on, *n_kept of them;
 * the bootstrap is renumbered to them. */
hidet_nccl_status_t hidet_nccl__bootstrap_recover(hidet_nccl_bootstrap_h bs, double timeout, unsigned char **kept,
                                                  int *old_size, int *n_kept);

#endif

/* Internal: a bootstrap's heal round (core/boot/bootstrap_heal.c). */
#ifndef HIDET_NCCL_CORE_BOOT_BOOTSTRAP_HEAL_INT_H_
#define HIDET_NCCL_CORE_BOOT_BOOTSTRAP_HEAL_INT_H_

#include "hidet_nccl/bootstrap.h"

/* The round with the whole deadline timeout (seconds, checked), as a member or, when the
 * bootstrap said joining, as a joiner: on success *members and *joined (malloc'ed, the caller
 * frees) have the job's size entries, *n_members and *n_joined of them set; the bootstrap is
 * renumbered to the members. */
hidet_nccl_status_t hidet_nccl__bootstrap_heal(hidet_nccl_bootstrap_h bs, double timeout, unsigned char **members,
                                               unsigned char **joined, int *n_members, int *n_joined);

#endif

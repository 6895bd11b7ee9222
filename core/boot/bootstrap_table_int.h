/* Internal: the bootstrap backends built into libhidet_nccl.a (core/boot/bootstrap_table.c). */
#ifndef HIDET_NCCL_CORE_BOOT_BOOTSTRAP_TABLE_INT_H_
#define HIDET_NCCL_CORE_BOOT_BOOTSTRAP_TABLE_INT_H_

#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"

/* The backends inside libhidet_nccl.a, for HIDET_NCCL_BOOTSTRAP=<name>
 * and, in this order, for the choice from the environment: the first whose setting is set. */
typedef struct {
    const char *name;
    const hidet_nccl_bootstrap_t *ops;
    hn_setting_t chosen_when_set; /* HN_NUM_SETTINGS: only by name */
    const char *how;              /* how a user gets it chosen, for "no bootstrap found" */
} hn_builtin_bootstrap_t;
extern const hn_builtin_bootstrap_t hidet_nccl__builtin_bootstraps[];
extern const int hidet_nccl__num_builtin_bootstraps;

#endif

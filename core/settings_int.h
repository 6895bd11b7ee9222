/* Internal: the settings module's core-only side (the getters are in core/kit.h). */
#ifndef HIDET_NCCL_CORE_SETTINGS_INT_H_
#define HIDET_NCCL_CORE_SETTINGS_INT_H_

#include "core/kit.h"

/* Rank, size, local rank and local size from the launchers' variables, in the one order
 * every part of the library uses (core/settings.c, k_launchers): rank and size from the
 * first launcher that sets its rank variable, local rank and size from the first that sets
 * its local-rank variable. -1 for what none gives. source (for messages) says which
 * variables gave them, or which were looked for. A set but malformed variable is
 * HIDET_NCCL_ERROR_INVALID_ARGUMENT naming it and its value. */
typedef struct {
    int rank, nranks, local_rank, local_size;
    char source[512];       /* of rank and size */
    char local_source[128]; /* of the local rank: "$SLURM_LOCALID", or "" */
} hn_hints_t;
hidet_nccl_status_t hidet_nccl__launcher_hints(hn_hints_t *out);

/* The rank the launcher gave, for the log prefix; -1 if none (or malformed). */
int hidet_nccl__launcher_rank(void);

#endif

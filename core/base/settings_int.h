/* Internal: the settings module's core-only side (the getters are in core/base/kit.h). */
#ifndef HIDET_NCCL_CORE_BASE_SETTINGS_INT_H_
#define HIDET_NCCL_CORE_BASE_SETTINGS_INT_H_

#include "core/base/kit.h"

/* Rank, size, local rank and local size from the launchers' variables, in the one order
 * every part of the library uses (core/base/settings.c, k_launchers): rank and size from the
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

/* The serial number of the current snapshot (1, then one more per reload). */
unsigned hidet_nccl__settings_serial(void);

/* One setting as the current snapshot holds it: name and doc from the table; env the
 * environment's text (NULL: unset or empty); value what the getters give (NULL: none); error
 * why env is not valid (NULL: it is); number the value of a numeric kind. Valid as the
 * getters' strings are. */
typedef struct {
    const char *name, *doc, *env, *value, *error;
    double number;
    int secret; /* its value is never printed */
} hn_setting_info_t;
void hidet_nccl__setting_info(hn_setting_t id, hn_setting_info_t *out);

/* The rank, world size, local rank and local size variables (which 0 .. 3) of the launcher
 * at `launcher` in the one order (0 first), and its name; NULL past the last launcher. */
const char *hidet_nccl__launcher_var(int launcher, int which, const char **name);

/* The rank the launcher gave, for the log prefix; -1 if none (or malformed). */
int hidet_nccl__launcher_rank(void);

#endif

/* hidet_nccl_bootstrap_from_env: the bootstrap the environment asks for, by name
 * (HIDET_NCCL_BOOTSTRAP) or by the first built-in backend whose variable is set
 * (core/boot/bootstrap_table.c). */
#include <stdio.h>
#include <string.h>

#include "core/boot/bootstrap_table_int.h"
#include "core/base/status_int.h"
#include "core/base/log_int.h"
#include "core/base/settings_int.h"

/* The names of the built-in backends, for messages: "'file', 'socket'"; with how (not NULL),
 * each backend's way to be chosen: "start ..., or set ...". */
static void builtin_names(char *out, size_t n, char *how, size_t how_bytes) {
    size_t used = 0, how_used = 0;
    out[0] = '\0';
    for (int i = 0; i < hidet_nccl__num_builtin_bootstraps; i++) {
        const hn_builtin_bootstrap_t *b = &hidet_nccl__builtin_bootstraps[i];
        if (used < n) used += (size_t)snprintf(out + used, n - used, "%s'%s'", i ? ", " : "", b->name);
        if (how != NULL && how_used < how_bytes)
            how_used += (size_t)snprintf(how + how_used, how_bytes - how_used, "%s%s", i ? ", or " : "", b->how);
    }
}

hidet_nccl_status_t hidet_nccl_bootstrap_from_env(hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(out);
    *out = NULL;
    const char *choice = hidet_nccl__setting_str(HN_SETTING_BOOTSTRAP);
    char names[128], how[1024];
    builtin_names(names, sizeof names, how, sizeof how);
    if (choice != NULL) {
        for (int i = 0; i < hidet_nccl__num_builtin_bootstraps; i++)
            if (strcmp(choice, hidet_nccl__builtin_bootstraps[i].name) == 0)
                return hidet_nccl_bootstrap_create(hidet_nccl__builtin_bootstraps[i].ops, NULL, out);
        if (strchr(choice, '/') != NULL) return hidet_nccl_bootstrap_load(choice, NULL, out);
        if (strcmp(choice, "mpi") == 0)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                           "HIDET_NCCL_BOOTSTRAP=mpi needs libhidet_nccl_mpi.a: call hidet_nccl_mpi_init "
                           "(hidet_nccl/bootstrap_mpi.h)");
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "HIDET_NCCL_BOOTSTRAP='%.200s' is not a built-in bootstrap (%s), 'mpi' or a plug-in path "
                       "(containing '/')", choice, names);
    }
    for (int i = 0; i < hidet_nccl__num_builtin_bootstraps; i++) {
        const hn_builtin_bootstrap_t *b = &hidet_nccl__builtin_bootstraps[i];
        if (b->chosen_when_set != HN_NUM_SETTINGS && hidet_nccl__setting_is_set(b->chosen_when_set)) {
            HN_INFO("bootstrap '%s' chosen from the environment", b->name);
            return hidet_nccl_bootstrap_create(b->ops, NULL, out);
        }
    }
    return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP,
                   "no bootstrap found in the environment: %s, or set HIDET_NCCL_BOOTSTRAP to a built-in bootstrap "
                   "(%s) or a plug-in path; MPI programs use hidet_nccl_mpi_init", how, names);
}

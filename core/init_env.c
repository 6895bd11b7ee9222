/* hidet_nccl_init: the zero-argument start of an application launched by hidet-nccl-run,
 * by Slurm with a rendezvous directory, or with HIDET_NCCL_BOOTSTRAP naming a plug-in. */
#include <stdio.h>
#include <string.h>

#include "core/error_int.h"
#include "hidet_nccl/bootstrap.h"

hidet_nccl_status_t hidet_nccl_init(int *comm_id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(comm_id);
    hidet_nccl_bootstrap_h bs;
    HN_CHECK(hidet_nccl_bootstrap_from_env(&bs));
    hidet_nccl_status_t st = hidet_nccl_comm_init(bs, NULL, comm_id);
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", hidet_nccl_last_error());
    hidet_nccl_status_t st2 = hidet_nccl_bootstrap_destroy(bs);
    if (st != HIDET_NCCL_SUCCESS) { /* the init's failure, not the release's, is the story */
        hidet_nccl__enter(__func__);
        const char *prefix = "hidet_nccl: ";
        return HN_FAIL(st, "%s", saved + (strncmp(saved, prefix, strlen(prefix)) == 0 ? strlen(prefix) : 0));
    }
    return st2; /* a failed release keeps its own message */
}

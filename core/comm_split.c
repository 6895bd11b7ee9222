/* hidet_nccl_comm_split: a new owned communicator from a color and key (NCCL 2.18+). */
#include <stdio.h>

#include "core/dtype_int.h"
#include "core/error_int.h"
#include "core/registry_int.h"
#include "core/wait_int.h"

hidet_nccl_status_t hidet_nccl_comm_split(int comm_id, int color, int key, int *new_id) {
    hidet_nccl__clear_error();
    HN_CHECK_NOT_NULL(new_id);
    if (color < 0 && color != HIDET_NCCL_SPLIT_NOCOLOR)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "color %d is negative and not HIDET_NCCL_SPLIT_NOCOLOR (%d)", color, HIDET_NCCL_SPLIT_NOCOLOR);
    ncclComm_t parent;
    HN_CHECK(hidet_nccl__registry_get(comm_id, &parent, NULL));
    double timeout;
    HN_CHECK(hidet_nccl__timeout_seconds(&timeout));
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    if (n->CommSplit == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED,
                       "comm_split needs NCCL 2.18 or newer (ncclCommSplit); the loaded NCCL is %d.%d.%d (%s)",
                       hidet_nccl__version_major(n->version), hidet_nccl__version_minor(n->version),
                       hidet_nccl__version_patch(n->version), n->path);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t child = NULL;
    ncclResult_t r = n->CommSplit(parent, color, key, &child, &config);
    char what[128];
    snprintf(what, sizeof what, "ncclCommSplit of communicator id %d (color %d, key %d)", comm_id, color, key);
    if (r != ncclSuccess && r != ncclInProgress) return hidet_nccl__nccl_fail(__func__, what, r, parent);
    if (hidet_nccl__group_depth() > 0) {
        if (child != NULL) HN_CHECK(hidet_nccl__group_track(child));
    } else {
        /* The parent takes part in the split, so it is awaited too. */
        ncclComm_t both[2] = {parent, child};
        HN_CHECK(hidet_nccl__await(n, both, child ? 2 : 1, timeout, 0, what));
    }
    if (child == NULL) {
        *new_id = -1;
        return HIDET_NCCL_SUCCESS;
    }
    hidet_nccl_status_t st = hidet_nccl__registry_add(child, 1, new_id);
    if (st != HIDET_NCCL_SUCCESS) n->CommDestroy(child);
    return st;
}

/* What hidet_nccl_comm_recover and hidet_nccl_comm_heal share (comm_round_int.h). */
#include <stdio.h>
#include <stdlib.h>

#include "core/base/status_int.h"
#include "core/boot/bootstrap_int.h"
#include "core/boot/comm_round_int.h"

hidet_nccl_status_t hidet_nccl__comm_round_take(int comm_id, const hn_slot_t *slot, int dead, hn_comm_boot_t *b) {
    int rc = hidet_nccl__comm_boot_take(comm_id, b);
    if (rc == -3)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "communicator id %d was recovered already, or healed, into id %d (recover or heal that one "
                       "if it fails too)",
                       comm_id, b->recovered_into);
    if (rc == -2)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "a recovery or heal of communicator id %d is under way on another thread: one at a time",
                       comm_id);
    if (rc == 0) return HIDET_NCCL_SUCCESS;
    if (dead) { /* destroyed by the caller, or never made over a bootstrap: the registry says which */
        hn_slot_t unused;
        return hidet_nccl__registry_get(comm_id, 1, &unused);
    }
    if (!slot->owned)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "communicator id %d is borrowed: the library does not know how its ranks met. Recover the "
                       "bootstrap you made it with (hidet_nccl_bootstrap_recover) and make a new one",
                       comm_id);
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                   "communicator id %d was not made over a bootstrap (init_rank, init_all, split, shrink or an AUTO "
                   "sibling): recover the communicator it came from, then split or shrink again",
                   comm_id);
}

int hidet_nccl__comm_nccl_error(const hn_nccl_t *n, ncclComm_t comm, ncclResult_t *err) {
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = n->CommGetAsyncError(comm, &async);
    *err = r != ncclSuccess ? r : async;
    return *err != ncclSuccess && *err != ncclInProgress;
}

int *hidet_nccl__comm_lost_ranks(const unsigned char *kept, int size, int lost) {
    int *ex = malloc((size_t)(lost > 0 ? lost : 1) * sizeof *ex);
    for (int r = 0, i = 0; ex != NULL && r < size; r++)
        if (!kept[r]) ex[i++] = r;
    return ex;
}

hidet_nccl_status_t hidet_nccl__comm_agree(hidet_nccl_bootstrap_h bs, unsigned mine, int n, double timeout,
                                          unsigned *all) {
    unsigned char me = (unsigned char)mine, *each = malloc((size_t)n);
    if (each == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", n);
    hidet_nccl_status_t st = hidet_nccl__bootstrap_allgather(bs, &me, each, 1, timeout);
    *all = st == HIDET_NCCL_SUCCESS ? 0xffu : 0u;
    for (int r = 0; st == HIDET_NCCL_SUCCESS && r < n; r++) *all &= each[r];
    free(each);
    return st;
}

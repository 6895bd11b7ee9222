/* hidet_nccl_comm_revoke: stop a communicator's unfinished work without destroying it
 * (ncclCommRevoke, NCCL 2.28.7); the id is then failed, ready to shrink or destroy. */
#include <stdio.h>

#include "core/base/status_int.h"
#include "core/comm/group_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"
#include "core/comm/registry_int.h"
#include "core/comm/wait_int.h"

#define REVOKE_VERSION 22807

hidet_nccl_status_t hidet_nccl_comm_revoke(int comm_id) {
    HN_ENTER();
    if (hidet_nccl__group_depth() > 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "comm_revoke is not taken inside a group");
    hn_slot_t slot;
    HN_CHECK(hidet_nccl__registry_get(comm_id, 1, &slot));
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    HN_CHECK(hidet_nccl__needs(n, (const void *)n->CommRevoke, REVOKE_VERSION, "comm_revoke", "ncclCommRevoke"));
    double timeout;
    HN_CHECK(hidet_nccl__timeout_seconds(&timeout));
    char what[96];
    snprintf(what, sizeof what, "ncclCommRevoke of communicator id %d", comm_id);
    ncclResult_t r = n->CommRevoke(slot.comm, NCCL_REVOKE_DEFAULT);
    if (r != ncclSuccess && r != ncclInProgress) return hidet_nccl__nccl_fail(__func__, what, r, slot.comm);
    /* Marked before the wait: whatever the wait finds, no collective may follow. */
    HN_CHECK(hidet_nccl__registry_fail(comm_id, "revoked by hidet_nccl_comm_revoke"));
    ncclComm_t comm = slot.comm;
    return hidet_nccl__await(n, &comm, 1, timeout, 0, what);
}

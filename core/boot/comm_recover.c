/* hidet_nccl_comm_recover: a failed communicator's survivors go on as a new one. The
 * bootstrap it was made over holds a recovery round (its one decider names the survivors, the
 * same on each), then the survivors tell each other whether NCCL can still shrink the old
 * communicator on their side; if every one can, ncclCommShrink drops the lost ranks, else (or
 * with HIDET_NCCL_RECOVER_REBUILD=1) a new communicator is made from a fresh id over the
 * renumbered bootstrap, with the old one's GPU and knobs. */
#include <stdio.h>
#include <stdlib.h>

#include "core/base/log_int.h"
#include "core/base/settings_int.h"
#include "core/base/status_int.h"
#include "core/boot/bootstrap_int.h"
#include "core/boot/bootstrap_recover_int.h"
#include "core/boot/comm_bootstrap_int.h"
#include "core/boot/comm_round_int.h"
#include "core/comm/group_int.h"
#include "core/comm/registry_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"

hidet_nccl_status_t hidet_nccl_comm_recover(int comm_id, double timeout_s, int *new_id, int *n_lost) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(new_id);
    *new_id = -1;
    if (hidet_nccl__group_depth() > 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "comm_recover is not taken inside a group (call it after "
                                                       "hidet_nccl_group_end)");
    double timeout;
    HN_CHECK(hidet_nccl__deadline_seconds(timeout_s, "timeout_s", &timeout));
    int rebuild_only = 0;
    HN_CHECK(hidet_nccl__setting_int(HN_SETTING_RECOVER_REBUILD, &rebuild_only));
    hn_slot_t slot = {0};
    int dead = hidet_nccl__registry_get(comm_id, 1, &slot) != HIDET_NCCL_SUCCESS;
    hn_comm_boot_t b;
    HN_CHECK(hidet_nccl__comm_round_take(comm_id, &slot, dead, &b));
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    ncclResult_t err = ncclSuccess;
    int nccl_says = !dead && n != NULL && hidet_nccl__comm_nccl_error(n, slot.comm, &err);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (b.bs == NULL && b.round_failed)
        st = HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "communicator id %d cannot be recovered: %s", comm_id, b.why);
    else if (b.bs == NULL || b.bs->ops.recover == NULL)
        st = HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED,
                     "communicator id %d was made over bootstrap '%s', which cannot recover after a rank died: %s",
                     comm_id, b.name, b.why);
    else if (!dead && !slot.failed && !nccl_says)
        st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                     "communicator id %d has not failed (NCCL reports no error and collectives are still taken): "
                     "recovery is for a communicator whose peer died or stopped; to drop live ranks, use "
                     "hidet_nccl_comm_shrink",
                     comm_id);
    if (st != HIDET_NCCL_SUCCESS) {
        hidet_nccl__comm_boot_done(comm_id, &b, -2);
        return st;
    }
    char why[160];
    snprintf(why, sizeof why, "NCCL reported %s; hidet_nccl_comm_recover took it", n->GetErrorString(err));
    if (nccl_says && !slot.failed) hidet_nccl__registry_fail(comm_id, why); /* no collective may follow */

    double t0 = hidet_nccl__now();
    unsigned char *kept = NULL;
    int old_size = 0, n_kept = 0, old_rank = -1, unused;
    hidet_nccl__bootstrap_rank(b.bs, &old_rank, &unused);
    st = hidet_nccl__bootstrap_recover(b.bs, timeout, &kept, &old_size, &n_kept);
    if (st != HIDET_NCCL_SUCCESS) {
        hidet_nccl__comm_boot_done(comm_id, &b, -1);
        hidet_nccl__append_error("communicator id %d stays failed: destroy it", comm_id);
        return st;
    }
    double t_round = hidet_nccl__now();
    /* Shrink only where NCCL can on every survivor: its own ranks are the bootstrap's, it has no
     * error of its own (a transport that saw the peer die makes ncclCommShrink refuse). */
    int mine = !dead && !rebuild_only && n->CommShrink != NULL && n->version >= HN_SHRINK_VERSION && !nccl_says &&
               slot.rank == old_rank && slot.nranks == old_size;
    unsigned all = 0;
    double left = timeout - (t_round - t0);
    st = hidet_nccl__comm_agree(b.bs, (unsigned)mine, n_kept, left > 1 ? left : 1, &all);
    all &= 1u;
    double t_agreed = hidet_nccl__now();
    const char *path = st != HIDET_NCCL_SUCCESS ? "agreement" : all ? "shrink" : "rebuild";
    if (st == HIDET_NCCL_SUCCESS && all) {
        int *ex = hidet_nccl__comm_lost_ranks(kept, old_size, old_size - n_kept);
        st = ex == NULL ? HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", old_size - n_kept)
                        : hidet_nccl_comm_shrink(comm_id, old_size - n_kept, ex, HIDET_NCCL_SHRINK_ABORT, new_id);
        free(ex);
    } else if (st == HIDET_NCCL_SUCCESS) {
        hn_knobs_t knobs;
        hidet_nccl__registry_knobs(comm_id, &knobs);
        left = timeout - (t_agreed - t0);
        st = hidet_nccl__comm_init_knobs(b.bs, b.device, left > 1 ? left : 1, &knobs, new_id);
    }
    free(kept);
    if (st != HIDET_NCCL_SUCCESS) {
        hidet_nccl__comm_boot_done(comm_id, &b, -1);
        hidet_nccl__append_error("recovery of communicator id %d failed at its %s; it stays failed: destroy it",
                                 comm_id, path);
        return st;
    }
    hidet_nccl__registry_set_origin(*new_id, comm_id, "recover");
    hidet_nccl__comm_boot_done(comm_id, &b, *new_id);
    snprintf(why, sizeof why, "recovered into communicator id %d by hidet_nccl_comm_recover", *new_id);
    if (!dead) hidet_nccl__registry_fail(comm_id, why);
    double t_end = hidet_nccl__now();
    HN_INFO("comm_recover: communicator id %d went on as id %d by %s (%d of %d ranks lost) in %.3f s: round %.2f ms, "
            "agreement %.2f ms, %s %.2f ms; its registrations of library memory stay with id %d (register the "
            "buffers again on id %d)",
            comm_id, *new_id, path, old_size - n_kept, old_size, t_end - t0, (t_round - t0) * 1e3,
            (t_agreed - t_round) * 1e3, path, (t_end - t_agreed) * 1e3, comm_id, *new_id);
    if (n_lost != NULL) *n_lost = old_size - n_kept;
    return HIDET_NCCL_SUCCESS;
}

/* hidet_nccl_comm_heal: the job whole again. The bootstrap a communicator was made over holds a
 * heal round (its one decider drops the members that died and takes in one restarted process per
 * missing job rank, the same on each); then:
 *   someone taken in   the members and the joiners rebuild: a fresh id over the renumbered
 *                      bootstrap, each member on its old GPU with the old knobs (a joiner's init
 *                      does the same steps: core/boot/comm_init_bootstrap.c);
 *   nobody taken in    the members tell each other whether NCCL is healthy on their side and
 *                      can shrink: nobody lost and every one healthy keeps the communicator;
 *                      someone lost and every one able shrinks it (as recovery does); else rebuild.
 * ncclCommGrow (NCCL 2.29) would keep the members' communicator and add the joiners only where
 * every joiner's job rank is above every member's (grow numbers new ranks after the old ones);
 * the NCCL this library is built and tested with (2.28) has none, so the rebuild is the one path
 * for joiners, and the INFO line says why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/log_int.h"
#include "core/base/settings_int.h"
#include "core/base/status_int.h"
#include "core/boot/bootstrap_heal_int.h"
#include "core/boot/bootstrap_int.h"
#include "core/boot/comm_bootstrap_int.h"
#include "core/boot/comm_joined_int.h"
#include "core/boot/comm_round_int.h"
#include "core/comm/group_int.h"
#include "core/comm/registry_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"

#define CAN_SHRINK 1u
#define HEALTHY 2u

/* Why comm_id's record cannot be healed, or success. */
static hidet_nccl_status_t healable(int comm_id, const hn_comm_boot_t *b) {
    if (b->bs == NULL && b->round_failed)
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "communicator id %d cannot be healed: %s", comm_id, b->why);
    if (b->bs == NULL || b->bs->ops.heal == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED,
                       "communicator id %d was made over bootstrap '%s', which cannot heal (take a restarted rank "
                       "back in): %s",
                       comm_id, b->name,
                       b->bs != NULL && b->bs->ops.heal_unsupported ? b->bs->ops.heal_unsupported
                       : b->heal_why[0]                               ? b->heal_why
                                                                      : "it has no heal");
    return HIDET_NCCL_SUCCESS;
}

/* What the members do with nobody taken in, from their words: "keep", "shrink" or "rebuild". */
static const char *without_joiners(int lost, unsigned all) {
    if (lost == 0 && (all & HEALTHY)) return "keep";
    if (lost > 0 && (all & CAN_SHRINK)) return "shrink";
    return "rebuild";
}

typedef struct {
    int comm_id, dead, rebuild_only, nccl_says;
    hn_slot_t slot;
    hn_comm_boot_t b;
    double t0, timeout;
} heal_t;

/* After the round: the new communicator by the path the round's answer and the members' words
 * give (*path), into *new_id. kept: the old places that went on (old_size entries). */
static hidet_nccl_status_t make_new(heal_t *h, const unsigned char *kept, int old_size, int n_members, int n_joined,
                                    const char **path, int *new_id) {
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    int lost = 0;
    for (int r = 0; r < old_size; r++) lost += !kept[r];
    double left = h->timeout - (hidet_nccl__now() - h->t0);
    *path = "rebuild";
    if (n_joined == 0) { /* only the members are here: they agree on what NCCL can still do */
        unsigned mine = 0;
        if (!h->dead && !h->nccl_says && !h->slot.failed) mine |= HEALTHY;
        if (!h->dead && !h->rebuild_only && !h->nccl_says && n->CommShrink != NULL &&
            n->version >= HN_SHRINK_VERSION && h->slot.nranks == old_size)
            mine |= CAN_SHRINK;
        unsigned all = 0;
        HN_CHECK(hidet_nccl__comm_agree(h->b.bs, mine, n_members, left > 1 ? left : 1, &all));
        *path = without_joiners(lost, all);
    }
    if (strcmp(*path, "keep") == 0) {
        *new_id = h->comm_id;
        return HIDET_NCCL_SUCCESS;
    }
    if (strcmp(*path, "shrink") == 0) {
        int *ex = hidet_nccl__comm_lost_ranks(kept, old_size, lost);
        if (ex == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", lost);
        hidet_nccl_status_t st = hidet_nccl_comm_shrink(h->comm_id, lost, ex, HIDET_NCCL_SHRINK_ABORT, new_id);
        free(ex);
        return st;
    }
    hn_knobs_t knobs;
    hidet_nccl__registry_knobs(h->comm_id, &knobs);
    left = h->timeout - (hidet_nccl__now() - h->t0);
    return hidet_nccl__comm_init_knobs(h->b.bs, h->b.device, left > 1 ? left : 1, &knobs, new_id);
}

/* The round and the new communicator, on a taken record; *how: the path for the flight recorder
 * (a literal: the recorder keeps the pointer). */
static hidet_nccl_status_t heal_taken(heal_t *h, int *new_id, int *n_joined, const char **how) {
    hidet_nccl_bootstrap_h bs = h->b.bs;
    int old_rank, old_size;
    HN_CHECK(hidet_nccl__bootstrap_rank(bs, &old_rank, &old_size));
    int *old_jobs = malloc((size_t)old_size * sizeof *old_jobs);
    unsigned char *kept = calloc((size_t)old_size, 1);
    if (old_jobs == NULL || kept == NULL) {
        free(old_jobs), free(kept);
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", old_size);
    }
    memcpy(old_jobs, bs->job_of, (size_t)old_size * sizeof *old_jobs);
    unsigned char *members = NULL, *joined = NULL;
    int n_members = 0, fresh = 0;
    hidet_nccl_status_t st = hidet_nccl__bootstrap_heal(bs, h->timeout, &members, &joined, &n_members, &fresh);
    double t_round = hidet_nccl__now();
    const char *path = "round";
    if (st == HIDET_NCCL_SUCCESS) {
        for (int r = 0; r < old_size; r++) kept[r] = members[old_jobs[r]];
        st = make_new(h, kept, old_size, n_members, fresh, &path, new_id);
    }
    double t_end = hidet_nccl__now();
    if (st == HIDET_NCCL_SUCCESS && *new_id != h->comm_id) hidet_nccl__comm_joined_set(*new_id, bs, joined);
    if (st == HIDET_NCCL_SUCCESS) {
        int lost = old_size - (n_members - fresh);
        HN_INFO("comm_heal: communicator id %d %s as id %d by %s (%d of %d ranks lost, %d taken in: %d ranks now) in "
                "%.3f s: round %.2f ms, %s %.2f ms%s",
                h->comm_id, *new_id == h->comm_id ? "goes on unchanged" : "is whole again", *new_id, path, lost,
                old_size, fresh, n_members, t_end - h->t0, (t_round - h->t0) * 1e3, path, (t_end - t_round) * 1e3,
                fresh > 0 ? "; joiners take the rebuild (ncclCommGrow, NCCL 2.29, is not used: it numbers new "
                            "ranks after the old ones, and this library's NCCL has none)"
                          : "");
        *n_joined = fresh;
        *how = strcmp(path, "shrink") == 0 ? "heal-shrink" : "heal-rebuild";
    } else if (strcmp(path, "round") != 0) {
        hidet_nccl__append_error("heal of communicator id %d failed at its %s", h->comm_id, path);
    }
    free(old_jobs), free(kept), free(members), free(joined);
    return st;
}

hidet_nccl_status_t hidet_nccl_comm_heal(int comm_id, double timeout_s, int *new_id, int *n_joined) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(new_id);
    *new_id = -1;
    if (n_joined != NULL) *n_joined = 0;
    if (hidet_nccl__group_depth() > 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "comm_heal is not taken inside a group (call it after "
                                                       "hidet_nccl_group_end)");
    heal_t h;
    memset(&h, 0, sizeof h);
    h.comm_id = comm_id;
    HN_CHECK(hidet_nccl__deadline_seconds(timeout_s, "timeout_s", &h.timeout));
    HN_CHECK(hidet_nccl__setting_int(HN_SETTING_RECOVER_REBUILD, &h.rebuild_only));
    h.dead = hidet_nccl__registry_get(comm_id, 1, &h.slot) != HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__comm_round_take(comm_id, &h.slot, h.dead, &h.b));
    hidet_nccl_status_t st = healable(comm_id, &h.b);
    if (st != HIDET_NCCL_SUCCESS) {
        hidet_nccl__comm_boot_done(comm_id, &h.b, -2);
        return st;
    }
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    ncclResult_t err = ncclSuccess;
    h.nccl_says = !h.dead && n != NULL && hidet_nccl__comm_nccl_error(n, h.slot.comm, &err);
    char why[160];
    if (h.nccl_says && !h.slot.failed) {
        snprintf(why, sizeof why, "NCCL reported %s; hidet_nccl_comm_heal took it", n->GetErrorString(err));
        hidet_nccl__registry_fail(comm_id, why); /* no collective may follow */
    }
    h.t0 = hidet_nccl__now();
    int fresh = 0;
    const char *how = "heal-rebuild";
    st = heal_taken(&h, new_id, &fresh, &how);
    if (st == HIDET_NCCL_ERROR_UNSUPPORTED && !h.b.bs->left_out) { /* refused before any round: as it was */
        *new_id = -1;
        hidet_nccl__comm_boot_done(comm_id, &h.b, -2);
        return st;
    }
    if (st != HIDET_NCCL_SUCCESS) {
        *new_id = -1;
        hidet_nccl__comm_boot_done(comm_id, &h.b, -1);
        hidet_nccl__append_error("communicator id %d stays failed: destroy it", comm_id);
        if (!h.dead) hidet_nccl__registry_fail(comm_id, "its heal failed on this rank");
        return st;
    }
    if (*new_id == comm_id) { /* nobody lost, nobody taken in, healthy everywhere: it goes on */
        hidet_nccl__comm_boot_done(comm_id, &h.b, -2);
        return HIDET_NCCL_SUCCESS;
    }
    hidet_nccl__registry_set_origin(*new_id, comm_id, how); /* the flight recorder says the path too */
    hidet_nccl__comm_boot_done(comm_id, &h.b, *new_id);
    snprintf(why, sizeof why, "healed into communicator id %d by hidet_nccl_comm_heal", *new_id);
    if (!h.dead) hidet_nccl__registry_fail(comm_id, why);
    if (n_joined != NULL) *n_joined = fresh;
    return HIDET_NCCL_SUCCESS;
}

/* hidet_nccl_bootstrap_heal: a bootstrap's heal round (plug-in API v4's heal). The backend's
 * decider drops the members that died and takes in one restarted process per missing job rank;
 * here the call is checked (one round at a time, members and joined in the job's numbering,
 * this rank among the members, a joiner among the joined, the backend renumbered to the
 * members) and the tags restart above every earlier round. A member's round that fails leaves
 * the handle for destroy only, as a recovery's does; a backend that refuses at once
 * (HIDET_NCCL_ERROR_UNSUPPORTED: it cannot heal in the way it was started) leaves it as it was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/log_int.h"
#include "core/base/status_int.h"
#include "core/boot/bootstrap_heal_int.h"
#include "core/boot/bootstrap_int.h"

#define BACKEND_MSG 2048

/* Job ranks 0, 2, 5 as "0 2 5" (cut with "..." when long); "none" for none. */
static void list_set(const unsigned char *set, int n, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < n && used + 16 < cap; r++)
        if (set[r]) used += (size_t)snprintf(out + used, cap - used, "%s%d", used ? " " : "", r);
    if (used + 16 >= cap) snprintf(out + cap - 4, 4, "...");
    if (used == 0) snprintf(out, cap, "none");
}

/* What the backend said, held to the contract: this rank kept (a joiner among the joined, a
 * member not), joined within members, the backend's place and size the ones members give. */
static hidet_nccl_status_t check_answer(hidet_nccl_bootstrap_h bs, uint64_t epoch, int was_joining, int me,
                                        unsigned char *members, unsigned char *joined, int *n_members,
                                        int *n_joined) {
    int n = bs->job_size, count = 0, fresh = 0, below = 0;
    for (int r = 0; r < n; r++) {
        members[r] = members[r] != 0;
        joined[r] = joined[r] != 0;
        if (joined[r] && !members[r])
            return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP,
                           "bootstrap '%s' heal round %llu said job rank %d joined but is not a member", bs->ops.name,
                           (unsigned long long)epoch, r);
        count += members[r];
        fresh += joined[r];
        below += r < me && members[r];
    }
    char set[256], news[256];
    list_set(members, n, set, sizeof set);
    list_set(joined, n, news, sizeof news);
    if (!members[me] || joined[me] != was_joining)
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP,
                       "bootstrap '%s' heal round %llu said success to job rank %d (%s) but named members %s and "
                       "joiners %s",
                       bs->ops.name, (unsigned long long)epoch, me, was_joining ? "a joiner" : "a member", set, news);
    int new_rank, new_size;
    HN_CHECK(hidet_nccl__bootstrap_rank(bs, &new_rank, &new_size));
    if (new_rank != below || new_size != count)
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP,
                       "bootstrap '%s' heal round %llu named members %s (job rank %d goes on as %d of %d), but the "
                       "backend says rank %d of %d",
                       bs->ops.name, (unsigned long long)epoch, set, me, below, count, new_rank, new_size);
    *n_members = count;
    *n_joined = fresh;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t round_checked(hidet_nccl_bootstrap_h bs, double timeout, unsigned char *members,
                                         unsigned char *joined, int *n_members, int *n_joined) {
    char msg[BACKEND_MSG] = "";
    int was_joining = bs->joining, rank, size;
    HN_CHECK(hidet_nccl__bootstrap_rank(bs, &rank, &size));
    int me = bs->job_of[rank];
    uint64_t epoch = was_joining ? 0 : bs->epoch + 1;
    double t0 = hidet_nccl__now();
    hidet_nccl_status_t st = bs->ops.heal(bs->state, &epoch, timeout / 2, timeout, members, joined, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) {
        msg[BACKEND_MSG - 1] = '\0';
        return HN_FAIL(st, "bootstrap '%s' heal round %s%llu (job rank %d of %d, %s) failed after %.3f s: %s",
                       bs->ops.name, was_joining && epoch == 0 ? "(the next) " : "", (unsigned long long)epoch, me,
                       bs->job_size, was_joining ? "a restarted rank joining" : "a member", hidet_nccl__now() - t0,
                       msg[0] ? msg : hidet_nccl_status_string(st));
    }
    if (epoch <= bs->epoch || (!was_joining && epoch != bs->epoch + 1))
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "bootstrap '%s' heal round: the backend said round %llu after %llu",
                       bs->ops.name, (unsigned long long)epoch, (unsigned long long)bs->epoch);
    HN_CHECK(check_answer(bs, epoch, was_joining, me, members, joined, n_members, n_joined));
    bs->epoch = epoch;
    bs->next_tag = epoch << 32;
    bs->joining = 0;
    hidet_nccl__bootstrap_renumber_members(bs, members);
    int now = 0;
    for (int r = 0; r < me; r++) now += members[r];
    char set[256], news[256];
    list_set(members, bs->job_size, set, sizeof set);
    list_set(joined, bs->job_size, news, sizeof news);
    HN_INFO("bootstrap '%s' heal round %llu: job ranks %s go on (%d of %d), joined: %s; this is job rank %d (%s), now "
            "rank %d of %d, in %.3f s",
            bs->ops.name, (unsigned long long)epoch, set, *n_members, bs->job_size, news, me,
            was_joining ? "taken in" : "a member", now, *n_members, hidet_nccl__now() - t0);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__bootstrap_heal(hidet_nccl_bootstrap_h bs, double timeout, unsigned char **members,
                                               unsigned char **joined, int *n_members, int *n_joined) {
    *members = *joined = NULL;
    if (bs->left_out) return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "%s", bs->left_why);
    if (bs->ops.heal == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED, "bootstrap '%s' cannot heal (take a restarted rank back in): %s",
                       bs->ops.name, bs->ops.heal_unsupported ? bs->ops.heal_unsupported : "it has no heal");
    for (;;) { /* a look of peer_lost on another thread is short: waited for; another round is refused */
        int was = 0;
        if (atomic_compare_exchange_strong(&bs->busy, &was, HN_BS_ROUND)) break;
        if (was != HN_BS_PROBE)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                           "a recovery or heal round of bootstrap '%s' is under way on another thread: one round at a "
                           "time",
                           bs->ops.name);
        usleep(100);
    }
    int was_joining = bs->joining;
    unsigned char *m = calloc((size_t)bs->job_size, 1), *j = calloc((size_t)bs->job_size, 1);
    hidet_nccl_status_t st = m && j ? round_checked(bs, timeout, m, j, n_members, n_joined)
                                    : HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", bs->job_size);
    if (st == HIDET_NCCL_ERROR_UNSUPPORTED) { /* refused before any round (the socket rendezvous in rank 0) */
        free(m), free(j);
    } else if (st != HIDET_NCCL_SUCCESS) {
        bs->left_out = 1;
        snprintf(bs->left_why, sizeof bs->left_why,
                 "bootstrap '%s' is out of use since its heal round failed on this rank (job rank %d of %d, %s): "
                 "destroy it",
                 bs->ops.name, bs->job_rank, bs->job_size, was_joining ? "a restarted rank joining" : "a member");
        free(m), free(j);
    } else {
        *members = m;
        *joined = j;
    }
    atomic_store(&bs->busy, 0);
    return st;
}

hidet_nccl_status_t hidet_nccl_bootstrap_heal(hidet_nccl_bootstrap_h bs, double timeout_s, int *members, int *joined,
                                              int *n_members, int *n_joined) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    double timeout;
    HN_CHECK(hidet_nccl__deadline_seconds(timeout_s, "timeout_s", &timeout));
    unsigned char *m, *j;
    int nm, nj;
    HN_CHECK(hidet_nccl__bootstrap_heal(bs, timeout, &m, &j, &nm, &nj));
    for (int r = 0; r < bs->job_size; r++) {
        if (members != NULL) members[r] = m[r];
        if (joined != NULL) joined[r] = j[r];
    }
    if (n_members != NULL) *n_members = nm;
    if (n_joined != NULL) *n_joined = nj;
    free(m), free(j);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_bootstrap_joining(hidet_nccl_bootstrap_h bs, int *joining) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    HN_CHECK_NOT_NULL(joining);
    *joining = bs->joining;
    return HIDET_NCCL_SUCCESS;
}

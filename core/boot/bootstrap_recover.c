/* hidet_nccl_bootstrap_recover: a bootstrap's recovery round (plug-in API v3's recover). The
 * backend's decider names the survivors; here the call is checked (one round at a time, the
 * same set back, this rank in it, the backend renumbered to it) and the tags restart above
 * every earlier round. A round that fails leaves the handle for destroy only: whether the
 * others went on without this rank cannot be known from here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/log_int.h"
#include "core/base/status_int.h"
#include "core/boot/bootstrap_int.h"
#include "core/boot/bootstrap_recover_int.h"

#define BACKEND_MSG 2048

/* Ranks 0, 2, 5 of 6 as "0 2 5" (cut with "..." when long). */
static void list_kept(const unsigned char *kept, int size, char *out, size_t n) {
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < size && used + 16 < n; r++)
        if (kept[r]) used += (size_t)snprintf(out + used, n - used, "%s%d", used ? " " : "", r);
    if (used + 16 >= n) snprintf(out + n - 4, 4, "...");
}

static hidet_nccl_status_t round_checked(hidet_nccl_bootstrap_h bs, double timeout, unsigned char *kept, int size,
                                         int rank, int *n_kept) {
    char msg[BACKEND_MSG] = "";
    uint64_t epoch = bs->epoch + 1;
    double t0 = hidet_nccl__now();
    hidet_nccl_status_t st = bs->ops.recover(bs->state, epoch, timeout / 2, timeout, kept, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) {
        msg[BACKEND_MSG - 1] = '\0';
        return HN_FAIL(st, "bootstrap '%s' recovery round %llu (rank %d of %d) failed after %.3f s: %s", bs->ops.name,
                       (unsigned long long)epoch, rank, size, hidet_nccl__now() - t0,
                       msg[0] ? msg : hidet_nccl_status_string(st));
    }
    int n = 0, below = 0;
    for (int r = 0; r < size; r++) {
        if (kept[r] > 1) kept[r] = 1;
        n += kept[r];
        below += r < rank && kept[r];
    }
    char set[256];
    list_kept(kept, size, set, sizeof set);
    if (!kept[rank])
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP,
                       "bootstrap '%s' recovery round %llu said success to rank %d but named ranks %s without it",
                       bs->ops.name, (unsigned long long)epoch, rank, set);
    int new_rank, new_size;
    HN_CHECK(hidet_nccl__bootstrap_rank(bs, &new_rank, &new_size));
    if (new_rank != below || new_size != n)
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP,
                       "bootstrap '%s' recovery round %llu named ranks %s (old rank %d goes on as %d of %d), but the "
                       "backend says rank %d of %d",
                       bs->ops.name, (unsigned long long)epoch, set, rank, below, n, new_rank, new_size);
    bs->epoch = epoch;
    bs->next_tag = epoch << 32;
    hidet_nccl__bootstrap_renumber_kept(bs, kept, size);
    HN_INFO("bootstrap '%s' recovery round %llu: old ranks %s go on (%d of %d; this was rank %d, now %d) in %.3f s",
            bs->ops.name, (unsigned long long)epoch, set, n, size, rank, below, hidet_nccl__now() - t0);
    *n_kept = n;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__bootstrap_recover(hidet_nccl_bootstrap_h bs, double timeout, unsigned char **kept,
                                                  int *old_size, int *n_kept) {
    *kept = NULL;
    if (bs->left_out) return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "%s", bs->left_why);
    if (bs->joining)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "bootstrap '%s' joins a job that goes on without it (a restarted rank %d of %d): it takes a heal "
                       "round (hidet_nccl_bootstrap_heal, or hidet_nccl_comm_init), not a recovery round",
                       bs->ops.name, bs->job_rank, bs->job_size);
    if (bs->ops.recover == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED, "bootstrap '%s' cannot recover after a rank died: %s",
                       bs->ops.name, bs->ops.recover_unsupported ? bs->ops.recover_unsupported : "it has no recover");
    for (;;) { /* a look of peer_lost on another thread is short: waited for; another round is refused */
        int was = 0;
        if (atomic_compare_exchange_strong(&bs->busy, &was, HN_BS_ROUND)) break;
        if (was != HN_BS_PROBE)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                           "a recovery round of bootstrap '%s' is under way on another thread: one round at a time",
                           bs->ops.name);
        usleep(100);
    }
    int rank, size;
    hidet_nccl_status_t st = hidet_nccl__bootstrap_rank(bs, &rank, &size);
    unsigned char *k = st == HIDET_NCCL_SUCCESS ? calloc((size_t)size, 1) : NULL;
    if (st == HIDET_NCCL_SUCCESS && k == NULL)
        st = HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", size);
    if (st == HIDET_NCCL_SUCCESS) {
        st = round_checked(bs, timeout, k, size, rank, n_kept);
        if (st != HIDET_NCCL_SUCCESS) {
            bs->left_out = 1;
            snprintf(bs->left_why, sizeof bs->left_why,
                     "bootstrap '%s' is out of use since its recovery round %llu failed on this rank (old rank %d of "
                     "%d): destroy it",
                     bs->ops.name, (unsigned long long)(bs->epoch + 1), rank, size);
        }
    }
    if (st == HIDET_NCCL_SUCCESS) {
        *kept = k;
        *old_size = size;
    } else {
        free(k);
    }
    atomic_store(&bs->busy, 0);
    return st;
}

hidet_nccl_status_t hidet_nccl_bootstrap_recover(hidet_nccl_bootstrap_h bs, double timeout_s, int *kept, int *n_kept) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    double timeout;
    HN_CHECK(hidet_nccl__deadline_seconds(timeout_s, "timeout_s", &timeout));
    unsigned char *k;
    int size, n;
    HN_CHECK(hidet_nccl__bootstrap_recover(bs, timeout, &k, &size, &n));
    for (int r = 0; kept != NULL && r < size; r++) kept[r] = k[r];
    if (n_kept != NULL) *n_kept = n;
    free(k);
    return HIDET_NCCL_SUCCESS;
}

int hidet_nccl__bootstrap_probe(hidet_nccl_bootstrap_h bs, char *why, size_t why_bytes) {
    int was = 0;
    if (bs->left_out || bs->ops.peer_lost == NULL || !atomic_compare_exchange_strong(&bs->busy, &was, HN_BS_PROBE))
        return 0;
    why[0] = '\0';
    int news = bs->ops.peer_lost(bs->state, why, why_bytes) == 1;
    why[why_bytes - 1] = '\0';
    atomic_store(&bs->busy, 0);
    return news;
}

hidet_nccl_status_t hidet_nccl_bootstrap_news(hidet_nccl_bootstrap_h bs, int *recovering) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    HN_CHECK_NOT_NULL(recovering);
    *recovering = 0;
    if (bs->left_out) return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "%s", bs->left_why);
    char why[BACKEND_MSG] = "";
    *recovering = hidet_nccl__bootstrap_probe(bs, why, sizeof why);
    if (*recovering) HN_INFO("bootstrap '%s': %s", bs->ops.name, why);
    return HIDET_NCCL_SUCCESS;
}

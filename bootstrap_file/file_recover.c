/* The shared-file bootstrap's recovery round: joins, one decider, one decision (file_recover_int.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_joins_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_presence_int.h"
#include "bootstrap_file/file_recover_int.h"
#include "bootstrap_file/file_sweep_int.h"

/* Step 2, the decider: the decision (this rank and every rank that joined and lives) put where
 * none is. 0 put (*file, *len: the bytes put, the caller frees), 1 another decision is there,
 * -1 failed (msg). */
static int put_decision(hn_bf_joins_t *x, uint8_t **file, size_t *len, char *msg, size_t n) {
    hn_bf_state_t *s = x->s;
    size_t cap = HN_BF_HEADER + HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * x->n + HN_BF_MAC + 4;
    hidet_nccl__bf_member_t *m = calloc((size_t)x->n, sizeof *m);
    *file = malloc(cap);
    char why[768] = "";
    int rc = -1;
    if (m == NULL || *file == NULL) {
        hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for a decision of %d ranks", x->n);
    } else {
        hn_bf_peer_t *known = calloc((size_t)x->n, sizeof *known);
        if (known != NULL) hidet_nccl__bf_joins_known(x, known); /* a rank not kept: as known (the tidying judges it) */
        for (int q = 0; q < x->n; q++) {
            m[q].kept = q == x->me || (x->joined[q] && !x->dead[q]);
            m[q].pid = q == x->me ? (uint32_t)getpid() : known != NULL ? known[q].pid : 0;
            snprintf(m[q].host, sizeof m[q].host, "%s", q == x->me ? s->host : known != NULL ? known[q].host : "");
            if (m[q].kept) memcpy(m[q].nonce, q == x->me ? x->nonce : x->joins[q].nonce, HN_BF_NONCE);
        }
        free(known);
        *len = hidet_nccl__bf_encode_decision(*file, cap, s->key, hidet_nccl__bf_recovery_seq(s, x->epoch),
                                              (uint32_t)x->n, (uint32_t)x->me, x->epoch, m, s->secret_len > 0);
        if (*len == 0 || hidet_nccl__bf_seal(s, *file, *len, why, sizeof why) != 0)
            hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not make the decision of recovery "
                            "round %llu: %s", x->me, (unsigned long long)x->epoch, *len ? why : "it does not fit");
        else if ((rc = hidet_nccl__bf_publish_new(x->decision_path, *file, *len, NULL, why, sizeof why)) < 0)
            hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not put the decision of recovery "
                            "round %llu: %s", x->me, (unsigned long long)x->epoch, why);
    }
    free(m);
    if (rc != 0) {
        free(*file);
        *file = NULL;
    }
    return rc;
}

/* Step 3, this rank named: the round noted for the tidying, the bootstrap renumbered to the ranks
 * kept, this rank's join removed (taken); the new rank 0 sweeps what earlier epochs left. */
static hidet_nccl_status_t go_on(hn_bf_joins_t *x, const hidet_nccl__bf_msg_t *m, unsigned char *kept, char *msg, size_t n) {
    hn_bf_state_t *s = x->s;
    int count = (int)m->kept_count, rank = 0, local = 0, local_rank = 0;
    hn_bf_peer_t *peers = calloc((size_t)count, sizeof *peers), *old = calloc((size_t)x->n, sizeof *old);
    int *job_of = malloc(sizeof *job_of * (size_t)count);
    if (peers == NULL || old == NULL || job_of == NULL) {
        free(peers);
        free(old);
        free(job_of);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory renumbering %d ranks", count);
    }
    hidet_nccl__bf_joins_known(x, old);
    hidet_nccl__bf_round_note(s, x->epoch, x->n, x->me, m, old);
    for (int q = 0, i = 0; q < x->n; q++) {
        hidet_nccl__bf_member_t p;
        hidet_nccl__bf_member(m, (uint32_t)q, &p);
        kept[q] = (unsigned char)p.kept;
        if (!p.kept) continue;
        if (q < x->me) rank++;
        if (strcmp(p.host, s->host) == 0) {
            local_rank += q < x->me;
            local++;
        }
        peers[i].pid = p.pid;
        job_of[i] = s->job_of[q];
        snprintf(peers[i++].host, sizeof peers[0].host, "%s", p.host);
    }
    free(old);
    free(s->peers);
    free(s->job_of);
    s->peers = peers;
    s->job_of = job_of;
    s->rank = rank;
    s->nranks = count;
    s->local_rank = local_rank;
    s->local_size = local;
    s->epoch = x->epoch;
    hidet_nccl__bf_joins_withdraw(x, NULL); /* taken */
    if (rank == 0) hidet_nccl__bf_sweep(s, x->epoch);
    return HIDET_NCCL_SUCCESS;
}

/* The round failed or left this rank out: it is out of it, and says so with its mark (its join
 * renamed), so that the round's files need not wait for it; the round is noted (decision m, or
 * NULL when none was seen) for its tidying at finalize. */
static void out_of_round(hn_bf_joins_t *x, const hidet_nccl__bf_msg_t *m) {
    hn_bf_peer_t *old = calloc((size_t)x->n, sizeof *old);
    hidet_nccl__bf_joins_withdraw(x, HN_BF_MARK_LEFTOUT);
    x->left_out = 1;
    if (old == NULL) return;
    hidet_nccl__bf_joins_known(x, old);
    hidet_nccl__bf_round_note(x->s, x->epoch, x->n, x->me, m, old);
    free(old);
}

/* Step 3: the decision m, read or put. Named with this join's nonce: go on; else left out. */
static hidet_nccl_status_t take(hn_bf_joins_t *x, const hidet_nccl__bf_msg_t *m, unsigned char *kept, char *msg, size_t n) {
    hidet_nccl__bf_member_t mine;
    hidet_nccl__bf_member(m, (uint32_t)x->me, &mine);
    if (mine.kept && memcmp(mine.nonce, x->nonce, HN_BF_NONCE) == 0) return go_on(x, m, kept, msg, n);
    unsigned char *flags = calloc((size_t)x->n, 1);
    char set[200] = "(out of memory listing them)";
    for (int q = 0; flags != NULL && q < x->n; q++) {
        hidet_nccl__bf_member_t p;
        hidet_nccl__bf_member(m, (uint32_t)q, &p);
        flags[q] = (unsigned char)p.kept;
    }
    if (flags != NULL) hidet_nccl__bf_list_ranks(flags, x->n, 0, set, sizeof set);
    free(flags);
    out_of_round(x, m); /* it knows: the decision need not wait for it */
    if (mine.kept)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d (of %d) was left out of recovery round %llu: the decision %s of rank %d names "
                               "another process as rank %d (pid %u on host '%s'): two processes ran as this rank, or "
                               "a job with this key left it; ranks %s went on (numbered as before the round)",
                               x->me, x->n, (unsigned long long)x->epoch, x->decision_path, m->rank, x->me, mine.pid,
                               mine.host, set);
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                           "rank %d (of %d) was left out of recovery round %llu: rank %d decided (%s) that ranks %s go "
                           "on (numbered as before the round), before this rank joined or without counting it; this "
                           "bootstrap can only be destroyed now", x->me, x->n, (unsigned long long)x->epoch, m->rank,
                           x->decision_path, set);
}

/* 1 if the decision m keeps this rank with this very join's nonce. */
static int named(const hn_bf_joins_t *x, const hidet_nccl__bf_msg_t *m) {
    hidet_nccl__bf_member_t mine;
    hidet_nccl__bf_member(m, (uint32_t)x->me, &mine);
    return mine.kept && memcmp(mine.nonce, x->nonce, HN_BF_NONCE) == 0;
}

/* A decision at this round's place that does not keep this join: if an ended job left it (a
 * process of this host that is gone for each rank it keeps; for a decision that could be this
 * job's, processes other than the ones this round knows), it is removed, said, and 1 returned.
 * (Files of ended jobs usually went when the bootstrap was made: file_sweep.c.) */
static int drop_stale(hn_bf_joins_t *x) {
    uint8_t *data;
    size_t len;
    hidet_nccl__bf_msg_t m;
    char why[768];
    if (!hidet_nccl__bf_record_read_any(x->s, x->decision_path, HN_BF_KIND_DECISION, &data, &len, &m)) return 0;
    int ours = m.seq == hidet_nccl__bf_recovery_seq(x->s, x->epoch) && m.epoch == x->epoch &&
               m.world_size == (uint32_t)x->n &&
               hidet_nccl__bf_mac_ok(x->s, data, &m, "its decider", why, sizeof why) == 0;
    hn_bf_peer_t *known = calloc((size_t)x->n, sizeof *known);
    int stale = known != NULL && !(ours && named(x, &m));
    if (stale) hidet_nccl__bf_joins_known(x, known);
    stale = stale && hidet_nccl__bf_decision_stale(known, x->n, x->me, &m,
                                                   ours ? HN_BF_STALE_THIS_ROUND : HN_BF_STALE_FOREIGN) &&
            hidet_nccl__bf_remove_if_same(x->decision_path, data, len);
    if (stale)
        HN_WARN("recovery round %llu, rank %d: %s is a decision left by an ended job with job key '%s' (every process "
                "it keeps is gone from this host%s): stale, removed", (unsigned long long)x->epoch, x->me,
                x->decision_path, x->s->key, ours ? ", and is not the one this job knows as that rank" : "");
    free(known);
    free(data);
    return stale;
}

/* Steps 2 and 3 until the decision is taken or the deadline passes. */
static hidet_nccl_status_t await_decision(hn_bf_joins_t *x, unsigned char *kept, char *msg, size_t n) {
    hn_bf_state_t *s = x->s;
    char why[1024], awaited[512] = "the decision";
    int last_look = 0;
    for (;;) {
        uint8_t *data = NULL;
        hidet_nccl__bf_msg_t m;
        int got = hidet_nccl__bf_decision_read(s, x->epoch, (uint32_t)x->n, &data, &m, why, sizeof why);
        if (got == 1 && !named(x, &m) && drop_stale(x)) { /* an ended job's, removed: look again */
            free(data);
            continue;
        }
        if (got == 1) {
            hidet_nccl_status_t st = take(x, &m, kept, msg, n);
            free(data);
            return st;
        }
        if (got == 3) free(data);
        if (got != 0 && got != 1 && drop_stale(x)) continue; /* an ended job's, removed */
        if (got == 3) /* nobody may replace it: exactly one decision is ever put */
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d, recovery round %llu: %s: two jobs use job key '%s' in %s at once? Give "
                                   "each job its own key", x->me, (unsigned long long)x->epoch, why, s->key, s->dir);
        if (got < 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d, recovery round %llu: %s; no decision can be put while it is there: "
                                   "remove it and start the job again", x->me, (unsigned long long)x->epoch, why);
        if (hidet_nccl__poll_expired(&x->poll)) {
            /* a process stopped or not run past its deadline since its last look: the decision
             * may have come meanwhile (and keep it); one more look before it fails */
            if (last_look++) break;
            continue;
        }
        double waited = hidet_nccl__poll_waited(&x->poll);
        int below = hidet_nccl__bf_joins_scan(x, waited);
        if (below >= 0 || !hidet_nccl__bf_joins_ready(x, waited)) {
            hidet_nccl__bf_joins_awaited(x, below, awaited, sizeof awaited);
        } else {
            uint64_t later = 0;
            if (hidet_nccl__bf_joins_superseded(x, &later)) {
                hidet_nccl__bf_joins_withdraw(x, NULL);
                x->left_out = 1;
                return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                       "rank %d (of %d) was left out of recovery round %llu: the job went on to recovery "
                                       "round %llu without it (its files are in %s)", x->me, x->n,
                                       (unsigned long long)x->epoch, (unsigned long long)later, s->dir);
            }
            uint8_t *file;
            size_t len;
            int put = put_decision(x, &file, &len, msg, n);
            if (put < 0) return HIDET_NCCL_ERROR_BOOTSTRAP;
            if (put == 0) {
                char inner[384];
                hidet_nccl_status_t st =
                    hidet_nccl__bf_parse(file, len, &m, inner, sizeof inner) == 0
                        ? take(x, &m, kept, msg, n)
                        : hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "its own decision: %s", inner);
                free(file);
                return st;
            }
            continue; /* another rank's decision came first: take it */
        }
        hidet_nccl__poll_pause(&x->poll);
    }
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                           "rank %d (of %d) waited %.1f s in recovery round %llu (job key '%s' in %s) %s%s%s", x->me,
                           x->n, hidet_nccl__poll_waited(&x->poll), (unsigned long long)x->epoch, s->key, s->dir,
                           awaited, x->last[0] ? "; last problem: " : "", x->last);
}

/* The round failed here (its deadline, a file refused): this rank is out of it (its mark), and
 * the round is noted with its decision if one is there now (this job's), for the tidying. */
static void failed_round(hn_bf_joins_t *x) {
    uint8_t *data = NULL;
    hidet_nccl__bf_msg_t m;
    char why[768];
    int got = hidet_nccl__bf_decision_read(x->s, x->epoch, (uint32_t)x->n, &data, &m, why, sizeof why);
    out_of_round(x, got == 1 ? &m : NULL);
    if (got == 1 || got == 3) free(data);
}

hidet_nccl_status_t hidet_nccl__bf_recover(void *state, uint64_t epoch, double wait_s, double timeout_s,
                                           unsigned char *kept, char *msg, size_t msg_bytes) {
    hn_bf_state_t *s = state;
    if (epoch != s->epoch + 1 || epoch > HN_BF_MAX_EPOCH)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "recovery round %llu asked of a bootstrap whose next round is %llu (at most %u rounds)",
                               (unsigned long long)epoch, (unsigned long long)(s->epoch + 1), HN_BF_MAX_EPOCH);
    if (s->nranks == 1) { /* alone: nothing to agree on, no file */
        kept[0] = 1;
        s->epoch = epoch;
        return HIDET_NCCL_SUCCESS;
    }
    hn_bf_joins_t x;
    hidet_nccl_status_t st = hidet_nccl__bf_joins_begin(&x, s, "recovery", epoch, wait_s, timeout_s, msg, msg_bytes);
    if (st != HIDET_NCCL_SUCCESS) return st;
    st = await_decision(&x, kept, msg, msg_bytes);
    if (st != HIDET_NCCL_SUCCESS && !x.left_out) failed_round(&x); /* no decider counts it now */
    hidet_nccl__bf_joins_end(&x);
    return st;
}

/* The shared-file bootstrap's heal round: members' joins, joiners' requests, one decider, one
 * heal decision in the job's numbering (file_heal_int.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_heal_int.h"
#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_joins_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_presence_int.h"
#include "bootstrap_file/file_request_int.h"
#include "bootstrap_file/file_sweep_int.h"

#define ASK_VALID 1  /* a request of this job, of a live process (or of another host) */
#define ASK_CHECKS 2 /* refused: it failed its checks */

/* A request in the directory, as the decider last judged it. */
typedef struct {
    char path[HN_BF_PATH_BYTES + 300];
    int rank, verdict;
    uint8_t id[HN_BF_REQUEST_ID];
    hn_bf_request_t q;
    char why[768];
} ask_t;

/* A member's heal round. */
typedef struct {
    hn_bf_joins_t x;
    int job_size, job_me; /* the job's size, this member's job rank */
    int *place_of;        /* job_size: each job rank's rank before the round, or -1 */
    ask_t *asks;          /* the requests of this key and generation, at the decider's last look */
    int n_asks, cap_asks;
} heal_t;

/* "0 2 5" of the flags whose bit is set in a heal decision (job numbering). */
static void list_flags(const hidet_nccl__bf_msg_t *m, unsigned bit, char *out, size_t cap) {
    unsigned char *set = calloc(m->world_size, 1);
    if (set == NULL) {
        snprintf(out, cap, "?");
        return;
    }
    for (uint32_t j = 0; j < m->world_size; j++) {
        hidet_nccl__bf_member_t p;
        hidet_nccl__bf_member(m, j, &p);
        set[j] = (p.flags & bit) != 0;
    }
    hidet_nccl__bf_list_ranks(set, (int)m->world_size, 0, out, cap);
    free(set);
}

/* After a heal decision m that keeps job rank jr: this bootstrap's numbering is the kept ranks in
 * job order (their processes, their job ranks, this host's among them), its epoch the round's;
 * members and joined (job size entries) say who. */
static hidet_nccl_status_t renumber(hn_bf_state_t *s, const hidet_nccl__bf_msg_t *m, int jr, uint64_t epoch,
                                    unsigned char *members, unsigned char *joined, char *msg, size_t n) {
    int count = (int)m->kept_count, rank = 0, local = 0, local_rank = 0;
    hn_bf_peer_t *peers = calloc((size_t)count, sizeof *peers);
    int *job_of = malloc(sizeof *job_of * (size_t)count);
    if (peers == NULL || job_of == NULL) {
        free(peers);
        free(job_of);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory renumbering %d ranks", count);
    }
    for (int j = 0, i = 0; j < (int)m->world_size; j++) {
        hidet_nccl__bf_member_t p;
        hidet_nccl__bf_member(m, (uint32_t)j, &p);
        members[j] = (unsigned char)p.kept;
        joined[j] = (p.flags & HN_BF_HEAL_JOINED) != 0;
        if (!p.kept || i >= count) continue;
        rank += j < jr;
        if (strcmp(p.host, s->host) == 0) {
            local_rank += j < jr;
            local++;
        }
        peers[i].pid = p.pid;
        snprintf(peers[i].host, sizeof peers[i].host, "%s", p.host);
        job_of[i++] = j;
    }
    free(s->peers);
    free(s->job_of);
    s->peers = peers;
    s->job_of = job_of;
    s->rank = rank;
    s->nranks = count;
    s->local_rank = local_rank;
    s->local_size = local;
    s->epoch = epoch;
    return HIDET_NCCL_SUCCESS;
}

/* ---------------------------------------------------------------- the decider's look at the requests */

/* Every request of this key and generation in the directory, judged (one listing): valid (a
 * live process's, or of another host), or refused for its checks; one of a process of this host
 * that is gone is stale: removed (said at INFO), not kept. */
static void look_requests(heal_t *h) {
    hn_bf_state_t *s = h->x.s;
    h->n_asks = 0;
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    uint64_t seq0 = hidet_nccl__bf_recovery_seq(s, 0);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        uint64_t seq;
        int r, tmp, kind = hidet_nccl__bf_name_kind(s->key, e->d_name, &seq, &r, &tmp);
        if (kind != HN_BF_NAME_REQUEST || tmp || seq != seq0) continue;
        if (h->n_asks == h->cap_asks) {
            int cap = h->cap_asks ? 2 * h->cap_asks : 8;
            ask_t *more = realloc(h->asks, sizeof *more * (size_t)cap);
            if (more == NULL) break;
            h->asks = more;
            h->cap_asks = cap;
        }
        ask_t *a = &h->asks[h->n_asks];
        snprintf(a->path, sizeof a->path, "%s/%s", s->dir, e->d_name);
        a->rank = r;
        a->why[0] = '\0';
        if (hidet_nccl__bf_request_name_id(s->key, e->d_name, a->id) != 0) continue;
        struct stat before, after;
        if (lstat(a->path, &before) != 0) continue;
        int got = -1;
        if (r < h->job_size)
            got = hidet_nccl__bf_request_read(s, a->path, r, a->id, &a->q, a->why, sizeof a->why);
        else /* refused, as a request of no rank of this job (not listed in the decision) */
            snprintf(a->why, sizeof a->why, "%s: a request for job rank %d of a job of %d ranks; refused", a->path, r,
                     h->job_size), a->rank = -1;
        if (got == 0) continue; /* gone since */
        if ((got == 1 || got == 3) && hidet_nccl__bf_process_gone(a->q.pid, a->q.host)) {
            if (lstat(a->path, &after) == 0 && hidet_nccl__bf_same_file(&before, &after) && unlink(a->path) == 0)
                HN_INFO("heal round %llu, job rank %d (decider): %s is the request of pid %u on this host for job rank "
                        "%d, which is gone (it died waiting): stale, removed", (unsigned long long)h->x.epoch,
                        h->job_me, a->path, a->q.pid, r);
            continue;
        }
        a->verdict = got == 1 ? ASK_VALID : ASK_CHECKS;
        h->n_asks++;
    }
    closedir(d);
}

/* The request taken in for job rank j (-1: none): the valid one put first (then by nonce). */
static int first_ask(const heal_t *h, int j) {
    int best = -1;
    for (int i = 0; i < h->n_asks; i++) {
        const ask_t *a = &h->asks[i];
        if (a->rank != j || a->verdict != ASK_VALID) continue;
        if (best < 0 || a->q.asked_ms < h->asks[best].q.asked_ms ||
            (a->q.asked_ms == h->asks[best].q.asked_ms && memcmp(a->q.nonce, h->asks[best].q.nonce, HN_BF_NONCE) < 0))
            best = i;
    }
    return best;
}

/* 1 if place q's member (not joined) is a process of this host that lives: it is alive and left
 * out, and a request for its rank is a second process. */
static int alive_here(const heal_t *h, int q) {
    const hn_bf_peer_t *p = &h->x.s->peers[q];
    return p->pid != 0 && strcmp(p->host, h->x.s->host) == 0 && !hidet_nccl__bf_process_gone(p->pid, p->host);
}

/* 1 if member q goes on: this rank, or one that joined and is not known dead. */
static int kept_member(const heal_t *h, int q) { return q == h->x.me || (h->x.joined[q] && !h->x.dead[q]); }

/* Every job rank is a member not known dead or has a valid request. */
static int every_rank_asked(heal_t *h, char *missing, size_t cap) {
    unsigned char *flag = calloc((size_t)h->job_size, 1);
    int all = 1;
    for (int j = 0; j < h->job_size; j++) {
        int q = h->place_of[j];
        if ((q >= 0 && !h->x.dead[q]) || first_ask(h, j) >= 0) continue;
        all = 0;
        if (flag != NULL) flag[j] = 1;
    }
    if (flag != NULL) hidet_nccl__bf_list_ranks(flag, h->job_size, 0, missing, cap);
    free(flag);
    return all;
}

/* ---------------------------------------------------------------- the decision */

/* The decider's heal decision put where none is: 0 put (*file, *len: the caller frees), 1 another
 * decision is there, -1 failed (msg). Each refusal said at WARN. */
static int put_heal(heal_t *h, uint8_t **file, size_t *len, char *msg, size_t n) {
    hn_bf_joins_t *x = &h->x;
    hn_bf_state_t *s = x->s;
    hidet_nccl__bf_member_t *m = calloc((size_t)h->job_size, sizeof *m);
    hidet_nccl__bf_refusal_t *refused = calloc(HN_BF_MAX_REFUSALS, sizeof *refused);
    hn_bf_peer_t *known = calloc((size_t)x->n, sizeof *known);
    size_t cap = HN_BF_HEADER + HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * h->job_size + 4 +
                 (size_t)HN_BF_REFUSAL * HN_BF_MAX_REFUSALS + HN_BF_MAC + 4;
    *file = malloc(cap);
    int rc = -1;
    uint32_t n_refused = 0;
    char why[768] = "";
    if (m == NULL || refused == NULL || known == NULL || *file == NULL) {
        hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for a heal decision of %d ranks", h->job_size);
        goto done;
    }
    hidet_nccl__bf_joins_known(x, known);
    for (int j = 0; j < h->job_size; j++) {
        int q = h->place_of[j], live = 0, take = -1;
        if (q >= 0) {
            m[j].flags = HN_BF_HEAL_BEFORE;
            if (kept_member(h, q)) {
                m[j].flags |= HN_BF_HEAL_KEPT;
                live = 1;
                memcpy(m[j].nonce, q == x->me ? x->nonce : x->joins[q].nonce, HN_BF_NONCE);
                m[j].pid = q == x->me ? (uint32_t)getpid() : x->joins[q].pid;
                snprintf(m[j].host, sizeof m[j].host, "%s", q == x->me ? s->host : x->joins[q].host);
            } else {
                live = alive_here(h, q); /* left out, alive: no other process may take its rank */
                m[j].pid = known[q].pid;
                snprintf(m[j].host, sizeof m[j].host, "%s", known[q].host);
            }
        }
        if (!live && (take = first_ask(h, j)) >= 0) {
            const ask_t *a = &h->asks[take];
            m[j].flags |= HN_BF_HEAL_KEPT | HN_BF_HEAL_JOINED;
            memcpy(m[j].nonce, a->q.nonce, HN_BF_NONCE);
            m[j].pid = a->q.pid;
            snprintf(m[j].host, sizeof m[j].host, "%s", a->q.host);
        }
        for (int i = 0; i < h->n_asks; i++) { /* every other request for this rank: refused */
            const ask_t *a = &h->asks[i];
            if (a->rank != j || i == take || a->verdict != ASK_VALID) continue;
            int reason = live ? HN_BF_REFUSED_LIVE : HN_BF_REFUSED_SECOND;
            if (live)
                HN_WARN("heal round %llu, job rank %d (decider): refused the request %s of pid %u on host '%s': job rank "
                        "%d is a live member (pid %u on host '%s'); a second process as that rank",
                        (unsigned long long)x->epoch, h->job_me, a->path, a->q.pid, a->q.host, j, m[j].pid, m[j].host);
            else
                HN_WARN("heal round %llu, job rank %d (decider): refused the request %s of pid %u on host '%s': pid %u "
                        "on host '%s' asked for job rank %d first and is taken in; a second process as that rank",
                        (unsigned long long)x->epoch, h->job_me, a->path, a->q.pid, a->q.host, m[j].pid, m[j].host, j);
            if (n_refused < HN_BF_MAX_REFUSALS) {
                refused[n_refused] = (hidet_nccl__bf_refusal_t){(uint32_t)j, reason, {0}};
                memcpy(refused[n_refused++].id, a->id, HN_BF_REQUEST_ID);
            }
        }
    }
    for (int i = 0; i < h->n_asks; i++) { /* requests that failed their checks */
        const ask_t *a = &h->asks[i];
        if (a->verdict != ASK_CHECKS) continue;
        HN_WARN("heal round %llu, job rank %d (decider): refused a request to be taken back in: %s",
                (unsigned long long)x->epoch, h->job_me, a->why);
        if (a->rank >= 0 && n_refused < HN_BF_MAX_REFUSALS) {
            refused[n_refused] = (hidet_nccl__bf_refusal_t){(uint32_t)a->rank, HN_BF_REFUSED_CHECKS, {0}};
            memcpy(refused[n_refused++].id, a->id, HN_BF_REQUEST_ID);
        }
    }
    *len = hidet_nccl__bf_encode_heal(*file, cap, s->key, hidet_nccl__bf_recovery_seq(s, x->epoch),
                                      (uint32_t)h->job_size, (uint32_t)h->job_me, x->epoch, m, refused, n_refused,
                                      s->secret_len > 0);
    if (*len == 0 || hidet_nccl__bf_seal(s, *file, *len, why, sizeof why) != 0)
        hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank %d could not make the decision of heal round "
                        "%llu: %s", h->job_me, (unsigned long long)x->epoch, *len ? why : "it does not fit");
    else if ((rc = hidet_nccl__bf_publish_new(x->decision_path, *file, *len, NULL, why, sizeof why)) < 0)
        hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank %d could not put the decision of heal round "
                        "%llu: %s", h->job_me, (unsigned long long)x->epoch, why);
done:
    free(m);
    free(refused);
    free(known);
    if (rc != 0) {
        free(*file);
        *file = NULL;
    }
    return rc;
}

/* 1 if the heal decision m keeps this member as itself (its job rank, this very join's nonce). */
static int named(const heal_t *h, const hidet_nccl__bf_msg_t *m) {
    hidet_nccl__bf_member_t mine;
    hidet_nccl__bf_member(m, (uint32_t)h->job_me, &mine);
    return mine.flags == (HN_BF_HEAL_KEPT | HN_BF_HEAL_BEFORE) && memcmp(mine.nonce, h->x.nonce, HN_BF_NONCE) == 0;
}

/* The round failed or left this member out: its mark (its join renamed), the round noted (with
 * the decision m, or NULL) for its tidying. */
static void out_of_round(heal_t *h, const hidet_nccl__bf_msg_t *m) {
    hn_bf_peer_t *old = calloc((size_t)h->x.n, sizeof *old);
    hidet_nccl__bf_joins_withdraw(&h->x, HN_BF_MARK_LEFTOUT);
    h->x.left_out = 1;
    if (old == NULL) return;
    hidet_nccl__bf_joins_known(&h->x, old);
    hidet_nccl__bf_round_note_heal(h->x.s, h->x.epoch, h->x.n, h->x.me, m, old);
    free(old);
}

/* The heal decision m, read or put: named, the member goes on (noted, renumbered, its join gone;
 * the new rank 0 sweeps what earlier epochs left); else it was left out. */
static hidet_nccl_status_t take(heal_t *h, const hidet_nccl__bf_msg_t *m, unsigned char *members,
                                unsigned char *joined, char *msg, size_t n) {
    hn_bf_joins_t *x = &h->x;
    char kept[200], taken[200];
    list_flags(m, HN_BF_HEAL_KEPT, kept, sizeof kept);
    list_flags(m, HN_BF_HEAL_JOINED, taken, sizeof taken);
    if (!named(h, m)) {
        out_of_round(h, m);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "job rank %d (rank %d of %d) was left out of heal round %llu: job rank %d decided (%s) "
                               "that job ranks %s go on (taken in: %s), before this rank joined or without counting "
                               "it; this bootstrap can only be destroyed now", h->job_me, x->me, x->n,
                               (unsigned long long)x->epoch, m->rank, x->decision_path, kept, taken);
    }
    hn_bf_peer_t *old = calloc((size_t)x->n, sizeof *old);
    if (old == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", x->n);
    hidet_nccl__bf_joins_known(x, old);
    hidet_nccl__bf_round_note_heal(x->s, x->epoch, x->n, x->me, m, old);
    free(old);
    hidet_nccl_status_t st = renumber(x->s, m, h->job_me, x->epoch, members, joined, msg, n);
    if (st != HIDET_NCCL_SUCCESS) return st;
    hidet_nccl__bf_joins_withdraw(x, NULL); /* taken */
    if (x->s->rank == 0) hidet_nccl__bf_sweep(x->s, x->epoch);
    return HIDET_NCCL_SUCCESS;
}

/* A heal decision at this round's place that does not keep this join, left by an ended job
 * (every process it keeps is a process of this host that is gone; for one that reads as this
 * round's, it keeps a rank as another process than the one this round knows): removed, said, 1. */
static int drop_stale(heal_t *h) {
    hn_bf_joins_t *x = &h->x;
    uint8_t *data;
    size_t len;
    hidet_nccl__bf_msg_t m;
    char why[768];
    if (!hidet_nccl__bf_record_read_any(x->s, x->decision_path, HN_BF_KIND_HEAL, &data, &len, &m)) return 0;
    int ours = m.seq == hidet_nccl__bf_recovery_seq(x->s, x->epoch) && m.epoch == x->epoch &&
               m.world_size == (uint32_t)h->job_size &&
               hidet_nccl__bf_mac_ok(x->s, data, &m, "its decider", why, sizeof why) == 0;
    hn_bf_peer_t *known = calloc((size_t)h->job_size, sizeof *known), *old = calloc((size_t)x->n, sizeof *old);
    int stale = known != NULL && old != NULL && !(ours && named(h, &m));
    if (stale) {
        hidet_nccl__bf_joins_known(x, old);
        for (int j = 0; j < h->job_size; j++)
            if (h->place_of[j] >= 0) known[j] = old[h->place_of[j]];
    }
    stale = stale && hidet_nccl__bf_decision_stale(known, h->job_size, h->job_me, &m,
                                                   ours ? HN_BF_STALE_THIS_ROUND : HN_BF_STALE_FOREIGN) &&
            hidet_nccl__bf_remove_if_same(x->decision_path, data, len);
    if (stale)
        HN_WARN("heal round %llu, job rank %d: %s is a decision left by an ended job with job key '%s' (every process "
                "it keeps is gone from this host%s): stale, removed", (unsigned long long)x->epoch, h->job_me,
                x->decision_path, x->s->key, ours ? ", and is not the one this job knows as that rank" : "");
    free(known);
    free(old);
    free(data);
    return stale;
}

/* The decision place holds another kind of round's decision (a recovery round's, this job's):
 * the members disagree on what round E is. */
static int other_round(const heal_t *h, char *why, size_t n) {
    uint8_t *data;
    size_t len;
    hidet_nccl__bf_msg_t m;
    char inner[768];
    if (!hidet_nccl__bf_record_read_any(h->x.s, h->x.decision_path, HN_BF_KIND_DECISION, &data, &len, &m)) return 0;
    int ours = m.seq == hidet_nccl__bf_recovery_seq(h->x.s, h->x.epoch) && m.epoch == h->x.epoch &&
               hidet_nccl__bf_mac_ok(h->x.s, data, &m, "its decider", inner, sizeof inner) == 0;
    if (ours)
        snprintf(why, n, "rank %u (pid %u on host '%s') decided round %llu as a recovery round (%s): every member of a "
                 "round must call the same, hidet_nccl_bootstrap_heal or hidet_nccl_bootstrap_recover", m.rank, m.pid,
                 m.host, (unsigned long long)h->x.epoch, h->x.decision_path);
    free(data);
    return ours;
}

/* Steps 2 and 3 on a member, until its decision is taken or the deadline passes. */
static hidet_nccl_status_t await_heal(heal_t *h, unsigned char *members, unsigned char *joined, char *msg, size_t n) {
    hn_bf_joins_t *x = &h->x;
    hn_bf_state_t *s = x->s;
    char why[1024], awaited[600] = "the decision";
    int last_look = 0;
    for (;;) {
        uint8_t *data = NULL;
        hidet_nccl__bf_msg_t m;
        int got = hidet_nccl__bf_heal_read(s, x->epoch, (uint32_t)h->job_size, &data, &m, why, sizeof why);
        if (got == 1 && !named(h, &m) && drop_stale(h)) { /* an ended job's, removed: look again */
            free(data);
            continue;
        }
        if (got == 1) {
            hidet_nccl_status_t st = take(h, &m, members, joined, msg, n);
            free(data);
            return st;
        }
        if (got == 3) free(data);
        if (got != 0 && drop_stale(h)) continue; /* an ended job's, removed */
        if (got < 0 && other_round(h, why, sizeof why))
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank %d, heal round %llu: %s", h->job_me,
                                   (unsigned long long)x->epoch, why);
        if (got == 3) /* nobody may replace it: exactly one decision is ever put */
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "job rank %d, heal round %llu: %s: two jobs use job key '%s' in %s at once? Give "
                                   "each job its own key", h->job_me, (unsigned long long)x->epoch, why, s->key,
                                   s->dir);
        if (got < 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "job rank %d, heal round %llu: %s; no decision can be put while it is there: remove "
                                   "it and start the job again", h->job_me, (unsigned long long)x->epoch, why);
        if (hidet_nccl__poll_expired(&x->poll)) { /* one more look first, as in a recovery round */
            if (last_look++) break;
            continue;
        }
        double waited = hidet_nccl__poll_waited(&x->poll);
        int below = hidet_nccl__bf_joins_scan(x, waited);
        if (below >= 0 || !hidet_nccl__bf_joins_ready(x, waited)) {
            hidet_nccl__bf_joins_awaited(x, below, awaited, sizeof awaited);
            hidet_nccl__poll_pause(&x->poll);
            continue;
        }
        char missing[200];
        look_requests(h);
        if (!every_rank_asked(h, missing, sizeof missing) && waited < x->wait_s) {
            snprintf(awaited, sizeof awaited, "as the decider, for restarted processes of job ranks %s to ask to be "
                     "taken back in (wait_s %.1f s)", missing, x->wait_s);
            hidet_nccl__poll_pause(&x->poll);
            continue;
        }
        uint64_t later = 0;
        if (hidet_nccl__bf_joins_superseded(x, &later)) {
            hidet_nccl__bf_joins_withdraw(x, NULL);
            x->left_out = 1;
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "job rank %d (rank %d of %d) was left out of heal round %llu: the job went on to "
                                   "round %llu without it (its files are in %s)", h->job_me, x->me, x->n,
                                   (unsigned long long)x->epoch, (unsigned long long)later, s->dir);
        }
        uint8_t *file;
        size_t len;
        int put = put_heal(h, &file, &len, msg, n);
        if (put < 0) return HIDET_NCCL_ERROR_BOOTSTRAP;
        if (put == 0) {
            char inner[384];
            hidet_nccl_status_t st =
                hidet_nccl__bf_parse(file, len, &m, inner, sizeof inner) == 0
                    ? take(h, &m, members, joined, msg, n)
                    : hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "its own heal decision: %s", inner);
            free(file);
            return st;
        }
        /* another member's decision came first: take it */
    }
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                           "job rank %d (rank %d of %d) waited %.1f s in heal round %llu (job key '%s' in %s) %s%s%s",
                           h->job_me, x->me, x->n, hidet_nccl__poll_waited(&x->poll), (unsigned long long)x->epoch,
                           s->key, s->dir, awaited, x->last[0] ? "; last problem: " : "", x->last);
}

/* The round failed here: this member is out of it (its mark), noted with the decision if one is
 * there now (this job's). */
static void failed_round(heal_t *h) {
    uint8_t *data = NULL;
    hidet_nccl__bf_msg_t m;
    char why[768];
    int got = hidet_nccl__bf_heal_read(h->x.s, h->x.epoch, (uint32_t)h->job_size, &data, &m, why, sizeof why);
    out_of_round(h, got == 1 ? &m : NULL);
    if (got == 1 || got == 3) free(data);
}

static hidet_nccl_status_t member_round(hn_bf_state_t *s, uint64_t epoch, double wait_s, double timeout_s,
                                        unsigned char *members, unsigned char *joined, char *msg, size_t n) {
    heal_t h = {.job_size = s->first_size};
    h.place_of = malloc(sizeof *h.place_of * (size_t)h.job_size);
    if (h.place_of == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", h.job_size);
    for (int j = 0; j < h.job_size; j++) h.place_of[j] = -1;
    for (int q = 0; q < s->nranks; q++) h.place_of[s->job_of[q]] = q;
    h.job_me = s->job_of[s->rank];
    hidet_nccl_status_t st = hidet_nccl__bf_joins_begin(&h.x, s, "heal", epoch, wait_s, timeout_s, msg, n);
    if (st == HIDET_NCCL_SUCCESS) {
        st = await_heal(&h, members, joined, msg, n);
        if (st != HIDET_NCCL_SUCCESS && !h.x.left_out) failed_round(&h); /* no decider counts it now */
        hidet_nccl__bf_joins_end(&h.x);
    }
    free(h.place_of);
    free(h.asks);
    return st;
}

/* ---------------------------------------------------------------- a joiner */

/* What a joiner saw of its job rank in a heal decision it was not named in, for its timeout. */
static void note_seen(const hn_bf_state_t *s, const hidet_nccl__bf_msg_t *m, char *seen, size_t n) {
    hidet_nccl__bf_member_t p;
    hidet_nccl__bf_member(m, (uint32_t)s->first_rank, &p);
    if (p.flags == (HN_BF_HEAL_KEPT | HN_BF_HEAL_BEFORE) || (p.flags & HN_BF_HEAL_JOINED))
        snprintf(seen, n, "; heal round %llu, decided before this process asked (or without seeing it), kept job rank "
                 "%d as pid %u on host '%s'%s", (unsigned long long)m->epoch, s->first_rank, p.pid, p.host,
                 hidet_nccl__bf_process_gone(p.pid, p.host) ? " (gone since)" : ", which lives (or is of another host)");
    else
        snprintf(seen, n, "; the last heal round seen, %llu, was decided before this process asked (or without seeing "
                 "it)", (unsigned long long)m->epoch);
}

/* The refusal of this joiner's request (its id, its job rank) in m: its reason, else 0. */
static int refusal_of(const hidet_nccl__bf_msg_t *m, int rank, const uint8_t *nonce) {
    for (uint32_t i = 0; i < m->refusals; i++) {
        hidet_nccl__bf_refusal_t f;
        hidet_nccl__bf_refusal(m, i, &f);
        if (f.rank == (uint32_t)rank && memcmp(f.id, nonce, HN_BF_REQUEST_ID) == 0) return f.reason;
    }
    return 0;
}

/* The refusal said to the joiner. */
static hidet_nccl_status_t refused(const hn_bf_state_t *s, const hidet_nccl__bf_msg_t *m, int reason,
                                   const char *path, const char *request, int trusted, char *msg, size_t n) {
    hidet_nccl__bf_member_t p;
    char who[300] = "";
    hidet_nccl__bf_member(m, (uint32_t)s->first_rank, &p);
    if (p.kept)
        snprintf(who, sizeof who, " (job rank %d is pid %u on host '%s'%s)", s->first_rank, p.pid, p.host,
                 p.flags & HN_BF_HEAL_JOINED ? ", taken in by that round" : "");
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                           "job rank %d of %d (job key '%s' in %s), a restarted rank asking to be taken back in, was "
                           "refused by heal round %llu (decided by job rank %u, %s): %s%s%s%s. Its request %s is "
                           "withdrawn",
                           s->first_rank, s->first_size, s->key, s->dir, (unsigned long long)m->epoch, m->rank, path,
                           hidet_nccl__bf_refusal_reason(reason), reason == HN_BF_REFUSED_CHECKS ? "" : who,
                           reason == HN_BF_REFUSED_LIVE || reason == HN_BF_REFUSED_SECOND
                               ? ": two processes were started as this rank; start each rank once"
                               : "",
                           trusted ? ""
                                   : " (that decision does not carry this process's job secret: the job holds another "
                                     "one, or this process none; give every rank the job's HIDET_NCCL_JOB_SECRET_FILE)",
                           request);
}

/* A joiner taken in or refused by the heal decision m (epoch): the round noted, so that its end
 * tidies it (its files wait for it to have read it; the last to end removes them); the members
 * before the round as the decision knew them. */
static void note_heard(hn_bf_state_t *s, const hidet_nccl__bf_msg_t *m, uint64_t epoch) {
    int before = 0;
    for (uint32_t j = 0; j < m->world_size; j++) {
        hidet_nccl__bf_member_t p;
        hidet_nccl__bf_member(m, j, &p);
        before += (p.flags & HN_BF_HEAL_BEFORE) != 0;
    }
    hn_bf_peer_t *old = calloc((size_t)before + 1, sizeof *old);
    if (old != NULL) hidet_nccl__bf_round_note_heal(s, epoch, before, -1, m, old);
    free(old);
}

/* A joiner taken in by the heal decision m (epoch): renumbered, its request gone, its presence
 * taken over, the round noted for its tidying. */
static hidet_nccl_status_t joiner_taken(hn_bf_state_t *s, const hidet_nccl__bf_msg_t *m, uint64_t epoch,
                                        const char *request, const struct stat *mine, unsigned char *members,
                                        unsigned char *joined, char *msg, size_t n) {
    note_heard(s, m, epoch);
    hidet_nccl_status_t st = renumber(s, m, s->first_rank, epoch, members, joined, msg, n);
    if (st != HIDET_NCCL_SUCCESS) return st;
    hidet_nccl__bf_request_withdraw(request, mine);
    s->joining = 0;
    hidet_nccl__bf_presence_take(s);
    if (s->rank == 0) hidet_nccl__bf_sweep(s, epoch);
    return HIDET_NCCL_SUCCESS;
}

/* A decision (recovery or heal) of this job after round epoch: the job went on past the round
 * that took this joiner in, without it (it read that round too late); its round in *later. */
static int went_on(const hn_bf_state_t *s, uint64_t epoch, uint64_t *later) {
    DIR *d = opendir(s->dir);
    if (d == NULL) return 0;
    uint64_t gen = hidet_nccl__bf_seq_generation(hidet_nccl__bf_seq(s, 0));
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        uint64_t seq;
        int r, tmp, kind = hidet_nccl__bf_name_kind(s->key, e->d_name, &seq, &r, &tmp);
        if (kind != HN_BF_NAME_DECISION || tmp || hidet_nccl__bf_seq_generation(seq) != gen ||
            hidet_nccl__bf_seq_epoch(seq) <= epoch)
            continue;
        char path[HN_BF_PATH_BYTES + 300], why[768];
        uint8_t *data = NULL;
        size_t len;
        hidet_nccl__bf_msg_t m;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        if ((hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_HEAL, &data, &len, &m) ||
             hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_DECISION, &data, &len, &m)) &&
            m.seq == seq && m.epoch == hidet_nccl__bf_seq_epoch(seq) &&
            hidet_nccl__bf_mac_ok(s, data, &m, "its decider", why, sizeof why) == 0) {
            found = 1;
            *later = m.epoch;
        }
        free(data);
    }
    closedir(d);
    return found;
}

/* A heal decision judged already (its round and file), so that it is not read again. */
typedef struct {
    uint64_t epoch;
    ino_t ino;
} judged_t;

static hidet_nccl_status_t joiner_round(hn_bf_state_t *s, uint64_t *epoch, double timeout_s, unsigned char *members,
                                        unsigned char *joined, char *msg, size_t n) {
    uint8_t nonce[HN_BF_NONCE];
    char request[HN_BF_PATH_BYTES], why[1024], seen[600] = "", last[800] = "";
    struct stat mine;
    if (hidet_nccl__bf_random(nonce, sizeof nonce, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "%s", why);
    hidet_nccl_status_t st = hidet_nccl__bf_request_put(s, nonce, request, sizeof request, &mine, msg, n);
    if (st != HIDET_NCCL_SUCCESS) return st;
    hn_poll_t poll;
    long scaled = 20000L * s->first_size;
    hidet_nccl__poll_begin(&poll, timeout_s, 0, 100000, scaled > s->poll_cap_ns ? scaled : s->poll_cap_ns, 1);
    uint64_t gen = hidet_nccl__bf_seq_generation(hidet_nccl__bf_seq(s, 0));
    judged_t *judged = NULL;
    int n_judged = 0, last_look = 0;
    for (;;) {
        struct stat now;
        if (lstat(request, &now) != 0 || !hidet_nccl__bf_same_file(&now, &mine)) {
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                 "job rank %d of %d (job key '%s' in %s), a restarted rank asking to be taken back in: "
                                 "its request %s was removed or replaced by another process (someone removed the "
                                 "job's files?)", s->first_rank, s->first_size, s->key, s->dir, request);
            break;
        }
        DIR *d = opendir(s->dir);
        for (struct dirent *e; d != NULL && st == HIDET_NCCL_SUCCESS && (e = readdir(d)) != NULL;) {
            uint64_t seq;
            int r, tmp, kind = hidet_nccl__bf_name_kind(s->key, e->d_name, &seq, &r, &tmp);
            uint64_t at = hidet_nccl__bf_seq_epoch(seq);
            if (kind != HN_BF_NAME_DECISION || tmp || hidet_nccl__bf_seq_generation(seq) != gen || at == 0) continue;
            char path[HN_BF_PATH_BYTES + 300];
            struct stat there;
            snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
            if (lstat(path, &there) != 0) continue;
            int known = 0;
            for (int i = 0; i < n_judged && !known; i++) known = judged[i].epoch == at && judged[i].ino == there.st_ino;
            if (known) continue;
            uint8_t *data = NULL;
            size_t len;
            hidet_nccl__bf_msg_t m;
            int got = hidet_nccl__bf_heal_read(s, at, (uint32_t)s->first_size, &data, &m, why, sizeof why);
            if (got == 1) {
                hidet_nccl__bf_member_t p;
                hidet_nccl__bf_member(&m, (uint32_t)s->first_rank, &p);
                int reason = refusal_of(&m, s->first_rank, nonce);
                uint64_t later = 0;
                if ((p.flags & HN_BF_HEAL_JOINED) && memcmp(p.nonce, nonce, HN_BF_NONCE) == 0 &&
                    went_on(s, at, &later)) {
                    st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                         "job rank %d of %d (job key '%s' in %s), a restarted rank, was taken in by heal "
                                         "round %llu (%s), but the job went on to round %llu without it before it "
                                         "read that (it was slower than the members' wait)", s->first_rank,
                                         s->first_size, s->key, s->dir, (unsigned long long)at, path,
                                         (unsigned long long)later);
                    note_heard(s, &m, at);
                } else if ((p.flags & HN_BF_HEAL_JOINED) && memcmp(p.nonce, nonce, HN_BF_NONCE) == 0) {
                    st = joiner_taken(s, &m, at, request, &mine, members, joined, msg, n);
                    if (st == HIDET_NCCL_SUCCESS) *epoch = at;
                    free(data);
                    closedir(d);
                    free(judged);
                    return st;
                }
                if (st == HIDET_NCCL_SUCCESS && reason != 0) {
                    st = refused(s, &m, reason, path, request, 1, msg, n);
                    note_heard(s, &m, at); /* its files wait for this joiner to have read it: tidied at its end */
                } else if (st == HIDET_NCCL_SUCCESS) {
                    note_seen(s, &m, seen, sizeof seen);
                }
            } else if (got == 3 || got < 0) {
                free(data);
                data = NULL;
                /* another secret's (or none): read only to tell this process it was refused */
                if (hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_HEAL, &data, &len, &m) && m.world_size ==
                    (uint32_t)s->first_size && refusal_of(&m, s->first_rank, nonce) != 0)
                    st = refused(s, &m, refusal_of(&m, s->first_rank, nonce), path, request, 0, msg, n);
                else if (got == 3)
                    snprintf(last, sizeof last, "%s", why);
            }
            free(data);
            if (got == 0) continue; /* gone since it was listed */
            judged_t *more = realloc(judged, sizeof *judged * (size_t)(n_judged + 1));
            if (more != NULL) {
                judged = more;
                judged[n_judged++] = (judged_t){at, there.st_ino};
            }
        }
        if (d != NULL) closedir(d);
        if (st != HIDET_NCCL_SUCCESS) break;
        if (hidet_nccl__poll_expired(&poll) && !last_look++) continue; /* one more look: stopped past it? */
        if (hidet_nccl__poll_expired(&poll)) {
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                                 "job rank %d of %d (job key '%s' in %s), a restarted rank asking to be taken back in "
                                 "(its request %s), waited %.1f s for a heal round of the job's members to take it in: "
                                 "none did (the members must call hidet_nccl_comm_heal or hidet_nccl_bootstrap_heal)%s%s%s",
                                 s->first_rank, s->first_size, s->key, s->dir, request, hidet_nccl__poll_waited(&poll),
                                 seen, last[0] ? "; last problem: " : "", last);
            break;
        }
        hidet_nccl__poll_pause(&poll);
    }
    free(judged);
    hidet_nccl__bf_request_withdraw(request, &mine);
    return st;
}

/* ---------------------------------------------------------------- the plug-in's members */

int hidet_nccl__bf_joining(void *state) { return ((hn_bf_state_t *)state)->joining; }

hidet_nccl_status_t hidet_nccl__bf_heal(void *state, uint64_t *epoch, double wait_s, double timeout_s,
                                        unsigned char *members, unsigned char *joined, char *msg, size_t msg_bytes) {
    hn_bf_state_t *s = state;
    if (s->joining) {
        if (*epoch != 0)
            return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                                   "heal round %llu asked of a restarted rank joining (it learns the round: 0 expected)",
                                   (unsigned long long)*epoch);
        return joiner_round(s, epoch, timeout_s, members, joined, msg, msg_bytes);
    }
    if (*epoch != s->epoch + 1 || *epoch > HN_BF_MAX_EPOCH)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "heal round %llu asked of a bootstrap whose next round is %llu (at most %u rounds)",
                               (unsigned long long)*epoch, (unsigned long long)(s->epoch + 1), HN_BF_MAX_EPOCH);
    if (s->first_size == 1) { /* a job of one: nobody to take in, no file */
        members[0] = 1;
        joined[0] = 0;
        s->epoch = *epoch;
        return HIDET_NCCL_SUCCESS;
    }
    return member_round(s, *epoch, wait_s, timeout_s, members, joined, msg, msg_bytes);
}

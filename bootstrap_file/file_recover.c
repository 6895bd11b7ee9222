/* The shared-file bootstrap's recovery round: joins, one decider, one decision (file_recover_int.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_presence_int.h"
#include "bootstrap_file/file_recover_int.h"
#include "bootstrap_file/file_sweep_int.h"

#define PATH_BYTES 4400

/* One rank's round: what it put, and what it saw of every other rank. */
typedef struct {
    hn_bf_state_t *s;
    uint64_t epoch;
    int n, me;
    double wait_s;
    hn_poll_t poll;
    uint8_t nonce[HN_BF_NONCE];
    char join_path[PATH_BYTES], decision_path[PATH_BYTES];
    struct stat mine;       /* this rank's join as put */
    hn_bf_join_t *joins;    /* what each rank's join says (when joined) */
    unsigned char *joined;  /* a join of this round is there */
    unsigned char *dead;    /* its process is known gone */
    struct stat *seen;      /* each join as last read: an unchanged one is not read again */
    char last[1024];        /* the last problem seen, for the messages */
    int left_out;           /* the decision did not name this join */
} rr_t;

/* Removes this rank's join if it is still the one it put; with a mark, renames it to that. */
static void withdraw_join(const rr_t *x, const char *mark) {
    struct stat now;
    if (lstat(x->join_path, &now) != 0 || !hidet_nccl__bf_same_file(&now, &x->mine)) return;
    if (mark == NULL) {
        unlink(x->join_path);
        return;
    }
    char to[PATH_BYTES + 16];
    snprintf(to, sizeof to, "%s%s", x->join_path, mark);
    if (rename(x->join_path, to) != 0) unlink(x->join_path);
}

/* Step 1: this rank's join, put where none is. */
static hidet_nccl_status_t put_join(rr_t *x, char *msg, size_t n) {
    hn_bf_state_t *s = x->s;
    uint8_t file[HN_BF_HEADER + HN_BF_JOIN_BODY + HN_BF_MAC + 4];
    char why[768] = "";
    size_t len = hidet_nccl__bf_encode_join(file, sizeof file, s->key, hidet_nccl__bf_recovery_seq(s, x->epoch),
                                            (uint32_t)x->n, (uint32_t)x->me, x->nonce, x->epoch, (uint32_t)getpid(),
                                            s->host, s->secret_len > 0);
    if (len == 0 || hidet_nccl__bf_seal(s, file, len, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not make its join of recovery round "
                               "%llu: %s", x->me, (unsigned long long)x->epoch, len ? why : "it does not fit");
    for (int attempt = 0; attempt < 4; attempt++) {
        int put = hidet_nccl__bf_publish_new(x->join_path, file, len, &x->mine, why, sizeof why);
        if (put == 0) return HIDET_NCCL_SUCCESS;
        if (put < 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not put its join of recovery "
                                   "round %llu: %s", x->me, (unsigned long long)x->epoch, why);
        struct stat there;
        if (lstat(x->join_path, &there) != 0) continue; /* gone again: once more */
        hn_bf_join_t j;
        int got = hidet_nccl__bf_join_read(s, x->epoch, (uint32_t)x->n, x->me, x->join_path, &j, why, sizeof why);
        if (got == 1 && !hidet_nccl__bf_process_gone(j.pid, j.host))
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d: %s is the join of recovery round %llu of another live process as this "
                                   "rank (pid %u on host '%s'): two processes run as rank %d, or two jobs use job key "
                                   "'%s' in %s at once", x->me, x->join_path, (unsigned long long)x->epoch, j.pid,
                                   j.host, x->me, s->key, s->dir);
        if (got == 3 && hidet_nccl__bf_process_gone(j.pid, j.host)) {
            HN_WARN("recovery round %llu, rank %d: %s is a join left by an ended job with job key '%s' (another "
                    "secret; its process, pid %u on this host, is gone): stale, replaced", (unsigned long long)x->epoch,
                    x->me, x->join_path, s->key, j.pid);
        } else if (got == 3) {
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s (pid %u on host '%s', which lives "
                                   "or cannot be seen from here): two jobs use job key '%s' in %s at once? Give each "
                                   "job its own key (a file an ended job left on another host: remove it)", x->me, why,
                                   j.pid, j.host, s->key, s->dir);
        }
        if (!(S_ISREG(there.st_mode) && there.st_uid == geteuid())) {
            hidet_nccl__bf_in_the_way(x->join_path, &there, why, sizeof why);
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d, recovery round %llu (job key '%s'): "
                                   "%s", x->me, (unsigned long long)x->epoch, s->key, why);
        }
        /* a dead process's join, or this user's file that is no join of this round: stale, replaced */
        int over = hidet_nccl__bf_publish_over(x->join_path, &there, file, len, &x->mine, why, sizeof why);
        if (over == 0) return HIDET_NCCL_SUCCESS;
        if (over < 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not replace the stale %s: %s",
                                   x->me, x->join_path, why);
    }
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not put its join %s: it was replaced "
                           "four times while it tried", x->me, x->join_path);
}

/* What rank q's join says now, and whether q is known dead. */
static void look(rr_t *x, int q) {
    hn_bf_state_t *s = x->s;
    char path[PATH_BYTES], why[768];
    struct stat st;
    hidet_nccl__bf_recovery_path(s, x->epoch, q, "", path, sizeof path);
    if (lstat(path, &st) != 0) {
        x->joined[q] = 0;
        memset(&x->seen[q], 0, sizeof x->seen[q]);
    } else if (!hidet_nccl__bf_same_file(&st, &x->seen[q])) {
        x->seen[q] = st;
        int got = hidet_nccl__bf_join_read(s, x->epoch, (uint32_t)x->n, q, path, &x->joins[q], why, sizeof why);
        x->joined[q] = got == 1;
        if (got < 0 || got == 3) {
            HN_WARN("recovery round %llu, rank %d: %s", (unsigned long long)x->epoch, x->me, why);
            snprintf(x->last, sizeof x->last, "%s", why);
        }
    }
    x->dead[q] = x->joined[q] ? hidet_nccl__bf_process_gone(x->joins[q].pid, x->joins[q].host)
                              : hidet_nccl__bf_peer_gone(s, q);
}

/* The rank this one waits for to decide (-1: this rank decides): the lowest rank below it that
 * joined and is not known dead, or that has neither joined nor is known dead while wait_s runs.
 * Only the ranks up to it are looked at; a rank that decides looks at every rank above it too. */
static int scan(rr_t *x, double waited) {
    for (int q = 0; q < x->me; q++) {
        look(x, q);
        if (x->dead[q]) continue;
        if (x->joined[q] || waited < x->wait_s) return q;
    }
    for (int q = x->me + 1; q < x->n; q++) look(x, q);
    return -1;
}

/* A decision of a later recovery round of this bootstrap, of this job (its MAC, with a secret),
 * in the directory (its round in *later): the job went on without this rank (which comes after
 * the round it was left out of was tidied away). One listing of the directory; a later decision
 * an ended job left (stale) is removed on the way. */
static int superseded(const rr_t *x, uint64_t *later) {
    DIR *d = opendir(x->s->dir);
    if (d == NULL) return 0;
    uint64_t gen = hidet_nccl__bf_seq_generation(hidet_nccl__bf_seq(x->s, 0));
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        uint64_t seq;
        int r, tmp, kind = hidet_nccl__bf_name_kind(x->s->key, e->d_name, &seq, &r, &tmp);
        if (kind != HN_BF_NAME_DECISION || tmp || hidet_nccl__bf_seq_generation(seq) != gen ||
            hidet_nccl__bf_seq_epoch(seq) <= x->epoch)
            continue;
        char path[PATH_BYTES + 300], why[768];
        uint8_t *data = NULL;
        size_t len = 0;
        hidet_nccl__bf_msg_t m;
        snprintf(path, sizeof path, "%s/%s", x->s->dir, e->d_name);
        if (hidet_nccl__bf_read(path, HN_BF_HEADER + 4, HN_BF_MAX_FILE, &data, &len, why, sizeof why) == 1 &&
            hidet_nccl__bf_parse(data, len, &m, why, sizeof why) == 0 && m.kind == HN_BF_KIND_DECISION &&
            strcmp(m.key, x->s->key) == 0) {
            int ours = m.seq == seq && m.epoch == hidet_nccl__bf_seq_epoch(seq) &&
                       hidet_nccl__bf_mac_ok(x->s, data, &m, "its decider", why, sizeof why) == 0;
            if (hidet_nccl__bf_decision_stale(x->s->peers, x->n, x->me, &m,
                                              ours ? HN_BF_STALE_LATER : HN_BF_STALE_FOREIGN)) {
                HN_WARN("recovery round %llu, rank %d: %s is a decision of round %llu left by an ended job with job "
                        "key '%s' (every process it keeps is gone from this host, none of them this job's): stale, "
                        "removed", (unsigned long long)x->epoch, x->me, path, (unsigned long long)m.epoch, x->s->key);
                hidet_nccl__bf_remove_if_same(path, data, len);
            } else if (ours) {
                found = 1;
                *later = m.epoch;
            }
        }
        free(data);
    }
    closedir(d);
    return found;
}

/* Each rank's process as this round knows it (old: x->n): its join's, else what the bootstrap
 * saw of it. */
static void known_processes(const rr_t *x, hn_bf_peer_t *old) {
    for (int q = 0; q < x->n; q++) {
        old[q] = x->s->peers[q];
        if (!x->joined[q]) continue;
        old[q].pid = x->joins[q].pid;
        snprintf(old[q].host, sizeof old[q].host, "%s", x->joins[q].host);
    }
}

/* Step 2, the decider: the decision (this rank and every rank that joined and lives) put where
 * none is. 0 put (*file, *len: the bytes put, the caller frees), 1 another decision is there,
 * -1 failed (msg). */
static int put_decision(rr_t *x, uint8_t **file, size_t *len, char *msg, size_t n) {
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
        if (known != NULL) known_processes(x, known); /* a rank not kept: as known (the tidying judges it) */
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
static hidet_nccl_status_t go_on(rr_t *x, const hidet_nccl__bf_msg_t *m, unsigned char *kept, char *msg, size_t n) {
    hn_bf_state_t *s = x->s;
    int count = (int)m->kept_count, rank = 0, local = 0, local_rank = 0;
    hn_bf_peer_t *peers = calloc((size_t)count, sizeof *peers), *old = calloc((size_t)x->n, sizeof *old);
    if (peers == NULL || old == NULL) {
        free(peers);
        free(old);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory renumbering %d ranks", count);
    }
    known_processes(x, old);
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
        snprintf(peers[i++].host, sizeof peers[0].host, "%s", p.host);
    }
    free(old);
    free(s->peers);
    s->peers = peers;
    s->rank = rank;
    s->nranks = count;
    s->local_rank = local_rank;
    s->local_size = local;
    s->epoch = x->epoch;
    withdraw_join(x, NULL); /* taken */
    if (rank == 0) hidet_nccl__bf_sweep(s, x->epoch);
    return HIDET_NCCL_SUCCESS;
}

/* The round failed or left this rank out: it is out of it, and says so with its mark (its join
 * renamed), so that the round's files need not wait for it; the round is noted (decision m, or
 * NULL when none was seen) for its tidying at finalize. */
static void out_of_round(rr_t *x, const hidet_nccl__bf_msg_t *m) {
    hn_bf_peer_t *old = calloc((size_t)x->n, sizeof *old);
    withdraw_join(x, HN_BF_MARK_LEFTOUT);
    x->left_out = 1;
    if (old == NULL) return;
    known_processes(x, old);
    hidet_nccl__bf_round_note(x->s, x->epoch, x->n, x->me, m, old);
    free(old);
}

/* Step 3: the decision m, read or put. Named with this join's nonce: go on; else left out. */
static hidet_nccl_status_t take(rr_t *x, const hidet_nccl__bf_msg_t *m, unsigned char *kept, char *msg, size_t n) {
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
static int named(const rr_t *x, const hidet_nccl__bf_msg_t *m) {
    hidet_nccl__bf_member_t mine;
    hidet_nccl__bf_member(m, (uint32_t)x->me, &mine);
    return mine.kept && memcmp(mine.nonce, x->nonce, HN_BF_NONCE) == 0;
}

/* A decision at this round's place that does not keep this join: if an ended job left it (a
 * process of this host that is gone for each rank it keeps; for a decision that could be this
 * job's, processes other than the ones this round knows), it is removed, said, and 1 returned.
 * (Files of ended jobs usually went when the bootstrap was made: file_sweep.c.) */
static int drop_stale(rr_t *x) {
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
    if (stale) known_processes(x, known);
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

/* The decider is ready: every rank above it joined or is known dead, or wait_s passed. */
static int ready(const rr_t *x, double waited) {
    if (waited >= x->wait_s) return 1;
    for (int q = x->me + 1; q < x->n; q++)
        if (!x->joined[q] && !x->dead[q]) return 0;
    return 1;
}

/* Steps 2 and 3 until the decision is taken or the deadline passes. */
static hidet_nccl_status_t await_decision(rr_t *x, unsigned char *kept, char *msg, size_t n) {
    hn_bf_state_t *s = x->s;
    char why[1024], awaited[512] = "the decision";
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
        if (hidet_nccl__poll_expired(&x->poll)) break;
        double waited = hidet_nccl__poll_waited(&x->poll);
        int below = scan(x, waited);
        if (below >= 0) {
            snprintf(awaited, sizeof awaited, x->joined[below]
                     ? "for the decision of rank %d (the lowest rank that joined and is not known dead: pid %u on "
                       "host '%s')"
                     : "for rank %d, which has neither joined nor is known dead (pid %u on host '%s', or never seen)",
                     below, x->joined[below] ? x->joins[below].pid : s->peers[below].pid,
                     x->joined[below] ? x->joins[below].host : s->peers[below].host);
        } else if (!ready(x, waited)) {
            unsigned char *missing = calloc((size_t)x->n, 1);
            for (int q = x->me + 1; missing != NULL && q < x->n; q++) missing[q] = !x->joined[q] && !x->dead[q];
            char list[200] = "?";
            if (missing != NULL) hidet_nccl__bf_list_ranks(missing, x->n, 0, list, sizeof list);
            free(missing);
            snprintf(awaited, sizeof awaited, "as the decider, for ranks %s to join or be known dead", list);
        } else {
            uint64_t later = 0;
            if (superseded(x, &later)) {
                withdraw_join(x, NULL);
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
static void failed_round(rr_t *x) {
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
    rr_t x = {.s = s, .epoch = epoch, .n = s->nranks, .me = s->rank, .wait_s = wait_s};
    x.joins = calloc((size_t)x.n, sizeof *x.joins);
    x.joined = calloc((size_t)x.n, 1);
    x.dead = calloc((size_t)x.n, 1);
    x.seen = calloc((size_t)x.n, sizeof *x.seen);
    long scaled = 20000L * x.n;
    hidet_nccl__poll_begin(&x.poll, timeout_s, 0, 100000, scaled > s->poll_cap_ns ? scaled : s->poll_cap_ns, 1);
    hidet_nccl__bf_recovery_path(s, epoch, x.me, "", x.join_path, sizeof x.join_path);
    hidet_nccl__bf_recovery_path(s, epoch, -1, "", x.decision_path, sizeof x.decision_path);
    char why[768];
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (x.joins == NULL || x.joined == NULL || x.dead == NULL || x.seen == NULL)
        st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", x.n);
    else if (hidet_nccl__bf_random(x.nonce, sizeof x.nonce, why, sizeof why) != 0)
        st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "%s", why);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__bf_presence_held(s, msg, msg_bytes);
    if (st == HIDET_NCCL_SUCCESS) {
        hidet_nccl__bf_roster_read(s);
        hidet_nccl__bf_presence_read(s);
        st = put_join(&x, msg, msg_bytes);
        if (st == HIDET_NCCL_SUCCESS) {
            st = await_decision(&x, kept, msg, msg_bytes);
            if (st != HIDET_NCCL_SUCCESS && !x.left_out) failed_round(&x); /* no decider counts it now */
        }
    }
    free(x.joins);
    free(x.joined);
    free(x.dead);
    free(x.seen);
    return st;
}

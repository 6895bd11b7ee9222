/* The members' side of a recovery or heal round of the shared-file bootstrap: their joins, and
 * who decides (file_joins_int.h). */
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
#include "bootstrap_file/file_sweep_int.h"

/* Removes this rank's join if it is still the one it put; with a mark, renames it to that. */
void hidet_nccl__bf_joins_withdraw(const hn_bf_joins_t *x, const char *mark) {
    struct stat now;
    if (lstat(x->join_path, &now) != 0 || !hidet_nccl__bf_same_file(&now, &x->mine)) return;
    if (mark == NULL) {
        unlink(x->join_path);
        return;
    }
    char to[HN_BF_PATH_BYTES + 16];
    snprintf(to, sizeof to, "%s%s", x->join_path, mark);
    if (rename(x->join_path, to) != 0) unlink(x->join_path);
}

/* Step 1: this rank's join, put where none is. */
static hidet_nccl_status_t put_join(hn_bf_joins_t *x, char *msg, size_t n) {
    hn_bf_state_t *s = x->s;
    uint8_t file[HN_BF_HEADER + HN_BF_JOIN_BODY + HN_BF_MAC + 4];
    char why[768] = "";
    size_t len = hidet_nccl__bf_encode_join(file, sizeof file, s->key, hidet_nccl__bf_recovery_seq(s, x->epoch),
                                            (uint32_t)x->n, (uint32_t)x->me, x->nonce, x->epoch, (uint32_t)getpid(),
                                            s->host, s->secret_len > 0);
    if (len == 0 || hidet_nccl__bf_seal(s, file, len, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not make its join of %s round "
                               "%llu: %s", x->me, x->what, (unsigned long long)x->epoch, len ? why : "it does not fit");
    for (int attempt = 0; attempt < 4; attempt++) {
        int put = hidet_nccl__bf_publish_new(x->join_path, file, len, &x->mine, why, sizeof why);
        if (put == 0) return HIDET_NCCL_SUCCESS;
        if (put < 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not put its join of %s "
                                   "round %llu: %s", x->me, x->what, (unsigned long long)x->epoch, why);
        struct stat there;
        if (lstat(x->join_path, &there) != 0) continue; /* gone again: once more */
        hn_bf_join_t j;
        int got = hidet_nccl__bf_join_read(s, x->epoch, (uint32_t)x->n, x->me, x->join_path, &j, why, sizeof why);
        if (got == 1 && !hidet_nccl__bf_process_gone(j.pid, j.host))
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d: %s is the join of %s round %llu of another live process as this "
                                   "rank (pid %u on host '%s'): two processes run as rank %d, or two jobs use job key "
                                   "'%s' in %s at once", x->me, x->join_path, x->what, (unsigned long long)x->epoch, j.pid,
                                   j.host, x->me, s->key, s->dir);
        if (got == 3 && hidet_nccl__bf_process_gone(j.pid, j.host)) {
            HN_WARN("%s round %llu, rank %d: %s is a join left by an ended job with job key '%s' (another "
                    "secret; its process, pid %u on this host, is gone): stale, replaced", x->what, (unsigned long long)x->epoch,
                    x->me, x->join_path, s->key, j.pid);
        } else if (got == 3) {
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s (pid %u on host '%s', which lives "
                                   "or cannot be seen from here): two jobs use job key '%s' in %s at once? Give each "
                                   "job its own key (a file an ended job left on another host: remove it)", x->me, why,
                                   j.pid, j.host, s->key, s->dir);
        }
        if (!(S_ISREG(there.st_mode) && there.st_uid == geteuid())) {
            hidet_nccl__bf_in_the_way(x->join_path, &there, why, sizeof why);
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d, %s round %llu (job key '%s'): "
                                   "%s", x->me, x->what, (unsigned long long)x->epoch, s->key, why);
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
static void look(hn_bf_joins_t *x, int q) {
    hn_bf_state_t *s = x->s;
    char path[HN_BF_PATH_BYTES], why[768];
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
            HN_WARN("%s round %llu, rank %d: %s", x->what, (unsigned long long)x->epoch, x->me, why);
            snprintf(x->last, sizeof x->last, "%s", why);
        }
    }
    x->dead[q] = x->joined[q] ? hidet_nccl__bf_process_gone(x->joins[q].pid, x->joins[q].host)
                              : hidet_nccl__bf_peer_gone(s, q);
}

/* The rank this one waits for to decide (-1: this rank decides): the lowest rank below it that
 * joined and is not known dead, or that has neither joined nor is known dead while wait_s runs.
 * Only the ranks up to it are looked at; a rank that decides looks at every rank above it too. */
int hidet_nccl__bf_joins_scan(hn_bf_joins_t *x, double waited) {
    for (int q = 0; q < x->me; q++) {
        look(x, q);
        if (x->dead[q]) continue;
        if (x->joined[q] || waited < x->wait_s) return q;
    }
    for (int q = x->me + 1; q < x->n; q++) look(x, q);
    return -1;
}

/* (file_joins_int.h) A rank that finds one comes after the round it was left out of was tidied
 * away. */
int hidet_nccl__bf_joins_superseded(const hn_bf_joins_t *x, uint64_t *later) {
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
        char path[HN_BF_PATH_BYTES + 300], why[768];
        uint8_t *data = NULL;
        size_t len = 0;
        hidet_nccl__bf_msg_t m;
        snprintf(path, sizeof path, "%s/%s", x->s->dir, e->d_name);
        if (hidet_nccl__bf_read(path, HN_BF_HEADER + 4, HN_BF_MAX_FILE, &data, &len, why, sizeof why) == 1 &&
            hidet_nccl__bf_parse(data, len, &m, why, sizeof why) == 0 &&
            (m.kind == HN_BF_KIND_DECISION || m.kind == HN_BF_KIND_HEAL) && strcmp(m.key, x->s->key) == 0) {
            int ours = m.seq == seq && m.epoch == hidet_nccl__bf_seq_epoch(seq) &&
                       hidet_nccl__bf_mac_ok(x->s, data, &m, "its decider", why, sizeof why) == 0;
            if (hidet_nccl__bf_decision_stale(x->s->peers, x->n, x->me, &m,
                                              ours ? HN_BF_STALE_LATER : HN_BF_STALE_FOREIGN)) {
                HN_WARN("%s round %llu, rank %d: %s is a decision of round %llu left by an ended job with job "
                        "key '%s' (every process it keeps is gone from this host, none of them this job's): stale, "
                        "removed", x->what, (unsigned long long)x->epoch, x->me, path, (unsigned long long)m.epoch,
                        x->s->key);
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
void hidet_nccl__bf_joins_known(const hn_bf_joins_t *x, hn_bf_peer_t *old) {
    for (int q = 0; q < x->n; q++) {
        old[q] = x->s->peers[q];
        if (!x->joined[q]) continue;
        old[q].pid = x->joins[q].pid;
        snprintf(old[q].host, sizeof old[q].host, "%s", x->joins[q].host);
    }
}

/* The decider is ready: every rank above it joined or is known dead, or wait_s passed. */
int hidet_nccl__bf_joins_ready(const hn_bf_joins_t *x, double waited) {
    if (waited >= x->wait_s) return 1;
    for (int q = x->me + 1; q < x->n; q++)
        if (!x->joined[q] && !x->dead[q]) return 0;
    return 1;
}


void hidet_nccl__bf_joins_awaited(const hn_bf_joins_t *x, int below, char *out, size_t n) {
    const hn_bf_state_t *s = x->s;
    if (below >= 0) {
        snprintf(out, n, x->joined[below]
                 ? "for the decision of rank %d (the lowest rank that joined and is not known dead: pid %u on host "
                   "'%s')"
                 : "for rank %d, which has neither joined nor is known dead (pid %u on host '%s', or never seen)",
                 below, x->joined[below] ? x->joins[below].pid : s->peers[below].pid,
                 x->joined[below] ? x->joins[below].host : s->peers[below].host);
        return;
    }
    unsigned char *missing = calloc((size_t)x->n, 1);
    for (int q = x->me + 1; missing != NULL && q < x->n; q++) missing[q] = !x->joined[q] && !x->dead[q];
    char list[200] = "?";
    if (missing != NULL) hidet_nccl__bf_list_ranks(missing, x->n, 0, list, sizeof list);
    free(missing);
    snprintf(out, n, "as the decider, for ranks %s to join or be known dead", list);
}

void hidet_nccl__bf_joins_end(hn_bf_joins_t *x) {
    free(x->joins);
    free(x->joined);
    free(x->dead);
    free(x->seen);
    x->joins = NULL;
    x->joined = x->dead = NULL;
    x->seen = NULL;
}

hidet_nccl_status_t hidet_nccl__bf_joins_begin(hn_bf_joins_t *x, hn_bf_state_t *s, const char *what, uint64_t epoch,
                                               double wait_s, double timeout_s, char *msg, size_t n) {
    memset(x, 0, sizeof *x);
    x->s = s;
    x->what = what;
    x->epoch = epoch;
    x->n = s->nranks;
    x->me = s->rank;
    x->wait_s = wait_s;
    x->joins = calloc((size_t)x->n, sizeof *x->joins);
    x->joined = calloc((size_t)x->n, 1);
    x->dead = calloc((size_t)x->n, 1);
    x->seen = calloc((size_t)x->n, sizeof *x->seen);
    long scaled = 20000L * x->n;
    hidet_nccl__poll_begin(&x->poll, timeout_s, 0, 100000, scaled > s->poll_cap_ns ? scaled : s->poll_cap_ns, 1);
    hidet_nccl__bf_recovery_path(s, epoch, x->me, "", x->join_path, sizeof x->join_path);
    hidet_nccl__bf_recovery_path(s, epoch, -1, "", x->decision_path, sizeof x->decision_path);
    char why[768];
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (x->joins == NULL || x->joined == NULL || x->dead == NULL || x->seen == NULL)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", x->n);
    else if (hidet_nccl__bf_random(x->nonce, sizeof x->nonce, why, sizeof why) != 0)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "%s", why);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__bf_presence_held(s, msg, n);
    if (st == HIDET_NCCL_SUCCESS) {
        hidet_nccl__bf_roster_read(s);
        hidet_nccl__bf_presence_read(s);
        st = put_join(x, msg, n);
    }
    if (st != HIDET_NCCL_SUCCESS) hidet_nccl__bf_joins_end(x);
    return st;
}

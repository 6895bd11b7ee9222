/* What a shared-file bootstrap knows of its ranks' processes; joins and decisions as read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"

#define PATH_BYTES 4400

void hidet_nccl__bf_peer_note(hn_bf_state_t *s, int r, uint32_t pid, const char *host) {
    if (r < 0 || r >= s->nranks || pid == 0) return;
    s->peers[r].pid = pid;
    snprintf(s->peers[r].host, sizeof s->peers[r].host, "%s", host);
}

int hidet_nccl__bf_peer_gone(const hn_bf_state_t *s, int r) {
    return r >= 0 && r < s->nranks && s->peers[r].pid != 0 &&
           hidet_nccl__bf_process_gone(s->peers[r].pid, s->peers[r].host);
}

/* 1 when rank r's own process has joined the next recovery round (*j, its path): not a join of
 * another process (a job with this key that crashed, without a secret to tell them apart), nor
 * one of a dead process when this rank's process was never seen. */
static int joined_next(const hn_bf_state_t *s, int r, char *path, size_t path_size, hn_bf_join_t *j) {
    char why[768];
    struct stat st;
    hidet_nccl__bf_recovery_path(s, s->epoch + 1, r, "", path, path_size);
    if (lstat(path, &st) != 0 ||
        hidet_nccl__bf_join_read(s, s->epoch + 1, (uint32_t)s->nranks, r, path, j, why, sizeof why) != 1)
        return 0;
    const hn_bf_peer_t *p = &s->peers[r];
    return p->pid != 0 ? p->pid == j->pid && strcmp(p->host, j->host) == 0 : !hidet_nccl__bf_process_gone(j->pid, j->host);
}

hidet_nccl_status_t hidet_nccl__bf_peer_left(const hn_bf_state_t *s, int r, const char *role, char *msg, size_t n) {
    if (hidet_nccl__bf_peer_gone(s, r))
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d (%s) is dead: its process (pid %u on this host, '%s') is gone", r, role,
                               s->peers[r].pid, s->host);
    char path[PATH_BYTES];
    hn_bf_join_t j;
    if (!joined_next(s, r, path, sizeof path, &j)) return HIDET_NCCL_SUCCESS;
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                           "rank %d (%s) gave this round up: it joined recovery or heal round %llu (pid %u on host '%s', %s); "
                           "a rank died: call hidet_nccl_bootstrap_recover (or hidet_nccl_comm_recover)", r, role,
                           (unsigned long long)(s->epoch + 1), j.pid, j.host, path);
}

/* Reads and checks one file of a recovery round: 1 valid (*data, *m), 0 none, -1 refused, 3 a
 * MAC of another secret (*data, *m too: who wrote it). writer names who wrote it for the MAC's
 * message. */
static int read_record(const hn_bf_state_t *s, const char *path, int kind, uint64_t epoch, uint32_t world, int rank,
                       size_t max,
                       const char *writer, uint8_t **data, hidet_nccl__bf_msg_t *m, char *why, size_t why_bytes) {
    size_t len = 0;
    *data = NULL;
    int got = hidet_nccl__bf_read(path, HN_BF_HEADER + 4, max, data, &len, why, why_bytes);
    if (got < 0 && strstr(why, "refused") == NULL && strlen(why) + 10 < why_bytes)
        snprintf(why + strlen(why), why_bytes - strlen(why), "; refused");
    if (got <= 0) return got;
    char inner[384];
    uint64_t seq = hidet_nccl__bf_recovery_seq(s, epoch);
    int rc = 1;
    if (hidet_nccl__bf_parse(*data, len, m, inner, sizeof inner) != 0 ||
        hidet_nccl__bf_expect(m, kind, s->key, seq, world, rank >= 0 ? (uint32_t)rank : m->rank, inner,
                              sizeof inner) != 0) {
        rc = -1;
    } else if (m->epoch != epoch) {
        snprintf(inner, sizeof inner, "it says recovery round %llu (expected %llu)", (unsigned long long)m->epoch,
                 (unsigned long long)epoch);
        rc = -1;
    } else if (hidet_nccl__bf_mac_ok(s, *data, m, writer, inner, sizeof inner) != 0) {
        rc = 3;
    }
    if (rc != 1) snprintf(why, why_bytes, "%s: %s; refused", path, inner);
    if (rc < 0) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

int hidet_nccl__bf_join_read(const hn_bf_state_t *s, uint64_t epoch, uint32_t world, int r, const char *path,
                             hn_bf_join_t *j, char *why, size_t why_bytes) {
    char own[PATH_BYTES];
    if (path == NULL) {
        hidet_nccl__bf_recovery_path(s, epoch, r, "", own, sizeof own);
        path = own;
    }
    uint8_t *data;
    hidet_nccl__bf_msg_t m;
    int got = read_record(s, path, HN_BF_KIND_JOIN, epoch, world, r, HN_BF_HEADER + HN_BF_JOIN_BODY + HN_BF_MAC + 4,
                          "its writer", &data, &m, why, why_bytes);
    if (got != 1 && got != 3) return got;
    memcpy(j->nonce, m.nonce, HN_BF_NONCE);
    j->pid = m.pid;
    snprintf(j->host, sizeof j->host, "%s", m.host);
    free(data);
    return got;
}

int hidet_nccl__bf_decision_read(const hn_bf_state_t *s, uint64_t epoch, uint32_t world, uint8_t **data,
                                 hidet_nccl__bf_msg_t *m, char *why, size_t why_bytes) {
    char path[PATH_BYTES];
    hidet_nccl__bf_recovery_path(s, epoch, -1, "", path, sizeof path);
    size_t max = HN_BF_HEADER + HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * world + HN_BF_MAC + 4;
    return read_record(s, path, HN_BF_KIND_DECISION, epoch, world, -1, max, "its decider", data, m, why, why_bytes);
}

int hidet_nccl__bf_heal_read(const hn_bf_state_t *s, uint64_t epoch, uint32_t world, uint8_t **data,
                             hidet_nccl__bf_msg_t *m, char *why, size_t why_bytes) {
    char path[PATH_BYTES];
    hidet_nccl__bf_recovery_path(s, epoch, -1, "", path, sizeof path);
    size_t max = HN_BF_HEADER + HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * world + 4 +
                 (size_t)HN_BF_REFUSAL * HN_BF_MAX_REFUSALS + HN_BF_MAC + 4;
    return read_record(s, path, HN_BF_KIND_HEAL, epoch, world, -1, max, "its decider", data, m, why, why_bytes);
}

int hidet_nccl__bf_record_read_any(const hn_bf_state_t *s, const char *path, int kind, uint8_t **data, size_t *len,
                                   hidet_nccl__bf_msg_t *m) {
    char why[768];
    *data = NULL;
    if (hidet_nccl__bf_read(path, HN_BF_HEADER + 4, HN_BF_MAX_FILE, data, len, why, sizeof why) != 1) return 0;
    if (hidet_nccl__bf_parse(*data, *len, m, why, sizeof why) == 0 && m->kind == kind && strcmp(m->key, s->key) == 0)
        return 1;
    free(*data);
    *data = NULL;
    return 0;
}

/* 1 if every process the decision m keeps is a process of this host that is gone. */
static int all_kept_gone(const hidet_nccl__bf_msg_t *m) {
    for (uint32_t r = 0; r < m->world_size; r++) {
        hidet_nccl__bf_member_t p;
        hidet_nccl__bf_member(m, r, &p);
        if (p.kept && !hidet_nccl__bf_process_gone(p.pid, p.host)) return 0;
    }
    return 1;
}

int hidet_nccl__bf_decision_stale(const hn_bf_peer_t *peers, int n, int me, const hidet_nccl__bf_msg_t *m, int how) {
    if (!all_kept_gone(m)) return 0;
    if (how == HN_BF_STALE_FOREIGN) return 1;
    int contradicts = 0, known_all = 1, kept_known = 0;
    for (uint32_t r = 0; r < m->world_size; r++) {
        hidet_nccl__bf_member_t p;
        hidet_nccl__bf_member(m, r, &p);
        if (!p.kept) continue;
        for (int q = 0; q < n; q++) {
            int same = peers[q].pid == p.pid && strcmp(peers[q].host, p.host) == 0;
            if (how == HN_BF_STALE_THIS_ROUND && q == (int)r && peers[q].pid != 0 && !same) contradicts = 1;
            kept_known |= how == HN_BF_STALE_LATER && same;
        }
    }
    for (int q = 0; q < n; q++) known_all &= q == me || peers[q].pid != 0;
    return how == HN_BF_STALE_THIS_ROUND ? contradicts : known_all && !kept_known;
}

/* 1 if the decision m names this process as this rank. */
static int names_me(const hn_bf_state_t *s, const hidet_nccl__bf_msg_t *m) {
    hidet_nccl__bf_member_t me;
    hidet_nccl__bf_member(m, (uint32_t)s->rank, &me);
    return me.kept && me.pid == (uint32_t)getpid() && strcmp(me.host, s->host) == 0;
}

void hidet_nccl__bf_roster_put(hn_bf_state_t *s, const uint8_t *nonces) {
    if (s->roster || s->rank != 0 || s->epoch != 0) return;
    s->roster = 1;
    int n = s->nranks;
    char path[PATH_BYTES], why[768];
    size_t cap = HN_BF_HEADER + HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * n + HN_BF_MAC + 4;
    hidet_nccl__bf_member_t *members = calloc((size_t)n, sizeof *members);
    uint8_t *file = malloc(cap);
    size_t len = 0;
    for (int r = 0; members != NULL && r < n; r++) {
        members[r].kept = 1;
        memcpy(members[r].nonce, nonces + (size_t)r * HN_BF_NONCE, HN_BF_NONCE);
        members[r].pid = r == s->rank ? (uint32_t)getpid() : s->peers[r].pid;
        snprintf(members[r].host, sizeof members[r].host, "%s", r == s->rank ? s->host : s->peers[r].host);
    }
    if (members != NULL && file != NULL)
        len = hidet_nccl__bf_encode_decision(file, cap, s->key, hidet_nccl__bf_recovery_seq(s, 0), (uint32_t)n, 0, 0,
                                             members, s->secret_len > 0);
    hidet_nccl__bf_recovery_path(s, 0, -1, "", path, sizeof path);
    int put = len > 0 && hidet_nccl__bf_seal(s, file, len, why, sizeof why) == 0
                  ? hidet_nccl__bf_publish_new(path, file, len, NULL, why, sizeof why)
                  : -1;
    if (put == 1) { /* a roster is there: an earlier job's (this job's names this process): replaced */
        struct stat there;
        uint8_t *data;
        hidet_nccl__bf_msg_t m;
        int got = lstat(path, &there) == 0 ? hidet_nccl__bf_decision_read(s, 0, (uint32_t)s->nranks, &data, &m, why, sizeof why) : 0;
        int mine = got == 1 && names_me(s, &m);
        if (got == 1 || got == 3) free(data);
        if (!mine && got != 0 && S_ISREG(there.st_mode) && there.st_uid == geteuid())
            put = hidet_nccl__bf_publish_over(path, &there, file, len, NULL, why, sizeof why);
    }
    if (put != 0) HN_INFO("rank 0 could not put the roster %s (a recovery round will wait for what it cannot see): %s",
                          path, len > 0 ? why : "out of memory");
    free(members);
    free(file);
}

void hidet_nccl__bf_roster_read(hn_bf_state_t *s) {
    uint8_t *data;
    hidet_nccl__bf_msg_t m;
    char why[768];
    /* after a recovery round its decision gave every process (the numbering changed with it) */
    int got = s->epoch != 0 ? 0 : hidet_nccl__bf_decision_read(s, s->epoch, (uint32_t)s->nranks, &data, &m, why, sizeof why);
    if (got == 3) free(data);
    if (got != 1) return;
    if (names_me(s, &m)) {
        for (uint32_t r = 0; r < (uint32_t)s->nranks; r++) {
            hidet_nccl__bf_member_t p;
            hidet_nccl__bf_member(&m, r, &p);
            if (p.kept && s->peers[r].pid == 0) hidet_nccl__bf_peer_note(s, (int)r, p.pid, p.host);
        }
    }
    free(data);
}

int hidet_nccl__bf_peer_lost(void *state, char *msg, size_t n) {
    hn_bf_state_t *s = state;
    char path[PATH_BYTES];
    hn_bf_join_t j;
    for (int k = 0; k < HN_BF_PROBE_RANKS && k < s->nranks; k++) { /* a few ranks a call, in turn */
        int r = (s->probe_next + k) % s->nranks;
        if (r == s->rank || !joined_next(s, r, path, sizeof path, &j)) continue;
        hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d of the shared-file rendezvous (pid %u on '%s') "
                        "began recovery or heal round %llu (its join: %s)", r, j.pid, j.host,
                        (unsigned long long)(s->epoch + 1), path);
        return 1;
    }
    s->probe_next = (s->probe_next + HN_BF_PROBE_RANKS) % (s->nranks > 0 ? s->nranks : 1);
    return 0;
}

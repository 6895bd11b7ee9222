/* Whether a bootstrap being made is a restarted rank joining a job that went on (file_joining_int.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_joining_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"

#define PATH_BYTES 4400

/* A process the record m keeps that lives (or is of another host, unless here_only), in *who; 1
 * if there is one. */
static int keeps_live(const hn_bf_state_t *s, const hidet_nccl__bf_msg_t *m, int here_only,
                      hidet_nccl__bf_member_t *who) {
    for (uint32_t r = 0; r < m->world_size; r++) {
        hidet_nccl__bf_member(m, r, who);
        if (who->kept && who->pid != 0 && (uint32_t)getpid() != who->pid &&
            !hidet_nccl__bf_process_gone(who->pid, who->host) && (!here_only || strcmp(who->host, s->host) == 0))
            return 1;
    }
    return 0;
}

/* A decision of this job (a recovery round's, a heal round's, the roster) in the directory that
 * keeps a live process. One listing. */
static int decided(const hn_bf_state_t *s, char *why, size_t n) {
    DIR *d = opendir(s->dir);
    if (d == NULL) return 0;
    uint64_t gen = hidet_nccl__bf_seq_generation(hidet_nccl__bf_seq(s, 0));
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        uint64_t seq;
        int r, tmp, kind = hidet_nccl__bf_name_kind(s->key, e->d_name, &seq, &r, &tmp);
        if (kind != HN_BF_NAME_DECISION || tmp || hidet_nccl__bf_seq_generation(seq) != gen) continue;
        char path[PATH_BYTES + 300], inner[768];
        uint8_t *data = NULL;
        size_t len = 0;
        hidet_nccl__bf_msg_t m;
        hidet_nccl__bf_member_t who;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        int got = hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_DECISION, &data, &len, &m) ||
                  hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_HEAL, &data, &len, &m);
        uint64_t epoch = hidet_nccl__bf_seq_epoch(seq);
        /* One under another secret (or none) is counted too when a process it keeps lives on this
         * host: this process was started again without the job's secret, and the heal round
         * refuses it, saying so (an ended job's, whose processes are gone, and one of another
         * host, which could be another job's, are not counted). */
        int mac = got && hidet_nccl__bf_mac_ok(s, data, &m, "its decider", inner, sizeof inner) == 0;
        if (got && m.seq == seq && m.epoch == epoch &&
            (m.kind == HN_BF_KIND_HEAL || epoch == 0 ? m.world_size == (uint32_t)s->nranks
                                                     : m.world_size <= (uint32_t)s->nranks) &&
            keeps_live(s, &m, !mac, &who)) {
            found = 1;
            if (epoch == 0)
                snprintf(why, n, "the job's roster %s keeps pid %u on host '%s' (alive, or of another host)%s%s", path,
                         who.pid, who.host, mac ? "" : "; but ", mac ? "" : inner);
            else
                snprintf(why, n, "the decision of %s round %llu %s keeps pid %u on host '%s' (alive, or of another "
                         "host)%s%s", m.kind == HN_BF_KIND_HEAL ? "heal" : "recovery", (unsigned long long)epoch, path,
                         who.pid, who.host, mac ? "" : "; but ", mac ? "" : inner);
        }
        free(data);
    }
    closedir(d);
    return found;
}

/* The record of kind at path, this job's round seq in a world of the job's size (any rank): 1
 * (*data, *m; freed by the caller), else 0. */
static int round_record(const hn_bf_state_t *s, const char *path, int kind, uint64_t seq, uint8_t **data,
                        hidet_nccl__bf_msg_t *m) {
    size_t len;
    char inner[768];
    if (!hidet_nccl__bf_record_read_any(s, path, kind, data, &len, m)) return 0;
    if (m->seq == seq && m->world_size == (uint32_t)s->nranks &&
        (kind == HN_BF_KIND_CLAIM || hidet_nccl__bf_mac_ok(s, *data, m, "its root", inner, sizeof inner) == 0))
        return 1;
    free(*data);
    *data = NULL;
    return 0;
}

/* The first round's announce, of this job, under a live claim whose nonce it carries, without
 * this rank's hello (its process before took the bytes); or, with a secret, of this rank as the
 * root (its process before published it). */
static int first_round_taken(const hn_bf_state_t *s, char *why, size_t n) {
    uint64_t seq = hidet_nccl__bf_seq(s, 0);
    char id_path[PATH_BYTES], claim_path[PATH_BYTES], hello[PATH_BYTES + 16];
    uint8_t *id = NULL, *claim = NULL;
    hidet_nccl__bf_msg_t a, c;
    hidet_nccl__bf_round_path(s, seq, -1, id_path, sizeof id_path);
    hidet_nccl__bf_round_path(s, seq, -2, claim_path, sizeof claim_path);
    int taken = 0;
    if (round_record(s, id_path, HN_BF_KIND_ANNOUNCE, seq, &id, &a) &&
        round_record(s, claim_path, HN_BF_KIND_CLAIM, seq, &claim, &c) && c.rank == a.rank &&
        memcmp(c.nonce, a.nonces + (size_t)a.rank * HN_BF_NONCE, HN_BF_NONCE) == 0) {
        int gone = hidet_nccl__bf_process_gone(c.pid, c.host);
        if (a.rank == (uint32_t)s->rank) {
            taken = s->secret_len > 0 && gone;
            if (taken)
                snprintf(why, n, "the job's first round was published by this rank's process before (pid %u, gone: "
                         "%s), and the other ranks took it", c.pid, id_path);
        } else if (!gone) {
            struct stat st;
            static const char *const marks[] = {"", ".gaveup", ".failed"};
            taken = 1;
            for (int i = 0; i < 3; i++) {
                hidet_nccl__bf_round_path(s, seq, s->rank, hello, sizeof hello - 16);
                strcat(hello, marks[i]);
                if (lstat(hello, &st) == 0 || errno != ENOENT) taken = 0;
            }
            if (taken)
                snprintf(why, n, "the job's first round %s is out and this rank's answer is gone: its process before "
                         "took the bytes", id_path);
        }
    }
    free(id);
    free(claim);
    return taken;
}

/* The announce first, then the decisions: rank 0 puts its roster before it removes the first
 * round's announce (file_root.c), so one of the two is there at every moment from the announce on,
 * but only a look at the announce before the roster sees one of them for sure. Looked at the
 * other way round, a rank restarted the moment its first round returned could miss the roster
 * (not yet put) and then the announce (removed meanwhile): about 1 restart in 6 was taken for a
 * rank of a forming job, and waited for a first round that never came. */
int hidet_nccl__bf_job_formed(const hn_bf_state_t *s, char *why, size_t why_bytes) {
    if (s->nranks < 2) return 0;
    return first_round_taken(s, why, why_bytes) || decided(s, why, why_bytes);
}

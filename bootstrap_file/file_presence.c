/* Each rank's presence in the rendezvous directory (file_presence_int.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_presence_int.h"

#define PATH_BYTES 4400

/* What a presence found at path is to a rank about to put its own: 0 stale (replace it), 1 a
 * second live process as this rank (why), -1 not this user's to replace (why). */
static int judge(const hn_bf_state_t *s, const char *path, const struct stat *there, char *why, size_t n) {
    hn_bf_join_t j;
    char inner[768];
    if (!(S_ISREG(there->st_mode) && there->st_uid == geteuid())) {
        hidet_nccl__bf_in_the_way(path, there, why, n);
        return -1;
    }
    int got = hidet_nccl__bf_join_read(s, 0, (uint32_t)s->first_size, s->first_rank, path, &j, inner, sizeof inner);
    if (got != 1 && got != 3) return 0; /* torn, another round's or world's: this user's, nobody's now */
    if (strcmp(j.host, s->host) != 0) {
        HN_INFO("rank %d: %s is the presence of pid %u on host '%s' as this rank (an ended job's, or a second process "
                "there: whether it lives cannot be seen from this host); replaced", s->first_rank, path, j.pid, j.host);
        return 0;
    }
    if (hidet_nccl__bf_process_gone(j.pid, j.host) || j.pid == (uint32_t)getpid()) return 0;
    snprintf(why, n, "%s is the presence of another live process as rank %d (pid %u on this host, '%s')%s: two "
             "processes were started as rank %d of job key '%s' in %s; both fail: this one now, that one at its next "
             "bootstrap call or its end. Start each rank once, and give each job its own key", path, s->first_rank, j.pid,
             j.host, got == 3 ? ", of another job (its MAC is not this job's secret's)" : "", s->first_rank, s->key, s->dir);
    return 1;
}

/* The presence as put (s->presence), held open: a look at it costs no path lookup. */
static hidet_nccl_status_t hold(hn_bf_state_t *s, const char *path) {
    struct stat st;
    s->presence_fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (s->presence_fd >= 0 && (fstat(s->presence_fd, &st) != 0 || !hidet_nccl__bf_same_file(&st, &s->presence))) {
        close(s->presence_fd); /* replaced already: the next look by path says so */
        s->presence_fd = -1;
    }
    return HIDET_NCCL_SUCCESS;
}

/* Puts this rank's presence (its job rank's, s->first_*); a live process's there: with `joined`
 * (a restarted rank taken in) left as it is (1 returned, nothing put), else removed (two
 * processes as this rank: both fail). */
static hidet_nccl_status_t put(hn_bf_state_t *s, int joined, char *msg, size_t n) {
    char path[PATH_BYTES], why[1024] = "";
    uint8_t file[HN_BF_HEADER + HN_BF_JOIN_BODY + HN_BF_MAC + 4], nonce[HN_BF_NONCE];
    hidet_nccl__bf_recovery_path(s, 0, s->first_rank, "", path, sizeof path);
    if (hidet_nccl__bf_random(nonce, sizeof nonce, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "%s", why);
    size_t len = hidet_nccl__bf_encode_join(file, sizeof file, s->key, hidet_nccl__bf_recovery_seq(s, 0),
                                            (uint32_t)s->first_size, (uint32_t)s->first_rank, nonce, 0,
                                            (uint32_t)getpid(), s->host, s->secret_len > 0);
    if (len == 0 || hidet_nccl__bf_seal(s, file, len, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not make its presence: %s", s->first_rank,
                               len ? why : "it does not fit");
    for (int attempt = 0; attempt < 4; attempt++) {
        int put = hidet_nccl__bf_publish_new(path, file, len, &s->presence, why, sizeof why);
        if (put == 0) return hold(s, path);
        struct stat there;
        if (put < 0 || lstat(path, &there) != 0) {
            if (put < 0)
                return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not put its presence in the "
                                       "rendezvous directory (job key '%s'): %s", s->first_rank, s->key, why);
            continue; /* gone again: once more */
        }
        int verdict = judge(s, path, &there, why, sizeof why);
        if (verdict != 0 && joined) {
            HN_INFO("job rank %d, taken back in: its presence is not put (%s)", s->first_rank, why);
            memset(&s->presence, 0, sizeof s->presence);
            return HIDET_NCCL_SUCCESS;
        }
        if (verdict == 1) {
            /* The other process's, unchanged: removed, so that it fails too. Gone before this one
             * removed it (its finalize did, which it would fail had this one's unlink come first):
             * its bootstrap ended whole before the two met; this one goes on as the only process. */
            struct stat now;
            if (lstat(path, &now) != 0 || !hidet_nccl__bf_same_file(&now, &there)) continue;
            if (unlink(path) != 0 && errno == ENOENT) continue;
        }
        if (verdict != 0) {
            memset(&s->presence, 0, sizeof s->presence);
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->first_rank, why);
        }
        int over = hidet_nccl__bf_publish_over(path, &there, file, len, &s->presence, why, sizeof why);
        if (over == 0) return hold(s, path);
        if (over < 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not replace the stale %s: %s",
                                   s->first_rank, path, why);
    }
    memset(&s->presence, 0, sizeof s->presence);
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not put its presence %s: it was "
                           "replaced four times while it tried (two processes as rank %d?)", s->first_rank, path, s->first_rank);
}

hidet_nccl_status_t hidet_nccl__bf_presence_put(hn_bf_state_t *s, char *msg, size_t n) {
    s->first_rank = s->rank;
    s->first_size = s->nranks;
    return put(s, 0, msg, n);
}

void hidet_nccl__bf_presence_take(hn_bf_state_t *s) {
    char msg[1024];
    if (put(s, 1, msg, sizeof msg) != HIDET_NCCL_SUCCESS)
        HN_INFO("job rank %d, taken back in: its presence is not put: %s", s->first_rank, msg);
}

/* This rank's presence at path is not the one it put: said, with the process whose it is now. */
static hidet_nccl_status_t gone(const hn_bf_state_t *s, const char *path, char *msg, size_t n) {
    char why[768];
    hn_bf_join_t j;
    char who[256] = "was removed by another process";
    int got = hidet_nccl__bf_join_read(s, 0, (uint32_t)s->first_size, s->first_rank, path, &j, why, sizeof why);
    if (got == 1 || got == 3)
        snprintf(who, sizeof who, "was replaced by the presence of pid %u on host '%s'", j.pid, j.host);
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                           "rank %d: this rank's presence %s %s: another process was started as rank %d of job key "
                           "'%s' (it found this one and failed), or two jobs use that key in %s at once, or someone "
                           "removed the job's files; this bootstrap can only be destroyed now. Start each rank once, "
                           "and give each job its own key", s->rank, path, who, s->first_rank, s->key, s->dir);
}

hidet_nccl_status_t hidet_nccl__bf_presence_held(const hn_bf_state_t *s, char *msg, size_t n) {
    if (s->presence.st_ino == 0) return HIDET_NCCL_SUCCESS;
    char path[PATH_BYTES];
    struct stat now;
    if (s->presence_fd >= 0 && fstat(s->presence_fd, &now) == 0 && now.st_nlink > 0) return HIDET_NCCL_SUCCESS;
    hidet_nccl__bf_recovery_path(s, 0, s->first_rank, "", path, sizeof path);
    if (s->presence_fd < 0 && lstat(path, &now) == 0 && hidet_nccl__bf_same_file(&now, &s->presence))
        return HIDET_NCCL_SUCCESS;
    return gone(s, path, msg, n);
}

hidet_nccl_status_t hidet_nccl__bf_presence_drop(hn_bf_state_t *s, char *msg, size_t n) {
    char path[PATH_BYTES];
    struct stat now;
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (s->presence_fd >= 0) close(s->presence_fd);
    s->presence_fd = -1;
    if (s->presence.st_ino == 0) return st;
    hidet_nccl__bf_recovery_path(s, 0, s->first_rank, "", path, sizeof path);
    /* The unlink is the last look: a second process that removes it first makes this one fail
     * (the other fails too); one that finds it gone goes on alone (file_presence_int.h). */
    if (lstat(path, &now) != 0 || !hidet_nccl__bf_same_file(&now, &s->presence) || (unlink(path) != 0 && errno == ENOENT))
        st = gone(s, path, msg, n);
    memset(&s->presence, 0, sizeof s->presence);
    return st;
}

void hidet_nccl__bf_presence_read(hn_bf_state_t *s) {
    char why[768];
    for (int r = 0; s->epoch == 0 && r < s->nranks; r++) { /* later rounds know every rank from the decision */
        hn_bf_join_t j;
        if (r == s->rank || s->peers[r].pid != 0) continue;
        if (hidet_nccl__bf_join_read(s, 0, (uint32_t)s->nranks, r, NULL, &j, why, sizeof why) == 1)
            hidet_nccl__bf_peer_note(s, r, j.pid, j.host);
    }
}

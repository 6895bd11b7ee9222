/* The root's claim on a round of the shared-file bootstrap (file_claim_int.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_file/file_claim_int.h"
#include "bootstrap_file/file_io_int.h"

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)
#define CLAIM_FILE (HN_BF_HEADER + HN_BF_CLAIM_BODY + 4)

static uint64_t unix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Reads the round's claim into *m (its bytes in *data, freed by the caller; NULL unless 1).
 * 1 read, 0 none, -1 refused or not this round's claim (why). */
static int read_claim(const hn_bf_claim_t *c, uint8_t **data, hidet_nccl__bf_msg_t *m, char *why, size_t why_bytes) {
    size_t len = 0;
    *data = NULL;
    int got = hidet_nccl__bf_read(c->path, CLAIM_FILE, CLAIM_FILE, data, &len, why, why_bytes);
    if (got <= 0) return got;
    char inner[384];
    if (hidet_nccl__bf_parse(*data, len, m, inner, sizeof inner) != 0 ||
        hidet_nccl__bf_expect(m, HN_BF_KIND_CLAIM, c->key, c->seq, c->world, c->root, inner, sizeof inner) != 0) {
        free(*data);
        *data = NULL;
        return WHY("%s: %s; refused", c->path, inner);
    }
    return 1;
}

/* A claim nobody holds any more: past its expiry, or of a process of this host that is gone (or
 * of this very process: an earlier call's), collided or not. */
static int stale(const hidet_nccl__bf_msg_t *m) {
    if (m->expiry_ms < unix_ms()) return 1;
    char host[HN_BF_HOST_BYTES + 1];
    hidet_nccl__bf_this_host(host);
    return (strcmp(host, m->host) == 0 && (pid_t)m->pid == getpid()) || hidet_nccl__bf_process_gone(m->pid, m->host);
}

static void describe(const hidet_nccl__bf_msg_t *m, char *out, size_t n) {
    long long left = (long long)m->expiry_ms - (long long)unix_ms();
    if (hidet_nccl__bf_process_gone(m->pid, m->host))
        snprintf(out, n, "pid %u on host '%s', which is gone", m->pid, m->host);
    else if (left <= 0)
        snprintf(out, n, "pid %u on host '%s', expired %.1f s ago", m->pid, m->host, (double)-left / 1e3);
    else
        snprintf(out, n, "pid %u on host '%s', held for %.1f s more", m->pid, m->host, (double)left / 1e3);
}

int hidet_nccl__bf_claim_take(hn_bf_claim_t *c, double hold_s, char *why, size_t why_bytes) {
    uint8_t file[CLAIM_FILE];
    char host[HN_BF_HOST_BYTES + 1];
    hidet_nccl__bf_this_host(host);
    if (hidet_nccl__bf_random(c->nonce, sizeof c->nonce, why, why_bytes) != 0) return -1;
    size_t len = hidet_nccl__bf_encode_claim(file, sizeof file, c->key, c->seq, c->world, c->root, c->nonce,
                                             unix_ms() + (uint64_t)(hold_s * 1000), (uint32_t)getpid(), 0, host);
    for (int attempt = 0; attempt < 4; attempt++) {
        int put = hidet_nccl__bf_publish_new(c->path, file, len, &c->seen, why, why_bytes);
        if (put < 0) return -1;
        if (put == 0) {
            c->have = 1;
            return 0;
        }
        uint8_t *data;
        hidet_nccl__bf_msg_t m;
        char inner[512];
        int got = read_claim(c, &data, &m, inner, sizeof inner);
        if (got == 1 && !stale(&m)) {
            char who[160];
            describe(&m, who, sizeof who);
            free(data);
            hidet_nccl__bf_claim_mark(c);
            snprintf(why, why_bytes,
                     "%s is claimed by another live root (%s): two jobs use job key '%s' in this directory at once; "
                     "both fail. Give each job its own key", c->path, who, c->key);
            return HN_BF_COLLIDED;
        }
        free(data);
        struct stat st;
        if (got != 0 && lstat(c->path, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
            hidet_nccl__bf_in_the_way(c->path, &st, why, why_bytes);
            return -1;
        }
        if (got < 0 && lstat(c->path, &st) != 0) return WHY("%s", inner);
        unlink(c->path); /* stale, torn or of an older format: this user's, and nobody holds it */
    }
    return WHY("could not claim %s: it came back four times", c->path);
}

int hidet_nccl__bf_claim_held(hn_bf_claim_t *c, char *why, size_t why_bytes) {
    struct stat st = {0};
    if (lstat(c->path, &st) == 0 && hidet_nccl__bf_same_file(&st, &c->seen)) return 0;
    uint8_t *data;
    hidet_nccl__bf_msg_t m;
    char inner[512];
    int got = read_claim(c, &data, &m, inner, sizeof inner);
    int ours = got == 1 && memcmp(m.nonce, c->nonce, HN_BF_NONCE) == 0;
    int collided = got == 1 && (m.flags & HN_BF_CLAIM_COLLIDED);
    free(data);
    if (ours && !collided && lstat(c->path, &st) == 0) { /* rewritten as it was (a touch): still ours */
        c->seen = st;
        return 0;
    }
    snprintf(why, why_bytes,
             "this round's claim %s was %s by another process: two jobs use job key '%s' in this directory at once "
             "(or someone removes the job's files); both fail. Give each job its own key",
             c->path, got == 0 ? "removed" : collided ? "found taken" : "replaced", c->key);
    return HN_BF_COLLIDED;
}

int hidet_nccl__bf_claim_look(hn_bf_claim_t *c, char *why, size_t why_bytes) {
    if (why_bytes) why[0] = '\0';
    struct stat st;
    if (lstat(c->path, &st) != 0) return 0;
    if ((c->have || c->seen.st_ino != 0) && hidet_nccl__bf_same_file(&st, &c->seen)) return 0;
    uint8_t *data;
    hidet_nccl__bf_msg_t m;
    int got = read_claim(c, &data, &m, why, why_bytes);
    if (got <= 0) return got;
    int rc = 0, answered = c->have && memcmp(m.nonce, c->nonce, HN_BF_NONCE) == 0;
    char who[160];
    describe(&m, who, sizeof who);
    /* A collided claim is news to those who answered it, and to everyone while its root lives;
     * once it is stale (its root gone, or expired) it is the leftover of an earlier job. */
    if ((m.flags & HN_BF_CLAIM_COLLIDED) && (answered || !stale(&m))) {
        rc = HN_BF_COLLIDED;
        snprintf(why, why_bytes,
                 "this round's claim %s (root %s) is marked collided: two jobs use job key '%s' in this directory "
                 "at once; both fail. Give each job its own key", c->path, who, c->key);
    } else if (stale(&m)) {
        snprintf(why, why_bytes, "%s is a stale %sclaim (root %s), not this job's root: waiting for it",
                 c->path, (m.flags & HN_BF_CLAIM_COLLIDED) ? "collided " : "", who);
    } else if (!answered) {
        memcpy(c->nonce, m.nonce, HN_BF_NONCE);
        c->pid = m.pid;
        snprintf(c->host, sizeof c->host, "%s", m.host);
        c->have = 1;
        rc = 1;
    }
    c->seen = st; /* a stale claim is not looked at again until it changes */
    free(data);
    return rc;
}

void hidet_nccl__bf_claim_mark(const hn_bf_claim_t *c) {
    /* In place, in the very file read: a claim its holder removed meanwhile is marked where nobody
     * sees it, never brought back (a new file would outlive everyone as a collided claim). One
     * write of the whole claim; a reader that catches it half written refuses it (its checksum)
     * and reads it again at its next look, as the change of its time asks. */
    uint8_t data[CLAIM_FILE], file[CLAIM_FILE];
    struct stat st;
    hidet_nccl__bf_msg_t m;
    char why[512];
    int fd = open(c->path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size == CLAIM_FILE &&
        pread(fd, data, sizeof data, 0) == (ssize_t)sizeof data &&
        hidet_nccl__bf_parse(data, sizeof data, &m, why, sizeof why) == 0 &&
        hidet_nccl__bf_expect(&m, HN_BF_KIND_CLAIM, c->key, c->seq, c->world, c->root, why, sizeof why) == 0 &&
        !(m.flags & HN_BF_CLAIM_COLLIDED)) {
        size_t len = hidet_nccl__bf_encode_claim(file, sizeof file, c->key, c->seq, c->world, c->root, m.nonce,
                                                 m.expiry_ms, m.pid, m.flags | HN_BF_CLAIM_COLLIDED, m.host);
        if (len == sizeof file) (void)!pwrite(fd, file, len, 0); /* best effort: nothing more to do */
    }
    close(fd);
}

void hidet_nccl__bf_claim_drop(hn_bf_claim_t *c) {
    char why[512];
    if (c->have && hidet_nccl__bf_claim_held(c, why, sizeof why) == 0) unlink(c->path);
    c->have = 0;
}

/* 1 if the claim file is c's (its nonce), marked collided and not expired. */
static int collided_ours(const hn_bf_claim_t *c) {
    uint8_t *data;
    hidet_nccl__bf_msg_t m;
    char why[512];
    int got = read_claim(c, &data, &m, why, sizeof why);
    int ours = got == 1 && memcmp(m.nonce, c->nonce, HN_BF_NONCE) == 0 && (m.flags & HN_BF_CLAIM_COLLIDED) &&
               m.expiry_ms > unix_ms();
    free(data);
    return ours;
}

int hidet_nccl__bf_claim_collided_ours(const hn_bf_claim_t *c) { return c->have && collided_ours(c); }

int hidet_nccl__bf_claim_remove_collided(hn_bf_claim_t *c) {
    struct stat before, now;
    int have = c->have;
    c->have = 0;
    if (!have || lstat(c->path, &before) != 0) return 0;
    /* Ours and unexpired: nobody else may replace it yet, so the file removed is that one. */
    if (!collided_ours(c) || lstat(c->path, &now) != 0 || !hidet_nccl__bf_same_file(&before, &now)) return 0;
    return unlink(c->path) == 0;
}

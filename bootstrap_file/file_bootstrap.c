/* The shared-file bootstrap: rank 0 publishes, the others wait, nothing is left behind.
 * Protocol (docs/bootstrap_file.md), for each round (a broadcast from a root, or an allgather
 * through rank 0), its files named by job key and sequence number (the bootstrap's generation
 * in this process for that directory and key, and the round's tag):
 *   1. the root claims the round: <dir>/hidet-nccl.<key>.<seq>.root with a fresh random nonce,
 *      put only where no live claim is (file_claim.c; two live roots: both jobs fail);
 *   2. every reader answers the claim with a HELLO (a fresh nonce of its own, the claim's
 *      nonce and, for an allgather, its part) at <dir>/hidet-nccl.<key>.<seq>.hello.<rank>,
 *      put only where no hello answers the claim already (else: a collision);
 *   3. the root waits for every HELLO that answers its claim, then publishes the ANNOUNCE (the
 *      bytes every rank gets, and every nonce) at <dir>/hidet-nccl.<key>.<seq>.id;
 *   4. a reader accepts only an ANNOUNCE of its job, round and world that carries the claim's
 *      nonce and its own (so a stale or foreign file is never accepted), then removes its
 *      HELLO; one whose deadline passes renames it to <hello>.gaveup instead;
 *   5. the root removes the ANNOUNCE and its claim once every HELLO is gone, and what writers
 *      of the round left (temporary files of a killed writer, gave-up hellos). A HELLO that
 *      gave up fails the round on the root; two answers for one rank are a collision.
 * One deadline covers the whole round, on every rank. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_claim_int.h"
#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_io_int.h"
#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"

typedef struct {
    char dir[4096];
    char key[HN_BF_KEY_BYTES + 1];
    int rank, nranks, local_rank, local_size;
    long poll_cap_ns;
    uint64_t generation; /* how many bootstraps of this directory and key this process made before */
} file_state_t;

/* The generation of a new bootstrap of (dir, key) in this process: every rank makes its
 * bootstraps of a job in the same order (hidet_nccl_init twice makes two), so the count agrees
 * across ranks and keeps one bootstrap's rounds apart from the next one's files. */
static uint64_t next_generation(const char *dir, const char *key) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static struct generation {
        struct generation *next;
        uint64_t count;
        char name[];
    } *list;
    size_t dir_len = strlen(dir), key_len = strlen(key);
    uint64_t gen = 0;
    pthread_mutex_lock(&lock);
    struct generation *g = list;
    while (g != NULL && !(memcmp(g->name, dir, dir_len + 1) == 0 && strcmp(g->name + dir_len + 1, key) == 0))
        g = g->next;
    if (g == NULL && (g = malloc(sizeof *g + dir_len + key_len + 2)) != NULL) { /* kept for the process's life */
        memcpy(g->name, dir, dir_len + 1);
        memcpy(g->name + dir_len + 1, key, key_len + 1);
        g->count = 0;
        g->next = list;
        list = g;
    }
    if (g != NULL) gen = g->count++;
    pthread_mutex_unlock(&lock);
    return gen;
}

/* One round. A broadcast: part_bytes 0, every rank ends with root's out (out_bytes). An
 * allgather: every rank's part (part_bytes) lands at out + rank * part_bytes on every rank. */
typedef struct {
    uint64_t seq;
    int root;
    const void *part;
    size_t part_bytes;
    void *out;
    size_t out_bytes;
} round_t;

/* The directory, the job key and the poll cap, from params or the settings. */
static hidet_nccl_status_t resolve_place(const hidet_nccl_file_bootstrap_params_t *p, file_state_t *s, char *msg,
                                         size_t n) {
    const char *dir = p->dir ? p->dir : hidet_nccl__setting_str(HN_SETTING_RENDEZVOUS_DIR);
    char slurm_key[HN_BF_KEY_BYTES + 2] = "";
    const char *key = p->job_key ? p->job_key : hidet_nccl__setting_str(HN_SETTING_JOB_KEY);
    const char *job = hidet_nccl__setting_str(HN_SETTING_SLURM_JOB_ID);
    if (key == NULL && job != NULL) {
        const char *step = hidet_nccl__setting_str(HN_SETTING_SLURM_STEP_ID);
        snprintf(slurm_key, sizeof slurm_key, "slurm-%.24s.%.24s", job, step ? step : "0");
        key = slurm_key;
    }
    const char *bad_cap = hidet_nccl__setting_error(HN_SETTING_POLL_MAX_MS);
    char why[512];
    if (dir == NULL)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "no rendezvous directory: pass params->dir or set $HIDET_NCCL_RENDEZVOUS_DIR to a "
                               "directory every rank sees");
    if (strlen(dir) >= sizeof s->dir - 128)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rendezvous directory path is too long");
    if (key == NULL)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "no job key: pass params->job_key or set $HIDET_NCCL_JOB_KEY (unique per job; "
                               "hidet-nccl-run and Slurm set one)");
    if (!hidet_nccl__key_ok(key, HN_BF_KEY_BYTES))
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "job key '%.80s' is not 1 to %d of the characters A-Z a-z 0-9 . _ -", key,
                               HN_BF_KEY_BYTES);
    if (bad_cap != NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", bad_cap);
    if (hidet_nccl__bf_check_dir(dir, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "%s", why);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->key, sizeof s->key, "%s", key);
    int cap_ms = 0; /* checked above: a bad value was refused */
    hidet_nccl__setting_int(HN_SETTING_POLL_MAX_MS, &cap_ms);
    s->poll_cap_ns = cap_ms * 1000000L;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t file_init(const void *params_v, const hidet_nccl_bootstrap_init_args_t *args, void **state,
                                     char *msg, size_t n) {
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    char why[384];
    if (params_v != NULL && hidet_nccl__copy_sized(&p, sizeof p, params_v, "params", why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", why);
    file_state_t *s = calloc(1, sizeof *s);
    if (s == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    hidet_nccl_status_t st = resolve_place(&p, s, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__rank_field(p.rank, args->rank, "rank", 1, args, &s->rank, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__rank_field(p.nranks, args->nranks, "number of ranks", 1, args, &s->nranks, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__rank_field(p.local_rank, args->local_rank, "local rank", 0, args, &s->local_rank, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__rank_field(p.local_size, args->local_size, "local size", 0, args, &s->local_size, msg, n);
    if (st == HIDET_NCCL_SUCCESS && (s->nranks < 1 || s->nranks > HN_BF_MAX_WORLD || s->rank >= s->nranks))
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank %d of %d ranks is out of range (1 .. %d ranks)",
                             s->rank, s->nranks, HN_BF_MAX_WORLD);
    if (st == HIDET_NCCL_SUCCESS && s->local_size >= 0 && (s->local_size < 1 || s->local_rank >= s->local_size))
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "local rank %d of local size %d is out of range",
                             s->local_rank, s->local_size);
    if (st != HIDET_NCCL_SUCCESS) {
        free(s);
        return st;
    }
    s->generation = next_generation(s->dir, s->key);
    *state = s;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t file_rank_size(void *state, int *rank, int *size, char *msg, size_t msg_bytes) {
    (void)msg;
    (void)msg_bytes;
    const file_state_t *s = state;
    *rank = s->rank;
    *size = s->nranks;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t file_local_rank(void *state, int *local_rank, int *local_size, char *msg,
                                           size_t msg_bytes) {
    (void)msg;
    (void)msg_bytes;
    const file_state_t *s = state;
    *local_rank = s->local_rank;
    *local_size = s->local_size;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t file_finalize(void *state, char *msg, size_t msg_bytes) {
    (void)msg;
    (void)msg_bytes;
    free(state);
    return HIDET_NCCL_SUCCESS;
}

/* Polls from 0.1 ms, doubling up to the cap, with jitter, until the round's deadline. The cap
 * is HIDET_NCCL_POLL_MAX_MS, or 20 us per rank when that is more: a thousand ranks polling one
 * directory every 5 ms would spend the host's CPUs on it. */
static void begin_poll(const file_state_t *s, hn_poll_t *poll, double timeout_s) {
    long scaled = 20000L * s->nranks;
    hidet_nccl__poll_begin(poll, timeout_s, 0, 100000, scaled > s->poll_cap_ns ? scaled : s->poll_cap_ns, 1);
}

/* The round's files: hello_rank >= 0 a reader's hello, -1 the announce, -2 the claim. */
static void path_of(const file_state_t *s, uint64_t seq, int hello_rank, char *out, size_t n) {
    if (hello_rank == -2)
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.root", s->dir, s->key, (unsigned long long)seq);
    else if (hello_rank < 0)
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.id", s->dir, s->key, (unsigned long long)seq);
    else
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.hello.%d", s->dir, s->key, (unsigned long long)seq, hello_rank);
}

/* Reads and checks rank r's hello: its nonce, and (if it answers the claim whose nonce is
 * root_nonce) its part into part, unless part is NULL. 1 read and answers the claim, 2 answers another claim (a
 * stale one: nothing copied), 0 absent, -1 refused (why). */
static int read_hello(const file_state_t *s, const round_t *rd, int r, const uint8_t *root_nonce,
                      uint8_t nonce[HN_BF_NONCE], void *part, char *why, size_t wn) {
    char path[4352];
    path_of(s, rd->seq, r, path, sizeof path);
    uint8_t *data = NULL;
    size_t len = 0, size = HN_BF_HEADER + 2 * HN_BF_NONCE + 4 + rd->part_bytes + 4;
    int got = hidet_nccl__bf_read(path, HN_BF_HEADER + 4, size, &data, &len, why, wn);
    if (got <= 0) return got;
    hidet_nccl__bf_msg_t m;
    char inner[384];
    int ok = hidet_nccl__bf_parse(data, len, &m, inner, sizeof inner) == 0 &&
             hidet_nccl__bf_expect(&m, HN_BF_KIND_HELLO, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)r, inner,
                                   sizeof inner) == 0;
    if (ok && m.data_bytes != rd->part_bytes) {
        snprintf(inner, sizeof inner, "a part of %u bytes, expected %zu", m.data_bytes, rd->part_bytes);
        ok = 0;
    }
    int answers = ok && memcmp(m.root_nonce, root_nonce, HN_BF_NONCE) == 0;
    if (ok) {
        memcpy(nonce, m.nonce, HN_BF_NONCE);
        if (answers && part != NULL && rd->part_bytes) memcpy(part, m.data, rd->part_bytes);
        if (!answers) snprintf(why, wn, "%s answers another root's claim (stale, or another job's)", path);
    } else {
        snprintf(why, wn, "%s: %s; refused", path, inner);
    }
    free(data);
    return !ok ? -1 : answers ? 1 : 2;
}

/* "3, 7, 9 (3 of 8 ranks)" for the ranks with flag[r] == 0. */
static void list_missing(const unsigned char *flag, int n, int skip, char *out, size_t cap) {
    size_t used = 0;
    int count = 0, shown = 0;
    out[0] = '\0';
    for (int r = 0; r < n; r++) {
        if (r == skip || flag[r]) continue;
        count++;
        if (shown < 16 && used + 16 < cap) {
            used += (size_t)snprintf(out + used, cap - used, "%s%d", shown ? ", " : "", r);
            shown++;
        }
    }
    snprintf(out + used, cap - used, "%s (%d of %d ranks)", count > shown ? ", ..." : "", count, n);
}

/* What the root keeps through a round: its claim, every reader's nonce, which readers are in,
 * and the announce's bytes (for an allgather, assembled from the hellos' parts). */
typedef struct {
    hn_bf_claim_t claim;
    uint8_t *nonces;
    unsigned char *have;
    uint8_t *file;
    size_t cap;
    struct stat *seen; /* each hello as last read: unchanged ones are not read again */
} root_work_t;

/* 0: rank r's hello is gone; 1: it is the one last read; 2: it changed (read it again). */
static int hello_state(const file_state_t *s, const round_t *rd, int r, const struct stat *seen) {
    char path[4352];
    path_of(s, rd->seq, r, path, sizeof path);
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : 2;
    return hidet_nccl__bf_same_file(&st, seen) ? 1 : 2;
}

/* Notes the identity of rank r's hello; taken before it is read, so that a replacement that
 * comes between the two shows as a change at the next look. */
static void note_hello(const file_state_t *s, const round_t *rd, int r, struct stat *seen) {
    char path[4352];
    path_of(s, rd->seq, r, path, sizeof path);
    if (lstat(path, seen) != 0) memset(seen, 0, sizeof *seen);
}

/* 1 if rank r gave up this round (its deadline passed): it renamed its hello to this. */
static int gave_up(const file_state_t *s, const round_t *rd, int r) {
    char path[4352 + 8];
    path_of(s, rd->seq, r, path, sizeof path - 8);
    strcat(path, ".gaveup");
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The part of rank r lands in the announce's data (an allgather), or nowhere. */
static void *part_slot(const round_t *rd, int r) {
    return rd->part_bytes ? (uint8_t *)rd->out + (size_t)r * rd->part_bytes : NULL;
}

/* The root's claim still holds; else the collision, as an error. */
static hidet_nccl_status_t claim_still_held(root_work_t *w, char *msg, size_t msg_bytes) {
    char why[1024];
    if (hidet_nccl__bf_claim_held(&w->claim, why, sizeof why) == 0) return HIDET_NCCL_SUCCESS;
    hidet_nccl__bf_claim_mark(&w->claim);
    return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "%s", why);
}

/* Two live processes answered this claim as rank r: a collision of two jobs. */
static hidet_nccl_status_t two_answers(const file_state_t *s, root_work_t *w, int r, char *msg, size_t msg_bytes) {
    hidet_nccl__bf_claim_mark(&w->claim);
    return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP,
                           "rank %d (root): two processes answered this round's claim as rank %d in %s: two jobs use "
                           "job key '%s' in this directory at once; both fail. Give each job its own key",
                           s->rank, r, s->dir, s->key);
}

/* Step 1: every reader's hello answering the claim. */
static hidet_nccl_status_t await_hellos(file_state_t *s, const round_t *rd, root_work_t *w, hn_poll_t *poll, char *msg,
                                        size_t msg_bytes) {
    int n = s->nranks;
    char why[768] = "", missing[160];
    for (int waiting = n - 1; waiting > 0;) {
        for (int r = 0; r < n; r++) {
            if (w->have[r]) continue;
            note_hello(s, rd, r, &w->seen[r]);
            if (read_hello(s, rd, r, w->claim.nonce, w->nonces + (size_t)r * HN_BF_NONCE, part_slot(rd, r), why,
                           sizeof why) == 1) {
                w->have[r] = 1;
                waiting--;
            }
        }
        if (waiting == 0) break;
        hidet_nccl_status_t held = claim_still_held(w, msg, msg_bytes);
        if (held != HIDET_NCCL_SUCCESS) return held;
        if (hidet_nccl__poll_expired(poll)) {
            int quit = -1;
            for (int r = 0; r < n && quit < 0; r++)
                if (!w->have[r] && gave_up(s, rd, r)) quit = r;
            list_missing(w->have, n, s->rank, missing, sizeof missing);
            return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d (root) waited %.1f s in %s for ranks %s, which never arrived (no valid "
                                   "hello file hidet-nccl.%s.%llu.hello.<rank>)%s%s%s",
                                   s->rank, poll->timeout_s, s->dir, missing, s->key, (unsigned long long)rd->seq,
                                   quit >= 0 ? "; some gave up before the root came (their deadline passed)"
                                   : waiting == n - 1 ? "; no rank arrived at all: do they use this directory and job "
                                                        "key, and can they write to it (a rank that cannot fails at once)?"
                                                      : "",
                                   why[0] ? "; last problem: " : "", why);
        }
        hidet_nccl__poll_pause(poll);
    }
    return HIDET_NCCL_SUCCESS;
}

/* Steps 2 to 4: publish, then watch until every hello is gone (taken). A hello that gave up
 * fails the round; a second answer to the claim for one rank (before or after the first was
 * taken) is a collision. */
static hidet_nccl_status_t publish_until_taken(file_state_t *s, const round_t *rd, root_work_t *w, hn_poll_t *poll,
                                               char *msg, size_t msg_bytes) {
    int n = s->nranks;
    char id_path[4352], why[768] = "", missing[160];
    path_of(s, rd->seq, -1, id_path, sizeof id_path);
    size_t len = hidet_nccl__bf_encode_announce(w->file, w->cap, s->key, rd->seq, (uint32_t)n, (uint32_t)s->rank,
                                                rd->out, (uint32_t)rd->out_bytes, w->nonces);
    if (len == 0 || hidet_nccl__bf_publish(id_path, w->file, len, why, sizeof why) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root) could not publish %s: %s",
                               s->rank, id_path, len ? why : "too large");
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    for (;;) {
        int left = 0;
        for (int r = 0; r < n && st == HIDET_NCCL_SUCCESS; r++) {
            if (r == s->rank) continue;
            int state = hello_state(s, rd, r, &w->seen[r]);
            uint8_t nonce[HN_BF_NONCE];
            if (state == 2) note_hello(s, rd, r, &w->seen[r]);
            int got = state == 0 ? 0 : state == 1 ? 3 : read_hello(s, rd, r, w->claim.nonce, nonce, NULL, why, sizeof why);
            if (!w->have[r]) { /* taken: a new answer for this rank now is a second process */
                if (got == 1) st = two_answers(s, w, r, msg, msg_bytes);
                continue;
            }
            if (got == 0 && gave_up(s, rd, r))
                st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                     "rank %d (root) published %s, but rank %d gave up before taking it (its deadline "
                                     "passed)", s->rank, id_path, r);
            else if (got == 0)
                w->have[r] = 0; /* taken: its hello is gone */
            else if (got == 1 && memcmp(nonce, w->nonces + (size_t)r * HN_BF_NONCE, HN_BF_NONCE) != 0)
                st = two_answers(s, w, r, msg, msg_bytes);
            else
                left++; /* still there, or for a moment another claim's (a reader that saw a stale one) */
        }
        if (st != HIDET_NCCL_SUCCESS || left == 0) break;
        st = claim_still_held(w, msg, msg_bytes);
        if (st != HIDET_NCCL_SUCCESS) break;
        if (hidet_nccl__poll_expired(poll)) {
            for (int r = 0; r < n; r++) w->have[r] = !w->have[r] || r == s->rank;
            list_missing(w->have, n, s->rank, missing, sizeof missing);
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                 "rank %d (root) published %s but ranks %s did not take it within %.1f s", s->rank,
                                 id_path, missing, poll->timeout_s);
            break;
        }
        hidet_nccl__poll_pause(poll);
    }
    unlink(id_path);
    return st;
}

/* What writers of this round left: temporary files of a writer killed mid-write, and the
 * hellos of readers that gave up. Every writer of the round is done when its root ends it. */
static void remove_leftovers(const file_state_t *s, const round_t *rd) {
    char prefix[HN_BF_KEY_BYTES + 64];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "hidet-nccl.%s.%llu.", s->key, (unsigned long long)rd->seq);
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *name = e->d_name;
        size_t len = strlen(name);
        if (strncmp(name, prefix, plen) == 0 &&
            (strstr(name + plen, ".tmp.") != NULL || (len > 7 && strcmp(name + len - 7, ".gaveup") == 0)))
            unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

static hidet_nccl_status_t root_round(file_state_t *s, const round_t *rd, double timeout_s, char *msg,
                                      size_t msg_bytes) {
    int n = s->nranks;
    root_work_t w = {{s->key, rd->seq, (uint32_t)n, (uint32_t)s->rank, "", {0}, 0, {0}},
                     calloc((size_t)n, HN_BF_NONCE), calloc((size_t)n, 1), NULL,
                     HN_BF_HEADER + 8 + rd->out_bytes + (size_t)HN_BF_NONCE * n, calloc((size_t)n, sizeof(struct stat))};
    w.file = malloc(w.cap);
    path_of(s, rd->seq, -2, w.claim.path, sizeof w.claim.path);
    hidet_nccl_status_t st;
    char why[1024];
    if (!w.nonces || !w.have || !w.file || !w.seen) {
        st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", n);
    } else {
        int took = hidet_nccl__bf_claim_take(&w.claim, timeout_s, why, sizeof why);
        if (took != 0) {
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root)%s: %s", s->rank,
                                 took == HN_BF_COLLIDED ? "" : " could not claim the round", why);
        } else {
            memcpy(w.nonces + (size_t)s->rank * HN_BF_NONCE, w.claim.nonce, HN_BF_NONCE);
            w.have[s->rank] = 1;
            if (rd->part_bytes) memmove(part_slot(rd, s->rank), rd->part, rd->part_bytes);
            hn_poll_t poll;
            begin_poll(s, &poll, timeout_s);
            st = await_hellos(s, rd, &w, &poll, msg, msg_bytes);
            if (st == HIDET_NCCL_SUCCESS) st = publish_until_taken(s, rd, &w, &poll, msg, msg_bytes);
            hidet_nccl__bf_claim_drop(&w.claim); /* only if still ours: a collided one stays for the others */
            remove_leftovers(s, rd);
        }
    }
    free(w.nonces);
    free(w.have);
    free(w.file);
    free(w.seen);
    return st;
}

/* Puts this reader's hello answering the claim c, only where no hello is (link(2)): one that
 * is there answering another claim (stale, or this reader's own answer to an earlier claim) is
 * replaced; one answering the same claim for another process is a second live process as this
 * rank, two jobs sharing the key: the claim is marked collided and this rank fails. */
static hidet_nccl_status_t put_hello(file_state_t *s, const round_t *rd, const hn_bf_claim_t *c,
                                     const uint8_t nonce[HN_BF_NONCE], const char *hello_path, char *msg,
                                     size_t msg_bytes) {
    char why[768];
    size_t cap = HN_BF_HEADER + 2 * HN_BF_NONCE + 4 + rd->part_bytes + 4;
    uint8_t *hello = malloc(cap), other[HN_BF_NONCE];
    if (hello == NULL) return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    size_t len = hidet_nccl__bf_encode_hello(hello, cap, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)s->rank,
                                             nonce, c->nonce, rd->part, (uint32_t)rd->part_bytes);
    int put = len == 0 ? -1 : 1, collided = 0;
    for (int attempt = 0; put == 1 && !collided && attempt < 4; attempt++) {
        put = hidet_nccl__bf_publish_new(hello_path, hello, len, why, sizeof why);
        if (put != 1) break;
        collided = read_hello(s, rd, s->rank, c->nonce, other, NULL, why, sizeof why) == 1 &&
                   memcmp(other, nonce, HN_BF_NONCE) != 0;
        if (!collided) unlink(hello_path); /* stale, or an answer to another claim */
    }
    free(hello);
    if (collided) {
        hidet_nccl__bf_claim_mark(c);
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d: %s already answers this round's claim for another process: two jobs use job "
                               "key '%s' in %s at once; both fail. Give each job its own key",
                               s->rank, hello_path, s->key, s->dir);
    }
    if (put != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not announce itself: %s",
                               s->rank, len == 0 ? "too large" : put == 1 ? "its hello file kept coming back" : why);
    return HIDET_NCCL_SUCCESS;
}

/* The announce's bytes if it is this round's, carries the claim's nonce and this reader's. 1
 * taken, 0 not yet (seen says why). */
static int take_announce(const file_state_t *s, const round_t *rd, const hn_bf_claim_t *c,
                         const uint8_t nonce[HN_BF_NONCE], const char *id_path, char *seen, size_t seen_bytes) {
    uint8_t *data = NULL;
    size_t len = 0;
    char why[768];
    int got = hidet_nccl__bf_read(id_path, HN_BF_HEADER + 4, HN_BF_MAX_FILE, &data, &len, why, sizeof why);
    if (got < 0) snprintf(seen, seen_bytes, "%s", why);
    int taken = 0;
    if (got == 1) {
        hidet_nccl__bf_msg_t m;
        char inner[384];
        if (hidet_nccl__bf_parse(data, len, &m, inner, sizeof inner) != 0 ||
            hidet_nccl__bf_expect(&m, HN_BF_KIND_ANNOUNCE, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)rd->root,
                                  inner, sizeof inner) != 0) {
            snprintf(seen, seen_bytes, "%s: %s; refused", id_path, inner);
        } else if (memcmp(m.nonces + (size_t)rd->root * HN_BF_NONCE, c->nonce, HN_BF_NONCE) != 0 ||
                   memcmp(m.nonces + (size_t)s->rank * HN_BF_NONCE, nonce, HN_BF_NONCE) != 0) {
            snprintf(seen, seen_bytes, "%s does not carry this round's claim and this rank's nonce (stale, or "
                     "another job's); refused", id_path);
        } else if (m.data_bytes != rd->out_bytes) {
            snprintf(seen, seen_bytes, "%s holds %u bytes, expected %zu; refused", id_path, m.data_bytes,
                     rd->out_bytes);
        } else {
            memcpy(rd->out, m.data, rd->out_bytes);
            taken = 1;
        }
    }
    free(data);
    return taken;
}

/* A reader: waits for the root's claim, answers it with a hello, takes the announce that
 * carries both nonces. A new claim (a stale one replaced) is answered again. At the deadline
 * its hello becomes <hello>.gaveup, so that the root knows it did not take the bytes. */
static hidet_nccl_status_t reader_round(file_state_t *s, const round_t *rd, double timeout_s, char *msg,
                                        size_t msg_bytes) {
    uint8_t nonce[HN_BF_NONCE];
    char hello_path[4352], id_path[4352], why[1024], seen[1024] = "no claim from the root yet";
    path_of(s, rd->seq, s->rank, hello_path, sizeof hello_path);
    path_of(s, rd->seq, -1, id_path, sizeof id_path);
    hn_bf_claim_t c = {s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)rd->root, "", {0}, 0, {0}};
    path_of(s, rd->seq, -2, c.path, sizeof c.path);
    if (hidet_nccl__bf_random(nonce, sizeof nonce, why, sizeof why) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "%s", why);
    hn_poll_t poll;
    begin_poll(s, &poll, timeout_s);
    int answered = 0;
    for (;;) {
        int look = hidet_nccl__bf_claim_look(&c, why, sizeof why);
        hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
        if (look == HN_BF_COLLIDED)
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->rank, why);
        else if (look < 0)
            snprintf(seen, sizeof seen, "%s", why);
        else if (look == 1) /* a failed answer leaves no hello of ours: never remove another's */
            answered = (st = put_hello(s, rd, &c, nonce, hello_path, msg, msg_bytes)) == HIDET_NCCL_SUCCESS;
        if (st != HIDET_NCCL_SUCCESS) {
            if (answered) unlink(hello_path);
            return st;
        }
        if (answered && take_announce(s, rd, &c, nonce, id_path, seen, sizeof seen)) {
            unlink(hello_path); /* tells the root this rank has its bytes */
            return HIDET_NCCL_SUCCESS;
        }
        if (answered && strcmp(seen, "no claim from the root yet") == 0) snprintf(seen, sizeof seen, "no file yet");
        if (hidet_nccl__poll_expired(&poll)) {
            char quit[4352 + 8];
            snprintf(quit, sizeof quit, "%s.gaveup", hello_path);
            if (answered && rename(hello_path, quit) != 0) unlink(hello_path);
            return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d waited %.1f s for %s from rank %d (root); last seen: %s", s->rank,
                                   timeout_s, id_path, rd->root, seen);
        }
        hidet_nccl__poll_pause(&poll);
    }
}

static hidet_nccl_status_t run_round(file_state_t *s, const round_t *rd, double timeout_s, char *msg,
                                     size_t msg_bytes) {
    if (rd->out_bytes > HN_BF_MAX_DATA)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%zu bytes is more than %d",
                               rd->out_bytes, HN_BF_MAX_DATA);
    if (s->nranks == 1) {
        if (rd->part_bytes) memmove(rd->out, rd->part, rd->part_bytes);
        return HIDET_NCCL_SUCCESS;
    }
    if (s->rank == rd->root) return root_round(s, rd, timeout_s, msg, msg_bytes);
    return reader_round(s, rd, timeout_s, msg, msg_bytes);
}

/* A round's sequence number: the bootstrap's generation above its tag. */
static uint64_t seq_of(const file_state_t *s, uint64_t tag) { return s->generation << 32 | (tag & 0xffffffffu); }

static hidet_nccl_status_t file_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    const round_t rd = {seq_of(state, tag), root, NULL, 0, buf, bytes};
    return run_round(state, &rd, timeout_s, msg, msg_bytes);
}

static hidet_nccl_status_t file_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    file_state_t *s = state; /* bytes * nranks is at most 8 MiB (the plug-in contract) */
    const round_t rd = {seq_of(s, tag), 0, send, bytes, recv, bytes * (size_t)s->nranks};
    return run_round(s, &rd, timeout_s, msg, msg_bytes);
}

const hidet_nccl_bootstrap_v2_t hidet_nccl_bootstrap_file_v2 = {
    .name = "file",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = file_init,
    .rank_size = file_rank_size,
    .local_rank = file_local_rank,
    .broadcast = file_broadcast,
    .allgather = file_allgather,
    .finalize = file_finalize,
};

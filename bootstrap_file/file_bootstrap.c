/* The shared-file bootstrap: rank 0 publishes, the others wait, nothing is left behind.
 * Protocol (docs/bootstrap_file.md), for each round (a broadcast from a root, or an allgather
 * through rank 0), its files named by job key and sequence number (the bootstrap's generation
 * in this process for that directory and key, and the round's tag: file_names.c):
 *   1. the root claims the round: <dir>/hidet-nccl.<key>.<seq>.root with a fresh random nonce,
 *      put only where no live claim is (file_claim.c; two live roots: both jobs fail);
 *   2. every reader answers the claim with a HELLO (a fresh nonce of its own, the claim's
 *      nonce, its pid and host and, for an allgather, its part) at
 *      <dir>/hidet-nccl.<key>.<seq>.hello.<rank>, put only where no hello answers the claim
 *      already (one of a dead process of this host is stale: replaced; a live one: a collision);
 *   3. the root waits for every HELLO that answers its claim, then publishes the ANNOUNCE (the
 *      bytes every rank gets, and every nonce) at <dir>/hidet-nccl.<key>.<seq>.id;
 *   4. a reader accepts only an ANNOUNCE of its job, round and world that carries the claim's
 *      nonce and its own (so a stale or foreign file is never accepted), then removes its
 *      HELLO; one that ends without the bytes renames it to its mark instead: <hello>.gaveup
 *      (its deadline passed) or <hello>.failed (it saw a collision);
 *   5. the root removes the ANNOUNCE and its claim once every HELLO is gone, and what writers
 *      of the round left (temporary files of a killed writer of this host, marks). A HELLO
 *      that went with its reader's mark fails the round on the root; two live answers for one
 *      rank are a collision; a collided claim is removed by its root after a short linger.
 * One deadline covers the whole call, on every rank: no step starts past it. A wait on a peer
 * that left (its process, known from an earlier round, gone from this host; or it joined a
 * recovery round: file_peers.c) fails at once. After the first round it rooted, rank 0 puts the
 * roster of every rank's process; recovery rounds are file_recover.c's, their tidying
 * file_sweep.c's. */
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
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_recover_int.h"
#include "bootstrap_file/file_state_int.h"
#include "bootstrap_file/file_sweep_int.h"
#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"

typedef hn_bf_state_t file_state_t;

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
    /* strcmp, not memcmp of dir_len + 1 bytes: a shorter name stored before must not be read past */
    while (g != NULL && !(strcmp(g->name, dir) == 0 && strcmp(g->name + dir_len + 1, key) == 0))
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
    char slurm_key[256] = "";
    const char *key = p->job_key ? p->job_key : hidet_nccl__setting_str(HN_SETTING_JOB_KEY);
    const char *job = hidet_nccl__setting_str(HN_SETTING_SLURM_JOB_ID);
    if (key == NULL && job != NULL) {
        /* Kept whole or refused, never cut: two jobs whose ids differ only past the cut would
         * share a key, which is what the key is there to prevent. */
        const char *step = hidet_nccl__setting_str(HN_SETTING_SLURM_STEP_ID);
        int len = snprintf(slurm_key, sizeof slurm_key, "slurm-%s.%s", job, step ? step : "0");
        if (len < 0 || len >= (int)sizeof slurm_key || !hidet_nccl__key_ok(slurm_key, HN_BF_KEY_BYTES))
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                                   "the job key made from SLURM_JOB_ID='%.80s' and SLURM_STEP_ID='%.80s' ('slurm-<job>."
                                   "<step>', %d characters) is not 1 to %d of the characters A-Z a-z 0-9 . _ -; set "
                                   "$HIDET_NCCL_JOB_KEY to a key unique to this job step", job, step ? step : "0",
                                   len, HN_BF_KEY_BYTES);
        key = slurm_key;
    }
    const char *bad_cap = hidet_nccl__setting_error(HN_SETTING_POLL_MAX_MS);
    char why[3 * 4096];
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
    if (st == HIDET_NCCL_SUCCESS && hidet_nccl__job_secret(s->secret, &s->secret_len, why, sizeof why) < 0)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", why);
    if (st == HIDET_NCCL_SUCCESS && (s->peers = calloc((size_t)s->nranks, sizeof *s->peers)) == NULL)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", s->nranks);
    if (st != HIDET_NCCL_SUCCESS) {
        explicit_bzero(s->secret, sizeof s->secret);
        free(s);
        return st;
    }
    s->generation = next_generation(s->dir, s->key);
    hidet_nccl__bf_this_host(s->host);
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

/* What the roster or the last recovery round left goes (file_sweep.c), then the state. */
static hidet_nccl_status_t file_finalize(void *state, char *msg, size_t msg_bytes) {
    (void)msg;
    (void)msg_bytes;
    file_state_t *s = state;
    hidet_nccl__bf_tidy(s);
    explicit_bzero(s->secret, sizeof s->secret);
    free(s->peers);
    free(s->last.kept);
    free(s->last.old);
    free(state);
    return HIDET_NCCL_SUCCESS;
}

/* Polls from 0.1 ms, doubling up to the cap, with jitter, until the round's deadline. The cap
 * is HIDET_NCCL_POLL_MAX_MS, or 20 us per rank when that is more: a thousand ranks polling one
 * directory every 5 ms would spend the host's CPUs on it. Begun when the call begins: the
 * deadline bounds the whole call (the claim, every read, the cleanup's start), and every step
 * looks at it first, so that a slow file system makes a call late by the step under way and
 * its cleanup, never by another round of polling; messages say the time really waited. */
static void begin_poll(const file_state_t *s, hn_poll_t *poll, double timeout_s) {
    long scaled = 20000L * s->nranks;
    hidet_nccl__poll_begin(poll, timeout_s, 0, 100000, scaled > s->poll_cap_ns ? scaled : s->poll_cap_ns, 1);
}

/* What a reader leaves in place of its hello (renamed, so that the root never sees it gone)
 * when it ends without the bytes: the root counts a rank whose hello went as one that took
 * them, unless one of these, answering the root's claim with that reader's nonce, is there. */
#define MARK_GAVEUP ".gaveup" /* its deadline passed */
#define MARK_FAILED ".failed" /* it failed otherwise: it saw the claim collided */

/* What a hello says besides its part: the reader's nonce and who wrote it. */
typedef struct {
    uint8_t nonce[HN_BF_NONCE];
    uint32_t pid;
    char host[HN_BF_HOST_BYTES + 1];
} hello_t;

/* 1 if the hello's writer is a process of this host that is gone (the hello is stale). */
static int writer_gone(const hello_t *h) { return hidet_nccl__bf_process_gone(h->pid, h->host); }

/* Reads and checks the hello of rank r at path (its place, or a mark's): 1 it answers the
 * claim whose nonce is root_nonce (its part copied into part, unless NULL), 2 it answers
 * another claim (a stale one: nothing copied), 0 absent, -1 refused (why), 3 a hello whose MAC
 * is not this job's secret's (a second job's reader, or a rank without the secret): never
 * taken, an answer of another job. *h for 1 and 2. */
static int read_hello_at(const file_state_t *s, const round_t *rd, const char *path, int r, const uint8_t *root_nonce,
                         hello_t *h, void *part, char *why, size_t wn) {
    uint8_t *data = NULL;
    size_t len = 0, size = HN_BF_HEADER + HN_BF_HELLO_FIXED + rd->part_bytes + HN_BF_MAC + 4;
    int got = hidet_nccl__bf_read(path, HN_BF_HEADER + 4, size, &data, &len, why, wn);
    if (got <= 0) return got;
    hidet_nccl__bf_msg_t m;
    char inner[384];
    int ok = hidet_nccl__bf_parse(data, len, &m, inner, sizeof inner) == 0 &&
             hidet_nccl__bf_expect(&m, HN_BF_KIND_HELLO, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)r, inner,
                                   sizeof inner) == 0;
    if (ok && hidet_nccl__bf_mac_ok(s, data, &m, "its reader", inner, sizeof inner) != 0) {
        snprintf(why, wn, "%s: %s", path, inner);
        free(data);
        return 3;
    }
    if (ok && m.data_bytes != rd->part_bytes) {
        snprintf(inner, sizeof inner, "a part of %u bytes, expected %zu", m.data_bytes, rd->part_bytes);
        ok = 0;
    }
    int answers = ok && memcmp(m.root_nonce, root_nonce, HN_BF_NONCE) == 0;
    if (ok) {
        memcpy(h->nonce, m.nonce, HN_BF_NONCE);
        h->pid = m.pid;
        snprintf(h->host, sizeof h->host, "%s", m.host);
        if (answers && part != NULL && rd->part_bytes) memcpy(part, m.data, rd->part_bytes);
        if (!answers) snprintf(why, wn, "%s answers another root's claim (stale, or another job's)", path);
    } else {
        snprintf(why, wn, "%s: %s; refused", path, inner);
    }
    free(data);
    return !ok ? -1 : answers ? 1 : 2;
}

static int read_hello(const file_state_t *s, const round_t *rd, int r, const uint8_t *root_nonce, hello_t *h,
                      void *part, char *why, size_t wn) {
    char path[4352];
    hidet_nccl__bf_round_path(s, rd->seq, r, path, sizeof path);
    return read_hello_at(s, rd, path, r, root_nonce, h, part, why, wn);
}

/* Whether rank r's reader (nonce) ended this round without the bytes: 1 failed, 2 gave up, 0
 * neither. Only a mark that answers this claim with that reader's nonce counts: one left by an
 * earlier round of the same key, or by another process, is stale. */
static int withdrawn(const file_state_t *s, const round_t *rd, int r, const uint8_t *claim_nonce,
                     const uint8_t *nonce) {
    static const char *const marks[] = {MARK_FAILED, MARK_GAVEUP};
    for (int i = 0; i < 2; i++) {
        char path[4352 + 8], why[768];
        hello_t h;
        hidet_nccl__bf_round_path(s, rd->seq, r, path, sizeof path - 8);
        strcat(path, marks[i]);
        if (read_hello_at(s, rd, path, r, claim_nonce, &h, NULL, why, sizeof why) == 1 &&
            memcmp(h.nonce, nonce, HN_BF_NONCE) == 0)
            return i + 1;
    }
    return 0;
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

/* What the root keeps through a round: its claim, every reader's nonce and process, which
 * readers are in, and the announce's bytes (for an allgather, assembled from the parts). */
typedef struct {
    hn_bf_claim_t claim;
    uint8_t *nonces;
    uint32_t *pids;       /* each reader's process, as its hello says */
    char (*hosts)[HN_BF_HOST_BYTES + 1];
    unsigned char *local; /* 1: that process is of this host (so its death can be seen) */
    unsigned char *have;  /* waiting: its answer is in; once published: it has not taken the bytes yet */
    uint8_t *file;
    size_t cap, len;
    uint8_t *part; /* a part read again (a restarted reader's), to compare */
    struct stat *seen; /* each hello as last read: unchanged ones are not read again */
    int published;
} root_work_t;

/* 0: rank r's hello is gone; 1: it is the one last read; 2: it changed (read it again). */
static int hello_state(const file_state_t *s, const round_t *rd, int r, const struct stat *seen) {
    char path[4352];
    hidet_nccl__bf_round_path(s, rd->seq, r, path, sizeof path);
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : 2;
    return hidet_nccl__bf_same_file(&st, seen) ? 1 : 2;
}

/* Notes the identity of rank r's hello; taken before it is read, so that a replacement that
 * comes between the two shows as a change at the next look. */
static void note_hello(const file_state_t *s, const round_t *rd, int r, struct stat *seen) {
    char path[4352];
    hidet_nccl__bf_round_path(s, rd->seq, r, path, sizeof path);
    if (lstat(path, seen) != 0) memset(seen, 0, sizeof *seen);
}

/* The part of rank r lands in the announce's data (an allgather), or nowhere. */
static void *part_slot(const round_t *rd, int r) {
    return rd->part_bytes ? (uint8_t *)rd->out + (size_t)r * rd->part_bytes : NULL;
}

/* Rank r's answer h is in: its nonce goes into the announce; its process is remembered, so
 * that a later answer for r can be told from a restart (that process gone) or a collision. */
static void accept_hello(const file_state_t *s, root_work_t *w, int r, const hello_t *h) {
    memcpy(w->nonces + (size_t)r * HN_BF_NONCE, h->nonce, HN_BF_NONCE);
    w->pids[r] = h->pid;
    snprintf(w->hosts[r], sizeof w->hosts[r], "%s", h->host);
    w->local[r] = strcmp(h->host, s->host) == 0;
    w->have[r] = 1;
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

/* (Re)writes the announce: every rank's nonce as it now stands. */
static hidet_nccl_status_t put_announce(const file_state_t *s, const round_t *rd, root_work_t *w, const char *id_path,
                                        char *msg, size_t msg_bytes) {
    char why[768] = "";
    size_t len = hidet_nccl__bf_encode_announce(w->file, w->cap, s->key, rd->seq, (uint32_t)s->nranks,
                                                (uint32_t)s->rank, rd->out, (uint32_t)rd->out_bytes, w->nonces,
                                                s->secret_len > 0);
    /* the job's readers take only an announce of a root that holds its secret */
    if (len > 0 && hidet_nccl__bf_seal(s, w->file, len, why, sizeof why) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root): %s", s->rank, why);
    if (len == 0 || hidet_nccl__bf_publish(id_path, w->file, len, why, sizeof why) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root) could not publish %s: %s",
                               s->rank, id_path, len ? why : "too large");
    w->published = 1;
    return HIDET_NCCL_SUCCESS;
}

/* Rank r's hello, accepted before, is gone (state 0) or changed (2). Gone: taken, once the
 * announce is out, unless its reader left a mark (it failed, or gave up); before that, it is
 * waited for again. Changed to a new answer to the claim: its first process is gone (a reader
 * killed and started again) and the new one is taken in its place, the announce rewritten
 * (*again); a live one means two processes as rank r. */
static hidet_nccl_status_t recheck(const file_state_t *s, const round_t *rd, root_work_t *w, int r, int state,
                                   int *again, char *msg, size_t msg_bytes) {
    const uint8_t *nonce = w->nonces + (size_t)r * HN_BF_NONCE;
    char why[768];
    if (state == 0) {
        int mark = withdrawn(s, rd, r, w->claim.nonce, nonce);
        char id_path[4352];
        hidet_nccl__bf_round_path(s, rd->seq, -1, id_path, sizeof id_path);
        if (mark)
            return hidet_nccl__say(msg, msg_bytes, mark == 1 ? HIDET_NCCL_ERROR_BOOTSTRAP : HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d (root) %s %s, but rank %d %s before taking it (%s)", s->rank,
                                   w->published ? "published" : "was about to publish", id_path, r,
                                   mark == 1 ? "failed" : "gave up",
                                   mark == 1 ? "it saw the round collide, or an error" : "its deadline passed");
        w->have[r] = 0; /* taken; or, before the announce, to be waited for again */
        return HIDET_NCCL_SUCCESS;
    }
    hello_t h;
    note_hello(s, rd, r, &w->seen[r]);
    int got = read_hello(s, rd, r, w->claim.nonce, &h, w->part, why, sizeof why);
    if (got != 1) { /* no longer an answer to this claim: waited for again (a reader re-answering) */
        if (!w->published) w->have[r] = 0;
        return HIDET_NCCL_SUCCESS;
    }
    if (memcmp(h.nonce, nonce, HN_BF_NONCE) == 0) return HIDET_NCCL_SUCCESS; /* rewritten as it was */
    if (!(w->local[r] && hidet_nccl__bf_process_gone(w->pids[r], s->host))) return two_answers(s, w, r, msg, msg_bytes);
    if (w->published && rd->part_bytes && memcmp(w->part, part_slot(rd, r), rd->part_bytes) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d (root): rank %d came back (its first process, pid %u on this host, is gone) "
                               "with another part after the announce went out: the ranks that took it would disagree; "
                               "start the job again", s->rank, r, w->pids[r]);
    if (rd->part_bytes) memcpy(part_slot(rd, r), w->part, rd->part_bytes);
    accept_hello(s, w, r, &h);
    *again = w->published;
    return HIDET_NCCL_SUCCESS;
}

/* At the root's deadline, for its message: whether a rank not in left a mark answering this
 * claim (it gave up before the root came). One listing of the directory and at most two
 * reads, so that a slow file system does not stretch the call past its deadline by much. */
static int some_gave_up(const file_state_t *s, const round_t *rd, const root_work_t *w) {
    char prefix[HN_BF_KEY_BYTES + 64];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "hidet-nccl.%s.%llu.hello.", s->key,
                                   (unsigned long long)rd->seq);
    DIR *d = opendir(s->dir);
    int found = 0, reads = 0;
    for (struct dirent *e; d != NULL && !found && reads < 2 && (e = readdir(d)) != NULL;) {
        int r = -1, used = 0;
        if (strncmp(e->d_name, prefix, plen) != 0 || sscanf(e->d_name + plen, "%d%n", &r, &used) != 1 ||
            strcmp(e->d_name + plen + used, MARK_GAVEUP) != 0 || r < 0 || r >= s->nranks || w->have[r])
            continue;
        char path[4352 + 300], why[768];
        hello_t h;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        reads++;
        found = read_hello_at(s, rd, path, r, w->claim.nonce, &h, NULL, why, sizeof why) == 1;
    }
    if (d != NULL) closedir(d);
    return found;
}

/* The round fails at once when rank r, awaited, has left it (file_peers.c: its process, known
 * from an earlier round, is gone; or it joined a recovery round); role: "root", "reader". */
static hidet_nccl_status_t still_there(const file_state_t *s, const round_t *rd, int r, const char *role, char *msg,
                                       size_t msg_bytes) {
    char why[1024];
    if (hidet_nccl__bf_peer_left(s, r, role, why, sizeof why) == HIDET_NCCL_SUCCESS) return HIDET_NCCL_SUCCESS;
    return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (%s) of round %llu in %s: %s",
                           s->rank, s->rank == rd->root ? "root" : "reader", (unsigned long long)rd->seq, s->dir, why);
}

/* Step 1: every reader's hello answering the claim (a hello of a dead process of this host is
 * stale: not counted), watching the ones in for a restart or a second process. */
static hidet_nccl_status_t await_hellos(file_state_t *s, const round_t *rd, root_work_t *w, hn_poll_t *poll, char *msg,
                                        size_t msg_bytes) {
    int n = s->nranks, again = 0;
    char why[768] = "", missing[160];
    for (;;) {
        int waiting = 0, expired = 0;
        for (int r = 0; r < n; r++) {
            if (r == s->rank) continue;
            if ((expired = hidet_nccl__poll_expired(poll)) != 0) break;
            if (w->have[r]) {
                int state = hello_state(s, rd, r, &w->seen[r]);
                hidet_nccl_status_t st = state == 1 ? HIDET_NCCL_SUCCESS
                                                    : recheck(s, rd, w, r, state, &again, msg, msg_bytes);
                if (st != HIDET_NCCL_SUCCESS) return st;
                waiting += !w->have[r];
                continue;
            }
            hello_t h;
            note_hello(s, rd, r, &w->seen[r]);
            int got = read_hello(s, rd, r, w->claim.nonce, &h, part_slot(rd, r), why, sizeof why);
            if (got == 1 && writer_gone(&h))
                snprintf(why, sizeof why, "rank %d's hello answers this claim for pid %u on this host, which is gone "
                         "(stale: that rank started again replaces it)", r, h.pid);
            else if (got == 1)
                accept_hello(s, w, r, &h);
            if (!w->have[r] && !hidet_nccl__poll_expired(poll)) {
                hidet_nccl_status_t st = still_there(s, rd, r, "reader", msg, msg_bytes);
                if (st != HIDET_NCCL_SUCCESS) return st;
            }
            waiting += !w->have[r];
        }
        if (!expired && waiting == 0) return HIDET_NCCL_SUCCESS;
        if (!expired) {
            hidet_nccl_status_t held = claim_still_held(w, msg, msg_bytes);
            if (held != HIDET_NCCL_SUCCESS) return held;
            expired = hidet_nccl__poll_expired(poll);
        }
        if (expired) {
            int quit = some_gave_up(s, rd, w) ? 1 : -1;
            list_missing(w->have, n, s->rank, missing, sizeof missing);
            int none = 1;
            for (int r = 0; r < n; r++) none &= r == s->rank || !w->have[r];
            return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d (root) waited %.1f s in %s for ranks %s, which never arrived (no valid "
                                   "hello file hidet-nccl.%s.%llu.hello.<rank>)%s%s%s",
                                   s->rank, hidet_nccl__poll_waited(poll), s->dir, missing, s->key,
                                   (unsigned long long)rd->seq,
                                   quit >= 0 ? "; some gave up before the root came (their deadline passed)"
                                   : none ? "; no rank arrived at all: do they use this directory and job key, and can "
                                            "they write to it (a rank that cannot fails at once)?"
                                          : "",
                                   why[0] ? "; last problem: " : "", why);
        }
        hidet_nccl__poll_pause(poll);
    }
}

/* Steps 2 to 4: publish, then watch until every hello is gone (taken). A hello that went with
 * its reader's mark fails the round; a second answer to the claim for one rank (before or
 * after the first was taken) is a collision; a restarted reader's answer rewrites the
 * announce. The round ends well only if the claim is still as it was put. */
static hidet_nccl_status_t publish_until_taken(file_state_t *s, const round_t *rd, root_work_t *w, hn_poll_t *poll,
                                               char *msg, size_t msg_bytes) {
    int n = s->nranks;
    char id_path[4352], why[768], missing[160];
    hidet_nccl__bf_round_path(s, rd->seq, -1, id_path, sizeof id_path);
    hidet_nccl_status_t st = put_announce(s, rd, w, id_path, msg, msg_bytes);
    while (st == HIDET_NCCL_SUCCESS) {
        int left = 0, expired = 0, again = 0;
        for (int r = 0; r < n && st == HIDET_NCCL_SUCCESS; r++) {
            if (r == s->rank) continue;
            if ((expired = hidet_nccl__poll_expired(poll)) != 0) break;
            int state = hello_state(s, rd, r, &w->seen[r]);
            if (!w->have[r]) { /* taken: a new answer for this rank now is a second process */
                hello_t h;
                if (state != 2) continue;
                note_hello(s, rd, r, &w->seen[r]);
                if (read_hello(s, rd, r, w->claim.nonce, &h, NULL, why, sizeof why) != 1) continue;
                /* Even if the process that took them is gone since: it had the bytes, and the
                 * rank that comes now is not the one the job's other ranks will meet. */
                if (memcmp(h.nonce, w->nonces + (size_t)r * HN_BF_NONCE, HN_BF_NONCE) != 0) {
                    st = two_answers(s, w, r, msg, msg_bytes);
                    continue;
                }
                w->have[r] = 1; /* the same reader, answering again (its hello was removed): not taken */
                left++;
                continue;
            }
            if (state != 1) st = recheck(s, rd, w, r, state, &again, msg, msg_bytes);
            if (st == HIDET_NCCL_SUCCESS && w->have[r] && !hidet_nccl__poll_expired(poll))
                st = still_there(s, rd, r, "reader", msg, msg_bytes);
            left += w->have[r];
        }
        if (st != HIDET_NCCL_SUCCESS) break;
        if (!expired && again) st = put_announce(s, rd, w, id_path, msg, msg_bytes);
        if (!expired && st == HIDET_NCCL_SUCCESS) st = claim_still_held(w, msg, msg_bytes); /* also the last look */
        if (st != HIDET_NCCL_SUCCESS || (!expired && left == 0)) break;
        if (expired || hidet_nccl__poll_expired(poll)) {
            int dead = -1; /* a rank whose process is known gone: it will not take them */
            for (int r = 0; r < n && dead < 0; r++)
                if (r != s->rank && w->have[r] && w->local[r] && hidet_nccl__bf_process_gone(w->pids[r], s->host))
                    dead = r;
            snprintf(why, sizeof why, "; rank %d's process (pid %u on this host) is gone", dead,
                     dead >= 0 ? w->pids[dead] : 0);
            for (int r = 0; r < n; r++) w->have[r] = !w->have[r] || r == s->rank;
            list_missing(w->have, n, s->rank, missing, sizeof missing);
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                 "rank %d (root) published %s but ranks %s did not take it (waited %.1f s)%s", s->rank,
                                 id_path, missing, hidet_nccl__poll_waited(poll), dead >= 0 ? why : "");
            break;
        }
        hidet_nccl__poll_pause(poll);
    }
    if (w->published) unlink(id_path);
    return st;
}

/* The root's claim was marked collided. The mark tells every rank of both jobs that looks at
 * the claim to stop at once, saying why; so the root keeps it for four of the readers' longest
 * pauses (at least 0.2 s; the deadline cuts it short), long enough for every reader that still
 * polls to see it, then removes it, so that no collided claim outlives the collision. It does
 * not wait for every answer to go: a reader that answered and then died (on another host,
 * where its death cannot be seen) would hold the root's failure until its deadline. */
static void linger_collided(root_work_t *w, hn_poll_t *poll) {
    if (!hidet_nccl__bf_claim_collided_ours(&w->claim)) return; /* replaced or removed: not ours to mind */
    double least = 4e-9 * (double)poll->max_ns, until = hidet_nccl__poll_waited(poll) + (least > 0.2 ? least : 0.2);
    while (!hidet_nccl__poll_expired(poll) && hidet_nccl__poll_waited(poll) < until) hidet_nccl__poll_pause(poll);
    hidet_nccl__bf_claim_remove_collided(&w->claim);
}

/* What follows "hidet-nccl.<key>.<seq>." in a name of this round: 1 a reader's mark
 * ("hello.<r>.gaveup", ".failed"), 2 a temporary file ("root", "id" or "hello.<r>", then
 * ".tmp."), 0 anything else. Keys may hold dots, so the prefix alone also matches files of
 * other keys ("a.1" begins like round 1 of key "a"): their rest is never of these forms. */
static int round_leftover(const char *rest) {
    const char *at = rest;
    if (strncmp(at, "root", 4) == 0) {
        at += 4;
    } else if (strncmp(at, "id", 2) == 0) {
        at += 2;
    } else if (strncmp(at, "hello.", 6) == 0 && at[6] >= '0' && at[6] <= '9') {
        at += 6;
        while (*at >= '0' && *at <= '9') at++;
        if (strcmp(at, MARK_GAVEUP) == 0 || strcmp(at, MARK_FAILED) == 0) return 1;
    } else {
        return 0;
    }
    return strncmp(at, ".tmp.", 5) == 0 ? 2 : 0;
}

/* What writers of this round left: temporary files of writers of this host killed mid-write
 * (a writer elsewhere may be writing still), and the marks of readers that ended without the
 * bytes. Every reader of the round is done with them when its root ends it. */
static void remove_leftovers(const file_state_t *s, const round_t *rd) {
    char prefix[HN_BF_KEY_BYTES + 64];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "hidet-nccl.%s.%llu.", s->key, (unsigned long long)rd->seq);
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *name = e->d_name;
        if (strncmp(name, prefix, plen) != 0) continue;
        int kind = round_leftover(name + plen);
        if (kind == 1 || (kind == 2 && hidet_nccl__bf_tmp_orphaned(name + plen))) unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

static hidet_nccl_status_t root_round(file_state_t *s, const round_t *rd, hn_poll_t *poll, char *msg,
                                      size_t msg_bytes) {
    int n = s->nranks;
    root_work_t w = {{s->key, rd->seq, (uint32_t)n, (uint32_t)s->rank, "", {0}, 0, {0}, 0, ""},
                     calloc((size_t)n, HN_BF_NONCE), calloc((size_t)n, sizeof(uint32_t)),
                     calloc((size_t)n, HN_BF_HOST_BYTES + 1), calloc((size_t)n, 1), calloc((size_t)n, 1), NULL, HN_BF_HEADER + 8 + rd->out_bytes + (size_t)HN_BF_NONCE * n + HN_BF_MAC, 0,
                     malloc(rd->part_bytes + 1), calloc((size_t)n, sizeof(struct stat)), 0};
    w.file = malloc(w.cap);
    hidet_nccl__bf_round_path(s, rd->seq, -2, w.claim.path, sizeof w.claim.path);
    hidet_nccl_status_t st;
    char why[1024];
    if (!w.nonces || !w.pids || !w.hosts || !w.local || !w.have || !w.file || !w.part || !w.seen) {
        st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", n);
    } else {
        int took = hidet_nccl__bf_claim_take(&w.claim, poll->timeout_s, why, sizeof why);
        if (took != 0) {
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root)%s: %s", s->rank,
                                 took == HN_BF_COLLIDED ? "" : " could not claim the round", why);
        } else {
            memcpy(w.nonces + (size_t)s->rank * HN_BF_NONCE, w.claim.nonce, HN_BF_NONCE);
            w.have[s->rank] = 1;
            if (rd->part_bytes) memmove(part_slot(rd, s->rank), rd->part, rd->part_bytes);
            st = await_hellos(s, rd, &w, poll, msg, msg_bytes);
            if (st == HIDET_NCCL_SUCCESS) st = publish_until_taken(s, rd, &w, poll, msg, msg_bytes);
            if (st != HIDET_NCCL_SUCCESS && hidet_nccl__bf_claim_collided_ours(&w.claim))
                linger_collided(&w, poll); /* then removed */
            else
                hidet_nccl__bf_claim_drop(&w.claim); /* only if still ours, as put */
            remove_leftovers(s, rd);
        }
    }
    if (st == HIDET_NCCL_SUCCESS) { /* every reader's process, for the rounds to come (and the roster) */
        for (int r = 0; r < n; r++)
            if (r != s->rank) hidet_nccl__bf_peer_note(s, r, w.pids[r], w.hosts[r]);
        hidet_nccl__bf_roster_put(s, w.nonces);
    }
    free(w.nonces);
    free(w.pids);
    free(w.hosts);
    free(w.local);
    free(w.have);
    free(w.file);
    free(w.part);
    free(w.seen);
    return st;
}

/* Puts this reader's hello answering the claim c, only where no hello is (link(2)), *mine the
 * file as put. What may be there instead: an answer to another claim (stale, or this reader's
 * own answer to an earlier claim): replaced; an answer to this claim of a dead process of this
 * host (this rank's process before a restart): replaced in one rename, so that the root never
 * sees the rank without an answer; one of a live process: two processes as this rank, two jobs
 * sharing the key: the claim is marked collided and this rank fails. A file this user cannot
 * or may not replace (a directory, another user's file) fails it at once, saying what is there. */
static hidet_nccl_status_t put_hello(file_state_t *s, const round_t *rd, const hn_bf_claim_t *c,
                                     const uint8_t nonce[HN_BF_NONCE], const char *hello_path, struct stat *mine,
                                     char *msg, size_t msg_bytes) {
    char why[768] = "", what[256];
    size_t cap = HN_BF_HEADER + HN_BF_HELLO_FIXED + rd->part_bytes + HN_BF_MAC + 4;
    uint8_t *hello = malloc(cap);
    if (hello == NULL) return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    size_t len = hidet_nccl__bf_encode_hello(hello, cap, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)s->rank,
                                             nonce, c->nonce, (uint32_t)getpid(), s->host, rd->part,
                                             (uint32_t)rd->part_bytes, s->secret_len > 0);
    /* the root takes only answers (and parts) of a reader that holds its secret */
    if (len > 0 && hidet_nccl__bf_seal(s, hello, len, why, sizeof why) != 0) {
        free(hello);
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->rank, why);
    }
    hidet_nccl_status_t st = HIDET_NCCL_ERROR_BOOTSTRAP;
    const char *fail = len == 0 ? "too large" : NULL;
    hello_t other = {{0}, 0, ""};
    int collided = 0;
    for (int attempt = 0; fail == NULL && attempt < 4; attempt++) {
        int put = hidet_nccl__bf_publish_new(hello_path, hello, len, mine, why, sizeof why);
        struct stat there;
        if (put == 0) {
            st = HIDET_NCCL_SUCCESS;
            break;
        }
        if (put < 0) fail = why;
        if (put < 0 || lstat(hello_path, &there) != 0) continue; /* failed, or gone again: once more */
        int got = read_hello(s, rd, s->rank, c->nonce, &other, NULL, why, sizeof why);
        if (got == 1 && memcmp(other.nonce, nonce, HN_BF_NONCE) == 0) { /* this reader's own answer */
            *mine = there;
            st = HIDET_NCCL_SUCCESS;
            break;
        }
        if (got == 1 && writer_gone(&other)) { /* this rank's process before a restart */
            int over = hidet_nccl__bf_publish_over(hello_path, &there, hello, len, mine, why, sizeof why);
            if (over == 0) {
                st = HIDET_NCCL_SUCCESS;
                break;
            }
            if (over < 0) fail = why;
            continue; /* it changed meanwhile: look again */
        }
        if (got == 1 || got == 3) { /* another live process's answer, or another job's */
            collided = 1;
            break;
        }
        if (got < 0 && !(S_ISREG(there.st_mode) && there.st_uid == geteuid())) {
            hidet_nccl__bf_what_is(&there, what, sizeof what);
            snprintf(why, sizeof why, "%s is %s, not this user's file: it is not this reader's to replace; "
                     "remove it", hello_path, what);
            fail = why;
            break;
        }
        /* Another claim's answer, or this user's torn or older file: stale, replaced; unless
         * it changed since it was read (then it is looked at again). */
        struct stat now;
        if (lstat(hello_path, &now) == 0 && hidet_nccl__bf_same_file(&now, &there) && unlink(hello_path) != 0 &&
            errno != ENOENT) {
            snprintf(why, sizeof why, "cannot remove the stale %s: %s", hello_path, strerror(errno));
            fail = why;
        }
    }
    free(hello);
    if (collided) {
        char who[160] = "another job's reader (its answer does not carry this job's secret)";
        if (other.pid != 0) snprintf(who, sizeof who, "another live process (pid %u on host '%s')", other.pid, other.host);
        hidet_nccl__bf_claim_mark(c);
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d: %s already answers this round's claim for %s: two jobs use job key '%s' in %s "
                               "at once; both fail. Give each job its own key", s->rank, hello_path, who, s->key, s->dir);
    }
    if (st != HIDET_NCCL_SUCCESS)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d could not answer the root's claim: %s", s->rank,
                               fail ? fail : "its hello file was replaced four times while it tried");
    return HIDET_NCCL_SUCCESS;
}

/* A reader whose answer is in place: still so (0), or it was replaced by another live
 * process's answer to this claim (a collision: the claim is marked; -1 and why) or is gone
 * (removed by another: 1, to be put again). */
static int answer_kept(file_state_t *s, const round_t *rd, const hn_bf_claim_t *c, const uint8_t *nonce,
                       const char *hello_path, const struct stat *mine, char *why, size_t wn) {
    struct stat now;
    if (lstat(hello_path, &now) != 0) return 1;
    if (hidet_nccl__bf_same_file(&now, mine)) return 0;
    hello_t h;
    int got = read_hello(s, rd, s->rank, c->nonce, &h, NULL, why, wn);
    if (got == 1 && memcmp(h.nonce, nonce, HN_BF_NONCE) != 0) {
        hidet_nccl__bf_claim_mark(c);
        snprintf(why, wn, "rank %d: its answer %s was replaced by another process's answer to this round's claim "
                 "(pid %u on host '%s'): two processes run as rank %d; two jobs use job key '%s' in %s at once? "
                 "Both fail. Give each job its own key", s->rank, hello_path, h.pid, h.host, s->rank, s->key, s->dir);
        return -1;
    }
    if (got == 3) { /* an answer under another secret: a second job's reader, to this job's claim */
        hidet_nccl__bf_claim_mark(c);
        snprintf(why, wn, "rank %d: its answer %s was replaced by an answer to this round's claim that does not carry "
                 "this job's secret: two jobs use job key '%s' in %s at once. Both fail. Give each job its own key",
                 s->rank, hello_path, s->key, s->dir);
        return -1;
    }
    return 1;
}

/* Withdraws this reader's answer, if it is still its own: renamed to its mark, so that the
 * root sees why it went (mark) and never counts the rank as having taken the bytes. */
static void withdraw(const char *hello_path, const struct stat *mine, const char *mark, const char *claim_path) {
    char to[4352 + 8];
    struct stat now;
    snprintf(to, sizeof to, "%s%s", hello_path, mark);
    if (lstat(hello_path, &now) != 0 || !hidet_nccl__bf_same_file(&now, mine) || rename(hello_path, to) != 0) return;
    /* A root that already ended (its claim gone) reads no mark, and its cleanup ran before this one
     * was made: nobody would remove it. A root still there removes it when it ends. */
    if (lstat(claim_path, &now) != 0 && errno == ENOENT) unlink(to);
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
        /* With the job's secret, an announce counts only with a right MAC, checked before any
         * byte of it is used: another job's root (same key, another secret) is never taken. */
        if (hidet_nccl__bf_parse(data, len, &m, inner, sizeof inner) != 0 ||
            hidet_nccl__bf_mac_ok(s, data, &m, "its root", inner, sizeof inner) != 0 ||
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
 * carries both nonces. A new claim (a stale one replaced) is answered again. Ending without
 * the bytes, it renames its hello to its mark (.gaveup at the deadline, .failed otherwise), so
 * that the root knows it did not take them. */
static hidet_nccl_status_t reader_round(file_state_t *s, const round_t *rd, hn_poll_t *poll, char *msg,
                                        size_t msg_bytes) {
    uint8_t nonce[HN_BF_NONCE];
    char hello_path[4352], id_path[4352], why[1024], seen[1024] = "no claim from the root yet";
    hidet_nccl__bf_round_path(s, rd->seq, s->rank, hello_path, sizeof hello_path);
    hidet_nccl__bf_round_path(s, rd->seq, -1, id_path, sizeof id_path);
    hn_bf_claim_t c = {s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)rd->root, "", {0}, 0, {0}, 0, ""};
    hidet_nccl__bf_round_path(s, rd->seq, -2, c.path, sizeof c.path);
    if (hidet_nccl__bf_random(nonce, sizeof nonce, why, sizeof why) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "%s", why);
    struct stat mine;
    int answered = 0;
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    while (st == HIDET_NCCL_SUCCESS && !hidet_nccl__poll_expired(poll)) {
        int look = hidet_nccl__bf_claim_look(&c, why, sizeof why);
        if (look == HN_BF_COLLIDED) {
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->rank, why);
            break;
        }
        if (look < 0 || (look == 0 && why[0] && !answered)) snprintf(seen, sizeof seen, "%s", why);
        int kept = look == 1 || !answered ? 1 : answer_kept(s, rd, &c, nonce, hello_path, &mine, why, sizeof why);
        if (kept < 0) {
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "%s", why);
            answered = 0; /* another's now: nothing of ours to withdraw */
            break;
        }
        if (kept == 1 && (look == 1 || answered) && !hidet_nccl__poll_expired(poll)) {
            answered = 0;
            st = put_hello(s, rd, &c, nonce, hello_path, &mine, msg, msg_bytes);
            answered = st == HIDET_NCCL_SUCCESS;
            if (!answered) break;
        }
        if (answered && !hidet_nccl__poll_expired(poll) &&
            take_announce(s, rd, &c, nonce, id_path, seen, sizeof seen)) {
            struct stat now; /* removing it tells the root this rank has its bytes */
            if (lstat(hello_path, &now) == 0 && hidet_nccl__bf_same_file(&now, &mine)) unlink(hello_path);
            hidet_nccl__bf_peer_note(s, rd->root, c.pid, c.host); /* the root's process, for the rounds to come */
            return HIDET_NCCL_SUCCESS;
        }
        if (answered && strcmp(seen, "no claim from the root yet") == 0) snprintf(seen, sizeof seen, "no file yet");
        if (hidet_nccl__poll_expired(poll)) break;
        if ((st = still_there(s, rd, rd->root, "root", msg, msg_bytes)) != HIDET_NCCL_SUCCESS) break;
        hidet_nccl__poll_pause(poll);
    }
    if (answered) withdraw(hello_path, &mine, st == HIDET_NCCL_SUCCESS ? MARK_GAVEUP : MARK_FAILED, c.path);
    if (st != HIDET_NCCL_SUCCESS) return st;
    return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                           "rank %d waited %.1f s for %s from rank %d (root); last seen: %s", s->rank,
                           hidet_nccl__poll_waited(poll), id_path, rd->root, seen);
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
    hn_poll_t poll;
    begin_poll(s, &poll, timeout_s);
    if (s->rank == rd->root) return root_round(s, rd, &poll, msg, msg_bytes);
    return reader_round(s, rd, &poll, msg, msg_bytes);
}

static hidet_nccl_status_t file_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    const round_t rd = {hidet_nccl__bf_seq(state, tag), root, NULL, 0, buf, bytes};
    return run_round(state, &rd, timeout_s, msg, msg_bytes);
}

static hidet_nccl_status_t file_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    file_state_t *s = state; /* bytes * nranks is at most 8 MiB (the plug-in contract) */
    const round_t rd = {hidet_nccl__bf_seq(s, tag), 0, send, bytes, recv, bytes * (size_t)s->nranks};
    return run_round(s, &rd, timeout_s, msg, msg_bytes);
}

const hidet_nccl_bootstrap_v3_t hidet_nccl_bootstrap_file_v3 = {
    .name = "file",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = file_init,
    .rank_size = file_rank_size,
    .local_rank = file_local_rank,
    .broadcast = file_broadcast,
    .allgather = file_allgather,
    .finalize = file_finalize,
    .recover = hidet_nccl__bf_recover,
    .peer_lost = hidet_nccl__bf_peer_lost,
};

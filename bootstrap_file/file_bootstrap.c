/* The shared-file bootstrap: rank 0 publishes, the others wait, nothing is left behind.
 * Protocol (docs/bootstrap_file.md), for each round (sequence number seq; a broadcast from
 * a root, or an allgather through rank 0):
 *   1. every reader puts a HELLO with a fresh random nonce (and, for an allgather, its part)
 *      at <dir>/hidet-nccl.<key>.<seq>.hello.<rank>;
 *   2. the root waits for every HELLO, then publishes the ANNOUNCE (the bytes every rank gets,
 *      and every nonce) at <dir>/hidet-nccl.<key>.<seq>.id;
 *   3. a reader accepts only an ANNOUNCE of its job, round and world that carries its own
 *      nonce (so a stale or foreign file is never accepted), then removes its HELLO;
 *   4. the root removes the ANNOUNCE once every HELLO is gone. A HELLO that changes (a stale
 *      one replaced by a late reader) makes the root publish again.
 * One deadline covers the whole round, on every rank. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_io_int.h"
#include "core/kit.h"
#include "hidet_nccl/bootstrap.h"

typedef struct {
    char dir[4096];
    char key[HN_BF_KEY_BYTES + 1];
    int rank, nranks, local_rank, local_size;
    long poll_cap_ns;
} file_state_t;

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
    s->poll_cap_ns = atol(hidet_nccl__setting_str(HN_SETTING_POLL_MAX_MS)) * 1000000L;
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

static void path_of(const file_state_t *s, uint64_t seq, int hello_rank, char *out, size_t n) {
    if (hello_rank < 0)
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.id", s->dir, s->key, (unsigned long long)seq);
    else
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.hello.%d", s->dir, s->key, (unsigned long long)seq, hello_rank);
}

/* Reads and checks rank r's hello: its nonce, and its part (part_bytes of it) into part.
 * 1 read, 0 absent, -1 refused (why). */
static int read_hello(const file_state_t *s, const round_t *rd, int r, uint8_t nonce[HN_BF_NONCE], void *part,
                      char *why, size_t wn) {
    char path[4352];
    path_of(s, rd->seq, r, path, sizeof path);
    uint8_t *data = NULL;
    size_t len = 0, size = HN_BF_HEADER + HN_BF_NONCE + 4 + rd->part_bytes + 4;
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
    if (ok) {
        memcpy(nonce, m.nonce, HN_BF_NONCE);
        if (rd->part_bytes) memcpy(part, m.data, rd->part_bytes);
    } else {
        snprintf(why, wn, "%s: %s; refused", path, inner);
    }
    free(data);
    return ok ? 1 : -1;
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

/* What the root keeps through a round: every reader's nonce, which readers are in, and the
 * announce's bytes (for an allgather, assembled from the hellos' parts). */
typedef struct {
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
    return st.st_ino == seen->st_ino && st.st_mtim.tv_sec == seen->st_mtim.tv_sec &&
                   st.st_mtim.tv_nsec == seen->st_mtim.tv_nsec && st.st_size == seen->st_size
               ? 1
               : 2;
}

/* Notes the identity of rank r's hello; taken before it is read, so that a replacement that
 * comes between the two shows as a change at the next look. */
static void note_hello(const file_state_t *s, const round_t *rd, int r, struct stat *seen) {
    char path[4352];
    path_of(s, rd->seq, r, path, sizeof path);
    if (lstat(path, seen) != 0) memset(seen, 0, sizeof *seen);
}

/* The part of rank r lands in the announce's data (an allgather), or nowhere. */
static void *part_slot(const round_t *rd, int r) {
    return rd->part_bytes ? (uint8_t *)rd->out + (size_t)r * rd->part_bytes : NULL;
}

/* Step 1: every reader's hello. */
static hidet_nccl_status_t await_hellos(file_state_t *s, const round_t *rd, root_work_t *w, hn_poll_t *poll, char *msg,
                                        size_t msg_bytes) {
    int n = s->nranks;
    char why[768] = "", missing[160];
    for (int waiting = n - 1; waiting > 0;) {
        for (int r = 0; r < n; r++) {
            if (w->have[r]) continue;
            note_hello(s, rd, r, &w->seen[r]);
            if (read_hello(s, rd, r, w->nonces + (size_t)r * HN_BF_NONCE, part_slot(rd, r), why, sizeof why) == 1) {
                w->have[r] = 1;
                waiting--;
            }
        }
        if (waiting == 0) break;
        if (hidet_nccl__poll_expired(poll)) {
            list_missing(w->have, n, s->rank, missing, sizeof missing);
            return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d (root) waited %.1f s in %s for ranks %s, which never arrived (no valid "
                                   "hello file hidet-nccl.%s.%llu.hello.<rank>)%s%s",
                                   s->rank, poll->timeout_s, s->dir, missing, s->key, (unsigned long long)rd->seq,
                                   why[0] ? "; last problem: " : "", why);
        }
        hidet_nccl__poll_pause(poll);
    }
    return HIDET_NCCL_SUCCESS;
}

/* Steps 2 to 4: publish, and again whenever a hello changes, until every hello is gone. */
static hidet_nccl_status_t publish_until_taken(file_state_t *s, const round_t *rd, root_work_t *w, hn_poll_t *poll,
                                               char *msg, size_t msg_bytes) {
    int n = s->nranks;
    char id_path[4352], why[768] = "", missing[160];
    path_of(s, rd->seq, -1, id_path, sizeof id_path);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    int published = 0;
    for (int changed = 1;;) {
        if (changed) {
            size_t len = hidet_nccl__bf_encode_announce(w->file, w->cap, s->key, rd->seq, (uint32_t)n,
                                                        (uint32_t)s->rank, rd->out, (uint32_t)rd->out_bytes, w->nonces);
            if (len == 0 || hidet_nccl__bf_publish(id_path, w->file, len, why, sizeof why) != 0) {
                st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root) could not publish %s: %s",
                                     s->rank, id_path, len ? why : "too large");
                break;
            }
            published = 1;
            changed = 0;
        }
        int left = 0;
        for (int r = 0; r < n; r++) {
            if (r == s->rank || !w->have[r]) continue;
            int state = hello_state(s, rd, r, &w->seen[r]);
            if (state == 1) { /* the hello it has published to: still waiting to be taken */
                left++;
                continue;
            }
            uint8_t nonce[HN_BF_NONCE];
            if (state == 2) note_hello(s, rd, r, &w->seen[r]);
            int got = state == 0 ? 0 : read_hello(s, rd, r, nonce, part_slot(rd, r), why, sizeof why);
            if (got == 0) {
                w->have[r] = 0; /* taken: its hello is gone */
                continue;
            }
            left++;
            if (got == 1 && memcmp(nonce, w->nonces + (size_t)r * HN_BF_NONCE, HN_BF_NONCE) != 0) {
                memcpy(w->nonces + (size_t)r * HN_BF_NONCE, nonce, HN_BF_NONCE); /* a stale hello was replaced */
                changed = 1;
            }
        }
        if (left == 0) break;
        if (hidet_nccl__poll_expired(poll)) {
            for (int r = 0; r < n; r++) w->have[r] = !w->have[r] || r == s->rank;
            list_missing(w->have, n, s->rank, missing, sizeof missing);
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                 "rank %d (root) published %s but ranks %s did not take it within %.1f s", s->rank,
                                 id_path, missing, poll->timeout_s);
            break;
        }
        if (!changed) hidet_nccl__poll_pause(poll);
    }
    if (published) unlink(id_path);
    return st;
}

static hidet_nccl_status_t root_round(file_state_t *s, const round_t *rd, double timeout_s, char *msg,
                                      size_t msg_bytes) {
    int n = s->nranks;
    root_work_t w = {calloc((size_t)n, HN_BF_NONCE), calloc((size_t)n, 1), NULL,
                     HN_BF_HEADER + 8 + rd->out_bytes + (size_t)HN_BF_NONCE * n, calloc((size_t)n, sizeof(struct stat))};
    w.file = malloc(w.cap);
    hidet_nccl_status_t st;
    if (!w.nonces || !w.have || !w.file || !w.seen) {
        st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", n);
    } else {
        w.have[s->rank] = 1;
        if (rd->part_bytes) memmove(part_slot(rd, s->rank), rd->part, rd->part_bytes);
        hn_poll_t poll;
        begin_poll(s, &poll, timeout_s);
        st = await_hellos(s, rd, &w, &poll, msg, msg_bytes);
        if (st == HIDET_NCCL_SUCCESS) st = publish_until_taken(s, rd, &w, &poll, msg, msg_bytes);
    }
    free(w.nonces);
    free(w.have);
    free(w.file);
    free(w.seen);
    return st;
}

static hidet_nccl_status_t reader_round(file_state_t *s, const round_t *rd, double timeout_s, char *msg,
                                        size_t msg_bytes) {
    uint8_t nonce[HN_BF_NONCE];
    char hello_path[4352], id_path[4352], why[768];
    path_of(s, rd->seq, s->rank, hello_path, sizeof hello_path);
    path_of(s, rd->seq, -1, id_path, sizeof id_path);
    if (hidet_nccl__bf_random(nonce, sizeof nonce, why, sizeof why) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "%s", why);
    size_t cap = HN_BF_HEADER + HN_BF_NONCE + 4 + rd->part_bytes + 4;
    uint8_t *hello = malloc(cap);
    if (hello == NULL) return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    size_t len = hidet_nccl__bf_encode_hello(hello, cap, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)s->rank,
                                             nonce, rd->part, (uint32_t)rd->part_bytes);
    int bad = len == 0 || hidet_nccl__bf_publish(hello_path, hello, len, why, sizeof why) != 0;
    free(hello);
    if (bad)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not announce itself: %s",
                               s->rank, len ? why : "too large");
    hn_poll_t poll;
    begin_poll(s, &poll, timeout_s);
    char seen[768] = "no file yet";
    size_t max = HN_BF_MAX_FILE; /* the parser then says exactly what is wrong */
    for (;;) {
        uint8_t *data = NULL;
        size_t got_len = 0;
        int got = hidet_nccl__bf_read(id_path, HN_BF_HEADER + 4, max, &data, &got_len, why, sizeof why);
        if (got < 0) snprintf(seen, sizeof seen, "%s", why);
        if (got == 1) {
            hidet_nccl__bf_msg_t m;
            char inner[384];
            if (hidet_nccl__bf_parse(data, got_len, &m, inner, sizeof inner) != 0 ||
                hidet_nccl__bf_expect(&m, HN_BF_KIND_ANNOUNCE, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)rd->root,
                                      inner, sizeof inner) != 0) {
                snprintf(seen, sizeof seen, "%s: %s; refused", id_path, inner);
            } else if (memcmp(m.nonces + (size_t)s->rank * HN_BF_NONCE, nonce, HN_BF_NONCE) != 0) {
                snprintf(seen, sizeof seen, "%s does not carry this rank's nonce (stale, or published before this "
                         "rank arrived); waiting for the root to publish again", id_path);
            } else if (m.data_bytes != rd->out_bytes) {
                snprintf(seen, sizeof seen, "%s holds %u bytes, expected %zu; refused", id_path, m.data_bytes,
                         rd->out_bytes);
            } else {
                memcpy(rd->out, m.data, rd->out_bytes);
                free(data);
                unlink(hello_path); /* tells the root this rank has its bytes */
                return HIDET_NCCL_SUCCESS;
            }
        }
        free(data);
        if (hidet_nccl__poll_expired(&poll)) {
            unlink(hello_path);
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

static hidet_nccl_status_t file_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    const round_t rd = {tag, root, NULL, 0, buf, bytes};
    return run_round(state, &rd, timeout_s, msg, msg_bytes);
}

static hidet_nccl_status_t file_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    file_state_t *s = state; /* bytes * nranks is at most 8 MiB (the plug-in contract) */
    const round_t rd = {tag, 0, send, bytes, recv, bytes * (size_t)s->nranks};
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

hidet_nccl_status_t hidet_nccl_bootstrap_file(const hidet_nccl_file_bootstrap_params_t *params,
                                              hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    return hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_file_v2, params, out);
}

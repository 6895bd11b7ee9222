/* The shared-file bootstrap: rank 0 publishes, the others wait, nothing is left behind.
 * Protocol (docs/bootstrap_file.md), for each broadcast (sequence number seq):
 *   1. every reader puts a HELLO with a fresh random nonce at <dir>/hidet-nccl.<key>.<seq>.hello.<rank>;
 *   2. the root waits for every HELLO, then publishes the ANNOUNCE (data and every nonce) at
 *      <dir>/hidet-nccl.<key>.<seq>.id;
 *   3. a reader accepts only an ANNOUNCE of its job, round and world that carries its own
 *      nonce (so a stale or foreign file is never accepted), then removes its HELLO;
 *   4. the root removes the ANNOUNCE once every HELLO is gone. A HELLO that changes (a stale
 *      one replaced by a late reader) makes the root publish again. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_io_int.h"
#include "core/device_select_int.h"
#include "core/log_int.h"
#include "core/wait_int.h"
#include "hidet_nccl/bootstrap.h"

typedef struct {
    char dir[4096];
    char key[HN_BF_KEY_BYTES + 1];
    int rank, nranks, local_rank, local_size;
    unsigned jitter_seed;
    double poll_cap_s;
} file_state_t;

static hidet_nccl_status_t say(char *msg, size_t msg_bytes, hidet_nccl_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static hidet_nccl_status_t say(char *msg, size_t msg_bytes, hidet_nccl_status_t st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_bytes, fmt, ap);
    va_end(ap);
    return st;
}

/* The first of vars that is set: 1 and its value, 0 if none is set, -1 if one is malformed. */
static int int_from_env(const char *const *vars, size_t n, int *out, const char **which) {
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);
        if (v == NULL) continue;
        *which = vars[i];
        return hidet_nccl__parse_nonneg_int(v, out) ? 1 : -1;
    }
    return 0;
}

static hidet_nccl_status_t resolve_int(int given, const char *field, const char *const *vars, size_t n, int required,
                                       int *out, char *msg, size_t msg_bytes) {
    if (given >= 0) {
        *out = given;
        return HIDET_NCCL_SUCCESS;
    }
    const char *which = NULL;
    int r = int_from_env(vars, n, out, &which);
    if (r < 0)
        return say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s='%.64s' (for %s) is not a non-negative integer",
                   which, getenv(which), field);
    if (r == 0) {
        *out = -1;
        if (required)
            return say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "the %s is not given and none of $%s, $%s, $%s is set", field, vars[0], vars[1], vars[2]);
    }
    return HIDET_NCCL_SUCCESS;
}

static int key_ok(const char *k) {
    size_t n = strlen(k);
    if (n == 0 || n > HN_BF_KEY_BYTES) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = k[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return 1;
}

static hidet_nccl_status_t file_init(const void *params_v, void **state, char *msg, size_t msg_bytes) {
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    if (params_v != NULL) {
        const hidet_nccl_file_bootstrap_params_t *given = params_v;
        if (given->size < sizeof p)
            return say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "params->size is %zu, expected %zu: initialize with HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT",
                       given->size, sizeof p);
        p = *given;
    }
    file_state_t *s = calloc(1, sizeof *s);
    if (s == NULL) return say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    const char *dir = p.dir ? p.dir : getenv("HIDET_NCCL_RENDEZVOUS_DIR");
    char slurm_key[HN_BF_KEY_BYTES + 2] = "";
    const char *key = p.job_key ? p.job_key : getenv("HIDET_NCCL_JOB_KEY");
    if (key == NULL && getenv("SLURM_JOB_ID") != NULL) {
        const char *step = getenv("SLURM_STEP_ID");
        snprintf(slurm_key, sizeof slurm_key, "slurm-%.24s.%.24s", getenv("SLURM_JOB_ID"), step ? step : "0");
        key = slurm_key;
    }
    static const char *const rank_vars[] = {"HIDET_NCCL_RANK", "RANK", "SLURM_PROCID"};
    static const char *const size_vars[] = {"HIDET_NCCL_WORLD_SIZE", "WORLD_SIZE", "SLURM_NTASKS"};
    static const char *const local_vars[] = {"HIDET_NCCL_LOCAL_RANK", "LOCAL_RANK", "SLURM_LOCALID"};
    static const char *const lsize_vars[] = {"HIDET_NCCL_LOCAL_WORLD_SIZE", "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"};
    char why[512];
    if (dir == NULL || *dir == '\0')
        st = say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                 "no rendezvous directory: pass params->dir or set $HIDET_NCCL_RENDEZVOUS_DIR to a directory every "
                 "rank sees");
    else if (strlen(dir) >= sizeof s->dir - 128)
        st = say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rendezvous directory path is too long");
    else if (key == NULL)
        st = say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                 "no job key: pass params->job_key or set $HIDET_NCCL_JOB_KEY (unique per job; hidet-nccl-run and "
                 "Slurm set one)");
    else if (!key_ok(key))
        st = say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                 "job key '%.80s' is not 1 to %d of the characters A-Z a-z 0-9 . _ -", key, HN_BF_KEY_BYTES);
    if (st == HIDET_NCCL_SUCCESS) st = resolve_int(p.rank, "rank", rank_vars, 3, 1, &s->rank, msg, msg_bytes);
    if (st == HIDET_NCCL_SUCCESS) st = resolve_int(p.nranks, "number of ranks", size_vars, 3, 1, &s->nranks, msg, msg_bytes);
    if (st == HIDET_NCCL_SUCCESS)
        st = resolve_int(p.local_rank, "local rank", local_vars, 3, 0, &s->local_rank, msg, msg_bytes);
    if (st == HIDET_NCCL_SUCCESS)
        st = resolve_int(p.local_size, "local size", lsize_vars, 3, 0, &s->local_size, msg, msg_bytes);
    if (st == HIDET_NCCL_SUCCESS && (s->nranks < 1 || s->nranks > HN_BF_MAX_WORLD || s->rank >= s->nranks))
        st = say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank %d of %d ranks is out of range (1 .. %d ranks)",
                 s->rank, s->nranks, HN_BF_MAX_WORLD);
    if (st == HIDET_NCCL_SUCCESS && hn_bf_check_dir(dir, why, sizeof why) != 0)
        st = say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "%s", why);
    if (st != HIDET_NCCL_SUCCESS) {
        free(s);
        return st;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->key, sizeof s->key, "%s", key);
    s->jitter_seed = (unsigned)getpid() ^ (unsigned)s->rank * 2654435761u;
    s->poll_cap_s = 0.005; /* HIDET_NCCL_POLL_MAX_MS raises it for large jobs on a shared file system */
    const char *cap = getenv("HIDET_NCCL_POLL_MAX_MS");
    int cap_ms;
    if (cap != NULL && hidet_nccl__parse_nonneg_int(cap, &cap_ms) && cap_ms > 0) s->poll_cap_s = cap_ms / 1000.0;
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

/* Sleeps for the next poll: grows by half each time up to the cap, with +-25% jitter. */
static void backoff(file_state_t *s, double *delay) {
    double jitter = 0.75 + 0.5 * (double)rand_r(&s->jitter_seed) / RAND_MAX;
    double d = *delay * jitter;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&ts, NULL);
    *delay = *delay * 1.5 < s->poll_cap_s ? *delay * 1.5 : s->poll_cap_s;
}

static void path_of(const file_state_t *s, uint64_t seq, int hello_rank, char *out, size_t n) {
    if (hello_rank < 0)
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.id", s->dir, s->key, (unsigned long long)seq);
    else
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.hello.%d", s->dir, s->key, (unsigned long long)seq, hello_rank);
}

/* Reads and checks rank r's hello. 1 and its nonce, 0 absent, -1 refused (why). */
static int read_hello(const file_state_t *s, uint64_t seq, int r, uint8_t nonce[HN_BF_NONCE], char *why, size_t wn) {
    char path[4352];
    path_of(s, seq, r, path, sizeof path);
    uint8_t *data = NULL;
    size_t len = 0;
    int got = hn_bf_read(path, HN_BF_HEADER + 4, HN_BF_HEADER + HN_BF_NONCE + 4, &data, &len, why, wn);
    if (got <= 0) return got;
    hn_bf_msg_t m;
    char inner[384];
    int ok = hn_bf_parse(data, len, &m, inner, sizeof inner) == 0 &&
             hn_bf_expect(&m, HN_BF_KIND_HELLO, s->key, seq, (uint32_t)s->nranks, (uint32_t)r, inner, sizeof inner) == 0;
    if (ok) memcpy(nonce, m.nonce, HN_BF_NONCE);
    else snprintf(why, wn, "%s: %s; refused", path, inner);
    free(data);
    return ok ? 1 : -1;
}

/* "3, 7, 9 (3 of 8)" for the ranks with flag[r] == 0. */
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

static hidet_nccl_status_t root_broadcast(file_state_t *s, const void *buf, size_t bytes, uint64_t seq,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    int n = s->nranks;
    double start = hidet_nccl__now(), delay = 0.0001;
    uint8_t *nonces = calloc((size_t)n, HN_BF_NONCE);
    unsigned char *have = calloc((size_t)n, 1);
    size_t cap = HN_BF_HEADER + 8 + bytes + (size_t)HN_BF_NONCE * n;
    uint8_t *file = malloc(cap);
    char id_path[4352], why[768] = "", missing[160];
    path_of(s, seq, -1, id_path, sizeof id_path);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    int published = 0;
    if (!nonces || !have || !file) {
        st = say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", n);
        goto out;
    }
    have[s->rank] = 1;
    for (int waiting = n - 1; waiting > 0;) { /* 1. every reader's hello */
        for (int r = 0; r < n; r++)
            if (!have[r] && read_hello(s, seq, r, nonces + (size_t)r * HN_BF_NONCE, why, sizeof why) == 1) {
                have[r] = 1;
                waiting--;
            }
        if (waiting == 0) break;
        if (hidet_nccl__now() - start > timeout_s) {
            list_missing(have, n, s->rank, missing, sizeof missing);
            st = say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                     "rank %d (root) waited %.1f s in %s for ranks %s, which never arrived (no valid hello file "
                     "hidet-nccl.%s.%llu.hello.<rank>)%s%s",
                     s->rank, timeout_s, s->dir, missing, s->key, (unsigned long long)seq, why[0] ? "; last problem: " : "",
                     why);
            goto out;
        }
        backoff(s, &delay);
    }
    for (int changed = 1;;) { /* 2. publish; 3. wait for every reader to take it */
        if (changed) {
            size_t len = hn_bf_encode_announce(file, cap, s->key, seq, (uint32_t)n, (uint32_t)s->rank, buf,
                                               (uint32_t)bytes, nonces);
            if (len == 0 || hn_bf_publish(id_path, file, len, why, sizeof why) != 0) {
                st = say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root) could not publish %s: %s", s->rank,
                         id_path, len ? why : "too large");
                goto out;
            }
            if (!published) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                HN_TRACE("published %s at %lld.%09ld (CLOCK_REALTIME)", id_path, (long long)now.tv_sec, now.tv_nsec);
            }
            published = 1;
            changed = 0;
        }
        int left = 0;
        for (int r = 0; r < n; r++) {
            if (r == s->rank || !have[r]) continue;
            uint8_t nonce[HN_BF_NONCE];
            int got = read_hello(s, seq, r, nonce, why, sizeof why);
            if (got == 0) {
                have[r] = 0; /* taken: its hello is gone */
                continue;
            }
            left++;
            if (got == 1 && memcmp(nonce, nonces + (size_t)r * HN_BF_NONCE, HN_BF_NONCE) != 0) {
                memcpy(nonces + (size_t)r * HN_BF_NONCE, nonce, HN_BF_NONCE); /* a stale hello was replaced */
                changed = 1;
            }
        }
        if (left == 0) break;
        if (hidet_nccl__now() - start > 2 * timeout_s) {
            for (int r = 0; r < n; r++) have[r] = !have[r] || r == s->rank;
            list_missing(have, n, s->rank, missing, sizeof missing);
            st = say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                     "rank %d (root) published %s but ranks %s did not take it within %.1f s", s->rank, id_path,
                     missing, 2 * timeout_s);
            goto out;
        }
        if (!changed) backoff(s, &delay);
    }
out:
    if (published) unlink(id_path);
    free(nonces);
    free(have);
    free(file);
    return st;
}

static hidet_nccl_status_t reader_broadcast(file_state_t *s, void *buf, size_t bytes, int root, uint64_t seq,
                                            double timeout_s, char *msg, size_t msg_bytes) {
    uint8_t nonce[HN_BF_NONCE], hello[HN_BF_HEADER + HN_BF_NONCE + 4];
    char hello_path[4352], id_path[4352], why[768];
    path_of(s, seq, s->rank, hello_path, sizeof hello_path);
    path_of(s, seq, -1, id_path, sizeof id_path);
    if (hn_bf_random(nonce, sizeof nonce, why, sizeof why) != 0)
        return say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "%s", why);
    size_t len = hn_bf_encode_hello(hello, sizeof hello, s->key, seq, (uint32_t)s->nranks, (uint32_t)s->rank, nonce);
    if (hn_bf_publish(hello_path, hello, len, why, sizeof why) != 0)
        return say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not announce itself: %s", s->rank, why);
    double start = hidet_nccl__now(), delay = 0.0001;
    char seen[768] = "no file yet";
    size_t max = HN_BF_MAX_FILE; /* the parser then says exactly what is wrong */
    for (;;) {
        uint8_t *data = NULL;
        size_t got_len = 0;
        int got = hn_bf_read(id_path, HN_BF_HEADER + 4, max, &data, &got_len, why, sizeof why);
        if (got < 0) snprintf(seen, sizeof seen, "%s", why);
        if (got == 1) {
            hn_bf_msg_t m;
            char inner[384];
            if (hn_bf_parse(data, got_len, &m, inner, sizeof inner) != 0 ||
                hn_bf_expect(&m, HN_BF_KIND_ANNOUNCE, s->key, seq, (uint32_t)s->nranks, (uint32_t)root, inner,
                             sizeof inner) != 0) {
                snprintf(seen, sizeof seen, "%s: %s; refused", id_path, inner);
            } else if (memcmp(m.nonces + (size_t)s->rank * HN_BF_NONCE, nonce, HN_BF_NONCE) != 0) {
                snprintf(seen, sizeof seen, "%s does not carry this rank's nonce (stale, or published before this "
                         "rank arrived); waiting for the root to publish again", id_path);
            } else if (m.data_bytes != bytes) {
                snprintf(seen, sizeof seen, "%s holds %u bytes, expected %zu; refused", id_path, m.data_bytes, bytes);
            } else {
                memcpy(buf, m.data, bytes);
                free(data);
                unlink(hello_path); /* tells the root this rank has its bytes */
                return HIDET_NCCL_SUCCESS;
            }
        }
        free(data);
        if (hidet_nccl__now() - start > timeout_s) {
            unlink(hello_path);
            return say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                       "rank %d waited %.1f s for %s from rank %d (root); last seen: %s", s->rank, timeout_s, id_path,
                       root, seen);
        }
        backoff(s, &delay);
    }
}

static hidet_nccl_status_t file_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    file_state_t *s = state;
    if (bytes > HN_BF_MAX_DATA)
        return say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%zu bytes is more than %d", bytes, HN_BF_MAX_DATA);
    if (s->nranks == 1) return HIDET_NCCL_SUCCESS;
    if (s->rank == root) return root_broadcast(s, buf, bytes, tag, timeout_s, msg, msg_bytes);
    return reader_broadcast(s, buf, bytes, root, tag, timeout_s, msg, msg_bytes);
}

const hidet_nccl_bootstrap_v1_t hidet_nccl_bootstrap_file_v1 = {
    .name = "file",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = file_init,
    .rank_size = file_rank_size,
    .local_rank = file_local_rank,
    .broadcast = file_broadcast,
    .allgather = NULL,
    .finalize = file_finalize,
};

hidet_nccl_status_t hidet_nccl_bootstrap_file(const hidet_nccl_file_bootstrap_params_t *params,
                                              hidet_nccl_bootstrap_h *out) {
    return hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_file_v1, params, out);
}

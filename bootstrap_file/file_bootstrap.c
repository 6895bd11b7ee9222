/* The shared-file bootstrap: its plug-in struct and entry points. init finds the place (the
 * directory, the job key, the poll cap: params or the settings), the rank numbers and the job's
 * secret, and numbers this bootstrap's generation, sweeps what ended jobs with its key left
 * (rank 0 and local rank 0: file_sweep.c) and puts its rank's presence (file_presence.c);
 * finalize tidies what the roster and the recovery rounds left (file_sweep.c) and removes it. A broadcast or an allgather is one round: rank 0 (the
 * root) publishes, the others wait, nothing is left behind; the protocol is file_round_int.h's,
 * the root's side file_root.c's, a reader's file_reader.c's. After the first round it rooted,
 * rank 0 puts the roster of every rank's process; recovery rounds are file_recover.c's, heal
 * rounds file_heal.c's (a restarted rank is told from a forming one by file_joining.c), their
 * tidying file_sweep.c's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_heal_int.h"
#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_joining_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_presence_int.h"
#include "bootstrap_file/file_reader_int.h"
#include "bootstrap_file/file_recover_int.h"
#include "bootstrap_file/file_root_int.h"
#include "bootstrap_file/file_round_int.h"
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
    s->presence_fd = -1;
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
    if (st == HIDET_NCCL_SUCCESS && ((s->peers = calloc((size_t)s->nranks, sizeof *s->peers)) == NULL ||
                                     (s->job_of = malloc(sizeof *s->job_of * (size_t)s->nranks)) == NULL))
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", s->nranks);
    if (st != HIDET_NCCL_SUCCESS) {
        explicit_bzero(s->secret, sizeof s->secret);
        free(s->peers);
        free(s);
        return st;
    }
    for (int r = 0; r < s->nranks; r++) s->job_of[r] = r;
    s->first_rank = s->rank;
    s->first_size = s->nranks;
    s->generation = next_generation(s->dir, s->key);
    hidet_nccl__bf_this_host(s->host);
    /* A restarted rank of a job that went on joins it by a heal round: it touches nothing of the
     * job's (no sweep; no presence, which a live process as this rank may hold) until one takes
     * it in. */
    char formed[1024];
    if ((s->joining = hidet_nccl__bf_job_formed(s, formed, sizeof formed)) != 0)
        HN_INFO("rank %d of %d (job key '%s' in %s) joins a job that goes on without it: %s", s->rank, s->nranks,
                s->key, s->dir, formed);
    if (!s->joining && s->nranks > 1 && (s->rank == 0 || s->local_rank == 0)) hidet_nccl__bf_sweep_ended(s);
    if (!s->joining && s->nranks > 1 && (st = hidet_nccl__bf_presence_put(s, msg, n)) != HIDET_NCCL_SUCCESS) {
        explicit_bzero(s->secret, sizeof s->secret);
        free(s->peers);
        free(s->job_of);
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

/* Whether this rank was the only process as its rank to the end (its presence), then what the
 * roster and the recovery rounds left goes (file_sweep.c), its presence, the state. */
static hidet_nccl_status_t file_finalize(void *state, char *msg, size_t msg_bytes) {
    file_state_t *s = state;
    hidet_nccl_status_t st = hidet_nccl__bf_presence_held(s, msg, msg_bytes);
    hidet_nccl__bf_tidy(s);
    hidet_nccl_status_t dropped = hidet_nccl__bf_presence_drop(s, st == HIDET_NCCL_SUCCESS ? msg : NULL, msg_bytes);
    if (st == HIDET_NCCL_SUCCESS) st = dropped; /* its removal, the last look */
    explicit_bzero(s->secret, sizeof s->secret);
    free(s->peers);
    free(s->job_of);
    free(state);
    return st;
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

static hidet_nccl_status_t run_round(file_state_t *s, const hn_bf_round_t *rd, double timeout_s, char *msg,
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
    hidet_nccl_status_t held = hidet_nccl__bf_presence_held(s, msg, msg_bytes); /* one process as this rank */
    if (held != HIDET_NCCL_SUCCESS) return held;
    if (s->rank == rd->root) return hidet_nccl__bf_root_round(s, rd, &poll, msg, msg_bytes);
    return hidet_nccl__bf_reader_round(s, rd, &poll, msg, msg_bytes);
}

static hidet_nccl_status_t file_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    const hn_bf_round_t rd = {hidet_nccl__bf_seq(state, tag), root, NULL, 0, buf, bytes};
    return run_round(state, &rd, timeout_s, msg, msg_bytes);
}

static hidet_nccl_status_t file_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                          double timeout_s, char *msg, size_t msg_bytes) {
    file_state_t *s = state; /* bytes * nranks is at most 8 MiB (the plug-in contract) */
    const hn_bf_round_t rd = {hidet_nccl__bf_seq(s, tag), 0, send, bytes, recv, bytes * (size_t)s->nranks};
    return run_round(s, &rd, timeout_s, msg, msg_bytes);
}

const hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_file_v4 = {
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
    .joining = hidet_nccl__bf_joining,
    .heal = hidet_nccl__bf_heal,
};

/* The PMIx bootstrap: rank, size and local rank from the PMIx server that started the process
 * (mpirun, prterun, srun --mpi=pmix, Flux, PBS), and bytes spread by PMIx_Put/PMIx_Commit, a
 * PMIx_Fence_nb that collects the data (awaited against the deadline), and PMIx_Get. libpmix
 * is loaded at run time (bootstrap_pmix/pmix_loader.c). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"

#ifdef HIDET_NCCL_NO_PMIX_HEADERS

/* Built where pmix.h was not found: the backend exists, and says why it cannot work. */
static hidet_nccl_status_t stub_init(const void *params, const hidet_nccl_bootstrap_init_args_t *args, void **state,
                                     char *msg, size_t n) {
    (void)params, (void)args, (void)state;
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_UNSUPPORTED,
                           "this libhidet_nccl.a was built without pmix.h (install libpmix-dev, or set PMIX_HOME, "
                           "and rebuild): the PMIx bootstrap is not available");
}
static hidet_nccl_status_t stub_never(void *state, char *msg, size_t n) {
    (void)state;
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_UNSUPPORTED, "the PMIx bootstrap is not available");
}
static hidet_nccl_status_t stub_pair(void *state, int *a, int *b, char *msg, size_t n) {
    (void)a, (void)b;
    return stub_never(state, msg, n);
}
static hidet_nccl_status_t stub_bcast(void *state, void *buf, size_t bytes, int root, uint64_t tag, double t,
                                      char *msg, size_t n) {
    (void)buf, (void)bytes, (void)root, (void)tag, (void)t;
    return stub_never(state, msg, n);
}
static hidet_nccl_status_t stub_gather(void *state, const void *s, void *r, size_t bytes, uint64_t tag, double t,
                                       char *msg, size_t n) {
    (void)s, (void)r, (void)bytes, (void)tag, (void)t;
    return stub_never(state, msg, n);
}

const hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_pmix_v4 = {
    .name = "pmix",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = stub_init,
    .rank_size = stub_pair,
    .local_rank = stub_pair,
    .broadcast = stub_bcast,
    .allgather = stub_gather,
    .finalize = stub_never,
};

#else

#include "bootstrap_pmix/pmix_loader_int.h"

typedef struct {
    const hn_pmix_t *p;
    pmix_proc_t me, all; /* all: this namespace, rank PMIX_RANK_WILDCARD */
    int rank, size, local_rank, local_size;
    unsigned instance; /* keeps the keys of bootstraps made one after another apart */
} pmix_state_t;

/* Bootstraps made in this process so far: every rank makes them in the same order. */
static atomic_uint g_instances;

/* PMIx is initialized once per process and finalized at its exit: a process that calls
 * PMIx_Finalize has left its job's collectives (the server ends later fences with "partial
 * success"), so a second bootstrap after the first one's release could never meet the others. */
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized;
static pmix_proc_t g_me;
static const hn_pmix_t *g_pmix_at_exit;

static void finalize_at_exit(void) { g_pmix_at_exit->Finalize(NULL, 0); }

/* PMIx_Init the first time; the process's identity every time. */
static pmix_status_t init_once(const hn_pmix_t *p, pmix_proc_t *me) {
    pthread_mutex_lock(&g_init_lock);
    pmix_status_t rc = PMIX_SUCCESS;
    if (!g_initialized) {
        rc = p->Init(&g_me, NULL, 0);
        if (rc == PMIX_SUCCESS) {
            g_initialized = 1;
            g_pmix_at_exit = p;
            atexit(finalize_at_exit);
        }
    }
    *me = g_me;
    pthread_mutex_unlock(&g_init_lock);
    return rc;
}

static hidet_nccl_status_t pmix_fail(const pmix_state_t *s, char *msg, size_t n, const char *call, pmix_status_t rc) {
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "%s failed on rank %d: %s (pmix_status_t %d; %s)", call,
                           s->rank, s->p->Error_string(rc), (int)rc, s->p->path);
}

/* An integer of proc's (or the job's) from PMIx: local rank, job size, ... -1 if absent. */
static int get_int(const pmix_state_t *s, const pmix_proc_t *proc, const char *key) {
    pmix_value_t *v = NULL;
    if (s->p->Get(proc, key, NULL, 0, &v) != PMIX_SUCCESS || v == NULL) return -1;
    long x = -1;
    switch (v->type) {
        case PMIX_UINT8: x = v->data.uint8; break;
        case PMIX_UINT16: x = v->data.uint16; break;
        case PMIX_UINT32: x = v->data.uint32; break;
        case PMIX_UINT64: x = v->data.uint64 < (1u << 30) ? (long)v->data.uint64 : -1; break;
        case PMIX_INT: x = v->data.integer; break;
        case PMIX_INT32: x = v->data.int32; break;
        case PMIX_PROC_RANK: x = v->data.rank; break;
        default: break;
    }
    hidet_nccl__pmix_value_free(s->p, v);
    return x >= 0 && x < (1L << 30) ? (int)x : -1;
}

static hidet_nccl_status_t pmix_init(const void *params, const hidet_nccl_bootstrap_init_args_t *args, void **state,
                                     char *msg, size_t n) {
    (void)params; /* PMIx knows the rank, the size and the local rank: the hints are not needed */
    (void)args;
    pmix_state_t *s = calloc(1, sizeof *s);
    if (s == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    char why[4096];
    if (hidet_nccl__pmix(&s->p, why, sizeof why) != 0) {
        free(s);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "%s", why);
    }
    s->rank = -1;
    pmix_status_t rc = init_once(s->p, &s->me);
    if (rc != PMIX_SUCCESS) {
        hidet_nccl_status_t st = pmix_fail(s, msg, n, "PMIx_Init", rc);
        size_t used = strlen(msg);
        if (used + 2 < n)
            snprintf(msg + used, n - used, "; was the program started by a PMIx launcher (mpirun, srun --mpi=pmix)?");
        free(s);
        return st;
    }
    s->all = s->me;
    s->all.rank = PMIX_RANK_WILDCARD;
    s->rank = (int)s->me.rank;
    s->size = get_int(s, &s->all, PMIX_JOB_SIZE);
    s->local_rank = get_int(s, &s->me, PMIX_LOCAL_RANK);
    s->local_size = get_int(s, &s->all, PMIX_LOCAL_SIZE);
    if (s->size < 1 || s->rank < 0 || s->rank >= s->size) {
        hidet_nccl_status_t st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                                 "PMIx gave rank %d and job size %d (namespace %s)", s->rank, s->size,
                                                 s->me.nspace);
        free(s);
        return st;
    }
    s->instance = atomic_fetch_add(&g_instances, 1);
    HN_INFO("PMIx bootstrap: rank %d of %d, local rank %d of %d, namespace %s", s->rank, s->size, s->local_rank,
            s->local_size, s->me.nspace);
    *state = s;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t pmix_rank_size(void *state, int *rank, int *size, char *msg, size_t n) {
    (void)msg, (void)n;
    const pmix_state_t *s = state;
    *rank = s->rank;
    *size = s->size;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t pmix_local_rank(void *state, int *local_rank, int *local_size, char *msg, size_t n) {
    (void)msg, (void)n;
    const pmix_state_t *s = state;
    *local_rank = s->local_rank;
    *local_size = s->local_size;
    return HIDET_NCCL_SUCCESS;
}

/* What the fence's callback writes; on the heap, since after a timeout PMIx may still call. */
typedef struct {
    atomic_int done;
    pmix_status_t status;
} fence_t;

static void fence_done(pmix_status_t status, void *cbdata) {
    fence_t *f = cbdata;
    f->status = status;
    atomic_store(&f->done, 1);
}

/* A fence over the namespace that collects what was put, awaited against the deadline. */
static hidet_nccl_status_t fence(const pmix_state_t *s, const char *what, double timeout_s, char *msg, size_t n) {
    fence_t *f = calloc(1, sizeof *f);
    if (f == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    pmix_info_t collect;
    memset(&collect, 0, sizeof collect);
    snprintf(collect.key, sizeof collect.key, "%s", PMIX_COLLECT_DATA);
    collect.value.type = PMIX_BOOL;
    collect.value.data.flag = true;
    pmix_status_t rc = s->p->Fence_nb(&s->all, 1, &collect, 1, fence_done, f);
    if (rc != PMIX_SUCCESS) {
        free(f);
        return pmix_fail(s, msg, n, "PMIx_Fence_nb", rc);
    }
    hn_poll_t poll;
    hidet_nccl__poll_begin(&poll, timeout_s, 100e-6, 10000, 1000000, 0);
    while (!atomic_load(&f->done)) {
        if (hidet_nccl__poll_expired(&poll)) /* f is left to the callback, which may still come */
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                                   "the PMIx fence of %s did not complete within %.1f s on rank %d of %d (namespace "
                                   "%s): a rank has not called it (or has died)",
                                   what, timeout_s, s->rank, s->size, s->me.nspace);
        hidet_nccl__poll_pause(&poll);
    }
    rc = f->status;
    free(f);
    if (rc == PMIX_SUCCESS) return HIDET_NCCL_SUCCESS;
#ifdef PMIX_ERR_PARTIAL_SUCCESS
    if (rc == PMIX_ERR_PARTIAL_SUCCESS)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "the PMIx fence of %s ended without every rank on rank %d of %d (namespace %s): a "
                               "rank left the job (finalized or died) before it",
                               what, s->rank, s->size, s->me.nspace);
#endif
    return pmix_fail(s, msg, n, "PMIx_Fence_nb", rc);
}

static void key_of(const pmix_state_t *s, uint64_t tag, char *key, size_t n) {
    snprintf(key, n, "hidet_nccl.%u.%llu", s->instance, (unsigned long long)tag);
}

/* This rank's bytes under key, for every rank after the next fence. */
static hidet_nccl_status_t put(const pmix_state_t *s, const char *key, const void *buf, size_t bytes, char *msg,
                               size_t n) {
    pmix_value_t v;
    memset(&v, 0, sizeof v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)buf;
    v.data.bo.size = bytes;
    pmix_status_t rc = s->p->Put(PMIX_GLOBAL, key, &v); /* PMIx copies the bytes */
    if (rc == PMIX_SUCCESS) rc = s->p->Commit();
    return rc == PMIX_SUCCESS ? HIDET_NCCL_SUCCESS : pmix_fail(s, msg, n, "PMIx_Put/PMIx_Commit", rc);
}

/* Rank r's bytes under key (after the fence that collected them): exactly `bytes` of them.
 * The data may sit with the local PMIx server rather than in this process (PMIx 5 keeps it
 * there), so the Get may ask the server: bounded by what is left of the deadline. */
static hidet_nccl_status_t get(const pmix_state_t *s, int r, const char *key, void *out, size_t bytes,
                               double deadline, char *msg, size_t n) {
    pmix_proc_t from = s->me;
    from.rank = (pmix_rank_t)r;
    pmix_info_t bound;
    memset(&bound, 0, sizeof bound);
    snprintf(bound.key, sizeof bound.key, "%s", PMIX_TIMEOUT);
    bound.value.type = PMIX_INT;
    double left = deadline - hidet_nccl__now();
    bound.value.data.integer = left < 1 ? 1 : left > 1e6 ? 1000000 : (int)left + 1; /* whole seconds */
    pmix_value_t *v = NULL;
    pmix_status_t rc = s->p->Get(&from, key, &bound, 1, &v);
    if (rc != PMIX_SUCCESS || v == NULL) return pmix_fail(s, msg, n, "PMIx_Get", rc);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size != bytes)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                             "PMIx gave rank %d's %s as type %d of %zu bytes; expected %zu bytes", r, key, (int)v->type,
                             v->type == PMIX_BYTE_OBJECT ? v->data.bo.size : (size_t)0, bytes);
    else if (bytes)
        memcpy(out, v->data.bo.bytes, bytes);
    hidet_nccl__pmix_value_free(s->p, v);
    return st;
}

static hidet_nccl_status_t pmix_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                          double timeout_s, char *msg, size_t n) {
    const pmix_state_t *s = state;
    char key[64];
    key_of(s, tag, key, sizeof key);
    double deadline = hidet_nccl__now() + timeout_s;
    hidet_nccl_status_t st = s->rank == root ? put(s, key, buf, bytes, msg, n) : HIDET_NCCL_SUCCESS;
    if (st == HIDET_NCCL_SUCCESS) st = fence(s, key, timeout_s, msg, n);
    if (st == HIDET_NCCL_SUCCESS && s->rank != root) st = get(s, root, key, buf, bytes, deadline, msg, n);
    return st;
}

static hidet_nccl_status_t pmix_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                          double timeout_s, char *msg, size_t n) {
    const pmix_state_t *s = state;
    char key[64];
    key_of(s, tag, key, sizeof key);
    double deadline = hidet_nccl__now() + timeout_s;
    hidet_nccl_status_t st = put(s, key, send, bytes, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = fence(s, key, timeout_s, msg, n);
    if (st == HIDET_NCCL_SUCCESS) memmove((uint8_t *)recv + (size_t)s->rank * bytes, send, bytes);
    for (int r = 0; st == HIDET_NCCL_SUCCESS && r < s->size; r++)
        if (r != s->rank) st = get(s, r, key, (uint8_t *)recv + (size_t)r * bytes, bytes, deadline, msg, n);
    return st;
}

static hidet_nccl_status_t pmix_finalize(void *state, char *msg, size_t n) {
    (void)msg, (void)n;
    free(state); /* PMIx itself stays initialized until the process exits (init_once) */
    return HIDET_NCCL_SUCCESS;
}

const hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_pmix_v4 = {
    .name = "pmix",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = pmix_init,
    .rank_size = pmix_rank_size,
    .local_rank = pmix_local_rank,
    .broadcast = pmix_broadcast,
    .allgather = pmix_allgather,
    .finalize = pmix_finalize,
    .recover = NULL,
    .recover_unsupported = "a PMIx fence waits for every process of the namespace, a dead one included; start the "
                           "job with hidet-nccl-run (file or socket rendezvous) to survive a dead rank",
    .heal_unsupported = "a PMIx namespace does not take a restarted process back in (PMIx_Spawn makes a new "
                        "namespace); start the job with hidet-nccl-run --max-restarts (file or socket rendezvous) "
                        "to heal",
};

#endif

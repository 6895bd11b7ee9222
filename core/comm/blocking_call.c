/* Blocking NCCL calls on a helper thread, awaited against a deadline (blocking_call_int.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm/blocking_call_int.h"
#include "core/nccl/cuda_int.h"
#include "core/base/status_int.h"
#include "core/base/log_int.h"

typedef struct {
    hn_blocking_call_t call;
    int device;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC */
    int done, abandoned;
    ncclResult_t result;
    cudaError_t cuda;
    unsigned char arg[];
} job_t;

static atomic_int g_abandoned;

int hidet_nccl__blocking_calls_abandoned(void) { return atomic_load(&g_abandoned); }

static void free_job(job_t *j) {
    pthread_cond_destroy(&j->cond);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

/* One helper is kept after its call, up to KEEP_S seconds, and takes the next call: NCCL's init
 * on a thread that has made one before is a few percent faster than on a new thread
 * (docs/benchmarks.md), and a process that makes several communicators makes one thread. */
#define KEEP_S 30
static pthread_mutex_t g_pool = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pool_cond; /* on CLOCK_MONOTONIC */
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;
static int g_waiting;   /* a kept helper waits for a call */
static job_t *g_handed; /* the call handed to it */
static atomic_int g_helpers; /* helper threads alive */

/* A fork's child has no helper: the parent's kept one stays in the parent. */
static void pool_prepare(void) { pthread_mutex_lock(&g_pool); }
static void pool_parent(void) { pthread_mutex_unlock(&g_pool); }
static void pool_child(void) {
    g_waiting = 0;
    g_handed = NULL;
    atomic_store(&g_helpers, 0);
    pthread_mutex_unlock(&g_pool);
}

/* A condition variable whose timed waits run on CLOCK_MONOTONIC. */
static void monotonic_cond_init(pthread_cond_t *cond) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
}

static void pool_init(void) {
    monotonic_cond_init(&g_pool_cond);
    pthread_atfork(pool_prepare, pool_parent, pool_child);
}

/* This helper takes the kept place, if free: 1 if it did. */
static int claim_kept_place(void) {
    pthread_mutex_lock(&g_pool);
    int taken = !g_waiting;
    if (taken) g_waiting = 1;
    pthread_mutex_unlock(&g_pool);
    return taken;
}

/* Runs one call; afterwards the job belongs to the caller, unless the caller gave up. 1 when
 * this helper is then the kept one: claimed before the caller is told, so that the caller's
 * next call finds it; after the late hook for an abandoned call (which may take long). */
static int run(job_t *j) {
    ncclResult_t r = ncclSystemError;
    cudaError_t ce = j->device >= 0 ? cudaSetDevice(j->device) : cudaSuccess; /* per thread; NCCL uses it */
    if (ce == cudaSuccess) r = j->call.run(j->arg);
    pthread_mutex_lock(&j->lock);
    int abandoned = j->abandoned;
    int kept = !abandoned && claim_kept_place();
    j->done = 1;
    j->result = r;
    j->cuda = ce;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
    if (abandoned) { /* the caller has gone: the job is ours */
        if (ce == cudaSuccess && j->call.late != NULL) j->call.late(j->arg, r);
        atomic_fetch_sub(&g_abandoned, 1);
        free_job(j);
        kept = claim_kept_place();
    }
    return kept;
}

/* The next call for the kept helper, or NULL (none came within KEEP_S): the thread ends. */
static job_t *next_call(void) {
    pthread_mutex_lock(&g_pool);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += KEEP_S;
    while (g_handed == NULL && pthread_cond_timedwait(&g_pool_cond, &g_pool, &deadline) != ETIMEDOUT) continue;
    job_t *j = g_handed;
    g_handed = NULL;
    g_waiting = 0;
    pthread_mutex_unlock(&g_pool);
    return j;
}

static void *helper(void *p) {
    atomic_fetch_add(&g_helpers, 1);
    for (job_t *j = p; j != NULL; j = run(j) ? next_call() : NULL) continue;
    atomic_fetch_sub(&g_helpers, 1);
    return NULL;
}

int hidet_nccl__blocking_helpers_alive(void) { return atomic_load(&g_helpers); }

int hidet_nccl__blocking_helper_kept(void) {
    pthread_mutex_lock(&g_pool);
    int kept = g_waiting && g_handed == NULL;
    pthread_mutex_unlock(&g_pool);
    return kept;
}

/* 1 when the kept helper took the call. */
static int hand_over(job_t *j) {
    pthread_once(&g_pool_once, pool_init);
    pthread_mutex_lock(&g_pool);
    int taken = g_waiting && g_handed == NULL;
    if (taken) {
        g_handed = j;
        pthread_cond_signal(&g_pool_cond);
    }
    pthread_mutex_unlock(&g_pool);
    return taken;
}

/* A new detached helper for j, with every signal blocked; pthread_create's result. */
static int start_helper(job_t *j) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, helper, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc;
}

hidet_nccl_status_t hidet_nccl__blocking_call(const hn_blocking_call_t *call, void *arg, size_t arg_size, int device,
                                              double timeout_s, const char *what, ncclResult_t *result) {
    if (!(timeout_s > 0 && timeout_s <= HN_TIMEOUT_MAX_S)) /* NaN too: the deadline's arithmetic needs a number */
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s: the deadline %g s is not in (0, %g]", what, timeout_s,
                       HN_TIMEOUT_MAX_S);
    job_t *j = calloc(1, sizeof *j + arg_size);
    if (j == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %s", what);
    j->call = *call;
    j->device = device;
    memcpy(j->arg, arg, arg_size);
    monotonic_cond_init(&j->cond);
    pthread_mutex_init(&j->lock, NULL);

    /* The kept helper, else a new one. A helper takes no signals (they stay with the
     * application's threads) and is never joined: it may outlive the call. */
    int rc = hand_over(j) ? 0 : start_helper(j);
    if (rc != 0) {
        free_job(j);
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "cannot start a thread for %s: %s", what, strerror(rc));
    }

    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    time_t whole = (time_t)timeout_s; /* timeout_s > 0: truncation is floor */
    deadline.tv_sec += whole;
    deadline.tv_nsec += (long)((timeout_s - (double)whole) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&j->lock);
    while (!j->done) {
        rc = pthread_cond_timedwait(&j->cond, &j->lock, &deadline);
        if (rc == ETIMEDOUT && !j->done) {
            j->abandoned = 1;
            atomic_fetch_add(&g_abandoned, 1);
            pthread_mutex_unlock(&j->lock);
            return HN_FAIL(HIDET_NCCL_ERROR_TIMEOUT,
                           "%s did not return within %.1f s (the deadline is HIDET_NCCL_TIMEOUT); NCCL's blocking "
                           "call cannot be interrupted, so it is left to finish on a helper thread, and what it "
                           "makes, if it ever returns, is aborted. A rank that never arrived or died is the usual "
                           "cause; NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP shows where it waits",
                           what, timeout_s);
        }
    }
    pthread_mutex_unlock(&j->lock);
    cudaError_t ce = j->cuda;
    *result = j->result;
    memcpy(arg, j->arg, arg_size);
    free_job(j);
    if (ce != cudaSuccess) return hidet_nccl__cuda_fail("hidet_nccl__blocking_call", "cudaSetDevice", ce);
    return HIDET_NCCL_SUCCESS;
}

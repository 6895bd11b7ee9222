/* Blocking NCCL calls on a helper thread, awaited against a deadline (blocking_call_int.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/blocking_call_int.h"
#include "core/cuda_int.h"
#include "core/error_int.h"
#include "core/log_int.h"

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

static void *helper(void *p) {
    job_t *j = p;
    ncclResult_t r = ncclSystemError;
    cudaError_t ce = j->device >= 0 ? cudaSetDevice(j->device) : cudaSuccess; /* per thread; NCCL uses it */
    if (ce == cudaSuccess) r = j->call.run(j->arg);
    pthread_mutex_lock(&j->lock);
    j->done = 1;
    j->result = r;
    j->cuda = ce;
    int abandoned = j->abandoned;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
    if (abandoned) { /* the caller has gone: the job is ours */
        if (ce == cudaSuccess && j->call.late != NULL) j->call.late(j->arg, r);
        atomic_fetch_sub(&g_abandoned, 1);
        free_job(j);
    }
    return NULL;
}

hidet_nccl_status_t hidet_nccl__blocking_call(const hn_blocking_call_t *call, void *arg, size_t arg_size, int device,
                                              double timeout_s, const char *what, ncclResult_t *result) {
    job_t *j = calloc(1, sizeof *j + arg_size);
    if (j == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %s", what);
    j->call = *call;
    j->device = device;
    memcpy(j->arg, arg, arg_size);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&j->lock, NULL);

    /* The helper takes no signals (they stay with the application's threads) and is never
     * joined: it may outlive the call. */
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

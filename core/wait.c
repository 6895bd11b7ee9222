/* Deadlines, and polling non-blocking communicators until they are ready. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "core/error_int.h"
#include "core/log_int.h"
#include "core/wait_int.h"

#define DEFAULT_TIMEOUT_S 300.0

double hidet_nccl__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

hidet_nccl_status_t hidet_nccl__timeout_seconds(double *seconds) {
    const char *v = getenv("HIDET_NCCL_TIMEOUT");
    if (v == NULL || *v == '\0') {
        *seconds = DEFAULT_TIMEOUT_S;
        return HIDET_NCCL_SUCCESS;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno != 0 || *end != '\0' || !isfinite(x) || x <= 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "HIDET_NCCL_TIMEOUT='%.64s' is not a positive number of seconds", v);
    *seconds = x;
    return HIDET_NCCL_SUCCESS;
}

void hidet_nccl__poll_pause(double waited, double spin_s, long *sleep_ns, long max_ns) {
    if (waited < spin_s) return;
    struct timespec ts = {0, *sleep_ns};
    nanosleep(&ts, NULL);
    if (*sleep_ns < max_ns) *sleep_ns *= 2;
}

static void abort_all(const hn_nccl_t *nccl, ncclComm_t *comms, int n) {
    for (int i = 0; i < n; i++) {
        if (comms[i] != NULL) {
            nccl->CommAbort(comms[i]);
            comms[i] = NULL;
        }
    }
}

hidet_nccl_status_t hidet_nccl__await(const hn_nccl_t *nccl, ncclComm_t *comms, int n,
                                      double timeout_s, int abort_on_failure, const char *what) {
    double start = hidet_nccl__now();
    long sleep_ns = 10000;
    for (;;) {
        int pending = 0;
        for (int i = 0; i < n; i++) {
            if (comms[i] == NULL) continue;
            ncclResult_t async = ncclSuccess;
            ncclResult_t r = nccl->CommGetAsyncError(comms[i], &async);
            if (r == ncclSuccess && async == ncclInProgress) {
                pending++;
                continue;
            }
            if (r != ncclSuccess || async != ncclSuccess) {
                hidet_nccl_status_t st = hidet_nccl__nccl_fail(
                    "hidet_nccl__await", what, r != ncclSuccess ? r : async, comms[i]);
                hidet_nccl__append_error("communicator %d of %d awaited", i, n);
                if (abort_on_failure) abort_all(nccl, comms, n);
                return st;
            }
        }
        if (pending == 0) return HIDET_NCCL_SUCCESS;
        double waited = hidet_nccl__now() - start;
        if (waited > timeout_s) {
            hidet_nccl_status_t st = HN_FAIL(
                HIDET_NCCL_ERROR_TIMEOUT,
                "%s did not complete within %.1f s (%d of %d communicators still in progress)%s; the deadline "
                "is HIDET_NCCL_TIMEOUT. A peer that never arrived or died is the usual cause; NCCL_DEBUG=INFO "
                "NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET shows where it waits",
                what, timeout_s, pending, n, abort_on_failure ? ", aborted" : "");
            if (abort_on_failure) abort_all(nccl, comms, n);
            return st;
        }
        /* Spin 200 us for a collective being enqueued (a sleep costs ~50 us of timer slack), then
         * sleep, at most ~0.1 ms late: init time is what users wait for. */
        hidet_nccl__poll_pause(waited, 200e-6, &sleep_ns, 100000);
    }
}

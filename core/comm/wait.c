/* Polling non-blocking communicators until they are ready, against a deadline. */
#include "core/base/status_int.h"
#include "core/comm/wait_int.h"

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
    /* Spin 200 us for a collective being enqueued (a sleep costs ~50 us of timer slack), then
     * sleep, at most ~0.1 ms late: init time is what users wait for. */
    hn_poll_t poll;
    hidet_nccl__poll_begin(&poll, timeout_s, 200e-6, 10000, 100000, 0);
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
        if (hidet_nccl__poll_expired(&poll)) {
            hidet_nccl_status_t st = HN_FAIL(
                HIDET_NCCL_ERROR_TIMEOUT,
                "%s did not complete within %.1f s (%d of %d communicators still in progress)%s; the deadline "
                "is HIDET_NCCL_TIMEOUT. A peer that never arrived or died is the usual cause; NCCL_DEBUG=INFO "
                "NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET shows where it waits",
                what, timeout_s, pending, n, abort_on_failure ? ", aborted" : "");
            if (abort_on_failure) abort_all(nccl, comms, n);
            return st;
        }
        hidet_nccl__poll_pause(&poll);
    }
}

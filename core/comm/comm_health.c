/* Failures after init: hidet_nccl_comm_check, hidet_nccl_comm_wait, hidet_nccl_comm_abort,
 * and the per-communicator error policy they apply. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/comm/comm_destroy_int.h"
#include "core/nccl/cuda_int.h"
#include "core/base/status_int.h"
#include "core/comm/comm_health_int.h"
#include "core/comm/registry_int.h"
#include "core/trace/trace_int.h"
#include "core/comm/wait_int.h"

/* Kills the id and aborts an owned communicator; later uses say "communicator id N was
 * aborted after <event>". */
static void abort_comm(const hn_nccl_t *n, int id, const char *event) {
    ncclComm_t comm;
    int owned;
    char why[192];
    snprintf(why, sizeof why, "aborted after %s", event);
    hidet_nccl__comm_drop(id, 1); /* its registrations forgotten, its siblings aborted */
    if (hidet_nccl__registry_kill(id, why, &comm, &owned, NULL) != HIDET_NCCL_SUCCESS) return; /* gone already */
    if (owned) {
        n->CommAbort(comm);
        hidet_nccl__append_error("communicator id %d was aborted; its id is dead", id);
    } else {
        hidet_nccl__append_error("communicator id %d is borrowed: its id is dropped, the NCCL communicator is "
                                 "left to its owner", id);
    }
}

hidet_nccl_status_t hidet_nccl__comm_failed(int id, hidet_nccl_status_t st, int broken, const char *event) {
    hidet_nccl_error_policy_t policy = HIDET_NCCL_ON_ERROR_RETURN;
    if (hidet_nccl__registry_policy(id, &policy) != HIDET_NCCL_SUCCESS) return st; /* dead already */
    if (policy == HIDET_NCCL_ON_ERROR_ABORT_PROCESS) {
        hidet_nccl__trace_dump_on_failure(event);
        fprintf(stderr, "%s\nhidet_nccl: communicator id %d has the error policy HIDET_NCCL_ON_ERROR_ABORT_PROCESS: "
                        "aborting the process\n", hidet_nccl_last_error(), id);
        fflush(stderr);
        abort();
    }
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    int keep = broken && n != NULL && n->CommShrink != NULL && policy != HIDET_NCCL_ON_ERROR_ABORT_COMM;
    if (keep && hidet_nccl__registry_fail(id, event) == HIDET_NCCL_SUCCESS) /* for the survivors' shrink */
        hidet_nccl__append_error("communicator id %d is failed: it takes no more collectives; shrink it "
                                 "(hidet_nccl_comm_shrink, HIDET_NCCL_SHRINK_ABORT) to carry on without the ranks "
                                 "that left, or destroy it", id);
    else if (!keep && n != NULL && (broken || policy == HIDET_NCCL_ON_ERROR_ABORT_COMM))
        abort_comm(n, id, event);
    hidet_nccl__trace_dump_on_failure(event); /* after: the dump shows the id failed or dead */
    return st;
}

/* "rank R of N" of a communicator, for messages: the registry's (NCCL answers -1 for a
 * communicator with an error), else NCCL's (a borrowed one). */
static void describe(const hn_nccl_t *n, int id, ncclComm_t comm, char *out, size_t size) {
    hn_slot_t slot;
    int rank = -1, count = -1;
    if (hidet_nccl__registry_get(id, 1, &slot) == HIDET_NCCL_SUCCESS) {
        rank = slot.rank >= 0 ? slot.rank : slot.asked_rank;
        count = slot.nranks > 0 ? slot.nranks : slot.asked_nranks;
    }
    if (count <= 0 || rank < 0) {
        n->CommUserRank(comm, &rank);
        n->CommCount(comm, &count);
    }
    snprintf(out, size, "rank %d of %d", rank, count);
}

/* ncclCommGetAsyncError as a status: ncclInProgress (work still being enqueued on a
 * non-blocking communicator) is healthy. */
static hidet_nccl_status_t async_error(const hn_nccl_t *n, int id, ncclComm_t comm, const char *what) {
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = n->CommGetAsyncError(comm, &async);
    if (r == ncclSuccess && (async == ncclSuccess || async == ncclInProgress)) return HIDET_NCCL_SUCCESS;
    char who[64], call[192];
    describe(n, id, comm, who, sizeof who);
    snprintf(call, sizeof call, "%s: communicator id %d (%s) has an asynchronous error", what, id, who);
    return hidet_nccl__nccl_fail(NULL, call, r != ncclSuccess ? r : async, comm);
}

hidet_nccl_status_t hidet_nccl_comm_check(int comm_id) {
    HN_ENTER();
    ncclComm_t comm;
    HN_CHECK(hidet_nccl__registry_lookup(comm_id, &comm, NULL, NULL));
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    hidet_nccl_status_t st = async_error(n, comm_id, comm, "comm_check");
    if (st == HIDET_NCCL_SUCCESS) return st;
    return hidet_nccl__comm_failed(comm_id, st, 0, "hidet_nccl_comm_check found an NCCL error");
}

hidet_nccl_status_t hidet_nccl_comm_abort(int comm_id) {
    HN_ENTER();
    ncclComm_t comm;
    int owned;
    hn_slot_t slot;
    HN_CHECK(hidet_nccl__registry_get(comm_id, 1, &slot));
    hidet_nccl__trace_dump_on_failure("hidet_nccl_comm_abort");
    hidet_nccl__comm_drop(comm_id, 1);
    HN_CHECK(hidet_nccl__registry_kill(comm_id, "aborted by hidet_nccl_comm_abort", &comm, &owned, NULL));
    if (owned) hidet_nccl__nccl_loaded()->CommAbort(comm);
    return HIDET_NCCL_SUCCESS;
}

static _Atomic(hn_peer_news_fn) g_news;

void hidet_nccl__at_comm_wait(hn_peer_news_fn news) { atomic_store(&g_news, news); }

hidet_nccl_status_t hidet_nccl_comm_wait(int comm_id, cudaStream_t stream, double timeout_s) {
    HN_ENTER();
    HN_CHECK(hidet_nccl__deadline_seconds(timeout_s, "timeout_s", &timeout_s)); /* HIDET_NCCL_DEFAULT_TIMEOUT is 0 */
    ncclComm_t comm;
    HN_CHECK(hidet_nccl__registry_lookup(comm_id, &comm, NULL, NULL));
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    char what[96];
    snprintf(what, sizeof what, "comm_wait for the work queued on stream %p", (void *)stream);
    hn_poll_t poll; /* spin for a short collective; then at most ~1 ms late */
    hidet_nccl__poll_begin(&poll, timeout_s, 50e-6, 2000, 1000000, 0);
    hn_peer_news_fn news = atomic_load(&g_news);
    double next_news = hidet_nccl__now() + HN_PEER_NEWS_EVERY_S;
    for (;;) {
        cudaError_t q = cudaStreamQuery(stream);
        /* Checked after the query: work that finished with an error is not taken as done. */
        hidet_nccl_status_t st = async_error(n, comm_id, comm, what);
        if (st != HIDET_NCCL_SUCCESS)
            return hidet_nccl__comm_failed(comm_id, st, 1, "hidet_nccl_comm_wait found an NCCL error");
        if (q == cudaSuccess) return HIDET_NCCL_SUCCESS;
        if (q != cudaErrorNotReady) {
            st = hidet_nccl__cuda_fail(__func__, "cudaStreamQuery", q);
            hidet_nccl__append_error("awaiting communicator id %d", comm_id);
            return hidet_nccl__comm_failed(comm_id, st, 0, "its stream failed in hidet_nccl_comm_wait");
        }
        char heard[512];
        if (news != NULL && hidet_nccl__now() >= next_news) { /* a survivor whose NCCL saw nothing hears it here */
            next_news = hidet_nccl__now() + HN_PEER_NEWS_EVERY_S;
            if (news(comm_id, heard, sizeof heard)) {
                st = HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP,
                             "the work queued on stream %p cannot finish: communicator id %d's rendezvous says %s; "
                             "recover or heal it (hidet_nccl_comm_recover, hidet_nccl_comm_heal) with the others",
                             (void *)stream, comm_id, heard);
                return hidet_nccl__comm_failed(comm_id, st, 1, "hidet_nccl_comm_wait heard a peer began recovery");
            }
        }
        if (hidet_nccl__poll_expired(&poll)) {
            char who[64];
            describe(n, comm_id, comm, who, sizeof who);
            st = HN_FAIL(HIDET_NCCL_ERROR_TIMEOUT,
                         "the work queued on stream %p was not done within %.1f s; communicator id %d (%s) reports "
                         "no error, so a peer is probably dead or stopped, or has not called the same collectives",
                         (void *)stream, timeout_s, comm_id, who);
            return hidet_nccl__comm_failed(comm_id, st, 1, "hidet_nccl_comm_wait passed its deadline");
        }
        hidet_nccl__poll_pause(&poll);
    }
}

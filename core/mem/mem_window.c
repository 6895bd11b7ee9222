/* NCCL's side of a registration: a symmetric window made or undone (collective, on a helper
 * thread against the deadline), and a whole registration undone. */
#include <stdio.h>

#include "core/comm/blocking_call_int.h"
#include "core/base/status_int.h"
#include "core/mem/mem_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/comm/registry_int.h"

/* A window (de)registration, collective, run on a helper thread against the deadline. */
typedef struct {
    const hn_nccl_t *n;
    ncclComm_t comm;
    void *ptr;
    size_t bytes;
    ncclWindow_t win;
    int deregister;
} window_job_t;

static ncclResult_t run_window(void *p) {
    window_job_t *j = p;
    if (j->deregister) return j->n->CommWindowDeregister(j->comm, j->win);
    return j->n->CommWindowRegister(j->comm, j->ptr, j->bytes, &j->win, NCCL_WIN_COLL_SYMMETRIC);
}

hidet_nccl_status_t hidet_nccl__mem_window(const hn_nccl_t *n, ncclComm_t comm, int comm_id, void *ptr, size_t bytes,
                                  ncclWindow_t *win, int deregister) {
    window_job_t job = {n, comm, ptr, bytes, deregister ? *win : NULL, deregister};
    int device;
    ncclResult_t r = n->CommCuDevice(comm, &device);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail("hidet_nccl_register", "ncclCommCuDevice", r, comm);
    double timeout;
    HN_CHECK(hidet_nccl__timeout_seconds(&timeout));
    char what[160];
    snprintf(what, sizeof what, "%s of [%p, +%zu bytes) on communicator id %d (every rank must call)",
             deregister ? "ncclCommWindowDeregister" : "ncclCommWindowRegister", ptr, bytes, comm_id);
    hidet_nccl_status_t st =
        hidet_nccl__blocking_call(&(hn_blocking_call_t){run_window, NULL}, &job, sizeof job, device, timeout, what, &r);
    if (st == HIDET_NCCL_ERROR_TIMEOUT) hidet_nccl__registry_kill_stuck(comm_id, "an NCCL window registration");
    HN_CHECK(st);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, what, r, comm);
    *win = job.win;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__mem_unregister(const hn_reg_t *r) {
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (r->buffer != NULL) {
        ncclResult_t res = n->CommDeregister(r->buffer_comm, r->buffer);
        if (res != ncclSuccess) st = hidet_nccl__nccl_fail("hidet_nccl_deregister", "ncclCommDeregister", res, NULL);
    }
    if (r->window != NULL) {
        ncclWindow_t win = r->window;
        hidet_nccl_status_t w = hidet_nccl__mem_window(n, r->window_comm, r->comm_id, r->base, r->bytes, &win, 1);
        if (st == HIDET_NCCL_SUCCESS) st = w;
    }
    return st;
}

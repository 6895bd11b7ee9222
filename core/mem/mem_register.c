/* hidet_nccl_register / hidet_nccl_deregister: NCCL's buffer registration (ncclCommRegister)
 * and symmetric windows (ncclCommWindowRegister), on the communicator itself or, for AUTO,
 * on siblings made once per communicator (one per view the tuning table takes), between which
 * collectives then choose; the own kernels' workspace for AUTO (when the table takes them)
 * and OWN. */
#include <stdint.h>
#include <stdio.h>

#include "core/comm/blocking_call_int.h"
#include "core/comm/comm_split_int.h"
#include "core/base/status_int.h"
#include "core/comm/group_int.h"
#include "core/base/log_int.h"
#include "core/mem/mem_int.h"
#include "core/mem/mem_own_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"
#include "core/comm/registry_int.h"
#include "core/comm/wait_int.h"

/* A sibling of comm_id for one view: a split with every rank in it (color: the tuning
 * table's crc, so ranks with different tables part), checked to hold every rank. */
static hidet_nccl_status_t sibling(int comm_id, int nranks, int rank, const hn_tune_t *t, int *id, ncclComm_t *comm) {
    int share = 0;
    HN_CHECK(hidet_nccl__setting_int(HN_SETTING_VIEW_SHARE, &share));
    HN_CHECK(hidet_nccl__comm_split(comm_id, (int)(t->crc & 0x7fffffff), rank, share ? 1 : HIDET_NCCL_UNSET, id));
    int size = -1;
    hidet_nccl_status_t st = hidet_nccl_comm_size(*id, &size);
    if (st == HIDET_NCCL_SUCCESS && size != nranks) {
        hidet_nccl_comm_destroy(*id);
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "the ranks of communicator id %d read different tuning tables (this rank's crc %08x; %d of "
                       "%d ranks share it): give every rank the same HIDET_NCCL_TUNE_FILE",
                       comm_id, (unsigned)t->crc, size, nranks);
    }
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__registry_lookup(*id, comm, NULL, NULL);
    return st;
}

/* The own kernels' workspace of the views being made (collective); own_only: an OWN
 * registration, which fails (on every rank alike) when the kernels cannot run here. */
static hidet_nccl_status_t own_of(int comm_id, ncclComm_t comm, int nranks, int rank, int own_only, hn_views_t *made) {
    made->own_only = own_only;
    HN_CHECK(hidet_nccl__own_make(hidet_nccl__nccl_loaded(), comm, comm_id, rank, nranks, &made->own, made->own_why,
                                  sizeof made->own_why));
    if (made->own == NULL && own_only)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED, "the library's own kernels cannot run on communicator id %d: %s",
                       comm_id, made->own_why);
    if (made->own == NULL)
        HN_INFO("communicator id %d: the tuning table names the own kernels, which cannot run here (%s): those sizes "
                "run plain",
                comm_id, made->own_why);
    return HIDET_NCCL_SUCCESS;
}

/* The views of comm_id, made at its first AUTO or OWN registration (collective): an AUTO one
 * makes the siblings of the NCCL views its table takes and, if it takes own kernels, their
 * workspace; an OWN one the workspace alone. One kind per communicator. */
static hidet_nccl_status_t views_of(int comm_id, ncclComm_t comm, int own_only, hn_views_t *out) {
    hidet_nccl__mem_lock();
    hn_views_t *v = hidet_nccl__mem_find_views(comm_id);
    if (v != NULL) *out = *v;
    hidet_nccl__mem_unlock();
    if (v != NULL && out->own_only != own_only)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "communicator id %d has %s registrations already; a communicator takes AUTO or OWN ones, not "
                       "both",
                       comm_id, out->own_only ? "OWN" : "AUTO");
    if (v != NULL) return HIDET_NCCL_SUCCESS;
    const hn_tune_t *t;
    HN_CHECK(hidet_nccl__tune_get(&t));
    int nranks, rank;
    HN_CHECK(hidet_nccl_comm_size(comm_id, &nranks));
    HN_CHECK(hidet_nccl_comm_rank(comm_id, &rank));
    hn_views_t made = {.comm_id = comm_id, .tune = t};
    for (int k = 0; k < HN_NUM_VIEWS; k++) made.ids[k] = -1;
    made.ids[HN_VIEW_PLAIN] = comm_id;
    made.comms[HN_VIEW_PLAIN] = comm;
    double start = hidet_nccl__now();
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    /* the same on every rank */
    for (int k = HN_VIEW_BUFFER; k < HN_NUM_NCCL_VIEWS && !own_only && st == HIDET_NCCL_SUCCESS; k++)
        if (hidet_nccl__tune_uses(t, (hn_view_t)k)) st = sibling(comm_id, nranks, rank, t, &made.ids[k], &made.comms[k]);
    int none = made.ids[HN_VIEW_BUFFER] < 0 && made.ids[HN_VIEW_WINDOW] < 0;
    if (st == HIDET_NCCL_SUCCESS && none && !own_only) { /* a table of plain memory and own kernels: one split, */
        int check;                       /* not kept, so that a rank with another table is told, not left waiting */
        ncclComm_t unused;
        st = sibling(comm_id, nranks, rank, t, &check, &unused);
        if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl_comm_destroy(check);
    }
    if (st == HIDET_NCCL_SUCCESS &&
        (own_only || hidet_nccl__tune_uses(t, HN_VIEW_OWN1) || hidet_nccl__tune_uses(t, HN_VIEW_OWN2)))
        st = own_of(comm_id, comm, nranks, rank, own_only, &made);
    if (st == HIDET_NCCL_SUCCESS) {
        hidet_nccl__mem_keep();
        hidet_nccl__mem_lock();
        if (hidet_nccl__mem_add_views(&made) == NULL) st = HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory");
        hidet_nccl__mem_unlock();
    }
    if (st != HIDET_NCCL_SUCCESS) {
        char saved[2048];
        snprintf(saved, sizeof saved, "%s", hidet_nccl_last_error());
        hidet_nccl__own_release(made.own, 0);
        for (int k = HN_VIEW_BUFFER; k < HN_NUM_NCCL_VIEWS; k++)
            if (made.ids[k] >= 0) hidet_nccl_comm_destroy(made.ids[k]);
        hidet_nccl__restore_error(saved);
        return st;
    }
    HN_INFO("communicator id %d: views for library memory made in %.1f ms (buffer: id %d, window: id %d; -1: the "
            "tuning table never takes it; own kernels: %s)",
            comm_id, (hidet_nccl__now() - start) * 1e3, made.ids[HN_VIEW_BUFFER], made.ids[HN_VIEW_WINDOW],
            made.own != NULL ? "mapped" : made.own_why[0] ? made.own_why : "never taken");
    *out = made;
    return HIDET_NCCL_SUCCESS;
}

/* What a registration may cover: inside library memory (windows need it), not overlapping
 * another registration of the communicator. */
static hidet_nccl_status_t check_range(int comm_id, char *p, size_t bytes, int flags) {
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    hidet_nccl__mem_lock();
    hn_alloc_t *a = hidet_nccl__mem_alloc_containing(p);
    if (a != NULL && bytes > a->bytes - (size_t)(p - a->base))
        st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "[%p, +%zu bytes) runs %zu bytes past the end of its library memory [%p, +%zu bytes)", (void *)p,
                     bytes, bytes - (a->bytes - (size_t)(p - a->base)), (void *)a->base, a->bytes);
    else if (a == NULL && flags == HIDET_NCCL_REGISTER_OWN)
        st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "%p is not memory from hidet_nccl_mem_alloc; the own kernels (flags HIDET_NCCL_REGISTER_OWN) "
                     "run on library memory only",
                     (void *)p);
    else if (a == NULL && flags != HIDET_NCCL_REGISTER_BUFFER)
        st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "%p is not memory from hidet_nccl_mem_alloc; a window (flags %s) needs it (cuMem-backed, the "
                     "same on every rank)",
                     (void *)p,
                     flags == HIDET_NCCL_REGISTER_AUTO ? "HIDET_NCCL_REGISTER_AUTO" : "HIDET_NCCL_REGISTER_WINDOW");
    else if ((flags == HIDET_NCCL_REGISTER_AUTO || flags == HIDET_NCCL_REGISTER_WINDOW) &&
             (uintptr_t)p % NCCL_WIN_REQUIRED_ALIGNMENT != 0)
        st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%p is not %d-byte aligned, as an NCCL window must be",
                     (void *)p, NCCL_WIN_REQUIRED_ALIGNMENT);
    hn_reg_t *r = st == HIDET_NCCL_SUCCESS ? hidet_nccl__mem_reg_overlapping(comm_id, p, bytes) : NULL;
    if (r != NULL)
        st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "[%p, +%zu bytes) overlaps registration %d [%p, +%zu bytes) of communicator id %d", (void *)p,
                     bytes, r->handle, (void *)r->base, r->bytes, comm_id);
    hidet_nccl__mem_unlock();
    return st;
}

hidet_nccl_status_t hidet_nccl_register(int comm_id, void *ptr, size_t bytes, int flags, int *handle) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(handle);
    *handle = -1;
    HN_CHECK_NOT_NULL(ptr);
    if (bytes == 0) return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bytes is 0");
    if (flags < HIDET_NCCL_REGISTER_AUTO || flags > HIDET_NCCL_REGISTER_OWN)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "flags %d is not HIDET_NCCL_REGISTER_AUTO (0), _BUFFER (1), _WINDOW (2) or _OWN (3)", flags);
    if (hidet_nccl__group_depth() > 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "registration inside a group: call it outside");
    ncclComm_t comm;
    HN_CHECK(hidet_nccl__registry_lookup(comm_id, &comm, NULL, NULL));
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    if (flags == HIDET_NCCL_REGISTER_AUTO || flags == HIDET_NCCL_REGISTER_BUFFER)
        HN_CHECK(hidet_nccl__needs(n, (const void *)n->CommRegister, 21900, "buffer registration", "ncclCommRegister"));
    if (flags == HIDET_NCCL_REGISTER_AUTO || flags == HIDET_NCCL_REGISTER_WINDOW)
        HN_CHECK(hidet_nccl__needs(n, (const void *)n->CommWindowRegister, 22700, "window registration",
                                   "ncclCommWindowRegister"));
    HN_CHECK(check_range(comm_id, ptr, bytes, flags));
    hn_reg_t reg = {0};
    reg.comm_id = comm_id;
    reg.base = ptr;
    reg.bytes = bytes;
    if (flags == HIDET_NCCL_REGISTER_AUTO || flags == HIDET_NCCL_REGISTER_OWN) {
        hn_views_t v;
        HN_CHECK(views_of(comm_id, comm, flags == HIDET_NCCL_REGISTER_OWN, &v));
        reg.buffer_comm = v.comms[HN_VIEW_BUFFER];
        reg.window_comm = v.comms[HN_VIEW_WINDOW];
    } else if (flags == HIDET_NCCL_REGISTER_BUFFER) {
        reg.buffer_comm = comm;
    } else {
        reg.window_comm = comm;
    }
    double start = hidet_nccl__now();
    if (reg.buffer_comm != NULL) {
        ncclResult_t r = n->CommRegister(reg.buffer_comm, ptr, bytes, &reg.buffer);
        if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclCommRegister", r, reg.buffer_comm);
    }
    if (reg.window_comm != NULL) {
        hidet_nccl_status_t st = hidet_nccl__mem_window(n, reg.window_comm, comm_id, ptr, bytes, &reg.window, 0);
        if (st != HIDET_NCCL_SUCCESS) {
            if (reg.buffer != NULL) n->CommDeregister(reg.buffer_comm, reg.buffer);
            return st;
        }
    }
    hidet_nccl__mem_keep();
    hidet_nccl__mem_lock();
    reg.handle = hidet_nccl__mem_next_handle();
    hn_reg_t *added = hidet_nccl__mem_add_reg(&reg);
    hidet_nccl__mem_unlock();
    if (added == NULL) {
        hidet_nccl__mem_unregister(&reg);
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of host memory for the table of registrations");
    }
    HN_INFO("registration %d: [%p, +%zu bytes) on communicator id %d as %s in %.2f ms", reg.handle, ptr, bytes, comm_id,
            flags == HIDET_NCCL_REGISTER_AUTO     ? "the views its table takes"
            : flags == HIDET_NCCL_REGISTER_BUFFER ? "buffer"
            : flags == HIDET_NCCL_REGISTER_WINDOW ? "window"
                                                  : "library memory of the own kernels",
            (hidet_nccl__now() - start) * 1e3);
    *handle = reg.handle;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_deregister(int comm_id, int handle) {
    HN_ENTER();
    hidet_nccl__mem_lock();
    hn_reg_t *r = hidet_nccl__mem_find_reg(handle);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (r == NULL)
        st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "handle %d is not a registration (deregistered already, never made, or its communicator was "
                     "destroyed)",
                     handle);
    else if (r->comm_id != comm_id)
        st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "registration %d belongs to communicator id %d, not id %d",
                     handle, r->comm_id, comm_id);
    else
        st = hidet_nccl__mem_idle(r->used, r->last_stream, "the registered memory");
    if (st != HIDET_NCCL_SUCCESS) {
        hidet_nccl__mem_unlock();
        return st;
    }
    hn_reg_t gone = *r;
    hidet_nccl__mem_remove_reg(r);
    hidet_nccl__mem_unlock();
    return hidet_nccl__mem_unregister(&gone);
}

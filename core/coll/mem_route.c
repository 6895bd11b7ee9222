/* What a collective asks of library memory (core/mem/mem_state.c's tables): is its buffer inside
 * what it starts in, and which of the communicator's views runs it (for the own kernels' views,
 * core/coll/own_all_reduce.c then sees whether they can). */
#include <stdint.h>

#include "core/coll/custom_op_int.h"
#include "core/base/status_int.h"
#include "core/coll/mem_route_int.h"
#include "core/coll/own_all_reduce_int.h"

/* A buffer [p, p + bytes) against what it starts in: an allocation, and a registration of
 * the communicator (registrations of one communicator never overlap); both remember the
 * stream. Under the tables' lock. */
static hidet_nccl_status_t check_buffer(const hn_coll_t *c, const char *p, size_t bytes, const char *name) {
    if (p == NULL) return HIDET_NCCL_SUCCESS;
    hn_reg_t *r = hidet_nccl__mem_reg_overlapping(c->id, p, 1);
    if (r != NULL) {
        if (bytes > r->bytes - (size_t)(p - r->base))
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                           "%s %s [%p, +%zu bytes) starts inside registration %d [%p, +%zu bytes) of communicator "
                           "id %d and ends %zu bytes past it; a collective's buffer lies inside one registration",
                           c->name, name, (const void *)p, bytes, r->handle, (void *)r->base, r->bytes, c->id,
                           bytes - (r->bytes - (size_t)(p - r->base)));
        if (!c->dry) {
            r->last_stream = c->stream;
            r->used = 1;
        }
    }
    hn_alloc_t *a = hidet_nccl__mem_alloc_containing(p);
    if (a != NULL) {
        if (bytes > a->bytes - (size_t)(p - a->base))
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                           "%s %s [%p, +%zu bytes) starts inside library memory [%p, +%zu bytes) and ends %zu bytes "
                           "past it",
                           c->name, name, (const void *)p, bytes, (void *)a->base, a->bytes,
                           bytes - (a->bytes - (size_t)(p - a->base)));
        if (!c->dry) {
            a->last_stream = c->stream;
            a->used = 1;
        }
    }
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__mem_route_slow(hn_coll_t *c, int coll, hidet_nccl_dtype_t dtype, size_t bytes,
                                               const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
    hidet_nccl__mem_lock();
    hidet_nccl_status_t st = check_buffer(c, a, a_bytes, "sendbuff");
    if (st == HIDET_NCCL_SUCCESS && b != a) st = check_buffer(c, b, b_bytes, "recvbuff");
    if (coll >= 0 && c->op >= 0 && hidet_nccl__is_custom_op((hidet_nccl_op_t)c->op))
        coll = -1; /* a scaled sum belongs to its communicator */
    hn_views_t *v = st == HIDET_NCCL_SUCCESS && coll >= 0 ? hidet_nccl__mem_find_views(c->id) : NULL;
    if (v != NULL) {
        hn_view_t view = v->own_only ? hidet_nccl__own_view(v->own, bytes)
                                     : hidet_nccl__tune_pick(v->tune, (hn_tuned_t)coll, dtype, bytes);
        if (hidet_nccl__view_is_own(view)) { /* all_reduce only: the table's parser sees to it */
            c->view = view;
            c->own = v->own;
            c->own_why = v->own_why;
        } else if (v->comms[view] != NULL) { /* NULL: a view the table never takes, so never made */
            c->view = view;
            c->comm = v->comms[view];
        }
    }
    hidet_nccl__mem_unlock();
    return st;
}

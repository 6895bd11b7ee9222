/* Internal: a collective on library memory (core/coll/mem_route.c). */
#ifndef HIDET_NCCL_CORE_COLL_MEM_ROUTE_INT_H_
#define HIDET_NCCL_CORE_COLL_MEM_ROUTE_INT_H_

#include <stdatomic.h>
#include <stddef.h>

#include "core/coll/collective_int.h"
#include "core/mem/mem_int.h"

/* Slow path of hidet_nccl__mem_route. */
hidet_nccl_status_t hidet_nccl__mem_route_slow(hn_coll_t *c, int coll, hidet_nccl_dtype_t dtype, size_t bytes,
                                               const void *a, size_t a_bytes, const void *b, size_t b_bytes);

/* Before a collective's NCCL call, when library memory exists: a buffer (a, b; NULL: none)
 * that starts inside an allocation or a registration of the communicator must end inside it
 * (else an error naming both), and they remember the stream; with AUTO registrations on the
 * communicator, c->comm becomes the view the tuning table picks for coll (an hn_tuned_t;
 * -1: none), dtype and bytes, and c->view names it; when that is an own kernel's view (or the
 * communicator has an OWN registration), c->comm stays and c->own, c->own_why are set for
 * core/coll/own_all_reduce.c; a scaled sum (c->op from hidet_nccl_op_premul_sum) stays on its
 * communicator. With c->dry (the route alone) nothing is recorded. */
static inline hidet_nccl_status_t hidet_nccl__mem_route(hn_coll_t *c, int coll, hidet_nccl_dtype_t dtype, size_t bytes,
                                                        const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
    if (atomic_load_explicit(&hidet_nccl__mem_live, memory_order_relaxed) == 0) return HIDET_NCCL_SUCCESS;
    return hidet_nccl__mem_route_slow(c, coll, dtype, bytes, a, a_bytes, b, b_bytes);
}

#endif

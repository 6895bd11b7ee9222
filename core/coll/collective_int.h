/* Internal: what every collective shares (core/coll/collective.c): the communicator and its
 * ranks, the dtype plans for data movement and for reductions, the rank and buffer checks,
 * and what follows the NCCL call. One file per collective builds on it. */
#ifndef HIDET_NCCL_CORE_COLL_COLLECTIVE_INT_H_
#define HIDET_NCCL_CORE_COLL_COLLECTIVE_INT_H_

#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/status_int.h"
#include "core/comm/group_int.h"
#include "core/comm/registry_int.h"
#include "core/nccl/dtype_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/trace/trace_int.h"
#include "core/trace/trace_record_int.h"
#include "hidet_nccl/hidet_nccl.h"

/* One call's communicator. nranks is known after begin for an owned communicator (else -1),
 * rank is -1, until hidet_nccl__coll_ranks. */
typedef struct {
    int id;
    ncclComm_t comm;
    const hn_nccl_t *n;
    const char *name; /* "broadcast", for messages and the flight recorder */
    int nranks, rank;
    int asked_nranks, asked_rank; /* a borrowed one's, once NCCL was asked (coll_ranks); else 0, -1 */
    cudaStream_t stream;
    int op;             /* the reduction's hidet_nccl_op_t (set by reduce_plan), or -1 */
    int in_group;       /* inside hidet_nccl_group_start .. end: read before NCCL's call (coll_end's) */
    hn_trace_t *trace;  /* the communicator's flight recorder, or NULL */
    /* Set by the route on library memory (core/coll/mem_route.c): the view that runs the call
     * (an hn_view_t; 0, plain, unless routed); when it names the own kernels, their workspace
     * (NULL: they cannot run here, own_why says why; core/coll/own_all_reduce.c decides). */
    int view;
    int dry; /* only asking how it would run (hidet_nccl_all_reduce_route): nothing recorded */
    int grouped_p2p; /* HIDET_NCCL_GROUPED_P2P as the thread's copy read it: 0, 1, -1 invalid */
    struct hn_own *own;
    const char *own_why;
} hn_coll_t;

/* The communicator of a live id that has not failed (nothing else is asked of NCCL yet): the
 * thread's copy of it (comm/registry_int.h), inlined into every collective. The NCCL table is
 * the loaded one's (a registered communicator implies it): its address is fixed, so a call's
 * function pointer is loaded beside the copy, not after it; and the group depth is read here,
 * while the thread's first line is in the cache (NCCL's launch pushes it out before coll_end). */
static inline hidet_nccl_status_t hidet_nccl__coll_begin(int comm_id, const char *name, cudaStream_t stream,
                                                         hn_coll_t *c) {
    const hn_thread_slot_t *h;
    hidet_nccl_status_t st = hidet_nccl__registry_coll(comm_id, &h);
    if (__builtin_expect(st != HIDET_NCCL_SUCCESS, 0)) return st;
    int known = h->nranks > 0 && h->rank >= 0; /* an owned communicator's: NCCL is not asked per call */
    *c = (hn_coll_t){.id = comm_id,
                     .comm = (ncclComm_t)h->comm,
                     .n = &hidet_nccl__nccl_table,
                     .name = name,
                     .nranks = known ? h->nranks : -1,
                     .rank = known ? h->rank : -1,
                     .asked_nranks = h->asked_nranks,
                     .asked_rank = h->asked_rank,
                     .stream = stream,
                     .op = -1,
                     .in_group = hidet_nccl__group_depth() > 0,
                     .trace = (hn_trace_t *)h->trace,
                     .view = 0,
                     .dry = 0,
                     .grouped_p2p = h->grouped_p2p,
                     .own = NULL,
                     .own_why = NULL};
    return HIDET_NCCL_SUCCESS;
}
/* Its number of ranks and this rank, when begin did not know them: a borrowed one's from NCCL
 * (then kept in the registry). */
hidet_nccl_status_t hidet_nccl__coll_ask_ranks(const hn_nccl_t *n, ncclComm_t comm, int id, const char *name,
                                              int *nranks, int *rank);
/* Its number of ranks and this rank: an owned communicator's from the registry (set by
 * coll_begin), a borrowed one's from NCCL once, then as asked. */
static inline hidet_nccl_status_t hidet_nccl__coll_ranks(hn_coll_t *c) {
    if (__builtin_expect(c->nranks > 0 && c->rank >= 0, 1)) return HIDET_NCCL_SUCCESS; /* from the registry */
    if (c->asked_nranks > 0 && c->asked_rank >= 0) { /* a borrowed one's, asked at an earlier call */
        c->nranks = c->asked_nranks;
        c->rank = c->asked_rank;
        return HIDET_NCCL_SUCCESS;
    }
    /* the record's fields, not its address, go out of line: it can stay in registers */
    int nranks = c->nranks, rank = c->rank;
    hidet_nccl_status_t st = hidet_nccl__coll_ask_ranks(c->n, c->comm, c->id, c->name, &nranks, &rank);
    c->nranks = nranks;
    c->rank = rank;
    return st;
}

/* The refusal of count * blocks elements of elem_bytes each that overflow size_t bytes, naming
 * `what` ("sendcount"). */
hidet_nccl_status_t hidet_nccl__plan_overflow(const char *name, hidet_nccl_dtype_t dtype, size_t count,
                                              size_t blocks, size_t elem_bytes, const char *what);
/* count * blocks elements of elem_bytes each, and count * mult NCCL elements, fit size_t: then
 * *nccl_count = count * mult and *bytes = count * elem_bytes; else plan_overflow's refusal. */
static inline hidet_nccl_status_t hidet_nccl__plan_sizes(const hn_coll_t *c, hidet_nccl_dtype_t dtype, size_t count,
                                                         size_t blocks, size_t mult, size_t elem_bytes,
                                                         const char *what, size_t *nccl_count, size_t *bytes) {
    size_t product;
    if (blocks == 0) blocks = 1;
    if (__builtin_expect(__builtin_mul_overflow(count, elem_bytes, &product) ||
                             __builtin_mul_overflow(product, blocks, &product), 0))
        return hidet_nccl__plan_overflow(c->name, dtype, count, blocks, elem_bytes, what);
    *nccl_count = count * mult;
    *bytes = count * elem_bytes;
    return HIDET_NCCL_SUCCESS;
}
/* How `count * blocks` elements of dtype move byte for byte: an NCCL type of the same width
 * (two 8-byte words for complex128), *nccl_count of it per `count`, *bytes per `count`. An
 * overflow of size_t is an error naming `what` ("sendcount"). Inlined: one line of table. */
static inline hidet_nccl_status_t hidet_nccl__move_plan(const hn_coll_t *c, hidet_nccl_dtype_t dtype, size_t count,
                                                        size_t blocks, const char *what, ncclDataType_t *type,
                                                        size_t *nccl_count, size_t *bytes) {
    if (__builtin_expect((unsigned)dtype >= HIDET_NCCL_NUM_DTYPES, 0)) {
        size_t mult;
        *nccl_count = *bytes = 0; /* unused: a refusal */
        return hidet_nccl__movement(dtype, type, &mult); /* its refusal */
    }
    hn_move_t m = hidet_nccl__moves[dtype];
    *type = (ncclDataType_t)m.type;
    return hidet_nccl__plan_sizes(c, dtype, count, blocks, m.mult, m.bytes, what, nccl_count, bytes);
}
/* How `count * blocks` elements of dtype reduce with op (a hidet_nccl_op_t, or an op of
 * hidet_nccl_op_premul_sum for this communicator and dtype): the reduction, *nccl_count per
 * `count`, *bytes per `count`. Refusals as all_reduce's, naming the collective. */
hidet_nccl_status_t hidet_nccl__reduce_plan(hn_coll_t *c, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                            size_t count, size_t blocks, hidet_nccl_reduction_t *red,
                                            size_t *nccl_count, size_t *bytes);

/* The refusals of the checks below, out of the hot path. They (and plan_overflow, ask_ranks,
 * unfinished) take the fields they use, not the record's address: a record whose address leaves
 * the collective has to live in memory (broadcast's frame was 232 bytes, now 120). */
hidet_nccl_status_t hidet_nccl__coll_rank_refused(const char *name, int id, int nranks, int r, const char *what);
hidet_nccl_status_t hidet_nccl__coll_buffer_refused(const char *name, const char *what, size_t count);
hidet_nccl_status_t hidet_nccl__coll_alias_refused(const char *name, const void *a, size_t a_bytes,
                                                   const char *a_name, const void *b, size_t b_bytes,
                                                   const char *b_name, const char *rule);
/* r is a rank of the communicator (needs coll_ranks); else an error naming what ("root"). */
static inline hidet_nccl_status_t hidet_nccl__coll_rank_arg(const hn_coll_t *c, int r, const char *what) {
    if (__builtin_expect(r < 0 || r >= c->nranks, 0))
        return hidet_nccl__coll_rank_refused(c->name, c->id, c->nranks, r, what);
    return HIDET_NCCL_SUCCESS;
}
/* ptr is not NULL; else an error naming it and the count. */
static inline hidet_nccl_status_t hidet_nccl__coll_buffer(const hn_coll_t *c, const void *ptr, const char *what,
                                                          size_t count) {
    if (__builtin_expect(ptr == NULL, 0)) return hidet_nccl__coll_buffer_refused(c->name, what, count);
    return HIDET_NCCL_SUCCESS;
}
/* [a, a + a_bytes) and [b, b + b_bytes) are disjoint, or a is exactly at in_place (NULL:
 * no in-place form); else an error naming the rule. */
static inline hidet_nccl_status_t hidet_nccl__coll_alias(const hn_coll_t *c, const void *a, size_t a_bytes,
                                                         const char *a_name, const void *b, size_t b_bytes,
                                                         const char *b_name, const void *in_place,
                                                         const char *rule) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    int disjoint = x + a_bytes <= y || y + b_bytes <= x;
    if (__builtin_expect(disjoint || (in_place != NULL && a == in_place), 1)) return HIDET_NCCL_SUCCESS;
    return hidet_nccl__coll_alias_refused(c->name, a, a_bytes, a_name, b, b_bytes, b_name, rule);
}

/* A reduction on a communicator of one rank (needs its nranks; *done 0 otherwise): with a
 * built-in op a copy (every op of one value is that value; NCCL refuses some on one rank, e.g.
 * an fp8 avg), with a scaled sum the NCCL all_reduce in two parts (NCCL 2.28.9 leaves the
 * last elements of some counts unwritten on one rank). *done 1: the result is the return.
 * The check inline, the one-rank work out of line (collective.c). */
hidet_nccl_status_t hidet_nccl__one_rank_reduce_run(const hn_coll_t *c, hidet_nccl_op_t op,
                                                    const hidet_nccl_reduction_t *red, const void *send, void *recv,
                                                    size_t count, hidet_nccl_dtype_t dtype, size_t nccl_count,
                                                    cudaStream_t stream);
static inline hidet_nccl_status_t hidet_nccl__one_rank_reduce(const hn_coll_t *c, hidet_nccl_op_t op,
                                                              const hidet_nccl_reduction_t *red, const void *send,
                                                              void *recv, size_t count, hidet_nccl_dtype_t dtype,
                                                              size_t nccl_count, cudaStream_t stream, int *done) {
    *done = c->nranks == 1;
    if (__builtin_expect(!*done, 1)) return HIDET_NCCL_SUCCESS;
    return hidet_nccl__one_rank_reduce_run(c, op, red, send, recv, count, dtype, nccl_count, stream);
}

/* What follows an NCCL call that did not return ncclSuccess: the error policy, or (a
 * non-blocking communicator still enqueuing) the wait. Out of the hot path: its messages'
 * buffers and formatting stay off the lines a successful call runs through. */
hidet_nccl_status_t hidet_nccl__coll_unfinished(const hn_nccl_t *n, ncclComm_t comm, int id, const char *name,
                                                ncclResult_t r, const char *nccl_call,
                                                size_t count, hidet_nccl_dtype_t dtype, const char *who, int rank,
                                                int in_group);
/* After the NCCL call nccl_call ("ncclBroadcast") returned r: the flight recorder records it
 * (count, dtype, c's op and stream, who's rank: -1 when who is NULL); inside a group, the
 * communicator is tracked for group_end; ncclInProgress (a non-blocking communicator) is
 * awaited; a failure applies the communicator's error policy. The message names the call,
 * count, dtype and (who not NULL) the root or peer; it is made only when needed. */
HN_INLINE hidet_nccl_status_t hidet_nccl__coll_end(const hn_coll_t *c, ncclResult_t r, const char *nccl_call,
                                          size_t count, hidet_nccl_dtype_t dtype, const char *who, int rank) {
    int in_group = c->in_group;
    if (c->trace != NULL)
        hidet_nccl__trace_record(c->trace, c->name, count, dtype, c->op, who != NULL ? rank : -1, c->stream, r,
                                 in_group);
    if (__builtin_expect(r != ncclSuccess, 0))
        return hidet_nccl__coll_unfinished(c->n, c->comm, c->id, c->name, r, nccl_call, count, dtype, who, rank,
                                           in_group);
    return in_group ? hidet_nccl__group_track(c->comm) : HIDET_NCCL_SUCCESS;
}

/* HIDET_NCCL_GROUPED_P2P's refusal of its invalid value, as the setting says it. */
hidet_nccl_status_t hidet_nccl__grouped_p2p_invalid(void);
/* *grouped 1 when all_to_all, gather and scatter go through grouped send/recv: the loaded
 * NCCL lacks the native call (native NULL), or HIDET_NCCL_GROUPED_P2P=1. */
static inline hidet_nccl_status_t hidet_nccl__grouped_p2p(const hn_coll_t *c, const void *native, int *grouped) {
    *grouped = native == NULL || c->grouped_p2p > 0;
    if (__builtin_expect(c->grouped_p2p < 0, 0)) return hidet_nccl__grouped_p2p_invalid();
    return HIDET_NCCL_SUCCESS;
}

#endif

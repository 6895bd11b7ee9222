/* Internal: what every collective shares (core/coll/collective.c): the communicator and its
 * ranks, the dtype plans for data movement and for reductions, the rank and buffer checks,
 * and what follows the NCCL call. One file per collective builds on it. */
#ifndef HIDET_NCCL_CORE_COLL_COLLECTIVE_INT_H_
#define HIDET_NCCL_CORE_COLL_COLLECTIVE_INT_H_

#include <nccl.h>
#include <stddef.h>

#include "core/nccl/nccl_loader_int.h"
#include "core/trace/trace_int.h"
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
    hn_trace_t *trace;  /* the communicator's flight recorder, or NULL */
    /* Set by the route on library memory (core/coll/mem_route.c): the view that runs the call
     * (an hn_view_t; 0, plain, unless routed); when it names the own kernels, their workspace
     * (NULL: they cannot run here, own_why says why; core/coll/own_all_reduce.c decides). */
    int view;
    int dry; /* only asking how it would run (hidet_nccl_all_reduce_route): nothing recorded */
    struct hn_own *own;
    const char *own_why;
} hn_coll_t;

/* The communicator of a live id that has not failed (nothing else is asked of NCCL yet). */
hidet_nccl_status_t hidet_nccl__coll_begin(int comm_id, const char *name, cudaStream_t stream, hn_coll_t *c);
/* Its number of ranks and this rank: an owned communicator's from the registry (set by
 * coll_begin), a borrowed one's from NCCL. */
hidet_nccl_status_t hidet_nccl__coll_ranks(hn_coll_t *c);

/* How `count * blocks` elements of dtype move byte for byte: an NCCL type of the same width
 * (two 8-byte words for complex128), *nccl_count of it per `count`, *bytes per `count`. An
 * overflow of size_t is an error naming `what` ("sendcount"). */
hidet_nccl_status_t hidet_nccl__move_plan(const hn_coll_t *c, hidet_nccl_dtype_t dtype, size_t count, size_t blocks,
                                          const char *what, ncclDataType_t *type, size_t *nccl_count, size_t *bytes);
/* How `count * blocks` elements of dtype reduce with op (a hidet_nccl_op_t, or an op of
 * hidet_nccl_op_premul_sum for this communicator and dtype): the reduction, *nccl_count per
 * `count`, *bytes per `count`. Refusals as all_reduce's, naming the collective. */
hidet_nccl_status_t hidet_nccl__reduce_plan(hn_coll_t *c, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                            size_t count, size_t blocks, hidet_nccl_reduction_t *red,
                                            size_t *nccl_count, size_t *bytes);

/* r is a rank of the communicator (needs coll_ranks); else an error naming what ("root"). */
hidet_nccl_status_t hidet_nccl__coll_rank_arg(const hn_coll_t *c, int r, const char *what);
/* ptr is not NULL; else an error naming it and the count. */
hidet_nccl_status_t hidet_nccl__coll_buffer(const hn_coll_t *c, const void *ptr, const char *what, size_t count);
/* [a, a + a_bytes) and [b, b + b_bytes) are disjoint, or a is exactly at in_place (NULL:
 * no in-place form); else an error naming the rule. */
hidet_nccl_status_t hidet_nccl__coll_alias(const hn_coll_t *c, const void *a, size_t a_bytes, const char *a_name,
                                           const void *b, size_t b_bytes, const char *b_name, const void *in_place,
                                           const char *rule);

/* A reduction on a communicator of one rank (needs its nranks; *done 0 otherwise): with a
 * built-in op a copy (every op of one value is that value; NCCL refuses some on one rank, e.g.
 * an fp8 avg), with a scaled sum the NCCL all_reduce in two parts (NCCL 2.28.9 leaves the
 * last elements of some counts unwritten on one rank). *done 1: the result is the return. */
hidet_nccl_status_t hidet_nccl__one_rank_reduce(const hn_coll_t *c, hidet_nccl_op_t op, const hidet_nccl_reduction_t *red,
                                                const void *send, void *recv, size_t count, hidet_nccl_dtype_t dtype,
                                                size_t nccl_count, cudaStream_t stream, int *done);

/* After the NCCL call nccl_call ("ncclBroadcast") returned r: the flight recorder records it
 * (count, dtype, c's op and stream, who's rank: -1 when who is NULL); inside a group, the
 * communicator is tracked for group_end; ncclInProgress (a non-blocking communicator) is
 * awaited; a failure applies the communicator's error policy. The message names the call,
 * count, dtype and (who not NULL) the root or peer; it is made only when needed. */
hidet_nccl_status_t hidet_nccl__coll_end(const hn_coll_t *c, ncclResult_t r, const char *nccl_call, size_t count,
                                         hidet_nccl_dtype_t dtype, const char *who, int rank);

/* *grouped 1 when all_to_all, gather and scatter go through grouped send/recv: the loaded
 * NCCL lacks the native call (native NULL), or HIDET_NCCL_GROUPED_P2P=1. */
hidet_nccl_status_t hidet_nccl__grouped_p2p(const void *native, int *grouped);

#endif

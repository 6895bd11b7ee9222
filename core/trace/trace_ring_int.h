/* Internal: the ring's layout, shared by the recorder (core/trace/trace_ring.c, and the entry each
 * collective writes: core/trace/trace_record_int.h) and the dump
 * (core/trace/trace_dump.c). */
#ifndef HIDET_NCCL_CORE_TRACE_TRACE_RING_INT_H_
#define HIDET_NCCL_CORE_TRACE_TRACE_RING_INT_H_

#include <stdatomic.h>
#include <stdint.h>

#include "core/trace/trace_int.h"

#define HN_TRACE_TAG_BYTES 48

/* What is known of an entry's completion. */
typedef enum {
    HN_TRACE_UNTRACKED, /* completion tracking off, or the enqueue failed */
    HN_TRACE_EVENT,     /* its event was recorded after it: query it */
    HN_TRACE_IN_GROUP,  /* inside a group: NCCL launches it at group end, no event */
    HN_TRACE_CAPTURED,  /* recorded at capture into a CUDA graph: replays are not recorded */
} hn_trace_completion_t;

/* One entry: what a call writes lies in its first 64 bytes (one cache line: the ring is cold
 * by the next call, after NCCL's own work), the tag's first bytes among them; the rest of the
 * tag is written only when the thread has one. */
typedef struct {
    _Alignas(64) _Atomic uint64_t stamp; /* seq + 1 once written; 0 while being written (or never) */
    uint64_t t_ns;          /* CLOCK_MONOTONIC at enqueue */
    const char *coll;       /* static name */
    size_t count;
    int16_t dtype, op;      /* op: a hidet_nccl_op_t, or -1 */
    int peer;               /* root or peer, or -1 */
    int result;             /* what NCCL returned (ncclResult_t) */
    int completion;         /* hn_trace_completion_t */
    cudaStream_t stream;
    char tag[HN_TRACE_TAG_BYTES]; /* from byte 56: "" (one byte written) when the thread has none */
} hn_trace_entry_t;

struct hn_trace {
    _Atomic uint64_t next; /* the next sequence number */
    uint32_t entries; /* a power of two */
    uint32_t key;
    uint32_t from_key; /* the communicator it was made from, when how is set */
    const char *how;   /* a static word ("recover"), or NULL */
    int rank, nranks;
    cudaEvent_t *events; /* one per entry, or NULL */
    hn_trace_entry_t e[];
};

/* The rare parts of an entry (core/trace/trace_record_int.h writes the rest): the calling thread's
 * tag copied in; completion tracking (HIDET_NCCL_TRACE_COMPLETION=1): in a group, captured, or an
 * event recorded on stream. */
void hidet_nccl__trace_copy_tag(hn_trace_entry_t *e);
void hidet_nccl__trace_complete(hn_trace_t *t, uint32_t slot, hn_trace_entry_t *e, cudaStream_t stream,
                                int in_group);

#endif

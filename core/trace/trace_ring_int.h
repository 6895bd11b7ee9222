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
    uint64_t t;             /* at enqueue, on the ring's clock (hidet_nccl__trace_stamp) */
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
    /* The entries' clock: 1, the CPU's time-stamp counter (x86-64 with an invariant one: an
     * instruction, where the coarse clock is a call through the PLT, libc and the vDSO that
     * touches four pages' lines, cold after NCCL's launch); 0, CLOCK_MONOTONIC_COARSE in ns.
     * With the counter, tick0 and ns0 were read together at the ring's making; a dump reads
     * both again and converts between them (hidet_nccl__trace_mono_ns). */
    int tsc;
    uint64_t tick0, ns0;
    uint32_t key;
    uint32_t from_key; /* the communicator it was made from, when how is set */
    const char *how;   /* a static word ("recover"), or NULL */
    int rank, nranks;
    cudaEvent_t *events; /* one per entry, or NULL */
    hn_trace_entry_t e[];
};

/* An entry's t as CLOCK_MONOTONIC nanoseconds (the dump's). */
uint64_t hidet_nccl__trace_mono_ns(const hn_trace_t *t, uint64_t stamp);

/* The rare parts of an entry (core/trace/trace_record_int.h writes the rest): the calling thread's
 * tag copied in; completion tracking (HIDET_NCCL_TRACE_COMPLETION=1): in a group, captured, or an
 * event recorded on stream. */
void hidet_nccl__trace_copy_tag(hn_trace_entry_t *e);
void hidet_nccl__trace_complete(hn_trace_t *t, uint32_t slot, hn_trace_entry_t *e, cudaStream_t stream,
                                int in_group);

#endif

/* Internal: the flight recorder's entry for one operation, inlined into each collective (a back-
 * to-back NCCL call leaves little of the library in the caches: the recorder's code sits in the
 * collective's own lines; docs/benchmarks.md). What is rare stays in core/trace/trace_ring.c: the
 * thread's tag copied (only a thread that has one), completion tracking (only with
 * HIDET_NCCL_TRACE_COMPLETION=1). */
#ifndef HIDET_NCCL_CORE_TRACE_TRACE_RECORD_INT_H_
#define HIDET_NCCL_CORE_TRACE_TRACE_RECORD_INT_H_

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "core/base/thread_int.h"
#include "core/trace/trace_ring_int.h"

/* One operation handed to NCCL (or done by the library for one rank): coll is a static name
 * ("all_reduce"), op a hidet_nccl_op_t or -1 (data movement), peer the root or peer or -1,
 * result what NCCL returned, in_group 1 inside a group (NCCL launches it at group end). No
 * allocation, no lock: a communicator's calls are the caller's to serialize (NCCL's rule), so a
 * load and a store take the sequence number; calls that break the rule may share an entry, and
 * the stamp keeps a dump from reading one half written as whole. */
static inline void hidet_nccl__trace_record(hn_trace_t *t, const char *coll, size_t count, hidet_nccl_dtype_t dtype,
                                            int op, int peer, cudaStream_t stream, int result, int in_group) {
    uint64_t seq = atomic_load_explicit(&t->next, memory_order_relaxed);
    atomic_store_explicit(&t->next, seq + 1, memory_order_relaxed);
    uint32_t slot = (uint32_t)seq & (t->entries - 1); /* a power of two (trace_new): no division */
    hn_trace_entry_t *e = &t->e[slot];
    atomic_store_explicit(&e->stamp, 0, memory_order_relaxed); /* being written */
    atomic_thread_fence(memory_order_release);
    struct timespec ts; /* the coarse clock: to the kernel's tick (1-4 ms), and a few ns instead of 16-33 */
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    e->t_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    e->coll = coll;
    e->count = count;
    e->dtype = (int16_t)dtype;
    e->op = (int16_t)op;
    e->peer = peer;
    e->result = result;
    e->stream = stream;
    if (__builtin_expect(hidet_nccl__thread.tagged, 0)) hidet_nccl__trace_copy_tag(e);
    else e->tag[0] = '\0';
    e->completion = HN_TRACE_UNTRACKED;
    if (__builtin_expect(t->events != NULL, 0) && result == 0) hidet_nccl__trace_complete(t, slot, e, stream, in_group);
    atomic_store_explicit(&e->stamp, seq + 1, memory_order_release);
    /* The next call's entry, asked for now (for writing): a slot was last written a ring ago, so by
     * then NCCL's and the driver's work has pushed it out of the caches, and a store to a line not
     * held waits for it at NCCL's first locked instruction (docs/benchmarks.md). */
    __builtin_prefetch(&t->e[(slot + 1) & (t->entries - 1)], 1, 3);
}

#endif

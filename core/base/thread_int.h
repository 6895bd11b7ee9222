/* Internal: what a collective's host path reads of the calling thread, in one block
 * (core/base/thread.c), and the word that says when a thread's copies are stale.
 *
 * A back-to-back NCCL call leaves little of the library in the caches and TLBs (measured on one
 * H200 host: each line and page a call touches shows in its time; docs/benchmarks.md), so what
 * every call reads of its thread sits together, in two lines: the public call under way
 * (status.c), the group's depth and bookkeeping (comm/group.c), whether the thread has a
 * recorder tag (trace/trace_ring.c), and the registry's copy of the communicator the call names
 * (comm/registry.c). Each layer owns its fields; this header only gathers them. */
#ifndef HIDET_NCCL_CORE_BASE_THREAD_INT_H_
#define HIDET_NCCL_CORE_BASE_THREAD_INT_H_

#include <stdatomic.h>
#include <stddef.h>

/* A communicator id as a collective sees it, copied by the registry (comm/registry.c) at
 * generation `generation` (0: empty). Handles are untyped here: base knows no NCCL. */
typedef struct {
    _Alignas(64) unsigned long generation; /* a line each: a call reads the header's and one slot's */
    int id;
    int nranks, rank;             /* an owned one's; 0 and -1 for a borrowed one */
    int asked_nranks, asked_rank; /* a borrowed one's once NCCL was asked; else 0 and -1 */
    int grouped_p2p;              /* HIDET_NCCL_GROUPED_P2P: 0 or 1, -1 when its value is invalid */
    void *comm;  /* ncclComm_t */
    void *trace; /* hn_trace_t *, or NULL */
} hn_thread_slot_t;

#define HN_THREAD_SLOTS 4 /* ids a thread alternates between without going back to the registry */

typedef struct {
    /* status.c: the public call under way */
    _Alignas(64) const char *public_func;
    size_t prefix_len; /* of "hidet_nccl: <function>: " in the message */
    int depth;         /* public calls under way in this thread */
    int fresh;         /* the message is this thread's last failure (else it reads "") */
    /* trace/trace_ring.c: the thread's tag is not "" */
    int tagged;
    /* comm/group.c: hidet_nccl_group_start calls not yet ended, the communicators used in the
     * group (the first here, checked inline by every call in a group; with a second, all of
     * them in group_tracked: group_ntracked of group_captracked, NULL: none yet), the splits
     * made in it */
    int group_depth;
    int group_ntracked, group_captracked;
    struct ncclComm **group_tracked;
    struct pending_split *group_splits;
    struct ncclComm *group_first;
    /* comm/registry.c */
    hn_thread_slot_t slot[HN_THREAD_SLOTS];
} hn_thread_t;
_Static_assert(offsetof(hn_thread_t, slot) == 64, "what every call touches besides its slot fits one line");

/* The hot path's data is hidden (here and in the other layers' headers): addressed directly, not
 * through the GOT, by every object that links the archive (the shared library exports only the
 * public calls, packaging/exports.map). */
extern __attribute__((visibility("hidden"))) _Thread_local hn_thread_t hidet_nccl__thread;

/* Bumped by every change a thread's copies could miss: the registry's (a communicator added,
 * failed, destroyed, its recorder made) and a settings reload. A copy made at the current value
 * is what a fresh look would give. */
extern __attribute__((visibility("hidden"))) _Atomic unsigned long hidet_nccl__generation;

static inline void hidet_nccl__stale_copies(void) {
    atomic_fetch_add_explicit(&hidet_nccl__generation, 1, memory_order_release);
}

#endif

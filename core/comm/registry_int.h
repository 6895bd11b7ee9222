/* Internal: the process-wide table of communicator slots (core/comm/registry.c). Ids index the
 * table; a slot is never reused until the table is emptied by finalize, or renumbered by a
 * set_comms that finds nothing else live. */
#ifndef HIDET_NCCL_CORE_COMM_REGISTRY_INT_H_
#define HIDET_NCCL_CORE_COMM_REGISTRY_INT_H_

#include <nccl.h>
#include <stdint.h>

#include "core/base/thread_int.h"
#include "core/nccl/nccl_config_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/trace/trace_int.h"
#include "hidet_nccl/hidet_nccl.h"

/* Adds a live communicator, owned (made by the library) or borrowed; *id is its new id. A
 * nranks and rank: 0 and -1 when unknown (a borrowed one). A NULL comm reserves a pending id, which every use refuses as not ready until
 * hidet_nccl__registry_fill. key names the communicator the same on every rank, for the
 * flight recorder (hidet_nccl__trace_key_*; 0: unknown, a borrowed one). */
hidet_nccl_status_t hidet_nccl__registry_add(ncclComm_t comm, int owned, int nranks, int rank, uint32_t key, int *id);
/* Adds an owned communicator just made from another (split, shrink): its size and rank from
 * NCCL; if it cannot be added, it is destroyed. */
hidet_nccl_status_t hidet_nccl__registry_add_child(const hn_nccl_t *n, ncclComm_t child, uint32_t key,
                                                   const hn_knobs_t *knobs, int *id);
/* A helper of id passed its deadline inside NCCL (`call`: "ncclCommSplit"): nothing else may
 * use the communicator, so the id is made dead ("left inside <call> that passed its deadline")
 * and the caller's message says so. */
void hidet_nccl__registry_kill_stuck(int id, const char *call);
/* NCCL's knobs a communicator was made with (none for a borrowed one, or an id not given):
 * its splits and shrinks are made with them, and keep them for theirs. */
void hidet_nccl__registry_set_knobs(int id, const hn_knobs_t *knobs);
void hidet_nccl__registry_knobs(int id, hn_knobs_t *out);
/* Gives a pending id its communicator; NULL (a failed split) marks it dead. */
void hidet_nccl__registry_fill(int id, ncclComm_t comm, int nranks, int rank);
/* What a slot holds. */
typedef struct {
    ncclComm_t comm;
    int owned;
    int nranks; /* 0 if unknown: a borrowed communicator */
    int rank;   /* -1 if unknown: a borrowed communicator */
    int failed; /* marked by hidet_nccl__registry_fail: only shrink, revoke, destroy, abort take it */
    hn_trace_t *trace; /* its flight recorder ring, or NULL (recorder off) */
    int asked_nranks;  /* a borrowed one's size and rank once NCCL was asked (else 0, -1) */
    int asked_rank;
} hn_slot_t;
/* The slot of a live id; a failed one only if accept_failed (else an error that says what
 * failed and what can still be done). A clear error for any other id. */
hidet_nccl_status_t hidet_nccl__registry_get(int id, int accept_failed, hn_slot_t *out);
/* A collective's look at id: the calling thread's copy of it (core/base/thread_int.h), made
 * at the current generation, else registry_coll_copy. Refuses what registry_get refuses (a
 * failed id too); the copy holds the communicator, its size and rank (an owned one's; a
 * borrowed one's once asked, registry_note_asked, apart), its flight recorder ring (made at its
 * first collective: hidet_nccl__trace_new; NULL with the recorder off).
 * *out stays valid until this thread's next look. Takes no lock while the registry is unchanged
 * since this thread's last look at id. */
hidet_nccl_status_t hidet_nccl__registry_coll_copy(int id, const hn_thread_slot_t **out);
static inline hidet_nccl_status_t hidet_nccl__registry_coll(int id, const hn_thread_slot_t **out) {
    unsigned long now = atomic_load_explicit(&hidet_nccl__generation, memory_order_acquire);
    const hn_thread_slot_t *h = &hidet_nccl__thread.slot[(unsigned)id % HN_THREAD_SLOTS];
    if (__builtin_expect(h->generation == now && h->id == id, 1)) { /* nothing changed since this thread's look */
        *out = h;
        return HIDET_NCCL_SUCCESS;
    }
    return hidet_nccl__registry_coll_copy(id, out);
}
/* A borrowed communicator's size and rank as NCCL told them, kept so that later collectives
 * do not ask again (if id still holds comm). */
void hidet_nccl__registry_note_asked(int id, ncclComm_t comm, int nranks, int rank);
/* The communicator of a live id that has not failed, whether the library owns it, and its
 * number of ranks (0 if unknown); owned and nranks may be NULL. */
hidet_nccl_status_t hidet_nccl__registry_lookup(int id, ncclComm_t *comm, int *owned, int *nranks);
/* Marks a live id failed (why: "its peer stopped answering ..."): collectives and splits on
 * it are refused, its communicator is kept for hidet_nccl_comm_shrink / comm_revoke, and
 * destroy aborts it. */
hidet_nccl_status_t hidet_nccl__registry_fail(int id, const char *why);
/* Marks a live (or failed) id dead and returns what it held; later uses of the id say
 * "communicator id N was <why>" (why NULL: "destroyed"). failed may be NULL. */
hidet_nccl_status_t hidet_nccl__registry_kill(int id, const char *why, ncclComm_t *comm, int *owned, int *failed);
/* fn(id) runs (without the registry's lock) whenever registry_fail marks a live id failed and
 * whenever registry_kill kills one: a layer above stops what waits on its peers (the own
 * kernels). One fn; a later call replaces it. */
void hidet_nccl__registry_on_fail(void (*fn)(int id));
/* The recorder key of a child of id made by `how` ("split", "shrink") with color: the same
 * on every rank that makes its children in the same order. */
hidet_nccl_status_t hidet_nccl__registry_child_key(int id, const char *how, int color, uint32_t *key);
/* Calls fn for every slot with a recorder ring (live, failed and dead), under the registry's
 * lock: state is "live", "failed" or "dead", why says why (may be ""); the flight recorder's
 * source of rings (hidet_nccl__trace_set_source). */
void hidet_nccl__registry_each_trace(hn_trace_visit_fn fn, void *arg);
/* id was made from from_id (a dead or failed id included) by how (a static word: "recover"): its
 * flight recorder ring names from_id's key, and it takes from_id's error policy. */
void hidet_nccl__registry_set_origin(int id, int from_id, const char *how);
/* The error policy of a live id. */
hidet_nccl_status_t hidet_nccl__registry_policy(int id, hidet_nccl_error_policy_t *policy);
/* Empties the table (and frees the recorder rings). *slots (malloc'ed, caller frees) lists the n live slots. */
typedef struct {
    int id;
    int owned;
    int failed;
    ncclComm_t comm;
} hn_registered_t;
hidet_nccl_status_t hidet_nccl__registry_take_all(hn_registered_t **slots, int *n);

#endif

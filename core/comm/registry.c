/* The communicator registry: ids, ownership, checks on every use. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/settings_int.h"
#include "core/base/status_int.h"
#include "core/nccl/nccl_config_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/comm/registry_int.h"

/* How a slot's communicator came: made by the library, or borrowed one at a time
 * (comm_adopt) or as the seed's pool (set_comms, which replaces the pool). */
typedef enum { KIND_OWNED, KIND_ADOPTED, KIND_POOL } kind_t;

/* Kept small (72 bytes on LP64): a set_comms pool may hold millions. What few slots need (a reason,
 * NCCL's knobs) lives outside it. */
typedef struct {
    ncclComm_t comm;
    hn_trace_t *trace; /* the flight recorder's ring, kept after death for dumps; NULL: none yet, or off */
    char *why;         /* why a dead id is dead (NULL: destroyed), or why a failed one failed: see set_why */
    hn_knobs_t *knobs; /* malloc'ed: NCCL's knobs it was made with, for its splits and shrinks (NULL: none) */
    kind_t kind;
    int live;
    int pending; /* reserved by a split inside a group; filled at group_end */
    int nranks;  /* 0: unknown (borrowed) */
    int failed;  /* live, but only shrink, revoke, destroy and abort take it */
    int rank;    /* this rank, asked of NCCL when an owned one is added (-1: unknown); a failed
                  * communicator no longer answers ncclCommUserRank */
    hidet_nccl_error_policy_t policy;
    uint32_t key;     /* the recorder's name of the communicator, the same on every rank */
    uint32_t children; /* splits and shrinks made of it: the ordinal in a child's key */
    int trace_tried;   /* the ring was made (or the recorder is off) at the first collective */
    int asked_nranks;  /* a borrowed one's size and rank as NCCL told them at its first collective */
    int asked_rank;    /* that needed them (0 and -1: not asked yet); they never change */
} slot_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t *g_slots;
static int g_count;    /* ids handed out */
static int g_capacity;

/* The collectives' way in without the lock (registry_int.h's hidet_nccl__registry_coll): every
 * change to what a collective reads of a slot bumps the generation (core/base/thread_int.h)
 * under the lock (unlock_changed), and each thread keeps, in its block, the last few ids it
 * used as a collective sees them, with the generation they were read at. A copy made at the
 * current generation is what the lock would give now, so a collective touches one shared word
 * and its own thread's block instead of the lock and the table (measured on an H200: the lock
 * and the slot's line cost a back-to-back NCCL call more than all the rest of the library's
 * work). */
/* Unlocks after a change a collective could see (a slot added, filled, failed, killed, its ring
 * made, the table dropped): the threads' copies are stale from now on. */
static void unlock_changed(void) {
    hidet_nccl__stale_copies();
    pthread_mutex_unlock(&g_lock);
}

/* The reason every id of a replaced pool shares (a pool may be millions: no copy each), and the
 * one a reason becomes when there is no memory to copy it. */
static char k_replaced[] = "replaced by hidet_nccl_set_comms";
static char k_no_memory[] = "(its reason was lost: out of memory)";

static void free_why(slot_t *s) {
    if (s->why != k_replaced && s->why != k_no_memory) free(s->why);
    s->why = NULL;
}

/* A slot's reason: a copy of why (NULL or "": none), or k_replaced itself. */
static void set_why(slot_t *s, const char *why) {
    free_why(s);
    if (why == NULL || why[0] == '\0') return;
    s->why = why == k_replaced ? k_replaced : strdup(why);
    if (s->why == NULL) s->why = k_no_memory;
}

static const char *why_of(const slot_t *s) { return s->why ? s->why : ""; }

/* What a slot holds outside it, freed when the slot is dropped (finalize, a renumbering pool). */
static void drop_slot(slot_t *s) {
    hidet_nccl__trace_free(s->trace);
    s->trace = NULL;
    free_why(s);
    free(s->knobs);
    s->knobs = NULL;
}

static hidet_nccl_status_t check_id_locked(int id, int accept_failed) {
    if (id < 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM, "communicator id %d is negative", id);
    if (g_count == 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM,
                       "communicator id %d was never given: no communicator exists (none created yet, or all "
                       "released by hidet_nccl_finalize)", id);
    if (id >= g_count)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM,
                       "communicator id %d was never given (%d ids have been given: 0 .. %d)", id, g_count,
                       g_count - 1);
    if (!g_slots[id].live)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM, "communicator id %d was %s", id,
                       g_slots[id].why ? g_slots[id].why : "destroyed");
    if (g_slots[id].pending)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "communicator id %d is not ready: it comes from a split inside a group that has not ended "
                       "(call hidet_nccl_group_end first)", id);
    if (g_slots[id].failed && !accept_failed)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM,
                       "communicator id %d failed (%s): it takes no more collectives; the survivors make a new one "
                       "with hidet_nccl_comm_shrink (HIDET_NCCL_SHRINK_ABORT), and hidet_nccl_comm_destroy releases it",
                       id, why_of(&g_slots[id]));
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t reserve_locked(int needed) {
    if (needed <= g_capacity) return HIDET_NCCL_SUCCESS;
    int cap = g_capacity ? g_capacity : 16;
    while (cap < needed) cap = cap > INT_MAX / 2 ? INT_MAX : cap * 2;
    slot_t *s = realloc(g_slots, (size_t)cap * sizeof *s);
    if (s == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory growing the registry to %d slots", cap);
    g_slots = s;
    g_capacity = cap;
    return HIDET_NCCL_SUCCESS;
}

/* A borrowed communicator's rank and size, from NCCL, for its ring's dump (an owned one's are
 * in its slot; a borrowed one, which a test may fake, is asked only when it is dumped). */
static void place_borrowed(hn_trace_t *t, ncclComm_t comm) {
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    int rank = -1, nranks = -1;
    if (t == NULL || comm == NULL || n == NULL) return;
    if (n->CommUserRank(comm, &rank) != ncclSuccess) rank = -1;
    if (n->CommCount(comm, &nranks) != ncclSuccess) nranks = -1;
    hidet_nccl__trace_set_place(t, rank, nranks);
}

static hn_slot_t view(const slot_t *s) {
    return (hn_slot_t){s->comm,  s->kind == KIND_OWNED, s->nranks,       s->rank,
                       s->failed, s->trace,            s->asked_nranks, s->asked_rank};
}

static hidet_nccl_status_t add_locked(ncclComm_t comm, kind_t kind, int nranks, int rank, uint32_t key, int *id) {
    hidet_nccl_status_t st = g_count == INT_MAX
                                 ? HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "the registry is full (%d ids)", g_count)
                                 : reserve_locked(g_count + 1);
    if (st == HIDET_NCCL_SUCCESS) {
        g_slots[g_count] = (slot_t){.comm = comm, .kind = kind, .live = 1, .pending = comm == NULL, .nranks = nranks,
                                    .rank = rank, .policy = HIDET_NCCL_ON_ERROR_RETURN, .key = key};
        *id = g_count++;
    }
    return st;
}

/* The flight recorder learns of the registry's rings, and SIGUSR1 dumps them, once the process
 * has a communicator. */
static void recorder_hooks(void) {
    hidet_nccl__trace_set_source(hidet_nccl__registry_each_trace);
    hidet_nccl__trace_signal_install();
}

hidet_nccl_status_t hidet_nccl__registry_add(ncclComm_t comm, int owned, int nranks, int rank, uint32_t key, int *id) {
    recorder_hooks();
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = add_locked(comm, owned ? KIND_OWNED : KIND_ADOPTED, nranks, rank, key, id);
    unlock_changed();
    return st;
}

hidet_nccl_status_t hidet_nccl__registry_add_child(const hn_nccl_t *n, ncclComm_t child, uint32_t key,
                                                   const hn_knobs_t *knobs, int *id) {
    int nranks = 0, rank = -1;
    n->CommCount(child, &nranks);
    n->CommUserRank(child, &rank);
    hidet_nccl_status_t st = hidet_nccl__registry_add(child, 1, nranks, rank, key, id);
    if (st != HIDET_NCCL_SUCCESS) n->CommDestroy(child);
    else hidet_nccl__registry_set_knobs(*id, knobs);
    return st;
}

void hidet_nccl__registry_kill_stuck(int id, const char *call) {
    char why[160];
    snprintf(why, sizeof why, "left inside %s that passed its deadline", call);
    ncclComm_t dropped;
    int owned;
    if (hidet_nccl__registry_kill(id, why, &dropped, &owned, NULL) == HIDET_NCCL_SUCCESS)
        hidet_nccl__append_error("communicator id %d is dead: it is still inside that call", id);
}

void hidet_nccl__registry_set_knobs(int id, const hn_knobs_t *knobs) {
    if (knobs == NULL) return;
    hn_knobs_t *copy = malloc(sizeof *copy);
    if (copy == NULL) {
        HN_WARN("communicator id %d: out of memory keeping NCCL's knobs; its splits and shrinks are made without them",
                id);
        return;
    }
    *copy = *knobs;
    pthread_mutex_lock(&g_lock);
    if (id >= 0 && id < g_count) {
        free(g_slots[id].knobs);
        g_slots[id].knobs = copy;
        copy = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    free(copy);
}

void hidet_nccl__registry_knobs(int id, hn_knobs_t *out) {
    hidet_nccl__knobs_none(out);
    pthread_mutex_lock(&g_lock);
    if (id >= 0 && id < g_count && g_slots[id].knobs != NULL) *out = *g_slots[id].knobs;
    pthread_mutex_unlock(&g_lock);
}

void hidet_nccl__registry_fill(int id, ncclComm_t comm, int nranks, int rank) {
    pthread_mutex_lock(&g_lock);
    if (id >= 0 && id < g_count && g_slots[id].pending) {
        g_slots[id].comm = comm;
        g_slots[id].nranks = nranks;
        g_slots[id].pending = 0;
        g_slots[id].live = comm != NULL;
        g_slots[id].rank = rank;
    }
    unlock_changed();
}

hidet_nccl_status_t hidet_nccl__registry_get(int id, int accept_failed, hn_slot_t *out) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(id, accept_failed);
    if (st == HIDET_NCCL_SUCCESS) *out = view(&g_slots[id]);
    pthread_mutex_unlock(&g_lock);
    return st;
}

hidet_nccl_status_t hidet_nccl__registry_coll_copy(int id, const hn_thread_slot_t **out) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(id, 0);
    if (st == HIDET_NCCL_SUCCESS) {
        slot_t *s = &g_slots[id];
        if (!s->trace_tried) { /* once per communicator, at its first collective */
            s->trace_tried = 1;
            s->trace = hidet_nccl__trace_new(s->key);
            if (s->kind == KIND_OWNED) hidet_nccl__trace_set_place(s->trace, s->rank, s->nranks);
            hidet_nccl__stale_copies();
        }
        /* The generation before what the copy reads: the registry changes only under this lock,
         * but a settings reload may come meanwhile, and then the copy is stale at the next look. */
        unsigned long generation = atomic_load_explicit(&hidet_nccl__generation, memory_order_acquire);
        hn_setting_info_t p2p; /* read without failing: the collective that needs it says what is wrong */
        hidet_nccl__setting_info(HN_SETTING_GROUPED_P2P, &p2p);
        hn_thread_slot_t *h = &hidet_nccl__thread.slot[(unsigned)id % HN_THREAD_SLOTS];
        *h = (hn_thread_slot_t){
            .generation = generation,
            .id = id,
            .nranks = s->nranks,
            .rank = s->rank,
            .asked_nranks = s->asked_nranks,
            .asked_rank = s->asked_rank,
            .grouped_p2p = p2p.error != NULL ? -1 : p2p.number != 0,
            .comm = s->comm,
            .trace = s->trace,
        };
        *out = h;
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

void hidet_nccl__registry_note_asked(int id, ncclComm_t comm, int nranks, int rank) {
    pthread_mutex_lock(&g_lock);
    if (id >= 0 && id < g_count && g_slots[id].live && g_slots[id].comm == comm && nranks > 0 && rank >= 0) {
        g_slots[id].asked_nranks = nranks;
        g_slots[id].asked_rank = rank;
        unlock_changed();
        return;
    }
    pthread_mutex_unlock(&g_lock);
}

void hidet_nccl__registry_set_origin(int id, int from_id, const char *how) {
    pthread_mutex_lock(&g_lock);
    if (id >= 0 && id < g_count && from_id >= 0 && from_id < g_count && g_slots[id].live) {
        slot_t *s = &g_slots[id];
        if (!s->trace_tried) { /* made now, to carry where it came from */
            s->trace_tried = 1;
            s->trace = hidet_nccl__trace_new(s->key);
            if (s->kind == KIND_OWNED) hidet_nccl__trace_set_place(s->trace, s->rank, s->nranks);
        }
        hidet_nccl__trace_set_origin(s->trace, g_slots[from_id].key, how);
        s->policy = g_slots[from_id].policy;
    }
    unlock_changed();
}

hidet_nccl_status_t hidet_nccl__registry_lookup(int id, ncclComm_t *comm, int *owned, int *nranks) {
    hn_slot_t s;
    HN_CHECK(hidet_nccl__registry_get(id, 0, &s));
    *comm = s.comm;
    if (owned) *owned = s.owned;
    if (nranks) *nranks = s.nranks;
    return HIDET_NCCL_SUCCESS;
}

typedef void (*hn_on_fail_fn)(int id);
static _Atomic(hn_on_fail_fn) g_on_fail;

void hidet_nccl__registry_on_fail(void (*fn)(int id)) { atomic_store(&g_on_fail, fn); }

static void tell_failed(int id) {
    hn_on_fail_fn fn = atomic_load(&g_on_fail);
    if (fn != NULL) fn(id);
}

hidet_nccl_status_t hidet_nccl__registry_fail(int id, const char *why) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(id, 1);
    int marked = st == HIDET_NCCL_SUCCESS && !g_slots[id].failed;
    if (marked) {
        g_slots[id].failed = 1;
        set_why(&g_slots[id], why);
    }
    unlock_changed();
    if (marked) tell_failed(id);
    return st;
}

hidet_nccl_status_t hidet_nccl__registry_kill(int id, const char *why, ncclComm_t *comm, int *owned, int *failed) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(id, 1);
    if (st == HIDET_NCCL_SUCCESS) {
        *comm = g_slots[id].comm;
        *owned = g_slots[id].kind == KIND_OWNED;
        if (failed) *failed = g_slots[id].failed;
        g_slots[id].live = 0;
        g_slots[id].failed = 0;
        g_slots[id].comm = NULL;
        set_why(&g_slots[id], why);
    }
    unlock_changed();
    if (st == HIDET_NCCL_SUCCESS) tell_failed(id);
    return st;
}

hidet_nccl_status_t hidet_nccl__registry_child_key(int id, const char *how, int color, uint32_t *key) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(id, 1);
    if (st == HIDET_NCCL_SUCCESS)
        *key = hidet_nccl__trace_key_child(g_slots[id].key, g_slots[id].children++, how, color);
    pthread_mutex_unlock(&g_lock);
    return st;
}

void hidet_nccl__registry_each_trace(hn_trace_visit_fn fn, void *arg) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_count; i++) {
        const slot_t *s = &g_slots[i];
        if (s->trace == NULL) continue;
        const char *state = s->pending ? "pending" : !s->live ? "dead" : s->failed ? "failed" : "live";
        if (s->live && !s->pending && s->kind != KIND_OWNED) place_borrowed(s->trace, s->comm);
        fn(arg, i, s->trace, state, s->live && !s->failed ? "" : s->why ? s->why : "destroyed");
    }
    pthread_mutex_unlock(&g_lock);
}

hidet_nccl_status_t hidet_nccl__registry_policy(int id, hidet_nccl_error_policy_t *policy) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(id, 1);
    if (st == HIDET_NCCL_SUCCESS) *policy = g_slots[id].policy;
    pthread_mutex_unlock(&g_lock);
    return st;
}

hidet_nccl_status_t hidet_nccl_comm_set_error_policy(int comm_id, hidet_nccl_error_policy_t policy) {
    HN_ENTER();
    if ((int)policy < 0 || policy >= HIDET_NCCL_NUM_ERROR_POLICIES)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "error policy %d is not one of 0 .. %d", (int)policy,
                       HIDET_NCCL_NUM_ERROR_POLICIES - 1);
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(comm_id, 1);
    if (st == HIDET_NCCL_SUCCESS) g_slots[comm_id].policy = policy;
    pthread_mutex_unlock(&g_lock);
    return st;
}

hidet_nccl_status_t hidet_nccl__registry_take_all(hn_registered_t **slots, int *n) {
    pthread_mutex_lock(&g_lock);
    int live = 0;
    for (int i = 0; i < g_count; i++) live += g_slots[i].live && !g_slots[i].pending;
    hn_registered_t *out = calloc((size_t)live + 1, sizeof *out);
    if (out == NULL) {
        unlock_changed();
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory listing %d communicators", live);
    }
    int k = 0;
    for (int i = 0; i < g_count; i++) {
        if (g_slots[i].live && !g_slots[i].pending)
            out[k++] = (hn_registered_t){i, g_slots[i].kind == KIND_OWNED, g_slots[i].failed, g_slots[i].comm};
        drop_slot(&g_slots[i]);
    }
    free(g_slots);
    g_slots = NULL;
    g_count = g_capacity = 0;
    unlock_changed();
    *slots = out;
    *n = k;
    return HIDET_NCCL_SUCCESS;
}

/* The live id holding comm, or -1. */
static int find_locked(ncclComm_t comm) {
    for (int i = 0; i < g_count; i++)
        if (g_slots[i].live && !g_slots[i].pending && g_slots[i].comm == comm) return i;
    return -1;
}

static const char *kind_name(kind_t k) {
    return k == KIND_OWNED ? "owned by the library" : k == KIND_ADOPTED ? "adopted" : "in the set_comms pool";
}

/* A communicator of a set_comms pool and its position in the caller's array. */
typedef struct {
    ncclComm_t comm;
    int at;
} placed_t;

static int compare_address(const void *a, const void *b) {
    uintptr_t p = (uintptr_t)((const placed_t *)a)->comm, q = (uintptr_t)((const placed_t *)b)->comm;
    return (p > q) - (p < q);
}

/* By address, then by position: the copies of one communicator end up side by side, earliest first. */
static int compare_placed(const void *a, const void *b) {
    int by_address = compare_address(a, b);
    int p = ((const placed_t *)a)->at, q = ((const placed_t *)b)->at;
    return by_address != 0 ? by_address : (p > q) - (p < q);
}

/* The pool sorted by address into *sorted (malloc'ed; NULL for an empty pool, whose comms may
 * be NULL): neighbours then show a communicator given twice, in O(n log n) where comparing
 * every pair took minutes for 2 million. */
static hidet_nccl_status_t sort_pool(int num_comms, ncclComm_t *comms, placed_t **sorted) {
    *sorted = NULL;
    if (num_comms == 0) return HIDET_NCCL_SUCCESS;
    placed_t *p = malloc((size_t)num_comms * sizeof *p);
    if (p == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory sorting the %d communicators given to set_comms",
                       num_comms);
    for (int i = 0; i < num_comms; i++) p[i] = (placed_t){comms[i], i};
    qsort(p, (size_t)num_comms, sizeof *p, compare_placed);
    *sorted = p;
    return HIDET_NCCL_SUCCESS;
}

/* No communicator twice in the sorted pool. Of several, the pair named is the one a reader of
 * the array meets first (the lowest second position), as the pairwise check named it. */
static hidet_nccl_status_t check_no_duplicate(const placed_t *sorted, int num_comms) {
    const placed_t *first = NULL, *second = NULL;
    for (int k = 1; k < num_comms; k++) {
        int second_copy = sorted[k].comm == sorted[k - 1].comm && (k == 1 || sorted[k - 2].comm != sorted[k].comm);
        if (second_copy && (second == NULL || sorted[k].at < second->at)) first = &sorted[k - 1], second = &sorted[k];
    }
    if (second == NULL) return HIDET_NCCL_SUCCESS;
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                   "comms[%d] and comms[%d] are the same communicator (%p); each may be given once", first->at,
                   second->at, (void *)second->comm);
}

/* The pool's arguments, checked before NCCL is looked for: a count from 0, no NULL, no
 * communicator twice. *sorted (caller frees) is the pool by address, for the registry checks. */
static hidet_nccl_status_t check_pool(int num_comms, ncclComm_t *comms, placed_t **sorted) {
    *sorted = NULL;
    if (num_comms < 0) return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "num_comms %d is negative", num_comms);
    if (num_comms > 0 && comms == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comms is NULL but num_comms is %d", num_comms);
    for (int i = 0; i < num_comms; i++)
        if (comms[i] == NULL)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comms[%d] of %d is NULL", i, num_comms);
    HN_CHECK(sort_pool(num_comms, comms, sorted));
    hidet_nccl_status_t st = check_no_duplicate(*sorted, num_comms);
    if (st != HIDET_NCCL_SUCCESS) {
        free(*sorted);
        *sorted = NULL;
    }
    return st;
}

/* A pool communicator that a live id outside the pool already holds: the lowest position, as
 * a scan of the array would name it. Each such id is looked up in the sorted pool, so the
 * cost is O(ids log n), not O(ids x n). */
static hidet_nccl_status_t check_not_registered_locked(const placed_t *sorted, int num_comms) {
    const placed_t *hit = NULL;
    int hit_id = -1;
    for (int i = 0; i < g_count && num_comms > 0; i++) {
        const slot_t *s = &g_slots[i];
        if (!s->live || s->pending || s->kind == KIND_POOL) continue;
        placed_t key = {s->comm, 0};
        const placed_t *p = bsearch(&key, sorted, (size_t)num_comms, sizeof *sorted, compare_address);
        if (p != NULL && (hit == NULL || p->at < hit->at)) hit = p, hit_id = i;
    }
    if (hit == NULL) return HIDET_NCCL_SUCCESS;
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comms[%d] (%p) is already communicator id %d (%s)", hit->at,
                   (void *)hit->comm, hit_id, kind_name(g_slots[hit_id].kind));
}

/* The old pool's ids die ("replaced by hidet_nccl_set_comms") and comms (checked) become the
 * new pool, numbered after the ids given, or from 0 when nothing else is live. */
static hidet_nccl_status_t install_pool_locked(int num_comms, ncclComm_t *comms) {
    if (num_comms > INT_MAX - g_count)
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "the registry is full: %d ids given, %d more would pass %d", g_count,
                       num_comms, INT_MAX);
    HN_CHECK(reserve_locked(g_count + num_comms));
    int others = 0; /* live ids that are not the old pool */
    for (int i = 0; i < g_count; i++) {
        if (g_slots[i].live && g_slots[i].kind == KIND_POOL) {
            g_slots[i].live = 0;
            g_slots[i].comm = NULL;
            set_why(&g_slots[i], k_replaced);
        }
        others += g_slots[i].live;
    }
    if (others == 0) { /* the seed's numbering: comms[i] is id i */
        for (int i = 0; i < g_count; i++) drop_slot(&g_slots[i]);
        g_count = 0;
    }
    for (int i = 0; i < num_comms; i++)
        g_slots[g_count + i] =
            (slot_t){.comm = comms[i], .kind = KIND_POOL, .live = 1, .rank = -1, .policy = HIDET_NCCL_ON_ERROR_RETURN};
    g_count += num_comms;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_set_comms(int num_comms, ncclComm_t *comms) {
    HN_ENTER();
    recorder_hooks();
    placed_t *sorted;
    HN_CHECK(check_pool(num_comms, comms, &sorted)); /* argument errors before NCCL is looked for */
    const hn_nccl_t *n; /* all_reduce on these needs the table */
    hidet_nccl_status_t st = hidet_nccl__nccl(&n);
    if (st == HIDET_NCCL_SUCCESS) {
        pthread_mutex_lock(&g_lock);
        st = check_not_registered_locked(sorted, num_comms);
        if (st == HIDET_NCCL_SUCCESS) st = install_pool_locked(num_comms, comms);
        unlock_changed();
    }
    free(sorted);
    return st;
}

hidet_nccl_status_t hidet_nccl_comm_adopt(ncclComm_t comm, int *comm_id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(comm);
    HN_CHECK_NOT_NULL(comm_id);
    const hn_nccl_t *n; /* collectives on it need the table */
    HN_CHECK(hidet_nccl__nccl(&n));
    recorder_hooks();
    pthread_mutex_lock(&g_lock);
    int at = find_locked(comm);
    hidet_nccl_status_t st =
        at >= 0 ? HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                          "communicator %p is already registered as id %d (%s); use that id (hidet_nccl_comm_lookup)",
                          (void *)comm, at, kind_name(g_slots[at].kind))
                : add_locked(comm, KIND_ADOPTED, 0, -1, 0, comm_id);
    unlock_changed();
    return st;
}

hidet_nccl_status_t hidet_nccl_comm_lookup(ncclComm_t comm, int *comm_id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(comm);
    HN_CHECK_NOT_NULL(comm_id);
    pthread_mutex_lock(&g_lock);
    int at = find_locked(comm);
    pthread_mutex_unlock(&g_lock);
    if (at < 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM,
                       "communicator %p is not registered (give it with hidet_nccl_comm_adopt or hidet_nccl_set_comms)",
                       (void *)comm);
    *comm_id = at;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_get_comm(int idx, ncclComm_t *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(out);
    return hidet_nccl__registry_lookup(idx, out, NULL, NULL);
}

hidet_nccl_status_t hidet_nccl_comm_count(int *count) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(count);
    pthread_mutex_lock(&g_lock);
    *count = g_count;
    pthread_mutex_unlock(&g_lock);
    return HIDET_NCCL_SUCCESS;
}

/* The tables of library memory: allocations, registrations, the views of communicators with
 * AUTO registrations; what collectives ask of them (hidet_nccl__mem_route); what destroy and
 * finalize drop. One lock; collectives only take it while library memory exists. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm_destroy_int.h"
#include "core/cuda_int.h"
#include "core/error_int.h"
#include "core/log_int.h"
#include "core/mem_int.h"
#include "core/registry_int.h"

atomic_int hidet_nccl__mem_live;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static hn_alloc_t *g_allocs;
static hn_reg_t *g_regs;
static hn_views_t *g_views;
static int g_nallocs, g_nregs, g_nviews, g_cap_allocs, g_cap_regs, g_cap_views;
static int g_next_handle;

void hidet_nccl__mem_lock(void) { pthread_mutex_lock(&g_lock); }
void hidet_nccl__mem_unlock(void) { pthread_mutex_unlock(&g_lock); }

/* Room for one more element in *array (of *n, capacity *cap); NULL when out of memory. */
static void *grow(void **array, int *n, int *cap, size_t size) {
    if (*n == *cap) {
        int want = *cap ? *cap * 2 : 16;
        void *p = realloc(*array, (size_t)want * size);
        if (p == NULL) return NULL;
        *array = p;
        *cap = want;
    }
    return (char *)*array + (size_t)(*n)++ * size;
}

hn_alloc_t *hidet_nccl__mem_add_alloc(const hn_alloc_t *a) {
    hn_alloc_t *p = grow((void **)&g_allocs, &g_nallocs, &g_cap_allocs, sizeof *p);
    if (p != NULL) {
        *p = *a;
        atomic_fetch_add(&hidet_nccl__mem_live, 1);
    }
    return p;
}

hn_reg_t *hidet_nccl__mem_add_reg(const hn_reg_t *r) {
    hn_reg_t *p = grow((void **)&g_regs, &g_nregs, &g_cap_regs, sizeof *p);
    if (p != NULL) {
        *p = *r;
        atomic_fetch_add(&hidet_nccl__mem_live, 1);
    }
    return p;
}

hn_views_t *hidet_nccl__mem_add_views(const hn_views_t *v) {
    hn_views_t *p = grow((void **)&g_views, &g_nviews, &g_cap_views, sizeof *p);
    if (p != NULL) *p = *v;
    return p;
}

hn_alloc_t *hidet_nccl__mem_find_alloc(const void *base) {
    for (int i = 0; i < g_nallocs; i++)
        if (g_allocs[i].base == base) return &g_allocs[i];
    return NULL;
}

hn_alloc_t *hidet_nccl__mem_alloc_containing(const void *p) {
    const char *c = p;
    for (int i = 0; i < g_nallocs; i++)
        if (c >= g_allocs[i].base && (size_t)(c - g_allocs[i].base) < g_allocs[i].bytes) return &g_allocs[i];
    return NULL;
}

hn_reg_t *hidet_nccl__mem_find_reg(int handle) {
    for (int i = 0; i < g_nregs; i++)
        if (g_regs[i].handle == handle) return &g_regs[i];
    return NULL;
}

hn_reg_t *hidet_nccl__mem_reg_overlapping(int comm_id, const char *base, size_t bytes) {
    for (int i = 0; i < g_nregs; i++) {
        const hn_reg_t *r = &g_regs[i];
        int overlap = r->base < base ? (size_t)(base - r->base) < r->bytes : (size_t)(r->base - base) < bytes;
        if (overlap && (comm_id < 0 || r->comm_id == comm_id)) return &g_regs[i];
    }
    return NULL;
}

hn_views_t *hidet_nccl__mem_find_views(int comm_id) {
    for (int i = 0; i < g_nviews; i++)
        if (g_views[i].comm_id == comm_id) return &g_views[i];
    return NULL;
}

void hidet_nccl__mem_remove_alloc(hn_alloc_t *a) {
    *a = g_allocs[--g_nallocs];
    atomic_fetch_sub(&hidet_nccl__mem_live, 1);
}

void hidet_nccl__mem_remove_reg(hn_reg_t *r) {
    *r = g_regs[--g_nregs];
    atomic_fetch_sub(&hidet_nccl__mem_live, 1);
}

void hidet_nccl__mem_remove_views(hn_views_t *v) { *v = g_views[--g_nviews]; }

int hidet_nccl__mem_next_handle(void) { return ++g_next_handle; }

hidet_nccl_status_t hidet_nccl__mem_idle(int used, cudaStream_t stream, const char *what) {
    if (!used) return HIDET_NCCL_SUCCESS;
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return HIDET_NCCL_SUCCESS;
    cudaGetLastError(); /* the query's error is not sticky: do not leave it for the application */
    if (e == cudaErrorNotReady)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "%s is still in use: the last collective on it, on stream %p, has not finished; wait for it "
                       "(hidet_nccl_comm_wait or cudaStreamSynchronize) first. Nothing was released",
                       what, (void *)stream);
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                   "%s may still be in use: cudaStreamQuery of stream %p, the last one a collective used it on, "
                   "says %s (a stream being captured, or destroyed); nothing was released",
                   what, (void *)stream, cudaGetErrorString(e));
}

/* A buffer [p, p + bytes) against what it starts in: an allocation, and a registration of
 * comm_id; both remember the stream. */
static hidet_nccl_status_t check_buffer(const hn_coll_t *c, const char *p, size_t bytes, const char *name) {
    if (p == NULL) return HIDET_NCCL_SUCCESS;
    for (int i = 0; i < g_nregs; i++) {
        hn_reg_t *r = &g_regs[i];
        if (r->comm_id != c->id || p < r->base || (size_t)(p - r->base) >= r->bytes) continue;
        if (bytes > r->bytes - (size_t)(p - r->base))
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                           "%s %s [%p, +%zu bytes) starts inside registration %d [%p, +%zu bytes) of communicator "
                           "id %d and ends %zu bytes past it; a collective's buffer lies inside one registration",
                           c->name, name, (const void *)p, bytes, r->handle, (void *)r->base, r->bytes, c->id,
                           bytes - (r->bytes - (size_t)(p - r->base)));
        r->last_stream = c->stream;
        r->used = 1;
    }
    hn_alloc_t *a = hidet_nccl__mem_alloc_containing(p);
    if (a != NULL) {
        if (bytes > a->bytes - (size_t)(p - a->base))
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                           "%s %s [%p, +%zu bytes) starts inside library memory [%p, +%zu bytes) and ends %zu bytes "
                           "past it",
                           c->name, name, (const void *)p, bytes, (void *)a->base, a->bytes,
                           bytes - (a->bytes - (size_t)(p - a->base)));
        a->last_stream = c->stream;
        a->used = 1;
    }
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__mem_route_slow(hn_coll_t *c, int coll, hidet_nccl_dtype_t dtype, size_t bytes,
                                               const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_buffer(c, a, a_bytes, "sendbuff");
    if (st == HIDET_NCCL_SUCCESS && b != a) st = check_buffer(c, b, b_bytes, "recvbuff");
    if (coll >= 0 && c->op >= 0 && hidet_nccl__is_custom_op((hidet_nccl_op_t)c->op))
        coll = -1; /* a scaled sum belongs to its communicator */
    if (st == HIDET_NCCL_SUCCESS && coll >= 0) {
        hn_views_t *v = hidet_nccl__mem_find_views(c->id);
        ncclComm_t to = v != NULL ? v->comms[hidet_nccl__tune_pick(v->tune, (hn_tuned_t)coll, dtype, bytes)] : NULL;
        if (to != NULL) c->comm = to; /* NULL: a view the table never takes, so never made */
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* Aborts a sibling (its peers may be gone: no finalize). */
static void abort_id(int id) {
    ncclComm_t comm;
    int owned;
    if (hidet_nccl__registry_kill(id, "aborted with the communicator it was made from", &comm, &owned, NULL) ==
            HIDET_NCCL_SUCCESS &&
        owned)
        hidet_nccl__nccl_loaded()->CommAbort(comm);
}

/* Takes out every registration of comm_id (all if comm_id < 0) and its views; undoes them
 * with the lock released (windows are collective and may wait), or (abandon) only forgets
 * them and aborts the siblings: the communicator is being aborted. */
static void drop(int comm_id, int abandon) {
    for (;;) {
        pthread_mutex_lock(&g_lock);
        hn_reg_t r;
        int found = 0;
        for (int i = 0; i < g_nregs && !found; i++)
            if (comm_id < 0 || g_regs[i].comm_id == comm_id) {
                r = g_regs[i];
                hidet_nccl__mem_remove_reg(&g_regs[i]);
                found = 1;
            }
        pthread_mutex_unlock(&g_lock);
        if (!found) break;
        if (!abandon && hidet_nccl__mem_unregister(&r) != HIDET_NCCL_SUCCESS)
            HN_WARN("registration %d of communicator id %d: %s", r.handle, r.comm_id, hidet_nccl__error_detail());
    }
    for (;;) {
        pthread_mutex_lock(&g_lock);
        hn_views_t v;
        int found = 0;
        for (int i = 0; i < g_nviews && !found; i++)
            if (comm_id < 0 || g_views[i].comm_id == comm_id) {
                v = g_views[i];
                hidet_nccl__mem_remove_views(&g_views[i]);
                found = 1;
            }
        pthread_mutex_unlock(&g_lock);
        if (!found) break;
        for (int k = HN_VIEW_PLAIN + 1; k < HN_NUM_VIEWS; k++) {
            if (v.ids[k] < 0 || v.ids[k] == v.comm_id) continue;
            if (abandon)
                abort_id(v.ids[k]);
            else if (hidet_nccl__destroy_id(v.ids[k]) != HIDET_NCCL_SUCCESS)
                HN_WARN("sibling %d of communicator id %d: %s", v.ids[k], v.comm_id, hidet_nccl__error_detail());
        }
    }
}

void hidet_nccl__mem_drop_comm(int comm_id, int abandon) {
    pthread_mutex_lock(&g_lock);
    int any = g_nregs > 0 || g_nviews > 0;
    pthread_mutex_unlock(&g_lock);
    if (any) drop(comm_id, abandon);
}

void hidet_nccl__mem_drop_all(void) {
    drop(-1, 0);
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    pthread_mutex_lock(&g_lock);
    int freed = 0;
    while (g_nallocs > 0) {
        hn_alloc_t a = g_allocs[g_nallocs - 1];
        hidet_nccl__mem_remove_alloc(&g_allocs[g_nallocs - 1]);
        int previous = hidet_nccl__device_use(a.device);
        if (n != NULL && n->MemFree != NULL && n->MemFree(a.base) == ncclSuccess) freed++;
        hidet_nccl__device_back(previous, a.device);
    }
    free(g_allocs);
    free(g_regs);
    free(g_views);
    g_allocs = NULL;
    g_regs = NULL;
    g_views = NULL;
    g_cap_allocs = g_cap_regs = g_cap_views = 0;
    pthread_mutex_unlock(&g_lock);
    if (freed > 0) HN_INFO("finalize: %d allocations of library memory freed", freed);
}

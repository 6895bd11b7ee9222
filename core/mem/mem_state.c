/* The tables of library memory: allocations, registrations, the views of communicators with
 * AUTO registrations. One lock; collectives only take it while library memory exists
 * (core/coll/mem_route.c); destroy and finalize empty them (core/mem/mem_drop.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/nccl/cuda_int.h"
#include "core/base/status_int.h"
#include "core/base/log_int.h"
#include "core/mem/mem_int.h"

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
    if (p != NULL) {
        *p = *v;
        atomic_fetch_add(&hidet_nccl__mem_live, 1); /* routes with or without memory left on a rank */
    }
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

void hidet_nccl__mem_remove_views(hn_views_t *v) {
    *v = g_views[--g_nviews];
    atomic_fetch_sub(&hidet_nccl__mem_live, 1);
}

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

/* The first of a table's entries that matches, copied out and removed; 0 when none. */
int hidet_nccl__mem_take_reg(int comm_id, hn_reg_t *out) {
    pthread_mutex_lock(&g_lock);
    int found = 0;
    for (int i = 0; i < g_nregs && !found; i++)
        if (comm_id < 0 || g_regs[i].comm_id == comm_id) {
            *out = g_regs[i];
            hidet_nccl__mem_remove_reg(&g_regs[i]);
            found = 1;
        }
    pthread_mutex_unlock(&g_lock);
    return found;
}

int hidet_nccl__mem_take_views(int comm_id, hn_views_t *out) {
    pthread_mutex_lock(&g_lock);
    int found = 0;
    for (int i = 0; i < g_nviews && !found; i++)
        if (comm_id < 0 || g_views[i].comm_id == comm_id) {
            *out = g_views[i];
            hidet_nccl__mem_remove_views(&g_views[i]);
            found = 1;
        }
    pthread_mutex_unlock(&g_lock);
    return found;
}

int hidet_nccl__mem_take_alloc(hn_alloc_t *out) {
    pthread_mutex_lock(&g_lock);
    int found = g_nallocs > 0;
    if (found) {
        *out = g_allocs[g_nallocs - 1];
        hidet_nccl__mem_remove_alloc(&g_allocs[g_nallocs - 1]);
    }
    pthread_mutex_unlock(&g_lock);
    return found;
}

void hidet_nccl__mem_free_tables(void) {
    pthread_mutex_lock(&g_lock);
    free(g_allocs);
    free(g_regs);
    free(g_views);
    g_allocs = NULL;
    g_regs = NULL;
    g_views = NULL;
    g_nallocs = g_nregs = g_nviews = 0;
    g_cap_allocs = g_cap_regs = g_cap_views = 0;
    pthread_mutex_unlock(&g_lock);
}

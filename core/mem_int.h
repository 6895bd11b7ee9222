/* Internal: library memory (hidet_nccl_mem_alloc), its registrations, and the siblings of a
 * communicator that AUTO registrations make (core/mem_state.c). What a collective on such
 * memory asks: is its buffer inside what it starts in, which communicator runs it. */
#ifndef HIDET_NCCL_CORE_MEM_INT_H_
#define HIDET_NCCL_CORE_MEM_INT_H_

#include <stdatomic.h>
#include <stddef.h>

#include "core/collective_int.h"
#include "core/tune_table_int.h"

/* Allocations and registrations alive in the process: 0 keeps collectives off the tables. */
extern atomic_int hidet_nccl__mem_live;

/* One allocation of hidet_nccl_mem_alloc. */
typedef struct {
    char *base;
    size_t bytes;
    int device;
    cudaStream_t last_stream; /* of the last collective that used it */
    int used;
} hn_alloc_t;

/* One registration of hidet_nccl_register. */
typedef struct {
    int handle, comm_id;
    char *base;
    size_t bytes;
    ncclComm_t buffer_comm, window_comm; /* where it is registered (NULL: not that way) */
    void *buffer;                        /* ncclCommRegister's handle */
    ncclWindow_t window;
    cudaStream_t last_stream;
    int used;
} hn_reg_t;

/* The siblings of a communicator with AUTO registrations: a view per way NCCL runs. */
typedef struct {
    int comm_id;
    int ids[HN_NUM_VIEWS]; /* [HN_VIEW_PLAIN] is comm_id itself */
    ncclComm_t comms[HN_NUM_VIEWS];
    const hn_tune_t *tune;
} hn_views_t;

/* Slow path of hidet_nccl__mem_route. */
hidet_nccl_status_t hidet_nccl__mem_route_slow(hn_coll_t *c, int coll, hidet_nccl_dtype_t dtype, size_t bytes,
                                               const void *a, size_t a_bytes, const void *b, size_t b_bytes);

/* Before a collective's NCCL call, when library memory exists: a buffer (a, b; NULL: none)
 * that starts inside an allocation or a registration of the communicator must end inside it
 * (else an error naming both), and they remember the stream; with AUTO registrations on the
 * communicator, c->comm becomes the view the tuning table picks for coll (an hn_tuned_t;
 * -1: none), dtype and bytes; a scaled sum (c->op from hidet_nccl_op_premul_sum) stays on its
 * communicator. */
static inline hidet_nccl_status_t hidet_nccl__mem_route(hn_coll_t *c, int coll, hidet_nccl_dtype_t dtype, size_t bytes,
                                                        const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
    if (atomic_load_explicit(&hidet_nccl__mem_live, memory_order_relaxed) == 0) return HIDET_NCCL_SUCCESS;
    return hidet_nccl__mem_route_slow(c, coll, dtype, bytes, a, a_bytes, b, b_bytes);
}

/* The tables, under their lock (mem_lock / mem_unlock). */
void hidet_nccl__mem_lock(void);
void hidet_nccl__mem_unlock(void);
/* Appending copies; NULL when out of memory. */
hn_alloc_t *hidet_nccl__mem_add_alloc(const hn_alloc_t *a);
hn_reg_t *hidet_nccl__mem_add_reg(const hn_reg_t *r);
hn_views_t *hidet_nccl__mem_add_views(const hn_views_t *v);
/* Lookups (NULL: none); removal by copying the last entry over it. */
hn_alloc_t *hidet_nccl__mem_find_alloc(const void *base);
hn_alloc_t *hidet_nccl__mem_alloc_containing(const void *p);
hn_reg_t *hidet_nccl__mem_find_reg(int handle);
/* A registration of comm_id (< 0: of any) overlapping [base, base + bytes). */
hn_reg_t *hidet_nccl__mem_reg_overlapping(int comm_id, const char *base, size_t bytes);
hn_views_t *hidet_nccl__mem_find_views(int comm_id);
void hidet_nccl__mem_remove_alloc(hn_alloc_t *a);
void hidet_nccl__mem_remove_reg(hn_reg_t *r);
void hidet_nccl__mem_remove_views(hn_views_t *v);
int hidet_nccl__mem_next_handle(void);
/* An error when `stream` (the last one that used what `what` names) has unfinished work. */
hidet_nccl_status_t hidet_nccl__mem_idle(int used, cudaStream_t stream, const char *what);

/* Undoes a registration's NCCL side (window collective, against the deadline). */
hidet_nccl_status_t hidet_nccl__mem_unregister(const hn_reg_t *r);
/* Before a communicator is destroyed: its registrations undone and its siblings destroyed;
 * or (abandon: it is aborted, or failed) forgotten and aborted. */
void hidet_nccl__mem_drop_comm(int comm_id, int abandon);
/* At finalize: every registration undone, every sibling destroyed, every allocation freed. */
void hidet_nccl__mem_drop_all(void);

#endif

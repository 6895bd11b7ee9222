/* Internal: library memory (hidet_nccl_mem_alloc), its registrations, and the siblings of a
 * communicator that AUTO registrations make: the tables (core/mem/mem_state.c), NCCL's side of a
 * registration (core/mem/mem_window.c), what goes with a communicator (core/mem/mem_drop.c). */
#ifndef HIDET_NCCL_CORE_MEM_MEM_INT_H_
#define HIDET_NCCL_CORE_MEM_MEM_INT_H_

#include <stdatomic.h>
#include <stddef.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/nccl/nccl_loader_int.h"
#include "core/mem/tune_table_int.h"

/* Allocations, registrations and views alive in the process: 0 keeps collectives off the
 * tables. A communicator's views count, so that it routes alike on every rank whatever memory
 * a rank has freed. */
extern __attribute__((visibility("hidden"))) atomic_int hidet_nccl__mem_live;

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

/* The siblings of a communicator with AUTO registrations: a view per way NCCL runs (ids -1
 * and comms NULL for a view never made, and for the own kernels' views), and the own kernels'
 * workspace when its table takes them; or, with an OWN registration, the workspace alone. */
typedef struct {
    int comm_id;
    int ids[HN_NUM_VIEWS]; /* [HN_VIEW_PLAIN] is comm_id itself */
    ncclComm_t comms[HN_NUM_VIEWS];
    const hn_tune_t *tune;
    int own_only;         /* made by HIDET_NCCL_REGISTER_OWN: own kernels wherever they can run, no table */
    struct hn_own *own;   /* NULL: the own kernels cannot run here (own_why) or the table never takes them */
    char own_why[256];
} hn_views_t;

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
/* The first entry of comm_id (< 0: any), copied into *out and removed, under the lock; 0 when
 * none. */
int hidet_nccl__mem_take_reg(int comm_id, hn_reg_t *out);
int hidet_nccl__mem_take_views(int comm_id, hn_views_t *out);
int hidet_nccl__mem_take_alloc(hn_alloc_t *out);
/* The emptied tables' memory released (finalize). */
void hidet_nccl__mem_free_tables(void);
int hidet_nccl__mem_next_handle(void);
/* An error when `stream` (the last one that used what `what` names) has unfinished work. */
hidet_nccl_status_t hidet_nccl__mem_idle(int used, cudaStream_t stream, const char *what);

/* A symmetric window of [ptr, +bytes) on comm (communicator id comm_id) made into *win, or
 * (deregister) *win undone: collective, on a helper thread against the deadline; past it the
 * id is killed. */
hidet_nccl_status_t hidet_nccl__mem_window(const hn_nccl_t *n, ncclComm_t comm, int comm_id, void *ptr, size_t bytes,
                                           ncclWindow_t *win, int deregister);
/* Undoes a registration's NCCL side (window collective, against the deadline). */
hidet_nccl_status_t hidet_nccl__mem_unregister(const hn_reg_t *r);
/* Before library memory first keeps something: the communicators' destroy, abort and
 * finalize drop it from then on (before a communicator is destroyed its registrations are
 * undone and its siblings destroyed, or, when it is aborted or failed, forgotten and aborted;
 * at finalize every registration is undone, every sibling destroyed, every allocation freed). */
void hidet_nccl__mem_keep(void);

#endif

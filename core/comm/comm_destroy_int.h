/* Internal: releasing one communicator id (core/comm/comm_destroy.c). */
#ifndef HIDET_NCCL_CORE_COMM_COMM_DESTROY_INT_H_
#define HIDET_NCCL_CORE_COMM_COMM_DESTROY_INT_H_

#include "hidet_nccl/hidet_nccl.h"

/* hidet_nccl_comm_destroy without the public call's bookkeeping and without its library
 * memory step (for the siblings the memory tables own). */
hidet_nccl_status_t hidet_nccl__destroy_id(int comm_id);

/* What a layer above keeps per communicator goes before the communicator does: it gives its
 * dropper here (once; the same pair again is kept once; at most 4) before it first keeps
 * something. comm(id, abandon) runs before communicator id is destroyed (abandon 0) or
 * aborted, its peers may be gone: abandon 1 after a failure or hidet_nccl_comm_abort (the id
 * may still be recovered), 2 destroyed by the caller after it failed; all() at finalize,
 * before any communicator is released. */
void hidet_nccl__at_comm_drop(void (*comm)(int comm_id, int abandon), void (*all)(void));
/* Runs every dropper's comm(comm_id, abandon). */
void hidet_nccl__comm_drop(int comm_id, int abandon);

#endif

/* Internal: work hidet_nccl_finalize() does for optional parts (e.g. the MPI archive
 * finalizing an MPI it initialized), registered by those parts. */
#ifndef HIDET_NCCL_CORE_FINALIZE_HOOKS_INT_H_
#define HIDET_NCCL_CORE_FINALIZE_HOOKS_INT_H_

/* Adds fn to run (once per registration, in order) at the end of every hidet_nccl_finalize.
 * Registering the same fn twice keeps one. At most 8 hooks. */
void hidet_nccl__at_finalize(void (*fn)(void));

/* Runs the hooks (core/comm_destroy.c calls it). */
void hidet_nccl__run_finalize_hooks(void);

#endif

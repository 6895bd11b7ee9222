/* Internal: the roots of a scalable init (core/boot/init_roots.c). */
#ifndef HIDET_NCCL_CORE_BOOT_INIT_ROOTS_INT_H_
#define HIDET_NCCL_CORE_BOOT_INIT_ROOTS_INT_H_

/* How many roots a communicator of nranks ranks gets with ranks_per_root: ceil(nranks /
 * ranks_per_root), at least 1. */
int hidet_nccl__init_roots(int nranks, int ranks_per_root);

/* Which root rank is (0 .. nroots-1), or -1 if it is none. Root i is rank i * nranks / nroots
 * (rounded down): spread evenly, rank 0 always the first. */
int hidet_nccl__init_root_index(int rank, int nranks, int nroots);

#endif

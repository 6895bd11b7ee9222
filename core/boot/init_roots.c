/* The roots of a scalable init: how many, and which ranks (core/boot/init_roots_int.h). */
#include "core/boot/init_roots_int.h"

int hidet_nccl__init_roots(int nranks, int ranks_per_root) {
    if (nranks < 1 || ranks_per_root < 1) return 1;
    return (int)(((long)nranks + ranks_per_root - 1) / ranks_per_root);
}

int hidet_nccl__init_root_index(int rank, int nranks, int nroots) {
    if (nroots < 1 || nranks < 1 || rank < 0 || rank >= nranks) return -1;
    /* root i is floor(i * nranks / nroots): the first i whose rank is >= this one */
    long i = ((long)rank * nroots + nranks - 1) / nranks;
    return i < nroots && i * nranks / nroots == rank ? (int)i : -1;
}

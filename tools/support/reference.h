/* Host-side reference for exact checks, shared by the GPU tests and the benchmark: for the
 * reductions, per-rank input values chosen so that every supported dtype x op is exact, and the
 * expected result, both in the NCCL element type the library hands to NCCL; for data movement,
 * per-rank byte patterns. */
#ifndef HIDET_NCCL_TOOLS_SUPPORT_REFERENCE_H_
#define HIDET_NCCL_TOOLS_SUPPORT_REFERENCE_H_

#include <stddef.h>

#include "hidet_nccl/hidet_nccl.h"

/* Bytes of one NCCL element of type t. */
size_t hn_ref_elem_size(ncclDataType_t t);

/* Fills n NCCL elements of rank's input for an all_reduce of dtype with op. */
void hn_ref_fill(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, int rank, size_t n, void *out);

/* The exact result of all_reduce over nranks ranks filled by hn_ref_fill. */
void hn_ref_expected(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, int nranks, size_t n, void *out);

/* Data movement (broadcast, all_gather, all_to_all, gather, scatter, send/recv): `bytes` bytes of
 * rank's data from byte `offset` on, a pattern that differs from every other rank's at almost
 * every byte and depends on the byte's position, so that a block from the wrong rank or the wrong
 * place is seen. fill_bytes(r, a, n) followed by fill_bytes(r, a + n, m) is fill_bytes(r, a, n + m). */
void hn_ref_fill_bytes(int rank, size_t offset, size_t bytes, void *out);

/* The first `done` elements (of elem bytes) at out repeated up to n, by doubling copies: a
 * periodic fill of 2^28 elements costs a few memcpy, not 2^28 conversions. */
void hn_ref_repeat(void *out, size_t elem, size_t done, size_t n);

/* Index of the first differing NCCL element of a and b, or (size_t)-1 if equal. */
size_t hn_ref_first_difference(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, const void *a, const void *b,
                               size_t n);

#endif

/* Internal: the dtype x op table lookups of the collectives (core/nccl/dtype.c). */
#ifndef HIDET_NCCL_CORE_NCCL_DTYPE_INT_H_
#define HIDET_NCCL_CORE_NCCL_DTYPE_INT_H_

#include <nccl.h>
#include <stdint.h>

#include "hidet_nccl/hidet_nccl.h"

/* hidet_nccl_reduction without touching the error message on success. */
hidet_nccl_status_t hidet_nccl__reduction(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                          hidet_nccl_reduction_t *out);

/* The reduction, checked against the loaded NCCL (normalized version code) and for a
 * byte size that overflows; *nccl_count is the element count NCCL gets. */
hidet_nccl_status_t hidet_nccl__plan(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, size_t count,
                                     int nccl_version, hidet_nccl_reduction_t *red,
                                     size_t *nccl_count);

/* The same, for the collective `what` ("reduce", "reduce_scatter") in the messages. */
hidet_nccl_status_t hidet_nccl__reduction_for(const char *what, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                              hidet_nccl_reduction_t *out);
hidet_nccl_status_t hidet_nccl__plan_for(const char *what, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, size_t count,
                                         int nccl_version, hidet_nccl_reduction_t *red, size_t *nccl_count);

/* How data movement carries dtype: an NCCL type of the same width that is only copied
 * (uint8, uint32, uint64; 2-byte types as two uint8, complex128 as two uint64), mult of it
 * per element. Every dtype moves. */
hidet_nccl_status_t hidet_nccl__movement(hidet_nccl_dtype_t dtype, ncclDataType_t *type, size_t *mult);
/* The same for every dtype in one line of memory, for the collectives' inlined plan
 * (core/coll/collective_int.h): the NCCL type, mult, and bytes per element. */
typedef struct {
    uint8_t type, mult, bytes;
} hn_move_t;
extern __attribute__((visibility("hidden"))) const hn_move_t hidet_nccl__moves[HIDET_NCCL_NUM_DTYPES];
/* 1 if dtype reduces with sum (what a scaled sum needs). */
int hidet_nccl__sum_allowed(hidet_nccl_dtype_t dtype);
/* hidet's name of dtype, "?" if it is not one. */
const char *hidet_nccl__dtype_str(hidet_nccl_dtype_t dtype);

/* Bytes of one element of an NCCL type. */
size_t hidet_nccl__nccl_type_size(ncclDataType_t t);

#endif

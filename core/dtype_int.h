/* Internal: the dtype x op table lookup used by all_reduce (core/dtype.c). */
#ifndef HIDET_NCCL_CORE_DTYPE_INT_H_
#define HIDET_NCCL_CORE_DTYPE_INT_H_

#include "hidet_nccl/hidet_nccl.h"

/* hidet_nccl_reduction without touching the error message on success. */
hidet_nccl_status_t hidet_nccl__reduction(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                          hidet_nccl_reduction_t *out);

/* The reduction, checked against the loaded NCCL (normalized version code) and for a
 * byte size that overflows; *nccl_count is the element count NCCL gets. */
hidet_nccl_status_t hidet_nccl__plan(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, size_t count,
                                     int nccl_version, hidet_nccl_reduction_t *red,
                                     size_t *nccl_count);

/* Bytes of one element of an NCCL type. */
size_t hidet_nccl__nccl_type_size(ncclDataType_t t);

#endif

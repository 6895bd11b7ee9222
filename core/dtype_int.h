/* Internal: the dtype x op table lookup used by all_reduce, and NCCL version codes. */
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

int hidet_nccl__version_major(int code);
int hidet_nccl__version_minor(int code);
int hidet_nccl__version_patch(int code);
/* Any ncclGetVersion code as X*10000+Y*100+Z (2.8.4: 2804 -> 20804). */
int hidet_nccl__version_normalize(int code);

#endif

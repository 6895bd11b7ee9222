/* One rank's part of the exact all_reduce check (one process per GPU): every dtype x op,
 * refused pairs refused, supported ones checked out of place and in place. */
#ifndef HIDET_NCCL_TESTS_GPU_CHECK_ALL_H_
#define HIDET_NCCL_TESTS_GPU_CHECK_ALL_H_

#include <stddef.h>

#include "hidet_nccl/hidet_nccl.h"

typedef struct {
    int checked; /* dtype x op x count x placement combinations run */
    int wrong;   /* of those, results that differed on this rank */
    int refused; /* dtype x op pairs refused, as they must be */
    int errors;  /* calls that returned an unexpected status */
} hn_check_result_t;

/* Collective over comm_id (every rank calls it with the same counts). */
hn_check_result_t hn_check_every_dtype_op(int comm_id, const size_t *counts, int ncounts);

#endif

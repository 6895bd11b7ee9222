/* Monotonic seconds, for the GPU tests' timings. */
#ifndef HIDET_NCCL_TESTS_GPU_NOW_H_
#define HIDET_NCCL_TESTS_GPU_NOW_H_

#include <time.h>

static inline double hn_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif

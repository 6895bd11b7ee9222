/* Monotonic seconds, for the GPU tests' timings; wall-clock seconds, for moments two processes
 * compare (a victim's death and a survivor's error). */
#ifndef HIDET_NCCL_TESTS_GPU_NOW_H_
#define HIDET_NCCL_TESTS_GPU_NOW_H_

#include <time.h>

static inline double hn_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double hn_wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif

/* What the GPU tests that kill their own ranks share (recover_gpu_test, heal_gpu_test): the
 * victim writes the wall-clock moment of its death into $<dir_env>/kill.<stage> before SIGKILL,
 * so that the others can time kill->error and kill->whole. */
#ifndef HIDET_NCCL_TESTS_GPU_KILL_MARK_H_
#define HIDET_NCCL_TESTS_GPU_KILL_MARK_H_

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/gpu/now.h"

/* $dir_env/kill.<stage> (/tmp when unset). */
static inline void hn_kill_mark_path(const char *dir_env, int stage, char *path, size_t n) {
    const char *dir = getenv(dir_env);
    snprintf(path, n, "%s/kill.%d", dir ? dir : "/tmp", stage);
}

/* The moment written, then SIGKILL to this process (rank `who`, for the log). */
static inline void hn_die_now(const char *dir_env, int who, int stage) {
    char path[512];
    hn_kill_mark_path(dir_env, stage, path, sizeof path);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%.6f\n", hn_wall());
        fclose(f);
    }
    printf("rank %d: stage %d: SIGKILL to myself\n", who, stage);
    fflush(stdout);
    raise(SIGKILL);
}

#endif

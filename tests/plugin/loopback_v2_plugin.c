/* A version 2 bootstrap plug-in written from the public header alone, built as a shared
 * object: one rank; broadcast a no-op, allgather a copy. Given the params string "echo-args",
 * its init fails with a message that shows what the library passed it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hidet_nccl/bootstrap.h"

static hidet_nccl_status_t lb_init(const void *params, const hidet_nccl_bootstrap_init_args_t *args, void **state,
                                   char *msg, size_t n) {
    if (params != NULL && strcmp(params, "echo-args") == 0) {
        snprintf(msg, n, "echo: size %zu, timeout %.1f s, rank %d of %d, local rank %d of %d, hints from %s",
                 args->size, args->timeout_s, args->rank, args->nranks, args->local_rank, args->local_size,
                 args->hint_source);
        return HIDET_NCCL_ERROR_BOOTSTRAP;
    }
    *state = NULL;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t lb_rank_size(void *state, int *rank, int *size, char *msg, size_t n) {
    (void)state, (void)msg, (void)n;
    *rank = 0;
    *size = 1;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t lb_local_rank(void *state, int *local_rank, int *local_size, char *msg, size_t n) {
    (void)state, (void)msg, (void)n;
    *local_rank = 0;
    *local_size = 1;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t lb_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                        double timeout_s, char *msg, size_t n) {
    (void)state, (void)buf, (void)bytes, (void)root, (void)tag, (void)timeout_s, (void)msg, (void)n;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t lb_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                        double timeout_s, char *msg, size_t n) {
    (void)state, (void)tag, (void)timeout_s, (void)msg, (void)n;
    memmove(recv, send, bytes);
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t lb_finalize(void *state, char *msg, size_t n) {
    (void)state, (void)msg, (void)n;
    return HIDET_NCCL_SUCCESS;
}

__attribute__((visibility("default"))) const hidet_nccl_bootstrap_v2_t hidet_nccl_bootstrap_v2 = {
    .name = "loopback2",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = lb_init,
    .rank_size = lb_rank_size,
    .local_rank = lb_local_rank,
    .broadcast = lb_broadcast,
    .allgather = lb_allgather,
    .finalize = lb_finalize,
};

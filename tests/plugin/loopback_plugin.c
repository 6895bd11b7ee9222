/* A version 1 bootstrap plug-in as a user wrote one before version 2, built as a shared
 * object: one rank, the broadcast a no-op. It exports the v1 symbol, which the library still
 * loads (through its adapter). */
#include <stdlib.h>

#include "hidet_nccl/bootstrap.h"

typedef struct {
    int broadcasts;
} loopback_t;

static hidet_nccl_status_t lb_init(const void *params, void **state, char *msg, size_t n) {
    (void)params, (void)msg, (void)n;
    *state = calloc(1, sizeof(loopback_t));
    return *state ? HIDET_NCCL_SUCCESS : HIDET_NCCL_ERROR_SYSTEM;
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
    (void)buf, (void)bytes, (void)root, (void)tag, (void)timeout_s, (void)msg, (void)n;
    ((loopback_t *)state)->broadcasts++;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t lb_finalize(void *state, char *msg, size_t n) {
    (void)msg, (void)n;
    free(state);
    return HIDET_NCCL_SUCCESS;
}

__attribute__((visibility("default"))) const hidet_nccl_bootstrap_v1_t hidet_nccl_bootstrap_v1 = {
    .name = "loopback",
    .api_version = 1, /* HIDET_NCCL_BOOTSTRAP_API_VERSION was 1 when this was written */
    .init = lb_init,
    .rank_size = lb_rank_size,
    .local_rank = lb_local_rank,
    .broadcast = lb_broadcast,
    .allgather = NULL,
    .finalize = lb_finalize,
};

/* Version 1 bootstrap plug-ins seen as the newest version (without recovery), as NCCL adapts its older net plug-ins:
 * init without args, the plug-in's own sequence numbers, and an allgather made of one
 * broadcast from each rank in turn when the plug-in has none. */
#include <stdlib.h>
#include <string.h>

#include "core/boot/bootstrap_v1_int.h"
#include "core/base/kit.h"

typedef struct {
    const hidet_nccl_bootstrap_v1_t *v1;
    void *inner;
    uint64_t next_tag; /* every rank makes the same calls, so the counters agree */
} adapted_t;

static hidet_nccl_status_t a_init(const void *params, const hidet_nccl_bootstrap_init_args_t *args, void **state,
                                  char *msg, size_t msg_bytes) {
    (void)args; /* a v1 plug-in knows no deadline and takes no hints */
    const hn_v1_params_t *p = params;
    adapted_t *a = calloc(1, sizeof *a);
    if (a == NULL) return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    a->v1 = p->v1;
    hidet_nccl_status_t st = a->v1->init(p->params, &a->inner, msg, msg_bytes);
    if (st != HIDET_NCCL_SUCCESS) {
        free(a);
        return st;
    }
    *state = a;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t a_rank_size(void *state, int *rank, int *size, char *msg, size_t msg_bytes) {
    adapted_t *a = state;
    return a->v1->rank_size(a->inner, rank, size, msg, msg_bytes);
}

static hidet_nccl_status_t a_local_rank(void *state, int *local_rank, int *local_size, char *msg, size_t msg_bytes) {
    adapted_t *a = state;
    return a->v1->local_rank(a->inner, local_rank, local_size, msg, msg_bytes);
}

static hidet_nccl_status_t a_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag, double timeout_s,
                                       char *msg, size_t msg_bytes) {
    (void)tag;
    adapted_t *a = state;
    return a->v1->broadcast(a->inner, buf, bytes, root, a->next_tag++, timeout_s, msg, msg_bytes);
}

static hidet_nccl_status_t a_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                       double timeout_s, char *msg, size_t msg_bytes) {
    (void)tag;
    adapted_t *a = state;
    if (a->v1->allgather != NULL)
        return a->v1->allgather(a->inner, send, recv, bytes, a->next_tag++, timeout_s, msg, msg_bytes);
    int rank, size;
    hidet_nccl_status_t st = a->v1->rank_size(a->inner, &rank, &size, msg, msg_bytes);
    if (st != HIDET_NCCL_SUCCESS) return st;
    double start = hidet_nccl__now();
    for (int root = 0; root < size && st == HIDET_NCCL_SUCCESS; root++) {
        unsigned char *slot = (unsigned char *)recv + (size_t)root * bytes;
        if (root == rank) memmove(slot, send, bytes);
        double left = timeout_s - (hidet_nccl__now() - start);
        st = a->v1->broadcast(a->inner, slot, bytes, root, a->next_tag++, left > 0 ? left : 1e-3, msg, msg_bytes);
    }
    return st;
}

static hidet_nccl_status_t a_finalize(void *state, char *msg, size_t msg_bytes) {
    adapted_t *a = state;
    hidet_nccl_status_t st = a->v1->finalize(a->inner, msg, msg_bytes);
    free(a);
    return st;
}

const hidet_nccl_bootstrap_t hidet_nccl__bootstrap_v1_adapter = {
    .name = "(a version 1 plug-in)",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = a_init,
    .rank_size = a_rank_size,
    .local_rank = a_local_rank,
    .broadcast = a_broadcast,
    .allgather = a_allgather,
    .finalize = a_finalize,
    .recover = NULL,
    .recover_unsupported = "it is a version 1 plug-in (recovery came with version 3)",
    .heal_unsupported = "it is a version 1 plug-in (healing came with version 4)",
};

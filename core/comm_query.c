/* Rank, size, device and ownership of a registered communicator. */
#include <stddef.h>
#include <string.h>

#include "core/error_int.h"
#include "core/nccl_loader_int.h"
#include "core/registry_int.h"

typedef ncclResult_t (*query_fn)(const ncclComm_t, int *);

static hidet_nccl_status_t query(const char *func, int comm_id, int *out, size_t offset, const char *call) {
    if (out == NULL) return hidet_nccl__fail(HIDET_NCCL_ERROR_INVALID_ARGUMENT, func, "output argument is NULL");
    ncclComm_t comm;
    HN_CHECK(hidet_nccl__registry_get(comm_id, &comm, NULL));
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    query_fn f;
    memcpy(&f, (const char *)n + offset, sizeof f);
    ncclResult_t r = f(comm, out);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(func, call, r, comm);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_comm_rank(int comm_id, int *rank) {
    HN_ENTER();
    return query(__func__, comm_id, rank, offsetof(hn_nccl_t, CommUserRank), "ncclCommUserRank");
}

hidet_nccl_status_t hidet_nccl_comm_size(int comm_id, int *size) {
    HN_ENTER();
    return query(__func__, comm_id, size, offsetof(hn_nccl_t, CommCount), "ncclCommCount");
}

hidet_nccl_status_t hidet_nccl_comm_device(int comm_id, int *device) {
    HN_ENTER();
    return query(__func__, comm_id, device, offsetof(hn_nccl_t, CommCuDevice), "ncclCommCuDevice");
}

hidet_nccl_status_t hidet_nccl_comm_is_owned(int comm_id, int *owned) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(owned);
    ncclComm_t comm;
    return hidet_nccl__registry_get(comm_id, &comm, owned);
}

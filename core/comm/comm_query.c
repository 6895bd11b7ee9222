/* Rank, size, device and ownership of a registered communicator. */
#include "core/base/status_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/comm/registry_int.h"

typedef enum { QUERY_RANK, QUERY_SIZE, QUERY_DEVICE } query_t;

static hidet_nccl_status_t query(const char *func, int comm_id, int *out, query_t what) {
    if (out == NULL) return hidet_nccl__fail(HIDET_NCCL_ERROR_INVALID_ARGUMENT, func, "output argument is NULL");
    hn_slot_t slot; /* a failed communicator still answers */
    HN_CHECK(hidet_nccl__registry_get(comm_id, 1, &slot));
    ncclComm_t comm = slot.comm;
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    ncclResult_t r = what == QUERY_RANK   ? n->CommUserRank(comm, out)
                     : what == QUERY_SIZE ? n->CommCount(comm, out)
                                          : n->CommCuDevice(comm, out);
    static const char *const calls[] = {"ncclCommUserRank", "ncclCommCount", "ncclCommCuDevice"};
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(func, calls[what], r, comm);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_comm_rank(int comm_id, int *rank) {
    HN_ENTER();
    return query(__func__, comm_id, rank, QUERY_RANK);
}

hidet_nccl_status_t hidet_nccl_comm_size(int comm_id, int *size) {
    HN_ENTER();
    return query(__func__, comm_id, size, QUERY_SIZE);
}

hidet_nccl_status_t hidet_nccl_comm_device(int comm_id, int *device) {
    HN_ENTER();
    return query(__func__, comm_id, device, QUERY_DEVICE);
}

hidet_nccl_status_t hidet_nccl_comm_is_owned(int comm_id, int *owned) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(owned);
    hn_slot_t slot;
    HN_CHECK(hidet_nccl__registry_get(comm_id, 1, &slot));
    *owned = slot.owned;
    return HIDET_NCCL_SUCCESS;
}

/* A recording stand-in for libnccl.so.2, for CPU tests of what the library hands NCCL and for
 * collective_overhead_bench (the library's host cost with no NCCL work behind it): every
 * collective call is logged (function, buffers, count, type, op, root or peer, group depth)
 * and does nothing else. Communicators are fake_comm_t made by the caller. Built twice: as NCCL
 * 2.28.9 with everything, and with -DFAKE_OLD as NCCL 2.10.3, without ncclAlltoAll,
 * ncclGather, ncclScatter and the scaled-sum ops. FAKE_NCCL_FAIL=<function> makes that
 * function fail with ncclInvalidArgument. FAKE_NCCL_IN_PROGRESS=1 makes ncclGroupEnd answer
 * ncclInProgress, as with non-blocking communicators, and logs each ncclCommGetAsyncError (with
 * its communicator: what was awaited; each answers ncclSuccess). Read the log with
 * fake_nccl_log(). */
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "tools/support/fake_nccl.h"

static fake_call_t g_log[FAKE_LOG_MAX];
static int g_count, g_depth;
#ifndef FAKE_OLD
static int g_ops; /* scaled sums made */
#endif

const fake_call_t *fake_nccl_log(int *n, int *group_depth) {
    *n = g_count;
    *group_depth = g_depth;
    return g_log;
}

void fake_nccl_clear(void) { g_count = 0; }

static ncclResult_t record(const char *fn, const void *send, void *recv, size_t count, ncclDataType_t type, int op,
                           int rank, ncclComm_t comm) {
    const char *fail = getenv("FAKE_NCCL_FAIL");
    if (g_count < FAKE_LOG_MAX) {
        fake_call_t *c = &g_log[g_count++];
        memset(c, 0, sizeof *c);
        strncpy(c->fn, fn, sizeof c->fn - 1);
        c->send = send;
        c->recv = recv;
        c->count = count;
        c->type = (int)type;
        c->op = op;
        c->rank = rank;
        c->comm = comm;
        c->depth = g_depth;
    }
    return fail != NULL && strcmp(fail, fn) == 0 ? ncclInvalidArgument : ncclSuccess;
}

ncclResult_t ncclGetVersion(int *version) {
#ifdef FAKE_OLD
    *version = 21003;
#else
    *version = 22809;
#endif
    return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 7, sizeof *id);
    return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    (void)comm, (void)nranks, (void)id, (void)rank;
    return ncclInvalidUsage; /* the tests make their communicators themselves */
}
#ifndef FAKE_OLD
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config) {
    (void)config;
    return ncclCommInitRank(comm, nranks, id, rank);
}
#endif
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return record("ncclCommDestroy", NULL, NULL, 0, 0, -1, -1, comm); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return record("ncclCommAbort", NULL, NULL, 0, 0, -1, -1, comm); }
static int g_queries; /* ncclCommCount and ncclCommUserRank calls */

int fake_nccl_rank_queries(void) { return g_queries; }

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    g_queries++;
    *count = ((const fake_comm_t *)(const void *)comm)->nranks;
    return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
    (void)comm;
    *device = 0;
    return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    g_queries++;
    *rank = ((const fake_comm_t *)(const void *)comm)->rank;
    return ncclSuccess;
}
static int in_progress(void) {
    const char *v = getenv("FAKE_NCCL_IN_PROGRESS");
    return v != NULL && strcmp(v, "1") == 0;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async_error) {
    *async_error = ncclSuccess;
    if (in_progress()) return record("ncclCommGetAsyncError", NULL, NULL, 0, 0, -1, -1, comm);
    return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t result) { return result == ncclSuccess ? "no error" : "fake failure"; }
ncclResult_t ncclGroupStart(void) {
    g_depth++;
    return record("ncclGroupStart", NULL, NULL, 0, 0, -1, -1, NULL);
}
ncclResult_t ncclGroupEnd(void) {
    g_depth--;
    ncclResult_t r = record("ncclGroupEnd", NULL, NULL, 0, 0, -1, -1, NULL);
    return r == ncclSuccess && in_progress() ? ncclInProgress : r;
}
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
    (void)stream;
    return record("ncclAllReduce", s, r, n, t, (int)op, -1, comm);
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t stream) {
    (void)stream;
    return record("ncclBroadcast", s, r, n, t, -1, root, comm);
}
ncclResult_t ncclReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream) {
    (void)stream;
    return record("ncclReduce", s, r, n, t, (int)op, root, comm);
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    return record("ncclAllGather", s, r, n, t, -1, -1, comm);
}
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
    (void)stream;
    return record("ncclReduceScatter", s, r, n, t, (int)op, -1, comm);
}
ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    return record("ncclSend", s, NULL, n, t, -1, peer, comm);
}
ncclResult_t ncclRecv(void *r, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    return record("ncclRecv", NULL, r, n, t, -1, peer, comm);
}
#ifndef FAKE_OLD
ncclResult_t ncclAlltoAll(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    return record("ncclAlltoAll", s, r, n, t, -1, -1, comm);
}
ncclResult_t ncclGather(const void *s, void *r, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                        cudaStream_t stream) {
    (void)stream;
    return record("ncclGather", s, r, n, t, -1, root, comm);
}
ncclResult_t ncclScatter(const void *s, void *r, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                         cudaStream_t stream) {
    (void)stream;
    return record("ncclScatter", s, r, n, t, -1, root, comm);
}
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t t, ncclScalarResidence_t where,
                                      ncclComm_t comm) {
    *op = (ncclRedOp_t)(ncclNumOps + g_ops++);
    ncclResult_t r = record("ncclRedOpCreatePreMulSum", scalar, NULL, (size_t)where, t, (int)*op, -1, comm);
    size_t bytes = t == ncclFloat64 || t == ncclInt64 || t == ncclUint64                 ? 8
                   : t == ncclFloat32 || t == ncclInt32 || t == ncclUint32               ? 4
                   : t == ncclFloat16 || t == ncclBfloat16                              ? 2
                                                                                        : 1;
    if (where == ncclScalarHostImmediate && g_count > 0) memcpy(g_log[g_count - 1].scalar, scalar, bytes); /* read now */
    return r;
}
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
    return record("ncclRedOpDestroy", NULL, NULL, 0, 0, (int)op, -1, comm);
}
#endif

#ifndef FAKE_OLD
/* A shrink gives a communicator of the ranks left (from a small pool); count is the number
 * excluded, op the flags. A revoke is logged. */
ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int n, ncclComm_t *newcomm, ncclConfig_t *config,
                            int flags) {
    static fake_comm_t made[64];
    static int used;
    (void)config;
    const fake_comm_t *parent = (const fake_comm_t *)(const void *)comm;
    int below = 0;
    for (int i = 0; i < n; i++) below += exclude[i] < parent->rank;
    ncclResult_t r = record("ncclCommShrink", NULL, NULL, (size_t)n, 0, flags, -1, comm);
    if (r != ncclSuccess || used == 64) return r != ncclSuccess ? r : ncclSystemError;
    made[used] = (fake_comm_t){parent->nranks - n, parent->rank - below};
    *newcomm = (ncclComm_t)(void *)&made[used++];
    return ncclSuccess;
}
ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags) {
    return record("ncclCommRevoke", NULL, NULL, 0, 0, flags, -1, comm);
}
/* Library memory: host memory aligned as NCCL's windows want (never touched by a GPU here). */
ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
    ncclResult_t r = record("ncclMemAlloc", NULL, NULL, size, 0, -1, -1, NULL);
    if (r != ncclSuccess) return r;
    *ptr = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    return *ptr != NULL ? ncclSuccess : ncclSystemError;
}
ncclResult_t ncclMemFree(void *ptr) {
    ncclResult_t r = record("ncclMemFree", ptr, NULL, 0, 0, -1, -1, NULL);
    free(ptr);
    return r;
}
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
    *handle = buff;
    return record("ncclCommRegister", buff, NULL, size, 0, -1, -1, comm);
}
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) {
    return record("ncclCommDeregister", handle, NULL, 0, 0, -1, -1, comm);
}
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags) {
    *win = (ncclWindow_t)buff;
    return record("ncclCommWindowRegister", buff, NULL, size, 0, flags, -1, comm);
}
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
    return record("ncclCommWindowDeregister", (void *)win, NULL, 0, 0, -1, -1, comm);
}
#endif

/* The functions of the NCCL the library loaded, for the raw comparisons of the benchmark and the GPU tests. */
#include "tools/support/raw_nccl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "hidet_nccl/hidet_nccl.h"

/* The loaded copy: by its soname (how the loader registered it), else by the file the library
 * names (its label after the path dropped), else the program itself (a static NCCL). */
static void *loaded_handle(void) {
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL) return h;
    const char *path = NULL;
    if (hidet_nccl_library_path(&path) == HIDET_NCCL_SUCCESS) {
        char file[4096];
        snprintf(file, sizeof file, "%s", path);
        char *label = strstr(file, " (");
        if (label != NULL) *label = '\0';
        h = dlopen(file, RTLD_NOW | RTLD_NOLOAD);
        if (h != NULL) return h;
    }
    return RTLD_DEFAULT;
}

int hn_raw_nccl(hn_raw_nccl_t *out, char *why, size_t why_bytes) {
    if (hidet_nccl_load() != HIDET_NCCL_SUCCESS) {
        snprintf(why, why_bytes, "%s", hidet_nccl_last_error());
        return -1;
    }
    void *h = loaded_handle();
    static const char *const names[] = {
        "ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy", "ncclCommGetAsyncError",
        "ncclAllReduce",  "ncclGetErrorString", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
        "ncclReduce",     "ncclSend",        "ncclRecv",         "ncclGroupStart",  "ncclGroupEnd"};
    void **slots[] = {(void **)&out->GetVersion,     (void **)&out->GetUniqueId,       (void **)&out->CommInitRank,
                      (void **)&out->CommDestroy,    (void **)&out->CommGetAsyncError, (void **)&out->AllReduce,
                      (void **)&out->GetErrorString, (void **)&out->AllGather,         (void **)&out->ReduceScatter,
                      (void **)&out->Broadcast,      (void **)&out->Reduce,            (void **)&out->Send,
                      (void **)&out->Recv,           (void **)&out->GroupStart,        (void **)&out->GroupEnd};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *slots[i] = dlsym(h, names[i]);
        if (*slots[i] == NULL) {
            snprintf(why, why_bytes, "the loaded NCCL has no %s", names[i]);
            return -1;
        }
    }
    *(void **)&out->CommInitRankConfig = dlsym(h, "ncclCommInitRankConfig"); /* optional: NULL when absent */
    *(void **)&out->AlltoAll = dlsym(h, "ncclAlltoAll");
    *(void **)&out->Gather = dlsym(h, "ncclGather");
    *(void **)&out->Scatter = dlsym(h, "ncclScatter");
    int mine = 0, theirs = 0;
    hidet_nccl_nccl_version(&theirs);
    out->GetVersion(&mine);
    if (mine != theirs && !(mine < 10000 && theirs >= 10000)) {
        snprintf(why, why_bytes, "found NCCL %d, but the library loaded %d", mine, theirs);
        return -1;
    }
    return 0;
}

/* ncclGroupEnd after the calls of a group, whatever they returned (a group left open would
 * swallow the next call): the first failure. */
static ncclResult_t group_end(const hn_raw_nccl_t *n, ncclResult_t r) {
    ncclResult_t end = n->GroupEnd();
    return r != ncclSuccess ? r : end;
}

ncclResult_t hn_raw_all_to_all(const hn_raw_nccl_t *n, int grouped, const void *send, void *recv, size_t count,
                               ncclDataType_t type, size_t block_bytes, ncclComm_t comm, int nranks,
                               cudaStream_t stream) {
    if (!grouped && n->AlltoAll != NULL) return n->AlltoAll(send, recv, count, type, comm, stream);
    ncclResult_t r = n->GroupStart();
    if (r != ncclSuccess) return r;
    for (int j = 0; r == ncclSuccess && j < nranks; j++) {
        r = n->Send((const char *)send + (size_t)j * block_bytes, count, type, j, comm, stream);
        if (r == ncclSuccess) r = n->Recv((char *)recv + (size_t)j * block_bytes, count, type, j, comm, stream);
    }
    return group_end(n, r);
}

ncclResult_t hn_raw_gather_scatter(const hn_raw_nccl_t *n, int grouped, int to_root, const void *send, void *recv,
                                   size_t count, ncclDataType_t type, size_t block_bytes, int root, ncclComm_t comm,
                                   int rank, int nranks, cudaStream_t stream) {
    ncclResult_t (*native)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) =
        to_root ? n->Gather : n->Scatter;
    if (!grouped && native != NULL) return native(send, recv, count, type, root, comm, stream);
    const char *blocks = to_root ? (const char *)recv : (const char *)send; /* the root's nranks blocks */
    const char *own = to_root ? (const char *)send : (const char *)recv;
    int is_root = rank == root, in_place = is_root && own == blocks + (size_t)root * block_bytes;
    ncclResult_t r = n->GroupStart();
    if (r != ncclSuccess) return r;
    if (!in_place)
        r = to_root ? n->Send(own, count, type, root, comm, stream)
                    : n->Recv((void *)own, count, type, root, comm, stream);
    for (int j = 0; is_root && r == ncclSuccess && j < nranks; j++) {
        if (j == root && in_place) continue;
        const char *block = blocks + (size_t)j * block_bytes;
        r = to_root ? n->Recv((void *)block, count, type, j, comm, stream)
                    : n->Send(block, count, type, j, comm, stream);
    }
    return group_end(n, r);
}

ncclResult_t hn_raw_send_recv(const hn_raw_nccl_t *n, const void *send, void *recv, size_t count, ncclDataType_t type,
                              int next, int prev, ncclComm_t comm, cudaStream_t stream) {
    ncclResult_t r = n->GroupStart();
    if (r != ncclSuccess) return r;
    r = n->Send(send, count, type, next, comm, stream);
    if (r == ncclSuccess) r = n->Recv(recv, count, type, prev, comm, stream);
    return group_end(n, r);
}

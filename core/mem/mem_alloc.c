/* hidet_nccl_mem_alloc / hidet_nccl_mem_free: device memory from ncclMemAlloc (cuMem-backed,
 * what NCCL's windows need), tracked so that a free of anything else, of registered memory
 * or of memory a pending collective uses is refused. */
#include <stdio.h>

#include "core/nccl/cuda_int.h"
#include "core/base/status_int.h"
#include "core/base/log_int.h"
#include "core/mem/mem_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"
#include "core/comm/registry_int.h"

hidet_nccl_status_t hidet_nccl_mem_alloc(int comm_id, size_t bytes, void **ptr) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(ptr);
    *ptr = NULL;
    if (bytes == 0) return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bytes is 0; ask for at least one byte");
    ncclComm_t comm;
    HN_CHECK(hidet_nccl__registry_lookup(comm_id, &comm, NULL, NULL));
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    HN_CHECK(hidet_nccl__needs(n, (const void *)n->MemAlloc, 21900, "hidet_nccl_mem_alloc", "ncclMemAlloc"));
    int device;
    ncclResult_t r = n->CommCuDevice(comm, &device);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclCommCuDevice", r, comm);
    void *p = NULL;
    int old = hidet_nccl__device_use(device);
    r = n->MemAlloc(&p, bytes);
    if (r != ncclSuccess) {
        hidet_nccl__device_back(old, device);
        char call[96];
        snprintf(call, sizeof call, "ncclMemAlloc of %zu bytes on GPU %d", bytes, device);
        return hidet_nccl__nccl_fail(__func__, call, r, NULL);
    }
    hidet_nccl__mem_keep();
    hidet_nccl__mem_lock();
    hn_alloc_t *a = hidet_nccl__mem_add_alloc(&(hn_alloc_t){p, bytes, device, NULL, 0});
    hidet_nccl__mem_unlock();
    if (a == NULL) n->MemFree(p);
    hidet_nccl__device_back(old, device);
    if (a == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of host memory for the table of library memory");
    HN_TRACE("mem_alloc: %zu bytes at %p on GPU %d", bytes, p, device);
    *ptr = p;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_mem_free(void *ptr) {
    HN_ENTER();
    if (ptr == NULL) return HIDET_NCCL_SUCCESS; /* as free(NULL) */
    hidet_nccl__mem_lock();
    hn_alloc_t *a = hidet_nccl__mem_find_alloc(ptr);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (a == NULL) {
        hn_alloc_t *in = hidet_nccl__mem_alloc_containing(ptr);
        st = in != NULL ? HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                                  "%p points %zu bytes into library memory [%p, +%zu bytes); pass the pointer "
                                  "hidet_nccl_mem_alloc returned",
                                  ptr, (size_t)((char *)ptr - in->base), (void *)in->base, in->bytes)
                        : HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                                  "%p is not memory from hidet_nccl_mem_alloc (or it was freed already); nothing "
                                  "was freed",
                                  ptr);
    } else {
        hn_reg_t *r = hidet_nccl__mem_reg_overlapping(-1, a->base, a->bytes);
        if (r != NULL)
            st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                         "library memory %p is registered (handle %d on communicator id %d): hidet_nccl_deregister "
                         "it first; nothing was freed",
                         ptr, r->handle, r->comm_id);
        else
            st = hidet_nccl__mem_idle(a->used, a->last_stream, "library memory");
    }
    if (st != HIDET_NCCL_SUCCESS) {
        hidet_nccl__mem_unlock();
        return st;
    }
    hn_alloc_t gone = *a;
    hidet_nccl__mem_remove_alloc(a);
    hidet_nccl__mem_unlock();
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    int old = hidet_nccl__device_use(gone.device);
    ncclResult_t r = n->MemFree(gone.base);
    hidet_nccl__device_back(old, gone.device);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclMemFree", r, NULL);
    return HIDET_NCCL_SUCCESS;
}

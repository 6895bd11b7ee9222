/* What goes with a communicator: its registrations undone, its siblings destroyed and its own
 * kernels' workspace let go of before it is (or, when it is aborted, forgotten and aborted with
 * it, the kernels told to stop waiting); at finalize, everything of library
 * memory. The communicator layer runs these through the dropper given it here when library
 * memory first keeps something. */
#include "core/comm/comm_destroy_int.h"
#include "core/nccl/cuda_int.h"
#include "core/base/status_int.h"
#include "core/base/log_int.h"
#include "core/mem/mem_int.h"
#include "core/mem/mem_own_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/comm/registry_int.h"

/* Aborts a sibling (its peers may be gone: no finalize). */
static void abort_id(int id) {
    ncclComm_t comm;
    int owned;
    if (hidet_nccl__registry_kill(id, "aborted with the communicator it was made from", &comm, &owned, NULL) ==
            HIDET_NCCL_SUCCESS &&
        owned)
        hidet_nccl__nccl_loaded()->CommAbort(comm);
}

/* Takes out every registration of comm_id (all if comm_id < 0) and its views; undoes them
 * with the tables' lock released (windows are collective and may wait), or (abandon) only
 * forgets them and aborts the siblings: the communicator is being aborted. */
static void drop(int comm_id, int abandon) {
    hn_reg_t r;
    while (hidet_nccl__mem_take_reg(comm_id, &r))
        if (!abandon && hidet_nccl__mem_unregister(&r) != HIDET_NCCL_SUCCESS)
            HN_WARN("registration %d of communicator id %d: %s", r.handle, r.comm_id, hidet_nccl__error_detail());
    hn_views_t v;
    while (hidet_nccl__mem_take_views(comm_id, &v)) {
        hidet_nccl__own_release(v.own, abandon);
        for (int k = HN_VIEW_PLAIN + 1; k < HN_NUM_VIEWS; k++) {
            if (v.ids[k] < 0 || v.ids[k] == v.comm_id) continue;
            if (abandon)
                abort_id(v.ids[k]);
            else if (hidet_nccl__destroy_id(v.ids[k]) != HIDET_NCCL_SUCCESS)
                HN_WARN("sibling %d of communicator id %d: %s", v.ids[k], v.comm_id, hidet_nccl__error_detail());
        }
    }
}

static void drop_all(void) {
    drop(-1, 0);
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    int freed = 0;
    hn_alloc_t a;
    while (hidet_nccl__mem_take_alloc(&a)) {
        int previous = hidet_nccl__device_use(a.device);
        if (n != NULL && n->MemFree != NULL && n->MemFree(a.base) == ncclSuccess) freed++;
        hidet_nccl__device_back(previous, a.device);
    }
    hidet_nccl__own_finalize();
    hidet_nccl__mem_free_tables();
    if (freed > 0) HN_INFO("finalize: %d allocations of library memory freed", freed);
}

/* A communicator failed or killed: its own kernels stop waiting for peers that may be gone. */
static void failed(int comm_id) {
    hidet_nccl__mem_lock();
    hn_views_t *v = hidet_nccl__mem_find_views(comm_id);
    if (v != NULL) hidet_nccl__own_abort(v->own);
    hidet_nccl__mem_unlock();
}

void hidet_nccl__mem_keep(void) {
    hidet_nccl__at_comm_drop(drop, drop_all);
    hidet_nccl__registry_on_fail(failed);
}

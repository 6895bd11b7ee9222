/* hidet_nccl_init: the zero-argument start of an application launched by hidet-nccl-run,
 * by Slurm with a rendezvous directory, or with HIDET_NCCL_BOOTSTRAP naming a plug-in. */
#include "core/bootstrap_int.h"
#include "core/error_int.h"

hidet_nccl_status_t hidet_nccl_init(int *comm_id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(comm_id);
    hidet_nccl_bootstrap_h bs;
    HN_CHECK(hidet_nccl_bootstrap_from_env(&bs));
    return hidet_nccl__comm_init_then_release(bs, NULL, comm_id);
}

/* Internal: NCCL's communicator knobs from the init options (core/nccl/nccl_config.c). */
#ifndef HIDET_NCCL_CORE_NCCL_NCCL_CONFIG_INT_H_
#define HIDET_NCCL_CORE_NCCL_NCCL_CONFIG_INT_H_

#include <nccl.h>

#include "core/nccl/nccl_loader_int.h"
#include "hidet_nccl/bootstrap.h"

/* What of the init options reaches ncclConfig_t, with the communicator name copied (the
 * init may run on a helper thread that outlives the caller's strings). */
typedef struct {
    int cta_policy, min_ctas, max_ctas, traffic_class, split_share;
    int has_name;
    char comm_name[128];
} hn_knobs_t;

/* The knobs of opt, checked (range, and a loaded NCCL that has each knob set, else the
 * version it needs) before anything reaches NCCL. */
hidet_nccl_status_t hidet_nccl__knobs_from(const hn_nccl_t *n, const hidet_nccl_init_options_t *opt, hn_knobs_t *k);
/* No knob set: NCCL's defaults. */
void hidet_nccl__knobs_none(hn_knobs_t *k);
/* The knobs that are set, written into config. */
void hidet_nccl__knobs_apply(const hn_knobs_t *k, ncclConfig_t *config);

#endif

/* NCCL's communicator knobs (ncclConfig_t) from hidet_nccl_init_options_t: checked against
 * their ranges and against the loaded NCCL's version, before anything reaches NCCL. */
#include <stdio.h>
#include <string.h>

#include "core/base/status_int.h"
#include "core/nccl/nccl_config_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"

void hidet_nccl__knobs_none(hn_knobs_t *k) {
    memset(k, 0, sizeof *k);
    k->cta_policy = k->min_ctas = k->max_ctas = k->traffic_class = k->split_share = HIDET_NCCL_UNSET;
}

/* One knob: unset, or within [lo, hi] on an NCCL of at least `version` (with config init). */
static hidet_nccl_status_t knob(const hn_nccl_t *n, int value, int lo, int hi, int version, const char *name) {
    if (value == HIDET_NCCL_UNSET) return HIDET_NCCL_SUCCESS;
    if (value < lo || value > hi)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "options->%s is %d; it takes %d to %d (or HIDET_NCCL_UNSET)",
                       name, value, lo, hi);
    char what[96];
    snprintf(what, sizeof what, "options->%s", name);
    return hidet_nccl__needs(n, (const void *)n->CommInitRankConfig, version, what, "ncclConfig_t");
}

hidet_nccl_status_t hidet_nccl__knobs_from(const hn_nccl_t *n, const hidet_nccl_init_options_t *opt, hn_knobs_t *k) {
    hidet_nccl__knobs_none(k);
    /* CTA policies: DEFAULT and EFFICIENCY came with 2.27, ZERO with 2.28. */
    HN_CHECK(knob(n, opt->cta_policy, 0, 2, opt->cta_policy == 2 ? 22800 : 22700, "cta_policy"));
    HN_CHECK(knob(n, opt->min_ctas, 1, 64, 21700, "min_ctas"));
    HN_CHECK(knob(n, opt->max_ctas, 1, 64, 21700, "max_ctas"));
    if (opt->min_ctas != HIDET_NCCL_UNSET && opt->max_ctas != HIDET_NCCL_UNSET && opt->min_ctas > opt->max_ctas)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "options->min_ctas %d is above options->max_ctas %d",
                       opt->min_ctas, opt->max_ctas);
    HN_CHECK(knob(n, opt->traffic_class, 0, 0x7fffffff, 22400, "traffic_class"));
    HN_CHECK(knob(n, opt->split_share, 0, 1, 21800, "split_share"));
    if (opt->comm_name != NULL) {
        size_t len = strnlen(opt->comm_name, sizeof k->comm_name);
        if (len == 0 || len >= sizeof k->comm_name)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                           "options->comm_name is %s; it takes 1 to %zu bytes (or NULL)", len ? "too long" : "empty",
                           sizeof k->comm_name - 1);
        HN_CHECK(
            hidet_nccl__needs(n, (const void *)n->CommInitRankConfig, 22400, "options->comm_name", "ncclConfig_t"));
        memcpy(k->comm_name, opt->comm_name, len + 1);
        k->has_name = 1;
    }
    k->cta_policy = opt->cta_policy;
    k->min_ctas = opt->min_ctas;
    k->max_ctas = opt->max_ctas;
    k->traffic_class = opt->traffic_class;
    k->split_share = opt->split_share;
    return HIDET_NCCL_SUCCESS;
}

void hidet_nccl__knobs_apply(const hn_knobs_t *k, ncclConfig_t *config) {
    if (k->cta_policy != HIDET_NCCL_UNSET) config->CTAPolicy = k->cta_policy;
    if (k->min_ctas != HIDET_NCCL_UNSET) config->minCTAs = k->min_ctas;
    if (k->max_ctas != HIDET_NCCL_UNSET) config->maxCTAs = k->max_ctas;
    if (k->traffic_class != HIDET_NCCL_UNSET) config->trafficClass = k->traffic_class;
    if (k->split_share != HIDET_NCCL_UNSET) config->splitShare = k->split_share;
    if (k->has_name) config->commName = k->comm_name;
}

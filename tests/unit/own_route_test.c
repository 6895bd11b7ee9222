/* Which all_reduce calls the own kernels take (core/coll/own_all_reduce.c), on the CPU: every
 * reason a call the route named them for goes to NCCL instead, the dtypes and ops they reduce
 * (through the library's dtype table, as all_reduce plans them), and the view an OWN
 * registration picks by size and ranks. Nothing of the buffers enters (every rank decides
 * alike). The kernels themselves run in tests/gpu/own_gpu_test.c. */
#include <stdio.h>
#include <string.h>

#include "core/coll/own_all_reduce_int.h"
#include "core/mem/mem_own_int.h"
#include "tests/cunit_runner.h"

static hn_own_t g_own = {.nranks = 2};

/* A call routed to the own one-shot kernel. */
static hn_coll_t routed(void) {
    hn_coll_t c;
    memset(&c, 0, sizeof c);
    c.name = "all_reduce";
    c.view = HN_VIEW_OWN1;
    c.own = &g_own;
    return c;
}

/* own_takes for c, dtype, op and bytes: 1, or 0 with why holding `reason`. */
static int takes(const hn_coll_t *c, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, size_t bytes, const char *reason) {
    hidet_nccl_reduction_t red;
    CU_ASSERT_EQUAL_FATAL(hidet_nccl_reduction(dtype, op, &red), HIDET_NCCL_SUCCESS);
    char why[320] = "x";
    int t = hidet_nccl__own_takes(c, dtype, &red, bytes, why, sizeof why);
    if (t) CU_ASSERT_STRING_EQUAL(why, "");
    if (!t && reason != NULL && strstr(why, reason) == NULL) {
        fprintf(stderr, "want \"%s\" in \"%s\"\n", reason, why);
        CU_FAIL("reason");
    }
    return t;
}

static void test_dtypes_and_ops(void) {
    hn_coll_t c = routed();
    static const hidet_nccl_dtype_t every_op[] = {HIDET_NCCL_FLOAT32, HIDET_NCCL_TFLOAT32, HIDET_NCCL_FLOAT16,
                                                  HIDET_NCCL_BFLOAT16, HIDET_NCCL_INT32, HIDET_NCCL_UINT32};
    for (size_t i = 0; i < sizeof every_op / sizeof every_op[0]; i++)
        for (int op = 0; op < HIDET_NCCL_NUM_OPS; op++) CU_ASSERT_TRUE(takes(&c, every_op[i], op, 4096, NULL));
    CU_ASSERT_TRUE(takes(&c, HIDET_NCCL_COMPLEX64, HIDET_NCCL_SUM, 4096, NULL)); /* two float32 */
    CU_ASSERT_TRUE(takes(&c, HIDET_NCCL_COMPLEX64, HIDET_NCCL_AVG, 4096, NULL));
    CU_ASSERT_TRUE(takes(&c, HIDET_NCCL_FLOAT8_E4M3, HIDET_NCCL_MAX, 4096, NULL));
    CU_ASSERT_TRUE(takes(&c, HIDET_NCCL_FLOAT8_E5M2, HIDET_NCCL_MIN, 4096, NULL));
    CU_ASSERT_FALSE(takes(&c, HIDET_NCCL_FLOAT8_E4M3, HIDET_NCCL_SUM, 4096,
                          "they reduce float8_e4m3 by max and min only (exact); a sum would round"));
    CU_ASSERT_FALSE(takes(&c, HIDET_NCCL_FLOAT8_E5M2, HIDET_NCCL_AVG, 4096, "a avg would round"));
    CU_ASSERT_FALSE(takes(&c, HIDET_NCCL_FLOAT64, HIDET_NCCL_SUM, 4096, "they do not reduce float64 with sum"));
    CU_ASSERT_FALSE(takes(&c, HIDET_NCCL_INT64, HIDET_NCCL_MAX, 4096, "they do not reduce int64 with max"));
    CU_ASSERT_FALSE(takes(&c, HIDET_NCCL_UINT8, HIDET_NCCL_MIN, 4096, "they do not reduce uint8"));
}

static void test_reasons(void) {
    hn_coll_t c = routed();
    CU_ASSERT_TRUE(takes(&c, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, HN_OWN_STAGE_BYTES, NULL));
    CU_ASSERT_FALSE(takes(&c, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, HN_OWN_STAGE_BYTES + 4,
                          "4194308 bytes are more than their staging (4194304 bytes)"));
    char why[320] = "x";
    hidet_nccl_reduction_t red;
    hidet_nccl_reduction(HIDET_NCCL_FLOAT64, HIDET_NCCL_SUM, &red);
    CU_ASSERT_FALSE(hidet_nccl__own_takes(&c, HIDET_NCCL_FLOAT64, &red, 64, NULL, 0)); /* the reason only when asked */
    CU_ASSERT_FALSE(hidet_nccl__own_takes(&c, HIDET_NCCL_FLOAT64, &red, 64, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "float64"));
    c = routed();
    c.own = NULL;
    c.own_why = "rank 1 is on another host than rank 0";
    CU_ASSERT_FALSE(takes(&c, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 64,
                          "they cannot run on this communicator: rank 1 is on another host than rank 0"));
    c = routed();
    c.view = HN_VIEW_WINDOW; /* the route did not name them: no reason */
    CU_ASSERT_FALSE(takes(&c, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 64, ""));
    c.view = HN_VIEW_PLAIN;
    CU_ASSERT_FALSE(takes(&c, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 64, ""));
}

static void test_own_registration_view(void) {
    hn_own_t two = {.nranks = 2}, four = {.nranks = 4};
    CU_ASSERT_EQUAL(hidet_nccl__own_view(&two, 8), HN_VIEW_OWN1);
    CU_ASSERT_EQUAL(hidet_nccl__own_view(&two, HN_OWN_STAGE_BYTES), HN_VIEW_OWN1); /* two ranks: one-shot moves no more */
    CU_ASSERT_EQUAL(hidet_nccl__own_view(&four, HN_OWN_ONE_SHOT_MAX), HN_VIEW_OWN1);
    CU_ASSERT_EQUAL(hidet_nccl__own_view(&four, HN_OWN_ONE_SHOT_MAX + 1), HN_VIEW_OWN2);
}

int main(void) {
    static const hn_test_t tests[] = {
        {"the dtypes and ops the own kernels reduce", test_dtypes_and_ops},
        {"why a call the route named them for goes to NCCL", test_reasons},
        {"the view an OWN registration picks", test_own_registration_view},
        {NULL, NULL},
    };
    return hn_run_tests("own_route", tests);
}

/* Every bad argument of every public function that takes arguments returns the right status
 * with a message, before NCCL is touched. all_reduce is checked on a fake borrowed
 * communicator: reaching NCCL with it would crash, so a crash is a failed check. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"

#define FAKE ((ncclComm_t)(uintptr_t)0x1000)

static int g_have_gpu;
static float g_buf[16];

static int setup_fake(void) {
    ncclComm_t comms[1] = {FAKE};
    return hidet_nccl_set_comms(1, comms) == HIDET_NCCL_SUCCESS ? 0 : 1;
}

static void test_all_reduce_bad_comm(void) {
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(-1, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_COMM, "-1");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(1, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_COMM, "1 was never given");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(INT32_MIN, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_COMM, "negative");
}

static void test_all_reduce_bad_dtype_and_op(void) {
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, 4, (hidet_nccl_dtype_t)-1, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "dtype -1");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, 4, HIDET_NCCL_NUM_DTYPES, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "dtype 18");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, (hidet_nccl_op_t)5, 0),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "op 5");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, (hidet_nccl_op_t)-7, 0),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "op -7");
}

static void test_all_reduce_refused_pairs(void) {
    for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++) {
        for (int op = 0; op < HIDET_NCCL_NUM_OPS; op++) {
            hidet_nccl_reduction_t r;
            if (hidet_nccl_reduction((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, &r) == HIDET_NCCL_SUCCESS) continue;
            const char *name;
            hidet_nccl_dtype_name((hidet_nccl_dtype_t)d, &name);
            /* Refused even with count 0: a wrong dtype is an error whatever the count. */
            HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, 4, (hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, 0),
                             HIDET_NCCL_ERROR_UNSUPPORTED, name);
            HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, 0, (hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, 0),
                             HIDET_NCCL_ERROR_UNSUPPORTED, name);
        }
    }
}

static void test_all_reduce_buffers_and_counts(void) {
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, NULL, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "sendbuff is NULL with count 4");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, NULL, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "recvbuff is NULL");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, SIZE_MAX, HIDET_NCCL_FLOAT64, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "overflows");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, SIZE_MAX / 8 + 1, HIDET_NCCL_COMPLEX64, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "overflows");
    /* count 0: a successful no-op, NULL buffers allowed, NCCL (and the fake) untouched. */
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, NULL, NULL, 0, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, 0, HIDET_NCCL_COMPLEX128, HIDET_NCCL_AVG, 0),
                     HIDET_NCCL_SUCCESS, NULL);
}

static void test_comm_init_rank_arguments(void) {
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    int cid;
    HN_ASSERT_STATUS(hidet_nccl_comm_init_rank(2, NULL, 0, &cid), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "'id'");
    HN_ASSERT_STATUS(hidet_nccl_comm_init_rank(2, &id, 0, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comm_id");
    HN_ASSERT_STATUS(hidet_nccl_comm_init_rank(0, &id, 0, &cid), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "nranks 0");
    HN_ASSERT_STATUS(hidet_nccl_comm_init_rank(-4, &id, 0, &cid), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "nranks -4");
    HN_ASSERT_STATUS(hidet_nccl_comm_init_rank(2, &id, 2, &cid), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank 2 is not in 0 .. 1");
    HN_ASSERT_STATUS(hidet_nccl_comm_init_rank(2, &id, -1, &cid), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank -1");
    setenv("HIDET_NCCL_TIMEOUT", "soon", 1);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_comm_init_rank(2, &id, 0, &cid), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "HIDET_NCCL_TIMEOUT='soon'");
    setenv("HIDET_NCCL_TIMEOUT", "-3", 1);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_comm_init_rank(2, &id, 0, &cid), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "'-3'");
    unsetenv("HIDET_NCCL_TIMEOUT");
    hidet_nccl_settings_reload();
    if (!g_have_gpu) /* on a CPU machine the call gets as far as the GPU and says there is none */
        HN_ASSERT_STATUS(hidet_nccl_comm_init_rank(1, &id, 0, &cid), HIDET_NCCL_ERROR_CUDA, "CUDA");
}

static void test_comm_init_all_arguments(void) {
    int ids[4];
    int dup[3] = {0, 1, 0};
    int neg[2] = {0, -1};
    HN_ASSERT_STATUS(hidet_nccl_comm_init_all(2, NULL, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comm_ids");
    HN_ASSERT_STATUS(hidet_nccl_comm_init_all(0, NULL, ids), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "ndev 0");
    HN_ASSERT_STATUS(hidet_nccl_comm_init_all(3, dup, ids), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "device 0 is given for rank 0 and rank 2");
    HN_ASSERT_STATUS(hidet_nccl_comm_init_all(2, neg, ids), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "device -1");
    if (!g_have_gpu) HN_ASSERT_STATUS(hidet_nccl_comm_init_all(1, NULL, ids), HIDET_NCCL_ERROR_CUDA, "cudaGetDeviceCount");
}

static void test_split_arguments(void) {
    int nid;
    HN_ASSERT_STATUS(hidet_nccl_comm_split(0, 0, 0, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "new_id");
    HN_ASSERT_STATUS(hidet_nccl_comm_split(0, -5, 0, &nid), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "color -5");
    HN_ASSERT_STATUS(hidet_nccl_comm_split(3, 0, 0, &nid), HIDET_NCCL_ERROR_INVALID_COMM, "3 was never given");
    HN_ASSERT_STATUS(hidet_nccl_comm_split(-1, 0, 0, &nid), HIDET_NCCL_ERROR_INVALID_COMM, "negative");
}

static void test_query_arguments(void) {
    int x;
    HN_ASSERT_STATUS(hidet_nccl_comm_rank(0, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "NULL");
    HN_ASSERT_STATUS(hidet_nccl_comm_size(0, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "NULL");
    HN_ASSERT_STATUS(hidet_nccl_comm_device(0, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "NULL");
    HN_ASSERT_STATUS(hidet_nccl_comm_is_owned(0, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "owned");
    HN_ASSERT_STATUS(hidet_nccl_comm_rank(7, &x), HIDET_NCCL_ERROR_INVALID_COMM, "7");
    HN_ASSERT_STATUS(hidet_nccl_comm_size(-7, &x), HIDET_NCCL_ERROR_INVALID_COMM, "-7");
    HN_ASSERT_STATUS(hidet_nccl_comm_device(8, &x), HIDET_NCCL_ERROR_INVALID_COMM, "8");
    HN_ASSERT_STATUS(hidet_nccl_comm_is_owned(9, &x), HIDET_NCCL_ERROR_INVALID_COMM, "9");
}

static void test_group_end_without_start(void) {
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_ERROR_INVALID_USAGE, "without a matching group_start");
    /* A balanced empty group is fine. */
    HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_ERROR_INVALID_USAGE, "group_end");
}

static void test_after_finalize(void) {
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(0, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0),
                     HIDET_NCCL_ERROR_INVALID_COMM, "never given");
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(0), HIDET_NCCL_ERROR_INVALID_COMM, "never given");
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

int main(void) {
    int n = 0;
    g_have_gpu = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    if (setup_fake() != 0) return 1;
    static const hn_test_t tests[] = {
        {"all_reduce: bad communicator ids", test_all_reduce_bad_comm},
        {"all_reduce: bad dtype and op", test_all_reduce_bad_dtype_and_op},
        {"all_reduce: refused dtype x op pairs", test_all_reduce_refused_pairs},
        {"all_reduce: buffers and counts", test_all_reduce_buffers_and_counts},
        {"comm_init_rank arguments", test_comm_init_rank_arguments},
        {"comm_init_all arguments", test_comm_init_all_arguments},
        {"comm_split arguments", test_split_arguments},
        {"rank/size/device/is_owned arguments", test_query_arguments},
        {"group_end without group_start", test_group_end_without_start},
        {"calls after finalize", test_after_finalize},
        {NULL, NULL},
    };
    return hn_run_tests("arguments", tests);
}

/* GPU test: one process drives every visible GPU (at least 2) with one communicator per GPU
 * (hidet_nccl_comm_init_all). Every dtype x op: refused pairs are refused; supported ones are
 * checked exactly, out of place and in place, for counts 1, odd and large. Then a split
 * into singletons, NOCOLOR, destroy rules and finalize. Without 2 GPUs it fails. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"
#include "tools/support/reference.h"

#define MAX_DEV 16
#define LARGE ((size_t)(1u << 22) + 3)

static int g_ndev;
static int g_ids[MAX_DEV];
static void *g_send[MAX_DEV], *g_recv[MAX_DEV];
static cudaStream_t g_stream[MAX_DEV];
static void *g_host_in, *g_host_out, *g_host_want;
static size_t g_bytes;

#define CUDA_OK(call)                                                                         \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
        CU_ASSERT_EQUAL_FATAL(e_, cudaSuccess);                                               \
    } while (0)

static void test_init_all(void) {
    HN_ASSERT_STATUS(hidet_nccl_comm_init_all(g_ndev, NULL, g_ids), HIDET_NCCL_SUCCESS, NULL);
    for (int r = 0; r < g_ndev; r++) {
        int rank = -1, size = -1, dev = -1, owned = -1;
        HN_ASSERT_STATUS(hidet_nccl_comm_rank(g_ids[r], &rank), HIDET_NCCL_SUCCESS, NULL);
        HN_ASSERT_STATUS(hidet_nccl_comm_size(g_ids[r], &size), HIDET_NCCL_SUCCESS, NULL);
        HN_ASSERT_STATUS(hidet_nccl_comm_device(g_ids[r], &dev), HIDET_NCCL_SUCCESS, NULL);
        HN_ASSERT_STATUS(hidet_nccl_comm_is_owned(g_ids[r], &owned), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_EQUAL(rank, r);
        CU_ASSERT_EQUAL(size, g_ndev);
        CU_ASSERT_EQUAL(dev, r);
        CU_ASSERT_EQUAL(owned, 1);
    }
}

/* One all_reduce over every rank, checked exactly on every rank. Returns 1 if right. */
static int check_one(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, size_t count, int in_place) {
    hidet_nccl_reduction_t red;
    hidet_nccl_reduction(dtype, op, &red);
    size_t n = count * red.count_multiplier;
    size_t bytes = n * hn_ref_elem_size(red.nccl_dtype);
    for (int r = 0; r < g_ndev; r++) {
        hn_ref_fill(dtype, op, r, n, g_host_in);
        CUDA_OK(cudaSetDevice(r));
        CUDA_OK(cudaMemcpy(in_place ? g_recv[r] : g_send[r], g_host_in, bytes, cudaMemcpyHostToDevice));
        if (!in_place) CUDA_OK(cudaMemset(g_recv[r], 0xA5, bytes));
    }
    HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
    for (int r = 0; r < g_ndev; r++)
        HN_ASSERT_STATUS(hidet_nccl_all_reduce(g_ids[r], in_place ? g_recv[r] : g_send[r], g_recv[r], count, dtype,
                                               op, g_stream[r]),
                         HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
    hn_ref_expected(dtype, op, g_ndev, n, g_host_want);
    int ok = 1;
    for (int r = 0; r < g_ndev; r++) {
        CUDA_OK(cudaSetDevice(r));
        CUDA_OK(cudaStreamSynchronize(g_stream[r]));
        CUDA_OK(cudaMemcpy(g_host_out, g_recv[r], bytes, cudaMemcpyDeviceToHost));
        size_t bad = hn_ref_first_difference(dtype, op, g_host_out, g_host_want, n);
        if (bad != (size_t)-1) {
            const char *dn, *on;
            hidet_nccl_dtype_name(dtype, &dn);
            hidet_nccl_op_name(op, &on);
            fprintf(stderr, "WRONG: %s %s count %zu %s rank %d: first difference at NCCL element %zu\n", dn, on, count,
                    in_place ? "in place" : "out of place", r, bad);
            ok = 0;
        }
    }
    return ok;
}

static void test_every_dtype_and_op(void) {
    const size_t counts[] = {1, 1001, LARGE};
    int checked = 0, refused = 0, wrong = 0;
    for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++) {
        for (int op = 0; op < HIDET_NCCL_NUM_OPS; op++) {
            hidet_nccl_reduction_t red;
            if (hidet_nccl_reduction((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, &red) != HIDET_NCCL_SUCCESS) {
                for (int r = 0; r < g_ndev; r++)
                    HN_ASSERT_STATUS(hidet_nccl_all_reduce(g_ids[r], g_send[r], g_recv[r], 8, (hidet_nccl_dtype_t)d,
                                                           (hidet_nccl_op_t)op, g_stream[r]),
                                     HIDET_NCCL_ERROR_UNSUPPORTED, "not supported");
                refused++;
                continue;
            }
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                for (int in_place = 0; in_place < 2; in_place++) {
                    wrong += !check_one((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, counts[c], in_place);
                    checked++;
                }
        }
    }
    printf("all_reduce on %d GPUs: %d checks (dtype x op x count x placement), %d wrong; %d dtype x op pairs refused\n",
           g_ndev, checked, wrong, refused);
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(refused, 19); /* int16, uint16: 5 each; bool, complex64, complex128: 3 each */
}

static void test_split_into_singletons(void) {
    int sid[MAX_DEV];
    HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
    for (int r = 0; r < g_ndev; r++)
        HN_ASSERT_STATUS(hidet_nccl_comm_split(g_ids[r], r, 0, &sid[r]), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
    for (int r = 0; r < g_ndev; r++) {
        int size = -1, rank = -1;
        CU_ASSERT(sid[r] >= 0);
        HN_ASSERT_STATUS(hidet_nccl_comm_size(sid[r], &size), HIDET_NCCL_SUCCESS, NULL);
        HN_ASSERT_STATUS(hidet_nccl_comm_rank(sid[r], &rank), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_EQUAL(size, 1);
        CU_ASSERT_EQUAL(rank, 0);
        /* A singleton's sum is its own input. */
        float in[5] = {1, 2, 3, 4, 5 + (float)r}, out[5] = {0};
        CUDA_OK(cudaSetDevice(r));
        CUDA_OK(cudaMemcpy(g_send[r], in, sizeof in, cudaMemcpyHostToDevice));
        HN_ASSERT_STATUS(hidet_nccl_all_reduce(sid[r], g_send[r], g_recv[r], 5, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM,
                                               g_stream[r]),
                         HIDET_NCCL_SUCCESS, NULL);
        CUDA_OK(cudaStreamSynchronize(g_stream[r]));
        CUDA_OK(cudaMemcpy(out, g_recv[r], sizeof out, cudaMemcpyDeviceToHost));
        CU_ASSERT(memcmp(in, out, sizeof in) == 0);
    }
    for (int r = 0; r < g_ndev; r++) {
        HN_ASSERT_STATUS(hidet_nccl_comm_destroy(sid[r]), HIDET_NCCL_SUCCESS, NULL);
        HN_ASSERT_STATUS(hidet_nccl_comm_destroy(sid[r]), HIDET_NCCL_ERROR_INVALID_COMM, "destroyed");
        HN_ASSERT_STATUS(hidet_nccl_all_reduce(sid[r], g_send[r], g_recv[r], 5, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM,
                                               g_stream[r]),
                         HIDET_NCCL_ERROR_INVALID_COMM, "destroyed");
    }
}

static void test_split_nocolor(void) {
    int sid[MAX_DEV];
    HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
    for (int r = 0; r < g_ndev; r++)
        HN_ASSERT_STATUS(hidet_nccl_comm_split(g_ids[r], r == 0 ? HIDET_NCCL_SPLIT_NOCOLOR : 1, r, &sid[r]),
                         HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(sid[0], -1);
    for (int r = 1; r < g_ndev; r++) {
        int size = -1;
        HN_ASSERT_STATUS(hidet_nccl_comm_size(sid[r], &size), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_EQUAL(size, g_ndev - 1);
    }
}

static void test_finalize(void) {
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
    ncclComm_t c;
    HN_ASSERT_STATUS(hidet_nccl_get_comm(g_ids[0], &c), HIDET_NCCL_ERROR_INVALID_COMM, "never given");
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

int main(void) {
    if (cudaGetDeviceCount(&g_ndev) != cudaSuccess || g_ndev < 2) {
        fprintf(stderr, "FAIL: all_reduce_gpu_test needs at least 2 GPUs; this machine has %d. "
                        "GPU tests never pass by skipping.\n", g_ndev);
        return 1;
    }
    if (g_ndev > MAX_DEV) g_ndev = MAX_DEV;
    const char *path;
    int version;
    if (hidet_nccl_library_path(&path) != HIDET_NCCL_SUCCESS || hidet_nccl_nccl_version(&version) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "FAIL: %s\n", hidet_nccl_last_error());
        return 1;
    }
    printf("NCCL %d from %s; %d GPUs\n", version, path, g_ndev);
    g_bytes = LARGE * 16; /* the largest element (complex128) */
    for (int r = 0; r < g_ndev; r++) {
        if (cudaSetDevice(r) != cudaSuccess || cudaMalloc(&g_send[r], g_bytes) != cudaSuccess ||
            cudaMalloc(&g_recv[r], g_bytes) != cudaSuccess || cudaStreamCreate(&g_stream[r]) != cudaSuccess) {
            fprintf(stderr, "FAIL: CUDA setup on device %d\n", r);
            return 1;
        }
    }
    g_host_in = malloc(g_bytes);
    g_host_out = malloc(g_bytes);
    g_host_want = malloc(g_bytes);
    if (!g_host_in || !g_host_out || !g_host_want) return 1;
    static const hn_test_t tests[] = {
        {"init_all: one communicator per GPU", test_init_all},
        {"every dtype x op, exact", test_every_dtype_and_op},
        {"split into singletons", test_split_into_singletons},
        {"split with NOCOLOR", test_split_nocolor},
        {"finalize", test_finalize},
        {NULL, NULL},
    };
    return hn_run_tests("all_reduce_gpu", tests);
}

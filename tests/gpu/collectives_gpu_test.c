/* GPU test of the whole collective set, one process per rank through hidet_nccl_init (run by
 * hidet-nccl-run -n N, by mpirun, or as fake nodes sharing a GPU): every dtype moved byte for
 * byte by broadcast, all_gather, all_to_all, gather, scatter and a send/recv ring (out of
 * place and in place where there is one); reduce and reduce_scatter checked exactly against
 * the reference for every dtype x op they take; scaled sums from a host and a device scalar;
 * all_to_all, gather and scatter again as grouped send/recv (HIDET_NCCL_GROUPED_P2P=1); a
 * CUDA graph of collectives replayed with new inputs; the barrier. Prints "N checks, N wrong". */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tools/support/reference.h"

static int g_rank, g_n, g_id, g_checks, g_wrong, g_errors;
static cudaStream_t g_stream;

#define CALL(expr)                                                                                     \
    do {                                                                                               \
        if ((expr) != HIDET_NCCL_SUCCESS) {                                                            \
            g_errors++;                                                                                \
            fprintf(stderr, "rank %d: %s: %s\n", g_rank, #expr, hidet_nccl_last_error());              \
        }                                                                                              \
    } while (0)

/* Byte k of the element block `block` that rank `from` contributes: distinct per all three. */
static unsigned char pattern(int from, size_t block, size_t k) {
    return (unsigned char)(from * 131 + block * 29 + k * 7 + (k >> 8) * 3 + 1);
}

static void fill(unsigned char *host, int from, size_t block, size_t bytes) {
    for (size_t k = 0; k < bytes; k++) host[k] = pattern(from, block, k);
}

/* Compares device bytes with what rank `from` put in block `block`. */
static void expect(const void *dev, int from, size_t block, size_t bytes, const char *what) {
    unsigned char *got = malloc(bytes ? bytes : 1), *want = malloc(bytes ? bytes : 1);
    cudaStreamSynchronize(g_stream);
    cudaMemcpy(got, dev, bytes, cudaMemcpyDeviceToHost);
    fill(want, from, block, bytes);
    g_checks++;
    if (memcmp(got, want, bytes) != 0) {
        g_wrong++;
        if (g_wrong < 10) fprintf(stderr, "rank %d: %s: block %zu from rank %d wrong\n", g_rank, what, block, from);
    }
    free(got);
    free(want);
}

static void put(void *dev, int from, size_t block, size_t bytes) {
    unsigned char *h = malloc(bytes ? bytes : 1);
    fill(h, from, block, bytes);
    cudaMemcpy(dev, h, bytes, cudaMemcpyHostToDevice);
    free(h);
}

/* Data movement of dtype, count elements per block: every collective that moves. */
static void movement(hidet_nccl_dtype_t dtype, size_t count, char *send, char *recv) {
    size_t size;
    hidet_nccl_dtype_size(dtype, &size);
    size_t b = count * size;
    int root = g_n - 1, next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
    put(send, g_rank, 0, b); /* broadcast from the last rank */
    CALL(hidet_nccl_broadcast(g_id, send, recv, count, dtype, root, g_stream));
    expect(recv, root, 0, b, "broadcast");
    put(recv, g_rank, 0, b); /* in place */
    CALL(hidet_nccl_broadcast(g_id, recv, recv, count, dtype, root, g_stream));
    expect(recv, root, 0, b, "broadcast in place");
    put(send, g_rank, 0, b);
    CALL(hidet_nccl_all_gather(g_id, send, recv, count, dtype, g_stream));
    for (int r = 0; r < g_n; r++) expect(recv + (size_t)r * b, r, 0, b, "all_gather");
    put(recv + (size_t)g_rank * b, g_rank, 0, b); /* in place: own block already there */
    CALL(hidet_nccl_all_gather(g_id, recv + (size_t)g_rank * b, recv, count, dtype, g_stream));
    for (int r = 0; r < g_n; r++) expect(recv + (size_t)r * b, r, 0, b, "all_gather in place");
    for (int j = 0; j < g_n; j++) put(send + (size_t)j * b, g_rank, (size_t)j, b);
    CALL(hidet_nccl_all_to_all(g_id, send, recv, count, dtype, g_stream));
    for (int r = 0; r < g_n; r++) expect(recv + (size_t)r * b, r, (size_t)g_rank, b, "all_to_all");
    g_checks++; /* in place: refused in both forms (NCCL 2.28.9's in-place ncclAlltoAll was wrong over NET) */
    if (hidet_nccl_all_to_all(g_id, recv, recv, count, dtype, g_stream) != HIDET_NCCL_ERROR_INVALID_ARGUMENT) {
        g_wrong++;
        fprintf(stderr, "rank %d: all_to_all in place was not refused\n", g_rank);
    }
    put(send, g_rank, 0, b); /* gather to rank 0 */
    CALL(hidet_nccl_gather(g_id, send, recv, count, dtype, 0, g_stream));
    for (int r = 0; g_rank == 0 && r < g_n; r++) expect(recv + (size_t)r * b, r, 0, b, "gather");
    for (int j = 0; j < g_n; j++) put(send + (size_t)j * b, g_rank, (size_t)j, b); /* scatter from root */
    CALL(hidet_nccl_scatter(g_id, send, recv, count, dtype, root, g_stream));
    expect(recv, root, (size_t)g_rank, b, "scatter");
    put(send, g_rank, 0, b); /* a ring: to the next rank, from the previous */
    CALL(hidet_nccl_group_start());
    CALL(hidet_nccl_send(g_id, send, count, dtype, next, g_stream));
    CALL(hidet_nccl_recv(g_id, recv, count, dtype, prev, g_stream));
    CALL(hidet_nccl_group_end());
    expect(recv, prev, 0, b, "send/recv ring");
}

static int is_float(ncclDataType_t t) {
    return t == ncclFloat16 || t == ncclBfloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclFloat8e4m3 ||
           t == ncclFloat8e5m2;
}

/* Counts a reduction's check; a wrong one is named. */
static void reduction_checked(const char *what, int d, int o, size_t count, size_t first_difference) {
    g_checks++;
    if (first_difference == (size_t)-1) return;
    const char *dn = "?", *on = "?";
    hidet_nccl_dtype_name((hidet_nccl_dtype_t)d, &dn);
    hidet_nccl_op_name((hidet_nccl_op_t)o, &on);
    if (g_wrong++ < 10)
        fprintf(stderr, "rank %d: %s of %zu %s with %s: element %zu wrong\n", g_rank, what, count, dn, on,
                first_difference);
}

/* reduce to the last rank and reduce_scatter of every dtype x op they take, exactly. */
static void reductions(size_t count, char *send, char *recv, char *host, char *want) {
    int root = g_n - 1;
    for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++)
        for (int o = 0; o < HIDET_NCCL_NUM_OPS; o++) {
            hidet_nccl_reduction_t red;
            int version = 0;
            hidet_nccl_nccl_version(&version);
            if (hidet_nccl_reduction((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)o, &red) != HIDET_NCCL_SUCCESS ||
                red.min_nccl_version > version)
                continue;
            if (o == HIDET_NCCL_AVG && (g_n & (g_n - 1)) != 0 && is_float(red.nccl_dtype))
                continue; /* NCCL's float avg scales by 1/n: exact for a power-of-two n only */
            size_t es = hn_ref_elem_size(red.nccl_dtype), n = count * red.count_multiplier, all = n * (size_t)g_n;
            hn_ref_fill((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)o, g_rank, all, host);
            hn_ref_expected((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)o, g_n, all, want);
            cudaMemcpy(send, host, all * es, cudaMemcpyHostToDevice);
            CALL(hidet_nccl_reduce(g_id, send, recv, count, (hidet_nccl_dtype_t)d, (hidet_nccl_op_t)o, root, g_stream));
            cudaStreamSynchronize(g_stream);
            if (g_rank == root) {
                cudaMemcpy(host, recv, n * es, cudaMemcpyDeviceToHost);
                reduction_checked("reduce", d, o, count,
                                  hn_ref_first_difference((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)o, host, want, n));
            }
            hn_ref_fill((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)o, g_rank, all, host);
            cudaMemcpy(send, host, all * es, cudaMemcpyHostToDevice);
            CALL(hidet_nccl_reduce_scatter(g_id, send, recv, count, (hidet_nccl_dtype_t)d, (hidet_nccl_op_t)o,
                                           g_stream));
            cudaStreamSynchronize(g_stream);
            cudaMemcpy(host, recv, n * es, cudaMemcpyDeviceToHost);
            reduction_checked("reduce_scatter", d, o, count,
                              hn_ref_first_difference((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)o, host,
                                                      want + (size_t)g_rank * n * es, n));
        }
}

/* Scaled sums: x_r = 2 (r + 1), scalar 0.5 (host) and 0.25 (device): sum over r of (r + 1)
 * and of (r + 1) / 2, exact in float32 and float64. */
static void scaled_sums(size_t count, char *send, char *recv, float *dev_scalar) {
    float *h = malloc(count * sizeof *h), half = 0.5f, quarter = 0.25f;
    double expect_half = g_n * (g_n + 1) / 2.0, expect_quarter = expect_half / 2;
    for (size_t i = 0; i < count; i++) h[i] = 2.0f * (float)(g_rank + 1);
    cudaMemcpy(send, h, count * sizeof *h, cudaMemcpyHostToDevice);
    cudaMemcpy(dev_scalar, &quarter, sizeof quarter, cudaMemcpyHostToDevice);
    hidet_nccl_op_t on_host, on_device;
    CALL(hidet_nccl_op_premul_sum(g_id, HIDET_NCCL_FLOAT32, &half, 0, &on_host));
    CALL(hidet_nccl_op_premul_sum(g_id, HIDET_NCCL_FLOAT32, dev_scalar, 1, &on_device));
    const hidet_nccl_op_t ops[2] = {on_host, on_device};
    const double want[2] = {expect_half, expect_quarter};
    for (int k = 0; k < 2; k++) {
        CALL(hidet_nccl_all_reduce(g_id, send, recv, count, HIDET_NCCL_FLOAT32, ops[k], g_stream));
        cudaStreamSynchronize(g_stream);
        cudaMemcpy(h, recv, count * sizeof *h, cudaMemcpyDeviceToHost);
        size_t bad = count;
        for (size_t i = count; i-- > 0;)
            if (h[i] != (float)want[k]) bad = i;
        g_checks++;
        g_wrong += bad < count;
        if (bad < count)
            fprintf(stderr, "rank %d: scaled sum (scalar on the %s): element %zu of %zu is %g, expected %g\n", g_rank,
                    k ? "device" : "host", bad, count, h[bad], want[k]);
    }
    CALL(hidet_nccl_op_destroy(g_id, on_host));
    CALL(hidet_nccl_op_destroy(g_id, on_device));
    free(h);
}

/* A graph of an all_gather and a broadcast, replayed with new inputs. */
static void graph(size_t count, char *send, char *recv, char *recv2) {
    size_t b = count * 4;
    cudaGraph_t g;
    cudaGraphExec_t exec;
    cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal);
    CALL(hidet_nccl_all_gather(g_id, send, recv, count, HIDET_NCCL_FLOAT32, g_stream));
    CALL(hidet_nccl_broadcast(g_id, send, recv2, count, HIDET_NCCL_FLOAT32, 0, g_stream));
    CALL(hidet_nccl_barrier(g_id, g_stream));
    if (cudaStreamEndCapture(g_stream, &g) != cudaSuccess || cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) {
        g_errors++;
        return;
    }
    for (int replay = 0; replay < 3; replay++) {
        put(send, g_rank, (size_t)replay, b);
        cudaGraphLaunch(exec, g_stream);
        for (int r = 0; r < g_n; r++) expect(recv + (size_t)r * b, r, (size_t)replay, b, "graph all_gather");
        expect(recv2, 0, (size_t)replay, b, "graph broadcast");
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
}

int main(void) {
    if (hidet_nccl_init(&g_id) != HIDET_NCCL_SUCCESS || hidet_nccl_comm_rank(g_id, &g_rank) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_comm_size(g_id, &g_n) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "collectives_gpu_test: %s\n", hidet_nccl_last_error());
        return 1;
    }
    cudaStreamCreate(&g_stream);
    const size_t counts[] = {1, 1001, 65537};
    size_t most = 65537 * 16 * (size_t)g_n;
    char *send = NULL, *recv = NULL, *recv2 = NULL;
    float *dev_scalar = NULL;
    char *host = malloc(most), *want = malloc(most);
    if (cudaMalloc((void **)&send, most) != cudaSuccess || cudaMalloc((void **)&recv, most) != cudaSuccess ||
        cudaMalloc((void **)&recv2, most) != cudaSuccess || cudaMalloc((void **)&dev_scalar, 4) != cudaSuccess ||
        host == NULL || want == NULL) {
        fprintf(stderr, "collectives_gpu_test: out of memory\n");
        return 1;
    }
    for (int pass = 0; pass < 2; pass++) { /* native all_to_all/gather/scatter where NCCL has them, then grouped */
        if (pass == 1) {
            setenv("HIDET_NCCL_GROUPED_P2P", "1", 1);
            hidet_nccl_settings_reload();
        }
        for (size_t c = 0; c < 3; c++)
            for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++) movement((hidet_nccl_dtype_t)d, counts[c], send, recv);
        printf("rank %d: data movement, every dtype%s: %d checks so far, %d wrong, %d errors\n", g_rank,
               pass ? " (grouped send/recv)" : "", g_checks, g_wrong, g_errors);
    }
    for (size_t c = 0; c < 3; c++) reductions(counts[c], send, recv, host, want);
    scaled_sums(4097, send, recv, dev_scalar);
    graph(1001, send, recv, recv2);
    CALL(hidet_nccl_barrier(g_id, g_stream));
    CALL(hidet_nccl_comm_wait(g_id, g_stream, HIDET_NCCL_DEFAULT_TIMEOUT));
    printf("rank %d of %d: %d checks, %d wrong, %d errors\n", g_rank, g_n, g_checks, g_wrong, g_errors);
    int failed = g_wrong || g_errors || g_checks == 0;
    CALL(hidet_nccl_finalize());
    printf("rank %d: collectives_gpu_test %s\n", g_rank, failed ? "FAILED" : "OK");
    return failed;
}

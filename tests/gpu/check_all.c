#include "tests/gpu/check_all.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/support/reference.h"

/* The inputs and results for a count are the prefixes of those for the largest count, so
 * each dtype x op pair fills its host buffers once (pinned: 2^28 elements are gigabytes). */
hn_check_result_t hn_check_every_dtype_op(int comm_id, const size_t *counts, int ncounts) {
    hn_check_result_t res = {0, 0, 0, 0};
    int rank = -1, nranks = 0;
    if (hidet_nccl_comm_rank(comm_id, &rank) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_comm_size(comm_id, &nranks) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "check: %s\n", hidet_nccl_last_error());
        res.errors++;
        return res;
    }
    size_t max_count = 0;
    for (int c = 0; c < ncounts; c++) max_count = counts[c] > max_count ? counts[c] : max_count;
    size_t bytes = max_count * 16 + 16; /* complex128, and one element past the end */
    void *send = NULL, *recv = NULL, *in = NULL, *out = NULL, *want = NULL;
    cudaStream_t stream = NULL;
    if (cudaMallocHost(&in, bytes) != cudaSuccess || cudaMallocHost(&out, bytes) != cudaSuccess ||
        cudaMallocHost(&want, bytes) != cudaSuccess || cudaMalloc(&send, bytes) != cudaSuccess ||
        cudaMalloc(&recv, bytes) != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess) {
        fprintf(stderr, "check: cannot allocate %zu bytes\n", bytes);
        res.errors++;
        goto out;
    }
    for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++) {
        for (int op = 0; op < HIDET_NCCL_NUM_OPS; op++) {
            hidet_nccl_reduction_t red;
            if (hidet_nccl_reduction((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, &red) != HIDET_NCCL_SUCCESS) {
                if (hidet_nccl_all_reduce(comm_id, send, recv, 8, (hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, stream) ==
                    HIDET_NCCL_ERROR_UNSUPPORTED)
                    res.refused++;
                else
                    res.errors++;
                continue;
            }
            size_t elem = hn_ref_elem_size(red.nccl_dtype);
            hn_ref_fill((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, rank, max_count * red.count_multiplier, in);
            hn_ref_expected((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, nranks, max_count * red.count_multiplier,
                            want);
            for (int c = 0; c < ncounts; c++) {
                for (int in_place = 0; in_place < 2; in_place++) {
                    size_t n = counts[c] * red.count_multiplier;
                    size_t nb = n * elem;
                    cudaMemcpy(in_place ? recv : send, in, nb, cudaMemcpyHostToDevice);
                    if (!in_place) cudaMemset(recv, 0xA5, nb + elem); /* and one past: must stay */
                    hidet_nccl_status_t st = hidet_nccl_all_reduce(comm_id, in_place ? recv : send, recv, counts[c],
                                                                   (hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, stream);
                    if (st != HIDET_NCCL_SUCCESS || cudaStreamSynchronize(stream) != cudaSuccess) {
                        fprintf(stderr, "rank %d: %s\n", rank, hidet_nccl_last_error());
                        res.errors++;
                        continue;
                    }
                    cudaMemcpy(out, recv, nb + (in_place ? 0 : elem), cudaMemcpyDeviceToHost);
                    size_t bad = hn_ref_first_difference((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, out, want, n);
                    if (bad == (size_t)-1 && !in_place) {
                        static const unsigned char poison[16] = {0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5,
                                                                 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5};
                        if (memcmp((unsigned char *)out + nb, poison, elem) != 0) bad = n; /* wrote past count */
                    }
                    res.checked++;
                    if (bad != (size_t)-1) {
                        const char *dn, *on;
                        hidet_nccl_dtype_name((hidet_nccl_dtype_t)d, &dn);
                        hidet_nccl_op_name((hidet_nccl_op_t)op, &on);
                        fprintf(stderr, "WRONG rank %d: %s %s count %zu %s: first difference at element %zu\n", rank,
                                dn, on, counts[c], in_place ? "in place" : "out of place", bad);
                        res.wrong++;
                    }
                }
            }
        }
    }
out:
    cudaFree(send);
    cudaFree(recv);
    if (stream) cudaStreamDestroy(stream);
    cudaFreeHost(in);
    cudaFreeHost(out);
    cudaFreeHost(want);
    return res;
}

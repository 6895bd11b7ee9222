/* hello_all_reduce: find NCCL, make one communicator per visible GPU in this process, and
 * check a float32 sum. On a machine without a GPU it says so in one line and exits 0. */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "hidet_nccl/hidet_nccl.h"

#define CHECK(call)                                                                    \
    do {                                                                               \
        if ((call) != HIDET_NCCL_SUCCESS) {                                            \
            fprintf(stderr, "hello_all_reduce: %s\n", hidet_nccl_last_error());        \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main(void) {
    const char *path;
    int version, ngpu = 0;
    CHECK(hidet_nccl_library_path(&path));
    CHECK(hidet_nccl_nccl_version(&version));
    printf("NCCL %d.%d.%d loaded from %s\n", version / 10000, version / 100 % 100, version % 100, path);
    if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
        printf("No GPU is visible to this process: NCCL is ready, nothing to reduce here.\n");
        return 0;
    }
    enum { N = 1024, MAX_GPUS = 64 };
    int ids[MAX_GPUS];
    float *buf[MAX_GPUS];
    cudaStream_t stream[MAX_GPUS];
    if (ngpu > MAX_GPUS) ngpu = MAX_GPUS;
    CHECK(hidet_nccl_comm_init_all(ngpu, NULL, ids));
    static float host[N];
    for (int g = 0; g < ngpu; g++) {
        for (int i = 0; i < N; i++) host[i] = (float)(g + 1);
        cudaSetDevice(g);
        cudaStreamCreate(&stream[g]);
        cudaMalloc((void **)&buf[g], sizeof host);
        cudaMemcpy(buf[g], host, sizeof host, cudaMemcpyHostToDevice);
    }
    CHECK(hidet_nccl_group_start());
    for (int g = 0; g < ngpu; g++)
        CHECK(hidet_nccl_all_reduce(ids[g], buf[g], buf[g], N, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, stream[g]));
    CHECK(hidet_nccl_group_end());
    int wrong = 0;
    float want = (float)(ngpu * (ngpu + 1) / 2);
    for (int g = 0; g < ngpu; g++) {
        cudaSetDevice(g);
        cudaMemcpy(host, buf[g], sizeof host, cudaMemcpyDeviceToHost);
        for (int i = 0; i < N; i++) wrong += host[i] != want;
        cudaFree(buf[g]);
        cudaStreamDestroy(stream[g]);
    }
    CHECK(hidet_nccl_finalize());
    printf("all_reduce(sum, float32) over %d GPUs: %s (every element %.0f)\n", ngpu, wrong ? "WRONG" : "OK", want);
    return wrong ? 1 : 0;
}

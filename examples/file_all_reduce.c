/* hidet-nccl-run -n 2 ./file_all_reduce : no MPI; the launcher's shared-file bootstrap. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include <hidet_nccl/bootstrap.h>

#define CHECK(call)                                                        \
    do {                                                                   \
        if ((call) != HIDET_NCCL_SUCCESS) {                                \
            fprintf(stderr, "%s\n", hidet_nccl_last_error());              \
            return 1;                                                      \
        }                                                                  \
    } while (0)

int main(void) {
    int comm, rank, size;
    CHECK(hidet_nccl_init(&comm)); /* bootstrap from the environment: launcher or Slurm */
    CHECK(hidet_nccl_comm_rank(comm, &rank));
    CHECK(hidet_nccl_comm_size(comm, &size));

    enum { N = 1 << 20 };
    float *host = malloc(N * sizeof *host), *buf;
    for (int i = 0; i < N; i++) host[i] = (float)(rank + 1);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaMalloc((void **)&buf, N * sizeof *buf);
    cudaMemcpy(buf, host, N * sizeof *buf, cudaMemcpyHostToDevice);
    CHECK(hidet_nccl_all_reduce(comm, buf, buf, N, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, stream));
    cudaStreamSynchronize(stream);
    cudaMemcpy(host, buf, N * sizeof *buf, cudaMemcpyDeviceToHost);

    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += host[i] != (float)(size * (size + 1) / 2);
    printf("rank %d of %d: sum over ranks %s\n", rank, size, wrong ? "WRONG" : "OK");
    cudaFree(buf);
    free(host);
    CHECK(hidet_nccl_finalize());
    return wrong != 0;
}

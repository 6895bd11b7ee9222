/* mpirun -np 2 ./mpi_all_reduce : one communicator over MPI_COMM_WORLD, a checked sum. */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <hidet_nccl/bootstrap_mpi.h>

#define CHECK(call)                                                        \
    do {                                                                   \
        if ((call) != HIDET_NCCL_SUCCESS) {                                \
            fprintf(stderr, "%s\n", hidet_nccl_last_error());              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                  \
        }                                                                  \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int comm, rank, size;
    CHECK(hidet_nccl_mpi_init(&comm)); /* picks this rank's GPU, shares the id, inits NCCL */
    CHECK(hidet_nccl_comm_rank(comm, &rank));
    CHECK(hidet_nccl_comm_size(comm, &size));

    enum { N = 1 << 20 };
    double *host = malloc(N * sizeof *host), *buf;
    for (int i = 0; i < N; i++) host[i] = rank + 1;
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaMalloc((void **)&buf, N * sizeof *buf);
    cudaMemcpy(buf, host, N * sizeof *buf, cudaMemcpyHostToDevice);
    CHECK(hidet_nccl_all_reduce(comm, buf, buf, N, HIDET_NCCL_FLOAT64, HIDET_NCCL_SUM, stream));
    cudaStreamSynchronize(stream);
    cudaMemcpy(host, buf, N * sizeof *buf, cudaMemcpyDeviceToHost);

    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += host[i] != size * (size + 1) / 2.0;
    printf("rank %d of %d: sum over ranks %s\n", rank, size, wrong ? "WRONG" : "OK");
    cudaFree(buf);
    free(host);
    CHECK(hidet_nccl_finalize());
    MPI_Finalize();
    return wrong != 0;
}

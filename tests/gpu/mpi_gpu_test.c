/* GPU test through the MPI bootstrap (mpirun -np 2 or more, one GPU per rank): time from
 * program start to a ready communicator; every dtype x op checked exactly over
 * MPI_COMM_WORLD; then over a sub-communicator (even and odd ranks) and over a split. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

#include "hidet_nccl/bootstrap_mpi.h"
#include "tests/gpu/check_all.h"
#include "tests/gpu/now.h"

static int report(const char *what, int rank, hn_check_result_t r) {
    int bad = r.wrong + r.errors, all_bad = 0, checked = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&r.checked, &checked, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d checks over all ranks, %d wrong or failed; %d dtype x op pairs refused\n", what, checked,
               all_bad, r.refused);
    return all_bad != 0 || r.refused != 19;
}

int main(int argc, char **argv) {
    double start = hn_now();
    MPI_Init(&argc, &argv);
    double after_mpi = hn_now();
    int world_rank, world_size, id = -1, failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (hidet_nccl_mpi_init(&id) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "rank %d: %s\n", world_rank, hidet_nccl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double ready = hn_now();
    if (world_rank == 0)
        printf("MPI bootstrap, %d ranks: program start to ready communicator %.3f s (MPI_Init %.3f s, "
               "hidet_nccl_mpi_init %.3f s)\n",
               world_size, ready - start, after_mpi - start, ready - after_mpi);
    const size_t counts[] = {1, 1001, (1u << 22) + 3};
    failures += report("MPI_COMM_WORLD", world_rank, hn_check_every_dtype_op(id, counts, 3));

    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    int sub = -1;
    if (hidet_nccl_mpi_comm_init(half, NULL, &sub) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "rank %d: %s\n", world_rank, hidet_nccl_last_error());
        failures++;
    } else {
        failures += report("MPI sub-communicator (even/odd ranks)", world_rank, hn_check_every_dtype_op(sub, counts, 2));
    }
    int split = -1;
    if (hidet_nccl_comm_split(id, world_rank % 2, world_rank, &split) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "rank %d: %s\n", world_rank, hidet_nccl_last_error());
        failures++;
    } else {
        failures += report("hidet_nccl_comm_split (even/odd ranks)", world_rank, hn_check_every_dtype_op(split, counts, 2));
    }
    MPI_Comm_free(&half);
    if (hidet_nccl_finalize() != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "rank %d: %s\n", world_rank, hidet_nccl_last_error());
        failures++;
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) printf("mpi_gpu_test: %s\n", total ? "FAILED" : "OK");
    MPI_Finalize();
    return total ? 1 : 0;
}

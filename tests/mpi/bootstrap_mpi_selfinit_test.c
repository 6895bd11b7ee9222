/* The MPI bootstrap when the application never calls MPI_Init: the library initializes MPI,
 * the broadcast works, and hidet_nccl_finalize finalizes the MPI it initialized. */
#include <mpi.h>
#include <string.h>

#include "hidet_nccl/bootstrap_mpi.h"
#include "tests/mpi/mpi_check.h"

int main(void) {
    int initialized = 1, finalized = 1;
    MPI_Initialized(&initialized);
    CHECK(!initialized);
    hidet_nccl_bootstrap_h bs;
    CHECK(hidet_nccl_bootstrap_mpi(MPI_COMM_WORLD, &bs) == HIDET_NCCL_SUCCESS);
    MPI_Initialized(&initialized);
    CHECK(initialized);
    int rank = -1, size = -1;
    CHECK(hidet_nccl_bootstrap_rank(bs, &rank, &size) == HIDET_NCCL_SUCCESS);
    g_rank = rank;
    ncclUniqueId id, root_copy;
    memset(&id, 0, sizeof id);
    if (rank == 0) CHECK(hidet_nccl_get_unique_id(&id) == HIDET_NCCL_SUCCESS);
    CHECK(hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, 0, 30) == HIDET_NCCL_SUCCESS);
    root_copy = id;
    MPI_Bcast(&root_copy, sizeof root_copy, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK(memcmp(&root_copy, &id, sizeof id) == 0);
    int failures = 0, checks = 0;
    MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS);
    MPI_Finalized(&finalized);
    CHECK(!finalized); /* not before hidet_nccl_finalize */
    CHECK(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS);
    MPI_Finalized(&finalized);
    CHECK(finalized);
    if (rank == 0) printf("%d ranks: %d passed, %d failed\n", size, checks + 4 - failures - g_failures, failures + g_failures);
    return failures || g_failures ? 1 : 0;
}

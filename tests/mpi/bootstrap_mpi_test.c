/* The MPI bootstrap when the application owns MPI (run under mpirun -np 1, 2, 4, 8):
 * every rank gets the root's real ncclGetUniqueId bytes; a sub-communicator gets its own
 * fresh id; local ranks are right; bad communicators are refused; MPI stays initialized. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "hidet_nccl/bootstrap_mpi.h"
#include "tests/mpi/mpi_check.h"

/* Broadcasts a fresh id from bs's root through bs; checks every rank of comm got the same
 * bytes as the root (compared through plain MPI). */
static void check_broadcast(hidet_nccl_bootstrap_h bs, MPI_Comm comm, ncclUniqueId *got) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    memset(got, 0, sizeof *got);
    if (rank == 0) CHECK(hidet_nccl_get_unique_id(got) == HIDET_NCCL_SUCCESS);
    CHECK(hidet_nccl_bootstrap_broadcast(bs, got, sizeof *got, 0, 30) == HIDET_NCCL_SUCCESS);
    ncclUniqueId root_copy = *got;
    MPI_Bcast(&root_copy, sizeof root_copy, MPI_BYTE, 0, comm);
    CHECK(memcmp(&root_copy, got, sizeof root_copy) == 0);
    static const ncclUniqueId zero;
    CHECK(memcmp(got, &zero, sizeof zero) != 0);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world_rank, world_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    g_rank = world_rank;

    hidet_nccl_bootstrap_h bs;
    CHECK(hidet_nccl_bootstrap_mpi(MPI_COMM_WORLD, &bs) == HIDET_NCCL_SUCCESS);
    int rank = -1, size = -1, local = -1, local_size = -1;
    const char *name = NULL;
    CHECK(hidet_nccl_bootstrap_name(bs, &name) == HIDET_NCCL_SUCCESS && strcmp(name, "mpi") == 0);
    CHECK(hidet_nccl_bootstrap_rank(bs, &rank, &size) == HIDET_NCCL_SUCCESS);
    CHECK(rank == world_rank && size == world_size);
    CHECK(hidet_nccl_bootstrap_local_rank(bs, &local, &local_size) == HIDET_NCCL_SUCCESS);
    const char *ompi_local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    const char *ompi_local_size = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (ompi_local) CHECK(local == atoi(ompi_local));
    if (ompi_local_size) CHECK(local_size == atoi(ompi_local_size));
    ncclUniqueId first, second;
    check_broadcast(bs, MPI_COMM_WORLD, &first);
    check_broadcast(bs, MPI_COMM_WORLD, &second);
    CHECK(memcmp(&first, &second, sizeof first) != 0); /* every round a fresh id */

    /* No recovery over MPI (without ULFM a dead rank ends the job): refused at once, saying why,
     * and the bootstrap still works. */
    int kept[64], n_kept = -1;
    double t0 = MPI_Wtime();
    CHECK(hidet_nccl_bootstrap_recover(bs, 30, kept, &n_kept) == HIDET_NCCL_ERROR_UNSUPPORTED);
    CHECK(strstr(hidet_nccl_last_error(), "ULFM") != NULL && strstr(hidet_nccl_last_error(), "hidet-nccl-run") != NULL);
    CHECK(MPI_Wtime() - t0 < 1.0 && n_kept == -1);
    ncclUniqueId after;
    check_broadcast(bs, MPI_COMM_WORLD, &after);

    /* A sub-communicator: even and odd ranks. Each half gets its own fresh id. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    hidet_nccl_bootstrap_h sub;
    CHECK(hidet_nccl_bootstrap_mpi(half, &sub) == HIDET_NCCL_SUCCESS);
    int sub_rank = -1, sub_size = -1, half_rank, half_size;
    MPI_Comm_rank(half, &half_rank);
    MPI_Comm_size(half, &half_size);
    CHECK(hidet_nccl_bootstrap_rank(sub, &sub_rank, &sub_size) == HIDET_NCCL_SUCCESS);
    CHECK(sub_rank == half_rank && sub_size == half_size);
    ncclUniqueId sub_id;
    check_broadcast(sub, half, &sub_id);
    CHECK(memcmp(&sub_id, &first, sizeof first) != 0 && memcmp(&sub_id, &second, sizeof first) != 0);
    int partner = world_rank ^ 1; /* in the other half */
    if (partner < world_size) {    /* the two halves' ids differ */
        ncclUniqueId other;
        MPI_Sendrecv(&sub_id, sizeof sub_id, MPI_BYTE, partner, 7, &other, sizeof other, MPI_BYTE, partner, 7,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(memcmp(&other, &sub_id, sizeof sub_id) != 0);
    }
    CHECK(hidet_nccl_bootstrap_destroy(sub) == HIDET_NCCL_SUCCESS);

    /* Bad communicators: MPI_COMM_NULL, and a freed one (MPI_Comm_free sets it to NULL). */
    hidet_nccl_bootstrap_h bad = NULL;
    CHECK(hidet_nccl_bootstrap_mpi(MPI_COMM_NULL, &bad) == HIDET_NCCL_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(hidet_nccl_last_error(), "MPI_COMM_NULL") != NULL);
    CHECK(bad == NULL);
    MPI_Comm_free(&half);
    CHECK(hidet_nccl_bootstrap_mpi(half, &bad) == HIDET_NCCL_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(hidet_nccl_last_error(), "freed") != NULL);
    int id;
    CHECK(hidet_nccl_mpi_comm_init(MPI_COMM_NULL, NULL, &id) == HIDET_NCCL_ERROR_INVALID_ARGUMENT);

    /* The library leaves an MPI it did not initialize alone. */
    CHECK(hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS);
    CHECK(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS);
    int initialized = 0, finalized = 1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    CHECK(initialized && !finalized);

    int failures = 0, checks = 0;
    MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) printf("%d ranks: %d passed, %d failed\n", world_size, checks - failures, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}

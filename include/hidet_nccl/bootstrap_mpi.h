/*
 * The MPI bootstrap (libhidet_nccl_mpi.a; the only part of hidet-nccl that includes mpi.h).
 * Link (mpicc): -l:libhidet_nccl_mpi.a -l:libhidet_nccl.a -lcudart_static -ldl -lpthread -lrt -lz -lm,
 * or `pkg-config --cflags --libs hidet_nccl_mpi` (docs/user_guide.md).
 *
 * MPI etiquette: the caller's communicator is duplicated (MPI_Comm_idup), never used
 * directly. MPI is initialized (MPI_Init_thread, MPI_THREAD_SERIALIZED) only if the
 * application has not done it; an MPI the library initialized is finalized by
 * hidet_nccl_finalize() once no MPI bootstrap is left, and an MPI the application
 * initialized is never finalized by the library. The broadcast sends sizeof(ncclUniqueId)
 * bytes as MPI_BYTE (MPI_Ibcast). Every collective step (the duplicate, the local rank, the
 * broadcast) is non-blocking and polled against the deadline ($HIDET_NCCL_TIMEOUT), so a
 * rank that never comes is HIDET_NCCL_ERROR_TIMEOUT, not a hang. A timed-out MPI_Comm_idup
 * stays pending on the caller's communicator (MPI cannot cancel it): give the bootstrap a
 * copy of your communicator if the program must go on using it after that.
 */
#ifndef HIDET_NCCL_BOOTSTRAP_MPI_H_
#define HIDET_NCCL_BOOTSTRAP_MPI_H_

#include <mpi.h>

#include "hidet_nccl/bootstrap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The MPI backend as a plug-in struct (name "mpi"); params: a pointer to an MPI_Comm. It cannot
 * recover after a rank died (MPI without ULFM ends the job): hidet_nccl_comm_recover over it
 * fails at once with that reason. */
extern const hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_mpi_v4;
#define hidet_nccl_bootstrap_mpi_v3 hidet_nccl_bootstrap_mpi_v4 /* its name before version 4 */
#define hidet_nccl_bootstrap_mpi_v2 hidet_nccl_bootstrap_mpi_v4 /* its name before version 3 */

/* A bootstrap over comm's ranks (MPI_COMM_WORLD, or any intracommunicator such as a split
 * of it). Rank and size are comm's; the local rank counts the lower ranks on the same machine
 * (kernel boot id and host name, by MPI_Iallgather). MPI_COMM_NULL is refused. */
hidet_nccl_status_t hidet_nccl_bootstrap_mpi(MPI_Comm comm, hidet_nccl_bootstrap_h *out);

/* A communicator over comm's ranks in one call (bootstrap, hidet_nccl_comm_init, bootstrap
 * released). options may be NULL; options->timeout_s bounds every step, the bootstrap's
 * MPI_Comm_idup and node-name exchange included. */
hidet_nccl_status_t hidet_nccl_mpi_comm_init(MPI_Comm comm, const hidet_nccl_init_options_t *options, int *comm_id);

/* The common case, after MPI_Init (or instead of it): a communicator over MPI_COMM_WORLD. */
hidet_nccl_status_t hidet_nccl_mpi_init(int *comm_id);

/* hidet_nccl_mpi_comm_init for Fortran: comm is a Fortran MPI handle (`integer` of `use mpi`,
 * or the MPI_VAL of `use mpi_f08`'s type(MPI_Comm)), turned into an MPI_Comm by MPI_Comm_f2c.
 * The Fortran module (bindings/fortran/hidet_nccl.f90) calls it. */
hidet_nccl_status_t hidet_nccl_mpi_comm_init_fortran(MPI_Fint comm, const hidet_nccl_init_options_t *options,
                                                     int *comm_id);

#ifdef __cplusplus
}
#endif

#endif /* HIDET_NCCL_BOOTSTRAP_MPI_H_ */

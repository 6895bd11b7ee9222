/* The bootstrap backends built into libhidet_nccl.a. A backend is found here by name (its
 * public plug-in struct), never by a call into its folder; the MPI backend lives in
 * libhidet_nccl_mpi.a and is started by hidet_nccl_mpi_init. */
#include "core/bootstrap_table_int.h"

const hn_builtin_bootstrap_t hidet_nccl__builtin_bootstraps[] = {
    /* hidet-nccl-run sets the directory; under Slurm the user does (a shared file system). */
    {"file", &hidet_nccl_bootstrap_file_v2, HN_SETTING_RENDEZVOUS_DIR},
    /* hidet-nccl-run --nnodes with --master-addr, torchrun, or the user: rank 0's address. */
    {"socket", &hidet_nccl_bootstrap_socket_v2, HN_SETTING_MASTER_ADDR},
    /* mpirun, prterun, srun --mpi=pmix: after the others, so that a launcher started inside a
     * PMIx job (hidet-nccl-run, torchrun) keeps its own rendezvous. */
    {"pmix", &hidet_nccl_bootstrap_pmix_v2, HN_SETTING_PMIX_NAMESPACE},
};

const int hidet_nccl__num_builtin_bootstraps =
    (int)(sizeof hidet_nccl__builtin_bootstraps / sizeof hidet_nccl__builtin_bootstraps[0]);

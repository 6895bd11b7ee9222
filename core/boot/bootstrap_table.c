/* The bootstrap backends built into libhidet_nccl.a, and their constructors of the public
 * header. A backend is known here by its public plug-in struct alone, as a plug-in of the
 * user's would be; its folder never calls into the core beyond the kit. The MPI backend lives
 * in libhidet_nccl_mpi.a and is started by hidet_nccl_mpi_init. Adding one: its folder
 * bootstrap_<name>/, its name in backends.bzl, a row here, and (if it has one) its constructor
 * below. */
#include "core/boot/bootstrap_table_int.h"
#include "core/base/status_int.h"

const hn_builtin_bootstrap_t hidet_nccl__builtin_bootstraps[] = {
    /* hidet-nccl-run sets the directory; under Slurm the user does (a shared file system). */
    {"file", &hidet_nccl_bootstrap_file_v2, HN_SETTING_RENDEZVOUS_DIR,
     "start the program with hidet-nccl-run, or set HIDET_NCCL_RENDEZVOUS_DIR to a directory all ranks share "
     "(Slurm)"},
    /* hidet-nccl-run --nnodes with --master-addr, torchrun, or the user: rank 0's address. */
    {"socket", &hidet_nccl_bootstrap_socket_v2, HN_SETTING_MASTER_ADDR,
     "set MASTER_ADDR and MASTER_PORT to rank 0's host and a free port (hidet-nccl-run --nnodes, torchrun)"},
    /* mpirun, prterun, srun --mpi=pmix: after the others, so that a launcher started inside a
     * PMIx job (hidet-nccl-run, torchrun) keeps its own rendezvous. */
    {"pmix", &hidet_nccl_bootstrap_pmix_v2, HN_SETTING_PMIX_NAMESPACE,
     "start the program with a PMIx launcher (mpirun, srun --mpi=pmix)"},
};

const int hidet_nccl__num_builtin_bootstraps =
    (int)(sizeof hidet_nccl__builtin_bootstraps / sizeof hidet_nccl__builtin_bootstraps[0]);

hidet_nccl_status_t hidet_nccl_bootstrap_file(const hidet_nccl_file_bootstrap_params_t *params,
                                              hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    return hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_file_v2, params, out);
}

hidet_nccl_status_t hidet_nccl_bootstrap_socket(const hidet_nccl_socket_bootstrap_params_t *params,
                                                hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    return hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_socket_v2, params, out);
}

hidet_nccl_status_t hidet_nccl_bootstrap_pmix(hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    return hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_pmix_v2, NULL, out);
}

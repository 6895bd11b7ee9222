/* GPU test through hidet_nccl_init (run by hidet-nccl-run -n 2 or more, by mpirun or srun
 * --mpi=pmix, or by hidet-nccl-run --nnodes): the bootstrap from the environment (file, PMIx or
 * socket), one GPU per process; time to a ready
 * communicator; every dtype x op checked exactly; a second communicator with a fresh id. */
#include <stdio.h>
#include <time.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/gpu/check_all.h"
#include "tests/gpu/now.h"

int main(void) {
    double start = hn_now();
    int id = -1, second = -1, rank = -1, size = 0;
    if (hidet_nccl_init(&id) != HIDET_NCCL_SUCCESS || hidet_nccl_comm_rank(id, &rank) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_comm_size(id, &size) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "launcher_gpu_test: %s\n", hidet_nccl_last_error());
        return 1;
    }
    double ready = hn_now();
    if (rank == 0) printf("hidet_nccl_init, %d ranks: ready communicator in %.3f s\n", size, ready - start);
    const size_t counts[] = {1, 1001, (1u << 22) + 3};
    hn_check_result_t r = hn_check_every_dtype_op(id, counts, 3);
    printf("rank %d: %d checks, %d wrong, %d errors, %d pairs refused\n", rank, r.checked, r.wrong, r.errors, r.refused);
    int failed = r.wrong || r.errors || r.refused != 19;
    if (hidet_nccl_init(&second) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "launcher_gpu_test: second communicator: %s\n", hidet_nccl_last_error());
        failed = 1;
    } else {
        hn_check_result_t r2 = hn_check_every_dtype_op(second, counts, 1);
        failed |= r2.wrong || r2.errors;
    }
    if (hidet_nccl_finalize() != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "launcher_gpu_test: %s\n", hidet_nccl_last_error());
        failed = 1;
    }
    printf("rank %d: launcher_gpu_test %s\n", rank, failed ? "FAILED" : "OK");
    return failed;
}

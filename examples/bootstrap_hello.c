/* A bootstrap alone, no GPU needed: the ranks find each other from the environment, rank 0
 * sends every rank a message, and every rank learns every other's host. Run it as it is, on a
 * laptop or a login node, to see that a launcher and the library agree before a GPU is involved:
 *   hidet-nccl-run -n 4 ./bootstrap_hello          (the shared-file bootstrap)
 *   mpirun -np 4 ./bootstrap_hello                 (PMIx, without linking MPI)
 *   hidet-nccl-run --nnodes 2 --node-rank K --master-addr H --master-port P -n 2 ./bootstrap_hello */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <hidet_nccl/bootstrap.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != HIDET_NCCL_SUCCESS) {                                          \
            fprintf(stderr, "bootstrap_hello: %s\n", hidet_nccl_last_error());       \
            return 1;                                                                \
        }                                                                            \
    } while (0)

enum { MAX_RANKS = 1024, HOST = 64 };

int main(void) {
    hidet_nccl_bootstrap_h bs;
    int rank, size;
    const char *name;
    CHECK(hidet_nccl_bootstrap_from_env(&bs)); /* hidet-nccl-run, mpirun/srun (PMIx), MASTER_ADDR, ... */
    CHECK(hidet_nccl_bootstrap_name(bs, &name));
    CHECK(hidet_nccl_bootstrap_rank(bs, &rank, &size));
    if (size > MAX_RANKS) {
        fprintf(stderr, "bootstrap_hello: %d ranks, more than this example holds (%d)\n", size, MAX_RANKS);
        return 1;
    }
    char message[64] = "";
    if (rank == 0) snprintf(message, sizeof message, "hello from rank 0 of %d", size);
    CHECK(hidet_nccl_bootstrap_broadcast(bs, message, sizeof message, 0, 0)); /* 0: $HIDET_NCCL_TIMEOUT */
    static char hosts[MAX_RANKS][HOST];
    char mine[HOST] = "";
    gethostname(mine, sizeof mine - 1);
    CHECK(hidet_nccl_bootstrap_allgather(bs, mine, hosts, HOST, 0));
    int same = 0;
    for (int r = 0; r < size; r++) same += strcmp(hosts[r], mine) == 0;
    printf("rank %d of %d (bootstrap '%s'): got \"%s\"; %d of the ranks run on this host\n", rank, size, name, message,
           same);
    CHECK(hidet_nccl_bootstrap_destroy(bs));
    return 0;
}

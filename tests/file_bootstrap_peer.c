/* One rank of a shared-file bootstrap job, for tests and the benchmark (run as a separate
 * process: fork/exec, never threads).
 *   file_bootstrap_peer DIR KEY RANK NRANKS ROUNDS TIMEOUT_S OUT [DELAY_MS]
 * Each round, rank 0 broadcasts a fresh real ncclGetUniqueId; every rank appends to OUT one
 * line: "<round> <hex of the 128 bytes> <CLOCK_REALTIME seconds when it had them>". Then every
 * rank allgathers (round, rank, a byte of the id) and checks what every other rank sent.
 * ROUNDS < 0: -ROUNDS rounds, each through a bootstrap of its own made and destroyed around its
 * one broadcast (what calling hidet_nccl_init again does), without the allgather.
 * Exit 0 on success; otherwise 1, with hidet_nccl_last_error() on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: %s DIR KEY RANK NRANKS ROUNDS TIMEOUT_S OUT [DELAY_MS]\n", argv[0]);
        return 2;
    }
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = argv[1];
    p.job_key = argv[2];
    p.rank = atoi(argv[3]);
    p.nranks = atoi(argv[4]);
    int rounds = atoi(argv[5]), fresh = rounds < 0;
    if (fresh) rounds = -rounds;
    double timeout = atof(argv[6]);
    if (argc > 8) usleep((useconds_t)atoi(argv[8]) * 1000);
    hidet_nccl_bootstrap_h bs = NULL;
    FILE *out = fopen(argv[7], "w");
    if (out == NULL) return 1;
    for (int round = 0; round < rounds; round++) {
        if (bs == NULL && hidet_nccl_bootstrap_file(&p, &bs) != HIDET_NCCL_SUCCESS) {
            fprintf(stderr, "rank %d: %s\n", p.rank, hidet_nccl_last_error());
            return 1;
        }
        ncclUniqueId id;
        memset(&id, 0, sizeof id);
        if (p.rank == 0 && hidet_nccl_get_unique_id(&id) != HIDET_NCCL_SUCCESS) {
            fprintf(stderr, "rank 0: %s\n", hidet_nccl_last_error());
            return 1;
        }
        if (hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, 0, timeout) != HIDET_NCCL_SUCCESS) {
            fprintf(stderr, "rank %d: %s\n", p.rank, hidet_nccl_last_error());
            return 1;
        }
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (!fresh) { /* a fresh bootstrap does what hidet_nccl_init does: one broadcast */
            int mine[3] = {round, p.rank, (unsigned char)id.internal[p.rank % sizeof id]};
            int *all = calloc((size_t)p.nranks, sizeof mine);
            if (all == NULL || hidet_nccl_bootstrap_allgather(bs, mine, all, sizeof mine, timeout) != HIDET_NCCL_SUCCESS) {
                fprintf(stderr, "rank %d: allgather: %s\n", p.rank, hidet_nccl_last_error());
                return 1;
            }
            for (int r = 0; r < p.nranks; r++)
                if (all[3 * r] != round || all[3 * r + 1] != r ||
                    all[3 * r + 2] != (unsigned char)id.internal[r % sizeof id]) {
                    fprintf(stderr, "rank %d: allgather round %d: rank %d's part is (%d, %d, %d)\n", p.rank, round, r,
                            all[3 * r], all[3 * r + 1], all[3 * r + 2]);
                    return 1;
                }
            free(all);
        }
        fprintf(out, "%d ", round);
        for (size_t i = 0; i < sizeof id; i++) fprintf(out, "%02x", (unsigned char)id.internal[i]);
        fprintf(out, " %lld.%09ld\n", (long long)now.tv_sec, now.tv_nsec);
        fflush(out);
        if (fresh && hidet_nccl_bootstrap_destroy(bs) != HIDET_NCCL_SUCCESS) return 1;
        if (fresh) bs = NULL;
    }
    fclose(out);
    return hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS ? 0 : 1;
}

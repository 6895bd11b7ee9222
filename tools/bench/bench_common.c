/* What every part of hidet-nccl-bench shares, below them all: the options (their defaults here;
 * bench_options.c fills them from the command line), the clock, and the ranks' meeting points: a
 * barrier, a value over the ranks and rank 0's bytes to every rank, all through the library's own
 * communicator (hidet_nccl_bench.c hands it over once hidet_nccl_init has made it). */
#include <time.h>

#include "tools/bench/bench.h"

bench_options_t opt = {
    .min_bytes = 8,
    .max_bytes = (size_t)128 << 20,
    .factor = 2,
    .iters = 20,
    .warmup = 5,
    .check = 1,
    .reps = 3,
    .dtype = HIDET_NCCL_FLOAT32,
    .op = HIDET_NCCL_SUM,
    .root = 0,
    .average = 3,
    .tmpdir = "/tmp",
    .nranks = 1,
};

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The meeting points' communicator (the library's), their stream and device scratch. */
enum { SCRATCH_BYTES = 4096 };
static struct {
    int id;
    cudaStream_t stream;
    void *scratch;
} g_sync = {-1, NULL, NULL};

double bench_over_ranks(double v, hidet_nccl_op_t op) {
    double m = v;
    CU(cudaMemcpyAsync(g_sync.scratch, &v, sizeof v, cudaMemcpyHostToDevice, g_sync.stream));
    HN(hidet_nccl_all_reduce(g_sync.id, g_sync.scratch, g_sync.scratch, 1, HIDET_NCCL_FLOAT64, op, g_sync.stream));
    CU(cudaMemcpyAsync(&m, g_sync.scratch, sizeof m, cudaMemcpyDeviceToHost, g_sync.stream));
    CU(cudaStreamSynchronize(g_sync.stream));
    return m;
}

/* -a: rank 0's, the mean, the least or the greatest (the default: a collective is done when
 * its slowest rank is). */
double bench_time_over_ranks(double seconds) {
    switch (opt.average) {
        case 0: return bench_over_ranks(opt.rank == 0 ? seconds : 0.0, HIDET_NCCL_SUM);
        case 1: return bench_over_ranks(seconds, HIDET_NCCL_SUM) / opt.nranks;
        case 2: return bench_over_ranks(seconds, HIDET_NCCL_MIN);
        default: return bench_over_ranks(seconds, HIDET_NCCL_MAX);
    }
}

void bench_barrier(void) {
    HN(hidet_nccl_barrier(g_sync.id, g_sync.stream));
    CU(cudaStreamSynchronize(g_sync.stream));
}

void bench_spread(void *bytes, size_t n) {
    if (n > SCRATCH_BYTES) DIE("bench_spread: %zu bytes (at most %d)", n, SCRATCH_BYTES);
    CU(cudaMemcpyAsync(g_sync.scratch, bytes, n, cudaMemcpyHostToDevice, g_sync.stream));
    HN(hidet_nccl_broadcast(g_sync.id, g_sync.scratch, g_sync.scratch, n, HIDET_NCCL_UINT8, 0, g_sync.stream));
    CU(cudaMemcpyAsync(bytes, g_sync.scratch, n, cudaMemcpyDeviceToHost, g_sync.stream));
    CU(cudaStreamSynchronize(g_sync.stream));
}

void bench_meet_on(int id) {
    g_sync.id = id;
    CU(cudaStreamCreateWithFlags(&g_sync.stream, cudaStreamNonBlocking));
    CU(cudaMalloc(&g_sync.scratch, SCRATCH_BYTES));
}

void bench_meet_end(void) { cudaFree(g_sync.scratch); }

/* Which bootstrap hidet_nccl_init took, by the order hidet_nccl_bootstrap_from_env documents
 * (HIDET_NCCL_BOOTSTRAP, a rendezvous directory, $MASTER_ADDR, $PMIX_NAMESPACE): for the header. */
const char *bench_bootstrap_label(void) {
    static const char *const order[][2] = {{"HIDET_NCCL_RENDEZVOUS_DIR", "shared-file"},
                                           {"MASTER_ADDR", "socket"},
                                           {"PMIX_NAMESPACE", "PMIx"}};
    const char *v = NULL;
    if (hidet_nccl_setting("HIDET_NCCL_BOOTSTRAP", &v, NULL) == HIDET_NCCL_SUCCESS && v != NULL && *v != '\0')
        return v;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (hidet_nccl_setting(order[i][0], &v, NULL) == HIDET_NCCL_SUCCESS && v != NULL && *v != '\0')
            return order[i][1];
    return "default";
}

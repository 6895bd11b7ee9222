/* hidet-nccl-bench: every collective through hidet-nccl against the same raw NCCL call on the
 * same communicator and buffers, in the table nccl-tests prints (size, count, type, redop, root;
 * out of place then in place: time, algbw, busbw, #wrong), raw NCCL's time and busbw and the
 * ratios in the same row; library memory against raw NCCL's three modes (--modes); the time to
 * a ready communicator (--init-times).
 *
 *   hidet-nccl-run -n 2 hidet-nccl-bench [-c all] [-b 8] [-e 128M] [-f 2] [-n 20] [-w 5] [-d float32] [-o sum]
 *   mpirun -np 2 hidet-nccl-bench ...       (the library's PMIx bootstrap; no MPI linked)
 *   hidet-nccl-bench --help                 every option
 *
 * The parts are in tools/bench_*.c (tools/bench/bench.h); this file starts the communicator and holds
 * the ranks' meeting points: a barrier, a value over the ranks and rank 0's bytes to every rank,
 * all through the library's own communicator. */
#include <string.h>
#include <time.h>

#include "hidet_nccl/bootstrap.h"
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

static void print_header(double ready) {
    const char *path;
    int version, dev;
    struct cudaDeviceProp prop;
    hidet_nccl_library_path(&path);
    hidet_nccl_nccl_version(&version);
    CU(cudaGetDevice(&dev));
    CU(cudaGetDeviceProperties(&prop, dev));
    printf("# hidet-nccl-bench: %d rank%s (%s bootstrap), %s; NCCL %d.%d.%d from %s\n", opt.nranks, opt.nranks == 1 ? "" : "s",
           bench_bootstrap_label(), prop.name, version / 10000, version / 100 % 100, version % 100, path);
    printf("# program start to ready communicator: %.3f s\n", ready);
}

/* A root the job does not have: refused on every rank alike, as a bad option. */
static void check_root(void) {
    int rooted = 0;
    for (int k = 0; k < COLL_COUNT; k++) rooted |= (opt.colls >> k & 1u) && bench_colls[k].rooted;
    if (!rooted || opt.root < opt.nranks) return;
    if (opt.rank == 0)
        fprintf(stderr, "hidet-nccl-bench: -r %d: this job has %d rank%s (roots 0 .. %d, or -1 for each)\n", opt.root,
                opt.nranks, opt.nranks == 1 ? "" : "s", opt.nranks - 1);
    exit(2);
}

/* hidet_nccl_init (the launcher's bootstrap: the shared-file one under hidet-nccl-run, PMIx under
 * mpirun or srun), the raw NCCL beside it, and the header. */
static void start(ctx_t *ctx) {
    double t0 = bench_now();
    int id;
    HN(hidet_nccl_init(&id));
    double ready = bench_now() - t0;
    HN(hidet_nccl_comm_rank(id, &opt.rank));
    HN(hidet_nccl_comm_size(id, &opt.nranks));
    check_root();
    memset(ctx, 0, sizeof *ctx);
    ctx->id = id;
    HN(hidet_nccl_get_comm(id, &ctx->comm));
    static hn_raw_nccl_t raw;
    char why[256];
    if (hn_raw_nccl(&raw, why, sizeof why) != 0) DIE("raw NCCL: %s", why);
    ctx->nccl = &raw;
    int loaded = 0;
    hidet_nccl_nccl_version(&loaded);
    if (hidet_nccl_reduction(opt.dtype, opt.op, &ctx->red) != HIDET_NCCL_SUCCESS)
        snprintf(ctx->red_why, sizeof ctx->red_why, "%s", hidet_nccl_last_error());
    else if (ctx->red.min_nccl_version > loaded)
        snprintf(ctx->red_why, sizeof ctx->red_why, "needs NCCL %d.%d (loaded: %d.%d)", ctx->red.min_nccl_version / 10000,
                 ctx->red.min_nccl_version / 100 % 100, loaded / 10000, loaded / 100 % 100);
    const char *grouped = NULL;
    ctx->grouped_p2p = hidet_nccl_setting("HIDET_NCCL_GROUPED_P2P", &grouped, NULL) == HIDET_NCCL_SUCCESS &&
                       grouped != NULL && strcmp(grouped, "1") == 0;
    CU(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    g_sync.id = id;
    CU(cudaStreamCreateWithFlags(&g_sync.stream, cudaStreamNonBlocking));
    CU(cudaMalloc(&g_sync.scratch, SCRATCH_BYTES));
    if (opt.rank == 0) print_header(ready);
}

int main(int argc, char **argv) {
    bench_parse_options(argc, argv);
    ctx_t ctx;
    start(&ctx);
    int wrong = 0;
    if (opt.init_times) bench_init_times(&ctx, 15);
    if (opt.modes) bench_modes(&ctx);
    else wrong = bench_tables(&ctx);
    cudaFree(g_sync.scratch);
    HN(hidet_nccl_finalize());
    return wrong > 0 ? 1 : 0;
}

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
 * The parts are in tools/bench/bench_*.c (tools/bench/bench.h), each using only parts below it;
 * this file holds main and what only main uses: it starts the communicator, hands it to the
 * ranks' meeting points (bench_common.c), prints the header and runs what the options ask. */
#include <string.h>

#include "hidet_nccl/bootstrap.h"
#include "tools/bench/bench.h"

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
    bench_meet_on(id);
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
    bench_meet_end();
    HN(hidet_nccl_finalize());
    return wrong > 0 ? 1 : 0;
}

/* hidet-nccl-bench: all_reduce through hidet-nccl against raw ncclAllReduce on the same
 * communicator, in the table nccl-tests' all_reduce_perf prints; graph-captured latency;
 * and the time to a ready communicator through each bootstrap against the raw path.
 *
 *   mpirun -np 2 hidet-nccl-bench [-b 8] [-e 128M] [-f 2] [-n 20] [-w 5] [-d float32] [-o sum] [-c 1] [-r 3]
 *                                 [-T tmpdir]
 *   hidet-nccl-run -n 2 hidet-nccl-bench ...     (no MPI: no init comparison)
 *   ... hidet-nccl-bench -m [-t|--tune FILE]      library memory (hidet_nccl_mem_alloc, registered AUTO)
 *                                                 against raw NCCL plain, registered and window; -t
 *                                                 appends the crossover table (HIDET_NCCL_TUNE_FILE)
 *
 * busbw = algbw * 2(n-1)/n. Each size runs the library and raw NCCL alternately, -r times
 * each, and reports the fastest run of each, with the ratio library/raw of busbw. */
#include <cuda_runtime_api.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base/number.h"
#include "hidet_nccl/bootstrap_mpi.h"
#include "tools/support/raw_nccl.h"
#include "tools/support/reference.h"

static struct {
    size_t min_bytes, max_bytes;
    double factor;
    int iters, warmup, check, reps;
    hidet_nccl_dtype_t dtype;
    hidet_nccl_op_t op;
    int use_mpi;
    int rank, nranks;
    const char *tmpdir;
    int modes;             /* -m: library memory against raw NCCL's three modes */
    const char *tune_file; /* -t FILE: with -m, write the crossover table measured */
    int coll;              /* -C: with -m, COLL_* */
} o = {8, 128u << 20, 2, 20, 5, 1, 3, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0, 0, 1, "/tmp", 0, NULL, 0};

enum { COLL_ALL_REDUCE, COLL_ALL_GATHER, COLL_REDUCE_SCATTER };
static const char *const k_coll_names[3] = {"all_reduce", "all_gather", "reduce_scatter"};

#define DIE(...)                                                       \
    do {                                                               \
        fprintf(stderr, "hidet-nccl-bench: " __VA_ARGS__);             \
        fprintf(stderr, "\n");                                         \
        if (o.use_mpi) MPI_Abort(MPI_COMM_WORLD, 1);                   \
        exit(1);                                                       \
    } while (0)
#define HN(call)                                                                      \
    do {                                                                              \
        if ((call) != HIDET_NCCL_SUCCESS) DIE("%s: %s", #call, hidet_nccl_last_error()); \
    } while (0)
#define CU(call)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) DIE("%s: %s", #call, cudaGetErrorString(e_));              \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The numbers of the command line, by the one grammar (core/base/number.h): decimal digits and
 * nothing else, then the range; a bad one ends the run with status 2 before MPI, CUDA or NCCL is
 * touched (strtod and atoi read '1X' as 1 and 'x' as 0, and the run went on with those). */
#define MAX_SIZE_G 1024 /* sizes up to 1024G: beyond any GPU's memory */

static void bad_option(const char *flag, const char *value, const char *expected) __attribute__((noreturn));
static void bad_option(const char *flag, const char *value, const char *expected) {
    fprintf(stderr, "hidet-nccl-bench: %s '%s' is not %s\n", flag, value, expected);
    exit(2);
}

/* A size in bytes: digits, then at most one suffix K, M or G (powers of 1024, either case), as
 * nccl-tests takes them; no fraction (1.5M is 1536K), in 1 .. 1024G. */
static size_t parse_size(const char *flag, const char *s) {
    char digits[24];
    size_t n = strlen(s), mult = 1;
    char last = n > 0 ? s[n - 1] : '\0';
    if (last == 'K' || last == 'k') mult = (size_t)1 << 10;
    else if (last == 'M' || last == 'm') mult = (size_t)1 << 20;
    else if (last == 'G' || last == 'g') mult = (size_t)1 << 30;
    if (mult > 1) n--;
    uint64_t v = 0;
    int ok = n < sizeof digits; /* longer: past the range anyway */
    if (ok) {
        memcpy(digits, s, n);
        digits[n] = '\0';
        ok = hn_parse_uint(digits, 1, ((uint64_t)MAX_SIZE_G << 30) / mult, &v) == HN_NUMBER_OK;
    }
    if (!ok)
        bad_option(flag, s, "a size in 1 .. 1024G bytes: digits, then at most one of K, M, G (x1024 each: 64K, "
                            "128M; no fraction, sign or space)");
    return (size_t)v * mult;
}

/* A whole number in lo .. hi. */
static int parse_count(const char *flag, const char *s, int lo, int hi) {
    int v;
    if (hn_parse_int(s, lo, hi, &v) != HN_NUMBER_OK) {
        char expected[96];
        snprintf(expected, sizeof expected, "a whole number in %d .. %d (decimal digits only)", lo, hi);
        bad_option(flag, s, expected);
    }
    return v;
}

/* The slowest rank's value (the collective finishes when it does). */
/* Without MPI (hidet-nccl-run), the ranks meet through the library's communicator: a device
 * barrier, and a max of one double on the device. */
static struct {
    int id;
    cudaStream_t stream;
    double *scratch;
} g_sync = {-1, NULL, NULL};

static double max_over_ranks(double v) {
    double m = v;
    if (o.use_mpi) {
        MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    } else if (g_sync.id >= 0) {
        if (cudaMemcpyAsync(g_sync.scratch, &v, sizeof v, cudaMemcpyHostToDevice, g_sync.stream) != cudaSuccess)
            DIE("cudaMemcpyAsync failed");
        HN(hidet_nccl_all_reduce(g_sync.id, g_sync.scratch, g_sync.scratch, 1, HIDET_NCCL_FLOAT64, HIDET_NCCL_MAX,
                                 g_sync.stream));
        if (cudaMemcpyAsync(&m, g_sync.scratch, sizeof m, cudaMemcpyDeviceToHost, g_sync.stream) != cudaSuccess ||
            cudaStreamSynchronize(g_sync.stream) != cudaSuccess)
            DIE("cudaMemcpyAsync failed");
    }
    return m;
}

static void barrier(void) {
    if (o.use_mpi) {
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (g_sync.id >= 0) {
        HN(hidet_nccl_barrier(g_sync.id, g_sync.stream));
        if (cudaStreamSynchronize(g_sync.stream) != cudaSuccess) DIE("cudaStreamSynchronize failed");
    }
}

typedef struct {
    const hn_raw_nccl_t *nccl;
    ncclComm_t comm;
    int id;
    cudaStream_t stream;
    hidet_nccl_reduction_t red;
} ctx_t;

/* One collective (o.coll; the table's is all_reduce) through the library (raw == 0) or
 * straight to NCCL (raw == 1); count: all_reduce's elements, or per rank (all_gather's
 * sendcount, reduce_scatter's recvcount). */
static void one(const ctx_t *c, int raw, const void *send, void *recv, size_t count) {
    if (raw) {
        size_t n = count * c->red.count_multiplier;
        ncclResult_t r =
            o.coll == COLL_ALL_GATHER ? c->nccl->AllGather(send, recv, n, c->red.nccl_dtype, c->comm, c->stream)
            : o.coll == COLL_REDUCE_SCATTER
                ? c->nccl->ReduceScatter(send, recv, n, c->red.nccl_dtype, c->red.nccl_op, c->comm, c->stream)
                : c->nccl->AllReduce(send, recv, n, c->red.nccl_dtype, c->red.nccl_op, c->comm, c->stream);
        while (r == ncclInProgress) { /* a non-blocking communicator still enqueuing: wait, as NCCL asks */
            ncclResult_t async = ncclSuccess;
            c->nccl->CommGetAsyncError(c->comm, &async);
            r = async;
        }
        if (r != ncclSuccess) DIE("nccl %s: %s", k_coll_names[o.coll], c->nccl->GetErrorString(r));
    } else if (o.coll == COLL_ALL_GATHER) {
        HN(hidet_nccl_all_gather(c->id, send, recv, count, o.dtype, c->stream));
    } else if (o.coll == COLL_REDUCE_SCATTER) {
        HN(hidet_nccl_reduce_scatter(c->id, send, recv, count, o.dtype, o.op, c->stream));
    } else {
        HN(hidet_nccl_all_reduce(c->id, send, recv, count, o.dtype, o.op, c->stream));
    }
}

/* Seconds between two events recorded on the stream, the slowest rank's. */
static double event_seconds(cudaEvent_t a, cudaEvent_t b) {
    CU(cudaEventSynchronize(b));
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return max_over_ranks(ms * 1e-3);
}

/* Average seconds per all_reduce over `iters` back-to-back calls. */
static double timed(const ctx_t *c, int raw, const void *send, void *recv, size_t count, int iters) {
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    barrier();
    CU(cudaEventRecord(a, c->stream));
    for (int i = 0; i < iters; i++) one(c, raw, send, recv, count);
    CU(cudaEventRecord(b, c->stream));
    return event_seconds(a, b) / iters;
}

/* Per-call time of `per_graph` all_reduces captured in one CUDA graph, replayed. */
static double graph_latency(const ctx_t *c, int raw, void *buf, size_t count) {
    const int per_graph = 100, launches = 20;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CU(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < per_graph; i++) one(c, raw, buf, buf, count);
    CU(cudaStreamEndCapture(c->stream, &graph));
    CU(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 3; i++) CU(cudaGraphLaunch(exec, c->stream));
    CU(cudaStreamSynchronize(c->stream));
    barrier();
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    CU(cudaEventRecord(a, c->stream));
    for (int i = 0; i < launches; i++) CU(cudaGraphLaunch(exec, c->stream));
    CU(cudaEventRecord(b, c->stream));
    double seconds = event_seconds(a, b);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return seconds / (launches * per_graph);
}

/* For reference: 8-byte latency on a communicator made by raw ncclCommInitRank, beside the
 * library's (blocking too, made on a helper thread against the deadline). */
static void blocking_reference(const hn_raw_nccl_t *nccl, ncclComm_t comm) {
    ctx_t c;
    memset(&c, 0, sizeof c);
    c.nccl = nccl;
    c.comm = comm;
    c.id = -1;
    HN(hidet_nccl_reduction(HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, &c.red));
    CU(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    void *buf;
    CU(cudaMalloc(&buf, 64));
    for (int i = 0; i < 10; i++) one(&c, 1, buf, buf, 2);
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t = timed(&c, 1, buf, buf, 2, 20);
        best = t < best ? t : best;
    }
    double g = graph_latency(&c, 1, buf, 2);
    if (o.rank == 0)
        printf("# reference, raw blocking communicator, 8 B float32 sum: eager %.2f us, graph-captured %.2f us\n",
               best * 1e6, g * 1e6);
    cudaFree(buf);
    cudaStreamDestroy(c.stream);
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A raw init on a thread of its own (what the library does, to keep a deadline), joined. */
typedef struct {
    const hn_raw_nccl_t *nccl;
    ncclUniqueId uid;
    int device;
    ncclComm_t comm;
    ncclResult_t res;
    int config; /* 1: ncclCommInitRankConfig with a blocking config, as the library calls it */
} thread_init_t;

static void *thread_init(void *p) {
    thread_init_t *a = p;
    cudaSetDevice(a->device);
    if (a->config && a->nccl->CommInitRankConfig != NULL) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 1;
        a->res = a->nccl->CommInitRankConfig(&a->comm, o.nranks, a->uid, o.rank, &config);
    } else {
        a->res = a->nccl->CommInitRank(&a->comm, o.nranks, a->uid, o.rank);
    }
    return NULL;
}

/* A thread that stays: it runs each init handed to it (to tell a new thread's cost from
 * running NCCL's init off the main thread). */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    thread_init_t *job;
    int done;
} g_worker = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&g_worker.lock);
        while (g_worker.job == NULL) pthread_cond_wait(&g_worker.cond, &g_worker.lock);
        thread_init_t *a = g_worker.job;
        pthread_mutex_unlock(&g_worker.lock);
        thread_init(a);
        pthread_mutex_lock(&g_worker.lock);
        g_worker.job = NULL;
        g_worker.done = 1;
        pthread_cond_broadcast(&g_worker.cond);
        pthread_mutex_unlock(&g_worker.lock);
    }
    return NULL;
}

static void on_worker(thread_init_t *a) {
    pthread_mutex_lock(&g_worker.lock);
    g_worker.job = a;
    g_worker.done = 0;
    pthread_cond_broadcast(&g_worker.cond);
    while (!g_worker.done) pthread_cond_wait(&g_worker.cond, &g_worker.lock);
    pthread_mutex_unlock(&g_worker.lock);
}

/* Time to a ready communicator: raw (ncclGetUniqueId + MPI_Bcast + ncclCommInitRank), the
 * same raw init on a new thread, the library over MPI, the library over the shared-file
 * bootstrap; medians of `reps` runs, and of each run's ratio to the raw init just before. */
static void init_times(const hn_raw_nccl_t *nccl, int reps) {
    enum { PATHS = 6, LIB = 4 };
    static const char *const names[PATHS] = {
        "raw ncclGetUniqueId + MPI_Bcast + ncclCommInitRank", "the same, ncclCommInitRank on a new thread",
        "the same, on a thread that made one before", "the same, ncclCommInitRankConfig on a new thread",
        "hidet_nccl_mpi_comm_init (MPI bootstrap)", "hidet_nccl_comm_init (shared-file bootstrap)"};
    pthread_t w;
    if (pthread_create(&w, NULL, worker, NULL) != 0 || pthread_detach(w) != 0) DIE("pthread_create failed");
    char dir[256] = "";
    if (o.rank == 0) {
        snprintf(dir, sizeof dir, "%s/hidet-nccl-bench-XXXXXX", o.tmpdir);
        if (mkdtemp(dir) == NULL) DIE("mkdtemp: cannot make a rendezvous directory");
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    double t[PATHS][16], ratio[PATHS][16];
    if (reps > 16) reps = 16;
    for (int r = -1; r < reps; r++) { /* r == -1: a warm-up of each, not counted */
        for (int path = 0; path < PATHS; path++) {
            barrier();
            double start = now();
            int id;
            if (path < LIB) {
                thread_init_t a = {nccl, {{0}}, 0, NULL, ncclSuccess, path == 3};
                if (o.rank == 0 && nccl->GetUniqueId(&a.uid) != ncclSuccess) DIE("ncclGetUniqueId failed");
                MPI_Bcast(&a.uid, sizeof a.uid, MPI_BYTE, 0, MPI_COMM_WORLD);
                CU(cudaGetDevice(&a.device));
                pthread_t th;
                if (path == 0) thread_init(&a);
                else if (path == 2) on_worker(&a);
                else if (pthread_create(&th, NULL, thread_init, &a) != 0 || pthread_join(th, NULL) != 0)
                    DIE("pthread_create failed");
                if (a.res != ncclSuccess) DIE("ncclCommInitRank: %s", nccl->GetErrorString(a.res));
                double took = max_over_ranks(now() - start);
                if (r >= 0) t[path][r] = took;
                if (r == reps - 1 && path == 0) blocking_reference(nccl, a.comm);
                nccl->CommDestroy(a.comm);
                continue;
            }
            if (path == LIB) {
                HN(hidet_nccl_mpi_comm_init(MPI_COMM_WORLD, NULL, &id));
            } else {
                char key[64];
                snprintf(key, sizeof key, "bench-%d", r + 1);
                hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
                p.dir = dir;
                p.job_key = key;
                p.rank = o.rank;
                p.nranks = o.nranks;
                hidet_nccl_bootstrap_h bs;
                HN(hidet_nccl_bootstrap_file(&p, &bs));
                HN(hidet_nccl_comm_init(bs, NULL, &id));
                HN(hidet_nccl_bootstrap_destroy(bs));
            }
            double took = max_over_ranks(now() - start);
            if (r >= 0) t[path][r] = took;
            HN(hidet_nccl_comm_destroy(id));
        }
    }
    if (o.rank == 0) rmdir(dir);
    for (int path = 0; path < PATHS; path++) {
        for (int i = 0; i < reps; i++) ratio[path][i] = t[path][i] / t[0][i];
        qsort(t[path], (size_t)reps, sizeof(double), by_value);
        qsort(ratio[path], (size_t)reps, sizeof(double), by_value);
    }
    if (o.rank != 0) return;
    printf("# Time to a ready communicator, %d ranks, median of %d (after one warm-up each); last column: median of "
           "each run's ratio to the raw init just before it (NCCL's own init time drifts)\n", o.nranks, reps);
    for (int path = 0; path < PATHS; path++)
        printf("#   %-52s: %8.1f ms  (%.3f x raw; %.3f x)\n", names[path], t[path][reps / 2] * 1e3,
               t[path][reps / 2] / t[0][reps / 2], ratio[path][reps / 2]);
}

static void parse_options(int argc, char **argv) {
    int c;
    static const struct option long_options[] = {{"tune", required_argument, NULL, 't'}, {NULL, 0, NULL, 0}};
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:d:o:c:r:T:mt:C:h", long_options, NULL)) != -1) {
        switch (c) {
            case 'b': o.min_bytes = parse_size("-b", optarg); break;
            case 'e': o.max_bytes = parse_size("-e", optarg); break;
            case 'f':
                if (hn_parse_decimal(optarg, 1, 1, 1024, &o.factor) != HN_NUMBER_OK)
                    bad_option("-f", optarg, "a factor in (1, 1024] (digits, optionally '.' and digits: 2, 1.5)");
                break;
            case 'n': o.iters = parse_count("-n", optarg, 1, 1000000); break;
            case 'w': o.warmup = parse_count("-w", optarg, 0, 1000000); break;
            case 'c': o.check = parse_count("-c", optarg, 0, 1); break;
            case 'r': o.reps = parse_count("-r", optarg, 1, 1000); break;
            case 'T': o.tmpdir = optarg; break;
            case 'm': o.modes = 1; break;
            case 't': o.tune_file = optarg; o.modes = 1; break;
            case 'C':
                for (o.coll = 0; o.coll < 3 && strcmp(optarg, k_coll_names[o.coll]) != 0; o.coll++) continue;
                if (o.coll == 3) DIE("-C takes all_reduce, all_gather or reduce_scatter");
                break;
            case 'd': HN(hidet_nccl_dtype_from_name(optarg, &o.dtype)); break;
            case 'o': HN(hidet_nccl_op_from_name(optarg, &o.op)); break;
            default:
                fprintf(stderr, "usage: %s [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-w warmup] "
                                "[-d dtype] [-o op] [-c check 0/1] [-r reps] [-T tmpdir] [-m] [-t|--tune tunefile] "
                                "[-C all_reduce|all_gather|reduce_scatter]\n", argv[0]);
                exit(c == 'h' ? 0 : 2);
        }
    }
    if (o.min_bytes > o.max_bytes) {
        fprintf(stderr, "hidet-nccl-bench: -b %zu bytes is more than -e %zu bytes\n", o.min_bytes, o.max_bytes);
        exit(2);
    }
    if (o.coll != COLL_ALL_REDUCE && !o.modes) DIE("-C needs -m (the main table is all_reduce's)");
}

/* MPI unless started by hidet-nccl-run (a rendezvous directory set): the communicator, the
 * raw NCCL beside it, and the header lines. */
static void start(int *argc, char ***argv, ctx_t *ctx) {
    const char *dir = NULL;
    HN(hidet_nccl_setting("HIDET_NCCL_RENDEZVOUS_DIR", &dir, NULL));
    o.use_mpi = dir == NULL;
    double t0 = now();
    int id;
    if (o.use_mpi) {
        MPI_Init(argc, argv);
        HN(hidet_nccl_mpi_init(&id));
    } else {
        HN(hidet_nccl_init(&id));
    }
    double ready = now() - t0;
    HN(hidet_nccl_comm_rank(id, &o.rank));
    HN(hidet_nccl_comm_size(id, &o.nranks));
    memset(ctx, 0, sizeof *ctx);
    ctx->id = id;
    HN(hidet_nccl_get_comm(id, &ctx->comm));
    static hn_raw_nccl_t raw;
    char why[256];
    if (hn_raw_nccl(&raw, why, sizeof why) != 0) DIE("raw NCCL: %s", why);
    ctx->nccl = &raw;
    HN(hidet_nccl_reduction(o.dtype, o.op, &ctx->red));
    CU(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    if (!o.use_mpi) {
        g_sync.id = id;
        CU(cudaStreamCreateWithFlags(&g_sync.stream, cudaStreamNonBlocking));
        CU(cudaMalloc((void **)&g_sync.scratch, sizeof(double)));
    }
    const char *path;
    int version;
    hidet_nccl_library_path(&path);
    hidet_nccl_nccl_version(&version);
    if (o.rank == 0) {
        int dev;
        struct cudaDeviceProp prop;
        cudaGetDevice(&dev);
        cudaGetDeviceProperties(&prop, dev);
        printf("# hidet-nccl-bench: %d ranks (%s), %s; NCCL %d.%d.%d from %s\n", o.nranks,
               o.use_mpi ? "MPI bootstrap" : "shared-file bootstrap", prop.name, version / 10000, version / 100 % 100,
               version % 100, path);
        printf("# program start to ready communicator: %.3f s\n", ready);
    }
}

static void print_table_head(void) {
    if (o.rank != 0) return;
    printf("#\n# %d iterations per timing, fastest of %d alternating runs; ratio = library busbw / raw busbw\n",
           o.iters, o.reps);
    printf("#%11s %12s %9s %6s |%10s %8s %8s %6s |%10s %8s %8s %6s |%10s %8s %10s %8s |%7s %7s\n", "size", "count",
           "type", "redop", "oop time", "algbw", "busbw", "#wrong", "ip time", "algbw", "busbw", "#wrong", "raw oop",
           "busbw", "raw ip", "busbw", "ratio", "ratio");
    printf("#%11s %12s %9s %6s |%10s %8s %8s %6s |%10s %8s %8s %6s |%10s %8s %10s %8s |%7s %7s\n", "(B)",
           "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
           "(us)", "(GB/s)", "oop", "ip");
}

/* Host buffers of the checked runs: the input of every size (a prefix of it) and the result. */
typedef struct {
    void *send, *recv;
    unsigned char *in, *want, *got;
} buffers_t;

/* One row of the table: out of place then in place, each checked once from fresh data, then
 * the library and raw NCCL timed alternately. */
static void measure_size(const ctx_t *ctx, const buffers_t *b, size_t count, size_t esize) {
    size_t bytes = count * esize;
    size_t n = count * ctx->red.count_multiplier, eb = hn_ref_elem_size(ctx->red.nccl_dtype), nb = n * eb;
    long wrong[2] = {0, 0};
    double t_lib[2] = {1e30, 1e30}, t_raw[2] = {1e30, 1e30};
    for (int ip = 0; ip < 2; ip++) {
        void *src = ip ? b->recv : b->send;
        if (o.check) {
            /* On the benchmark's own (non-blocking) stream: a plain cudaMemcpy from pageable
             * memory may return before its DMA lands, and that stream would not wait for it. */
            CU(cudaMemcpyAsync(src, b->in, nb, cudaMemcpyHostToDevice, ctx->stream));
            one(ctx, 0, src, b->recv, count);
            CU(cudaMemcpyAsync(b->got, b->recv, nb, cudaMemcpyDeviceToHost, ctx->stream));
            CU(cudaStreamSynchronize(ctx->stream));
            for (size_t i = 0; i < n; i++) wrong[ip] += memcmp(b->got + i * eb, b->want + i * eb, eb) != 0;
        }
        for (int w = 0; w < o.warmup; w++) {
            one(ctx, 0, src, b->recv, count);
            one(ctx, 1, src, b->recv, count);
        }
        for (int r = 0; r < o.reps; r++) { /* alternate, so drift hits both alike */
            double lib = timed(ctx, 0, src, b->recv, count, o.iters);
            double raw = timed(ctx, 1, src, b->recv, count, o.iters);
            if (lib < t_lib[ip]) t_lib[ip] = lib;
            if (raw < t_raw[ip]) t_raw[ip] = raw;
        }
    }
    if (o.rank != 0) return;
    const char *dname, *oname;
    hidet_nccl_dtype_name(o.dtype, &dname);
    hidet_nccl_op_name(o.op, &oname);
    double bus = 2.0 * (o.nranks - 1) / o.nranks, alg[2], rawbus[2];
    for (int ip = 0; ip < 2; ip++) {
        alg[ip] = bytes / t_lib[ip] / 1e9;
        rawbus[ip] = bytes / t_raw[ip] / 1e9 * bus;
    }
    printf("%12zu %12zu %9s %6s |%10.2f %8.2f %8.2f %6ld |%10.2f %8.2f %8.2f %6ld |%10.2f %8.2f %10.2f %8.2f "
           "|%7.3f %7.3f\n",
           bytes, count, dname, oname, t_lib[0] * 1e6, alg[0], alg[0] * bus, o.check ? wrong[0] : -1, t_lib[1] * 1e6,
           alg[1], alg[1] * bus, o.check ? wrong[1] : -1, t_raw[0] * 1e6, rawbus[0], t_raw[1] * 1e6, rawbus[1],
           alg[0] * bus / rawbus[0], alg[1] * bus / rawbus[1]);
    fflush(stdout);
}

/* -m: one allocation of library memory (send and receive halves) registered AUTO on the
 * library's communicator, as a buffer on one split of it and as a window on another; per
 * size the library's all_reduce (its own choice) against raw ncclAllReduce on the plain
 * communicator (the memory is not registered on it), the buffer one and the window one,
 * alternately, fastest of -r. -t writes the fastest raw mode per size as a tuning table. */
typedef struct {
    int id;
    ncclComm_t comm;
} mode_comm_t;

static double timed_on(const ctx_t *c, ncclComm_t comm, const void *send, void *recv, size_t count, int iters) {
    ctx_t on = *c;
    if (comm != NULL) on.comm = comm;
    return timed(&on, comm != NULL, send, recv, count, iters);
}

static const char *const k_mode_names[3] = {"plain", "buffer", "window"};

/* -m's memory and the communicators it is registered on: raw[0] the library's own (AUTO),
 * raw[1] a split with it as a buffer, raw[2] a split with it as a window. */
typedef struct {
    void *mem;
    size_t bytes;
    mode_comm_t raw[3];
    int handles[3];
} modes_t;

/* Allocates and registers -m's memory; returns the seconds AUTO registration took. */
static double modes_register(const ctx_t *ctx, modes_t *s) {
    s->bytes = o.max_bytes * ctx->red.count_multiplier;
    HN(hidet_nccl_mem_alloc(ctx->id, s->bytes, &s->mem));
    CU(cudaMemset(s->mem, 0, s->bytes));
    s->raw[0] = (mode_comm_t){ctx->id, ctx->comm};
    for (int m = 1; m < 3; m++) { /* the raw ones first: made before the library's own siblings */
        HN(hidet_nccl_comm_split(ctx->id, 0, o.rank, &s->raw[m].id));
        HN(hidet_nccl_get_comm(s->raw[m].id, &s->raw[m].comm));
        HN(hidet_nccl_register(s->raw[m].id, s->mem, s->bytes,
                               m == 1 ? HIDET_NCCL_REGISTER_BUFFER : HIDET_NCCL_REGISTER_WINDOW, &s->handles[m]));
    }
    double t0 = now();
    HN(hidet_nccl_register(ctx->id, s->mem, s->bytes, HIDET_NCCL_REGISTER_AUTO, &s->handles[0]));
    return now() - t0;
}

static void modes_release(const modes_t *s) {
    for (int m = 2; m >= 0; m--) HN(hidet_nccl_deregister(s->raw[m].id, s->handles[m]));
    for (int m = 1; m < 3; m++) HN(hidet_nccl_comm_destroy(s->raw[m].id));
    HN(hidet_nccl_mem_free(s->mem));
}

static void print_modes_head(size_t bytes, double t_auto) {
    printf("# library memory: %zu bytes from hidet_nccl_mem_alloc, registered AUTO in %.1f ms (siblings made)\n",
           bytes, t_auto * 1e3);
    printf("# at least %d iterations per timing (up to 1000 below 64 MiB), fastest of %d alternating runs, in "
           "place; busbw GB/s (up to 64 B: us per call); best: the fastest raw mode (a registered one only if "
           "5%% faster than plain)\n",
           o.iters, o.reps);
    printf("# %s\n#%11s %9s | %9s %9s %9s %9s | %7s %7s %7s\n", k_coll_names[o.coll], "size", "type", "library",
           "raw plain", "raw buffer", "raw window", "best", "lib/best", "lib/plain");
}

/* One size (bytes, a multiple of unit): the library and raw plain, buffer and window, fastest
 * of -r alternating runs into t (library, plain, buffer, window). */
static void time_modes(const ctx_t *ctx, const modes_t *s, size_t size, size_t unit, size_t esize, double t[4]) {
    /* in place, as nccl-tests counts size: all_reduce's buffer, all_gather's output (its
     * input this rank's block of it), reduce_scatter's input (its output this rank's block) */
    size_t count = size / unit, block = count * esize * ctx->red.count_multiplier;
    char *send = s->mem, *recv = s->mem;
    if (o.coll == COLL_ALL_GATHER) send += (size_t)o.rank * block;
    if (o.coll == COLL_REDUCE_SCATTER) recv += (size_t)o.rank * block;
    for (int k = 0; k < 4; k++) t[k] = 1e30;
    /* small sizes are a few microseconds each: enough calls per timing to see past jitter */
    int iters = o.iters;
    if (size < (64u << 20) && (size_t)iters < (16u << 20) / size) iters = (int)((16u << 20) / size);
    if (iters > 1000 && iters > o.iters) iters = 1000;
    for (int w = 0; w < o.warmup; w++) {
        one(ctx, 0, send, recv, count);
        for (int m = 0; m < 3; m++) timed_on(ctx, s->raw[m].comm, send, recv, count, 1);
    }
    for (int r = 0; r < o.reps; r++) {
        for (int k = 0; k < 4; k++) { /* each run starts with another of the four */
            int v = (k + r) % 4;
            double x = timed_on(ctx, v == 0 ? NULL : s->raw[v - 1].comm, send, recv, count, iters);
            if (x < t[v]) t[v] = x;
        }
    }
}

/* The best raw mode of t (1 plain, 2 buffer, 3 window): the faster registered mode, only if it
 * beats plain by 5% (else noise decides). */
static int best_raw_mode(const double t[4]) {
    int best = 1;
    int reg = t[2] <= t[3] ? 2 : 3;
    if (t[reg] < 0.95 * t[1]) best = reg;
    return best;
}

static void print_modes_row(size_t size, const char *dname, const double t[4], int best, double bus) {
    double v[4];
    for (int k = 0; k < 4; k++) v[k] = size <= 64 ? t[k] * 1e6 : size / t[k] / 1e9 * bus;
    printf("%12zu %9s | %9.3f %9.3f %9.3f %9.3f | %7s %7.3f %7.3f\n", size, dname, v[0], v[1], v[2], v[3],
           k_mode_names[best - 1], fmin(t[1], fmin(t[2], t[3])) / t[0], t[1] / t[0]);
    fflush(stdout);
}

/* -t's crossover table as the sizes go by: a line where the best mode changes, "max" last. */
typedef struct {
    char text[8192];
    size_t len;
    int last_view; /* index into k_mode_names, -1 before the first size */
    size_t last_size;
} tune_table_t;

static void tune_table_add(tune_table_t *tt, const char *dname, size_t size, int view) {
    if (view != tt->last_view && tt->last_view >= 0)
        tt->len += (size_t)snprintf(tt->text + tt->len, sizeof tt->text - tt->len, "%s %s %zu %s\n",
                                    k_coll_names[o.coll], dname, tt->last_size, k_mode_names[tt->last_view]);
    tt->last_view = view;
    tt->last_size = size;
}

static void tune_table_end(tune_table_t *tt, const char *dname) {
    if (tt->last_view >= 0)
        tt->len += (size_t)snprintf(tt->text + tt->len, sizeof tt->text - tt->len, "%s %s max %s\n",
                                    k_coll_names[o.coll], dname, k_mode_names[tt->last_view]);
}

static void write_tune_table(const char *dname, const char *table) {
    FILE *f = fopen(o.tune_file, "a");
    if (f == NULL) DIE("cannot write %s", o.tune_file);
    fprintf(f, "# hidet-nccl-bench -t: %d ranks, %s %s, fastest raw mode per size\n%s", o.nranks,
            k_coll_names[o.coll], dname, table);
    fclose(f);
    printf("# tuning table appended to %s:\n%s", o.tune_file, table);
}

static void memory_modes(const ctx_t *ctx) {
    size_t esize;
    HN(hidet_nccl_dtype_size(o.dtype, &esize));
    const char *dname;
    hidet_nccl_dtype_name(o.dtype, &dname);
    modes_t s;
    double t_auto = modes_register(ctx, &s);
    if (o.rank == 0) print_modes_head(s.bytes, t_auto);
    tune_table_t table = {.len = 0, .last_view = -1, .last_size = 0};
    double bus = (o.coll == COLL_ALL_REDUCE ? 2.0 : 1.0) * (o.nranks - 1) / o.nranks;
    size_t unit = o.coll == COLL_ALL_REDUCE ? esize : esize * (size_t)o.nranks; /* size = a multiple of it */
    for (double fb = (double)o.min_bytes; fb <= (double)o.max_bytes + 0.5; fb *= o.factor) {
        size_t size = (size_t)fb / unit * unit;
        if (size == 0) continue;
        double t[4];
        time_modes(ctx, &s, size, unit, esize, t);
        int best = best_raw_mode(t);
        if (o.rank == 0) print_modes_row(size, dname, t, best, bus);
        tune_table_add(&table, dname, size, best - 1);
    }
    tune_table_end(&table, dname);
    if (o.tune_file != NULL && o.rank == 0) write_tune_table(dname, table.text);
    modes_release(&s);
}

int main(int argc, char **argv) {
    parse_options(argc, argv);
    ctx_t ctx;
    start(&argc, &argv, &ctx);
    if (o.modes) {
        CU(cudaStreamSynchronize(ctx.stream));
        memory_modes(&ctx);
        HN(hidet_nccl_finalize());
        if (o.use_mpi) MPI_Finalize();
        return 0;
    }
    if (o.use_mpi) init_times(ctx.nccl, 15);
    size_t esize;
    HN(hidet_nccl_dtype_size(o.dtype, &esize));
    size_t nccl_max = o.max_bytes / esize * ctx.red.count_multiplier;
    size_t nbytes = nccl_max * hn_ref_elem_size(ctx.red.nccl_dtype);
    buffers_t b = {NULL, NULL, NULL, NULL, NULL};
    CU(cudaMalloc(&b.send, nbytes));
    CU(cudaMalloc(&b.recv, nbytes));
    if (o.check) {
        b.in = malloc(nbytes);
        b.want = malloc(nbytes);
        b.got = malloc(nbytes);
        if (!b.in || !b.want || !b.got) DIE("out of host memory for %zu bytes (use -c 0)", nbytes);
        hn_ref_fill(o.dtype, o.op, o.rank, nccl_max, b.in); /* a prefix of it is the input of every size */
        hn_ref_expected(o.dtype, o.op, o.nranks, nccl_max, b.want);
    } else {
        CU(cudaMemset(b.send, 0, nbytes));
    }
    print_table_head();
    for (double fb = (double)o.min_bytes; fb <= (double)o.max_bytes + 0.5; fb *= o.factor)
        if ((size_t)fb / esize > 0) measure_size(&ctx, &b, (size_t)fb / esize, esize);
    size_t small = 8 / esize ? 8 / esize : 1;
    double g_lib = graph_latency(&ctx, 0, b.recv, small), g_raw = graph_latency(&ctx, 1, b.recv, small);
    if (o.rank == 0)
        printf("# CUDA-graph-captured all_reduce of %zu B (100 per graph, replayed): library %.2f us, raw %.2f us per "
               "call\n", small * esize, g_lib * 1e6, g_raw * 1e6);
    cudaFree(b.send);
    cudaFree(b.recv);
    free(b.in);
    free(b.want);
    free(b.got);
    HN(hidet_nccl_finalize());
    if (o.use_mpi) MPI_Finalize();
    return 0;
}

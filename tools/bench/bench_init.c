/* --init-times: the time to a ready communicator. Raw NCCL four ways (ncclGetUniqueId, the id to
 * every rank through the library's communicator, ncclCommInitRank: on this thread, on a new
 * thread, on a thread that made one before, and ncclCommInitRankConfig on a new thread) against
 * the library through the shared-file bootstrap and, when the job's bootstrap is PMIx (mpirun,
 * srun), through hidet_nccl_init; medians of `reps` runs, and of each run's ratio to the raw init
 * just before it (NCCL's own init time drifts). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "tools/bench/bench.h"

enum { PATHS = 6, RAW_PATHS = 4, FILE_PATH = 4, ENV_PATH = 5, MAX_REPS = 16 };

static const char *const k_path_names[PATHS] = {
    "raw ncclGetUniqueId + id broadcast + ncclCommInitRank", "the same, ncclCommInitRank on a new thread",
    "the same, on a thread that made one before",           "the same, ncclCommInitRankConfig on a new thread",
    "hidet_nccl_comm_init (shared-file bootstrap)",         "hidet_nccl_init (PMIx bootstrap)"};

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
        a->res = a->nccl->CommInitRankConfig(&a->comm, opt.nranks, a->uid, opt.rank, &config);
    } else {
        a->res = a->nccl->CommInitRank(&a->comm, opt.nranks, a->uid, opt.rank);
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

/* For reference: 8-byte latency on a communicator made by raw ncclCommInitRank, beside the
 * library's (blocking too, made on a helper thread against the deadline). */
static void blocking_reference(const ctx_t *lib, ncclComm_t comm) {
    ctx_t c = *lib;
    c.comm = comm;
    c.id = -1;
    HN(hidet_nccl_reduction(HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, &c.red));
    void *buf;
    CU(cudaMalloc(&buf, 64));
    call_t k = {COLL_ALL_REDUCE, buf, buf, 2, 2, 8, ncclFloat32, 0};
    for (int i = 0; i < 10; i++) bench_call(&c, 1, &k);
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t = bench_timed(&c, 1, &k, 20);
        best = t < best ? t : best;
    }
    double g = bench_graph_timed(&c, 1, &k, 100, 20);
    if (opt.rank == 0)
        printf("# reference, raw blocking communicator, 8 B float32 sum: eager %.2f us, graph-captured %.2f us\n",
               best * 1e6, g * 1e6);
    CU(cudaStreamSynchronize(c.stream));
    cudaFree(buf);
}

/* One raw path (0 .. 3): seconds to a ready communicator, the slowest rank's. */
static double raw_path(const ctx_t *c, int path, int last) {
    double start = bench_now();
    thread_init_t a = {c->nccl, {{0}}, 0, NULL, ncclSuccess, path == 3};
    if (opt.rank == 0 && c->nccl->GetUniqueId(&a.uid) != ncclSuccess) DIE("ncclGetUniqueId failed");
    bench_spread(&a.uid, sizeof a.uid);
    CU(cudaGetDevice(&a.device));
    pthread_t th;
    if (path == 0) thread_init(&a);
    else if (path == 2) on_worker(&a);
    else if (pthread_create(&th, NULL, thread_init, &a) != 0 || pthread_join(th, NULL) != 0)
        DIE("pthread_create failed");
    if (a.res != ncclSuccess) DIE("ncclCommInitRank: %s", c->nccl->GetErrorString(a.res));
    double took = bench_over_ranks(bench_now() - start, HIDET_NCCL_MAX);
    if (last && path == 0) blocking_reference(c, a.comm);
    c->nccl->CommDestroy(a.comm);
    return took;
}

/* A library path: the shared-file bootstrap in dir under a key of its own for run r, or
 * hidet_nccl_init (the job's PMIx bootstrap). */
static double library_path(int path, const char *dir, int r) {
    double start = bench_now();
    int id;
    if (path == ENV_PATH) {
        HN(hidet_nccl_init(&id));
    } else {
        char key[64];
        snprintf(key, sizeof key, "bench-%d", r + 1);
        hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
        p.dir = dir;
        p.job_key = key;
        p.rank = opt.rank;
        p.nranks = opt.nranks;
        hidet_nccl_bootstrap_h bs;
        HN(hidet_nccl_bootstrap_file(&p, &bs));
        HN(hidet_nccl_comm_init(bs, NULL, &id));
        HN(hidet_nccl_bootstrap_destroy(bs));
    }
    double took = bench_over_ranks(bench_now() - start, HIDET_NCCL_MAX);
    HN(hidet_nccl_comm_destroy(id));
    return took;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_init_times(double t[PATHS][MAX_REPS], int paths, int reps) {
    double ratio[PATHS][MAX_REPS];
    for (int path = 0; path < paths; path++) /* every run's ratio before any sort: run i with raw run i */
        for (int i = 0; i < reps; i++) ratio[path][i] = t[path][i] / t[0][i];
    for (int path = 0; path < paths; path++) {
        qsort(t[path], (size_t)reps, sizeof(double), by_value);
        qsort(ratio[path], (size_t)reps, sizeof(double), by_value);
    }
    if (opt.rank != 0) return;
    printf("# Time to a ready communicator, %d ranks, median of %d (after one warm-up each); last column: median of "
           "each run's ratio to the raw init just before it (NCCL's own init time drifts)\n", opt.nranks, reps);
    for (int path = 0; path < paths; path++)
        printf("#   %-53s: %8.1f ms  (%.3f x raw; %.3f x)\n", k_path_names[path], t[path][reps / 2] * 1e3,
               t[path][reps / 2] / t[0][reps / 2], ratio[path][reps / 2]);
}

void bench_init_times(const ctx_t *c, int reps) {
    pthread_t w;
    if (pthread_create(&w, NULL, worker, NULL) != 0 || pthread_detach(w) != 0) DIE("pthread_create failed");
    char dir[256] = "";
    if (opt.rank == 0) {
        snprintf(dir, sizeof dir, "%s/hidet-nccl-bench-XXXXXX", opt.tmpdir);
        if (mkdtemp(dir) == NULL) DIE("mkdtemp: cannot make a rendezvous directory in %s (--tmpdir)", opt.tmpdir);
    }
    bench_spread(dir, sizeof dir);
    int paths = strcasecmp(bench_bootstrap_label(), "pmix") == 0 ? PATHS : PATHS - 1; /* HIDET_NCCL_BOOTSTRAP=pmix too */
    double t[PATHS][MAX_REPS];
    if (reps > MAX_REPS) reps = MAX_REPS;
    for (int r = -1; r < reps; r++) { /* r == -1: a warm-up of each, not counted */
        for (int path = 0; path < paths; path++) {
            bench_barrier();
            double took = path < RAW_PATHS ? raw_path(c, path, r == reps - 1) : library_path(path, dir, r);
            if (r >= 0) t[path][r] = took;
        }
    }
    if (opt.rank == 0) rmdir(dir);
    print_init_times(t, paths, reps);
}

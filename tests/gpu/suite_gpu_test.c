/* The GPU suite of one bootstrap, one GPU per process; built twice: suite_gpu_test_mpi
 * (mpirun -np N, hidet_nccl_mpi_init) and suite_gpu_test_file (hidet-nccl-run -n N,
 * hidet_nccl_init).
 *   1. every supported dtype x op, out of place and in place, counts 1 .. 2^28 with odd
 *      ones, checked exactly (and nothing written past the count);
 *   2. a split communicator (ranks reversed by key), checked;
 *   3. an all_reduce captured in a CUDA graph and replayed 100 times with new inputs;
 *   4. 10,000 back-to-back all_reduces of every supported dtype x op, one wait at the end;
 *   5. init / all_reduce / finalize 20 times: no more open file descriptors after the 20th
 *      cycle than after the 1st, and no device memory kept (at most 2 MiB, and no more than
 *      raw NCCL keeps over 20 cycles of its own).
 * "suite_gpu_test_X cycles" runs part 5 only.
 * Each rank prints its lines and "suite_gpu_test: OK" or "FAILED"; the exit status says. */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/gpu/check_all.h"
#include "tests/gpu/now.h"
#include "tools/support/raw_nccl.h"
#include "tools/support/reference.h"
#ifdef HN_SUITE_MPI
#include <mpi.h>

#include "hidet_nccl/bootstrap_mpi.h"
#define BOOTSTRAP "MPI"
static hidet_nccl_status_t start(int *id) { return hidet_nccl_mpi_init(id); }
#else
#define BOOTSTRAP "file"
static hidet_nccl_status_t start(int *id) { return hidet_nccl_init(id); }
#endif

static int g_rank = -1, g_failed;

#define EXPECT(cond, ...)                                          \
    do {                                                           \
        if (!(cond)) {                                             \
            g_failed = 1;                                          \
            fprintf(stderr, "rank %d: FAILED %s: ", g_rank, #cond); \
            fprintf(stderr, __VA_ARGS__);                          \
            fprintf(stderr, " (%s)\n", hidet_nccl_last_error());   \
        }                                                          \
    } while (0)

static void report(const char *what, hn_check_result_t r, int refused_expected) {
    printf("rank %d: %s: %d checks, %d wrong, %d errors, %d pairs refused\n", g_rank, what, r.checked, r.wrong,
           r.errors, r.refused);
    EXPECT(r.wrong == 0 && r.errors == 0 && r.refused == refused_expected, "%s", what);
}

static void check_split(int world) {
    int size = 0, split = -1, split_rank = -1, split_size = 0;
    hidet_nccl_comm_size(world, &size);
    EXPECT(hidet_nccl_comm_split(world, 0, -g_rank, &split) == HIDET_NCCL_SUCCESS, "split");
    if (split < 0) return;
    hidet_nccl_comm_rank(split, &split_rank);
    hidet_nccl_comm_size(split, &split_size);
    EXPECT(split_size == size && split_rank == size - 1 - g_rank, "split rank %d of %d", split_rank, split_size);
    const size_t counts[] = {1, 1001, (1u << 20) + 1};
    report("split communicator (ranks reversed)", hn_check_every_dtype_op(split, counts, 3), 19);
    EXPECT(hidet_nccl_comm_destroy(split) == HIDET_NCCL_SUCCESS, "destroy split");
}

/* Out of place, float32 sum of (k + rank + i % 7) over ranks, replay k of 100. */
static void check_graph(int id) {
    int size = 0;
    hidet_nccl_comm_size(id, &size);
    const size_t n = (1u << 20) + 1;
    float *host = NULL, *send = NULL, *recv = NULL;
    cudaStream_t s;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    EXPECT(cudaMallocHost((void **)&host, n * sizeof *host) == cudaSuccess && cudaMalloc((void **)&send, n * 4) == cudaSuccess &&
               cudaMalloc((void **)&recv, n * 4) == cudaSuccess && cudaStreamCreate(&s) == cudaSuccess,
           "graph buffers");
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess, "begin capture");
    EXPECT(hidet_nccl_all_reduce(id, send, recv, n, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s) == HIDET_NCCL_SUCCESS,
           "captured all_reduce");
    EXPECT(cudaStreamEndCapture(s, &graph) == cudaSuccess, "end capture");
    EXPECT(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "instantiate");
    int wrong = 0;
    for (int k = 0; k < 100 && exec != NULL; k++) {
        for (size_t i = 0; i < n; i++) host[i] = (float)(k + g_rank + (int)(i % 7));
        cudaMemcpyAsync(send, host, n * 4, cudaMemcpyHostToDevice, s);
        cudaMemsetAsync(recv, 0xA5, n * 4, s);
        if (cudaGraphLaunch(exec, s) != cudaSuccess) wrong++;
        cudaMemcpyAsync(host, recv, n * 4, cudaMemcpyDeviceToHost, s);
        if (hidet_nccl_comm_wait(id, s, 60) != HIDET_NCCL_SUCCESS) {
            wrong++;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            float want = (float)(size * (k + (int)(i % 7)) + size * (size - 1) / 2);
            if (host[i] != want) {
                if (wrong++ == 0)
                    fprintf(stderr, "rank %d: graph replay %d element %zu: %g, want %g\n", g_rank, k, i, host[i], want);
                break;
            }
        }
    }
    printf("rank %d: CUDA graph: 1 all_reduce of %zu float32 captured, 100 replays with new inputs, %d wrong\n",
           g_rank, n, wrong);
    EXPECT(wrong == 0, "graph replays");
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
    cudaFree(send);
    cudaFree(recv);
    cudaFreeHost(host);
}

/* 10,000 all_reduces on one stream, cycling through every supported pair with counts
 * 1 .. 1000; then one wait, and each pair's last result checked. */
#define MIXED_CALLS 10000
#define MIXED_MAX 1000
static void check_mixed(int id) {
    int size = 0;
    hidet_nccl_comm_size(id, &size);
    typedef struct {
        hidet_nccl_dtype_t d;
        hidet_nccl_op_t op;
        hidet_nccl_reduction_t red;
        void *send, *recv;
        size_t last;
    } pair_t;
    pair_t pairs[HIDET_NCCL_NUM_DTYPES * HIDET_NCCL_NUM_OPS];
    int np = 0;
    unsigned char *host = malloc(MIXED_MAX * 16 * 2), *want = malloc(MIXED_MAX * 16 * 2);
    for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++)
        for (int op = 0; op < HIDET_NCCL_NUM_OPS; op++) {
            pair_t *p = &pairs[np];
            if (hidet_nccl_reduction((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)op, &p->red) != HIDET_NCCL_SUCCESS)
                continue;
            p->d = (hidet_nccl_dtype_t)d;
            p->op = (hidet_nccl_op_t)op;
            size_t bytes = MIXED_MAX * p->red.count_multiplier * hn_ref_elem_size(p->red.nccl_dtype);
            cudaMalloc(&p->send, bytes);
            cudaMalloc(&p->recv, bytes);
            hn_ref_fill(p->d, p->op, g_rank, MIXED_MAX * p->red.count_multiplier, host);
            cudaMemcpy(p->send, host, bytes, cudaMemcpyHostToDevice);
            np++;
        }
    cudaStream_t s;
    cudaStreamCreate(&s);
    int errors = 0;
    double t0 = hn_now();
    for (int i = 0; i < MIXED_CALLS; i++) {
        pair_t *p = &pairs[i % np];
        p->last = 1 + (size_t)(i * 7919) % MIXED_MAX;
        if (hidet_nccl_all_reduce(id, p->send, p->recv, p->last, p->d, p->op, s) != HIDET_NCCL_SUCCESS &&
            errors++ == 0)
            fprintf(stderr, "rank %d: call %d: %s\n", g_rank, i, hidet_nccl_last_error());
    }
    hidet_nccl_status_t st = hidet_nccl_comm_wait(id, s, 120);
    double took = hn_now() - t0;
    EXPECT(st == HIDET_NCCL_SUCCESS, "wait for 10,000 all_reduces");
    int wrong = 0;
    for (int k = 0; k < np; k++) {
        pair_t *p = &pairs[k];
        size_t n = p->last * p->red.count_multiplier;
        cudaMemcpy(host, p->recv, n * hn_ref_elem_size(p->red.nccl_dtype), cudaMemcpyDeviceToHost);
        hn_ref_expected(p->d, p->op, size, n, want);
        wrong += hn_ref_first_difference(p->d, p->op, host, want, n) != (size_t)-1;
        cudaFree(p->send);
        cudaFree(p->recv);
    }
    printf("rank %d: %d back-to-back all_reduces over %d dtype x op pairs in %.3f s: %d errors, %d pairs wrong\n",
           g_rank, MIXED_CALLS, np, took, errors, wrong);
    EXPECT(errors == 0 && wrong == 0, "mixed all_reduces");
    cudaStreamDestroy(s);
    free(host);
    free(want);
}

static void check_sum(double *buf, cudaStream_t s, int size, const char *what, int k) {
    double host[64];
    cudaStreamSynchronize(s);
    cudaMemcpy(host, buf, sizeof host, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 64; i++) EXPECT(host[i] == size * i + size * (size - 1) / 2.0, "%s cycle %d element %d", what, k, i);
}

static double *input_buffer(void) {
    double host[64], *buf = NULL;
    for (int i = 0; i < 64; i++) host[i] = g_rank + i;
    cudaMalloc((void **)&buf, sizeof host);
    cudaMemcpy(buf, host, sizeof host, cudaMemcpyHostToDevice);
    return buf;
}

/* One init / all_reduce (checked) / finalize cycle through the library. */
static void lib_cycle(int k) {
    int id = -1, size = 0;
    EXPECT(start(&id) == HIDET_NCCL_SUCCESS, "init of cycle %d", k);
    if (id < 0) return;
    hidet_nccl_comm_size(id, &size);
    cudaStream_t s;
    cudaStreamCreate(&s);
    double *buf = input_buffer();
    EXPECT(hidet_nccl_all_reduce(id, buf, buf, 64, HIDET_NCCL_FLOAT64, HIDET_NCCL_SUM, s) == HIDET_NCCL_SUCCESS &&
               hidet_nccl_comm_wait(id, s, 60) == HIDET_NCCL_SUCCESS,
           "all_reduce of cycle %d", k);
    check_sum(buf, s, size, "library", k);
    cudaFree(buf);
    cudaStreamDestroy(s);
    EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize of cycle %d", k);
}

/* The same cycle through raw NCCL (ncclGetUniqueId, the bootstrap's broadcast,
 * ncclCommInitRank, ncclAllReduce, ncclCommDestroy): what NCCL itself keeps per cycle. */
static void raw_cycle(int k) {
    hn_raw_nccl_t raw, *n = &raw;
    memset(&raw, 0, sizeof raw);
    char why[256] = "";
    hidet_nccl_bootstrap_h bs = NULL;
#ifdef HN_SUITE_MPI
    EXPECT(hidet_nccl_bootstrap_mpi(MPI_COMM_WORLD, &bs) == HIDET_NCCL_SUCCESS, "raw cycle bootstrap");
#else
    EXPECT(hidet_nccl_bootstrap_from_env(&bs) == HIDET_NCCL_SUCCESS, "raw cycle bootstrap");
#endif
    EXPECT(hn_raw_nccl(&raw, why, sizeof why) == 0, "raw NCCL: %s", why);
    if (bs == NULL || raw.AllReduce == NULL) return;
    int rank = -1, size = 0;
    hidet_nccl_bootstrap_rank(bs, &rank, &size);
    ncclUniqueId uid;
    memset(&uid, 0, sizeof uid);
    if (rank == 0) n->GetUniqueId(&uid);
    EXPECT(hidet_nccl_bootstrap_broadcast(bs, &uid, sizeof uid, 0, 60) == HIDET_NCCL_SUCCESS, "raw id broadcast");
    ncclComm_t comm = NULL;
    EXPECT(n->CommInitRank(&comm, size, uid, rank) == ncclSuccess, "raw ncclCommInitRank of cycle %d", k);
    cudaStream_t s;
    cudaStreamCreate(&s);
    double *buf = input_buffer();
    EXPECT(n->AllReduce(buf, buf, 64, ncclFloat64, ncclSum, comm, s) == ncclSuccess, "raw ncclAllReduce");
    check_sum(buf, s, size, "raw", k);
    cudaFree(buf);
    cudaStreamDestroy(s);
    EXPECT(n->CommDestroy(comm) == ncclSuccess, "raw ncclCommDestroy");
    hidet_nccl_bootstrap_destroy(bs);
}

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL) return -1;
    while (readdir(d) != NULL) n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own descriptor */
}

/* 20 cycles; returns the device memory (MiB) kept: the least used after any of the last 8
 * cycles minus the least after any of the first 8. (NCCL's buffers shared with a peer are
 * freed only when the peer lets go of them too, so a single reading swings by a whole
 * communicator's buffers, 288 MiB on 2 H200s, with the peer's timing; a leak would raise
 * every reading.) */
static double cycles(const char *what, void (*one)(int)) {
    double used[21] = {0}, first = 1e300, last = 1e300;
    int fds[21] = {0};
    double t0 = hn_now();
    char trace[21 * 12] = "";
    for (int k = 1; k <= 20; k++) {
        one(k);
        fds[k] = open_fds();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        used[k] = ((double)total_b - (double)free_b) / 1048576.0;
        if (k <= 8 && used[k] < first) first = used[k];
        if (k >= 13 && used[k] < last) last = used[k];
        snprintf(trace + strlen(trace), sizeof trace - strlen(trace), " %.0f", used[k] - used[1]);
    }
    printf("rank %d: 20 x %s init/all_reduce/finalize in %.2f s: open fds %d after the 1st, %d after the 20th; "
           "device memory used after each cycle, MiB beyond the 1st:%s\n",
           g_rank, what, hn_now() - t0, fds[1], fds[20], trace);
    EXPECT(fds[20] <= fds[1], "%s: fds %d then %d", what, fds[1], fds[20]);
    return last - first;
}

/* The library keeps nothing per cycle: no file descriptor, and no more device memory than
 * raw NCCL doing the same. */
static void check_cycles(void) {
    double lib = cycles("library", lib_cycle);
    double raw = cycles("raw NCCL", raw_cycle);
    printf("rank %d: device memory kept over 20 cycles (least of the last 8 minus least of the first 8): library "
           "%.1f MiB, raw NCCL %.1f MiB\n", g_rank, lib, raw);
    EXPECT(lib <= 2.0 && lib <= raw + 2.0, "library kept %.1f MiB, raw NCCL %.1f MiB", lib, raw);
}

int main(int argc, char **argv) {
#ifdef HN_SUITE_MPI
    MPI_Init(&argc, &argv); /* the application's: the library leaves it initialized for the 20 cycles */
#endif
    if (argc > 1 && strcmp(argv[1], "cycles") == 0) { /* only the init/finalize cycles */
        const char *r = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : getenv("HIDET_NCCL_RANK");
        g_rank = r ? atoi(r) : -1;
        check_cycles();
        printf("rank %d: suite_gpu_test cycles: %s\n", g_rank, g_failed ? "FAILED" : "OK");
#ifdef HN_SUITE_MPI
        MPI_Finalize();
#endif
        return g_failed;
    }
    int id = -1, size = 0;
    double t0 = hn_now();
    if (start(&id) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "suite_gpu_test: init: %s\n", hidet_nccl_last_error());
        return 1;
    }
    hidet_nccl_comm_rank(id, &g_rank);
    hidet_nccl_comm_size(id, &size);
    printf("rank %d: %s bootstrap, %d ranks, ready in %.3f s\n", g_rank, BOOTSTRAP, size, hn_now() - t0);
    const size_t counts[] = {1, 2, 3, 7, 64, 1001, 65537, (1u << 20) + 1, (1u << 24) - 1, 1u << 28};
    t0 = hn_now();
    report("every dtype x op, counts 1 .. 2^28", hn_check_every_dtype_op(id, counts, 10), 19);
    printf("rank %d: (%.1f s)\n", g_rank, hn_now() - t0);
    check_split(id);
    check_graph(id);
    check_mixed(id);
    EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize");
    check_cycles();
    printf("rank %d: suite_gpu_test (%s bootstrap): %s\n", g_rank, BOOTSTRAP, g_failed ? "FAILED" : "OK");
#ifdef HN_SUITE_MPI
    MPI_Finalize();
#endif
    return g_failed;
}

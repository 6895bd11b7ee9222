/* Library memory on GPUs, one process per GPU (hidet-nccl-run -n N mem_gpu_test): memory
 * registered AUTO gives exact all_reduce (float32, bfloat16), all_gather and reduce_scatter at
 * sizes that take each view, inside a CUDA graph too; it makes a sibling communicator per view
 * its tuning table takes (MEM_GPU_TEST_SIBLINGS, default 2: the built-in table), and with
 * MEM_GPU_TEST_MISMATCH ranks given different tables are told so, not left waiting; freeing or deregistering memory a
 * pending collective uses is refused and loses nothing; a window on memory not from the
 * library is refused; 20 alloc / register / all_reduce / deregister / free cycles keep no
 * device memory; a communicator made with NCCL's knobs (CTA policy, min/max CTAs, name, split
 * share) works, and so do its split and its AUTO siblings, which are made with the same knobs.
 * Prints "rank R: N checks, N wrong" and "mem_gpu_test OK"; exits non-zero otherwise. Without a
 * GPU it fails. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"

static int g_rank, g_n, g_checks, g_wrong;

#define HN(call)                                                                                                       \
    do {                                                                                                               \
        hidet_nccl_status_t st_ = (call);                                                                              \
        if (st_ != HIDET_NCCL_SUCCESS) {                                                                               \
            fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, #call, hidet_nccl_last_error());                       \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
#define CU(call)                                                                                                       \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "rank %d: %s: %s\n", g_rank, #call, cudaGetErrorString(e_));                               \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static void check(int ok, const char *what, size_t count) {
    g_checks++;
    if (!ok) {
        g_wrong++;
        fprintf(stderr, "rank %d: WRONG %s (count %zu)\n", g_rank, what, count);
    }
}

static void expect(hidet_nccl_status_t got, hidet_nccl_status_t want, const char *needle, const char *what) {
    int ok = got == want && (needle == NULL || strstr(hidet_nccl_last_error(), needle) != NULL);
    if (!ok) fprintf(stderr, "rank %d: %s: status %d, message '%s'\n", g_rank, what, got, hidet_nccl_last_error());
    check(ok, what, 0);
}

/* bfloat16 of a small integer (exact) and back. */
static uint16_t bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* In-place all_reduce sum of rank + 1 (+ i % 3) over count elements at p, checked exactly. */
static void all_reduce_exact(int id, void *p, size_t count, hidet_nccl_dtype_t dtype, cudaStream_t s, void *host) {
    size_t es = dtype == HIDET_NCCL_FLOAT32 ? 4 : 2;
    for (size_t i = 0; i < count; i++) {
        float v = (float)(g_rank + 1 + (int)(i % 3));
        if (es == 4)
            memcpy((char *)host + i * 4, &v, 4);
        else
            ((uint16_t *)host)[i] = bf16(v);
    }
    CU(cudaMemcpyAsync(p, host, count * es, cudaMemcpyHostToDevice, s));
    HN(hidet_nccl_all_reduce(id, p, p, count, dtype, HIDET_NCCL_SUM, s));
    CU(cudaMemcpyAsync(host, p, count * es, cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    int ok = 1;
    for (size_t i = 0; i < count && ok; i++) {
        float want = (float)(g_n * (g_n + 1) / 2 + g_n * (int)(i % 3));
        if (es == 4)
            ok = memcmp((char *)host + i * 4, &want, 4) == 0;
        else
            ok = ((uint16_t *)host)[i] == bf16(want);
    }
    check(ok,
          dtype == HIDET_NCCL_FLOAT32 ? "all_reduce float32 on library memory"
                                      : "all_reduce bfloat16 on library memory",
          count);
}

/* The summary line, finalize, and the exit code. */
static int finish(void *host) {
    printf("rank %d: %d checks, %d wrong\n", g_rank, g_checks, g_wrong);
    HN(hidet_nccl_finalize());
    free(host);
    if (g_wrong == 0) printf("rank %d: mem_gpu_test OK\n", g_rank);
    return g_wrong != 0;
}

static const size_t k_mem_bytes = 256u << 20; /* the library memory of the first checks */

/* mem_table.sh mismatch (each rank another table): AUTO registration refused, and the
 * communicator still works. The exit code. */
static int mismatched_tables(int id, void *mem, cudaStream_t s, void *host) {
    if (g_n < 2) {
        fprintf(stderr, "FAIL: MEM_GPU_TEST_MISMATCH needs at least 2 ranks; this run has %d\n", g_n);
        return 1;
    }
    int h;
    expect(hidet_nccl_register(id, mem, k_mem_bytes, HIDET_NCCL_REGISTER_AUTO, &h), HIDET_NCCL_ERROR_INVALID_USAGE,
           "read different tuning tables", "AUTO registration with another table on another rank");
    all_reduce_exact(id, mem, 1 << 16, HIDET_NCCL_FLOAT32, s, host); /* the communicator still works */
    HN(hidet_nccl_mem_free(mem));
    return finish(host);
}

/* The first AUTO registration of mem: the siblings it makes, checked, and the device memory it
 * took (free memory was before) once every view is connected. Its handle. */
static int register_first_auto(int id, void *mem, size_t before, cudaStream_t s) {
    int h, ids_before, ids_after;
    HN(hidet_nccl_comm_count(&ids_before));
    HN(hidet_nccl_register(id, mem, k_mem_bytes, HIDET_NCCL_REGISTER_AUTO, &h));
    HN(hidet_nccl_comm_count(&ids_after));
    /* a sibling per view the table takes: 2 with the built-in table; MEM_GPU_TEST_SIBLINGS
     * says how many the HIDET_NCCL_TUNE_FILE given takes */
    const char *want_env = getenv("MEM_GPU_TEST_SIBLINGS");
    int want_siblings = want_env != NULL ? atoi(want_env) : 2;
    if (ids_after - ids_before != want_siblings)
        fprintf(stderr, "rank %d: AUTO made %d siblings, want %d\n", g_rank, ids_after - ids_before, want_siblings);
    check(ids_after - ids_before == want_siblings, "siblings made by the first AUTO registration", 0);
    HN(hidet_nccl_all_reduce(id, mem, mem, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s)); /* connect the views */
    HN(hidet_nccl_all_reduce(id, mem, mem, 1 << 24, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s));
    HN(hidet_nccl_all_reduce(id, mem, mem, 1 << 16, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s));
    CU(cudaStreamSynchronize(s));
    size_t after, total_mem;
    CU(cudaMemGetInfo(&after, &total_mem));
    printf("rank %d: the first AUTO registration (%d communicator ids: its siblings, or a split that only checks the "
           "tables) took %.1f MiB of device memory\n",
           g_rank, ids_after - ids_before, ((double)before - (double)after) / (1 << 20));
    return h;
}

/* every view: 8 B .. 64 MiB */
static void every_view(int id, void *mem, cudaStream_t s, void *host) {
    for (size_t bytes = 8; bytes <= (64u << 20); bytes *= 4) {
        all_reduce_exact(id, mem, bytes / 4, HIDET_NCCL_FLOAT32, s, host);
        all_reduce_exact(id, mem, bytes / 2, HIDET_NCCL_BFLOAT16, s, host);
    }
}

/* all_gather of per uint8 from each rank (rank + 1) from src into dst, checked exactly. */
static void all_gather_exact(int id, char *src, char *dst, size_t per, cudaStream_t s, void *host) {
    CU(cudaMemsetAsync(src, g_rank + 1, per, s));
    HN(hidet_nccl_all_gather(id, src, dst, per, HIDET_NCCL_UINT8, s));
    CU(cudaMemcpyAsync(host, dst, per * (size_t)g_n, cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    int ok = 1;
    for (size_t i = 0; i < per * (size_t)g_n && ok; i++)
        ok = ((unsigned char *)host)[i] == i / per + 1;
    check(ok, "all_gather on library memory", per);
}

/* reduce_scatter sum of rc float32 per rank (rank + 1) from src into dst, checked exactly. */
static void reduce_scatter_exact(int id, char *src, char *dst, size_t rc, cudaStream_t s, void *host) {
    float *f = host;
    for (size_t i = 0; i < rc * (size_t)g_n; i++)
        f[i] = (float)(g_rank + 1);
    CU(cudaMemcpyAsync(src, host, rc * (size_t)g_n * 4, cudaMemcpyHostToDevice, s));
    HN(hidet_nccl_reduce_scatter(id, src, dst, rc, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s));
    CU(cudaMemcpyAsync(host, dst, rc * 4, cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    int ok = 1;
    for (size_t i = 0; i < rc && ok; i++)
        ok = f[i] == (float)(g_n * (g_n + 1) / 2);
    check(ok, "reduce_scatter on library memory", rc);
}

/* all_gather and reduce_scatter (uint8 / float32) */
static void gather_and_scatter(int id, void *mem, cudaStream_t s, void *host) {
    for (size_t per = 1024; per <= (8u << 20); per *= 32) {
        char *src = (char *)mem + (128u << 20), *dst = mem;
        all_gather_exact(id, src, dst, per, s, host);
        reduce_scatter_exact(id, src, dst, per / 4, s, host);
    }
}

/* a CUDA graph of all_reduces of three sizes (one per view of the built-in table) */
static void graph_replays(int id, void *mem, cudaStream_t s, void *host) {
    size_t counts[3] = {16, 1 << 18, 1 << 23};
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    float *f = host;
    for (size_t i = 0; i < counts[2]; i++)
        f[i] = 1.0f;
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < 3; k++)
        HN(hidet_nccl_all_reduce(id, mem, (char *)mem + (64u << 20), counts[k], HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM,
                                 s));
    CU(cudaStreamEndCapture(s, &graph));
    CU(cudaGraphInstantiate(&exec, graph, 0));
    CU(cudaMemcpyAsync(mem, host, counts[2] * 4, cudaMemcpyHostToDevice, s));
    for (int r = 0; r < 10; r++)
        CU(cudaGraphLaunch(exec, s));
    CU(cudaMemcpyAsync(host, (char *)mem + (64u << 20), counts[2] * 4, cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    int ok = 1;
    for (size_t i = 0; i < counts[2] && ok; i++)
        ok = f[i] == (float)g_n;
    check(ok, "graph of all_reduces on library memory, 10 replays", counts[2]);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
}

/* memory in use: refused, nothing lost; then released once the stream is done (mem, registered
 * as h, is freed at the end) */
static void in_use_refused(int id, void *mem, int h, cudaStream_t s) {
    CU(cudaStreamSynchronize(s));
    /* out of place: on one rank an in-place all_reduce is nothing to do */
    char *half = (char *)mem + (128u << 20);
    for (int k = 0; k < 4; k++)
        HN(hidet_nccl_all_reduce(id, mem, half, (128u << 20) / 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s));
    expect(hidet_nccl_deregister(id, h), HIDET_NCCL_ERROR_INVALID_USAGE, "still in use", "deregister while in use");
    expect(hidet_nccl_mem_free(mem), HIDET_NCCL_ERROR_INVALID_USAGE, "deregister it first", "free while registered");
    CU(cudaStreamSynchronize(s));
    HN(hidet_nccl_deregister(id, h));
    expect(hidet_nccl_deregister(id, h), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "deregistered already", "deregister twice");
    for (int k = 0; k < 4; k++)
        HN(hidet_nccl_all_reduce(id, mem, half, (128u << 20) / 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s));
    expect(hidet_nccl_mem_free(mem), HIDET_NCCL_ERROR_INVALID_USAGE, "still in use", "free while in use");
    CU(cudaStreamSynchronize(s));
    HN(hidet_nccl_mem_free(mem));
}

/* memory not from the library: no window on it, no mem_free of it */
static void foreign_memory_refused(int id) {
    void *plain;
    int h;
    CU(cudaMalloc(&plain, 1 << 20));
    expect(hidet_nccl_register(id, plain, 1 << 20, HIDET_NCCL_REGISTER_WINDOW, &h), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
           "not memory from hidet_nccl_mem_alloc", "window on cudaMalloc memory");
    expect(hidet_nccl_mem_free(plain), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "not memory from", "mem_free of cudaMalloc");
    cudaFree(plain);
}

/* 20 cycles keep nothing: device memory after 10 and after 20 cycles, every rank done (a
 * barrier) before each reading, since a peer's mapping of this rank's window holds its
 * memory until the peer lets go; one cycle's worth may be in flight, nothing may grow. */
static void cycles_keep_nothing(int id, cudaStream_t s, void *host) {
    size_t free0 = 0, free10 = 0, free20 = 0, total;
    for (int cycle = 0; cycle <= 20; cycle++) {
        if (cycle == 0 || cycle == 10 || cycle == 20) {
            HN(hidet_nccl_barrier(id, s));
            CU(cudaStreamSynchronize(s));
            CU(cudaDeviceSynchronize());
            CU(cudaMemGetInfo(cycle == 0 ? &free0 : cycle == 10 ? &free10 : &free20, &total));
        }
        if (cycle == 20) break;
        void *p;
        int h;
        HN(hidet_nccl_mem_alloc(id, 32u << 20, &p));
        HN(hidet_nccl_register(id, p, 32u << 20, HIDET_NCCL_REGISTER_AUTO, &h));
        all_reduce_exact(id, p, (32u << 20) / 4, HIDET_NCCL_FLOAT32, s, host);
        HN(hidet_nccl_deregister(id, h));
        HN(hidet_nccl_mem_free(p));
    }
    double kept = ((double)free0 - (double)free20) / (1 << 20), grew = ((double)free10 - (double)free20) / (1 << 20);
    printf("rank %d: 20 alloc/register/all_reduce/deregister/free cycles of 32 MiB: %.1f MiB of device memory kept, "
           "%.1f MiB more after cycle 20 than after cycle 10\n",
           g_rank, kept, grew);
    check(grew < 2.0 && kept <= 32.0, "device memory kept by 20 cycles", 20);
}

/* NCCL's knobs through a second communicator from the same launcher environment */
static void nccl_knobs(cudaStream_t s, void *host) {
    hidet_nccl_bootstrap_h bs;
    HN(hidet_nccl_bootstrap_from_env(&bs));
    hidet_nccl_init_options_t opt = HIDET_NCCL_INIT_OPTIONS_INIT;
    opt.cta_policy = 1; /* NCCL_CTA_POLICY_EFFICIENCY */
    opt.min_ctas = 2;
    opt.max_ctas = 8;
    opt.comm_name = "mem_gpu_test knobs";
    opt.split_share = 1;
    int id2;
    HN(hidet_nccl_comm_init(bs, &opt, &id2));
    HN(hidet_nccl_bootstrap_destroy(bs));
    void *p;
    HN(hidet_nccl_mem_alloc(id2, 4u << 20, &p));
    all_reduce_exact(id2, p, (1 << 20) / 4, HIDET_NCCL_FLOAT32, s, host);
    /* its split and its AUTO siblings are made with the same knobs (the name's pointer kept by
     * the library), and work */
    int id3, h;
    HN(hidet_nccl_comm_split(id2, 0, g_n - 1 - g_rank, &id3));
    all_reduce_exact(id3, p, (1 << 20) / 4, HIDET_NCCL_FLOAT32, s, host);
    HN(hidet_nccl_register(id2, p, 4u << 20, HIDET_NCCL_REGISTER_AUTO, &h));
    all_reduce_exact(id2, p, 16, HIDET_NCCL_FLOAT32, s, host);            /* a window, by the built-in table */
    all_reduce_exact(id2, p, (2u << 20) / 4, HIDET_NCCL_FLOAT32, s, host); /* a window */
    all_reduce_exact(id2, p, (1u << 20) / 4, HIDET_NCCL_FLOAT32, s, host); /* plain */
    HN(hidet_nccl_deregister(id2, h));
    HN(hidet_nccl_comm_destroy(id3));
    HN(hidet_nccl_mem_free(p));
}

int main(void) {
    int id;
    HN(hidet_nccl_init(&id));
    HN(hidet_nccl_comm_rank(id, &g_rank));
    HN(hidet_nccl_comm_size(id, &g_n));
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *host = malloc(k_mem_bytes);
    void *mem;
    HN(hidet_nccl_mem_alloc(id, k_mem_bytes, &mem));
    size_t before, total_mem;
    CU(cudaDeviceSynchronize());
    CU(cudaMemGetInfo(&before, &total_mem));
    if (getenv("MEM_GPU_TEST_MISMATCH") != NULL) return mismatched_tables(id, mem, s, host);
    int h = register_first_auto(id, mem, before, s);
    every_view(id, mem, s, host);
    gather_and_scatter(id, mem, s, host);
    graph_replays(id, mem, s, host);
    in_use_refused(id, mem, h, s);
    foreign_memory_refused(id);
    cycles_keep_nothing(id, s, host);
    nccl_knobs(s, host);
    return finish(host);
}

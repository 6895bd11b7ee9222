/* Where a collective's time goes on a GPU machine, library against raw NCCL, one rank: for
 * every collective and the send/recv pair, `calls` back-to-back calls timed twice at once, on
 * the host (the wall time of the calls returning: what the CPU spends enqueuing) and on the
 * GPU (CUDA events around them: what the stream takes), the library's loop and raw NCCL's
 * alternating, 9 repetitions, medians. Where host time per call reaches the GPU's, the loop is
 * bound by the host and every host nanosecond the library adds shows on the GPU's clock.
 *   coll_cost_probe [owned|adopted] [group] [graph] [BYTES CALLS]
 *   coll_cost_probe parts     host time per call of an 8-byte broadcast on one rank: in place
 *                             (NCCL enqueues nothing for it) raw, the library, and raw beside
 *                             pieces of the library (its checks alone: count 0; a query); out of
 *                             place (a kernel launched) raw, the library, and raw followed by
 *                             one piece each: the checks, the whole in-place call, a locked add,
 *                             a load and a store, the coarse clock, 4 and 16 cold lines
 * owned: a communicator of the library (hidet_nccl_comm_init_all); adopted: one made by raw
 * NCCL and lent (hidet_nccl_comm_adopt), as a code that keeps its own does. group: each call
 * inside its own group_start/end (raw: ncclGroupStart/End). graph: the calls captured once and
 * replayed (GPU time only). aa: raw NCCL in both columns (the spread between two identical
 * loops: what a difference must exceed to mean anything). The recorder follows HIDET_NCCL_TRACE_ENTRIES (0: off)
 * and, where that is unset, HIDET_NCCL_TRACE_DIR (set: on).
 * One line a collective: raw and library, host and GPU microseconds per call, and the
 * differences. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tools/support/raw_nccl.h"

#define TOOL_NAME "coll_cost_probe"
#include "tools/support/tool_checks.h" /* DIE, HN, CU */

#define REPS 9

#define NC(call)                                                                      \
    do {                                                                              \
        ncclResult_t r_ = (call);                                                     \
        if (r_ != ncclSuccess) DIE("%s: %s", #call, g_raw.GetErrorString(r_)); \
    } while (0)

enum { ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, GATHER, SCATTER, SEND_RECV, NCOLL };
static const char *const names[NCOLL] = {"all_reduce", "broadcast", "reduce",  "all_gather", "reduce_scatter",
                                         "all_to_all", "gather",    "scatter", "send_recv"};

static hn_raw_nccl_t g_raw;
static int g_id, g_group, g_aa;
static ncclComm_t g_comm;
static cudaStream_t g_stream;
static char *g_send, *g_recv;
static size_t g_count; /* float32 elements */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void lib_call(int coll) {
    size_t n = g_count;
    cudaStream_t s = g_stream;
    if (g_group) HN(hidet_nccl_group_start());
    switch (coll) {
        case ALL_REDUCE: HN(hidet_nccl_all_reduce(g_id, g_send, g_recv, n, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s)); break;
        case BROADCAST: HN(hidet_nccl_broadcast(g_id, g_send, g_recv, n, HIDET_NCCL_FLOAT32, 0, s)); break;
        case REDUCE: HN(hidet_nccl_reduce(g_id, g_send, g_recv, n, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0, s)); break;
        case ALL_GATHER: HN(hidet_nccl_all_gather(g_id, g_send, g_recv, n, HIDET_NCCL_FLOAT32, s)); break;
        case REDUCE_SCATTER:
            HN(hidet_nccl_reduce_scatter(g_id, g_send, g_recv, n, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s));
            break;
        case ALL_TO_ALL: HN(hidet_nccl_all_to_all(g_id, g_send, g_recv, n, HIDET_NCCL_FLOAT32, s)); break;
        case GATHER: HN(hidet_nccl_gather(g_id, g_send, g_recv, n, HIDET_NCCL_FLOAT32, 0, s)); break;
        case SCATTER: HN(hidet_nccl_scatter(g_id, g_send, g_recv, n, HIDET_NCCL_FLOAT32, 0, s)); break;
        default:
            if (!g_group) HN(hidet_nccl_group_start());
            HN(hidet_nccl_send(g_id, g_send, n, HIDET_NCCL_FLOAT32, 0, s));
            HN(hidet_nccl_recv(g_id, g_recv, n, HIDET_NCCL_FLOAT32, 0, s));
            if (!g_group) HN(hidet_nccl_group_end());
            break;
    }
    if (g_group) HN(hidet_nccl_group_end());
}

static void raw_call(int coll) {
    const hn_raw_nccl_t *r = &g_raw;
    size_t n = g_count;
    ncclComm_t c = g_comm;
    cudaStream_t s = g_stream;
    if (g_group) NC(r->GroupStart());
    switch (coll) {
        case ALL_REDUCE: NC(r->AllReduce(g_send, g_recv, n, ncclFloat32, ncclSum, c, s)); break;
        case BROADCAST: NC(r->Broadcast(g_send, g_recv, n, ncclUint32, 0, c, s)); break;
        case REDUCE: NC(r->Reduce(g_send, g_recv, n, ncclFloat32, ncclSum, 0, c, s)); break;
        case ALL_GATHER: NC(r->AllGather(g_send, g_recv, n, ncclUint32, c, s)); break;
        case REDUCE_SCATTER: NC(r->ReduceScatter(g_send, g_recv, n, ncclFloat32, ncclSum, c, s)); break;
        case ALL_TO_ALL: NC(hn_raw_all_to_all(r, 0, g_send, g_recv, n, ncclUint32, n * 4, c, 1, s)); break;
        case GATHER: NC(hn_raw_gather_scatter(r, 0, 1, g_send, g_recv, n, ncclUint32, n * 4, 0, c, 0, 1, s)); break;
        case SCATTER: NC(hn_raw_gather_scatter(r, 0, 0, g_send, g_recv, n, ncclUint32, n * 4, 0, c, 0, 1, s)); break;
        default: NC(hn_raw_send_recv(r, g_send, g_recv, n, ncclUint32, 0, 0, c, s)); break;
    }
    if (g_group) NC(r->GroupEnd());
}

/* Host time per call of `calls` calls of fn, median of 7. */
static double host_per_call(void (*fn)(void), int calls) {
    double t[7];
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (int i = 0; i < calls; i++) fn();
        t[r] = (now() - t0) / calls;
        CU(cudaStreamSynchronize(g_stream));
    }
    for (int i = 1; i < 7; i++) /* insertion sort: seven values */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return t[3];
}
static void part_raw(void) { NC(g_raw.Broadcast(g_recv, g_recv, 2, ncclUint32, 0, g_comm, g_stream)); }
static void part_lib(void) { HN(hidet_nccl_broadcast(g_id, g_recv, g_recv, 2, HIDET_NCCL_FLOAT32, 0, g_stream)); }
static void part_raw_checks(void) {
    part_raw();
    HN(hidet_nccl_broadcast(g_id, g_recv, g_recv, 0, HIDET_NCCL_FLOAT32, 0, g_stream));
}
static void part_raw_query(void) {
    int rank;
    part_raw();
    HN(hidet_nccl_comm_rank(g_id, &rank));
}
static void part_nothing(void) {}
/* Out of place NCCL launches a kernel: what each piece of the library's work costs right after a
 * real launch (the caches and TLBs as NCCL leaves them). */
static void part_raw_oop(void) { NC(g_raw.Broadcast(g_send, g_recv, 2, ncclUint32, 0, g_comm, g_stream)); }
static void part_lib_oop(void) { HN(hidet_nccl_broadcast(g_id, g_send, g_recv, 2, HIDET_NCCL_FLOAT32, 0, g_stream)); }
static void part_oop_checks(void) {
    part_raw_oop();
    HN(hidet_nccl_broadcast(g_id, g_send, g_recv, 0, HIDET_NCCL_FLOAT32, 0, g_stream));
}
static void part_oop_in_place(void) { /* the library's whole path; NCCL enqueues nothing for the second */
    part_raw_oop();
    part_lib();
}
static _Atomic unsigned long g_counter;
static void part_oop_locked_add(void) {
    part_raw_oop();
    atomic_fetch_add_explicit(&g_counter, 1, memory_order_relaxed);
}
static void part_oop_plain_add(void) {
    part_raw_oop();
    atomic_store_explicit(&g_counter, atomic_load_explicit(&g_counter, memory_order_relaxed) + 1, memory_order_relaxed);
}
static void part_oop_clock(void) {
    struct timespec ts;
    part_raw_oop();
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    atomic_store_explicit(&g_counter, (unsigned long)ts.tv_nsec, memory_order_relaxed);
}
/* n lines of a buffer far larger than the caches, new ones each call (a page apart: each a
 * line and a TLB entry). */
#define COLD_BYTES (256u << 20)
static volatile unsigned char *g_cold;
static size_t g_cold_at;
static void touch_cold(int n) {
    for (int i = 0; i < n; i++) {
        g_cold_at = (g_cold_at + 4096 + 64) % COLD_BYTES;
        (void)g_cold[g_cold_at];
    }
}
static void part_oop_cold4(void) {
    part_raw_oop();
    touch_cold(4);
}
static void part_oop_cold16(void) {
    part_raw_oop();
    touch_cold(16);
}

static void parts(void) {
    static const struct {
        const char *what;
        void (*fn)(void);
    } rows[] = {
        {"raw ncclBroadcast (in place)", part_raw},
        {"hidet_nccl_broadcast (in place)", part_lib},
        {"raw + the library's checks (count 0)", part_raw_checks},
        {"raw + hidet_nccl_comm_rank", part_raw_query},
        {"nothing (the loop)", part_nothing},
        {"raw ncclBroadcast (out of place)", part_raw_oop},
        {"hidet_nccl_broadcast (out of place)", part_lib_oop},
        {"raw oop + the library's checks (count 0)", part_oop_checks},
        {"raw oop + hidet_nccl_broadcast in place", part_oop_in_place},
        {"raw oop + a locked add", part_oop_locked_add},
        {"raw oop + a load and a store", part_oop_plain_add},
        {"raw oop + the coarse clock", part_oop_clock},
        {"raw oop + 4 cold lines (4 pages)", part_oop_cold4},
        {"raw oop + 16 cold lines (16 pages)", part_oop_cold16},
    };
    g_cold = calloc(COLD_BYTES, 1);
    if (g_cold == NULL) DIE("out of memory for the cold buffer");
    for (size_t i = 0; i < COLD_BYTES; i += 4096) g_cold[i] = 1; /* mapped */
    printf("# coll_cost_probe parts: 8-byte broadcast, 1 rank, 20000 calls, median of 7 (us per call); in place "
           "NCCL enqueues nothing, out of place (oop) it launches a kernel\n");
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            printf("  %-44s %8.3f\n", rows[i].what, host_per_call(rows[i].fn, 20000) * 1e6);
    free((void *)g_cold);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Host and GPU seconds per call of `calls` calls (graph: captured once, replayed; host 0). */
static void timed(int coll, int raw, int calls, int graph, double *host, double *gpu) {
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    cudaGraphExec_t exec = NULL;
    if (graph) {
        cudaGraph_t g;
        CU(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < calls; i++) raw || g_aa ? raw_call(coll) : lib_call(coll);
        CU(cudaStreamEndCapture(g_stream, &g));
        CU(cudaGraphInstantiate(&exec, g, 0));
        CU(cudaGraphDestroy(g));
        CU(cudaGraphLaunch(exec, g_stream)); /* uploads it */
    }
    CU(cudaStreamSynchronize(g_stream));
    CU(cudaEventRecord(a, g_stream));
    double t0 = now();
    if (graph) CU(cudaGraphLaunch(exec, g_stream));
    else
        for (int i = 0; i < calls; i++) raw || g_aa ? raw_call(coll) : lib_call(coll);
    double t1 = now();
    CU(cudaEventRecord(b, g_stream));
    CU(cudaEventSynchronize(b));
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, a, b));
    *host = graph ? 0 : (t1 - t0) / calls;
    *gpu = ms * 1e-3 / calls;
    if (exec) cudaGraphExecDestroy(exec);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
}

int main(int argc, char **argv) {
    int adopted = 0, graph = 0, calls = 200, want_parts = 0;
    size_t bytes = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "adopted")) adopted = 1;
        else if (!strcmp(argv[i], "owned")) adopted = 0;
        else if (!strcmp(argv[i], "group")) g_group = 1;
        else if (!strcmp(argv[i], "graph")) graph = 1;
        else if (!strcmp(argv[i], "parts")) want_parts = 1;
        else if (!strcmp(argv[i], "aa")) g_aa = 1;
        else if (bytes == 8 && i + 1 < argc && atol(argv[i]) > 0) bytes = (size_t)atol(argv[i]), calls = atoi(argv[++i]);
        else DIE("usage: coll_cost_probe [owned|adopted] [group] [graph] [BYTES CALLS]");
    }
    char why[256];
    if (hn_raw_nccl(&g_raw, why, sizeof why) != 0) DIE("raw NCCL: %s", why);
    if (adopted) {
        ncclUniqueId uid;
        NC(g_raw.GetUniqueId(&uid));
        CU(cudaSetDevice(0));
        NC(g_raw.CommInitRank(&g_comm, 1, uid, 0));
        HN(hidet_nccl_comm_adopt(g_comm, &g_id));
    } else {
        HN(hidet_nccl_comm_init_all(1, NULL, &g_id));
        HN(hidet_nccl_get_comm(g_id, &g_comm));
    }
    CU(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    g_count = bytes / 4 ? bytes / 4 : 1;
    CU(cudaMalloc((void **)&g_send, g_count * 4));
    CU(cudaMalloc((void **)&g_recv, g_count * 4));
    CU(cudaMemset(g_send, 0, g_count * 4));
    if (want_parts) {
        parts();
        HN(hidet_nccl_finalize());
        return 0;
    }
    const char *entries = getenv("HIDET_NCCL_TRACE_ENTRIES"), *dir = getenv("HIDET_NCCL_TRACE_DIR");
    int recorded = entries && *entries ? strcmp(entries, "0") != 0 : dir && *dir; /* core/trace/trace_ring.c's rule */
    printf("# coll_cost_probe: %s communicator, 1 rank, %zu bytes out of place, %d calls%s%s, recorder %s, %d reps "
           "(medians)%s\n",
           adopted ? "adopted" : "owned", bytes, calls, g_group ? ", each in a group" : "",
           graph ? ", in a CUDA graph" : "", recorded ? "on" : "off", REPS,
           g_aa ? "; A/A: raw NCCL in the library's column too" : "");
    printf("# %-14s %9s %9s %9s | %9s %9s %9s   (us per call)\n", "collective", "raw host", "lib host", "+host",
           "raw gpu", "lib gpu", "+gpu");
    for (int coll = 0; coll < NCOLL; coll++) {
        double rh[REPS], lh[REPS], rg[REPS], lg[REPS], h, g;
        for (int w = 0; w < 2; w++) timed(coll, w, 20, graph, &h, &g); /* warm-up, both */
        for (int r = 0; r < REPS; r++) {
            int first = r & 1; /* alternate which goes first */
            timed(coll, first, calls, graph, first ? &rh[r] : &lh[r], first ? &rg[r] : &lg[r]);
            timed(coll, !first, calls, graph, first ? &lh[r] : &rh[r], first ? &lg[r] : &rg[r]);
        }
        qsort(rh, REPS, sizeof rh[0], cmp);
        qsort(lh, REPS, sizeof lh[0], cmp);
        qsort(rg, REPS, sizeof rg[0], cmp);
        qsort(lg, REPS, sizeof lg[0], cmp);
        int m = REPS / 2;
        printf("  %-14s %9.3f %9.3f %+9.3f | %9.3f %9.3f %+9.3f\n", names[coll], rh[m] * 1e6, lh[m] * 1e6,
               (lh[m] - rh[m]) * 1e6, rg[m] * 1e6, lg[m] * 1e6, (lg[m] - rg[m]) * 1e6);
    }
    CU(cudaStreamSynchronize(g_stream));
    cudaFree(g_send);
    cudaFree(g_recv);
    HN(hidet_nccl_finalize()); /* destroys the owned one; an adopted one stays the caller's */
    if (adopted) g_raw.CommDestroy(g_comm);
    return 0;
}

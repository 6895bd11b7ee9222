/* What the library adds on the host to each collective call: every collective through the
 * library against the same NCCL function called directly, both into the recording stand-in
 * for NCCL (tools/support/fake_nccl.c, which only logs), so that only the host cost is left.
 *   [COLD=1] collective_overhead_bench LIBFAKE_NCCL.so [CALLS] [cuda]
 * COLD=1 reads 4 MiB between two calls (untimed), so that each call starts with the caches a
 * real program leaves it (code and data evicted from L1 and L2), not warm from the last call.
 * With "cuda" (a GPU machine) the calls name a real CUDA stream, and a third column has the
 * recorder with completion tracking (a CUDA event recorded per call). 
 * Prints ns per call, library (flight recorder on, as HIDET_NCCL_TRACE_ENTRIES=2048 asks; and
 * off, its default without a trace directory) and direct, what the library adds, and what the
 * recorder adds (on minus off, completion tracking off), for each collective. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tools/support/fake_nccl.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static fake_nccl_clear_fn g_clear;
static char g_buf[1 << 16];
static cudaStream_t g_stream = (cudaStream_t)(uintptr_t)0x5; /* a real one with "cuda" */
#define STREAM g_stream
#define BATCH 1000 /* calls between two clears of the stand-in's log */

typedef int (*call_fn)(void *ctx);
static int g_cold;                     /* COLD=1 */
static unsigned char g_evict[4 << 20]; /* read, not written: no stores left pending for the next call */
static volatile unsigned g_sink;

/* Median over 5 runs of ns per call of fn. */
static double time_calls(call_fn fn, void *ctx, long calls) {
    double t[5];
    for (int rep = 0; rep < 5; rep++) {
        double start = now();
        double evict = 0;
        for (long i = 0; i < calls; i++) {
            if (i % BATCH == 0) g_clear();
            if (g_cold) {
                double e0 = now();
                for (size_t k = 0; k < sizeof g_evict; k += 64) g_sink += g_evict[k];
                evict += now() - e0;
            }
            if (fn(ctx) != 0) {
                fprintf(stderr, "a call failed: %s\n", hidet_nccl_last_error());
                exit(1);
            }
        }
        t[rep] = (now() - start - evict) / (double)calls * 1e9;
    }
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (t[j] < t[i]) {
                double x = t[i];
                t[i] = t[j];
                t[j] = x;
            }
    return t[2];
}

typedef struct {
    int id;
    ncclComm_t comm;
    void *nccl; /* the stand-in's handle */
} ctx_t;

static int lib_all_reduce(void *p) {
    return hidet_nccl_all_reduce(((ctx_t *)p)->id, g_buf, g_buf + 4096, 256, HIDET_NCCL_BFLOAT16, HIDET_NCCL_SUM,
                                 STREAM);
}
static int lib_broadcast(void *p) {
    return hidet_nccl_broadcast(((ctx_t *)p)->id, g_buf, g_buf + 4096, 256, HIDET_NCCL_COMPLEX64, 1, STREAM);
}
static int lib_all_gather(void *p) {
    return hidet_nccl_all_gather(((ctx_t *)p)->id, g_buf, g_buf + 4096, 256, HIDET_NCCL_FLOAT32, STREAM);
}
static int lib_reduce_scatter(void *p) {
    return hidet_nccl_reduce_scatter(((ctx_t *)p)->id, g_buf, g_buf + 8192, 256, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM,
                                     STREAM);
}
static int lib_all_to_all(void *p) {
    return hidet_nccl_all_to_all(((ctx_t *)p)->id, g_buf, g_buf + 8192, 256, HIDET_NCCL_FLOAT32, STREAM);
}
static int lib_send(void *p) { return hidet_nccl_send(((ctx_t *)p)->id, g_buf, 256, HIDET_NCCL_FLOAT32, 1, STREAM); }
/* nccl-tests' sendrecv on one rank: a send to itself and its receive, in one group. */
static int lib_self_pair(void *p) {
    int id = ((ctx_t *)p)->id;
    int r = hidet_nccl_group_start();
    r |= hidet_nccl_send(id, g_buf, 256, HIDET_NCCL_FLOAT32, 0, STREAM);
    r |= hidet_nccl_recv(id, g_buf + 4096, 256, HIDET_NCCL_FLOAT32, 0, STREAM);
    return r | hidet_nccl_group_end();
}
static int lib_scatter(void *p) {
    return hidet_nccl_scatter(((ctx_t *)p)->id, g_buf, g_buf + 8192, 256, HIDET_NCCL_FLOAT32, 0, STREAM);
}

typedef ncclResult_t (*all_reduce_t)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                     cudaStream_t);
typedef ncclResult_t (*broadcast_t)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*all_gather_t)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*send_t)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
static all_reduce_t g_ar;
static broadcast_t g_bc;
static all_gather_t g_ag, g_a2a;
static all_reduce_t g_rs; /* ncclReduceScatter has all_reduce's signature */
static send_t g_send;
static send_t g_recv; /* the same shape, with a void * buffer */
static ncclResult_t (*g_group_start)(void), (*g_group_end)(void);
static broadcast_t g_scatter;

static int raw_all_reduce(void *p) { return g_ar(g_buf, g_buf + 4096, 256, ncclBfloat16, ncclSum, ((ctx_t *)p)->comm, STREAM); }
static int raw_broadcast(void *p) { return g_bc(g_buf, g_buf + 4096, 256, ncclUint64, 1, ((ctx_t *)p)->comm, STREAM); }
static int raw_all_gather(void *p) { return g_ag(g_buf, g_buf + 4096, 256, ncclUint32, ((ctx_t *)p)->comm, STREAM); }
static int raw_reduce_scatter(void *p) {
    return g_rs(g_buf, g_buf + 8192, 256, ncclFloat32, ncclSum, ((ctx_t *)p)->comm, STREAM);
}
static int raw_all_to_all(void *p) { return g_a2a(g_buf, g_buf + 8192, 256, ncclUint32, ((ctx_t *)p)->comm, STREAM); }
/* The same all_reduce on library memory registered with the communicator (the memory tables
 * are looked at on every call while such memory exists). */
static char *g_mem;
static int lib_all_reduce_mem(void *p) {
    return hidet_nccl_all_reduce(((ctx_t *)p)->id, g_mem, g_mem + 4096, 256, HIDET_NCCL_BFLOAT16, HIDET_NCCL_SUM, STREAM);
}
static int raw_all_reduce_mem(void *p) {
    return g_ar(g_mem, g_mem + 4096, 256, ncclBfloat16, ncclSum, ((ctx_t *)p)->comm, STREAM);
}
static int raw_send(void *p) { return g_send(g_buf, 256, ncclUint32, 1, ((ctx_t *)p)->comm, STREAM); }
static int raw_self_pair(void *p) {
    ncclComm_t comm = ((ctx_t *)p)->comm;
    int r = g_group_start();
    r |= g_send(g_buf, 256, ncclUint32, 0, comm, STREAM);
    r |= g_recv(g_buf + 4096, 256, ncclUint32, 0, comm, STREAM);
    return r | g_group_end();
}
static int raw_scatter(void *p) { return g_scatter(g_buf, g_buf + 8192, 256, ncclUint32, 0, ((ctx_t *)p)->comm, STREAM); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBFAKE_NCCL.so [CALLS]\n", argv[0]);
        return 2;
    }
    long calls = argc > 2 ? atol(argv[2]) : 1000000;
    g_cold = getenv("COLD") != NULL;
    static fake_comm_t comm = {4, 0}, quiet = {4, 0}, tracked = {4, 0};
    ctx_t ctx = {-1, (ncclComm_t)(void *)&comm, NULL}, off = {-1, (ncclComm_t)(void *)&quiet, NULL},
          events = {-1, (ncclComm_t)(void *)&tracked, NULL};
    int cuda = argc > 3 && strcmp(argv[3], "cuda") == 0;
    if (cuda && cudaStreamCreate(&g_stream) != cudaSuccess) {
        fprintf(stderr, "cudaStreamCreate failed: no GPU?\n");
        return 1;
    }
    int version;
    fake_nccl_log_fn log;
    ctx.nccl = fake_nccl_load(argv[1], &version, &log, &g_clear);
    if (ctx.nccl == NULL) return 1;
    /* A communicator whose ring is never made: its first collective runs with the recorder off. */
    setenv("HIDET_NCCL_TRACE_ENTRIES", "0", 1);
    hidet_nccl_settings_reload();
    if (hidet_nccl_comm_adopt(ctx.comm, &ctx.id) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_comm_adopt(off.comm, &off.id) != HIDET_NCCL_SUCCESS || lib_send(&off) != 0) {
        fprintf(stderr, "%s\n", hidet_nccl_last_error());
        return 1;
    }
    setenv("HIDET_NCCL_TRACE_ENTRIES", "2048", 1); /* asked for: without a trace directory it is off by default */
    setenv("HIDET_NCCL_TRACE_COMPLETION", "1", 1); /* likewise: a ring with an event per entry */
    hidet_nccl_settings_reload();
    if (cuda && (hidet_nccl_comm_adopt(events.comm, &events.id) != HIDET_NCCL_SUCCESS || lib_send(&events) != 0)) {
        fprintf(stderr, "%s\n", hidet_nccl_last_error());
        return 1;
    }
    unsetenv("HIDET_NCCL_TRACE_COMPLETION");
    hidet_nccl_settings_reload();
    g_ar = (all_reduce_t)dlsym(ctx.nccl, "ncclAllReduce");
    g_bc = (broadcast_t)dlsym(ctx.nccl, "ncclBroadcast");
    g_ag = (all_gather_t)dlsym(ctx.nccl, "ncclAllGather");
    g_rs = (all_reduce_t)dlsym(ctx.nccl, "ncclReduceScatter");
    g_a2a = (all_gather_t)dlsym(ctx.nccl, "ncclAlltoAll");
    g_send = (send_t)dlsym(ctx.nccl, "ncclSend");
    g_recv = (send_t)dlsym(ctx.nccl, "ncclRecv");
    g_group_start = (ncclResult_t(*)(void))dlsym(ctx.nccl, "ncclGroupStart");
    g_group_end = (ncclResult_t(*)(void))dlsym(ctx.nccl, "ncclGroupEnd");
    g_scatter = (broadcast_t)dlsym(ctx.nccl, "ncclScatter");
    if (!g_clear || !g_ar || !g_bc || !g_ag || !g_rs || !g_a2a || !g_send || !g_recv || !g_group_start ||
        !g_group_end || !g_scatter) {
        fprintf(stderr, "%s is not the stand-in for NCCL 2.28\n", argv[1]);
        return 1;
    }
    static const struct {
        const char *name;
        call_fn lib, raw;
    } rows[] = {
        {"all_reduce (bfloat16 sum)", lib_all_reduce, raw_all_reduce},
        {"broadcast (complex64)", lib_broadcast, raw_broadcast},
        {"all_gather (float32)", lib_all_gather, raw_all_gather},
        {"reduce_scatter (float32 sum)", lib_reduce_scatter, raw_reduce_scatter},
        {"all_to_all (float32)", lib_all_to_all, raw_all_to_all},
        {"send (float32)", lib_send, raw_send},
        {"scatter (float32, root)", lib_scatter, raw_scatter},
        {"self send/recv pair, grouped", lib_self_pair, raw_self_pair},
    };
    printf("# host time per call into a stand-in NCCL that only logs (median of 5 x %ld calls), 4 ranks%s\n", calls,
           g_cold ? "; caches cold (4 MiB read between calls, untimed)" : "");
    printf("# library: flight recorder on (2048 entries, completion tracking off); off: HIDET_NCCL_TRACE_ENTRIES=0\n");
    printf("# %-30s %12s %12s %12s %12s %12s%s\n", "collective", "library ns", "off ns", "direct ns", "added ns",
           "recorder ns", cuda ? "   events ns" : "");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        double lib = time_calls(rows[i].lib, &ctx, calls), quiet_lib = time_calls(rows[i].lib, &off, calls),
               raw = time_calls(rows[i].raw, &ctx, calls);
        printf("  %-30s %12.1f %12.1f %12.1f %12.1f %12.1f", rows[i].name, lib, quiet_lib, raw, lib - raw,
               lib - quiet_lib);
        if (cuda) printf(" %12.1f", time_calls(rows[i].lib, &events, calls) - quiet_lib);
        printf("\n");
    }
    int handle;
    if (hidet_nccl_mem_alloc(ctx.id, 1 << 16, (void **)&g_mem) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_register(ctx.id, g_mem, 1 << 16, HIDET_NCCL_REGISTER_BUFFER, &handle) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "%s\n", hidet_nccl_last_error());
        return 1;
    }
    double lib = time_calls(lib_all_reduce_mem, &ctx, calls), raw = time_calls(raw_all_reduce_mem, &ctx, calls);
    printf("  %-30s %12.1f %12s %12.1f %12.1f\n", "all_reduce, library memory", lib, "", raw, lib - raw);
    return 0;
}

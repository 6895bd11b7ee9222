/* What the library adds on the host to each collective call: every collective through the
 * library against the same NCCL function called directly, both into the recording stand-in
 * for NCCL (tests/support/fake_nccl.c, which only logs), so that only the host cost is left.
 *   collective_overhead_bench LIBFAKE_NCCL.so [CALLS]
 * Prints ns per call, library and direct, and their difference, for each collective. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tests/support/fake_nccl.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static fake_nccl_clear_fn g_clear;
static char g_buf[1 << 16];
#define STREAM ((cudaStream_t)(uintptr_t)0x5)
#define BATCH 1000 /* calls between two clears of the stand-in's log */

typedef int (*call_fn)(void *ctx);

/* Median over 5 runs of ns per call of fn. */
static double time_calls(call_fn fn, void *ctx, long calls) {
    double t[5];
    for (int rep = 0; rep < 5; rep++) {
        double start = now();
        for (long i = 0; i < calls; i++) {
            if (i % BATCH == 0) g_clear();
            if (fn(ctx) != 0) {
                fprintf(stderr, "a call failed: %s\n", hidet_nccl_last_error());
                exit(1);
            }
        }
        t[rep] = (now() - start) / (double)calls * 1e9;
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

static int raw_all_reduce(void *p) { return g_ar(g_buf, g_buf + 4096, 256, ncclBfloat16, ncclSum, ((ctx_t *)p)->comm, STREAM); }
static int raw_broadcast(void *p) { return g_bc(g_buf, g_buf + 4096, 256, ncclUint64, 1, ((ctx_t *)p)->comm, STREAM); }
static int raw_all_gather(void *p) { return g_ag(g_buf, g_buf + 4096, 256, ncclUint32, ((ctx_t *)p)->comm, STREAM); }
static int raw_reduce_scatter(void *p) {
    return g_rs(g_buf, g_buf + 8192, 256, ncclFloat32, ncclSum, ((ctx_t *)p)->comm, STREAM);
}
static int raw_all_to_all(void *p) { return g_a2a(g_buf, g_buf + 8192, 256, ncclUint32, ((ctx_t *)p)->comm, STREAM); }
static int raw_send(void *p) { return g_send(g_buf, 256, ncclUint32, 1, ((ctx_t *)p)->comm, STREAM); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBFAKE_NCCL.so [CALLS]\n", argv[0]);
        return 2;
    }
    long calls = argc > 2 ? atol(argv[2]) : 1000000;
    static fake_comm_t comm = {4, 0};
    ctx_t ctx = {-1, (ncclComm_t)(void *)&comm, NULL};
    int version;
    fake_nccl_log_fn log;
    ctx.nccl = fake_nccl_load(argv[1], &version, &log, &g_clear);
    if (ctx.nccl == NULL) return 1;
    if (hidet_nccl_comm_adopt(ctx.comm, &ctx.id) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "%s\n", hidet_nccl_last_error());
        return 1;
    }
    g_ar = (all_reduce_t)dlsym(ctx.nccl, "ncclAllReduce");
    g_bc = (broadcast_t)dlsym(ctx.nccl, "ncclBroadcast");
    g_ag = (all_gather_t)dlsym(ctx.nccl, "ncclAllGather");
    g_rs = (all_reduce_t)dlsym(ctx.nccl, "ncclReduceScatter");
    g_a2a = (all_gather_t)dlsym(ctx.nccl, "ncclAlltoAll");
    g_send = (send_t)dlsym(ctx.nccl, "ncclSend");
    if (!g_clear || !g_ar || !g_bc || !g_ag || !g_rs || !g_a2a || !g_send) {
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
    };
    printf("# host time per call into a stand-in NCCL that only logs (median of 5 x %ld calls), 4 ranks\n", calls);
    printf("# %-30s %12s %12s %12s\n", "collective", "library ns", "direct ns", "added ns");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        double lib = time_calls(rows[i].lib, &ctx, calls), raw = time_calls(rows[i].raw, &ctx, calls);
        printf("  %-30s %12.1f %12.1f %12.1f\n", rows[i].name, lib, raw, lib - raw);
    }
    return 0;
}

/* The library's own all_reduce kernels on GPUs, one process per rank: hidet-nccl-run -n N own_gpu_test
 * (N from 2 to 8), or tests/gpu/own_fake_nodes.sh (2 ranks sharing one GPU as two fake nodes).
 * On library memory of communicator A registered HIDET_NCCL_REGISTER_OWN (the library picks one-shot or
 * two-shot: on 2 ranks always one-shot) and of T, a split of A registered AUTO under a tuning table the
 * test writes (HIDET_NCCL_TUNE_FILE) that names the view own2 up to 4 MiB (two-shot on any number of ranks):
 *  - routes (hidet_nccl_all_reduce_route): every call the own kernels take, up to 4 MiB (their
 *    staging), must be routed "own one-shot" or "own two-shot" on A, "own two-shot" on T, and both must
 *    be seen; float64 must not be, cudaMalloc memory must be routed as library memory is (the choice
 *    depends on the call alone) and its result is checked; above 4 MiB NCCL takes the call,
 *    still checked;
 *  - exact results against a host reference for every dtype x op the own kernels take, 8 B to 8 MiB,
 *    odd counts (bytes not a multiple of 16), in place and out of place, at element offset 0 and 1;
 *    the bytes around the output and the input of an out-of-place call untouched;
 *  - 1000 back-to-back calls on one stream, each with its own input, each output copied away on the
 *    stream and checked at the end: one-shot (A, 64 KiB) and two-shot (T, 2 MiB);
 *  - a CUDA graph of own all_reduces and their input and output copies, replayed 100 times with new
 *    inputs (on A and on T);
 *  - two communicators (A and B, a split of it in reverse rank order, each OWN on its own library
 *    memory) called alternately on two streams with no synchronization between.
 * Inputs are pseudo-random per rank, call and element, chosen so that every result is exact whatever
 * the order of the ranks (small multiples of 1/4 for floats, {+-1/2, +-1, +-2} for products, any bits
 * for 32-bit integers, any float8 but NaN and -0 for max/min, e5m2's infinities among them where the own
 * kernels run the call), and compared bit for bit. They repeat every
 * PERIOD elements, a prime, so that 8 MiB cost a few memcpy (no count here is a multiple of it).
 * Prints "own_gpu_test: N checks, 0 wrong" and exits 0; else the first failures, and exits 1. Without
 * a GPU, outside a launcher or with one rank, it fails. The dtypes, the inputs and the host's reference
 * they are checked against: own_gpu_check.c (tests/gpu/own_gpu_test.h). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/gpu/now.h"
#include "tests/gpu/own_gpu_test.h"
#include "tools/support/reference.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define OWN_MAX_BYTES (4 * MIB) /* the own kernels' staging: larger calls take NCCL */
#define ROUTE_LEN 256

/* A communicator's library memory (MEM_BYTES, registered OWN as a whole), by the part that uses it. */
#define MEM_BYTES (128 * MIB)
#define SWEEP_SEND 0          /* exact sweep: input (or in place), up to 8 MiB + an element + GUARD */
#define SWEEP_RECV (16 * MIB) /* exact sweep: output */
#define GRAPH_AT (32 * MIB)   /* graph: slot k's input at GRAPH_AT + k * GRAPH_SLOT, output 2 MiB later */
#define GRAPH_SLOT (4 * MIB)
#define B2B_SEND (48 * MIB) /* back-to-back calls, up to 4 MiB */
#define B2B_RECV (56 * MIB)
#define PAIR_AT (64 * MIB) /* two communicators: call j's input at PAIR_AT + j * 2 MiB, output 1 MiB later */
#define PAIR_CALLS 24

#define HOST_BYTES (9 * MIB)
static int g_n;
static int g_one_shot, g_two_shot, g_other; /* routes the exact sweep saw */
static int g_nccl_version, g_not_compared;  /* calls NCCL took whose result was not compared */
static unsigned char *g_in, *g_out, *g_chk; /* pinned host buffers of HOST_BYTES */

#define HN(call)                                                                                                 \
    do {                                                                                                         \
        hidet_nccl_status_t st_ = (call);                                                                        \
        if (st_ != HIDET_NCCL_SUCCESS) {                                                                         \
            fprintf(stderr, "own_gpu_test: rank %d: FAILED: %s: %s: %s\n", g_rank, #call,                        \
                    hidet_nccl_status_string(st_), hidet_nccl_last_error());                                     \
            exit(1);                                                                                             \
        }                                                                                                        \
    } while (0)
#define CU(call)                                                                                                 \
    do {                                                                                                         \
        cudaError_t e_ = (call);                                                                                 \
        if (e_ != cudaSuccess) {                                                                                 \
            fprintf(stderr, "own_gpu_test: rank %d: FAILED: %s: %s\n", g_rank, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                                             \
        }                                                                                                        \
    } while (0)


/* ---------------------------------------------------------------- communicators, routes */

typedef struct {
    const char *name;
    const char *want;       /* what its routes up to OWN_MAX_BYTES start with */
    int id, rank, n;
    int members[MAX_RANKS]; /* the world ranks of its ranks, in its order */
    char *mem;              /* MEM_BYTES of library memory, registered as a whole */
    int handle;
} comm_t;

/* Communicator id as c: its library memory registered with flags (collective), its calls routed `want`. */
static void comm_setup(comm_t *c, const char *name, int id, const int *members, int flags, const char *want) {
    c->name = name;
    c->want = want;
    c->id = id;
    HN(hidet_nccl_comm_rank(id, &c->rank));
    HN(hidet_nccl_comm_size(id, &c->n));
    memcpy(c->members, members, sizeof c->members);
    check(c->members[c->rank] == g_rank, "communicator %s: rank %d is world rank %d, want %d", name, c->rank,
          c->members[c->rank], g_rank);
    void *mem;
    HN(hidet_nccl_mem_alloc(id, MEM_BYTES, &mem));
    c->mem = mem;
    HN(hidet_nccl_register(id, mem, MEM_BYTES, flags, &c->handle));
}

static void comm_release(comm_t *c) {
    HN(hidet_nccl_deregister(c->id, c->handle));
    HN(hidet_nccl_mem_free(c->mem));
    HN(hidet_nccl_comm_destroy(c->id));
}

static void route_of(const comm_t *c, const void *send, const void *recv, size_t count, hidet_nccl_dtype_t dtype,
                     hidet_nccl_op_t op, char *route) {
    HN(hidet_nccl_all_reduce_route(c->id, send, recv, count, dtype, op, route, ROUTE_LEN));
}

static int is_own(const char *route) { return strncmp(route, "own ", 4) == 0; }

/* The route of a call of the own kernels' dtype x op, checked: c->want up to OWN_MAX_BYTES. Counted
 * into the sweeps' totals when count_it. Whether it is own. */
static int check_route(const comm_t *c, const void *send, const void *recv, size_t count, const dtype_case_t *d,
                        hidet_nccl_op_t op, const char *what, int count_it) {
    char route[ROUTE_LEN];
    route_of(c, send, recv, count, d->dtype, op, route);
    if (count * elem_size(d) <= OWN_MAX_BYTES)
        check(strncmp(route, c->want, strlen(c->want)) == 0, "%s: routed \"%s\", want \"%s...\"", what, route,
              c->want);
    if (count_it) {
        if (strncmp(route, "own one-shot", 12) == 0)
            g_one_shot++;
        else if (strncmp(route, "own two-shot", 12) == 0)
            g_two_shot++;
        else
            g_other++;
    }
    return is_own(route);
}

/* Routes of a few calls, printed by rank 0; calls the own kernels cannot run must not be routed to them,
 * and where the buffers are does not change the route (every rank must decide alike): a call on
 * cudaMalloc memory is routed as one on library memory, and its result is exact too. */
static void show_routes(const comm_t *c) {
    static const size_t k_bytes[] = {8, 4 * KIB, 64 * KIB, 256 * KIB, MIB, 2 * MIB, 4 * MIB, 8 * MIB};
    char route[ROUTE_LEN];
    char *send = c->mem + SWEEP_SEND, *recv = c->mem + SWEEP_RECV;
    for (size_t i = 0; i < sizeof k_bytes / sizeof k_bytes[0]; i++) {
        route_of(c, send, recv, k_bytes[i] / 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, route);
        if (g_rank == 0) printf("own_gpu_test: %s: route of float32 sum, %zu B: %s\n", c->name, k_bytes[i], route);
    }
    route_of(c, send, recv, 64 * KIB / 8, HIDET_NCCL_FLOAT64, HIDET_NCCL_SUM, route);
    if (g_rank == 0) printf("own_gpu_test: %s: route of float64 sum, 64 KiB: %s\n", c->name, route);
    check(!is_own(route), "%s: float64 sum routed \"%s\": the own kernels do not take float64", c->name, route);
    char lib_route[ROUTE_LEN];
    route_of(c, send, recv, 64 * KIB / 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, lib_route);
    void *plain;
    CU(cudaMalloc(&plain, 128 * KIB));
    route_of(c, plain, (char *)plain + 64 * KIB, 64 * KIB / 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, route);
    if (g_rank == 0)
        printf("own_gpu_test: %s: route of float32 sum, 64 KiB of cudaMalloc memory: %s\n", c->name, route);
    check(strcmp(route, lib_route) == 0 && is_own(route),
          "%s: float32 sum on cudaMalloc memory routed \"%s\", on library memory \"%s\": want the same own route",
          c->name, route, lib_route);
    size_t n = 64 * KIB / 4;
    float *host = malloc(n * sizeof *host);
    for (size_t i = 0; i < n; i++) host[i] = (float)((int)(i % 97) - 48 + g_rank); /* exact sums */
    CU(cudaMemcpy(plain, host, n * sizeof *host, cudaMemcpyHostToDevice));
    HN(hidet_nccl_all_reduce(c->id, plain, (char *)plain + 64 * KIB, n, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, (cudaStream_t)0));
    CU(cudaStreamSynchronize((cudaStream_t)0));
    CU(cudaMemcpy(host, (char *)plain + 64 * KIB, n * sizeof *host, cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < g_n; r++) want += (float)((int)(i % 97) - 48 + r);
        wrong += host[i] != want;
    }
    check(wrong == 0, "%s: float32 sum of 64 KiB of cudaMalloc memory: %zu of %zu elements wrong", c->name, wrong, n);
    free(host);
    CU(cudaFree(plain));
}

/* ---------------------------------------------------------------- exact sweep */

/* The counts of d the sweep runs: 24 B, odd counts, and around powers of two from 8 B to 8 MiB. */
static size_t sweep_counts(const dtype_case_t *d, size_t *out) {
    static const size_t k_pow2[] = {8, 16, 64, 256, KIB, 4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB,
                                    MIB, 2 * MIB, 4 * MIB, 8 * MIB};
    static const size_t k_odd[] = {1, 3, 1001, 1003, 12345};
    size_t es = elem_size(d), n = 0;
    out[n++] = 24 / es;
    for (size_t i = 0; i < sizeof k_odd / sizeof k_odd[0]; i++) out[n++] = k_odd[i];
    for (size_t i = 0; i < sizeof k_pow2 / sizeof k_pow2[0]; i++) {
        size_t c = k_pow2[i] / es;
        if (c == 0) continue;
        if (c > 1) out[n++] = c - 1;
        out[n++] = c;
        out[n++] = c + 1; /* bytes not a multiple of 16 */
    }
    return n;
}

/* Whether a call NCCL takes (above the own kernels' staging) can be compared with the own kernels'
 * result: not float avg on a number of ranks that is not a power of two (NCCL multiplies each input by
 * a rounded 1/N before its sum); said once. */
static int nccl_comparable(const dtype_case_t *d, hidet_nccl_op_t op) {
    static int said;
    if (op != HIDET_NCCL_AVG || d->kind != K_FLOAT || (g_n & (g_n - 1)) == 0) return 1;
    if (!said++)
        printf("own_gpu_test: float avg routed to NCCL on %d ranks not compared (NCCL's avg is a sum of inputs "
               "times a rounded 1/%d)\n",
               g_n, g_n);
    g_not_compared++;
    return 0;
}

/* One call of the sweep (out of place or in place, at element offset 0 or 1), checked. */
static void sweep_call(const comm_t *c, const dtype_case_t *d, hidet_nccl_op_t op, size_t count, int in_place,
                       int offset, uint32_t salt, cudaStream_t s) {
    size_t es = elem_size(d), bytes = count * es, off = offset ? es : 0, span = off + bytes + GUARD;
    char *send = c->mem + SWEEP_SEND + off, *out_at = c->mem + (in_place ? SWEEP_SEND : SWEEP_RECV);
    char *recv = out_at + off;
    char what[160];
    snprintf(what, sizeof what, "%s: %s %s of %zu (%zu B), %s, offset %d", c->name, d->name, k_op_names[op], count,
             bytes, in_place ? "in place" : "out of place", offset);
    if (bytes > OWN_MAX_BYTES && d->kind == K_FP8 && g_nccl_version < 22400) {
        static int said;
        if (!said++) printf("own_gpu_test: float8 above 4 MiB not run: NCCL %d has no float8 (2.24)\n", g_nccl_version);
        g_not_compared++;
        return;
    }
    int own = check_route(c, send, recv, count, d, op, what, 1);
    g_with_inf = own;
    fill_input(d, op, salt, g_rank, count, g_in);
    CU(cudaMemsetAsync(out_at, POISON, span, s));
    CU(cudaMemcpyAsync(send, g_in, bytes, cudaMemcpyHostToDevice, s));
    HN(hidet_nccl_all_reduce(c->id, send, recv, count, d->dtype, op, s));
    CU(cudaMemcpyAsync(g_out, out_at, span, cudaMemcpyDeviceToHost, s));
    if (!in_place) CU(cudaMemcpyAsync(g_chk, send, bytes, cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    if (own || nccl_comparable(d, op)) check_output(d, op, salt, c->members, c->n, g_out, off, count, what);
    if (!in_place) check(memcmp(g_chk, g_in, bytes) == 0, "%s: the input was changed", what);
    g_with_inf = 0;
}

/* Every dtype x op of the table at every count of sweep_counts, 4 ways (out of place or in place, element
 * offset 0 or 1); salts from *salt on. */
static void exact_sweep(const comm_t *c, uint32_t *salt, cudaStream_t s) {
    size_t counts[64], calls = 0;
    double t0 = hn_now();
    int one = g_one_shot, two = g_two_shot, other = g_other;
    for (size_t i = 0; i < NUM_DTYPES; i++) {
        const dtype_case_t *d = &k_dtypes[i];
        size_t nc = sweep_counts(d, counts);
        int wrong_before = g_wrong;
        for (int op = 0; op < HIDET_NCCL_NUM_OPS; op++) {
            if (!(d->ops & OP_BIT(op))) continue;
            for (size_t k = 0; k < nc; k++, calls += 4)
                for (int variant = 0; variant < 4; variant++)
                    sweep_call(c, d, (hidet_nccl_op_t)op, counts[k], variant & 1, variant >> 1, (*salt)++, s);
        }
        if (g_rank == 0)
            printf("own_gpu_test: %s: %s, %zu counts x 4 ways per op, %d wrong here\n", c->name, d->name, nc,
                   g_wrong - wrong_before);
    }
    printf("own_gpu_test: %s: exact sweep: %zu calls in %.1f s, routed own one-shot %d, own two-shot %d, other %d\n",
           c->name, calls, hn_now() - t0, g_one_shot - one, g_two_shot - two, g_other - other);
}

/* ---------------------------------------------------------------- back-to-back calls */

#define B2B_CALLS 1000
#define B2B_SAMPLES 4096 /* 16 bytes kept of each of up to this many pieces of each output */

static int route_is(const comm_t *c, size_t bytes, const char *kind) {
    char route[ROUTE_LEN];
    route_of(c, c->mem + B2B_SEND, c->mem + B2B_RECV, bytes / 4, HIDET_NCCL_UINT32, HIDET_NCCL_SUM, route);
    return strncmp(route, kind, strlen(kind)) == 0;
}

/* A size (bytes of uint32 sum) that takes `kind`: preferred if it does, else the largest power of two
 * from 4 MiB down to 1 KiB that does; 0 (a failed check) if none. */
static size_t pick_size(const comm_t *c, const char *kind, size_t preferred) {
    if (route_is(c, preferred, kind)) return preferred;
    for (size_t b = OWN_MAX_BYTES; b >= KIB; b /= 2)
        if (route_is(c, b, kind)) return b;
    check(0, "%s: no uint32 sum from 1 KiB to 4 MiB is routed %s: its back-to-back calls are untested", c->name,
          kind);
    return 0;
}

/* The byte every element of rank's input holds at call k: the sums of nearby calls differ. */
static unsigned char b2b_byte(int k, int rank) { return (unsigned char)(k + 29 * rank); }

/* B2B_CALLS uint32 sums of `bytes` on one stream, no host wait between: call k's input set by a memset
 * on the stream, its output (one buffer for all calls) copied on the stream into record slot k (16 bytes
 * of every stride: all of it up to 64 KiB), every slot checked at the end. */
static void back_to_back(const comm_t *c, size_t bytes, const char *kind, cudaStream_t s) {
    if (bytes == 0) return;
    size_t count = bytes / 4, stride = bytes / B2B_SAMPLES < 16 ? 16 : bytes / B2B_SAMPLES;
    size_t rows = bytes / stride, slot = rows * 16;
    char *send = c->mem + B2B_SEND, *recv = c->mem + B2B_RECV;
    unsigned char *record, *host = malloc(slot * B2B_CALLS);
    if (host == NULL) exit(1);
    CU(cudaMalloc((void **)&record, slot * B2B_CALLS));
    CU(cudaMemsetAsync(record, POISON, slot * B2B_CALLS, s));
    CU(cudaStreamSynchronize(s));
    double t0 = hn_now();
    for (int k = 0; k < B2B_CALLS; k++) {
        CU(cudaMemsetAsync(send, b2b_byte(k, g_rank), bytes, s));
        HN(hidet_nccl_all_reduce(c->id, send, recv, count, HIDET_NCCL_UINT32, HIDET_NCCL_SUM, s));
        CU(cudaMemcpy2DAsync(record + (size_t)k * slot, 16, recv, stride, 16, rows, cudaMemcpyDeviceToDevice, s));
    }
    CU(cudaStreamSynchronize(s));
    double dt = hn_now() - t0;
    CU(cudaMemcpy(host, record, slot * B2B_CALLS, cudaMemcpyDeviceToHost));
    int wrong_calls = 0;
    for (int k = 0; k < B2B_CALLS; k++) {
        uint32_t sum = 0, want, got = 0;
        for (int r = 0; r < c->n; r++) sum += b2b_byte(k, c->members[r]);
        want = sum * 0x01010101u; /* every byte of every rank's element is the rank's byte */
        size_t bad = (size_t)-1;
        for (size_t i = 0; i < slot / 4 && bad == (size_t)-1; i++) {
            memcpy(&got, host + (size_t)k * slot + i * 4, 4);
            if (got != want) bad = i;
        }
        wrong_calls += bad != (size_t)-1;
        check(bad == (size_t)-1, "%s: back-to-back %s call %d of %zu B: word %zu kept is 0x%08x, want 0x%08x",
              c->name, kind, k, bytes, bad, got, want);
    }
    printf("own_gpu_test: %s: %d back-to-back %s uint32 sums of %zu B (each with a memset and a copy): %.1f us "
           "each, %d wrong\n",
           c->name, B2B_CALLS, kind, bytes, 1e6 * dt / B2B_CALLS, wrong_calls);
    CU(cudaFree(record));
    free(host);
}

/* ---------------------------------------------------------------- a CUDA graph */

typedef struct {
    hidet_nccl_dtype_t dtype;
    hidet_nccl_op_t op;
    size_t count;
} call_t;

#define GRAPH_REPLAYS 100
static const call_t k_graph_calls[] = {
    {HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 1025},
    {HIDET_NCCL_BFLOAT16, HIDET_NCCL_MAX, MIB - 33}, /* 2 MiB - 66 B: with its guard, inside its slot */
    {HIDET_NCCL_INT32, HIDET_NCCL_AVG, 65537},
    {HIDET_NCCL_COMPLEX64, HIDET_NCCL_SUM, 8191},
};
#define NUM_GRAPH_CALLS (sizeof k_graph_calls / sizeof k_graph_calls[0])

/* A graph of each call's input copy (from pinned memory), own all_reduce and output copy (to pinned
 * memory), replayed GRAPH_REPLAYS times with new inputs written into the pinned memory between replays. */
static void graph_replays(const comm_t *c, cudaStream_t s) {
    unsigned char *h_in[NUM_GRAPH_CALLS], *h_out[NUM_GRAPH_CALLS];
    char *send[NUM_GRAPH_CALLS], *recv[NUM_GRAPH_CALLS];
    for (size_t k = 0; k < NUM_GRAPH_CALLS; k++) {
        const dtype_case_t *d = find_dtype(k_graph_calls[k].dtype);
        size_t bytes = k_graph_calls[k].count * elem_size(d);
        CU(cudaMallocHost((void **)&h_in[k], bytes));
        CU(cudaMallocHost((void **)&h_out[k], bytes + GUARD));
        send[k] = c->mem + GRAPH_AT + k * GRAPH_SLOT;
        recv[k] = send[k] + GRAPH_SLOT / 2;
        check_route(c, send[k], recv[k], k_graph_calls[k].count, d, k_graph_calls[k].op, "a call of the graph", 0);
        CU(cudaMemsetAsync(recv[k], POISON, bytes + GUARD, s));
    }
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CU(cudaStreamSynchronize(s));
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (size_t k = 0; k < NUM_GRAPH_CALLS; k++) {
        const call_t *a = &k_graph_calls[k];
        size_t bytes = a->count * elem_size(find_dtype(a->dtype));
        CU(cudaMemcpyAsync(send[k], h_in[k], bytes, cudaMemcpyHostToDevice, s));
        HN(hidet_nccl_all_reduce(c->id, send[k], recv[k], a->count, a->dtype, a->op, s));
        CU(cudaMemcpyAsync(h_out[k], recv[k], bytes + GUARD, cudaMemcpyDeviceToHost, s));
    }
    CU(cudaStreamEndCapture(s, &graph));
    CU(cudaGraphInstantiate(&exec, graph, 0));
    int wrong_before = g_wrong;
    for (int r = 0; r < GRAPH_REPLAYS; r++) {
        for (size_t k = 0; k < NUM_GRAPH_CALLS; k++) {
            const call_t *a = &k_graph_calls[k];
            const dtype_case_t *d = find_dtype(a->dtype);
            fill_input(d, a->op, 500000u + (uint32_t)(r * 16) + (uint32_t)k, g_rank, a->count, h_in[k]);
            memset(h_out[k], 0, a->count * elem_size(d));
        }
        CU(cudaGraphLaunch(exec, s));
        CU(cudaStreamSynchronize(s));
        for (size_t k = 0; k < NUM_GRAPH_CALLS; k++) {
            const call_t *a = &k_graph_calls[k];
            char what[128];
            snprintf(what, sizeof what, "%s: graph replay %d: %s %s of %zu", c->name, r, find_dtype(a->dtype)->name,
                     k_op_names[a->op], a->count);
            check_output(find_dtype(a->dtype), a->op, 500000u + (uint32_t)(r * 16) + (uint32_t)k, c->members, c->n,
                         h_out[k], 0, a->count, what);
        }
    }
    printf("own_gpu_test: %s: a graph of %zu own all_reduces replayed %d times with new inputs: %d wrong\n", c->name,
           NUM_GRAPH_CALLS, GRAPH_REPLAYS, g_wrong - wrong_before);
    CU(cudaGraphExecDestroy(exec));
    CU(cudaGraphDestroy(graph));
    for (size_t k = 0; k < NUM_GRAPH_CALLS; k++) {
        CU(cudaFreeHost(h_in[k]));
        CU(cudaFreeHost(h_out[k]));
    }
}

/* ---------------------------------------------------------------- two communicators */

static const call_t k_pair_calls[] = {
    {HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 2048},
    {HIDET_NCCL_BFLOAT16, HIDET_NCCL_MAX, 262144},
    {HIDET_NCCL_INT32, HIDET_NCCL_SUM, 65537},
    {HIDET_NCCL_FLOAT16, HIDET_NCCL_AVG, 131071},
    {HIDET_NCCL_UINT32, HIDET_NCCL_MIN, 333},
    {HIDET_NCCL_FLOAT8_E4M3, HIDET_NCCL_MAX, 500001},
};
#define NUM_PAIR_CALLS (sizeof k_pair_calls / sizeof k_pair_calls[0])

/* Call j of communicator which (0: A, 1: B): its arguments, slot and salt. */
static const call_t *pair_call(int which, int j) { return &k_pair_calls[(size_t)(j + which) % NUM_PAIR_CALLS]; }
static char *pair_send(const comm_t *c, int j) { return c->mem + PAIR_AT + (size_t)j * 2 * MIB; }
static uint32_t pair_salt(int which, int j) { return 700000u + (uint32_t)(2 * j + which); }

/* PAIR_CALLS calls on each of a (stream sa) and b (stream sb), alternating, no synchronization between;
 * inputs uploaded before, outputs checked after. */
static void two_communicators(const comm_t *a, const comm_t *b, cudaStream_t sa, cudaStream_t sb) {
    const comm_t *comms[2] = {a, b};
    for (int which = 0; which < 2; which++)
        for (int j = 0; j < PAIR_CALLS; j++) {
            const comm_t *c = comms[which];
            const call_t *x = pair_call(which, j);
            const dtype_case_t *d = find_dtype(x->dtype);
            char *send = pair_send(c, j);
            check_route(c, send, send + MIB, x->count, d, x->op, "a call of the two communicators", 0);
            fill_input(d, x->op, pair_salt(which, j), g_rank, x->count, g_in);
            CU(cudaMemcpy(send, g_in, x->count * elem_size(d), cudaMemcpyHostToDevice));
            CU(cudaMemset(send + MIB, POISON, MIB));
        }
    CU(cudaDeviceSynchronize());
    for (int j = 0; j < PAIR_CALLS; j++)
        for (int which = 0; which < 2; which++) {
            const call_t *x = pair_call(which, j);
            char *send = pair_send(comms[which], j);
            HN(hidet_nccl_all_reduce(comms[which]->id, send, send + MIB, x->count, x->dtype, x->op,
                                     which ? sb : sa));
        }
    CU(cudaStreamSynchronize(sa));
    CU(cudaStreamSynchronize(sb));
    int wrong_before = g_wrong;
    for (int which = 0; which < 2; which++)
        for (int j = 0; j < PAIR_CALLS; j++) {
            const comm_t *c = comms[which];
            const call_t *x = pair_call(which, j);
            const dtype_case_t *d = find_dtype(x->dtype);
            CU(cudaMemcpy(g_out, pair_send(c, j) + MIB, x->count * elem_size(d) + GUARD, cudaMemcpyDeviceToHost));
            char what[128];
            snprintf(what, sizeof what, "communicator %s, call %d: %s %s of %zu", c->name, j, d->name,
                     k_op_names[x->op], x->count);
            check_output(d, x->op, pair_salt(which, j), c->members, c->n, g_out, 0, x->count, what);
        }
    printf("own_gpu_test: communicators A (%d ranks) and B (%d ranks) on two streams, %d calls each, alternating: "
           "%d wrong\n",
           a->n, b->n, PAIR_CALLS, g_wrong - wrong_before);
}

/* ---------------------------------------------------------------- main */

/* B, the split of the world: ranks of one color (all of them, or by parity from 4 ranks on) in reverse order. */
static int split_color(int rank) { return g_n >= 4 ? rank % 2 : 0; }

/* T's tuning table: the own two-shot kernel for every all_reduce on library memory up to their staging. */
static const char k_table[] = "# own_gpu_test: the own two-shot kernel for every all_reduce up to 4 MiB\n"
                              "all_reduce * 4194304 own2\n"
                              "all_reduce * max plain\n";

/* Writes k_table into a fresh file (0600) at path and names it HIDET_NCCL_TUNE_FILE, before the library
 * reads its settings (the table is read once, at the first registration). */
static void use_table(char *path, size_t len) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, len, "%s/own_gpu_test.table.XXXXXX", dir != NULL && dir[0] != '\0' ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, k_table, sizeof k_table - 1) != (ssize_t)(sizeof k_table - 1) || close(fd) != 0 ||
        setenv("HIDET_NCCL_TUNE_FILE", path, 1) != 0) {
        perror("own_gpu_test: FAILED: the tuning table file");
        exit(1);
    }
}

/* OWN_GPU_TEST_PEER_DEATH=1: every rank but 0 leaves after A's registration; rank 0's own kernel
 * then waits for peers that never come, hidet_nccl_comm_wait passes its deadline, the communicator
 * is failed, and the kernel must be told to stop: its stream must finish within seconds, and
 * destroy and finalize must return. Exits 0 only then. */
static int peer_death(const comm_t *a, cudaStream_t s) {
    if (g_rank != 0) {
        printf("own_gpu_test: rank %d leaves without a word\n", g_rank);
        fflush(stdout);
        _exit(0);
    }
    sleep(1); /* the peers are gone */
    HN(hidet_nccl_all_reduce(a->id, a->mem, a->mem + MIB, 64 * KIB / 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s));
    double t0 = hn_now();
    hidet_nccl_status_t st = hidet_nccl_comm_wait(a->id, s, 3.0);
    double t1 = hn_now();
    printf("own_gpu_test: peer death: comm_wait returned %s after %.2f s: %s\n", hidet_nccl_status_string(st), t1 - t0,
           hidet_nccl_last_error());
    check(st != HIDET_NCCL_SUCCESS, "comm_wait succeeded with every peer gone");
    cudaError_t e = cudaErrorNotReady;
    while (e == cudaErrorNotReady && hn_now() - t1 < 20) {
        usleep(1000);
        e = cudaStreamQuery(s);
    }
    double t2 = hn_now();
    printf("own_gpu_test: peer death: the own kernel's stream %s %.3f s after the deadline (%s)\n",
           e == cudaSuccess ? "finished" : "had not finished", t2 - t1, cudaGetErrorString(e));
    check(e == cudaSuccess, "the own kernel still waits for the gone peers %.1f s after the communicator failed",
          t2 - t1);
    st = hidet_nccl_comm_destroy(a->id);
    printf("own_gpu_test: peer death: destroy: %s\n", hidet_nccl_status_string(st));
    st = hidet_nccl_finalize();
    printf("own_gpu_test: peer death: finalize: %s after %.2f s in all\n", hidet_nccl_status_string(st), hn_now() - t0);
    printf("own_gpu_test: %d checks, %d wrong\n", g_checks, g_wrong);
    return g_wrong == 0 ? 0 : 1;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress reaches the launcher's log line by line */
    char table[512];
    use_table(table, sizeof table);
    int id;
    hidet_nccl_status_t st = hidet_nccl_init(&id);
    if (st != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "own_gpu_test: FAILED: hidet_nccl_init: %s: %s\n(it needs a GPU per rank, or all ranks on one "
                "GPU as fake nodes: run it under hidet-nccl-run -n 2, or tests/gpu/own_fake_nodes.sh)\n",
                hidet_nccl_status_string(st), hidet_nccl_last_error());
        return 1;
    }
    HN(hidet_nccl_comm_rank(id, &g_rank));
    HN(hidet_nccl_comm_size(id, &g_n));
    if (g_n < 2 || g_n > MAX_RANKS) {
        fprintf(stderr, "own_gpu_test: FAILED: %d ranks; the own kernels run on 2 to %d (hidet-nccl-run -n 2)\n", g_n,
                MAX_RANKS);
        return 1;
    }
    int device;
    CU(cudaGetDevice(&device));
    HN(hidet_nccl_nccl_version(&g_nccl_version));
    printf("own_gpu_test: rank %d of %d on device %d\n", g_rank, g_n, device);
    cudaStream_t s1, s2;
    CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CU(cudaMallocHost((void **)&g_in, HOST_BYTES));
    CU(cudaMallocHost((void **)&g_out, HOST_BYTES));
    CU(cudaMallocHost((void **)&g_chk, HOST_BYTES));
    g_want = malloc(PERIOD * 8);
    if (g_want == NULL) return 1;

    int world[MAX_RANKS], members_b[MAX_RANKS] = {0}, nb = 0, id_t, id_b;
    for (int r = 0; r < MAX_RANKS; r++) world[r] = r;
    for (int r = g_n - 1; r >= 0; r--)
        if (split_color(r) == split_color(g_rank)) members_b[nb++] = r;
    comm_t a, t, b;
    comm_setup(&a, "A", id, world, HIDET_NCCL_REGISTER_OWN, "own ");
    if (getenv("OWN_GPU_TEST_PEER_DEATH") != NULL) return peer_death(&a, s1);
    HN(hidet_nccl_comm_split(id, 0, g_rank, &id_t));
    comm_setup(&t, "T", id_t, world, HIDET_NCCL_REGISTER_AUTO, "own two-shot");
    unlink(table); /* read by now */
    show_routes(&a);
    show_routes(&t);
    uint32_t salt = 1;
    exact_sweep(&a, &salt, s1);
    exact_sweep(&t, &salt, s1);
    check(g_one_shot > 0, "no call of the sweeps was routed to own one-shot: that kernel is untested");
    check(g_two_shot > 0, "no call of the sweeps was routed to own two-shot: that kernel is untested");
    back_to_back(&a, pick_size(&a, "own one-shot", 64 * KIB), "own one-shot", s1);
    back_to_back(&t, pick_size(&t, "own two-shot", 2 * MIB), "own two-shot", s1);
    graph_replays(&a, s1);
    graph_replays(&t, s1);
    HN(hidet_nccl_comm_split(id, split_color(g_rank), g_n - 1 - g_rank, &id_b));
    comm_setup(&b, "B", id_b, members_b, HIDET_NCCL_REGISTER_OWN, "own ");
    check(b.n == nb, "communicator B has %d ranks, want %d", b.n, nb);
    two_communicators(&a, &b, s1, s2);

    CU(cudaDeviceSynchronize());
    comm_release(&b);
    comm_release(&t);
    comm_release(&a);
    HN(hidet_nccl_finalize());
    CU(cudaStreamDestroy(s1));
    CU(cudaStreamDestroy(s2));
    CU(cudaFreeHost(g_in));
    CU(cudaFreeHost(g_out));
    CU(cudaFreeHost(g_chk));
    free(g_want);
    if (g_not_compared) printf("own_gpu_test: %d calls routed to NCCL not compared (above)\n", g_not_compared);
    printf("own_gpu_test: %d checks, %d wrong\n", g_checks, g_wrong);
    return g_wrong != 0;
}

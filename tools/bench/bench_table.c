/* hidet-nccl-bench's table, as nccl-tests prints it (src/util.cu there: size, count, type, redop,
 * root; out of place then in place: time, algbw, busbw, #wrong; the footer's "Out of bounds
 * values" and "Avg bus bandwidth"), with raw NCCL's time and busbw and the library/raw ratios
 * in the same row. Sizes as nccl-tests counts them (src/<collective>.cu, GetCollByteCount): the
 * collectives whose buffers hold a block per rank take count = (size / element / ranks) rounded
 * down to whole 16 bytes, and their row's size is count x ranks x element. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/bench/bench.h"
#include "tools/support/reference.h"

/* --samples: rank 0's file of every timed run (NULL: none). */
static FILE *samples;

/* Device buffers of the largest size, and the host ones of the checks (input, expected, got). */
typedef struct {
    char *send, *recv;
    unsigned char *in, *want, *got;
} buffers_t;

/* What the footer sums: the library's and raw NCCL's busbw over every result, and the results a
 * check found wrong. */
typedef struct {
    double bus, raw_bus;
    int results, wrong_results;
} totals_t;

/* One row: [0] out of place, [1] in place. */
typedef struct {
    size_t bytes, count;
    int root, has[2];
    long wrong[2];
    double t_lib[2], t_raw[2];
} row_t;

static size_t elem_size(void) {
    size_t es = 4;
    hidet_nccl_dtype_size(opt.dtype, &es);
    return es;
}

/* nccl-tests' count (per rank for the collectives with blocks) and size for `size` bytes; 0 when
 * the count is 0 (the row is left out). */
static size_t row_count(coll_t coll, size_t size, size_t *bytes) {
    const coll_info_t *ci = &bench_colls[coll];
    size_t es = elem_size(), count = size / es;
    if (ci->blocks_send || ci->blocks_recv) {
        size_t align = es < 16 ? 16 / es : 1;
        count = count / (size_t)opt.nranks / align * align;
        *bytes = count * (size_t)opt.nranks * es;
    } else {
        *bytes = count * es;
    }
    return count;
}

/* send_recv and all_to_all have none (the library refuses an in-place all_to_all: NCCL defines
 * none, and its ncclAlltoAll in place was measured wrong over the network). */
static int has_in_place(const ctx_t *c, coll_t coll) {
    (void)c;
    return bench_colls[coll].in_place != IP_NONE;
}

/* This rank's input (in_bytes into b->in) and the result its receive buffer must hold (b->want). */
static void expected_data(const ctx_t *c, const call_t *k, size_t in_bytes, buffers_t *b) {
    int n = opt.nranks, r = opt.rank;
    size_t blk = k->block_bytes;
    if (bench_colls[k->coll].reduces) {
        size_t elems = in_bytes / hn_ref_elem_size(c->red.nccl_dtype);
        hn_ref_fill(opt.dtype, opt.op, r, elems, b->in);
        hn_ref_expected(opt.dtype, opt.op, n, elems, b->want);
        if (k->coll == COLL_REDUCE_SCATTER) memmove(b->want, b->want + (size_t)r * blk, blk);
        return;
    }
    switch (k->coll) {
        case COLL_BROADCAST:
            hn_ref_fill_bytes(r, 0, blk, b->in);
            hn_ref_fill_bytes(k->root, 0, blk, b->want);
            break;
        case COLL_ALL_GATHER:
        case COLL_GATHER:
            hn_ref_fill_bytes(r, 0, blk, b->in);
            for (int j = 0; j < n; j++) hn_ref_fill_bytes(j, 0, blk, b->want + (size_t)j * blk);
            break;
        case COLL_ALL_TO_ALL: /* block j of rank s goes to rank j, landing as its block s */
            hn_ref_fill_bytes(r, 0, (size_t)n * blk, b->in);
            for (int j = 0; j < n; j++) hn_ref_fill_bytes(j, (size_t)r * blk, blk, b->want + (size_t)j * blk);
            break;
        case COLL_SCATTER:
            hn_ref_fill_bytes(r, 0, (size_t)n * blk, b->in);
            hn_ref_fill_bytes(k->root, (size_t)r * blk, blk, b->want);
            break;
        default: /* send_recv: from the previous rank */
            hn_ref_fill_bytes(r, 0, blk, b->in);
            hn_ref_fill_bytes((r + n - 1) % n, 0, blk, b->want);
            break;
    }
}

/* One library call from fresh data, its result compared exactly (where this rank has one): the
 * wrong elements (NCCL elements for the reductions, dtype elements otherwise), over the ranks.
 * The receive buffer is poisoned first, so that what the call leaves unwritten counts. */
static long check(const ctx_t *c, const call_t *k, size_t in_bytes, size_t out_bytes, buffers_t *b) {
    const coll_info_t *ci = &bench_colls[k->coll];
    int mine = !ci->result_on_root || opt.rank == k->root;
    expected_data(c, k, in_bytes, b);
    /* on the bench's own (non-blocking) stream: a plain cudaMemcpy from pageable memory may
     * return before its DMA lands, and that stream would not wait for it */
    CU(cudaMemsetAsync(k->recv, 0xff, out_bytes, c->stream));
    CU(cudaMemcpyAsync((void *)k->send, b->in, in_bytes, cudaMemcpyHostToDevice, c->stream));
    bench_call(c, 0, k);
    if (mine) CU(cudaMemcpyAsync(b->got, k->recv, out_bytes, cudaMemcpyDeviceToHost, c->stream));
    CU(cudaStreamSynchronize(c->stream));
    long wrong = 0;
    size_t unit = ci->reduces ? hn_ref_elem_size(c->red.nccl_dtype) : elem_size();
    if (mine && memcmp(b->got, b->want, out_bytes) != 0)
        for (size_t i = 0; i < out_bytes / unit; i++) wrong += memcmp(b->got + i * unit, b->want + i * unit, unit) != 0;
    return (long)bench_over_ranks((double)wrong, HIDET_NCCL_SUM);
}

/* -w calls of each, then --reps runs of -n calls, the library and raw NCCL alternately (drift
 * hits both alike): the fastest run of each; with --samples every run's pair is kept too. */
static void time_pair(const ctx_t *c, const call_t *k, size_t bytes, int in_place, double *t_lib, double *t_raw) {
    for (int w = 0; w < opt.warmup; w++) {
        bench_call(c, 0, k);
        bench_call(c, 1, k);
    }
    *t_lib = *t_raw = 1e30;
    for (int r = 0; r < opt.reps; r++) {
        double lib = bench_timed(c, 0, k, opt.iters), raw = bench_timed(c, 1, k, opt.iters);
        if (lib < *t_lib) *t_lib = lib;
        if (raw < *t_raw) *t_raw = raw;
        if (samples != NULL)
            fprintf(samples, "%s %zu %d %d %.4f %.4f\n", bench_colls[k->coll].name, bytes, in_place, r, lib * 1e6,
                    raw * 1e6);
    }
}

static const char *fmt(char *buf, size_t bytes, int present, double v) {
    if (!present) return "n/a";
    snprintf(buf, bytes, "%.2f", v);
    return buf;
}

static const char *fmt_ratio(char *buf, size_t bytes, int present, double v) {
    if (!present) return "n/a";
    snprintf(buf, bytes, "%.3f", v);
    return buf;
}

static const char *fmt_wrong(char *buf, size_t bytes, int present, long wrong) {
    if (!present) return "n/a";
    if (!opt.check) return "N/A"; /* nccl-tests' word when it does not check */
    snprintf(buf, bytes, "%ld", wrong);
    return buf;
}

static void print_row(coll_t coll, const row_t *w) {
    const coll_info_t *ci = &bench_colls[coll];
    const char *dname, *oname;
    hidet_nccl_dtype_name(opt.dtype, &dname);
    hidet_nccl_op_name(opt.op, &oname);
    double f = bench_bus_factor(coll, opt.nranks), alg[2] = {0, 0}, raw_bus[2] = {0, 0};
    for (int ip = 0; ip < 2; ip++) {
        if (!w->has[ip]) continue;
        alg[ip] = (double)w->bytes / w->t_lib[ip] / 1e9;
        raw_bus[ip] = (double)w->bytes / w->t_raw[ip] / 1e9 * f;
    }
    char s[16][32];
    const int o = w->has[0], i = w->has[1];
    printf("%12zu %12zu %9s %6s %6d |%10s %8s %8s %6s |%10s %8s %8s %6s |%10s %8s %10s %8s |%7s %7s |%7s %7s\n",
           w->bytes, w->count, dname, ci->reduces ? oname : "none", ci->rooted ? w->root : -1,
           fmt(s[0], 32, o, w->t_lib[0] * 1e6), fmt(s[1], 32, o, alg[0]), fmt(s[2], 32, o, alg[0] * f),
           fmt_wrong(s[3], 32, o, w->wrong[0]), fmt(s[4], 32, i, w->t_lib[1] * 1e6), fmt(s[5], 32, i, alg[1]),
           fmt(s[6], 32, i, alg[1] * f), fmt_wrong(s[7], 32, i, w->wrong[1]), fmt(s[8], 32, o, w->t_raw[0] * 1e6),
           fmt(s[9], 32, o, raw_bus[0]), fmt(s[10], 32, i, w->t_raw[1] * 1e6), fmt(s[11], 32, i, raw_bus[1]),
           fmt_ratio(s[12], 32, o, w->t_raw[0] / w->t_lib[0]), fmt_ratio(s[13], 32, i, w->t_raw[1] / w->t_lib[1]),
           fmt_ratio(s[14], 32, o, w->t_lib[0] / w->t_raw[0]), fmt_ratio(s[15], 32, i, w->t_lib[1] / w->t_raw[1]));
    fflush(stdout);
}

/* One row: out of place then in place, each checked once from fresh data (-c 1), then the
 * library and raw NCCL timed alike. */
static void measure_row(const ctx_t *c, coll_t coll, buffers_t *b, size_t count, size_t bytes, int root,
                        totals_t *tot) {
    const coll_info_t *ci = &bench_colls[coll];
    row_t w = {bytes, count, root, {1, has_in_place(c, coll)}, {0, 0}, {0, 0}, {0, 0}};
    double f = bench_bus_factor(coll, opt.nranks);
    for (int ip = 0; ip < 2; ip++) {
        if (!w.has[ip]) continue;
        call_t k = bench_make_call(c, coll, b->send, b->recv, count, ip, root < 0 ? 0 : root);
        size_t n = (size_t)opt.nranks;
        size_t in_bytes = (ci->blocks_send ? n : 1) * k.block_bytes, out_bytes = (ci->blocks_recv ? n : 1) * k.block_bytes;
        w.wrong[ip] = opt.check ? check(c, &k, in_bytes, out_bytes, b) : 0;
        time_pair(c, &k, bytes, ip, &w.t_lib[ip], &w.t_raw[ip]);
        tot->bus += (double)bytes / w.t_lib[ip] / 1e9 * f;
        tot->raw_bus += (double)bytes / w.t_raw[ip] / 1e9 * f;
        tot->results++;
        tot->wrong_results += w.wrong[ip] > 0;
    }
    if (opt.rank == 0) print_row(coll, &w);
}

/* Why the table of coll is left out (NULL: it is not): a reduction the data type cannot do, or
 * not with the loaded NCCL. */
static const char *skip_reason(const ctx_t *c, coll_t coll) {
    return bench_colls[coll].reduces && c->red_why[0] != '\0' ? c->red_why : NULL;
}

static void print_table_head(const ctx_t *c, coll_t coll) {
    const coll_info_t *ci = &bench_colls[coll];
    int grouped = (coll == COLL_ALL_TO_ALL && (c->nccl->AlltoAll == NULL || c->grouped_p2p)) ||
                  (coll == COLL_GATHER && (c->nccl->Gather == NULL || c->grouped_p2p)) ||
                  (coll == COLL_SCATTER && (c->nccl->Scatter == NULL || c->grouped_p2p));
    printf("#\n# collective %s: %s against %s%s on the same communicator; busbw = algbw x %s (%.3f, %d rank%s)\n",
           ci->name, ci->lib_call, ci->raw_call, grouped ? " as grouped ncclSend/ncclRecv (as the library)" : "",
           ci->factor_text, bench_bus_factor(coll, opt.nranks), opt.nranks, opt.nranks == 1 ? "" : "s");
    if (!has_in_place(c, coll))
        printf("# in place: n/a (%s)\n", ci->in_place == IP_NONE ? "send/recv has no in-place form"
                                                                  : "grouped send/recv has none: NCCL before 2.28 or "
                                                                    "HIDET_NCCL_GROUPED_P2P=1");
    printf("#%49s|%-36s|%-36s|%-40s|%-16s|%s\n", "", " library, out of place", " library, in place",
           " raw NCCL, out of place and in place", " busbw lib/raw", " time lib/raw");
    printf("#%11s %12s %9s %6s %6s |%10s %8s %8s %6s |%10s %8s %8s %6s |%10s %8s %10s %8s |%7s %7s |%7s %7s\n", "size",
           "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
           "oop time", "busbw", "ip time", "busbw", "oop", "ip", "oop", "ip");
    printf("#%11s %12s %9s %6s %6s |%10s %8s %8s %6s |%10s %8s %8s %6s |%10s %8s %10s %8s |%7s %7s |%7s %7s\n", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
           "(us)", "(GB/s)", "", "", "", "");
}

static void coll_table(const ctx_t *c, coll_t coll, buffers_t *b, totals_t *tot) {
    const char *why = skip_reason(c, coll);
    if (why != NULL) {
        if (opt.rank == 0) printf("#\n# collective %s: skipped (%s)\n", bench_colls[coll].name, why);
        return;
    }
    if (opt.rank == 0) print_table_head(c, coll);
    int each_root = bench_colls[coll].rooted && opt.root < 0;
    for (int root = each_root ? 0 : opt.root; root < (each_root ? opt.nranks : opt.root + 1); root++) {
        for (double fb = (double)opt.min_bytes; fb <= (double)opt.max_bytes + 0.5; fb *= opt.factor) {
            size_t bytes, count = row_count(coll, (size_t)fb, &bytes);
            if (count > 0) measure_row(c, coll, b, count, bytes, bench_colls[coll].rooted ? root : -1, tot);
        }
    }
    if (coll != COLL_ALL_REDUCE) return;
    /* the smallest all_reduce's latency in a CUDA graph, as the earlier bench printed it */
    size_t es = elem_size(), small = 8 / es ? 8 / es : 1;
    call_t k = bench_make_call(c, COLL_ALL_REDUCE, b->send, b->recv, small, 1, 0);
    double g_lib = bench_graph_timed(c, 0, &k, 100, 20), g_raw = bench_graph_timed(c, 1, &k, 100, 20);
    if (opt.rank == 0)
        printf("# CUDA-graph-captured all_reduce of %zu B (100 per graph, replayed): library %.2f us, raw %.2f us per "
               "call\n", small * es, g_lib * 1e6, g_raw * 1e6);
}

static void print_run_head(void) {
    static const char *const average[4] = {"rank 0's", "the mean over the ranks", "the least rank's",
                                           "the slowest rank's"};
    printf("#\n# %d calls per timing (-n), %d warm-up calls of each (-w), fastest of %d alternating runs of the library "
           "and raw NCCL (--reps); a time is %s (-a %d)\n", opt.iters, opt.warmup, opt.reps, average[opt.average],
           opt.average);
    if (opt.blocking) printf("# -z 1: each call waited for (stream synchronized) before the next\n");
    if (opt.aa)
        printf("# --aa: the library's columns are raw NCCL too (A/A): the ratios show how far two identical loops "
               "differ, what a library/raw ratio must exceed to mean anything\n");
    if (opt.graph_launches > 0)
        printf("# -G %d: the %d calls of a timing captured in one CUDA graph, timed over %d replays\n",
               opt.graph_launches, opt.iters, opt.graph_launches);
    printf("# %s\n", opt.check ? "-c 1: every size checked exactly once, out of place and in place, before it is "
                                 "timed; #wrong: wrong elements over the ranks"
                               : "-c 0: not checked (#wrong N/A)");
}

/* nccl-tests' footer (util.cu, writeResultFooter), then raw NCCL's average beside it. */
static void print_footer(const totals_t *tot) {
    double bus = tot->results ? tot->bus / tot->results : 0, raw = tot->results ? tot->raw_bus / tot->results : 0;
    printf("# %-20s : %d %s\n", "Out of bounds values", tot->wrong_results, tot->wrong_results ? "FAILED" : "OK");
    printf("# %-20s : %g %s\n", "Avg bus bandwidth", bus, "");
    printf("# %-20s : %g (library/raw %.3f)\n", "Avg raw NCCL busbw", raw, raw > 0 ? bus / raw : 1.0);
    printf("#\n");
}

int bench_tables(const ctx_t *c) {
    buffers_t b = {NULL, NULL, NULL, NULL, NULL};
    size_t bytes = opt.max_bytes;
    CU(cudaMalloc((void **)&b.send, bytes));
    CU(cudaMalloc((void **)&b.recv, bytes));
    CU(cudaMemset(b.send, 0, bytes));
    CU(cudaMemset(b.recv, 0, bytes));
    /* The legacy stream's memsets run on their own: done before the bench's (non-blocking)
     * stream writes the same buffers, or a late one overwrites the first check's result. */
    CU(cudaDeviceSynchronize());
    if (opt.check) {
        b.in = malloc(bytes);
        b.want = malloc(bytes);
        b.got = malloc(bytes);
        if (!b.in || !b.want || !b.got) DIE("out of host memory for 3 x %zu bytes (use -c 0)", bytes);
    }
    if (opt.rank == 0) print_run_head();
    if (opt.rank == 0 && opt.samples != NULL && (samples = fopen(opt.samples, "a")) == NULL)
        DIE("--samples %s: %s", opt.samples, strerror(errno));
    totals_t tot = {0, 0, 0, 0};
    for (int coll = 0; coll < COLL_COUNT; coll++)
        if (opt.colls >> coll & 1u) coll_table(c, (coll_t)coll, &b, &tot);
    if (opt.rank == 0) print_footer(&tot);
    if (samples != NULL && fclose(samples) != 0) DIE("--samples %s: %s", opt.samples, strerror(errno));
    samples = NULL;
    cudaFree(b.send);
    cudaFree(b.recv);
    free(b.in);
    free(b.want);
    free(b.got);
    return tot.wrong_results;
}

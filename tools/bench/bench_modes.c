/* --modes: one allocation of library memory (send and receive halves) registered AUTO on the
 * library's communicator, as a buffer on one split of it, as a window on another and (for
 * all_reduce) for the library's own kernels on a third; per size the library's collective (its
 * own choice of view) against the raw NCCL call on the plain communicator (the memory is not
 * registered on it), the buffer one and the window one, and the own kernels, alternately,
 * fastest of --reps. --tune FILE writes the fastest mode per size as a tuning table.
 * tools/gpu/check_buffer_targets.py reads these tables: keep their lines as they are. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "tools/bench/bench.h"

typedef struct {
    int id;
    ncclComm_t comm;
} mode_comm_t;

static const char *const k_mode_names[4] = {"plain", "buffer", "window", "own"};
/* The views of a tuning table (core/mem/tune_table.c): NCCL's three, the own one-shot and two-shot. */
static const char *const k_table_views[5] = {"plain", "buffer", "window", "own1", "own2"};

/* The memory and the communicators it is registered on: raw[0] the library's own (AUTO),
 * raw[1] a split with it as a buffer, raw[2] a split with it as a window, raw[3] (own 1) a
 * split with it for the own kernels (all_reduce only, and where they can run). */
typedef struct {
    coll_t coll;
    void *mem;
    size_t bytes;
    mode_comm_t raw[4];
    int handles[4];
    int own;
} modes_t;

/* The call on another communicator: raw NCCL's there (comm not NULL), else the library's. */
static double timed_on(const ctx_t *c, ncclComm_t comm, const call_t *k, int iters) {
    ctx_t on = *c;
    if (comm != NULL) on.comm = comm;
    return bench_timed(&on, comm != NULL, k, iters);
}

/* Allocates and registers the memory; returns the seconds AUTO registration took. */
static double modes_register(const ctx_t *ctx, modes_t *s) {
    s->bytes = opt.max_bytes;
    HN(hidet_nccl_mem_alloc(ctx->id, s->bytes, &s->mem));
    CU(cudaMemset(s->mem, 0, s->bytes));
    s->raw[0] = (mode_comm_t){ctx->id, ctx->comm};
    for (int m = 1; m < 3; m++) { /* the raw ones first: made before the library's own siblings */
        HN(hidet_nccl_comm_split(ctx->id, 0, opt.rank, &s->raw[m].id));
        HN(hidet_nccl_get_comm(s->raw[m].id, &s->raw[m].comm));
        HN(hidet_nccl_register(s->raw[m].id, s->mem, s->bytes,
                               m == 1 ? HIDET_NCCL_REGISTER_BUFFER : HIDET_NCCL_REGISTER_WINDOW, &s->handles[m]));
    }
    if (s->coll == COLL_ALL_REDUCE) { /* refused alike on every rank where the own kernels cannot run */
        HN(hidet_nccl_comm_split(ctx->id, 0, opt.rank, &s->raw[3].id));
        HN(hidet_nccl_get_comm(s->raw[3].id, &s->raw[3].comm));
        s->own = hidet_nccl_register(s->raw[3].id, s->mem, s->bytes, HIDET_NCCL_REGISTER_OWN, &s->handles[3]) ==
                 HIDET_NCCL_SUCCESS;
        if (!s->own && opt.rank == 0) printf("# own kernels: none (%s)\n", hidet_nccl_last_error());
        if (!s->own) HN(hidet_nccl_comm_destroy(s->raw[3].id));
    }
    double t0 = bench_now();
    HN(hidet_nccl_register(ctx->id, s->mem, s->bytes, HIDET_NCCL_REGISTER_AUTO, &s->handles[0]));
    return bench_now() - t0;
}

static void modes_release(const modes_t *s) {
    if (s->own) HN(hidet_nccl_deregister(s->raw[3].id, s->handles[3]));
    if (s->own) HN(hidet_nccl_comm_destroy(s->raw[3].id));
    for (int m = 2; m >= 0; m--) HN(hidet_nccl_deregister(s->raw[m].id, s->handles[m]));
    for (int m = 1; m < 3; m++) HN(hidet_nccl_comm_destroy(s->raw[m].id));
    HN(hidet_nccl_mem_free(s->mem));
}

static void print_modes_head(const modes_t *s, double t_auto) {
    printf("# library memory: %zu bytes from hidet_nccl_mem_alloc, registered AUTO in %.1f ms (siblings made)\n",
           s->bytes, t_auto * 1e3);
    printf("# at least %d iterations per timing (up to 1000 below 64 MiB), fastest of %d alternating runs, in "
           "place; busbw GB/s (up to 64 B: us per call); best: the fastest raw mode (a registered one only if "
           "5%% faster than plain)\n",
           opt.iters, opt.reps);
    if (opt.graph_launches > 0)
        printf("# in CUDA graphs: every timing's calls captured in one graph, replayed %d times\n",
               opt.graph_launches);
    printf("# own: the library's own kernels (one-shot or two-shot, as HIDET_NCCL_REGISTER_OWN picks; -: they do not "
           "run that size); own/best: against the best raw mode\n");
    printf("# %s\n#%11s %9s | %9s %9s %9s %9s %9s | %7s %7s %7s %7s\n", bench_colls[s->coll].name, "size", "type",
           "library", "raw plain", "raw buffer", "raw window", "own", "best", "lib/best", "lib/plain", "own/best");
}

/* Which own kernel runs count elements (the route of the own registration): 3 one-shot, 4
 * two-shot (k_table_views), 0 none. */
static int own_view(const modes_t *s, size_t count) {
    char route[400];
    if (!s->own || s->coll != COLL_ALL_REDUCE) return 0;
    HN(hidet_nccl_all_reduce_route(s->raw[3].id, s->mem, s->mem, count, opt.dtype, opt.op, route, sizeof route));
    return strcmp(route, "own one-shot") == 0 ? 3 : strcmp(route, "own two-shot") == 0 ? 4 : 0;
}

/* One size (bytes, a multiple of unit): the library, raw plain, buffer and window, and the own
 * kernels, fastest of --reps alternating runs into t (library, plain, buffer, window, own: 1e30
 * when they do not run it). In place, as nccl-tests counts size: all_reduce's buffer,
 * all_gather's output (its input this rank's block of it), reduce_scatter's input (its output
 * this rank's block). */
static void time_modes(const ctx_t *ctx, const modes_t *s, size_t size, size_t unit, double t[5]) {
    call_t k = bench_make_call(ctx, s->coll, s->mem, s->mem, size / unit, 1, 0);
    for (int v = 0; v < 5; v++) t[v] = 1e30;
    int modes = own_view(s, size / unit) ? 5 : 4;
    ctx_t own = *ctx;
    own.id = s->raw[3].id;
    own.comm = s->raw[3].comm;
    /* small sizes are a few microseconds each: enough calls per timing to see past jitter */
    int iters = opt.iters;
    if (size < (64u << 20) && (size_t)iters < (16u << 20) / size) iters = (int)((16u << 20) / size);
    if (iters > 1000 && iters > opt.iters) iters = 1000;
    for (int w = 0; w < opt.warmup; w++) {
        bench_call(ctx, 0, &k);
        for (int m = 0; m < 3; m++) timed_on(ctx, s->raw[m].comm, &k, 1);
        if (modes == 5) bench_call(&own, 0, &k);
    }
    for (int r = 0; r < opt.reps; r++) {
        for (int j = 0; j < modes; j++) { /* each run starts with another of them */
            int v = (j + r) % modes;
            double x = v == 4 ? bench_timed(&own, 0, &k, iters)
                              : timed_on(ctx, v == 0 ? NULL : s->raw[v - 1].comm, &k, iters);
            if (x < t[v]) t[v] = x;
        }
    }
}

/* The best mode of t (1 plain, 2 buffer, 3 window, 4 own): the faster registered mode only if it
 * beats plain by 5%, and the own kernels only if they beat that by 5% (else noise decides). */
static int best_mode(const double t[5]) {
    int best = 1;
    int reg = t[2] <= t[3] ? 2 : 3;
    if (t[reg] < 0.95 * t[1]) best = reg;
    if (t[4] < 0.95 * t[best]) best = 4;
    return best;
}

static void print_modes_row(size_t size, const char *dname, const double t[5], int best, double bus) {
    double v[5];
    for (int k = 0; k < 5; k++) v[k] = size <= 64 ? t[k] * 1e6 : size / t[k] / 1e9 * bus;
    double raw_best = fmin(t[1], fmin(t[2], t[3]));
    char own[16] = "-", own_ratio[16] = "-";
    if (t[4] < 1e29) {
        snprintf(own, sizeof own, "%.3f", v[4]);
        snprintf(own_ratio, sizeof own_ratio, "%.3f", raw_best / t[4]);
    }
    printf("%12zu %9s | %9.3f %9.3f %9.3f %9.3f %9s | %7s %7.3f %7.3f %7s\n", size, dname, v[0], v[1], v[2], v[3], own,
           k_mode_names[best - 1], raw_best / t[0], t[1] / t[0], own_ratio);
    fflush(stdout);
}

/* --tune's crossover table as the sizes go by: a line where the best mode changes, "max" last. */
typedef struct {
    char text[8192];
    size_t len;
    int last_view; /* index into k_table_views, -1 before the first size */
    size_t last_size;
} tune_table_t;

/* One line more of the table, or a clear end where it would not fit (the sizes' factor -f
 * decides how many lines there can be). */
static void tune_table_put(tune_table_t *tt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tune_table_put(tune_table_t *tt, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tt->text + tt->len, sizeof tt->text - tt->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tt->text - tt->len)
        DIE("--tune: the crossover table would pass %zu bytes (the best mode changed too often between sizes: "
            "use a larger -f)", sizeof tt->text);
    tt->len += (size_t)n;
}

static void tune_table_add(tune_table_t *tt, coll_t coll, const char *dname, size_t size, int view) {
    if (view != tt->last_view && tt->last_view >= 0)
        tune_table_put(tt, "%s %s %zu %s\n", bench_colls[coll].name, dname, tt->last_size,
                       k_table_views[tt->last_view]);
    tt->last_view = view;
    tt->last_size = size;
}

/* The last range runs to max, except an own kernel's: it ends at the last size measured (they
 * run up to their staging), plain after it. */
static void tune_table_end(tune_table_t *tt, coll_t coll, const char *dname) {
    if (tt->last_view >= 3) {
        tune_table_put(tt, "%s %s %zu %s\n", bench_colls[coll].name, dname, tt->last_size,
                       k_table_views[tt->last_view]);
        tt->last_view = 0;
    }
    if (tt->last_view >= 0)
        tune_table_put(tt, "%s %s max %s\n", bench_colls[coll].name, dname, k_table_views[tt->last_view]);
}

static void write_tune_table(coll_t coll, const char *dname, const char *table) {
    FILE *f = fopen(opt.tune_file, "a");
    if (f == NULL) DIE("cannot write %s", opt.tune_file);
    fprintf(f, "# hidet-nccl-bench --tune: %d ranks, %s %s, fastest mode per size\n%s", opt.nranks,
            bench_colls[coll].name, dname, table);
    if (fclose(f) != 0) DIE("cannot write %s", opt.tune_file);
    printf("# tuning table appended to %s:\n%s", opt.tune_file, table);
}

void bench_modes(const ctx_t *ctx) {
    CU(cudaStreamSynchronize(ctx->stream));
    size_t esize = 4;
    HN(hidet_nccl_dtype_size(opt.dtype, &esize));
    const char *dname;
    hidet_nccl_dtype_name(opt.dtype, &dname);
    modes_t s;
    memset(&s, 0, sizeof s);
    while (!(opt.colls >> s.coll & 1u)) s.coll++; /* the one collective of --modes */
    double t_auto = modes_register(ctx, &s);
    if (opt.rank == 0) print_modes_head(&s, t_auto);
    tune_table_t table = {.len = 0, .last_view = -1, .last_size = 0};
    double bus = bench_bus_factor(s.coll, opt.nranks);
    size_t unit = s.coll == COLL_ALL_REDUCE ? esize : esize * (size_t)opt.nranks; /* size = a multiple of it */
    for (double fb = (double)opt.min_bytes; fb <= (double)opt.max_bytes + 0.5; fb *= opt.factor) {
        size_t size = (size_t)fb / unit * unit;
        if (size == 0) continue;
        double t[5];
        time_modes(ctx, &s, size, unit, t);
        int best = best_mode(t);
        if (opt.rank == 0) print_modes_row(size, dname, t, best, bus);
        tune_table_add(&table, s.coll, dname, size, best == 4 ? own_view(&s, size / unit) : best - 1);
    }
    tune_table_end(&table, s.coll, dname);
    if (opt.tune_file != NULL && opt.rank == 0) write_tune_table(s.coll, dname, table.text);
    modes_release(&s);
}

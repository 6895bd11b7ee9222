/* The distributed conjugate-gradient solve of examples/cg_solve.c (2-D Poisson, 5-point stencil
 * on an N x N grid, the grid rows split across ranks), made to survive the death of a rank and
 * to come back whole:
 *
 *     hidet-nccl-run -n 3 --max-restarts 2 ./cg_heal [N] [--every K] [--kill-rank R --kill-at I]
 *
 * N: the grid (default 128). K: a checkpoint every K iterations (default 10). --kill-rank R
 * --kill-at I: rank R kills itself (SIGKILL) at iteration I, in its first life only
 * (HIDET_NCCL_RESTART_COUNT unset or 0), to show what happens; hidet-nccl-run --max-restarts
 * starts it again. Any rank may die this way (a node reboot, the OOM killer): the program is the
 * same. The four steps, one function each:
 *
 *   1. checkpoint()  every K iterations each rank keeps its state (iteration, x, r, p and the two
 *                    norms) in its own memory AND at its buddy, rank + 1 mod n, which holds it in
 *                    GPU memory (a send to the right, a receive from the left).
 *   2. detect        every call returns a status; the first failure (the collective the dead rank
 *                    never joins: hidet_nccl_comm_wait's NCCL error or deadline, or an error of the
 *                    call itself) ends solve() with it.
 *   3. heal()        the survivors call hidet_nccl_comm_heal; the restarted rank's hidet_nccl_init
 *                    is its side of the same round. Both get one communicator of the whole job,
 *                    ranks in job order: each rank has its old rank, so the rows stay where they were.
 *   4. catch_up()    hidet_nccl_comm_joined says which ranks are new; the ranks agree on the last
 *                    checkpoint they all have; the buddy of each new rank sends it its copy; every
 *                    rank, survivors too, rolls back to that iteration, and the solve goes on.
 *
 * Every rank prints the answer: the iterations, and a checksum of x as the bits of a float64.
 * It is equal, bit for bit, to the answer of a run nobody disturbed, because the iterations done
 * again after the rollback are the same arithmetic in the same order. For that, no sum here is
 * NCCL's: a global sum is an all_gather of each rank's part, added up in rank order on every rank.
 * (NCCL's all_reduce adds in the order of the ring or tree it chose, which a rebuilt communicator
 * may choose differently: the last bits could differ.) Halo rows travel by all_gather too.
 *
 * One buddy per rank: the job survives any one death at a time (also a death during a heal or a
 * catch-up), and any deaths of ranks that are not each other's buddies. When a rank and its buddy
 * die together both copies are gone, and every rank starts over from iteration 0 (the answer is
 * still the same, only later).
 *
 * The GPU carries the communication (and the buddies' copies); the arithmetic is done on the host,
 * as in cg_solve.c. Host buffers that the GPU reads or writes are pinned (cudaMallocHost), so that
 * every copy is queued on the stream and nothing blocks before hidet_nccl_comm_wait, the one place
 * that waits and the one place that sees a dead peer (a copy into pageable memory would block in
 * CUDA, behind the collective the dead rank never joins, where no deadline applies).
 */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hidet_nccl/bootstrap.h>

/* Seconds a collective may take before this rank takes its peer for dead (NCCL over a network
 * usually says so at once: a dead peer's connection closes; over NVLink only the deadline tells). */
#define WAIT_S 60.0
/* Seconds for a heal: the round waits up to half of it for the restarted rank to come
 * (hidet-nccl-run's --restart-delay, its start, its CUDA init), then the new communicator. */
#define HEAL_S 240.0

#define DIE(...)                                \
    do {                                        \
        fprintf(stderr, "cg_heal: " __VA_ARGS__); \
        fputc('\n', stderr);                    \
        exit(1);                                \
    } while (0)
#define CUDA(call)                                                                              \
    do {                                                                                        \
        cudaError_t err_ = (call);                                                              \
        if (err_ != cudaSuccess) DIE("%s: %s (line %d)", #call, cudaGetErrorString(err_), __LINE__); \
    } while (0)
/* A failure of the library goes back to the loop in main (step 2), which heals. */
#define TRY(call)                                          \
    do {                                                   \
        hidet_nccl_status_t st_ = (call);                  \
        if (st_ != HIDET_NCCL_SUCCESS) return st_;         \
    } while (0)

typedef struct {
    int comm, rank, size; /* the communicator; this rank and the job's size (the same after a heal) */
    int n, row0, rows;    /* the grid's width; this rank's rows [row0, row0 + rows) */
    int *first_row;       /* rank k's rows start at first_row[k]; first_row[size] = n */
    cudaStream_t stream;
    double *dev;               /* GPU staging for every collective */
    double *one, *all, *edges; /* pinned: one value out, every rank's value in, every rank's edge rows */
    /* the CG state at iteration it */
    int it;
    double rr, bb, *x, *r, *p, *ap, *zeros;
    /* 1. checkpoints: the one of iteration i lives in slot (i / every) % 2, the one before in the other */
    int every;
    int saved;       /* the iteration of this rank's last complete checkpoint; -1: none */
    double *mine[2]; /* pinned: this rank's own checkpoints */
    double *held[2]; /* GPU: the checkpoints of rank - 1, whose buddy this rank is */
} cg_t;

typedef struct {
    int kill_rank, kill_at, first_life;
} plan_t;

static size_t cells(const cg_t *s, int k) { return (size_t)(s->first_row[k + 1] - s->first_row[k]) * s->n; }
/* A checkpoint of rank k: iteration, rr, bb, then x, r and p (3 + 3 cells float64). */
static size_t record(const cg_t *s, int k) { return 3 + 3 * cells(s, k); }
static int left(const cg_t *s) { return (s->rank + s->size - 1) % s->size; }
static int right(const cg_t *s) { return (s->rank + 1) % s->size; }

/* Waits for what the stream holds: where a dead peer shows. */
static hidet_nccl_status_t finish(cg_t *s) { return hidet_nccl_comm_wait(s->comm, s->stream, WAIT_S); }

/* s->all[k] = rank k's value, for every rank k. */
static hidet_nccl_status_t gather_one(cg_t *s, double value) {
    s->one[0] = value;
    CUDA(cudaMemcpyAsync(s->dev + s->rank, s->one, sizeof(double), cudaMemcpyHostToDevice, s->stream));
    TRY(hidet_nccl_all_gather(s->comm, s->dev + s->rank, s->dev, 1, HIDET_NCCL_FLOAT64, s->stream));
    CUDA(cudaMemcpyAsync(s->all, s->dev, (size_t)s->size * sizeof(double), cudaMemcpyDeviceToHost, s->stream));
    return finish(s);
}

/* *sum = the sum over ranks of value, added in rank order: the same bits on every rank, in every run. */
static hidet_nccl_status_t global_sum(cg_t *s, double value, double *sum) {
    TRY(gather_one(s, value));
    double total = 0;
    for (int k = 0; k < s->size; k++) total += s->all[k];
    *sum = total;
    return HIDET_NCCL_SUCCESS;
}

static double local_dot(const double *a, const double *b, size_t m) {
    double sum = 0;
    for (size_t i = 0; i < m; i++) sum += a[i] * b[i];
    return sum;
}

/* The state at iteration 0: b = 1 + (global index mod 5), x = 0, r = p = b (as cg_solve.c). */
static hidet_nccl_status_t start(cg_t *s) {
    size_t m = cells(s, s->rank);
    s->saved = -1;
    s->it = 0;
    for (size_t i = 0; i < m; i++) {
        s->x[i] = 0;
        s->r[i] = s->p[i] = 1.0 + (double)(((size_t)s->row0 * s->n + i) % 5);
    }
    TRY(global_sum(s, local_dot(s->r, s->r, m), &s->rr));
    s->bb = s->rr;
    return HIDET_NCCL_SUCCESS;
}

/* One CG iteration. On a failure the state is half done: the rollback (step 4) makes it whole. */
static hidet_nccl_status_t iterate(cg_t *s) {
    int n = s->n, rank = s->rank;
    size_t m = cells(s, rank), row = (size_t)n * sizeof(double);
    /* the neighbours' edge rows of p: rank k's first row at edges[2k], its last at edges[2k + 1] */
    memcpy(s->edges + (size_t)2 * rank * n, s->p, row);
    memcpy(s->edges + (size_t)(2 * rank + 1) * n, s->p + m - n, row);
    CUDA(cudaMemcpyAsync(s->dev + (size_t)2 * rank * n, s->edges + (size_t)2 * rank * n, 2 * row,
                         cudaMemcpyHostToDevice, s->stream));
    TRY(hidet_nccl_all_gather(s->comm, s->dev + (size_t)2 * rank * n, s->dev, (size_t)2 * n, HIDET_NCCL_FLOAT64,
                              s->stream));
    CUDA(cudaMemcpyAsync(s->edges, s->dev, (size_t)s->size * 2 * row, cudaMemcpyDeviceToHost, s->stream));
    TRY(finish(s));
    const double *above = rank > 0 ? s->edges + (size_t)(2 * rank - 1) * n : s->zeros;
    const double *below = rank < s->size - 1 ? s->edges + (size_t)(2 * rank + 2) * n : s->zeros;
    for (int r = 0; r < s->rows; r++) /* ap = A p */
        for (int c = 0; c < n; c++) {
            const double *at = s->p + (size_t)r * n;
            double up = r > 0 ? at[c - n] : above[c], down = r < s->rows - 1 ? at[c + n] : below[c];
            double west = c > 0 ? at[c - 1] : 0, east = c < n - 1 ? at[c + 1] : 0;
            s->ap[(size_t)r * n + c] = 4 * at[c] - up - down - west - east;
        }
    double pap, rr_new;
    TRY(global_sum(s, local_dot(s->p, s->ap, m), &pap));
    double alpha = s->rr / pap;
    for (size_t i = 0; i < m; i++) {
        s->x[i] += alpha * s->p[i];
        s->r[i] -= alpha * s->ap[i];
    }
    TRY(global_sum(s, local_dot(s->r, s->r, m), &rr_new));
    for (size_t i = 0; i < m; i++) s->p[i] = s->r[i] + rr_new / s->rr * s->p[i];
    s->rr = rr_new;
    s->it++;
    return HIDET_NCCL_SUCCESS;
}

/* 1. CHECKPOINT: this rank's state, kept here (host) and at its buddy rank + 1 (GPU), where it
 * lands in the slot of its iteration. Only when both the send and the receive are done is the
 * checkpoint this rank's: a failure half way leaves the one before, in the other slot, whole. */
static hidet_nccl_status_t checkpoint(cg_t *s) {
    int slot = s->it / s->every % 2;
    double *rec = s->mine[slot];
    size_t m = cells(s, s->rank);
    rec[0] = s->it, rec[1] = s->rr, rec[2] = s->bb;
    memcpy(rec + 3, s->x, m * sizeof(double));
    memcpy(rec + 3 + m, s->r, m * sizeof(double));
    memcpy(rec + 3 + 2 * m, s->p, m * sizeof(double));
    if (s->size > 1) {
        CUDA(cudaMemcpyAsync(s->dev, rec, record(s, s->rank) * sizeof(double), cudaMemcpyHostToDevice, s->stream));
        TRY(hidet_nccl_group_start());
        hidet_nccl_status_t st = hidet_nccl_send(s->comm, s->dev, record(s, s->rank), HIDET_NCCL_FLOAT64, right(s),
                                                 s->stream);
        if (st == HIDET_NCCL_SUCCESS)
            st = hidet_nccl_recv(s->comm, s->held[slot], record(s, left(s)), HIDET_NCCL_FLOAT64, left(s), s->stream);
        hidet_nccl_status_t end = hidet_nccl_group_end();
        TRY(st);
        TRY(end);
        TRY(finish(s));
    }
    s->saved = s->it;
    return HIDET_NCCL_SUCCESS;
}

/* Iterates to convergence from the state it holds, checkpointing every `every` iterations (again
 * after a rollback: the new rank's buddy copy of its left neighbour is then made anew), then the
 * answer. 2. DETECT: any failure returns at once, to main's loop. */
static hidet_nccl_status_t solve(cg_t *s, const plan_t *plan, double *checksum) {
    while (s->it < 10 * s->n && sqrt(s->rr / s->bb) > 1e-10) {
        if (plan->first_life && s->rank == plan->kill_rank && s->it == plan->kill_at) {
            printf("cg_heal: rank %d: SIGKILL to itself at iteration %d\n", s->rank, s->it);
            fflush(stdout);
            raise(SIGKILL);
        }
        if (s->it % s->every == 0) TRY(checkpoint(s));
        TRY(iterate(s));
    }
    double weighted = 0;
    for (size_t i = 0; i < cells(s, s->rank); i++)
        weighted += s->x[i] * (double)(1 + ((size_t)s->row0 * s->n + i) % 7);
    return global_sum(s, weighted, checksum);
}

/* 3. HEAL: the survivors and the restarted rank (its hidet_nccl_init) make one communicator of the
 * whole job again, each rank under its old number. */
static void heal(cg_t *s, hidet_nccl_status_t failure) {
    printf("cg_heal: rank %d: iteration %d: %s: %s\n", s->rank, s->it, hidet_nccl_status_string(failure),
           hidet_nccl_last_error());
    int old = s->comm, healed = -1, n_joined = 0, rank = -1, size = 0;
    if (hidet_nccl_comm_heal(old, HEAL_S, &healed, &n_joined) != HIDET_NCCL_SUCCESS)
        DIE("rank %d: hidet_nccl_comm_heal: %s", s->rank, hidet_nccl_last_error());
    /* The old communicator stays failed until destroyed; then its work left on the stream ends, and
     * the stream is drained before the host touches a buffer that work could still write. */
    if (healed != old && hidet_nccl_comm_destroy(old) != HIDET_NCCL_SUCCESS)
        DIE("rank %d: destroying the failed communicator: %s", s->rank, hidet_nccl_last_error());
    CUDA(cudaStreamSynchronize(s->stream));
    s->comm = healed;
    if (hidet_nccl_comm_rank(s->comm, &rank) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_comm_size(s->comm, &size) != HIDET_NCCL_SUCCESS)
        DIE("rank %d: %s", s->rank, hidet_nccl_last_error());
    if (size != s->size || rank != s->rank)
        DIE("rank %d: after the heal this rank is rank %d of %d, not %d of %d: a restarted rank did not come within "
            "the heal's wait (HEAL_S / 2 = %.0f s), or more ranks died than were restarted",
            s->rank, rank, size, s->rank, s->size, HEAL_S / 2);
    printf("cg_heal: rank %d: healed at iteration %d: %d rank%s taken in, communicator id %d -> %d\n", s->rank,
           s->it, n_joined, n_joined == 1 ? "" : "s", old, healed);
}

/* 4. CATCH UP: every rank goes back to the newest checkpoint that every rank that was there holds
 * (checkpoints of two ranks differ by one at most: a failure in the middle of checkpoint() leaves
 * some with the one before); the new ranks get theirs from their buddies. */
static hidet_nccl_status_t catch_up(cg_t *s) {
    int *joined = calloc((size_t)s->size, sizeof *joined), n_joined = 0, target = -1;
    if (joined == NULL) DIE("out of memory");
    hidet_nccl_status_t st = hidet_nccl_comm_joined(s->comm, joined, &n_joined);
    if (st == HIDET_NCCL_SUCCESS) st = gather_one(s, joined[s->rank] ? -1 : s->saved);
    if (st == HIDET_NCCL_SUCCESS) {
        target = INT_MAX; /* the oldest of the members' checkpoints; -1: one of them has none */
        for (int k = 0; k < s->size; k++)
            if (!joined[k] && s->all[k] < target) target = (int)s->all[k];
        if (target == INT_MAX) target = -1;
        for (int k = 0; k < s->size; k++) /* a new rank whose buddy is new too: both copies died */
            if (joined[k] && joined[(k + 1) % s->size]) target = -1;
    }
    if (st == HIDET_NCCL_SUCCESS && target < 0) { /* the same answer on every rank: all start over */
        free(joined);
        printf("cg_heal: rank %d: no checkpoint every rank can have: starting over from iteration 0\n", s->rank);
        return start(s);
    }
    int slot = target / s->every % 2;
    if (st == HIDET_NCCL_SUCCESS && n_joined > 0) { /* each new rank's buddy sends it its copy */
        if (joined[s->rank])
            printf("cg_heal: rank %d: new (restarted); its checkpoint of iteration %d comes from its buddy rank %d\n",
                   s->rank, target, right(s));
        if ((st = hidet_nccl_group_start()) == HIDET_NCCL_SUCCESS) {
            if (joined[left(s)])
                st = hidet_nccl_send(s->comm, s->held[slot], record(s, left(s)), HIDET_NCCL_FLOAT64, left(s),
                                     s->stream);
            if (joined[s->rank] && st == HIDET_NCCL_SUCCESS)
                st = hidet_nccl_recv(s->comm, s->dev, record(s, s->rank), HIDET_NCCL_FLOAT64, right(s), s->stream);
            hidet_nccl_status_t end = hidet_nccl_group_end();
            if (st == HIDET_NCCL_SUCCESS) st = end;
        }
        if (st == HIDET_NCCL_SUCCESS && joined[s->rank])
            CUDA(cudaMemcpyAsync(s->mine[slot], s->dev, record(s, s->rank) * sizeof(double), cudaMemcpyDeviceToHost,
                                 s->stream));
        if (st == HIDET_NCCL_SUCCESS) st = finish(s);
    }
    int was_new = joined[s->rank];
    free(joined);
    TRY(st);
    /* every rank, survivors too: back to iteration `target` */
    const double *rec = s->mine[slot];
    size_t m = cells(s, s->rank);
    if (rec[0] != target)
        DIE("rank %d: the checkpoint in slot %d is of iteration %.0f, not %d", s->rank, slot, rec[0], target);
    s->it = target, s->rr = rec[1], s->bb = rec[2];
    memcpy(s->x, rec + 3, m * sizeof(double));
    memcpy(s->r, rec + 3 + m, m * sizeof(double));
    memcpy(s->p, rec + 3 + 2 * m, m * sizeof(double));
    s->saved = target;
    printf("cg_heal: rank %d: back at iteration %d (%s)\n", s->rank, target,
           was_new ? "its buddy's copy" : "its own copy");
    return HIDET_NCCL_SUCCESS;
}

static void *pinned(size_t count) {
    void *p = NULL;
    CUDA(cudaMallocHost(&p, count * sizeof(double)));
    memset(p, 0, count * sizeof(double));
    return p;
}

static void *on_gpu(size_t count) {
    void *p = NULL;
    CUDA(cudaMalloc(&p, count * sizeof(double)));
    return p;
}

static int usage(void) {
    fprintf(stderr, "usage: hidet-nccl-run -n 3 --max-restarts 2 ./cg_heal [N] [--every K] "
                    "[--kill-rank R --kill-at I]\n");
    return 2;
}

int main(int argc, char **argv) {
    int n = 128;
    plan_t plan = {-1, -1, 1};
    cg_t s;
    memset(&s, 0, sizeof s);
    s.every = 10;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
        int has_value = i + 1 < argc && *argv[i + 1] != '\0' && *end == '\0' && v >= 0 && v <= 1000000;
        if (strcmp(argv[i], "--every") == 0 && has_value && v > 0)
            s.every = (int)v, i++;
        else if (strcmp(argv[i], "--kill-rank") == 0 && has_value)
            plan.kill_rank = (int)v, i++;
        else if (strcmp(argv[i], "--kill-at") == 0 && has_value)
            plan.kill_at = (int)v, i++;
        else if (i == 1 && (v = strtol(argv[i], &end, 10)) > 0 && *end == '\0' && v <= 100000)
            n = (int)v;
        else
            return usage();
    }
    const char *restarts = getenv("HIDET_NCCL_RESTART_COUNT");
    plan.first_life = restarts == NULL || atoi(restarts) == 0;

    /* A restarted rank's init is its side of the survivors' heal: it returns the whole communicator. */
    if (hidet_nccl_init(&s.comm) != HIDET_NCCL_SUCCESS) DIE("hidet_nccl_init: %s", hidet_nccl_last_error());
    int n_joined = 0;
    if (hidet_nccl_comm_rank(s.comm, &s.rank) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_comm_size(s.comm, &s.size) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_comm_joined(s.comm, NULL, &n_joined) != HIDET_NCCL_SUCCESS)
        DIE("%s", hidet_nccl_last_error());
    if (n < s.size) DIE("the grid (%d rows) needs at least one row per rank (%d)", n, s.size);
    s.n = n;
    s.first_row = malloc((size_t)(s.size + 1) * sizeof *s.first_row);
    if (s.first_row == NULL) DIE("out of memory");
    for (int k = 0; k <= s.size; k++) s.first_row[k] = (int)((long)k * n / s.size);
    s.row0 = s.first_row[s.rank];
    s.rows = s.first_row[s.rank + 1] - s.row0;

    size_t m = cells(&s, s.rank), most = 0;
    for (int k = 0; k < s.size; k++) most = record(&s, k) > most ? record(&s, k) : most;
    /* Non-blocking: a failed communicator's kernel left on it holds up no work on CUDA's default
     * stream (which the new communicator's init may use) until the old one is destroyed. */
    CUDA(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    s.dev = on_gpu(most > (size_t)2 * s.size * n ? most : (size_t)2 * s.size * n);
    s.held[0] = on_gpu(most), s.held[1] = on_gpu(most);
    s.mine[0] = pinned(most), s.mine[1] = pinned(most);
    s.one = pinned(1), s.all = pinned((size_t)s.size), s.edges = pinned((size_t)2 * s.size * n);
    s.x = calloc(m, sizeof(double)), s.r = calloc(m, sizeof(double)), s.p = calloc(m, sizeof(double));
    s.ap = calloc(m, sizeof(double)), s.zeros = calloc((size_t)n, sizeof(double));
    if (!s.x || !s.r || !s.p || !s.ap || !s.zeros) DIE("out of memory");
    s.saved = -1;

    /* A new rank (this process was restarted, and its init took it in) catches up with the others;
     * a first start begins at iteration 0. Then: solve; on a failure heal, catch up, solve on. */
    hidet_nccl_status_t st = n_joined > 0 ? catch_up(&s) : start(&s);
    double checksum = 0;
    for (;;) {
        if (st == HIDET_NCCL_SUCCESS) st = solve(&s, &plan, &checksum); /* 1. checkpoint, 2. detect */
        if (st == HIDET_NCCL_SUCCESS) break;
        heal(&s, st);        /* 3. heal */
        st = catch_up(&s);   /* 4. catch up */
    }
    uint64_t bits;
    memcpy(&bits, &checksum, sizeof bits);
    printf("cg_heal: rank %d of %d: answer: N=%d: %d iterations, checksum 0x%016" PRIx64 " (%.17g)\n", s.rank, s.size,
           n, s.it, bits, checksum);
    fflush(stdout);
    CUDA(cudaFree(s.dev));
    CUDA(cudaFree(s.held[0]));
    CUDA(cudaFree(s.held[1]));
    CUDA(cudaFreeHost(s.mine[0]));
    CUDA(cudaFreeHost(s.mine[1]));
    CUDA(cudaFreeHost(s.one));
    CUDA(cudaFreeHost(s.all));
    CUDA(cudaFreeHost(s.edges));
    free(s.x), free(s.r), free(s.p), free(s.ap), free(s.zeros), free(s.first_row);
    CUDA(cudaStreamDestroy(s.stream));
    if (hidet_nccl_finalize() != HIDET_NCCL_SUCCESS) DIE("hidet_nccl_finalize: %s", hidet_nccl_last_error());
    return 0;
}

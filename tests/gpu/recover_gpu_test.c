/* Survivors of a dead rank go on: hidet_nccl_comm_recover on GPUs, under hidet-nccl-run
 * --keep-going (the file rendezvous, or the launcher's socket rendezvous), run by
 * tests/gpu/recover.sh with each rank a fake node (own NCCL_HOSTID, NET/Socket) when there are
 * fewer GPUs than ranks.
 *   recover_gpu_test PLAN T [SEED]
 *     PLAN "1/0":      stage 1: original rank 1 SIGKILLs itself mid-loop; stage 2: original rank 0
 *                      (the old root): after each, the survivors detect the failure (comm_wait, T s),
 *                      recover, and run 100 exact all_reduces on the new communicator
 *     PLAN "random:K": K stages, each killing a random live rank at a random iteration and a
 *                      random point (before the all_reduce, or with it in flight); every
 *                      all_reduce checked exactly
 *     PLAN "hang:R":   original rank R stops calling the library mid-loop (its process lives
 *                      on); the others reach T, recover without it (shrink where NCCL can),
 *                      and run 100 exact all_reduces; R wakes after 3.5 T, finds its
 *                      communicator failed, calls comm_recover and must be told it was left out
 *   Also, once per run on the survivors: recover on the healthy new communicator is refused,
 *   recover of the old id a second time says into which id it went, two threads recovering
 *   at once: one is refused, NaN timeout refused.
 *   Every survivor prints "recover_gpu_test: OK" (or FAILED); timings on lines "timing:". */
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/gpu/kill_mark.h"
#include "tests/gpu/now.h"

#define COUNT (1u << 18)
#define MAX_RANKS 16

static int g_failed;
static int g_orig = -1; /* this process's original rank */
#define EXPECT(cond, what)                                                                                       \
    do {                                                                                                         \
        if (!(cond)) {                                                                                           \
            g_failed = 1;                                                                                        \
            printf("rank %d: FAILED %s (%s): last error: %s\n", g_orig, what, #cond, hidet_nccl_last_error()); \
            fflush(stdout);                                                                                      \
        }                                                                                                        \
    } while (0)

#define KILL_DIR "RECOVER_TEST_DIR" /* where a victim writes the moment of its death (tests/gpu/kill_mark.h) */

static double kill_moment(int stage) {
    char path[512];
    hn_kill_mark_path(KILL_DIR, stage, path, sizeof path);
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(path, "r");
        double t = 0;
        if (f) {
            int ok = fscanf(f, "%lf", &t) == 1;
            fclose(f);
            if (ok) return t;
        }
        usleep(10000);
    }
    return NAN;
}

typedef struct {
    int id, rank, size;
    int members[MAX_RANKS]; /* original ranks, in rank order */
    float *in, *out, *host;
    cudaStream_t s;
} job_t;

/* One all_reduce with data from iteration it, awaited; 1 exact, 0 wrong, -1 failed (status in *st). */
static int one_all_reduce(job_t *j, int it, double timeout, hidet_nccl_status_t *st) {
    for (size_t k = 0; k < COUNT; k++) j->host[k] = (float)((g_orig + 1) + (it % 13) + (int)(k % 7));
    cudaMemcpyAsync(j->in, j->host, COUNT * sizeof(float), cudaMemcpyHostToDevice, j->s);
    *st = hidet_nccl_all_reduce(j->id, j->in, j->out, COUNT, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, j->s);
    if (*st == HIDET_NCCL_SUCCESS) *st = hidet_nccl_comm_wait(j->id, j->s, timeout);
    if (*st != HIDET_NCCL_SUCCESS) return -1;
    cudaMemcpyAsync(j->host, j->out, COUNT * sizeof(float), cudaMemcpyDeviceToHost, j->s);
    if (cudaStreamSynchronize(j->s) != cudaSuccess) return 0;
    int base = 0;
    for (int r = 0; r < j->size; r++) base += j->members[r] + 1;
    for (size_t k = 0; k < COUNT; k++)
        if (j->host[k] != (float)(base + j->size * ((it % 13) + (int)(k % 7)))) return 0;
    return 1;
}

static int exact_all_reduces(job_t *j, int n, double timeout) {
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        hidet_nccl_status_t st;
        int r = one_all_reduce(j, 1000 + i, timeout, &st);
        if (r < 0) {
            printf("rank %d: all_reduce %d after the recovery: %s: %s\n", g_orig, i, hidet_nccl_status_string(st),
                   hidet_nccl_last_error());
            return 0;
        }
        wrong += r == 0;
    }
    printf("rank %d: %d exact all_reduces on id %d (%d ranks): %d wrong\n", g_orig, n, j->id, j->size, wrong);
    return wrong == 0;
}

typedef struct {
    int id, new_id, n_lost;
    double timeout;
    hidet_nccl_status_t st;
    char msg[512];
} recover_call_t;

static void *recover_thread(void *p) {
    recover_call_t *c = p;
    c->st = hidet_nccl_comm_recover(c->id, c->timeout, &c->new_id, &c->n_lost);
    snprintf(c->msg, sizeof c->msg, "%s", c->st ? hidet_nccl_last_error() : "");
    return NULL;
}

/* The survivors' side of a failure at stage `stage`: recover (from two threads once, the bad
 * inputs once), the new membership without `victim`, the checks. 1 if this rank goes on. */
static int survive(job_t *j, int stage, int victim, double timeout, double t_error, int first) {
    int old = j->id;
    if (first) {
        int unused;
        EXPECT(hidet_nccl_comm_recover(old, NAN, &unused, NULL) == HIDET_NCCL_ERROR_INVALID_ARGUMENT, "NaN timeout");
        EXPECT(hidet_nccl_comm_recover(old, -1, &unused, NULL) == HIDET_NCCL_ERROR_INVALID_ARGUMENT, "negative timeout");
        EXPECT(hidet_nccl_comm_recover(old, 0, NULL, NULL) == HIDET_NCCL_ERROR_INVALID_ARGUMENT, "NULL new_id");
    }
    recover_call_t a = {old, -1, -1, 4 * timeout, 0, ""}, b = a;
    double t0 = hn_now();
    pthread_t ta, tb;
    pthread_create(&ta, NULL, recover_thread, &a);
    if (first) pthread_create(&tb, NULL, recover_thread, &b);
    pthread_join(ta, NULL);
    if (first) pthread_join(tb, NULL);
    double took = hn_now() - t0;
    recover_call_t *won = &a;
    if (first) { /* one of the two threads recovered, the other was told a recovery is under way (or done) */
        recover_call_t *lost = a.st == HIDET_NCCL_SUCCESS ? &b : &a;
        won = a.st == HIDET_NCCL_SUCCESS ? &a : &b;
        EXPECT(lost->st == HIDET_NCCL_ERROR_INVALID_USAGE &&
                   (strstr(lost->msg, "under way") || strstr(lost->msg, "recovered already")),
               "the second thread's recovery refused");
        printf("rank %d: the other thread: %s: %s\n", g_orig, hidet_nccl_status_string(lost->st), lost->msg);
    }
    if (won->st != HIDET_NCCL_SUCCESS) {
        printf("rank %d: stage %d: recover: %s: %s\n", g_orig, stage, hidet_nccl_status_string(won->st), won->msg);
        g_failed = 1;
        return 0;
    }
    j->id = won->new_id;
    int rank = -1, size = 0;
    hidet_nccl_comm_rank(j->id, &rank);
    hidet_nccl_comm_size(j->id, &size);
    printf("timing: rank %d stage %d: error->ready %.3f s (recover; %d lost; id %d -> %d, rank %d of %d)%s\n", g_orig,
           stage, took, won->n_lost, old, j->id, rank, size, t_error >= 0 ? "" : "");
    int m = 0;
    for (int r = 0; r < j->size; r++)
        if (j->members[r] != victim) j->members[m++] = j->members[r];
    EXPECT(won->n_lost == 1 && size == m && rank >= 0 && j->members[rank] == g_orig, "the survivors' numbering");
    j->size = m;
    j->rank = rank;
    if (first) {
        int again = -1;
        EXPECT(hidet_nccl_comm_recover(old, timeout, &again, NULL) == HIDET_NCCL_ERROR_INVALID_USAGE &&
                   strstr(hidet_nccl_last_error(), "recovered already"),
               "a second recovery of the old id refused, naming the new one");
        EXPECT(hidet_nccl_comm_recover(j->id, timeout, &again, NULL) == HIDET_NCCL_ERROR_INVALID_USAGE &&
                   strstr(hidet_nccl_last_error(), "has not failed"),
               "recovery of a healthy communicator refused");
    }
    float x = 0;
    EXPECT(hidet_nccl_all_reduce(old, &x, &x, 1, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, j->s) ==
               HIDET_NCCL_ERROR_INVALID_COMM,
           "the old id takes no collective");
    EXPECT(hidet_nccl_comm_destroy(old) == HIDET_NCCL_SUCCESS, "destroy the old id");
    return 1;
}

/* Loops all_reduces until one fails (a stage's victim died or hung), or `until` iterations. The
 * victim of this stage dies (or hangs) at iteration `at`, before the call (point 0) or with it
 * in flight (point 1). Returns the iteration that failed, or -1. */
static int loop_until_failure(job_t *j, int stage, int victim, int at, int point, int hang, double timeout,
                              double *t_error) {
    for (int it = 0; it < 100000; it++) {
        if (g_orig == victim && it == at && point == 0) {
            if (hang) return -2;
            hn_die_now(KILL_DIR, g_orig, stage);
        }
        hidet_nccl_status_t st;
        if (g_orig == victim && it == at && point == 1) { /* in flight: enqueued, then gone */
            for (size_t k = 0; k < COUNT; k++) j->host[k] = 0;
            cudaMemcpyAsync(j->in, j->host, COUNT * sizeof(float), cudaMemcpyHostToDevice, j->s);
            hidet_nccl_all_reduce(j->id, j->in, j->out, COUNT, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, j->s);
            if (hang) return -2;
            hn_die_now(KILL_DIR, g_orig, stage);
        }
        int r = one_all_reduce(j, it, timeout, &st);
        if (r == 0) {
            g_failed = 1;
            printf("rank %d: stage %d: iteration %d: WRONG result\n", g_orig, stage, it);
        }
        if (r >= 0) continue;
        *t_error = hn_wall();
        printf("rank %d: stage %d: iteration %d: %s: %.200s\n", g_orig, stage, it, hidet_nccl_status_string(st),
               hidet_nccl_last_error());
        return it;
    }
    return -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: recover_gpu_test 1/0|random:K|hang:R T [SEED]\n");
        return 2;
    }
    const char *plan = argv[1];
    double timeout = atof(argv[2]);
    unsigned seed = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 1;
    job_t j;
    memset(&j, 0, sizeof j);
    if (hidet_nccl_init(&j.id) != HIDET_NCCL_SUCCESS) {
        printf("init: FAILED: %s\n", hidet_nccl_last_error());
        return 1;
    }
    hidet_nccl_comm_rank(j.id, &j.rank);
    hidet_nccl_comm_size(j.id, &j.size);
    g_orig = j.rank;
    for (int r = 0; r < j.size && r < MAX_RANKS; r++) j.members[r] = r;
    cudaMalloc((void **)&j.in, COUNT * sizeof(float));
    cudaMalloc((void **)&j.out, COUNT * sizeof(float));
    cudaMallocHost((void **)&j.host, COUNT * sizeof(float));
    cudaStreamCreate(&j.s);

    int stages = 2, hang = 0, fixed[2] = {1, 0};
    if (strncmp(plan, "random:", 7) == 0) stages = atoi(plan + 7);
    if (strncmp(plan, "hang:", 5) == 0) {
        hang = 1;
        stages = 1;
        fixed[0] = atoi(plan + 5);
    }
    if (stages < 1 || stages >= j.size) {
        printf("plan %s: %d stages for %d ranks\n", plan, stages, j.size);
        return 2;
    }
    srand(seed);
    for (int stage = 1; stage <= stages; stage++) {
        int victim = strncmp(plan, "random:", 7) == 0 ? j.members[rand() % j.size] : fixed[stage - 1];
        int at = strncmp(plan, "random:", 7) == 0 ? 3 + rand() % 40 : 30;
        int point = strncmp(plan, "random:", 7) == 0 ? rand() % 2 : 0;
        double t_error = -1;
        int it = loop_until_failure(&j, stage, victim, at, point, hang, timeout, &t_error);
        if (it == -2) { /* the hung rank: wake after the others went on, find out, and be told so */
            usleep((useconds_t)(3.5 * timeout * 1e6));
            hidet_nccl_status_t st;
            int r = one_all_reduce(&j, 0, timeout, &st);
            printf("rank %d: woke up; all_reduce: %s: %.200s\n", g_orig, hidet_nccl_status_string(st),
                   r < 0 ? hidet_nccl_last_error() : "");
            EXPECT(r < 0, "the hung rank's communicator failed");
            int unused = -1;
            st = hidet_nccl_comm_recover(j.id, timeout, &unused, NULL);
            printf("rank %d: recover: %s: %.300s\n", g_orig, hidet_nccl_status_string(st), hidet_nccl_last_error());
            EXPECT(st == HIDET_NCCL_ERROR_BOOTSTRAP && strstr(hidet_nccl_last_error(), "left out"),
                   "the hung rank is told it was left out");
            printf("recover_gpu_test (%s): %s (left out)\n", plan, g_failed ? "FAILED" : "OK");
            fflush(stdout);
            _exit(g_failed ? 1 : 3); /* its NCCL communicator is gone from under it: no finalize */
        }
        EXPECT(it >= 0, "a failure was seen");
        if (it < 0) break;
        double killed = hang ? NAN : kill_moment(stage);
        if (!isnan(killed))
            printf("timing: rank %d stage %d: kill->error %.3f s\n", g_orig, stage, t_error - killed);
        if (!survive(&j, stage, victim, timeout, t_error, stage == 1)) break;
        if (!hang && strncmp(plan, "random:", 7) == 0) continue;
        EXPECT(exact_all_reduces(&j, 100, timeout), "100 exact all_reduces");
    }
    if (getenv("HIDET_NCCL_TRACE_DIR") != NULL) /* the recorder names the communicator each came from */
        EXPECT(hidet_nccl_trace_dump(NULL, NULL, 0) == HIDET_NCCL_SUCCESS, "the flight recorder's dump");
    EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize");
    printf("recover_gpu_test (%s): %s\n", plan, g_failed ? "FAILED" : "OK");
    return g_failed;
}

/* The job whole again after a rank's death: hidet_nccl_comm_heal on GPUs, under hidet-nccl-run
 * --max-restarts (the file rendezvous, or the launcher's socket rendezvous), run by
 * tests/gpu/heal.sh with each rank a fake node (own NCCL_HOSTID, NET/Socket) when there are fewer
 * GPUs than ranks.
 *   heal_gpu_test PLAN T [SEED]
 *     PLAN "1/0":      stage 1: job rank 1 SIGKILLs itself mid-loop; stage 2: job rank 0 (the old
 *                      root); after each, the survivors see the failure (comm_wait, T s) and heal,
 *                      the launcher starts the dead rank again, its hidet_nccl_init joins, and
 *                      all of them run 100 exact all_reduces on the whole-again communicator
 *     PLAN "random:K": K stages, each killing a rank chosen from (SEED, stage) at an iteration
 *                      and a point (before the all_reduce, or with it in flight) chosen alike
 *     PLAN "start":    init, one exact all_reduce, finalize: what a whole-job restart
 *                      (torchrun's) pays per rank, timed by heal.sh around the launcher
 *   After every heal: the communicator has every job rank again, each at its job rank, the
 *   restarted one (only) named by hidet_nccl_comm_joined on every rank; the stage goes on from the
 *   members to the newcomer by a broadcast from the lowest member that was not new.
 *   With HEAL_TEST_ABORT_FIRST set, the members abort the failed communicator (hidet_nccl_comm_abort)
 *   before they heal: what NCCL's leftovers of it cost the heal.
 *   Every rank's last process prints "heal_gpu_test: OK" (or FAILED); timings on "timing:" lines. */
#include <cuda_runtime_api.h>
#include <math.h>
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
static int g_job = -1; /* this process's job rank */
#define EXPECT(cond, what)                                                                                      \
    do {                                                                                                        \
        if (!(cond)) {                                                                                          \
            g_failed = 1;                                                                                       \
            printf("rank %d: FAILED %s (%s): last error: %s\n", g_job, what, #cond, hidet_nccl_last_error()); \
            fflush(stdout);                                                                                     \
        }                                                                                                       \
    } while (0)

#define KILL_DIR "HEAL_TEST_DIR" /* where a victim writes the moment of its death (tests/gpu/kill_mark.h) */

static double kill_moment(int stage) {
    char path[512];
    hn_kill_mark_path(KILL_DIR, stage, path, sizeof path);
    FILE *f = fopen(path, "r");
    double t = NAN;
    if (f) {
        if (fscanf(f, "%lf", &t) != 1) t = NAN;
        fclose(f);
    }
    return t;
}

typedef struct {
    int id, size;
    float *in, *out, *host;
    int *stage_dev;
    cudaStream_t s;
} job_t;

/* One all_reduce with data from iteration it, awaited; 1 exact, 0 wrong, -1 failed (status in *st). */
static int one_all_reduce(job_t *j, int it, double timeout, hidet_nccl_status_t *st) {
    for (size_t k = 0; k < COUNT; k++) j->host[k] = (float)((g_job + 1) + (it % 13) + (int)(k % 7));
    cudaMemcpyAsync(j->in, j->host, COUNT * sizeof(float), cudaMemcpyHostToDevice, j->s);
    *st = hidet_nccl_all_reduce(j->id, j->in, j->out, COUNT, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, j->s);
    if (*st == HIDET_NCCL_SUCCESS) *st = hidet_nccl_comm_wait(j->id, j->s, timeout);
    if (*st != HIDET_NCCL_SUCCESS) return -1;
    cudaMemcpyAsync(j->host, j->out, COUNT * sizeof(float), cudaMemcpyDeviceToHost, j->s);
    if (cudaStreamSynchronize(j->s) != cudaSuccess) return 0;
    int base = j->size * (j->size + 1) / 2; /* every job rank is a member: sum of rank + 1 */
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
            printf("rank %d: all_reduce %d after the heal: %s: %s\n", g_job, i, hidet_nccl_status_string(st),
                   hidet_nccl_last_error());
            return 0;
        }
        wrong += r == 0;
    }
    printf("rank %d: %d exact all_reduces on id %d (%d ranks): %d wrong\n", g_job, n, j->id, j->size, wrong);
    return wrong == 0;
}

/* The whole-again communicator's checks, on every rank: each job rank at its place, `victim`
 * (or, for a joiner, this rank) the one new rank; then the stage from the lowest old member. */
static int settle(job_t *j, int job_size, int victim, int *stage) {
    int rank = -1, size = -1, joined[MAX_RANKS] = {0}, n_joined = -1;
    hidet_nccl_comm_rank(j->id, &rank);
    hidet_nccl_comm_size(j->id, &size);
    EXPECT(hidet_nccl_comm_joined(j->id, joined, &n_joined) == HIDET_NCCL_SUCCESS, "comm_joined");
    EXPECT(size == job_size && rank == g_job, "every job rank back, each at its number");
    EXPECT(n_joined == 1 && victim >= 0 && victim < job_size && joined[victim] == 1, "the restarted rank is new");
    int root = victim == 0 ? 1 : 0;
    cudaMemcpyAsync(j->stage_dev, stage, sizeof *stage, cudaMemcpyHostToDevice, j->s);
    hidet_nccl_status_t st = hidet_nccl_broadcast(j->id, j->stage_dev, j->stage_dev, 1, HIDET_NCCL_INT32, root, j->s);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl_comm_wait(j->id, j->s, 60);
    cudaMemcpyAsync(stage, j->stage_dev, sizeof *stage, cudaMemcpyDeviceToHost, j->s);
    cudaStreamSynchronize(j->s);
    EXPECT(st == HIDET_NCCL_SUCCESS, "the stage from the members");
    j->size = size;
    return st == HIDET_NCCL_SUCCESS && rank == g_job && size == job_size;
}

/* Victim, iteration and point of a stage: from (seed, stage), the same on every process. */
static void plan_stage(const char *plan, unsigned seed, int stage, int size, int *victim, int *at, int *point) {
    if (strcmp(plan, "1/0") == 0) {
        *victim = stage == 1 ? 1 : 0;
        *at = 30;
        *point = 0;
        return;
    }
    unsigned h = seed * 2654435761u ^ (unsigned)stage * 40503u;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    *victim = (int)(h % (unsigned)size);
    *at = 3 + (int)((h >> 8) % 40);
    *point = (int)((h >> 20) & 1);
}

/* All_reduces until one fails (the stage's victim died), checked; the victim dies at `at`, before
 * the call (point 0) or with it in flight (point 1). The iteration that failed, or -1. */
static int loop_until_failure(job_t *j, int stage, int victim, int at, int point, double timeout, double *t_error) {
    for (int it = 0; it < 100000; it++) {
        if (g_job == victim && it == at && point == 0) hn_die_now(KILL_DIR, g_job, stage);
        hidet_nccl_status_t st;
        if (g_job == victim && it == at && point == 1) { /* in flight: enqueued, then gone */
            hidet_nccl_all_reduce(j->id, j->in, j->out, COUNT, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, j->s);
            hn_die_now(KILL_DIR, g_job, stage);
        }
        int r = one_all_reduce(j, it, timeout, &st);
        if (r == 0) {
            g_failed = 1;
            printf("rank %d: stage %d: iteration %d: WRONG result\n", g_job, stage, it);
        }
        if (r >= 0) continue;
        *t_error = hn_wall();
        printf("rank %d: stage %d: iteration %d: %s: %.200s\n", g_job, stage, it, hidet_nccl_status_string(st),
               hidet_nccl_last_error());
        return it;
    }
    return -1;
}

static void setup(job_t *j) {
    cudaMalloc((void **)&j->in, COUNT * sizeof(float));
    cudaMalloc((void **)&j->out, COUNT * sizeof(float));
    cudaMalloc((void **)&j->stage_dev, sizeof(int));
    cudaMallocHost((void **)&j->host, COUNT * sizeof(float));
    cudaStreamCreate(&j->s);
}

int main(int argc, char **argv) {
    double t_start = hn_wall(), m_start = hn_now();
    if (argc < 3) {
        fprintf(stderr, "usage: heal_gpu_test 1/0|random:K|start T [SEED]\n");
        return 2;
    }
    const char *plan = argv[1];
    double timeout = atof(argv[2]);
    unsigned seed = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 1;
    const char *restarts = getenv("HIDET_NCCL_RESTART_COUNT");
    int abort_first = getenv("HEAL_TEST_ABORT_FIRST") != NULL; /* heal.sh's comparison run */
    int restarted = restarts != NULL && atoi(restarts) > 0;
    job_t j;
    memset(&j, 0, sizeof j);
    if (hidet_nccl_init(&j.id) != HIDET_NCCL_SUCCESS) {
        printf("init: FAILED: %s\n", hidet_nccl_last_error());
        return 1;
    }
    double m_ready = hn_now();
    hidet_nccl_comm_rank(j.id, &g_job);
    hidet_nccl_comm_size(j.id, &j.size);
    int job_size = j.size;
    setup(&j);
    if (strcmp(plan, "start") == 0) {
        hidet_nccl_status_t st;
        EXPECT(one_all_reduce(&j, 0, timeout, &st) == 1, "one exact all_reduce");
        EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize");
        printf("timing: rank %d start: init %.3f s, ready to all_reduce %.3f s after the process began\n", g_job,
               m_ready - m_start, hn_now() - m_start);
        printf("heal_gpu_test (%s): %s\n", plan, g_failed ? "FAILED" : "OK");
        return g_failed;
    }
    int stages = strncmp(plan, "random:", 7) == 0 ? atoi(plan + 7) : 2;
    if (stages < 1 || job_size > MAX_RANKS) {
        printf("plan %s: %d stages for %d ranks\n", plan, stages, job_size);
        return 2;
    }
    int stage = 1;
    if (restarted) { /* a newcomer: init joined the members' heal; the stage it died in comes from them */
        int joined_stage = -1;
        settle(&j, job_size, g_job, &joined_stage);
        printf("timing: rank %d joined (restart %s): process start->whole %.3f s (init with its heal round); began "
               "%.3f s after the kill\n",
               g_job, restarts, m_ready - m_start, t_start - kill_moment(joined_stage));
        EXPECT(exact_all_reduces(&j, 100, timeout), "100 exact all_reduces");
        stage = joined_stage + 1;
    }
    for (; stage <= stages && !g_failed; stage++) {
        int victim, at, point;
        plan_stage(plan, seed, stage, job_size, &victim, &at, &point);
        double t_error = -1;
        int it = loop_until_failure(&j, stage, victim, at, point, timeout, &t_error);
        EXPECT(it >= 0, "a failure was seen");
        if (it < 0) break;
        int old = j.id, n_joined = -1;
        double t0 = hn_now();
        if (abort_first) /* measurement: NCCL's side of the failed communicator gone before the heal */
            EXPECT(hidet_nccl_comm_abort(old) == HIDET_NCCL_SUCCESS, "abort the failed communicator");
        hidet_nccl_status_t st = hidet_nccl_comm_heal(old, 6 * timeout, &j.id, &n_joined);
        double took = hn_now() - t0;
        if (st != HIDET_NCCL_SUCCESS) {
            printf("rank %d: stage %d: heal: %s: %s\n", g_job, stage, hidet_nccl_status_string(st),
                   hidet_nccl_last_error());
            g_failed = 1;
            break;
        }
        double killed = kill_moment(stage);
        printf("timing: rank %d stage %d: kill->error %.3f s, error->whole %.3f s (heal; id %d -> %d, %d taken in), "
               "kill->whole %.3f s\n",
               g_job, stage, t_error - killed, took, old, j.id, n_joined, hn_wall() - killed);
        float x = 0;
        EXPECT(hidet_nccl_all_reduce(old, &x, &x, 1, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, j.s) ==
                   HIDET_NCCL_ERROR_INVALID_COMM,
               "the old id takes no collective");
        if (!abort_first) EXPECT(hidet_nccl_comm_destroy(old) == HIDET_NCCL_SUCCESS, "destroy the old id");
        int s = stage;
        if (!settle(&j, job_size, victim, &s)) break;
        EXPECT(s == stage, "the stage agreed");
        EXPECT(exact_all_reduces(&j, 100, timeout), "100 exact all_reduces");
    }
    if (getenv("HIDET_NCCL_TRACE_DIR") != NULL) /* the recorder names the communicator each came from */
        EXPECT(hidet_nccl_trace_dump(NULL, NULL, 0) == HIDET_NCCL_SUCCESS, "the flight recorder's dump");
    EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize");
    printf("heal_gpu_test (%s): %s\n", plan, g_failed ? "FAILED" : "OK");
    return g_failed;
}

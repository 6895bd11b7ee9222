/* A peer that dies, or never arrives, on GPUs: no hang, an error within the deadline.
 * Built twice: peer_death_gpu_test_mpi (MPI bootstrap) and peer_death_gpu_test_file
 * (shared-file bootstrap); run by tests/gpu/peer_death.sh.
 *   peer_death_gpu_test kill T    all_reduce + hidet_nccl_comm_wait(T s) in a loop; the last
 *                                 rank SIGKILLs itself at iteration 200; every other rank
 *                                 must get an error from a wait within T + 5 s of its last
 *                                 good one, find the id failed (collectives refused), shrink
 *                                 it without the dead rank (HIDET_NCCL_SHRINK_ABORT), or where
 *                                 NCCL refuses (it saw the peer die: NET), recover it
 *                                 (file: a rebuild; MPI: refused at once, MPI cannot go on),
 *                                 and do 100 exact all_reduces on what is left, still use its other
 *                                 communicator, finalize, and exit 0
 *   peer_death_gpu_test hang T    as kill, but the last rank stops calling the library at
 *                                 iteration 200 (a hung rank: its process and sockets live on
 *                                 for T + 20 s, then it exits); the others reach the deadline
 *                                 and shrink and carry on as in kill
 *   peer_death_gpu_test shrink T  no failure: every rank shrinks away nobody, then 100 exact
 *                                 all_reduces on the new communicator
 *   peer_death_gpu_test revoke T  no failure: every rank revokes, the id is failed, then
 *                                 shrinks away nobody and does 100 exact all_reduces
 *   peer_death_gpu_test skip T    tags "step i"; the last rank skips step 5 of 10 all_reduces;
 *                                 a deadline or an explicit dump leaves every rank's flight
 *                                 recorder in HIDET_NCCL_TRACE_DIR (hidet-nccl-trace reads it)
 *   peer_death_gpu_test count T   as skip, but the last rank passes count 1000 for 1024 at
 *                                 step 5
 *   peer_death_gpu_test policy T  as kill, with the error policy ABORT_PROCESS: every other
 *                                 rank must print the failure and abort() itself
 *   peer_death_gpu_test nosplit T the last rank never calls hidet_nccl_comm_split; the others
 *                                 must get HIDET_NCCL_ERROR_TIMEOUT from it within T + 5 s,
 *                                 find the parent's id dead, finalize, and exit
 *   peer_death_gpu_test absent T  the last rank never calls init; the others must get
 *                                 an error from init within T + 5 s (HIDET_NCCL_TIMEOUT=T)
 * The surviving ranks print "peer_death: OK" or "peer_death: FAILED". */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/gpu/now.h"
#ifdef HN_SUITE_MPI
#include <mpi.h>

#include "hidet_nccl/bootstrap_mpi.h"
#define BOOTSTRAP "MPI"
static MPI_Comm g_copy;
static hidet_nccl_status_t start(int *id) { return hidet_nccl_mpi_comm_init(g_copy, NULL, id); }
#else
#define BOOTSTRAP "file"
static hidet_nccl_status_t start(int *id) { return hidet_nccl_init(id); }
#endif

static int g_failed;
#define EXPECT(cond, what)                                                                              \
    do {                                                                                                \
        if (!(cond)) {                                                                                  \
            g_failed = 1;                                                                               \
            fprintf(stderr, "FAILED %s (%s): last error: %s\n", what, #cond, hidet_nccl_last_error()); \
        }                                                                                               \
    } while (0)

static int env_int(const char *a, const char *b) {
    const char *v = getenv(a) ? getenv(a) : getenv(b);
    return v ? atoi(v) : -1;
}

/* Init, and this rank's place in the communicator; 0 (and the test failed) if init failed. */
static int start_ranked(int *id, int *rank, int *size) {
    if (start(id) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "init: %s\n", hidet_nccl_last_error());
        g_failed = 1;
        return 0;
    }
    hidet_nccl_comm_rank(*id, rank);
    hidet_nccl_comm_size(*id, size);
    return 1;
}

static int exact_all_reduces(int id, int n, double timeout, const char *what);

static void killed_peer(double timeout, int abort_process, int hang) {
    const char *mode = hang ? "hang" : abort_process ? "policy" : "kill";
    int id = -1, solo = -1, rank = -1, size = 0;
    if (!start_ranked(&id, &rank, &size)) return;
    EXPECT(hidet_nccl_comm_split(id, rank, 0, &solo) == HIDET_NCCL_SUCCESS, "a one-rank communicator");
    if (abort_process) {
        EXPECT(hidet_nccl_comm_set_error_policy(id, HIDET_NCCL_ON_ERROR_ABORT_PROCESS) == HIDET_NCCL_SUCCESS,
               "the error policy");
        printf("rank %d: error policy ABORT_PROCESS\n", rank);
        fflush(stdout);
    }
    const size_t n = 1u << 20;
    float *buf;
    cudaStream_t s;
    cudaMalloc((void **)&buf, n * sizeof *buf);
    cudaMemset(buf, 0, n * sizeof *buf);
    cudaStreamCreate(&s);
    double last_ok = hn_now();
    for (int i = 0; i < 100000; i++) {
        if (rank == size - 1 && i == 200) {
            printf("rank %d: %s after 200 all_reduces\n", rank, hang ? "hanging" : "SIGKILL to myself");
            fflush(stdout);
            if (hang) {
                usleep((useconds_t)((timeout + 20) * 1e6));
                _exit(0);
            }
            raise(SIGKILL);
        }
        hidet_nccl_status_t st = hidet_nccl_all_reduce(id, buf, buf, n, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s);
        if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl_comm_wait(id, s, timeout);
        if (st == HIDET_NCCL_SUCCESS) {
            last_ok = hn_now();
            continue;
        }
        double took = hn_now() - last_ok;
        if (abort_process) {
            g_failed = 1;
            printf("rank %d: peer_death: FAILED: the wait returned instead of aborting the process\n", rank);
            return;
        }
        printf("rank %d: iteration %d: error %.3f s after the last good wait (deadline %.1f s): %s: %s\n", rank, i,
               took, timeout, hidet_nccl_status_string(st), hidet_nccl_last_error());
        EXPECT(st == HIDET_NCCL_ERROR_TIMEOUT || st == HIDET_NCCL_ERROR_NCCL, "the error status");
        EXPECT(took <= timeout + 5, "detected within the deadline + 5 s");
        float x;
        EXPECT(hidet_nccl_all_reduce(id, &x, &x, 1, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s) ==
                       HIDET_NCCL_ERROR_INVALID_COMM &&
                   strstr(hidet_nccl_last_error(), "failed") != NULL,
               "the failed id takes no collective");
        int dead = size - 1, shrunk = -1;
        double t0 = hn_now();
        hidet_nccl_status_t sh = hidet_nccl_comm_shrink(id, 1, &dead, HIDET_NCCL_SHRINK_ABORT, &shrunk);
        printf("rank %d: shrink without rank %d: %s in %.3f s %s\n", rank, dead, hidet_nccl_status_string(sh),
               hn_now() - t0, sh ? hidet_nccl_last_error() : "");
        if (sh != HIDET_NCCL_SUCCESS) { /* probe: after a revoke */
            hidet_nccl_status_t rv = hidet_nccl_comm_revoke(id);
            printf("rank %d: revoke: %s %s\n", rank, hidet_nccl_status_string(rv), rv ? hidet_nccl_last_error() : "");
            sh = hidet_nccl_comm_shrink(id, 1, &dead, HIDET_NCCL_SHRINK_DEFAULT, &shrunk);
            printf("rank %d: shrink after the revoke: %s %s\n", rank, hidet_nccl_status_string(sh),
                   sh ? hidet_nccl_last_error() : "");
        }
        int cannot_go_on = 0;
        if (sh != HIDET_NCCL_SUCCESS) { /* NCCL saw the peer die (NET): the survivors rebuild */
            int lost = -1;
            double t1 = hn_now();
            hidet_nccl_status_t rv = hidet_nccl_comm_recover(id, 4 * timeout, &shrunk, &lost);
            double took_rv = hn_now() - t1;
            printf("rank %d: recover: %s in %.3f s (%d lost) %s\n", rank, hidet_nccl_status_string(rv), took_rv, lost,
                   rv ? hidet_nccl_last_error() : "");
#ifdef HN_SUITE_MPI /* MPI without ULFM cannot go on: refused at once, saying so */
            EXPECT(rv == HIDET_NCCL_ERROR_UNSUPPORTED && strstr(hidet_nccl_last_error(), "ULFM") && took_rv < 1,
                   "MPI refuses recovery at once, saying why");
            cannot_go_on = rv == HIDET_NCCL_ERROR_UNSUPPORTED;
#else
            EXPECT(rv == HIDET_NCCL_SUCCESS && lost == 1, "recovery by the survivors");
            sh = rv;
#endif
        }
        EXPECT(sh == HIDET_NCCL_SUCCESS || cannot_go_on, "shrink or recover without the dead rank");
        if (sh == HIDET_NCCL_SUCCESS)
            EXPECT(exact_all_reduces(shrunk, 100, timeout, "survivors after the shrink"), "100 exact all_reduces");
        EXPECT(hidet_nccl_comm_destroy(id) == HIDET_NCCL_SUCCESS, "destroy the failed id");
        EXPECT(hidet_nccl_all_reduce(solo, buf, buf + 1, 1, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s) ==
                       HIDET_NCCL_SUCCESS &&
                   hidet_nccl_comm_wait(solo, s, timeout) == HIDET_NCCL_SUCCESS,
               "the other communicator still works");
        double t = hn_now();
        EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize");
        printf("rank %d: finalize after the abort took %.3f s\n", rank, hn_now() - t);
        printf("rank %d: peer_death (%s, %s bootstrap): %s, detected in %.3f s\n", rank, mode, BOOTSTRAP,
               g_failed ? "FAILED" : "OK", took);
        return;
    }
    g_failed = 1;
    printf("rank %d: peer_death: FAILED: no error after 100000 all_reduces\n", rank);
}

/* n exact all_reduces on id: each rank gives rank + 1 + i, every element of the sum must be
 * sum_r (r + 1 + i). 1 if all were exact. */
static int exact_all_reduces(int id, int n, double timeout, const char *what) {
    int rank = -1, size = 0;
    hidet_nccl_comm_rank(id, &rank);
    hidet_nccl_comm_size(id, &size);
    const size_t count = 1u << 16;
    float *buf, *host = malloc(count * sizeof *host);
    cudaStream_t s;
    cudaMalloc((void **)&buf, count * sizeof *buf);
    cudaStreamCreate(&s);
    int wrong = 0, done = 0;
    for (int i = 0; i < n; i++) {
        for (size_t k = 0; k < count; k++) host[k] = (float)(rank + 1 + i);
        cudaMemcpy(buf, host, count * sizeof *buf, cudaMemcpyHostToDevice);
        if (hidet_nccl_all_reduce(id, buf, buf, count, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s) != HIDET_NCCL_SUCCESS ||
            hidet_nccl_comm_wait(id, s, timeout) != HIDET_NCCL_SUCCESS) {
            fprintf(stderr, "%s: all_reduce %d: %s\n", what, i, hidet_nccl_last_error());
            break;
        }
        cudaMemcpy(host, buf, count * sizeof *buf, cudaMemcpyDeviceToHost);
        float want = (float)(size * (size + 1) / 2 + size * i);
        for (size_t k = 0; k < count; k++) wrong += host[k] != want;
        done++;
    }
    printf("rank %d: %s: %d of %d all_reduces on %d rank(s), %d wrong elements\n", rank, what, done, n, size, wrong);
    cudaFree(buf);
    cudaStreamDestroy(s);
    free(host);
    return done == n && wrong == 0;
}

/* No failure: shrink away nobody (after a revoke, if asked), carry on together. */
static void healthy_shrink(double timeout, int revoke) {
    int id = -1, rank = -1, size = 0, child = -1;
    if (!start_ranked(&id, &rank, &size)) return;
    EXPECT(exact_all_reduces(id, 10, timeout, "before"), "10 exact all_reduces before");
    if (revoke) {
        hidet_nccl_status_t st = hidet_nccl_comm_revoke(id);
        printf("rank %d: revoke: %s %s\n", rank, hidet_nccl_status_string(st), st ? hidet_nccl_last_error() : "");
        EXPECT(st == HIDET_NCCL_SUCCESS, "revoke");
        float x;
        EXPECT(hidet_nccl_all_reduce(id, &x, &x, 1, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0) ==
                   HIDET_NCCL_ERROR_INVALID_COMM, "a revoked id takes no collective");
    }
    double t = hn_now();
    hidet_nccl_status_t st = hidet_nccl_comm_shrink(id, 0, NULL, HIDET_NCCL_SHRINK_DEFAULT, &child);
    printf("rank %d: shrink away nobody: %s in %.3f s %s\n", rank, hidet_nccl_status_string(st), hn_now() - t,
           st ? hidet_nccl_last_error() : "");
    EXPECT(st == HIDET_NCCL_SUCCESS, "shrink");
    if (st == HIDET_NCCL_SUCCESS) EXPECT(exact_all_reduces(child, 100, timeout, "after the shrink"), "100 exact");
    EXPECT(hidet_nccl_comm_destroy(id) == HIDET_NCCL_SUCCESS, "destroy the parent");
    EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize");
    printf("rank %d: peer_death (%s, %s bootstrap): %s\n", rank, revoke ? "revoke" : "shrink", BOOTSTRAP,
           g_failed ? "FAILED" : "OK");
}

/* Ranks that disagree: the last one skips step 5, or passes another count there. Every rank
 * ends with a dump (a deadline makes one; an explicit one after). */
static void divergence(double timeout, int skip) {
    int id = -1, rank = -1, size = 0;
    if (!start_ranked(&id, &rank, &size)) return;
    const size_t n = 1024;
    float *buf;
    cudaStream_t s;
    cudaMalloc((void **)&buf, n * sizeof *buf);
    cudaMemset(buf, 0, n * sizeof *buf);
    cudaStreamCreate(&s);
    int last = rank == size - 1;
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    for (int i = 0; i < 10 && st == HIDET_NCCL_SUCCESS; i++) {
        if (last && skip && i == 5) continue;
        char tag[32];
        snprintf(tag, sizeof tag, "step %d", i);
        hidet_nccl_set_tag(tag);
        st = hidet_nccl_all_reduce(id, buf, buf, last && !skip && i == 5 ? 1000 : n, HIDET_NCCL_FLOAT32,
                                   HIDET_NCCL_SUM, s);
        if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl_comm_wait(id, s, timeout);
    }
    printf("rank %d: %s: loop ended with %s %s\n", rank, skip ? "skip" : "count", hidet_nccl_status_string(st),
           st ? hidet_nccl_last_error() : "");
    usleep((useconds_t)((timeout + 2) * 1e6)); /* the other rank's deadline passes */
    char path[4096];
    EXPECT(hidet_nccl_trace_dump(NULL, path, sizeof path) == HIDET_NCCL_SUCCESS, "the dump");
    printf("rank %d: dumped to %s\n", rank, path);
    printf("rank %d: peer_death (%s, %s bootstrap): %s\n", rank, skip ? "skip" : "count", BOOTSTRAP,
           g_failed ? "FAILED" : "OK");
    fflush(stdout);
    _exit(g_failed); /* NCCL may still spin on the mismatched work: no finalize */
}

static void missing_split(double timeout) {
    int id = -1, rank = -1, size = 0, child = -1;
    if (!start_ranked(&id, &rank, &size)) return;
    if (rank == size - 1) {
        printf("rank %d: never calling split\n", rank);
        fflush(stdout);
        usleep((useconds_t)((timeout + 3) * 1e6));
        EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize of the rank that did not split");
        return;
    }
    double t = hn_now();
    hidet_nccl_status_t st = hidet_nccl_comm_split(id, 0, rank, &child);
    double took = hn_now() - t;
    printf("rank %d: split returned %s after %.3f s (deadline %.1f s): %s\n", rank, hidet_nccl_status_string(st),
           took, timeout, hidet_nccl_last_error());
    EXPECT(st == HIDET_NCCL_ERROR_TIMEOUT, "split times out");
    EXPECT(took <= timeout + 5, "within the deadline + 5 s");
    int x;
    EXPECT(hidet_nccl_comm_rank(id, &x) == HIDET_NCCL_ERROR_INVALID_COMM &&
               strstr(hidet_nccl_last_error(), "ncclCommSplit") != NULL,
           "the parent's id is dead");
    t = hn_now();
    EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize");
    printf("rank %d: finalize took %.3f s\n", rank, hn_now() - t);
    printf("rank %d: peer_death (nosplit, %s bootstrap): %s, detected in %.3f s\n", rank, BOOTSTRAP,
           g_failed ? "FAILED" : "OK", took);
    fflush(stdout);
}

static void absent_peer(double timeout) {
    int rank = env_int("HIDET_NCCL_RANK", "OMPI_COMM_WORLD_RANK");
    int size = env_int("HIDET_NCCL_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE");
    if (rank == size - 1) {
        printf("rank %d: never calling init\n", rank);
        fflush(stdout);
        usleep((useconds_t)((timeout + 3) * 1e6));
        return;
    }
    int id = -1;
    double t = hn_now();
    hidet_nccl_status_t st = start(&id);
    double took = hn_now() - t;
    printf("rank %d: init returned %s after %.3f s (deadline %.1f s): %s\n", rank, hidet_nccl_status_string(st), took,
           timeout, hidet_nccl_last_error());
    EXPECT(st == HIDET_NCCL_ERROR_TIMEOUT, "init times out");
    EXPECT(took <= timeout + 5, "within the deadline + 5 s");
    EXPECT(hidet_nccl_finalize() == HIDET_NCCL_SUCCESS, "finalize");
    printf("rank %d: peer_death (absent, %s bootstrap): %s, detected in %.3f s\n", rank, BOOTSTRAP,
           g_failed ? "FAILED" : "OK", took);
}

int main(int argc, char **argv) {
    static const char *const modes[] = {"kill",   "hang",   "policy", "nosplit",
                                        "absent", "shrink", "revoke", "skip", "count"};
    int known = 0;
    for (size_t i = 0; argc >= 3 && i < sizeof modes / sizeof modes[0]; i++) known |= strcmp(argv[1], modes[i]) == 0;
    if (!known) {
        fprintf(stderr, "usage: %s kill|hang|policy|nosplit|absent|shrink|revoke|skip|count TIMEOUT_S\n", argv[0]);
        return 2;
    }
    double timeout = atof(argv[2]);
    setenv("HIDET_NCCL_TIMEOUT", argv[2], 1);
#ifdef HN_SUITE_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_dup(MPI_COMM_WORLD, &g_copy); /* the bootstrap's: a rank missing from it leaves the world usable */
#endif
    if (strcmp(argv[1], "absent") == 0) absent_peer(timeout);
    else if (strcmp(argv[1], "nosplit") == 0) missing_split(timeout);
    else if (strcmp(argv[1], "shrink") == 0 || strcmp(argv[1], "revoke") == 0)
        healthy_shrink(timeout, strcmp(argv[1], "revoke") == 0);
    else if (strcmp(argv[1], "skip") == 0 || strcmp(argv[1], "count") == 0)
        divergence(timeout, strcmp(argv[1], "skip") == 0);
    else killed_peer(timeout, strcmp(argv[1], "policy") == 0, strcmp(argv[1], "hang") == 0);
#ifdef HN_SUITE_MPI
    MPI_Finalize();
#endif
    return g_failed;
}

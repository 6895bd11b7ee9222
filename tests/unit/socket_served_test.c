/* The socket rendezvous served outside the ranks (include/hidet_nccl/rendezvous.h, what
 * hidet-nccl-run runs) and the socket backend's recovery round, ranks as forked processes on
 * loopback: rounds of real ids through it, two bootstraps of the job at once, a rank's death told
 * at once to the others and a recovery round without it, a rank that does not join left out and
 * told so, a rendezvous that stops; with rank 0's hub (no served rendezvous) rank 0 decides
 * while it lives, and a dead rank 0 makes recover fail at once, saying why. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/rendezvous.h"
#include "tests/cunit_runner.h"
#include "tests/deadline.h"
#include "tests/socket_peers.h"

/* In a rank (a child): a failed check says where and why, and the rank exits 1. */
#define EXPECT(cond)                                                                                          \
    do {                                                                                                      \
        if (!(cond)) {                                                                                        \
            fprintf(stderr, "rank %d: %s:%d: %s failed; last error: %s\n", g_rank, __FILE__, __LINE__, #cond, \
                    hidet_nccl_last_error());                                                                 \
            _exit(1);                                                                                         \
        }                                                                                                     \
    } while (0)

static int g_rank = -1;

/* A pipe each job's ranks share, made before they are forked: a rank that has reached a point
 * says so on it (hn_test_tell), one that must not go on before reads it (hn_test_await). */
static int g_point[2] = {-1, -1};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The environment of the job's ranks: served or rank 0's hub, a deadline (scaled). */
static void job_env(int served, double timeout) {
    if (served) setenv("HIDET_NCCL_RENDEZVOUS_SERVED", "1", 1);
    else unsetenv("HIDET_NCCL_RENDEZVOUS_SERVED");
    hn_test_setenv_seconds("HIDET_NCCL_TIMEOUT", hn_test_scaled(timeout));
    hidet_nccl_settings_reload();
}

static hidet_nccl_socket_bootstrap_params_t job_params(int port, int rank, int n) {
    hidet_nccl_socket_bootstrap_params_t p = HIDET_NCCL_SOCKET_BOOTSTRAP_PARAMS_INIT;
    p.master_addr = "127.0.0.1";
    p.master_port = port;
    p.job_key = "served";
    p.rank = rank;
    p.nranks = n;
    return p;
}

static hidet_nccl_bootstrap_h join_job(int port, int rank, int n) {
    hidet_nccl_socket_bootstrap_params_t p = job_params(port, rank, n);
    hidet_nccl_bootstrap_h bs = NULL;
    EXPECT(hidet_nccl_bootstrap_socket(&p, &bs) == HIDET_NCCL_SUCCESS);
    return bs;
}

/* A real id from `root`, then an allgather of it: every rank holds root's id. */
static void id_round(hidet_nccl_bootstrap_h bs, int root) {
    int rank, n;
    EXPECT(hidet_nccl_bootstrap_rank(bs, &rank, &n) == HIDET_NCCL_SUCCESS);
    ncclUniqueId id, all[16];
    memset(&id, 0, sizeof id);
    if (rank == root) EXPECT(hidet_nccl_get_unique_id(&id) == HIDET_NCCL_SUCCESS);
    EXPECT(hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, root, hn_test_scaled(10)) == HIDET_NCCL_SUCCESS);
    EXPECT(hidet_nccl_bootstrap_allgather(bs, &id, all, sizeof id, hn_test_scaled(10)) == HIDET_NCCL_SUCCESS);
    for (int r = 0; r < n; r++) EXPECT(memcmp(&all[r], &id, sizeof id) == 0);
}

static pid_t spawn(void (*rank_main)(int port, int rank, int n), int port, int rank, int n) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        g_rank = rank;
        rank_main(port, rank, n);
        _exit(0);
    }
    return pid;
}

/* The rank's exit: 0, 1 (a check failed), or 128 + signal. */
static int exit_of(pid_t pid) {
    int ws = 0;
    waitpid(pid, &ws, 0);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static hidet_nccl_rendezvous_h serve(int port, int n, double timeout_s) {
    hidet_nccl_rendezvous_params_t p = HIDET_NCCL_RENDEZVOUS_PARAMS_INIT;
    p.port = port;
    p.job_key = "served";
    p.nranks = n;
    p.timeout_s = timeout_s;
    hidet_nccl_rendezvous_h rv = NULL;
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_start(&p, &rv), HIDET_NCCL_SUCCESS, NULL);
    return rv;
}

/* Runs n ranks of rank_main against a served rendezvous (or rank 0's hub) and returns how many
 * exited with `want[r]` (NULL: 0). The ranks start first (they retry until the rendezvous
 * listens): no fork after its thread started. */
static int run_job(void (*rank_main)(int, int, int), int n, int served, const int *want) {
    int port = hn_test_port();
    pid_t pids[16];
    CU_ASSERT_FATAL(pipe(g_point) == 0);
    for (int r = 0; r < n; r++) pids[r] = spawn(rank_main, port, r, n);
    hidet_nccl_rendezvous_h rv = served ? serve(port, n, hn_test_scaled(20)) : NULL;
    int ok = 0;
    for (int r = 0; r < n; r++) ok += exit_of(pids[r]) == (want ? want[r] : 0);
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_stop(rv), HIDET_NCCL_SUCCESS, NULL);
    close(g_point[0]);
    close(g_point[1]);
    return ok;
}

/* ---------------------------------------------------------------- rounds */

/* Two bootstraps at once (a communicator keeps its own for recovery): each meets its own
 * session, in the order the ranks made them. */
static void rounds_main(int port, int rank, int n) {
    hidet_nccl_bootstrap_h a = join_job(port, rank, n);
    id_round(a, n - 1);
    hidet_nccl_bootstrap_h b = join_job(port, rank, n);
    id_round(b, 0);
    id_round(a, 1);
    int mine[2] = {rank, -rank}, got[32];
    EXPECT(hidet_nccl_bootstrap_allgather(b, mine, got, sizeof mine, hn_test_scaled(10)) == HIDET_NCCL_SUCCESS);
    for (int r = 0; r < n; r++) EXPECT(got[2 * r] == r && got[2 * r + 1] == -r);
    EXPECT(hidet_nccl_bootstrap_destroy(a) == HIDET_NCCL_SUCCESS);
    id_round(b, n / 2);
    EXPECT(hidet_nccl_bootstrap_destroy(b) == HIDET_NCCL_SUCCESS);
}

static void test_served_rounds(void) {
    job_env(1, 20);
    CU_ASSERT_EQUAL(run_job(rounds_main, 4, 1, NULL), 4);
    CU_ASSERT_EQUAL(run_job(rounds_main, 16, 1, NULL), 16);
}

/* ---------------------------------------------------------------- a death, a recovery */

/* Rank 1 dies (SIGKILL) after the first round, once every other rank has it; the others learn it
 * in their next call, at once (well before its deadline), and go on without it. */
static void death_main(int port, int rank, int n) {
    hidet_nccl_bootstrap_h bs = join_job(port, rank, n);
    id_round(bs, 0);
    if (rank == 1) {
        EXPECT(hn_test_await(g_point[0], n - 1, 60, "the other ranks' end of the first round"));
        kill(getpid(), SIGKILL);
    }
    hn_test_tell(g_point[1]);
    char mine[8] = {(char)rank}, all[64];
    double t0 = now(), deadline = hn_test_scaled(20);
    hidet_nccl_status_t st = hidet_nccl_bootstrap_allgather(bs, mine, all, sizeof mine, deadline);
    EXPECT(st == HIDET_NCCL_ERROR_BOOTSTRAP && strstr(hidet_nccl_last_error(), "rank 1 closed its connection"));
    EXPECT(now() - t0 < deadline / 2); /* the dead rank's end, not the deadline */
    int kept[8] = {0}, n_kept = 0;
    EXPECT(hidet_nccl_bootstrap_recover(bs, hn_test_scaled(10), kept, &n_kept) == HIDET_NCCL_SUCCESS);
    EXPECT(n_kept == n - 1 && kept[0] && !kept[1] && kept[2]);
    int r2, n2;
    EXPECT(hidet_nccl_bootstrap_rank(bs, &r2, &n2) == HIDET_NCCL_SUCCESS && n2 == n - 1 && r2 == (rank ? rank - 1 : 0));
    id_round(bs, 0);
    id_round(bs, n2 - 1);
    EXPECT(hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS);
}

static void test_served_death(void) {
    job_env(1, 20);
    int want[4] = {0, 128 + SIGKILL, 0, 0};
    CU_ASSERT_EQUAL(run_job(death_main, 4, 1, want), 4);
}

/* Rank 2 stays away from the round the others begin (until their calls have returned): they go on
 * without it, and when it comes it is told it was left out and who went on. */
static void left_out_main(int port, int rank, int n) {
    hidet_nccl_bootstrap_h bs = join_job(port, rank, n);
    id_round(bs, 0);
    int kept[4] = {0}, n_kept = 0;
    if (rank == 2) {
        EXPECT(hn_test_await(g_point[0], 2, 60, "the end of the others' recovery round"));
        EXPECT(hidet_nccl_bootstrap_recover(bs, 5, kept, &n_kept) == HIDET_NCCL_ERROR_BOOTSTRAP);
        EXPECT(strstr(hidet_nccl_last_error(), "was left out of recovery round 1") != NULL);
        EXPECT(strstr(hidet_nccl_last_error(), "ranks 0 1 (of 3) went on") != NULL);
        char x[8] = "";
        EXPECT(hidet_nccl_bootstrap_broadcast(bs, x, sizeof x, 0, 1) == HIDET_NCCL_ERROR_BOOTSTRAP);
    } else {
        double t0 = now(), call = hn_test_scaled(2.0); /* a whole call: the rendezvous waits half of it for rank 2 */
        EXPECT(hidet_nccl_bootstrap_recover(bs, call, kept, &n_kept) == HIDET_NCCL_SUCCESS);
        hn_test_tell(g_point[1]);
        EXPECT(n_kept == 2 && kept[0] && kept[1] && !kept[2]);
        EXPECT(now() - t0 >= 0.4 * call && now() - t0 < call);
        id_round(bs, 1);
    }
    EXPECT(hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS);
}

static void test_served_left_out(void) {
    job_env(1, 20);
    CU_ASSERT_EQUAL(run_job(left_out_main, 3, 1, NULL), 3);
}

/* The rendezvous stops (its launcher ended) under the ranks: they say so. */
static int g_stopped[2]; /* a pipe: the parent writes when the rendezvous is gone */

static void gone_main(int port, int rank, int n) {
    hidet_nccl_bootstrap_h bs = join_job(port, rank, n);
    id_round(bs, 0);
    hn_test_tell(g_point[1]);
    char c;
    EXPECT(read(g_stopped[0], &c, 1) == 1);
    char mine[4] = "", all[8];
    EXPECT(hidet_nccl_bootstrap_allgather(bs, mine, all, sizeof mine, 5) == HIDET_NCCL_ERROR_BOOTSTRAP);
    EXPECT(strstr(hidet_nccl_last_error(), "is gone") != NULL);
    EXPECT(hidet_nccl_bootstrap_recover(bs, 5, NULL, NULL) == HIDET_NCCL_ERROR_BOOTSTRAP);
    EXPECT(strstr(hidet_nccl_last_error(), "the rendezvous (hidet-nccl-run at 127.0.0.1") != NULL);
    hidet_nccl_bootstrap_destroy(bs);
}

static void test_served_gone(void) {
    job_env(1, 20);
    CU_ASSERT_FATAL(pipe(g_stopped) == 0 && pipe(g_point) == 0);
    int port = hn_test_port();
    pid_t pids[2];
    for (int r = 0; r < 2; r++) pids[r] = spawn(gone_main, port, r, 2);
    hidet_nccl_rendezvous_h rv = serve(port, 2, hn_test_scaled(20));
    CU_ASSERT(hn_test_await(g_point[0], 2, 60, "the ranks' end of the first round"));
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_stop(rv), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(write(g_stopped[1], "xx", 2), 2);
    CU_ASSERT_EQUAL(exit_of(pids[0]), 0);
    CU_ASSERT_EQUAL(exit_of(pids[1]), 0);
    close(g_stopped[0]);
    close(g_stopped[1]);
    close(g_point[0]);
    close(g_point[1]);
}

/* The rendezvous stops while a bootstrap waits for ranks that never came (issue 38, item 10: a node
 * started twice with one --node-rank, its ranks in a bootstrap of their own, and node 0's launcher
 * done): the ranks waiting are refused and told why. They were told only that it closed their
 * connection, "(its own message says why)", and no message said why anywhere. */
static void waiting_main(int port, int rank, int n) {
    hidet_nccl_socket_bootstrap_params_t p = job_params(port, rank, n);
    hidet_nccl_bootstrap_h bs = NULL;
    EXPECT(hidet_nccl_bootstrap_socket(&p, &bs) == HIDET_NCCL_ERROR_BOOTSTRAP);
    const char *why = hidet_nccl_last_error();
    EXPECT(strstr(why, "refused it: it ended, its launcher (node 0's) done or stopped, while this bootstrap waited "
                       "for ranks 0 (1 of 2 ranks), which never came to it (a node started twice with one "
                       "--node-rank?") != NULL);
}

static void test_served_ends_while_waiting(void) {
    job_env(1, 20);
    int port = hn_test_port();
    pid_t pid = spawn(waiting_main, port, 1, 2);
    hidet_nccl_rendezvous_h rv = serve(port, 2, hn_test_scaled(20));
    int live = 0, looked = 0; /* rank 1 is in a bootstrap of its own */
    HN_WAIT_FOR(looked, hidet_nccl_rendezvous_live(rv, &live) != HIDET_NCCL_SUCCESS || live != 0, 10,
                "rank 1 in a bootstrap of its own");
    (void)looked; /* said below */
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_live(rv, &live), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(live, 1);
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_stop(rv), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(exit_of(pid), 0);
}

/* ---------------------------------------------------------------- rank 0's hub */

/* Rank 2 dies: rank 0, the decider, goes on with rank 1. */
static void hub_death_main(int port, int rank, int n) {
    hidet_nccl_bootstrap_h bs = join_job(port, rank, n);
    id_round(bs, 0);
    if (rank == 2) kill(getpid(), SIGKILL);
    char mine[4] = "", all[16];
    double t0 = now(), deadline = hn_test_scaled(20);
    EXPECT(hidet_nccl_bootstrap_allgather(bs, mine, all, sizeof mine, deadline) == HIDET_NCCL_ERROR_BOOTSTRAP);
    EXPECT(strstr(hidet_nccl_last_error(), "rank 2") != NULL && now() - t0 < deadline / 2); /* not the deadline */
    int kept[4] = {0}, n_kept = 0;
    EXPECT(hidet_nccl_bootstrap_recover(bs, hn_test_scaled(10), kept, &n_kept) == HIDET_NCCL_SUCCESS);
    EXPECT(n_kept == 2 && kept[0] && kept[1] && !kept[2]);
    id_round(bs, 1);
    EXPECT(hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS);
}

static void test_hub_death(void) {
    job_env(0, 20);
    int want[3] = {0, 0, 128 + SIGKILL};
    CU_ASSERT_EQUAL(run_job(hub_death_main, 3, 0, want), 3);
}

/* Rank 0 dies: the rendezvous lived in it. Recover fails at once, saying so and what to do. */
static void hub_rank0_main(int port, int rank, int n) {
    hidet_nccl_bootstrap_h bs = join_job(port, rank, n);
    id_round(bs, 0);
    if (rank == 0) kill(getpid(), SIGKILL);
    char mine[4] = "", all[16];
    EXPECT(hidet_nccl_bootstrap_allgather(bs, mine, all, sizeof mine, hn_test_scaled(10)) ==
           HIDET_NCCL_ERROR_BOOTSTRAP);
    double t0 = now(), deadline = hn_test_scaled(20);
    int n_kept = -1;
    EXPECT(hidet_nccl_bootstrap_recover(bs, deadline, NULL, &n_kept) == HIDET_NCCL_ERROR_BOOTSTRAP);
    EXPECT(now() - t0 < deadline / 2 && n_kept == -1); /* at once, not at the deadline */
    const char *why = hidet_nccl_last_error();
    EXPECT(strstr(why, "rank 0 (at 127.0.0.1:") != NULL && strstr(why, "where the rendezvous lived, is gone") != NULL);
    EXPECT(strstr(why, "start the job with hidet-nccl-run") != NULL);
    EXPECT(hidet_nccl_bootstrap_recover(bs, hn_test_scaled(10), NULL, NULL) ==
           HIDET_NCCL_ERROR_BOOTSTRAP); /* out of use now */
    EXPECT(hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS);
}

static void test_hub_rank0_dead(void) {
    job_env(0, 20);
    int want[3] = {128 + SIGKILL, 0, 0};
    CU_ASSERT_EQUAL(run_job(hub_rank0_main, 3, 0, want), 3);
}

/* ---------------------------------------------------------------- news of a round */

/* The last rank begins a recovery round on its own (its communicator failed where the others'
 * did not see it): the others hear it through hidet_nccl_bootstrap_news (what comm_wait asks)
 * without a bootstrap call of their own, and join; nobody is lost. With rank 0's hub, rank 0
 * hears the join, and the others rank 0's notice once it began. No news before: the beginner
 * begins once the others have looked. With 4 ranks, rank 3 dies first (a death alone is no news)
 * and rank 2 begins the round. */
static void news_main(int port, int rank, int n) {
    hidet_nccl_bootstrap_h bs = join_job(port, rank, n);
    id_round(bs, 0);
    int heard = -1, kept[4] = {0}, n_kept = 0;
    EXPECT(hidet_nccl_bootstrap_news(bs, &heard) == HIDET_NCCL_SUCCESS && heard == 0);
    int dying = n == 4 ? 3 : -1, beginner = n == 4 ? 2 : n - 1;
    if (rank == dying) kill(getpid(), SIGKILL); /* its death notice comes first: not news by itself */
    if (dying >= 0 && rank != beginner) {
        /* A moment for the notice to come (nothing public tells that it has): the look below holds
         * whether it has or not, so a slow machine can only make it prove less. */
        usleep(100 * 1000);
        EXPECT(hidet_nccl_bootstrap_news(bs, &heard) == HIDET_NCCL_SUCCESS && heard == 0);
    }
    if (rank == beginner) {
        int others = n - 1 - (dying >= 0);
        EXPECT(hn_test_await(g_point[0], others, 60, "the others' looks for news before the round"));
    } else {
        hn_test_tell(g_point[1]);
        int ok = 0;
        HN_WAIT_FOR(ok, hidet_nccl_bootstrap_news(bs, &heard) != HIDET_NCCL_SUCCESS || heard == 1, 20,
                    "news of the round");
        EXPECT(ok && heard == 1);
    }
    EXPECT(hidet_nccl_bootstrap_recover(bs, hn_test_scaled(10), kept, &n_kept) == HIDET_NCCL_SUCCESS);
    EXPECT(n_kept == (dying >= 0 ? n - 1 : n));
    id_round(bs, 1);
    EXPECT(hidet_nccl_bootstrap_news(bs, &heard) == HIDET_NCCL_SUCCESS && heard == 0);
    EXPECT(hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS);
}

static void test_news(void) {
    job_env(1, 20);
    CU_ASSERT_EQUAL(run_job(news_main, 3, 1, NULL), 3);
    job_env(0, 20);
    CU_ASSERT_EQUAL(run_job(news_main, 3, 0, NULL), 3);
    /* Rank 3 dies first: the others still hear rank 2's round behind its death notice. */
    int want[4] = {0, 0, 0, 128 + SIGKILL};
    job_env(1, 20);
    CU_ASSERT_EQUAL(run_job(news_main, 4, 1, want), 4);
    job_env(0, 20);
    CU_ASSERT_EQUAL(run_job(news_main, 4, 0, want), 4);
}

/* ---------------------------------------------------------------- the API */

static void test_rendezvous_api(void) {
    hidet_nccl_rendezvous_params_t p = HIDET_NCCL_RENDEZVOUS_PARAMS_INIT;
    hidet_nccl_rendezvous_h rv = NULL;
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_start(&p, &rv), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "params->nranks -1");
    p.nranks = 2;
    p.port = 70000;
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_start(&p, &rv), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "params->port 70000");
    p.port = 0;
    p.job_key = "a b";
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_start(&p, &rv), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "'a b'");
    p.job_key = NULL;
    p.timeout_s = -1;
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_start(&p, &rv), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "timeout_s");
    p.timeout_s = 0;
    setenv("HIDET_NCCL_JOB_SECRET", "short", 1);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_start(&p, &rv), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "HIDET_NCCL_JOB_SECRET");
    unsetenv("HIDET_NCCL_JOB_SECRET");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_start(&p, &rv), HIDET_NCCL_SUCCESS, NULL); /* a port of the system's */
    int port = 0;
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_port(rv, &port), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(port > 0);
    hidet_nccl_rendezvous_h again = NULL;
    p.port = port;
    char needle[48];
    snprintf(needle, sizeof needle, "port %d on this host is in use", port);
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_start(&p, &again), HIDET_NCCL_ERROR_BOOTSTRAP, needle);
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_stop(rv), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_stop(NULL), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_start(NULL, &rv), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "'params' is NULL");
    HN_ASSERT_STATUS(hidet_nccl_rendezvous_port(NULL, &port), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "'rv' is NULL");
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    unsetenv("HIDET_NCCL_JOB_SECRET");
    unsetenv("HIDET_NCCL_JOB_SECRET_FILE");
    setenv("HIDET_NCCL_DEBUG", "NONE", 1); /* no warning about the missing secret in every job */
    static const hn_test_t tests[] = {
        {"rounds through a served rendezvous, two bootstraps at once", test_served_rounds},
        {"a rank dies: the others know at once and go on", test_served_death},
        {"a rank that does not join is left out, and told", test_served_left_out},
        {"the rendezvous stops: the ranks say it is gone", test_served_gone},
        {"the rendezvous stops while ranks wait for others: refused, told why", test_served_ends_while_waiting},
        {"rank 0's hub: rank 2 dies, rank 0 decides", test_hub_death},
        {"rank 0's hub: rank 0 dies, recover fails at once saying why", test_hub_rank0_dead},
        {"news of a round: the others hear it and join", test_news},
        {"the rendezvous' parameters", test_rendezvous_api},
        {NULL, NULL},
    };
    return hn_run_tests("socket_served", tests);
}

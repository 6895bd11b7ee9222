/* The rendezvous hidet-nccl-run serves, facing the network (on loopback, the real launcher): a
 * stranger who knows the job's key and a rank number but not the launcher's secret gets a random
 * challenge and a refusal, never a welcome or a byte of the job, nor does a rank with another
 * secret; a flood of silent, slow and ever new connections, on before the job starts, does not
 * keep a 3-rank job out.
 *   socket_served_hostile_test HIDET_NCCL_RUN     (the binary is its own rank: --rank) */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap_socket/socket_format_int.h"
#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"
#include "tests/deadline.h"
#include "tests/socket_peers.h"

#define KEY "served-hostile"

static const char *g_run, *g_self;

/* ---------------------------------------------------------------- a rank of the job */

/* Waits (hn_test_scaled(120) s at most) until the test has made the file at path ("-": none). */
static int test_said(const char *path, const char *what) {
    int made = 1;
    if (strcmp(path, "-") != 0) HN_WAIT_FOR(made, access(path, F_OK) == 0, 120, what);
    return made;
}

/* A rank started by the launcher: once the test has made the file `go`, a real id through the
 * served rendezvous, an allgather of it; then it stays until the test has made the file `done`, so
 * that the rendezvous stays up for the strangers ("-": no wait). */
static int rank_main(const char *go, const char *done) {
    hidet_nccl_bootstrap_h bs = NULL;
    int rank = -1, n = 0;
    ncclUniqueId id, all[8];
    memset(&id, 0, sizeof id);
    if (!test_said(go, "the test's go (the flood is on)")) return 1;
    if (hidet_nccl_bootstrap_from_env(&bs) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_bootstrap_rank(bs, &rank, &n) != HIDET_NCCL_SUCCESS || n > 8 ||
        (rank == 0 && hidet_nccl_get_unique_id(&id) != HIDET_NCCL_SUCCESS) ||
        hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, 0, 30) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_bootstrap_allgather(bs, &id, all, sizeof id, 30) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "rank %d: %s\n", rank, hidet_nccl_last_error());
        return 1;
    }
    for (int r = 0; r < n; r++)
        if (memcmp(&all[r], &id, sizeof id) != 0) return 1;
    if (!test_said(done, "the test's done (the strangers have been refused)")) return 1;
    hidet_nccl_bootstrap_destroy(bs);
    printf("rank %d of %d: ok\n", rank, n);
    return 0;
}

/* ---------------------------------------------------------------- the launcher */

/* hidet-nccl-run -n 3 serving on port, its output into log; the ranks come once the file go is
 * made and stay until the file done is ("-": at once). */
static pid_t launch(int port, const char *go, const char *done, const char *log) {
    char ps[16], timeout[32];
    snprintf(ps, sizeof ps, "%d", port);
    snprintf(timeout, sizeof timeout, "%.0f", hn_test_scaled(40));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "w", stdout);
        if (f == NULL || dup2(fileno(stdout), 2) < 0) _exit(126);
        execl(g_run, g_run, "-n", "3", "--rendezvous", "socket", "--master-port", ps, "--job-key", KEY, "--timeout",
              timeout, g_self, "--rank", go, done, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Makes the file at path (what the ranks wait for). */
static void say_to_ranks(const char *path) {
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    CU_ASSERT(fd >= 0);
    if (fd >= 0) close(fd);
}

static int exit_of(pid_t pid) {
    int ws = 0;
    waitpid(pid, &ws, 0);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static int lines_with(const char *log, const char *needle) {
    FILE *f = fopen(log, "r");
    char line[4096];
    int n = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) n += strstr(line, needle) != NULL;
    if (f != NULL) fclose(f);
    return n;
}

/* ---------------------------------------------------------------- a stranger */

static void send_msg(int fd, int kind, const char *key, int rank, const void *body, uint32_t len) {
    uint8_t m[HN_SK_HEADER + 64 + 4], nonce[HN_SK_NONCE] = {9};
    size_t total = hidet_nccl__sk_encode(m, sizeof m, kind, key, 3, (uint32_t)rank, 0, nonce, body, len);
    CU_ASSERT_FATAL(total > 0);
    (void)!write(fd, m, total);
}

/* Knows the key, the size and rank 1's number; claims a secret (flags) and guesses the proof. */
static int stranger(int port, uint32_t flags, int *kinds) {
    int fd = hn_test_dial(port);
    uint8_t f[4] = {(uint8_t)flags, 0, 0, 0}, mac[HN_SK_MAC];
    send_msg(fd, HN_SK_KIND_HELLO, KEY, 1, f, 4);
    struct pollfd p = {fd, POLLIN, 0};
    if (flags && poll(&p, 1, (int)(hn_test_scaled(3) * 1000)) == 1) {
        memset(mac, 0x5a, sizeof mac);
        usleep(50 * 1000); /* a guess that takes a while: nothing waits on it */
        send_msg(fd, HN_SK_KIND_PROOF, KEY, 1, mac, sizeof mac);
    }
    int n = hn_test_received(fd, kinds, 8);
    close(fd);
    return n;
}

/* A real rank of the socket backend with a secret of its own: refused, saying why. */
static hidet_nccl_status_t other_secret(int port) {
    setenv("HIDET_NCCL_JOB_SECRET", "another-secret-not-the-launchers", 1);
    setenv("HIDET_NCCL_RENDEZVOUS_SERVED", "1", 1);
    hn_test_setenv_seconds("HIDET_NCCL_TIMEOUT", hn_test_scaled(5));
    hidet_nccl_settings_reload();
    hidet_nccl_socket_bootstrap_params_t p = HIDET_NCCL_SOCKET_BOOTSTRAP_PARAMS_INIT;
    p.master_addr = "127.0.0.1";
    p.master_port = port;
    p.job_key = KEY;
    p.rank = 2;
    p.nranks = 3;
    hidet_nccl_bootstrap_h bs = NULL;
    hidet_nccl_status_t st = hidet_nccl_bootstrap_socket(&p, &bs);
    if (st == HIDET_NCCL_SUCCESS) hidet_nccl_bootstrap_destroy(bs);
    return st;
}

static void test_strangers_refused(void) {
    int port = hn_test_port();
    char log[] = "/tmp/hn_served_hostile.XXXXXX", done[64];
    int lfd = mkstemp(log);
    close(lfd);
    snprintf(done, sizeof done, "%s.done", log);
    pid_t job = launch(port, "-", done, log); /* the ranks stay until the strangers are done: the rendezvous serves */
    int kinds[8], n = stranger(port, HN_SK_HELLO_SECRET, kinds);
    int welcomed = 0, data = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        welcomed += kinds[i] == HN_SK_KIND_WELCOME;
        data += kinds[i] == HN_SK_KIND_DATA;
        refused += kinds[i] == HN_SK_KIND_REFUSE;
    }
    CU_ASSERT(n >= 1 && kinds[0] == HN_SK_KIND_CHALLENGE); /* a random nonce: nothing of the job */
    CU_ASSERT_EQUAL(welcomed, 0);
    CU_ASSERT_EQUAL(data, 0);
    CU_ASSERT_EQUAL(refused, 1);
    n = stranger(port, 0, kinds); /* says it holds no secret */
    CU_ASSERT(n == 1 && kinds[0] == HN_SK_KIND_REFUSE);
    HN_ASSERT_STATUS(other_secret(port), HIDET_NCCL_ERROR_BOOTSTRAP,
                     "proof of the job secret does not match the rendezvous's secret");
    say_to_ranks(done);
    CU_ASSERT_EQUAL(exit_of(job), 0);
    CU_ASSERT_EQUAL(lines_with(log, ": ok"), 3);
    CU_ASSERT(lines_with(log, "a claim to be rank 1 without the job secret") >= 1);
    CU_ASSERT_EQUAL(lines_with(log, "without a job secret"), 0); /* the launcher made one */
    unlink(log);
    unlink(done);
}

/* ---------------------------------------------------------------- a flood */

/* 1000 silent connections, 100 slow ones and a new one every ms, all before the ranks come (they
 * wait for the test's go): the launcher's rendezvous evicts the oldest and still forms the 3-rank job. */
static void test_flood(void) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int port = hn_test_port();
    char log[] = "/tmp/hn_served_flood.XXXXXX", go[64];
    int lfd = mkstemp(log);
    close(lfd);
    snprintf(go, sizeof go, "%s.go", log);
    pid_t job = launch(port, go, "-", log);
    int silent[1000], opened = 0;
    for (int i = 0; i < 1000; i++) opened += (silent[i] = hn_test_dial(port)) >= 0;
    CU_ASSERT_EQUAL(opened, 1000);
    pid_t loris = hn_test_slow_loris(port, 100), flood = hn_test_flooder(port);
    say_to_ranks(go); /* the flood is on */
    CU_ASSERT_EQUAL(exit_of(job), 0);
    CU_ASSERT_EQUAL(lines_with(log, ": ok"), 3);
    CU_ASSERT(lines_with(log, "evicted, the oldest of the connections waiting") >= 1); /* the flood was real */
    kill(loris, SIGKILL);
    kill(flood, SIGKILL);
    waitpid(loris, NULL, 0);
    waitpid(flood, NULL, 0);
    for (int i = 0; i < 1000; i++) close(silent[i]);
    if (lines_with(log, ": ok") != 3) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "tail -n 20 %s >&2", log);
        (void)!system(cmd);
    }
    unlink(log);
    unlink(go);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--rank") == 0) return rank_main(argv[2], argv[3]);
    if (argc != 2) {
        fprintf(stderr, "usage: %s HIDET_NCCL_RUN\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    static char run[4096], self[4096];
    if (realpath(argv[1], run) == NULL || realpath("/proc/self/exe", self) == NULL) return 2;
    g_run = run;
    g_self = self;
    unsetenv("HIDET_NCCL_JOB_SECRET");
    unsetenv("HIDET_NCCL_JOB_SECRET_FILE");
    static const hn_test_t tests[] = {
        {"a stranger or another secret gets nothing of the launcher's job", test_strangers_refused},
        {"a flood before the job starts keeps no rank out", test_flood},
        {NULL, NULL},
    };
    return hn_run_tests("socket_served_hostile", tests);
}

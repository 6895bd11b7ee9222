/* The socket rendezvous against the network, on loopback with real processes: a flood of silent,
 * slow and ever new connections cannot keep a job's ranks out; with a job secret a stranger who
 * knows the key and a rank number gets no welcome and no byte of the job, a rank with another
 * secret is refused, a rank 0 without the secret is not believed; the secret's file is checked;
 * a rank out of range in params is named. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_socket/socket_format_int.h"
#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"
#include "tests/deadline.h"
#include "tests/socket_peers.h"

#define SECRET "0123456789abcdef-the-job-secret"

static void set_secret(const char *secret) {
    if (secret) setenv("HIDET_NCCL_JOB_SECRET", secret, 1);
    else unsetenv("HIDET_NCCL_JOB_SECRET");
    hidet_nccl_settings_reload();
}

/* One rank in a child, with its own secret (NULL: none): a broadcast of a real id from rank 0 and an
 * allgather, checked. Exit 0 when all holds, else 1 with the message on stderr (and in *why). */
static int rank_main(int port, int rank, int n, const char *secret) {
    set_secret(secret);
    hidet_nccl_socket_bootstrap_params_t p = HIDET_NCCL_SOCKET_BOOTSTRAP_PARAMS_INIT;
    p.master_addr = "127.0.0.1";
    p.master_port = port;
    p.job_key = "hostile";
    p.rank = rank;
    p.nranks = n;
    hidet_nccl_bootstrap_h bs;
    ncclUniqueId id, all[8];
    memset(&id, 0, sizeof id);
    if (hidet_nccl_bootstrap_socket(&p, &bs) != HIDET_NCCL_SUCCESS) goto fail;
    if (rank == 0 && hidet_nccl_get_unique_id(&id) != HIDET_NCCL_SUCCESS) goto fail;
    if (hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, 0, 30) != HIDET_NCCL_SUCCESS) goto fail;
    if (hidet_nccl_bootstrap_allgather(bs, &id, all, sizeof id, 30) != HIDET_NCCL_SUCCESS) goto fail;
    for (int r = 0; r < n; r++)
        if (memcmp(&all[r], &id, sizeof id) != 0) return 1;
    hidet_nccl_bootstrap_destroy(bs);
    return 0;
fail:
    fprintf(stderr, "rank %d: %s\n", rank, hidet_nccl_last_error());
    return 1;
}

static pid_t spawn_rank(int port, int rank, int n, const char *secret) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(rank_main(port, rank, n, secret));
    return pid;
}

static int wait_ok(pid_t pid) {
    int ws = 0;
    waitpid(pid, &ws, 0);
    return WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
}

/* ---------------------------------------------------------------- a flood */

static void test_flood(void) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    hn_test_setenv_seconds("HIDET_NCCL_TIMEOUT", hn_test_scaled(40));
    hidet_nccl_settings_reload();
    int port = hn_test_port();
    pid_t ranks[4];
    ranks[0] = spawn_rank(port, 0, 4, NULL);
    int silent[1000], opened = 0;
    for (int i = 0; i < 1000; i++) opened += (silent[i] = hn_test_dial(port)) >= 0;
    CU_ASSERT_EQUAL(opened, 1000);
    pid_t loris = hn_test_slow_loris(port, 100), flood = hn_test_flooder(port); /* on before the ranks come */
    for (int r = 1; r < 4; r++) ranks[r] = spawn_rank(port, r, 4, NULL);
    int ok = 0;
    for (int r = 0; r < 4; r++) ok += wait_ok(ranks[r]);
    CU_ASSERT_EQUAL(ok, 4);
    kill(loris, SIGKILL);
    kill(flood, SIGKILL);
    waitpid(loris, NULL, 0);
    waitpid(flood, NULL, 0);
    for (int i = 0; i < 1000; i++) close(silent[i]);
    unsetenv("HIDET_NCCL_TIMEOUT");
    hidet_nccl_settings_reload();
}

/* ---------------------------------------------------------------- strangers and secrets */

static void send_msg(int fd, int kind, int rank, const void *body, uint32_t len) {
    uint8_t m[HN_SK_HEADER + 64 + 4], nonce[HN_SK_NONCE] = {7};
    size_t total = hidet_nccl__sk_encode(m, sizeof m, kind, "hostile", 2, (uint32_t)rank, 0, nonce, body, len);
    CU_ASSERT_FATAL(total > 0);
    (void)!write(fd, m, total);
}

/* Knows the key, the size and a rank's number; claims the secret and proves nothing. */
static void stranger_with_a_claim(int port, uint32_t flags, int *kinds, int *n) {
    int fd = hn_test_dial(port);
    uint8_t f[4] = {(uint8_t)flags, 0, 0, 0}, mac[HN_SK_MAC];
    send_msg(fd, HN_SK_KIND_HELLO, 1, f, 4);
    struct pollfd p = {fd, POLLIN, 0};
    if (flags && poll(&p, 1, (int)(hn_test_scaled(3) * 1000)) == 1) { /* the challenge: answer it with a guess */
        memset(mac, 0x5a, sizeof mac);
        usleep(100 * 1000); /* a guess that takes a while: nothing waits on it */
        send_msg(fd, HN_SK_KIND_PROOF, 1, mac, sizeof mac);
    }
    *n = hn_test_received(fd, kinds, 8);
    close(fd);
}

/* A hello with a guessed key: the refusal names neither the job's key nor its size, so a
 * stranger cannot learn them from it and come back with a valid hello. */
static void refusal_reveals_nothing(int port) {
    int fd = hn_test_dial(port);
    uint8_t m[HN_SK_HEADER + 8], nonce[HN_SK_NONCE] = {1}, flags[4] = {0}, buf[512];
    size_t total = hidet_nccl__sk_encode(m, sizeof m, HN_SK_KIND_HELLO, "guess", 7, 1, 0, nonce, flags, 4);
    (void)!write(fd, m, total);
    size_t got = 0;
    for (int i = 0; i < 100 && got < sizeof buf; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = read(fd, buf + got, sizeof buf - got);
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    hidet_nccl__sk_msg_t r;
    char why[128];
    CU_ASSERT_FATAL(got >= HN_SK_HEADER && hidet_nccl__sk_total(buf, &total, why, sizeof why) == 0 && got >= total);
    CU_ASSERT_FATAL(hidet_nccl__sk_parse(buf, total, &r, why, sizeof why) == 0);
    CU_ASSERT_EQUAL(r.kind, HN_SK_KIND_REFUSE);
    CU_ASSERT_STRING_NOT_EQUAL(r.key, "hostile");
    CU_ASSERT_NOT_EQUAL(r.world_size, 2);
}

static void test_stranger_cannot_join(void) {
    hn_test_setenv_seconds("HIDET_NCCL_TIMEOUT", hn_test_scaled(20));
    int port = hn_test_port();
    pid_t root = spawn_rank(port, 0, 2, SECRET);
    int kinds[8], n = 0;
    stranger_with_a_claim(port, HN_SK_HELLO_SECRET, kinds, &n);
    int welcomed = 0, data = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        welcomed += kinds[i] == HN_SK_KIND_WELCOME;
        data += kinds[i] == HN_SK_KIND_DATA;
        refused += kinds[i] == HN_SK_KIND_REFUSE;
    }
    CU_ASSERT_EQUAL(welcomed, 0);
    CU_ASSERT_EQUAL(data, 0);
    CU_ASSERT_EQUAL(refused, 1);
    CU_ASSERT(n >= 1 && kinds[0] == HN_SK_KIND_CHALLENGE); /* a random nonce: nothing of the job */
    stranger_with_a_claim(port, 0, kinds, &n);                  /* says it has no secret */
    CU_ASSERT(n == 1 && kinds[0] == HN_SK_KIND_REFUSE);
    refusal_reveals_nothing(port);
    pid_t r1 = spawn_rank(port, 1, 2, SECRET); /* the real rank 1 still gets its place */
    CU_ASSERT(wait_ok(root));
    CU_ASSERT(wait_ok(r1));
    unsetenv("HIDET_NCCL_TIMEOUT");
}

/* Runs rank `rank` of 2 here with its own secret and returns its status (message in the thread). */
static hidet_nccl_status_t rank_here(int port, int rank, const char *secret) {
    set_secret(secret);
    hidet_nccl_socket_bootstrap_params_t p = HIDET_NCCL_SOCKET_BOOTSTRAP_PARAMS_INIT;
    p.master_addr = "127.0.0.1";
    p.master_port = port;
    p.job_key = "hostile";
    p.rank = rank;
    p.nranks = 2;
    hidet_nccl_bootstrap_h bs = NULL;
    hidet_nccl_status_t st = hidet_nccl_bootstrap_socket(&p, &bs);
    if (st == HIDET_NCCL_SUCCESS) hidet_nccl_bootstrap_destroy(bs);
    return st;
}

static void test_secrets_must_match(void) {
    hn_test_setenv_seconds("HIDET_NCCL_TIMEOUT", hn_test_scaled(3)); /* rank 0 waits it out: keep it short */
    int port = hn_test_port();
    pid_t root = spawn_rank(port, 0, 2, SECRET);
    HN_ASSERT_STATUS(rank_here(port, 1, "another-secret-of-16+"), HIDET_NCCL_ERROR_BOOTSTRAP,
                     "proof of the job secret does not match");
    HN_ASSERT_STATUS(rank_here(port, 1, NULL), HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0 holds a job secret and this rank "
                     "does not");
    CU_ASSERT(!wait_ok(root)); /* nobody proved the secret: rank 0 times out */
    port = hn_test_port();
    root = spawn_rank(port, 0, 2, NULL);
    HN_ASSERT_STATUS(rank_here(port, 1, SECRET), HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0 holds no job secret");
    CU_ASSERT(!wait_ok(root));
    HN_ASSERT_STATUS(rank_here(hn_test_port(), 1, "short"), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "HIDET_NCCL_JOB_SECRET");
    set_secret(NULL);
    unsetenv("HIDET_NCCL_TIMEOUT");
    hidet_nccl_settings_reload();
}

/* A process at the port that is not the job's rank 0: it challenges, takes the proof, and
 * welcomes with a proof it cannot make. */
static void test_false_rank_0(void) {
    hn_test_setenv_seconds("HIDET_NCCL_TIMEOUT", hn_test_scaled(5));
    int port = hn_test_port();
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = htons(port)};
    CU_ASSERT_FATAL(bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 4) == 0);
    fflush(NULL);
    pid_t impostor = fork();
    if (impostor == 0) {
        int fd = accept(lfd, NULL, NULL);
        uint8_t buf[512], body[HN_SK_NONCE + HN_SK_MAC] = {0};
        (void)!read(fd, buf, sizeof buf); /* the hello: its nonce comes back in the welcome */
        memcpy(body, buf + 96, HN_SK_NONCE);
        send_msg(fd, HN_SK_KIND_CHALLENGE, 0, NULL, 0);
        (void)!read(fd, buf, sizeof buf); /* the proof */
        send_msg(fd, HN_SK_KIND_WELCOME, 0, body, sizeof body); /* with a proof of zeros */
        struct pollfd p = {fd, POLLIN, 0}; /* holds the connection until the rank, refusing it, closes it */
        while (poll(&p, 1, (int)(hn_test_scaled(30) * 1000)) == 1 && read(fd, buf, sizeof buf) > 0) {
        }
        _exit(0);
    }
    close(lfd);
    HN_ASSERT_STATUS(rank_here(port, 1, SECRET), HIDET_NCCL_ERROR_BOOTSTRAP, "does not prove the job secret");
    waitpid(impostor, NULL, 0);
    set_secret(NULL);
    unsetenv("HIDET_NCCL_TIMEOUT");
    hidet_nccl_settings_reload();
}

static void test_secret_file(void) {
    char dir[] = "/tmp/hn_secret.XXXXXX", path[64];
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/secret", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    (void)!write(fd, SECRET "\n", strlen(SECRET) + 1);
    close(fd);
    setenv("HIDET_NCCL_JOB_SECRET_FILE", path, 1);
    hn_test_setenv_seconds("HIDET_NCCL_TIMEOUT", hn_test_scaled(20));
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(rank_here(hn_test_port(), 1, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "readable or writable by group");
    chmod(path, 0600);
    int port = hn_test_port();
    pid_t root = spawn_rank(port, 0, 2, NULL); /* the file's secret, the newline dropped */
    pid_t r1 = spawn_rank(port, 1, 2, "ignored-while-a-file-is-set");
    CU_ASSERT(wait_ok(root));
    CU_ASSERT(wait_ok(r1));
    char link[80];
    snprintf(link, sizeof link, "%s/link", dir);
    CU_ASSERT_FATAL(symlink(path, link) == 0);
    setenv("HIDET_NCCL_JOB_SECRET_FILE", link, 1);
    HN_ASSERT_STATUS(rank_here(hn_test_port(), 1, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "a symbolic link");
    unlink(link);
    unlink(path);
    rmdir(dir);
    unsetenv("HIDET_NCCL_JOB_SECRET_FILE");
    unsetenv("HIDET_NCCL_TIMEOUT");
    set_secret(NULL);
}

static void test_rank_out_of_range(void) {
    hidet_nccl_socket_bootstrap_params_t p = HIDET_NCCL_SOCKET_BOOTSTRAP_PARAMS_INIT;
    p.master_addr = "127.0.0.1";
    p.master_port = hn_test_port();
    p.rank = -5;
    p.nranks = 2;
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_socket(&p, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank -5 (params) is out "
                     "of range");
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    static const hn_test_t tests[] = {
        {"a flood of silent, slow and new connections keeps no rank out", test_flood},
        {"a stranger with the key and a rank number gets nothing", test_stranger_cannot_join},
        {"ranks with other secrets, or none, are refused", test_secrets_must_match},
        {"a rank 0 without the secret is not believed", test_false_rank_0},
        {"the secret file is checked", test_secret_file},
        {"a rank out of range is named", test_rank_out_of_range},
        {NULL, NULL},
    };
    return hn_run_tests("socket_hostile", tests);
}

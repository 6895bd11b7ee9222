#include "tests/socket_peers.h"

#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_socket/socket_format_int.h"
#include "tests/deadline.h"

int hn_test_port(void) {
    static unsigned seed;
    if (seed == 0) seed = (unsigned)getpid() ^ (unsigned)time(NULL);
    for (int tries = 0; tries < 200; tries++) {
        int port = 20000 + (int)(rand_r(&seed) % 12000u);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY), .sin_port = htons(port)};
        int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0) close(fd);
        if (ok) return port;
    }
    return 20000;
}

int hn_test_dial(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = htons(port)};
    for (double end = hn_test_now() + hn_test_scaled(10);;) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
        if (fd >= 0) close(fd);
        if (hn_test_now() > end) return -1;
        usleep(10000); /* the poll interval */
    }
}

/* Forks a child that runs peer(port, count, fd) and tells on fd once it is under way; returns the
 * child once it has told, or after hn_test_scaled(30) s (said on stderr: the case then fails on what
 * the peer did not do). The caller kills it. */
static pid_t started(void (*peer)(int port, int count, int ready), int port, int count, const char *what) {
    int p[2];
    if (pipe(p) != 0) abort();
    pid_t pid = fork();
    if (pid < 0) abort(); /* a pid the caller would kill */
    if (pid == 0) {
        close(p[0]);
        peer(port, count, p[1]);
        _exit(0);
    }
    close(p[1]);
    hn_test_await(p[0], 1, 30, what);
    close(p[0]);
    return pid;
}

static void slow_loris(int port, int count, int ready) {
    int fds[128];
    for (int i = 0; i < count; i++) fds[i] = hn_test_dial(port);
    hn_test_tell(ready);
    static const char magic[] = "HNCCLSK";
    for (int k = 0;; k++) {
        for (int i = 0; i < count; i++) (void)!write(fds[i], magic + k % 7, 1);
        usleep(200 * 1000); /* a byte every 200 ms: the slow loris itself */
    }
}

pid_t hn_test_slow_loris(int port, int count) {
    return started(slow_loris, port, count > 128 ? 128 : count, "the slow loris's connections");
}

static void flooder(int port, int count, int ready) {
    (void)count;
    int ring[400];
    for (int i = 0; i < 400; i++) ring[i] = -1;
    for (unsigned k = 0;; k++) {
        if (ring[k % 400] >= 0) close(ring[k % 400]);
        ring[k % 400] = hn_test_dial(port);
        if (k == 0) hn_test_tell(ready);
        usleep(1000); /* a new connection every millisecond: the flood itself */
    }
}

pid_t hn_test_flooder(int port) { return started(flooder, port, 0, "the flooder's first connection"); }

int hn_test_received(int fd, int *kinds, int max) {
    int n = 0;
    uint8_t buf[4096];
    size_t got = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)(hn_test_scaled(3) * 1000)) <= 0) break;
        ssize_t k = read(fd, buf + got, sizeof buf - got);
        if (k <= 0) break;
        got += (size_t)k;
        size_t total;
        char why[128];
        while (got >= HN_SK_HEADER && hidet_nccl__sk_total(buf, &total, why, sizeof why) == 0 && got >= total) {
            hidet_nccl__sk_msg_t m;
            if (hidet_nccl__sk_parse(buf, total, &m, why, sizeof why) == 0 && n < max) kinds[n++] = m.kind;
            memmove(buf, buf + total, got - total);
            got -= total;
        }
    }
    return n;
}

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
    for (int i = 0; i < 1000; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
        if (fd >= 0) close(fd);
        usleep(10000);
    }
    return -1;
}

pid_t hn_test_slow_loris(int port, int count) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    int fds[128];
    if (count > 128) count = 128;
    for (int i = 0; i < count; i++) fds[i] = hn_test_dial(port);
    static const char magic[] = "HNCCLSK";
    for (int k = 0;; k++) {
        for (int i = 0; i < count; i++) (void)!write(fds[i], magic + k % 7, 1);
        usleep(200 * 1000);
    }
}

pid_t hn_test_flooder(int port) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    int ring[400];
    for (int i = 0; i < 400; i++) ring[i] = -1;
    for (unsigned k = 0;; k++) {
        if (ring[k % 400] >= 0) close(ring[k % 400]);
        ring[k % 400] = hn_test_dial(port);
        usleep(1000);
    }
}

int hn_test_received(int fd, int *kinds, int max) {
    int n = 0;
    uint8_t buf[4096];
    size_t got = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 3000) <= 0) break;
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

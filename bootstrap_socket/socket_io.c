/* TCP under deadlines for the socket rendezvous. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_socket/socket_format_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "core/base/kit.h"

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)

static void tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int ms_left(double deadline) {
    double left = deadline - hidet_nccl__now();
    return left <= 0 ? 0 : left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

int hidet_nccl__sk_listen(int port, char *why, size_t why_bytes) {
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET6; /* dual stack: IPv4 peers arrive as mapped addresses */
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int fd = -1, err = 0;
    for (int family = 0; family < 2 && fd < 0; family++) {
        hints.ai_family = family == 0 ? AF_INET6 : AF_INET;
        if (getaddrinfo(NULL, service, &hints, &res) != 0) continue;
        for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
            fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
            if (fd < 0) continue;
            int one = 1, zero = 0;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (a->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
                err = errno;
                close(fd);
                fd = -1;
            }
        }
        freeaddrinfo(res);
        if (err == EADDRINUSE) break;
    }
    if (fd < 0) {
        if (err == EADDRINUSE)
            return WHY("port %d on this host is in use (by another job, or another program: choose another "
                       "MASTER_PORT)", port);
        return WHY("cannot listen on port %d: %s", port, strerror(err ? err : EADDRNOTAVAIL));
    }
    tune(fd);
    return fd;
}

/* A connection to a local port nobody listens on can meet itself (TCP simultaneous open, when
 * the kernel picks that very port as the source): then it would read its own hello. */
static int connected_to_itself(int fd) {
    struct sockaddr_storage me, peer;
    socklen_t a = sizeof me, b = sizeof peer;
    return getsockname(fd, (struct sockaddr *)&me, &a) == 0 && getpeername(fd, (struct sockaddr *)&peer, &b) == 0 &&
           a == b && memcmp(&me, &peer, a) == 0;
}

/* One attempt on one address: 1 connected, 0 refused or not yet reachable, -1 failed. */
static int connect_once(const struct addrinfo *a, double deadline, int *out) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) return -1;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
        close(fd);
        return 0;
    }
    struct pollfd p = {fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (poll(&p, 1, ms_left(deadline)) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0 ||
        connected_to_itself(fd)) {
        close(fd);
        return 0;
    }
    tune(fd);
    *out = fd;
    return 1;
}

int hidet_nccl__sk_connect(const char *host, int port, double deadline, char *why, size_t why_bytes) {
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) return WHY("the address %s does not resolve: %s", host, gai_strerror(rc));
    hn_poll_t poll_state;
    hidet_nccl__poll_begin(&poll_state, deadline - hidet_nccl__now(), 0, 1000000, 100000000, 1);
    int fd = -1;
    for (;;) {
        for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) connect_once(a, deadline, &fd);
        if (fd >= 0 || hidet_nccl__now() >= deadline) break;
        hidet_nccl__poll_pause(&poll_state); /* the root may not listen yet: 1 ms, doubling to 100 ms */
    }
    freeaddrinfo(res);
    if (fd < 0) return WHY("nothing accepted a connection at %s:%d before the deadline", host, port);
    return fd;
}

int hidet_nccl__sk_accept(int listen_fd, char *peer, size_t peer_bytes, char *why, size_t why_bytes) {
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    int fd = accept4(listen_fd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
            (void)WHY("accept: %s", strerror(errno));
        else
            errno = EAGAIN;
        return -1;
    }
    char host[NI_MAXHOST] = "?", service[NI_MAXSERV] = "?";
    getnameinfo((struct sockaddr *)&sa, len, host, sizeof host, service, sizeof service, NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(peer, peer_bytes, "%s:%s", host, service);
    tune(fd);
    return fd;
}

int hidet_nccl__sk_send(int fd, const void *buf, size_t len, double deadline, char *why, size_t why_bytes) {
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return WHY("send: %s", strerror(errno));
        struct pollfd q = {fd, POLLOUT, 0};
        if (poll(&q, 1, ms_left(deadline)) == 0 && hidet_nccl__now() >= deadline)
            return WHY("the peer did not take %zu more bytes before the deadline", len);
    }
    return 0;
}

int hidet_nccl__sk_read(int fd, void *buf, size_t len, double deadline, char *why, size_t why_bytes) {
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0) return WHY("the peer closed the connection");
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return WHY("recv: %s", strerror(errno));
        struct pollfd q = {fd, POLLIN, 0};
        if (poll(&q, 1, ms_left(deadline)) == 0 && hidet_nccl__now() >= deadline) return 0;
    }
    return 1;
}

int hidet_nccl__sk_recv(int fd, double deadline, uint8_t **buf, size_t *len, char *why, size_t why_bytes) {
    uint8_t header[HN_SK_HEADER];
    int got = hidet_nccl__sk_read(fd, header, sizeof header, deadline, why, why_bytes);
    if (got <= 0) return got;
    size_t total;
    if (hidet_nccl__sk_total(header, &total, why, why_bytes) != 0) return -1;
    uint8_t *m = malloc(total);
    if (m == NULL) return WHY("out of memory for a message of %zu bytes", total);
    memcpy(m, header, sizeof header);
    got = hidet_nccl__sk_read(fd, m + sizeof header, total - sizeof header, deadline, why, why_bytes);
    if (got <= 0) {
        free(m);
        return got;
    }
    *buf = m;
    *len = total;
    return 1;
}

static int clamp_limit(rlim_t v) { return v == RLIM_INFINITY || v > (rlim_t)INT_MAX ? INT_MAX : (int)v; }

int hidet_nccl__sk_enough_files(int needed, int *hard) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        *hard = INT_MAX;
        return INT_MAX; /* nothing to go by: poll says so, if it must */
    }
    if (rl.rlim_cur < (rlim_t)needed && rl.rlim_cur < rl.rlim_max) {
        struct rlimit raised = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
    }
    *hard = clamp_limit(rl.rlim_max);
    return clamp_limit(rl.rlim_cur);
}

int hidet_nccl__sk_poll(hn_sk_poller_t *p, struct pollfd *fds, size_t n, int ms) {
    if (n > p->cap) {
        struct pollfd *packed = realloc(p->packed, n * sizeof *packed);
        if (packed != NULL) p->packed = packed;
        size_t *where = packed != NULL ? realloc(p->where, n * sizeof *where) : NULL;
        if (where == NULL) {
            errno = ENOMEM;
            return -1;
        }
        p->where = where;
        p->cap = n;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        fds[i].revents = 0;
        if (fds[i].fd < 0) continue;
        p->packed[k] = fds[i];
        p->where[k++] = i;
    }
    int rc = poll(p->packed, (nfds_t)k, ms);
    for (size_t j = 0; rc > 0 && j < k; j++) fds[p->where[j]].revents = p->packed[j].revents;
    return rc;
}

void hidet_nccl__sk_poller_free(hn_sk_poller_t *p) {
    free(p->packed);
    free(p->where);
    *p = (hn_sk_poller_t){NULL, NULL, 0};
}

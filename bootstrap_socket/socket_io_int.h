/* Internal: TCP for the socket rendezvous, every call under an absolute deadline (monotonic
 * seconds, hidet_nccl__now()). Sockets are non-blocking; waits are poll(2). */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_IO_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_IO_INT_H_

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

/* A listening socket on every interface at port. fd, or -1 and why (a port in use named). */
int hidet_nccl__sk_listen(int port, char *why, size_t why_bytes);

/* Connects to host:port, trying each address it resolves to and retrying refused connections
 * (the root may not listen yet) until the deadline. fd, or -1 and why. */
int hidet_nccl__sk_connect(const char *host, int port, double deadline, char *why, size_t why_bytes);

/* Accepts a connection if one is waiting: fd (non-blocking) and its peer as "addr:port", or
 * -1 when none is (errno EAGAIN) or on an error (why). */
int hidet_nccl__sk_accept(int listen_fd, char *peer, size_t peer_bytes, char *why, size_t why_bytes);

/* Writes len bytes before the deadline. 0, or -1 and why. */
int hidet_nccl__sk_send(int fd, const void *buf, size_t len, double deadline, char *why, size_t why_bytes);

/* Reads exactly len bytes before the deadline. 1 read; 0 the deadline passed; -1 closed or
 * failed (why). */
int hidet_nccl__sk_read(int fd, void *buf, size_t len, double deadline, char *why, size_t why_bytes);

/* Reads one whole message: the header first, checked, then the rest it announces (so a peer
 * cannot make this allocate more than a message may hold). 1 and *buf (malloc'ed), *len; 0
 * the deadline passed; -1 closed, failed or not a message (why). */
int hidet_nccl__sk_recv(int fd, double deadline, uint8_t **buf, size_t *len, char *why, size_t why_bytes);

/* The open-files limit for a hub that wants `needed` descriptors: the soft limit, raised to the
 * hard one (*hard) first where it is lower than needed and the system allows it. INT_MAX for no
 * limit. */
int hidet_nccl__sk_enough_files(int needed, int *hard);

/* poll(2) over the entries of fds[0 .. n) that hold a descriptor (fd >= 0) alone, the others
 * given revents 0: poll refuses more entries than the open-files limit, free ones included, and a
 * hub's tables have many more free slots than it may open descriptors. What it packs is kept in
 * p (zeroed at first) for the next call. poll's result; -1 with errno ENOMEM when out of memory. */
typedef struct {
    struct pollfd *packed;
    size_t *where, cap;
} hn_sk_poller_t;
int hidet_nccl__sk_poll(hn_sk_poller_t *p, struct pollfd *fds, size_t n, int ms);
void hidet_nccl__sk_poller_free(hn_sk_poller_t *p);

#endif

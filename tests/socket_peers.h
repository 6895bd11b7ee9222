/* What the socket rendezvous tests play against it: a port for its listener, a connection to it,
 * the hostile peers (a slow loris, a flood), and what a stranger is told. */
#ifndef HIDET_NCCL_TESTS_SOCKET_PEERS_H_
#define HIDET_NCCL_TESTS_SOCKET_PEERS_H_

#include <sys/types.h>

/* A port for a test's listener that nothing listens on now: one of 20000 .. 31999, below Linux's
 * ephemeral range (32768 ..), where the outgoing connections of the tests running beside this one
 * take ports (a port of that range, free when asked, could be taken before the listener binds it). */
int hn_test_port(void);
/* A connection to port on this host, tried again (a new socket each time) for up to
 * hn_test_scaled(10) s while nothing listens yet; -1 if none was made. */
int hn_test_dial(int port);
/* A child holding `count` (at most 128) connections to port, each sent a byte of a hello every
 * 200 ms, until killed; returned once it holds them all (or after hn_test_scaled(30) s, said). */
pid_t hn_test_slow_loris(int port, int count);
/* A child opening a new silent connection to port every millisecond, keeping the last 400, until
 * killed; returned once its first connection is made (or after hn_test_scaled(30) s, said). */
pid_t hn_test_flooder(int port);

/* The kinds of the socket rendezvous's messages that come on fd, in order, until it closes the
 * connection or hn_test_scaled(3) s pass without a byte: at most max into kinds; returns how many. */
int hn_test_received(int fd, int *kinds, int max);

#endif

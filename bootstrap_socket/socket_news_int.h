/* Internal: news of a death or a recovery round waiting for a rank (bootstrap_socket/socket_news.c). */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_NEWS_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_NEWS_INT_H_

#include <stddef.h>

/* The plug-in's peer_lost (state: an hn_sk_state_t): 1 and why in msg when the hub told this rank
 * that a recovery round began (or, at rank 0's hub, a rank's join waits); else 0. Peeks only. */
int hidet_nccl__sk_peer_lost(void *state, char *msg, size_t n);

#endif

/* Internal: a connection of a served rendezvous (bootstrap_socket/socket_conn.c), never blocking:
 * whole messages are assembled from what arrives (the header first, checked, so a peer cannot make
 * it allocate more than a message may hold), and what is sent waits in a queue of shared buffers
 * until the socket takes it (one allgather result of up to 8 MiB goes to every rank from one
 * buffer). */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_CONN_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_CONN_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_socket/socket_format_int.h"

/* Bytes several queues share: freed with the last reference. */
typedef struct {
    int refs;
    size_t len;
    uint8_t data[];
} hn_sk_blob_t;

/* A new buffer of len bytes (one reference), or NULL. */
hn_sk_blob_t *hidet_nccl__sk_blob_new(size_t len);
void hidet_nccl__sk_blob_unref(hn_sk_blob_t *b);

typedef struct hn_sk_out hn_sk_out_t;

typedef struct {
    int fd; /* -1: closed */
    uint8_t head[HN_SK_HEADER];
    uint8_t *msg; /* the message being read, once its header is in */
    size_t got, total;
    hn_sk_out_t *out, *out_tail; /* what waits to be sent */
    size_t queued;               /* its bytes */
} hn_sk_conn_t;

void hidet_nccl__sk_conn_init(hn_sk_conn_t *c, int fd);
#define HN_SK_PEER_CLOSED "the peer closed the connection" /* conn_read's why at the end of the stream */
/* Reads what is there: 1 and a whole message (*msg malloc'ed, the caller's) when one is complete;
 * 0 when no whole message is there yet; -1 when the peer closed or the bytes are not this
 * protocol (why). */
int hidet_nccl__sk_conn_read(hn_sk_conn_t *c, uint8_t **msg, size_t *len, char *why, size_t why_bytes);
/* Queues b (one more reference) and sends what the socket takes now. 0, or -1 when the
 * connection failed (why). */
int hidet_nccl__sk_conn_push(hn_sk_conn_t *c, hn_sk_blob_t *b, char *why, size_t why_bytes);
/* Queues a copy of len bytes; as push. */
int hidet_nccl__sk_conn_push_bytes(hn_sk_conn_t *c, const void *bytes, size_t len, char *why, size_t why_bytes);
/* Sends what the socket takes of the queue. 0, or -1 when the connection failed (why). */
int hidet_nccl__sk_conn_flush(hn_sk_conn_t *c, char *why, size_t why_bytes);
/* Closes the socket and frees what it held. */
void hidet_nccl__sk_conn_close(hn_sk_conn_t *c);

#endif

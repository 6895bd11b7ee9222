/* A served rendezvous' connections: messages assembled without blocking, output queued. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap_socket/socket_conn_int.h"

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)

struct hn_sk_out {
    hn_sk_out_t *next;
    hn_sk_blob_t *blob;
    size_t off;
};

hn_sk_blob_t *hidet_nccl__sk_blob_new(size_t len) {
    hn_sk_blob_t *b = malloc(sizeof *b + len);
    if (b == NULL) return NULL;
    b->refs = 1;
    b->len = len;
    return b;
}

void hidet_nccl__sk_blob_unref(hn_sk_blob_t *b) {
    if (b != NULL && --b->refs == 0) free(b);
}

void hidet_nccl__sk_conn_init(hn_sk_conn_t *c, int fd) {
    memset(c, 0, sizeof *c);
    c->fd = fd;
}

int hidet_nccl__sk_conn_read(hn_sk_conn_t *c, uint8_t **msg, size_t *len, char *why, size_t why_bytes) {
    for (;;) {
        uint8_t *dst = c->msg ? c->msg : c->head;
        size_t want = c->msg ? c->total : HN_SK_HEADER;
        ssize_t got = recv(c->fd, dst + c->got, want - c->got, 0);
        if (got == 0) return WHY(HN_SK_PEER_CLOSED);
        if (got < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
            return WHY("recv: %s", strerror(errno));
        }
        c->got += (size_t)got;
        if (c->got < want) continue;
        if (c->msg == NULL) { /* the header is in: how long is the whole? */
            if (hidet_nccl__sk_total(c->head, &c->total, why, why_bytes) != 0) return -1;
            if ((c->msg = malloc(c->total)) == NULL) return WHY("out of memory for a message of %zu bytes", c->total);
            memcpy(c->msg, c->head, HN_SK_HEADER);
            continue;
        }
        *msg = c->msg;
        *len = c->total;
        c->msg = NULL;
        c->got = c->total = 0;
        return 1;
    }
}

int hidet_nccl__sk_conn_flush(hn_sk_conn_t *c, char *why, size_t why_bytes) {
    while (c->out != NULL) {
        hn_sk_out_t *o = c->out;
        ssize_t n = send(c->fd, o->blob->data + o->off, o->blob->len - o->off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
            return WHY("send: %s", strerror(errno));
        }
        o->off += (size_t)n;
        c->queued -= (size_t)n;
        if (o->off < o->blob->len) continue;
        c->out = o->next;
        if (c->out == NULL) c->out_tail = NULL;
        hidet_nccl__sk_blob_unref(o->blob);
        free(o);
    }
    return 0;
}

int hidet_nccl__sk_conn_push(hn_sk_conn_t *c, hn_sk_blob_t *b, char *why, size_t why_bytes) {
    if (c->fd < 0) return WHY("the connection is closed");
    hn_sk_out_t *o = calloc(1, sizeof *o);
    if (o == NULL) return WHY("out of memory for a message of %zu bytes", b->len);
    b->refs++;
    o->blob = b;
    if (c->out_tail) c->out_tail->next = o;
    else c->out = o;
    c->out_tail = o;
    c->queued += b->len;
    return hidet_nccl__sk_conn_flush(c, why, why_bytes);
}

int hidet_nccl__sk_conn_push_bytes(hn_sk_conn_t *c, const void *bytes, size_t len, char *why, size_t why_bytes) {
    hn_sk_blob_t *b = hidet_nccl__sk_blob_new(len);
    if (b == NULL) return WHY("out of memory for a message of %zu bytes", len);
    memcpy(b->data, bytes, len);
    int rc = hidet_nccl__sk_conn_push(c, b, why, why_bytes);
    hidet_nccl__sk_blob_unref(b);
    return rc;
}

void hidet_nccl__sk_conn_close(hn_sk_conn_t *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    free(c->msg);
    c->msg = NULL;
    c->got = c->total = 0;
    while (c->out != NULL) {
        hn_sk_out_t *o = c->out;
        c->out = o->next;
        hidet_nccl__sk_blob_unref(o->blob);
        free(o);
    }
    c->out_tail = NULL;
    c->queued = 0;
}

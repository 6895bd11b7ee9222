/* What a served rendezvous' session does to its members, whichever round it is in: name them,
 * send them a message or a fail, keep a connection that is no longer a member's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_socket/socket_members_int.h"

const char *hidet_nccl__sk_ms_who(const struct hn_sk_session *s, int i, char *out, size_t cap) {
    if (s->m[i].job_rank == i) snprintf(out, cap, "rank %d", i);
    else snprintf(out, cap, "rank %d (job rank %d)", i, s->m[i].job_rank);
    return out;
}

static void push(struct hn_sk_session *s, hn_sk_conn_t *c, hn_sk_blob_t *b) {
    char why[256];
    if (c->fd >= 0 && hidet_nccl__sk_conn_push(c, b, why, sizeof why) != 0)
        HN_INFO("socket rendezvous session %d: %s (its reader sees the connection fail)", s->id, why);
}

void hidet_nccl__sk_ms_send(struct hn_sk_session *s, hn_sk_conn_t *c, int kind, uint32_t world, uint64_t tag,
                            const void *body, size_t bytes) {
    hn_sk_blob_t *b = hidet_nccl__sk_blob_new(HN_SK_HEADER + bytes + 4);
    if (b == NULL) {
        HN_WARN("socket rendezvous session %d: out of memory for a message of %zu bytes", s->id, bytes);
        return;
    }
    b->len = hidet_nccl__sk_encode(b->data, b->len, kind, s->job.key, world, 0, tag, s->nonce, body, (uint32_t)bytes);
    if (b->len) push(s, c, b);
    hidet_nccl__sk_blob_unref(b);
}

void hidet_nccl__sk_ms_tell(struct hn_sk_session *s, int i, int except, uint64_t epoch, const char *fmt, ...) {
    char text[HN_SK_MAX_REFUSE + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (int r = 0; r < s->world; r++)
        if ((i < 0 ? r != except : r == i) && hidet_nccl__sk_ms_alive(s, r))
            hidet_nccl__sk_ms_send(s, &s->m[r].c, HN_SK_KIND_FAIL, (uint32_t)s->world, epoch, text, strlen(text));
}

void hidet_nccl__sk_ms_linger(struct hn_sk_session *s, hn_sk_conn_t *c) {
    if (c->fd < 0) return;
    if (s->n_linger == s->cap_linger) {
        int cap = s->cap_linger ? 2 * s->cap_linger : 8;
        hn_sk_conn_t *more = realloc(s->linger, (size_t)cap * sizeof *more);
        if (more == NULL) {
            hidet_nccl__sk_conn_close(c);
            return;
        }
        s->linger = more;
        s->cap_linger = cap;
    }
    s->linger[s->n_linger++] = *c;
    hidet_nccl__sk_conn_init(c, -1);
}

void hidet_nccl__sk_ms_end_allgather(struct hn_sk_session *s) {
    free(s->ag_buf);
    free(s->ag_got);
    s->ag_buf = NULL;
    s->ag_got = NULL;
    s->ag_on = 0;
}

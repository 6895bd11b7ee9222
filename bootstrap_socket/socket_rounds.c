/* The socket rendezvous' rounds (docs/bootstrap_socket.md). With rank 0's hub: a broadcast goes
 * through rank 0 (from a root other than 0: to rank 0, then to the others); an allgather sends
 * every part to rank 0, which sends the whole to every rank. With a served rendezvous every rank
 * is a client: a root sends its bytes (data), every rank its allgather part (part), and the hub
 * sends them on. Every message is checked (kind, key, size, sender, round, session); a hub's fail
 * message (a rank died, left, or began a recovery round) ends the round at once with its reason,
 * and a decision of a recovery round this rank had not joined says it was left out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap_socket/socket_format_int.h"
#include "bootstrap_socket/socket_handshake_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "bootstrap_socket/socket_rounds_int.h"

const char *hidet_nccl__sk_who(const hn_sk_state_t *s, int rank, int job_rank, char *out, size_t cap) {
    if (s->epoch == 0 || rank == job_rank) snprintf(out, cap, "rank %d", rank);
    else snprintf(out, cap, "rank %d (job rank %d)", rank, job_rank);
    return out;
}

int hidet_nccl__sk_send_kind(const hn_sk_state_t *s, int fd, int kind, uint64_t tag, const void *body, size_t bytes,
                             double deadline, char *why, size_t why_bytes) {
    size_t cap = HN_SK_HEADER + bytes + 4;
    uint8_t *m = malloc(cap);
    if (m == NULL) return snprintf(why, why_bytes, "out of memory for %zu bytes", cap), -1;
    size_t len = hidet_nccl__sk_encode(m, cap, kind, s->key, (uint32_t)s->nranks, (uint32_t)s->rank, tag, s->session,
                                       body, (uint32_t)bytes);
    int rc = len ? hidet_nccl__sk_send(fd, m, len, deadline, why, why_bytes) : (snprintf(why, why_bytes, "too large"), -1);
    free(m);
    return rc;
}

void hidet_nccl__sk_hub_tell(hn_sk_state_t *s, uint64_t epoch, const char *why) {
    char text[HN_SK_MAX_REFUSE + 1], ignored[128];
    snprintf(text, sizeof text, "%s", why);
    double soon = hidet_nccl__now() + 0.5; /* a few bytes: at once, unless that rank has stopped reading */
    for (int r = 1; r < s->nranks; r++)
        if (s->fds[r] >= 0)
            hidet_nccl__sk_send_kind(s, s->fds[r], HN_SK_KIND_FAIL, epoch, text, strlen(text), soon, ignored,
                                     sizeof ignored);
}

void hidet_nccl__sk_hub_lost(hn_sk_state_t *s, int r, const char *why) {
    char text[HN_SK_MAX_REFUSE], w[64];
    close(s->fds[r]);
    s->fds[r] = -1;
    snprintf(text, sizeof text, "%s closed its connection to rank 0 (%s): it gave up at its deadline, failed, died or left",
             hidet_nccl__sk_who(s, r, s->jobs[r], w, sizeof w), why);
    HN_INFO("socket rendezvous: %s", text);
    hidet_nccl__sk_hub_tell(s, 0, text);
}

static const char *hub_name(const hn_sk_state_t *s) { return hidet_nccl__sk_hub(s); }

static hidet_nccl_status_t send_data(const hn_sk_state_t *s, int kind, int to, uint64_t tag, const void *buf,
                                     size_t bytes, double deadline, char *msg, size_t n) {
    char why[256];
    int fd = s->rank == 0 && !s->served ? s->fds[to] : s->fds[0];
    if (hidet_nccl__sk_send_kind(s, fd, kind, tag, buf, bytes, deadline, why, sizeof why) == 0) return HIDET_NCCL_SUCCESS;
    return hidet_nccl__say(msg, n, hidet_nccl__now() >= deadline ? HIDET_NCCL_ERROR_TIMEOUT : HIDET_NCCL_ERROR_BOOTSTRAP,
                           "rank %d could not send round %llu to %s: %s", s->rank, (unsigned long long)tag,
                           s->served ? "the rendezvous (hidet-nccl-run)" : to == 0 ? "rank 0" : "a rank", why);
}

/* A decision read in a round (of a recovery round, or a heal round: d's kind): kept for the round
 * this rank will call, and said. */
static hidet_nccl_status_t left_out_in_round(hn_sk_state_t *s, const hidet_nccl__sk_msg_t *d, uint64_t tag, char *msg,
                                             size_t n) {
    free(s->seen_bits);
    s->seen_bits = malloc(d->body_bytes);
    if (s->seen_bits != NULL) {
        memcpy(s->seen_bits, d->body, d->body_bytes);
        s->seen_epoch = d->tag;
        s->seen_kind = d->kind;
    }
    int heal = d->kind == HN_SK_KIND_HEALED;
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                           "rank %d: round %llu: %s decided %s round %llu without this rank (it had not joined "
                           "it): %d of the %u %sranks went on; call the %s round to be told which",
                           s->rank, (unsigned long long)tag, hub_name(s), heal ? "heal" : "recovery",
                           (unsigned long long)d->tag, hidet_nccl__sk_count_kept(d->body, d->world_size), d->world_size,
                           heal ? "job " : "", heal ? "heal" : "recovery");
}

/* What a client received where round `tag`'s bytes from `from` were due: the hub's word (a fail,
 * a decision) ends the round with it. */
static hidet_nccl_status_t check_data(hn_sk_state_t *s, const hidet_nccl__sk_msg_t *d, int from, uint64_t tag,
                                      void *buf, size_t bytes, char *msg, size_t n) {
    int ours = strcmp(d->key, s->key) == 0 && memcmp(d->nonce, s->session, HN_SK_NONCE) == 0;
    if (ours && d->kind == HN_SK_KIND_FAIL)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: round %llu cannot complete: %.*s", s->rank,
                               (unsigned long long)tag, (int)d->body_bytes, (const char *)d->body);
    if (ours && d->kind == HN_SK_KIND_DECIDE && d->world_size == (uint32_t)s->nranks)
        return left_out_in_round(s, d, tag, msg, n);
    if (ours && d->kind == HN_SK_KIND_HEALED && d->world_size == (uint32_t)s->job_nranks && d->tag > s->epoch)
        return left_out_in_round(s, d, tag, msg, n);
    if (d->kind != HN_SK_KIND_DATA || !ours || d->world_size != (uint32_t)s->nranks || d->rank != (uint32_t)from ||
        d->tag != tag || d->body_bytes != bytes)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d expected round %llu from rank %d (%zu bytes) and got kind %d, round %llu from "
                               "rank %u (%u bytes)%s: the ranks do not call the same bootstrap steps",
                               s->rank, (unsigned long long)tag, from, bytes, d->kind, (unsigned long long)d->tag,
                               d->rank, d->body_bytes, memcmp(d->nonce, s->session, HN_SK_NONCE) ? ", another session" : "");
    if (bytes) memcpy(buf, d->body, bytes);
    return HIDET_NCCL_SUCCESS;
}

/* Round `tag`'s bytes from rank `from`: from the hub (a client), or on rank 0's hub from rank
 * from's own connection. */
static hidet_nccl_status_t recv_data(hn_sk_state_t *s, int from, uint64_t tag, void *buf, size_t bytes,
                                     double deadline, double timeout_s, char *msg, size_t n) {
    int hub = s->rank == 0 && !s->served;
    uint8_t *m = NULL;
    size_t len = 0;
    char why[256], w[64];
    int got = hidet_nccl__sk_recv(s->fds[hub ? from : 0], deadline, &m, &len, why, sizeof why);
    if (got == 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                               "rank %d waited %.1f s for round %llu from rank %d: a rank has not called the same "
                               "bootstrap step (or has died)",
                               s->rank, timeout_s, (unsigned long long)tag, from);
    if (got < 0 && hub) {
        hidet_nccl__sk_who(s, from, s->jobs[from], w, sizeof w);
        hidet_nccl__sk_hub_lost(s, from, why);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: round %llu cannot complete: %s closed its "
                               "connection (%s): it gave up at its deadline, failed, died or left",
                               (unsigned long long)tag, w, why);
    }
    if (got < 0 && s->served)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d: round %llu: the rendezvous (hidet-nccl-run at %s:%d) is gone: %s (the launcher "
                               "of node 0 ended or was killed)", s->rank, (unsigned long long)tag, s->addr, s->port, why);
    if (got < 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: round %llu from rank 0: %s%s", s->rank,
                               (unsigned long long)tag, why,
                               strstr(why, "closed") ? " (it gave up at its deadline, or died)" : "");
    hidet_nccl__sk_msg_t d;
    hidet_nccl_status_t st;
    if (hidet_nccl__sk_parse(m, len, &d, why, sizeof why) != 0)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: round %llu from rank %d is bad: %s", s->rank,
                             (unsigned long long)tag, from, why);
    else if (hub && d.kind == HN_SK_KIND_JOIN && strcmp(d.key, s->key) == 0 && d.rank == (uint32_t)from &&
             memcmp(d.nonce, s->session, HN_SK_NONCE) == 0 && d.tag == s->epoch + 1) {
        /* that rank saw a failure and began a recovery round: so must every rank */
        s->joins[from] = d.tag;
        s->waits[from] = d.wait_ms;
        char text[HN_SK_MAX_REFUSE];
        snprintf(text, sizeof text, "%s began recovery round %llu: join it",
                 hidet_nccl__sk_who(s, from, s->jobs[from], w, sizeof w), (unsigned long long)d.tag);
        hidet_nccl__sk_hub_tell(s, d.tag, text);
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: round %llu cannot complete: %s",
                             (unsigned long long)tag, text);
    } else
        st = check_data(s, &d, from, tag, buf, bytes, msg, n);
    free(m);
    return st;
}

/* Rank 0's hub: a round starts only while every rank is connected; else every rank is told. */
static hidet_nccl_status_t hub_whole(hn_sk_state_t *s, uint64_t tag, char *msg, size_t n) {
    for (int r = 1; r < s->nranks; r++) {
        if (s->fds[r] >= 0) continue;
        char text[HN_SK_MAX_REFUSE], w[64];
        snprintf(text, sizeof text, "%s is gone since an earlier round: call the recovery round",
                 hidet_nccl__sk_who(s, r, s->jobs[r], w, sizeof w));
        hidet_nccl__sk_hub_tell(s, 0, text);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: round %llu cannot start: %s",
                               (unsigned long long)tag, text);
    }
    return HIDET_NCCL_SUCCESS;
}

/* Rank 0's hub sends to rank r; a rank gone is told to the others. */
static hidet_nccl_status_t hub_send(hn_sk_state_t *s, int r, uint64_t tag, const void *buf, size_t bytes,
                                    double deadline, char *msg, size_t n) {
    char why[256], w[64];
    if (hidet_nccl__sk_send_kind(s, s->fds[r], HN_SK_KIND_DATA, tag, buf, bytes, deadline, why, sizeof why) == 0)
        return HIDET_NCCL_SUCCESS;
    if (hidet_nccl__now() >= deadline)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT, "rank 0 could not send round %llu to rank %d: %s",
                               (unsigned long long)tag, r, why);
    hidet_nccl__sk_who(s, r, s->jobs[r], w, sizeof w);
    hidet_nccl__sk_hub_lost(s, r, why);
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: round %llu cannot complete: %s is gone (%s): it "
                           "gave up at its deadline, failed, died or left", (unsigned long long)tag, w, why);
}

hidet_nccl_status_t hidet_nccl__sk_broadcast(hn_sk_state_t *s, void *buf, size_t bytes, int root, uint64_t tag,
                                             double timeout_s, char *msg, size_t n) {
    double deadline = hidet_nccl__now() + timeout_s;
    if (s->nranks == 1) return HIDET_NCCL_SUCCESS;
    if (s->served || s->rank != 0) {
        int from = s->served ? root : 0; /* a served hub passes the root's message on as it came */
        if (s->rank == root) return send_data(s, HN_SK_KIND_DATA, 0, tag, buf, bytes, deadline, msg, n);
        return recv_data(s, from, tag, buf, bytes, deadline, timeout_s, msg, n);
    }
    hidet_nccl__sk_hub_late(s);
    hidet_nccl_status_t st = hub_whole(s, tag, msg, n);
    if (st == HIDET_NCCL_SUCCESS && root != 0) st = recv_data(s, root, tag, buf, bytes, deadline, timeout_s, msg, n);
    for (int r = 1; st == HIDET_NCCL_SUCCESS && r < s->nranks; r++)
        if (r != root) st = hub_send(s, r, tag, buf, bytes, deadline, msg, n);
    return st;
}

hidet_nccl_status_t hidet_nccl__sk_allgather(hn_sk_state_t *s, const void *send, void *recv, size_t bytes, uint64_t tag,
                                             double timeout_s, char *msg, size_t n) {
    double deadline = hidet_nccl__now() + timeout_s;
    size_t all = bytes * (size_t)s->nranks; /* at most 8 MiB (the plug-in contract) */
    if (s->nranks == 1) {
        memmove(recv, send, bytes);
        return HIDET_NCCL_SUCCESS;
    }
    if (s->served || s->rank != 0) {
        hidet_nccl_status_t st =
            send_data(s, s->served ? HN_SK_KIND_PART : HN_SK_KIND_DATA, 0, tag, send, bytes, deadline, msg, n);
        return st == HIDET_NCCL_SUCCESS ? recv_data(s, 0, tag, recv, all, deadline, timeout_s, msg, n) : st;
    }
    memmove(recv, send, bytes);
    hidet_nccl__sk_hub_late(s);
    hidet_nccl_status_t st = hub_whole(s, tag, msg, n);
    for (int r = 1; st == HIDET_NCCL_SUCCESS && r < s->nranks; r++)
        st = recv_data(s, r, tag, (uint8_t *)recv + (size_t)r * bytes, bytes, deadline, timeout_s, msg, n);
    for (int r = 1; st == HIDET_NCCL_SUCCESS && r < s->nranks; r++) st = hub_send(s, r, tag, recv, all, deadline, msg, n);
    return st;
}

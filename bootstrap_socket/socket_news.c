/* The plug-in's peer_lost for the socket rendezvous: without blocking, whether the hub has
 * already told this rank that a recovery or heal round began (the notice with its epoch, or a
 * decision, waiting on its connection), or, at rank 0's hub, whether a rank's join waits. It only peeks:
 * what waits stays for the round that reads it. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "bootstrap_socket/socket_handshake_int.h"
#include "bootstrap_socket/socket_state_int.h"

#define PEEK_BYTES (64 << 10) /* what a look sees of the bytes waiting: notices are a few hundred bytes */

/* 1 when what waits on fd says a recovery round began (why in msg), 0 when nothing does yet. A
 * closed connection or a death notice alone is not news here: a rank that ended well closes its
 * connection too, and this rank's own work may still finish. */
static int news_on(const hn_sk_state_t *s, int fd, const char *who, char *msg, size_t n) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) return 0;
    static _Thread_local uint8_t m[PEEK_BYTES];
    ssize_t got = recv(fd, m, sizeof m, MSG_PEEK | MSG_DONTWAIT);
    /* Message by message through what waits: a death notice (a fail of tag 0) may come first,
     * the round's notice behind it. */
    for (size_t at = 0; got > 0 && at + HN_SK_HEADER <= (size_t)got;) {
        size_t total;
        char why[128];
        if (hidet_nccl__sk_total(m + at, &total, why, sizeof why) != 0 || at + total > (size_t)got)
            return 0; /* not a whole message yet (or bad bytes): the round that reads it judges it */
        hidet_nccl__sk_msg_t d;
        int ours = hidet_nccl__sk_parse(m + at, total, &d, why, sizeof why) == 0 && strcmp(d.key, s->key) == 0 &&
                   memcmp(d.nonce, s->session, HN_SK_NONCE) == 0;
        at += total;
        if (!ours) continue;
        if (d.kind == HN_SK_KIND_JOIN || d.kind == HN_SK_KIND_DECIDE || d.kind == HN_SK_KIND_HEALED ||
            (d.kind == HN_SK_KIND_FAIL && d.tag != 0)) {
            hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "%s: a rank began %s round %llu (a %s waits)", who,
                            d.kind == HN_SK_KIND_HEALED ? "heal" : d.kind == HN_SK_KIND_FAIL ? "a recovery or heal" : "recovery",
                            (unsigned long long)(d.kind == HN_SK_KIND_FAIL ? d.tag : s->epoch + 1),
                            d.kind == HN_SK_KIND_JOIN ? "join" : d.kind == HN_SK_KIND_FAIL ? "notice" : "decision");
            return 1;
        }
    }
    return 0;
}

int hidet_nccl__sk_peer_lost(void *state, char *msg, size_t n) {
    const hn_sk_state_t *s = state;
    if (s->nranks == 1) return 0;
    if (s->served || s->rank != 0) return s->fds[0] >= 0 && news_on(s, s->fds[0], hidet_nccl__sk_hub(s), msg, n);
    char who[32];
    hidet_nccl__sk_hub_late(state); /* rank 0: a rank that came late is told why not */
    for (int r = 1; r < s->nranks; r++) {
        snprintf(who, sizeof who, "rank %d", r);
        if (s->fds[r] >= 0 && news_on(s, s->fds[r], who, msg, n)) return 1;
    }
    return 0;
}

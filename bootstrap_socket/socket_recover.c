/* The socket backend's recovery round (plug-in API v3's recover; docs/bootstrap_socket.md). One
 * decider: a served rendezvous (hidet-nccl-run's: bootstrap_socket/socket_session.c decides), or,
 * without one, rank 0's hub while rank 0 lives. A rank joins (join message), then waits for the
 * decision (decide message: who goes on, one bit per rank), skipping what the rounds it left
 * behind still had on the way. The decider decides as soon as every rank still connected has
 * joined, at the latest wait_s after the first join; the ranks it keeps are renumbered in their
 * old order; one it did not keep is told so. With rank 0's hub a dead rank 0 ends every
 * recovery at once: the rendezvous lived in it. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap_socket/socket_format_int.h"
#include "bootstrap_socket/socket_handshake_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "bootstrap_socket/socket_recover_int.h"
#include "bootstrap_socket/socket_rounds_int.h"

#define SET_BYTES 200

/* "0 2 5" of the ranks bits keeps (cut with "..."). */
static void list_set(const uint8_t *bits, int world, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < world && used + 16 < cap; r++)
        if (bits[r / 8] >> (r % 8) & 1) used += (size_t)snprintf(out + used, cap - used, "%s%d", used ? " " : "", r);
    if (used + 16 >= cap) snprintf(out + cap - 4, 4, "...");
}

/* The decision taken: kept[], then this rank's new place, or the news that it was left out. */
static hidet_nccl_status_t apply(hn_sk_state_t *s, uint64_t epoch, const uint8_t *bits, double wait_s,
                                 unsigned char *kept, char *msg, size_t n) {
    int below = 0, count = 0;
    for (int r = 0; r < s->nranks; r++) {
        kept[r] = bits[r / 8] >> (r % 8) & 1;
        count += kept[r];
        below += r < s->rank && kept[r];
    }
    if (!kept[s->rank]) {
        char set[SET_BYTES], w[64];
        list_set(bits, s->nranks, set, sizeof set);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "%s was left out of recovery round %llu: %s decided without it (it waits, for ranks "
                               "neither joined nor known dead, half the recovery timeout of %s; this rank's own would "
                               "be %.3f s); ranks %s (of %d) went on",
                               hidet_nccl__sk_who(s, s->rank, s->job_rank, w, sizeof w), (unsigned long long)epoch,
                               hidet_nccl__sk_hub(s), s->served ? "the rank that began the round" : "rank 0", wait_s,
                               set, s->nranks);
    }
    s->rank = below;
    s->nranks = count;
    s->epoch = epoch;
    return HIDET_NCCL_SUCCESS;
}

/* A client: join, then the decision from the hub. */
static hidet_nccl_status_t client_round(hn_sk_state_t *s, uint64_t epoch, double wait_s, double deadline,
                                        unsigned char *kept, char *msg, size_t n) {
    char why[256];
    const char *gone = s->served ? "the rendezvous (hidet-nccl-run at %s:%d) is gone: %s (the launcher of node 0 ended or "
                                   "was killed)"
                                 : "rank 0 (at %s:%d), where the rendezvous lived, is gone: %s. Without hidet-nccl-run "
                                   "the socket rendezvous lives in rank 0 and cannot outlive it: start the job with "
                                   "hidet-nccl-run (it serves the rendezvous) to survive rank 0";
    if (s->seen_bits != NULL && s->seen_epoch == epoch && s->seen_kind == HN_SK_KIND_DECIDE) /* read in a round */
        return apply(s, epoch, s->seen_bits, wait_s, kept, msg, n);
    if (s->seen_bits != NULL && s->seen_epoch == epoch) /* a heal round's decision, read in a round */
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d was left out of round %llu: %s decided heal "
                               "round %llu without it, and this rank calls recovery round %llu (the ranks do not call "
                               "the same bootstrap steps)", s->rank, (unsigned long long)epoch, hidet_nccl__sk_hub(s),
                               (unsigned long long)epoch, (unsigned long long)epoch);
    uint8_t body[4];
    double ms = wait_s * 1000.0;
    hidet_nccl__put32(body, ms > 4e9 ? 4000000000u : (uint32_t)ms);
    if (hidet_nccl__sk_send_kind(s, s->fds[0], HN_SK_KIND_JOIN, epoch, body, sizeof body, deadline, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, gone, s->addr, s->port, why);
    for (;;) {
        uint8_t *m = NULL;
        size_t len = 0;
        int got = hidet_nccl__sk_recv(s->fds[0], deadline, &m, &len, why, sizeof why);
        if (got == 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d joined recovery round %llu; no decision came from %s before the deadline",
                                   s->rank, (unsigned long long)epoch, hidet_nccl__sk_hub(s));
        if (got < 0) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, gone, s->addr, s->port, why);
        hidet_nccl__sk_msg_t d;
        hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
        int over = 1; /* a decision, or a failure */
        if (hidet_nccl__sk_parse(m, len, &d, why, sizeof why) != 0)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: recovery round %llu: a bad message from "
                                 "%s: %s", s->rank, (unsigned long long)epoch, hidet_nccl__sk_hub(s), why);
        else if (d.kind == HN_SK_KIND_DECIDE && d.tag == epoch && strcmp(d.key, s->key) == 0 &&
                 memcmp(d.nonce, s->session, HN_SK_NONCE) == 0) {
            if (d.world_size != (uint32_t)s->nranks)
                st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: recovery round %llu decided over %u "
                                     "ranks; this rank knows %d", s->rank, (unsigned long long)epoch, d.world_size,
                                     s->nranks);
            else
                st = apply(s, epoch, d.body, wait_s, kept, msg, n);
        } else if (d.kind == HN_SK_KIND_HEALED && d.tag == epoch && strcmp(d.key, s->key) == 0 &&
                   memcmp(d.nonce, s->session, HN_SK_NONCE) == 0) {
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d was left out of round %llu: %s decided "
                                 "heal round %llu while this rank called recovery round %llu (the ranks do not call the "
                                 "same bootstrap steps)", s->rank, (unsigned long long)epoch, hidet_nccl__sk_hub(s),
                                 (unsigned long long)epoch, (unsigned long long)epoch);
        } else {
            over = 0; /* what the rounds left on the way (their bytes, fails): skipped */
        }
        free(m);
        if (over) return st;
    }
}

/* Rank 0's hub: reads what rank r sent while the round waits; a join of this round counts. */
static void hub_read(hn_sk_state_t *s, int r, uint64_t epoch, double deadline, unsigned char *joined) {
    uint8_t *m = NULL;
    size_t len = 0;
    char why[256];
    int got = hidet_nccl__sk_recv(s->fds[r], deadline, &m, &len, why, sizeof why);
    if (got < 0) {
        char w[64];
        HN_INFO("socket rendezvous: recovery round %llu: %s is gone (%s)", (unsigned long long)epoch,
                hidet_nccl__sk_who(s, r, s->jobs[r], w, sizeof w), why);
        close(s->fds[r]);
        s->fds[r] = -1;
        return;
    }
    hidet_nccl__sk_msg_t d;
    if (got > 0 && hidet_nccl__sk_parse(m, len, &d, why, sizeof why) == 0 && d.kind == HN_SK_KIND_JOIN &&
        d.tag == epoch && d.rank == (uint32_t)r && strcmp(d.key, s->key) == 0 &&
        memcmp(d.nonce, s->session, HN_SK_NONCE) == 0)
        joined[r] = 1;
    free(m); /* else what its rounds left on the way: skipped */
}

/* Rank 0's hub decides: every rank still connected that joined within wait_s goes on. */
static hidet_nccl_status_t hub_round(hn_sk_state_t *s, uint64_t epoch, double wait_s, double deadline,
                                     unsigned char *kept, char *msg, size_t n) {
    int old = s->nranks;
    unsigned char *joined = calloc((size_t)old, 1);
    struct pollfd *fds = calloc((size_t)old, sizeof *fds);
    uint8_t *bits = calloc((size_t)(old + 7) / 8, 1);
    int *left = realloc(s->left, (size_t)(s->n_left + old) * sizeof *left);
    if (left != NULL) s->left = left;
    if (!joined || !fds || !bits || !left) {
        free(joined), free(fds), free(bits);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", old);
    }
    double t0 = hidet_nccl__now(), until = t0 + wait_s < deadline ? t0 + wait_s : deadline;
    joined[0] = 1;
    for (int r = 1; r < old; r++) joined[r] = s->fds[r] >= 0 && s->joins[r] == epoch;
    char text[64]; /* a rank in a round, or about to start one, hears of it at once */
    snprintf(text, sizeof text, "rank 0 began recovery round %llu: join it", (unsigned long long)epoch);
    hidet_nccl__sk_hub_tell(s, epoch, text);
    for (;;) {
        int k = 0;
        for (int r = 1; r < old; r++)
            if (s->fds[r] >= 0 && !joined[r]) fds[k++] = (struct pollfd){s->fds[r], POLLIN, 0};
        double now = hidet_nccl__now();
        if (k == 0 || now >= until) break;
        double left = until - now < 60.0 ? until - now : 60.0; /* a far end: a minute at a time (ms fits an int) */
        if (poll(fds, (nfds_t)k, (int)(left * 1000) + 1) < 0 && errno != EINTR) break;
        for (int i = 0; i < k; i++) {
            if (!fds[i].revents) continue;
            for (int r = 1; r < old; r++)
                if (s->fds[r] == fds[i].fd) hub_read(s, r, epoch, deadline, joined);
        }
    }
    int count = 0;
    for (int r = 0; r < old; r++)
        if (r == 0 || (s->fds[r] >= 0 && joined[r])) {
            bits[r / 8] |= (uint8_t)(1u << (r % 8));
            count++;
        }
    char why[128], set[SET_BYTES];
    for (int r = 1; r < old; r++) /* every rank still connected hears the decision, kept or not */
        if (s->fds[r] >= 0)
            hidet_nccl__sk_send_kind(s, s->fds[r], HN_SK_KIND_DECIDE, epoch, bits, (size_t)(old + 7) / 8, deadline, why,
                                     sizeof why);
    list_set(bits, old, set, sizeof set);
    int j = 1;
    for (int r = 1; r < old; r++) {
        if (bits[r / 8] >> (r % 8) & 1) {
            s->fds[j] = s->fds[r];
            s->jobs[j] = s->jobs[r];
            j++;
        } else if (s->fds[r] >= 0) { /* left out: it reads the decision; closed at finalize */
            s->left[s->n_left++] = s->fds[r];
        }
    }
    for (int r = j; r < old; r++) s->fds[r] = -1;
    for (int r = 0; r < old; r++) s->joins[r] = 0;
    HN_INFO("socket rendezvous: rank 0 decided recovery round %llu in %.3f s: ranks %s go on (%d of %d)",
            (unsigned long long)epoch, hidet_nccl__now() - t0, set, count, old);
    hidet_nccl_status_t st = apply(s, epoch, bits, wait_s, kept, msg, n);
    free(joined), free(fds), free(bits);
    return st;
}

hidet_nccl_status_t hidet_nccl__sk_recover(hn_sk_state_t *s, uint64_t epoch, double wait_s, double timeout_s,
                                           unsigned char *kept, char *msg, size_t n) {
    double deadline = hidet_nccl__now() + timeout_s;
    if (epoch != s->epoch + 1)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_USAGE, "recovery round %llu after round %llu",
                               (unsigned long long)epoch, (unsigned long long)s->epoch);
    if (s->nranks == 1) { /* alone: nobody to meet */
        kept[0] = 1;
        s->epoch = epoch;
        return HIDET_NCCL_SUCCESS;
    }
    if (s->served || s->rank != 0) {
        hidet_nccl_status_t st = client_round(s, epoch, wait_s, deadline, kept, msg, n);
        /* This rank gave up (its handle takes only destroy now, which another holder may delay): its
         * connection ends here, so a decider still waiting never keeps it. */
        if (st != HIDET_NCCL_SUCCESS && s->fds[0] >= 0) shutdown(s->fds[0], SHUT_RDWR);
        return st;
    }
    hidet_nccl__sk_hub_late(s);
    return hub_round(s, epoch, wait_s, deadline, kept, msg, n);
}

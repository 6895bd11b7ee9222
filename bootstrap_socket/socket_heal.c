/* The socket backend's heal round, a client's side (plug-in API v4's heal; docs/bootstrap_socket.md,
 * "Healing"). Only a served rendezvous (hidet-nccl-run's) heals: it outlives any rank, and it took
 * the restarted process in as a joiner at its hello. A member sends a heal message (the round, its
 * number, the longest wait) and waits for the decision (healed: the members that go on and the
 * joiners taken in, in the job's numbering), skipping what its earlier rounds left on the way; a
 * joiner sends nothing and waits for the decision of the next heal round that takes it in. Either
 * is renumbered to its place among the members in job order; a member the decision leaves out is
 * told so, and who went on. A side that gives up closes its connection, so a decider still
 * waiting never takes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bootstrap_socket/socket_format_int.h"
#include "bootstrap_socket/socket_handshake_int.h"
#include "bootstrap_socket/socket_heal_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "bootstrap_socket/socket_rounds_int.h"

#define SET_BYTES 200

/* "0 2 5" of the job ranks a set holds (cut with "..."); "none". */
static void list_set(const uint8_t *bits, int world, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < world && used + 16 < cap; r++)
        if (hidet_nccl__sk_bit(bits, r)) used += (size_t)snprintf(out + used, cap - used, "%s%d", used ? " " : "", r);
    if (used + 16 >= cap) snprintf(out + cap - 4, 4, "...");
    if (used == 0) snprintf(out, cap, "none");
}

/* The decision (job-numbered bits: members, then joined) taken: this rank's new place, or the news
 * that it was left out. */
static hidet_nccl_status_t apply(hn_sk_state_t *s, uint64_t epoch, const uint8_t *body, double wait_s,
                                 unsigned char *members, unsigned char *joined, char *msg, size_t n) {
    int job = s->job_nranks, set = (job + 7) / 8, below = 0, count = 0;
    for (int r = 0; r < job; r++) {
        members[r] = (unsigned char)hidet_nccl__sk_bit(body, r);
        joined[r] = (unsigned char)hidet_nccl__sk_bit(body + set, r);
        count += members[r];
        below += r < s->job_rank && members[r];
    }
    if (!members[s->job_rank] || joined[s->job_rank] != s->joining) {
        char on[SET_BYTES], in[SET_BYTES];
        list_set(body, job, on, sizeof on);
        list_set(body + set, job, in, sizeof in);
        if (s->joining) /* the rendezvous sends a joiner only the decision that takes it in */
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank %d (a restarted rank joining) got heal "
                                   "round %llu's decision, which does not take it in: members %s, joined %s",
                                   s->job_rank, (unsigned long long)epoch, on, in);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "job rank %d was left out of heal round %llu: the rendezvous (hidet-nccl-run) decided "
                               "without it (it waits, for members that have not joined, half the heal timeout of the "
                               "member that began the round; this rank's own would be %.3f s); job ranks %s (of %d) "
                               "went on, %s taken in", s->job_rank, (unsigned long long)epoch, wait_s, on, job, in);
    }
    s->rank = below;
    s->nranks = count;
    s->epoch = epoch;
    s->joining = 0;
    free(s->seen_bits);
    s->seen_bits = NULL;
    return HIDET_NCCL_SUCCESS;
}

static int ours(const hn_sk_state_t *s, const hidet_nccl__sk_msg_t *d) {
    return strcmp(d->key, s->key) == 0 && memcmp(d->nonce, s->session, HN_SK_NONCE) == 0;
}

/* Waits for the decision: a member's of round *epoch, a joiner's of any round that takes it in. */
static hidet_nccl_status_t await_decision(hn_sk_state_t *s, uint64_t *epoch, double wait_s, double deadline,
                                          double timeout_s, unsigned char *members, unsigned char *joined, char *msg,
                                          size_t n) {
    char why[256], last[HN_SK_MAX_REFUSE + 1] = "";
    for (;;) {
        uint8_t *m = NULL;
        size_t len = 0;
        int got = hidet_nccl__sk_recv(s->fds[0], deadline, &m, &len, why, sizeof why);
        if (got == 0 && s->joining)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                                   "job '%s', job rank %d (a restarted rank, taken by the rendezvous as a joiner): no heal "
                                   "round took it in within %.1f s: the ranks that went on take a restarted rank in "
                                   "when they call hidet_nccl_bootstrap_heal (hidet_nccl_comm_heal)%s%s", s->key,
                                   s->job_rank, timeout_s, last[0] ? "; the rendezvous said: " : "", last);
        if (got == 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                                   "job rank %d joined heal round %llu; no decision came from the rendezvous "
                                   "(hidet-nccl-run) within %.1f s%s%s", s->job_rank, (unsigned long long)*epoch,
                                   timeout_s, last[0] ? "; it said: " : "", last);
        if (got < 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "job rank %d: heal round: the rendezvous (hidet-nccl-run at %s:%d) is gone: %s (the "
                                   "launcher of node 0 ended or was killed)", s->job_rank, s->addr, s->port, why);
        hidet_nccl__sk_msg_t d;
        hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
        int over = 1; /* a decision, or a failure */
        if (hidet_nccl__sk_parse(m, len, &d, why, sizeof why) != 0)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank %d: heal round: a bad message from the "
                                 "rendezvous: %s", s->job_rank, why);
        else if (!ours(s, &d))
            over = 0;
        else if (d.kind == HN_SK_KIND_HEALED && d.world_size == (uint32_t)s->job_nranks &&
                 (s->joining ? d.tag > s->epoch : d.tag == *epoch)) {
            *epoch = d.tag;
            st = apply(s, d.tag, d.body, wait_s, members, joined, msg, n);
        } else if (d.kind == HN_SK_KIND_DECIDE && !s->joining && d.tag == *epoch) {
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank %d was left out of round %llu: the "
                                 "rendezvous decided recovery round %llu while this rank called heal round %llu (the "
                                 "ranks do not call the same bootstrap steps)", s->job_rank, (unsigned long long)d.tag,
                                 (unsigned long long)d.tag, (unsigned long long)*epoch);
        } else if (d.kind == HN_SK_KIND_FAIL && s->joining) {
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job '%s', job rank %d (a restarted rank): the "
                                 "rendezvous (hidet-nccl-run) gave up on it: %.*s", s->key, s->job_rank,
                                 (int)d.body_bytes, (const char *)d.body);
        } else { /* what its rounds left on the way (their bytes, fails): skipped, the last word kept */
            if (d.kind == HN_SK_KIND_FAIL) snprintf(last, sizeof last, "%.*s", (int)d.body_bytes, (const char *)d.body);
            over = 0;
        }
        free(m);
        if (over) return st;
    }
}

static hidet_nccl_status_t round_of(hn_sk_state_t *s, uint64_t *epoch, double wait_s, double timeout_s,
                                    unsigned char *members, unsigned char *joined, char *msg, size_t n) {
    double deadline = hidet_nccl__now() + timeout_s;
    char why[256];
    if (s->joining) return await_decision(s, epoch, wait_s, deadline, timeout_s, members, joined, msg, n);
    if (*epoch != s->epoch + 1)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_USAGE, "heal round %llu after round %llu",
                               (unsigned long long)*epoch, (unsigned long long)s->epoch);
    if (s->seen_bits != NULL && s->seen_epoch == *epoch) { /* decided already, read in a round */
        if (s->seen_kind == HN_SK_KIND_HEALED) return apply(s, *epoch, s->seen_bits, wait_s, members, joined, msg, n);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank %d was left out of round %llu: the "
                               "rendezvous decided recovery round %llu without it, and this rank calls heal round "
                               "%llu (the ranks do not call the same bootstrap steps)", s->job_rank,
                               (unsigned long long)*epoch, (unsigned long long)*epoch, (unsigned long long)*epoch);
    }
    uint8_t body[4];
    double ms = wait_s * 1000.0;
    hidet_nccl__put32(body, ms > 4e9 ? 4000000000u : (uint32_t)ms);
    if (hidet_nccl__sk_send_kind(s, s->fds[0], HN_SK_KIND_HEAL, *epoch, body, sizeof body, deadline, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "job rank %d: heal round %llu: the rendezvous (hidet-nccl-run at %s:%d) is gone: %s (the "
                               "launcher of node 0 ended or was killed)", s->job_rank, (unsigned long long)*epoch,
                               s->addr, s->port, why);
    return await_decision(s, epoch, wait_s, deadline, timeout_s, members, joined, msg, n);
}

hidet_nccl_status_t hidet_nccl__sk_heal(hn_sk_state_t *s, uint64_t *epoch, double wait_s, double timeout_s,
                                        unsigned char *members, unsigned char *joined, char *msg, size_t n) {
    if (!s->served && s->job_nranks > 1) {
        hidet_nccl__sk_hub_late(s); /* rank 0: a restarted rank waiting at its port is told why not, now */
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_UNSUPPORTED, "%s", HN_SK_HEAL_UNSERVED);
    }
    if (s->fds[0] < 0) { /* a job of one rank: nobody to meet, nobody to take in */
        if (*epoch != s->epoch + 1)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_USAGE, "heal round %llu after round %llu",
                                   (unsigned long long)*epoch, (unsigned long long)s->epoch);
        memset(members, 1, (size_t)s->job_nranks);
        memset(joined, 0, (size_t)s->job_nranks);
        s->epoch = *epoch;
        return HIDET_NCCL_SUCCESS;
    }
    hidet_nccl_status_t st = round_of(s, epoch, wait_s, timeout_s, members, joined, msg, n);
    /* This side gave up (its handle takes only destroy now): its connection ends here, so a decider
     * still waiting never takes it. */
    if (st != HIDET_NCCL_SUCCESS) shutdown(s->fds[0], SHUT_RDWR);
    return st;
}

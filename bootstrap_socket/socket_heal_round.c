/* A served rendezvous' session takes restarted ranks back in (docs/bootstrap_socket.md,
 * "Healing"): joiners wait, one per job rank the session lacks; a member's heal message begins a
 * heal round (every other member hears of it at once: a fail tagged with the round, news for a
 * rank waiting on a communicator); the round is decided as soon as every live member joined and
 * every job rank the session lacks has a joiner, at the latest the first heal's wait after it
 * began: every member still connected and every joiner taken in gets the same decision (the
 * members that go on and the joiners taken in, in the job's numbering), the members are
 * renumbered in job order, and a member that had not joined is left out (it reads the decision,
 * as after a recovery round). A joiner that comes after a decision waits for the next round; one
 * that dies or sends anything while it waits is dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_socket/socket_heal_round_int.h"
#include "bootstrap_socket/socket_proof_int.h"

#define SET_TEXT 256

static int formed(const struct hn_sk_session *s) {
    return s->state == HN_SS_RUNNING || s->state == HN_SS_BROKEN || s->state == HN_SS_RECOVERING ||
           s->state == HN_SS_HEALING;
}

/* The place of job rank r among the members, if it is a live one; else -1. */
static int live_place(const struct hn_sk_session *s, int r) {
    for (int i = 0; i < s->world; i++)
        if (s->m[i].job_rank == r && hidet_nccl__sk_ms_alive(s, i)) return i;
    return -1;
}

int hidet_nccl__sk_heal_lacks(const struct hn_sk_session *s, uint32_t rank, char *peer, size_t cap) {
    if (!formed(s) || rank >= (uint32_t)s->job.nranks || s->bye[rank] || live_place(s, (int)rank) >= 0) return 0;
    if (s->jn[rank].c.fd < 0) return 1;
    snprintf(peer, cap, "%s", s->jn[rank].peer);
    return 2;
}

int hidet_nccl__sk_heal_live(const struct hn_sk_session *s, uint32_t rank, char *peer, size_t cap) {
    int i = formed(s) ? live_place(s, (int)rank) : -1;
    if (i < 0) return 0;
    snprintf(peer, cap, "%s", s->m[i].peer);
    return 1;
}

void hidet_nccl__sk_heal_add_joiner(struct hn_sk_session *s, const hn_sk_admitted_t *a) {
    hn_sk_member_t *j = &s->jn[a->rank];
    hidet_nccl__sk_conn_init(&j->c, a->fd);
    j->job_rank = (int)a->rank;
    j->joined = 0;
    memcpy(j->theirs, a->theirs, HN_SK_NONCE);
    memcpy(j->ours, a->ours, HN_SK_NONCE);
    snprintf(j->peer, sizeof j->peer, "%s", a->peer);
    s->n_joiners++;
    uint8_t w[HN_SK_WELCOME_BYTES];
    char why[512];
    size_t len = hidet_nccl__sk_welcome_encode(&s->job, 1, a->rank, j->theirs, j->ours, s->nonce, w, sizeof w, why,
                                               sizeof why);
    if (len == 0 || hidet_nccl__sk_conn_push_bytes(&j->c, w, len, why, sizeof why) != 0)
        HN_WARN("socket rendezvous session %d: cannot welcome the joiner for job rank %u (%s): %s", s->id, a->rank,
                a->peer, why);
    HN_INFO("socket rendezvous session %d (%d of %d ranks, %s): a restarted process for job rank %u (%s) joins; it "
            "waits for a heal round", s->id, s->world, s->job.nranks,
            s->state == HN_SS_HEALING ? "a heal round under way" : "no heal round yet", a->rank, a->peer);
}

static void drop_joiner(struct hn_sk_session *s, int r, const char *why) {
    HN_INFO("socket rendezvous session %d: the joiner for job rank %d (%s) is dropped before a heal round took it in: "
            "%s", s->id, r, s->jn[r].peer, why);
    hidet_nccl__sk_conn_close(&s->jn[r].c);
    s->n_joiners--;
}

void hidet_nccl__sk_heal_joiner_events(struct hn_sk_session *s, const struct pollfd *fds) {
    for (int r = 0; r < s->job.nranks; r++) {
        hn_sk_conn_t *c = &s->jn[r].c;
        if (c->fd < 0 || fds[r].fd != c->fd || !fds[r].revents) continue;
        char why[256];
        if ((fds[r].revents & POLLOUT) && hidet_nccl__sk_conn_flush(c, why, sizeof why) != 0) {
            drop_joiner(s, r, why);
            continue;
        }
        if (!(fds[r].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        uint8_t *msg = NULL;
        size_t len;
        int got = hidet_nccl__sk_conn_read(c, &msg, &len, why, sizeof why);
        free(msg);
        if (got < 0) drop_joiner(s, r, why); /* it died, gave up at its deadline, or sent what is not this protocol */
        else if (got > 0) drop_joiner(s, r, "it sent a message while it waited for a heal round (a joiner sends none)");
    }
}

void hidet_nccl__sk_heal_on_heal(struct hn_sk_session *s, int i, const hidet_nccl__sk_msg_t *m) {
    char w[64];
    if (s->state == HN_SS_RECOVERING) {
        hidet_nccl__sk_ms_tell(s, i, -1, 0, "joined heal round %llu while recovery round %llu is under way: the ranks "
                               "do not call the same bootstrap steps", (unsigned long long)m->tag,
                               (unsigned long long)s->r_epoch);
        return;
    }
    if (s->state == HN_SS_HEALING) {
        if (m->tag != s->r_epoch)
            hidet_nccl__sk_ms_tell(s, i, -1, 0, "joined heal round %llu while round %llu is under way",
                                   (unsigned long long)m->tag, (unsigned long long)s->r_epoch);
        else
            s->m[i].joined = 1;
        return;
    }
    if (m->tag != s->epoch + 1) {
        hidet_nccl__sk_ms_tell(s, i, -1, 0, "joined heal round %llu; this bootstrap's next round is %llu",
                               (unsigned long long)m->tag, (unsigned long long)(s->epoch + 1));
        return;
    }
    s->state = HN_SS_HEALING;
    s->r_epoch = m->tag;
    s->r_start = hidet_nccl__now();
    s->r_until = s->r_start + m->wait_ms / 1000.0;
    hidet_nccl__sk_ms_end_allgather(s);
    for (int r = 0; r < s->world; r++) s->m[r].joined = r == i;
    hidet_nccl__sk_ms_who(s, i, w, sizeof w); /* named here: HN_INFO evaluates its arguments only at INFO */
    HN_INFO("socket rendezvous session %d: %s began heal round %llu (waits up to %.3f s; %d joiners wait)", s->id, w,
            (unsigned long long)m->tag, m->wait_ms / 1000.0, s->n_joiners);
    /* every member hears of it at once: in a round, about to start one, or waiting on a communicator */
    hidet_nccl__sk_ms_tell(s, -1, i, m->tag, "%s began heal round %llu: join it", w, (unsigned long long)m->tag);
}

static void list_bits(const uint8_t *bits, int n, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < n && used + 16 < cap; r++)
        if (hidet_nccl__sk_bit(bits, r)) used += (size_t)snprintf(out + used, cap - used, "%s%d", used ? " " : "", r);
    if (used == 0) snprintf(out, cap, "none");
}

/* Decides the heal round under way: the live members that joined, and a joiner for each job rank
 * that is not one of them, go on in job order. */
static void decide(struct hn_sk_session *s) {
    int n = s->job.nranks, old = s->world, kept = 0, taken = 0;
    size_t set = (size_t)(n + 7) / 8;
    uint8_t *body = calloc(2 * set, 1);
    hn_sk_member_t *order = calloc((size_t)n, sizeof *order);
    if (body == NULL || order == NULL) {
        free(body), free(order);
        HN_WARN("socket rendezvous session %d: out of memory deciding heal round %llu; it waits", s->id,
                (unsigned long long)s->r_epoch);
        return;
    }
    uint8_t *members = body, *joined = body + set;
    for (int i = 0; i < old; i++)
        if (hidet_nccl__sk_ms_alive(s, i) && s->m[i].joined) {
            int r = s->m[i].job_rank;
            members[r / 8] |= (uint8_t)(1u << (r % 8));
            kept++;
        }
    if (kept == 0) { /* every member that joined has died since: the joiners wait on */
        s->state = HN_SS_BROKEN;
        HN_INFO("socket rendezvous session %d: heal round %llu: every member that joined is gone", s->id,
                (unsigned long long)s->r_epoch);
        free(body), free(order);
        return;
    }
    for (int r = 0; r < n; r++)
        if (!hidet_nccl__sk_bit(members, r) && s->jn[r].c.fd >= 0) {
            members[r / 8] |= (uint8_t)(1u << (r % 8));
            joined[r / 8] |= (uint8_t)(1u << (r % 8));
            taken++;
        }
    /* every member still connected hears it (one not kept learns it was left out), and every joiner taken in */
    for (int i = 0; i < old; i++)
        if (hidet_nccl__sk_ms_alive(s, i))
            hidet_nccl__sk_ms_send(s, &s->m[i].c, HN_SK_KIND_HEALED, (uint32_t)n, s->r_epoch, body, 2 * set);
    for (int r = 0; r < n; r++)
        if (hidet_nccl__sk_bit(joined, r))
            hidet_nccl__sk_ms_send(s, &s->jn[r].c, HN_SK_KIND_HEALED, (uint32_t)n, s->r_epoch, body, 2 * set);
    for (int i = 0; i < old; i++) {
        hn_sk_member_t *p = &s->m[i];
        if (hidet_nccl__sk_ms_alive(s, i) && p->joined) {
            order[p->job_rank] = *p;
            hidet_nccl__sk_conn_init(&p->c, -1);
        } else {
            hidet_nccl__sk_ms_linger(s, &p->c); /* left out (alive, not joined): it reads the decision, then closes */
        }
    }
    for (int r = 0; r < n; r++)
        if (hidet_nccl__sk_bit(joined, r)) {
            order[r] = s->jn[r];
            hidet_nccl__sk_conn_init(&s->jn[r].c, -1);
            s->n_joiners--;
        }
    int j = 0;
    for (int r = 0; r < n; r++)
        if (hidet_nccl__sk_bit(members, r)) {
            s->m[j] = order[r];
            s->m[j++].joined = 0;
        }
    for (int r = j; r < n; r++) hidet_nccl__sk_conn_init(&s->m[r].c, -1);
    char on[SET_TEXT], in[SET_TEXT];
    list_bits(members, n, on, sizeof on);
    list_bits(joined, n, in, sizeof in);
    HN_INFO("socket rendezvous session %d: heal round %llu decided after %.3f s: job ranks %s go on (%d of %d), taken "
            "in: %s", s->id, (unsigned long long)s->r_epoch, hidet_nccl__now() - s->r_start, on, j, n, in);
    s->world = j;
    s->epoch = s->r_epoch;
    s->any_tag = 0;
    s->state = HN_SS_RUNNING;
    free(body), free(order);
}

void hidet_nccl__sk_heal_maybe_decide(struct hn_sk_session *s) {
    if (s->state != HN_SS_HEALING) return;
    int waiting = 0, lacking = 0;
    for (int i = 0; i < s->world; i++) waiting += hidet_nccl__sk_ms_alive(s, i) && !s->m[i].joined;
    for (int r = 0; r < s->job.nranks; r++) {
        int i = live_place(s, r);
        lacking += i < 0 && !s->bye[r] && s->jn[r].c.fd < 0;
    }
    if ((waiting == 0 && lacking == 0) || hidet_nccl__now() >= s->r_until) decide(s);
}

void hidet_nccl__sk_heal_orphans(struct hn_sk_session *s) {
    if (s->n_joiners == 0 || !formed(s)) return;
    for (int i = 0; i < s->world; i++)
        if (hidet_nccl__sk_ms_alive(s, i)) return;
    char text[HN_SK_MAX_REFUSE];
    snprintf(text, sizeof text, "every member of the job's bootstrap (session %d) is gone: nobody is left to take this "
             "restarted rank back in", s->id);
    HN_WARN("socket rendezvous at port %d (job key '%s'): %s (%d joiners told)", s->job.port, s->job.key, text,
            s->n_joiners);
    for (int r = 0; r < s->job.nranks; r++) {
        if (s->jn[r].c.fd < 0) continue;
        hidet_nccl__sk_ms_send(s, &s->jn[r].c, HN_SK_KIND_FAIL, (uint32_t)s->job.nranks, 0, text, strlen(text));
        hidet_nccl__sk_ms_linger(s, &s->jn[r].c);
    }
    s->n_joiners = 0;
    s->state = HN_SS_CLOSING;
}

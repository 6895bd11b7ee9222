/* One bootstrap of a job at its served rendezvous (docs/bootstrap_socket.md, "Served"). States:
 *   admitting   ranks come (socket_admit.c admits them; socket_server.c hands each to the oldest
 *               session that lacks it); all in: each gets its welcome. A rank that leaves before
 *               is logged with the ranks still missing; past admit_s the ones in are refused.
 *   running     a root's bytes go to every other rank as they came; allgather parts are gathered
 *               and the whole goes to every rank. A rank whose connection closes, or that calls
 *               another step than the others, breaks the session: every rank still connected is
 *               told at once (a fail message), and rounds wait for a recovery round.
 *   broken      rounds are dropped; a join starts a recovery round.
 *   recovering  decided as soon as every rank still connected has joined, at the latest wait_ms
 *               (the first join's) after the first join: every rank still connected gets the same
 *               decision (who goes on); those kept are renumbered in their old order, the others
 *               (late, or still in a round) keep their connection until they close it, and read
 *               in the decision that they were left out.
 *   healing     a recovery round that also takes restarted ranks back in (socket_heal_round.c):
 *               formed, the session keeps one joiner per job rank it lacks (its rank died, or a
 *               round left it out), waiting for the members' next heal round.
 * Every message of a rank is checked (key, session, size, its number, rounds in order); one that
 * fails closes its connection, as a death. A rank's bye says it leaves well: its job rank is not
 * one a restarted process takes back. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "bootstrap_socket/socket_heal_round_int.h"
#include "bootstrap_socket/socket_members_int.h"
#include "bootstrap_socket/socket_proof_int.h"
#include "bootstrap_socket/socket_session_int.h"

#define MESSAGES_PER_WAKE 64             /* from one connection before the others are looked at */
#define QUEUE_MAX ((size_t)256 << 20)    /* bytes waiting for a rank that does not read: then it is dropped */
/* A call, then out of the void function (C11 has no `return f();` there). */
#define THEN_RETURN(call) \
    do {                  \
        call;             \
        return;           \
    } while (0)

static const char *const k_state[] = {"admitting", "running", "broken", "recovering", "healing", "closing"};

hn_sk_session_t *hidet_nccl__sk_session_new(const hn_sk_state_t *job, int id, double admit_s) {
    hn_sk_session_t *s = calloc(1, sizeof *s);
    if (s == NULL || (s->m = calloc((size_t)job->nranks, sizeof *s->m)) == NULL ||
        (s->jn = calloc((size_t)job->nranks, sizeof *s->jn)) == NULL || (s->bye = calloc((size_t)job->nranks, 1)) == NULL) {
        if (s != NULL) free(s->m), free(s->jn);
        free(s);
        return NULL;
    }
    hidet_nccl__sk_job_copy(&s->job, job);
    s->id = id;
    s->admit_s = admit_s;
    s->admit_until = hidet_nccl__now() + admit_s;
    s->world = job->nranks;
    for (int r = 0; r < job->nranks; r++)
        hidet_nccl__sk_conn_init(&s->m[r].c, -1), hidet_nccl__sk_conn_init(&s->jn[r].c, -1);
    return s;
}

void hidet_nccl__sk_session_free(hn_sk_session_t *s) {
    if (s == NULL) return;
    for (int r = 0; r < s->job.nranks; r++) hidet_nccl__sk_conn_close(&s->m[r].c), hidet_nccl__sk_conn_close(&s->jn[r].c);
    for (int i = 0; i < s->n_linger; i++) hidet_nccl__sk_conn_close(&s->linger[i]);
    explicit_bzero(s->job.secret, sizeof s->job.secret);
    free(s->linger);
    free(s->ag_buf);
    free(s->ag_got);
    free(s->m);
    free(s->jn);
    free(s->bye);
    free(s);
}

/* "1, 3 (2 of 4 ranks)": the job ranks connected (in 1) or not, or no longer (in 0), while admitting. */
static void list_ranks(const hn_sk_session_t *s, int in, char *out, size_t cap) {
    size_t used = 0;
    int count = 0, shown = 0;
    out[0] = '\0';
    for (int r = 0; r < s->job.nranks; r++) {
        if (hidet_nccl__sk_ms_alive(s, r) != in) continue;
        count++;
        if (shown < 16 && used + 16 < cap) used += (size_t)snprintf(out + used, cap - used, "%s%d", shown++ ? ", " : "", r);
    }
    snprintf(out + used, cap - used, "%s (%d of %d ranks)", count > shown ? ", ..." : "", count, s->job.nranks);
}

static void push(hn_sk_session_t *s, hn_sk_conn_t *c, hn_sk_blob_t *b) {
    char why[256];
    if (c->fd >= 0 && hidet_nccl__sk_conn_push(c, b, why, sizeof why) != 0)
        HN_INFO("socket rendezvous session %d: %s (its reader sees the connection fail)", s->id, why);
}

/* The rounds cannot go on (why): every rank still connected is told. */
static void breaks(hn_sk_session_t *s, const char *why) {
    HN_INFO("socket rendezvous session %d (%d ranks): %s; its rounds wait for a recovery round", s->id, s->world, why);
    s->state = HN_SS_BROKEN;
    hidet_nccl__sk_ms_end_allgather(s);
    hidet_nccl__sk_ms_tell(s, -1, -1, 0, "%s", why);
}

/* Member i's connection is over (closed, failed, or it broke the protocol: why). */
static void gone(hn_sk_session_t *s, int i, const char *why) {
    char w[64], missing[192];
    hidet_nccl__sk_ms_who(s, i, w, sizeof w);
    list_ranks(s, 0, missing, sizeof missing); /* while it waited */
    hidet_nccl__sk_conn_close(&s->m[i].c);
    s->m[i].joined = 0;
    int closed = strcmp(why, HN_SK_PEER_CLOSED) == 0;
    switch (s->state) {
        case HN_SS_ADMITTING:
            if (--s->admitted == 0) s->state = HN_SS_CLOSING;
            HN_WARN("socket rendezvous at port %d (job key '%s'): rank %d left before every rank came (%s: it gave up "
                    "at its deadline, or died) while ranks %s never connected with a valid hello%s", s->job.port,
                    s->job.key, s->m[i].job_rank, why, missing, s->job.secret_len ? " and proof of the job secret" : "");
            break;
        case HN_SS_RUNNING: {
            char text[HN_SK_MAX_REFUSE];
            snprintf(text, sizeof text, "%s closed its connection to the rendezvous%s%s%s: it gave up at its deadline, "
                     "failed, died or left", w, closed ? "" : " (", closed ? "" : why, closed ? "" : ")");
            breaks(s, text);
            break;
        }
        default:
            HN_INFO("socket rendezvous session %d (%s): %s is gone (%s)", s->id, k_state[s->state], w, why);
    }
}

/* Member i sent what no rank of this job sends: its connection goes. */
static void violates(hn_sk_session_t *s, int i, const char *what) {
    char w[64];
    HN_WARN("socket rendezvous session %d: %s sent %s; closing its connection", s->id,
            hidet_nccl__sk_ms_who(s, i, w, sizeof w), what);
    gone(s, i, what);
}

/* The ranks called different steps: the session breaks, saying so. */
static void mismatch(hn_sk_session_t *s, int i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void mismatch(hn_sk_session_t *s, int i, const char *fmt, ...) {
    char what[160], w[64], text[HN_SK_MAX_REFUSE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(text, sizeof text, "%s %s: the ranks do not call the same bootstrap steps",
             hidet_nccl__sk_ms_who(s, i, w, sizeof w), what);
    breaks(s, text);
}

/* A round's tag must come after the last one of this epoch. */
static int tag_in_order(const hn_sk_session_t *s, uint64_t tag) {
    return tag >= s->epoch << 32 && (!s->any_tag || tag > s->last_tag);
}

static void done_round(hn_sk_session_t *s, uint64_t tag) {
    s->last_tag = tag;
    s->any_tag = 1;
}

/* A root's bytes, sent on as they came (key, size, the root's number, round, session: checked). */
static void on_broadcast(hn_sk_session_t *s, int i, const hidet_nccl__sk_msg_t *m, const uint8_t *buf, size_t len) {
    if (s->ag_on)
        THEN_RETURN(mismatch(s, i, "called broadcast round %llu while allgather round %llu was under way",
                        (unsigned long long)m->tag, (unsigned long long)s->ag_tag));
    if (!tag_in_order(s, m->tag))
        THEN_RETURN(mismatch(s, i, "sent broadcast round %llu after round %llu", (unsigned long long)m->tag,
                        (unsigned long long)s->last_tag));
    hn_sk_blob_t *b = hidet_nccl__sk_blob_new(len);
    if (b == NULL) THEN_RETURN(breaks(s, "the rendezvous ran out of memory relaying a broadcast"));
    memcpy(b->data, buf, len);
    for (int r = 0; r < s->world; r++)
        if (r != i) push(s, &s->m[r].c, b);
    hidet_nccl__sk_blob_unref(b);
    done_round(s, m->tag);
}

static void on_part(hn_sk_session_t *s, int i, const hidet_nccl__sk_msg_t *m) {
    if (!s->ag_on) {
        if (!tag_in_order(s, m->tag))
            THEN_RETURN(mismatch(s, i, "sent allgather round %llu after round %llu", (unsigned long long)m->tag,
                            (unsigned long long)s->last_tag));
        if ((size_t)m->body_bytes * (size_t)s->world > HN_SK_MAX_BODY)
            THEN_RETURN(mismatch(s, i, "called allgather round %llu with %u bytes a rank (%d ranks: over 8 MiB in all)",
                            (unsigned long long)m->tag, m->body_bytes, s->world));
        s->ag_buf = malloc((size_t)m->body_bytes * (size_t)s->world + 1);
        s->ag_got = calloc((size_t)s->world, 1);
        if (s->ag_buf == NULL || s->ag_got == NULL) THEN_RETURN(breaks(s, "the rendezvous ran out of memory for an allgather"));
        s->ag_on = 1;
        s->ag_tag = m->tag;
        s->ag_bytes = m->body_bytes;
        s->ag_count = 0;
    } else if (m->tag != s->ag_tag || m->body_bytes != s->ag_bytes || s->ag_got[i]) {
        THEN_RETURN(mismatch(s, i, "sent a part of allgather round %llu (%u bytes) while round %llu (%zu bytes a rank%s) was "
                        "under way", (unsigned long long)m->tag, m->body_bytes, (unsigned long long)s->ag_tag,
                        s->ag_bytes, s->ag_got[i] ? ", its part in" : ""));
    }
    memcpy(s->ag_buf + (size_t)i * s->ag_bytes, m->body, s->ag_bytes);
    s->ag_got[i] = 1;
    if (++s->ag_count < s->world) return;
    size_t all = s->ag_bytes * (size_t)s->world;
    hn_sk_blob_t *b = hidet_nccl__sk_blob_new(HN_SK_HEADER + all + 4);
    if (b == NULL) THEN_RETURN(breaks(s, "the rendezvous ran out of memory for an allgather's result"));
    b->len = hidet_nccl__sk_encode(b->data, b->len, HN_SK_KIND_DATA, s->job.key, (uint32_t)s->world, 0, s->ag_tag,
                                   s->nonce, s->ag_buf, (uint32_t)all);
    for (int r = 0; r < s->world; r++) push(s, &s->m[r].c, b);
    hidet_nccl__sk_blob_unref(b);
    done_round(s, s->ag_tag);
    hidet_nccl__sk_ms_end_allgather(s);
}

static void on_join(hn_sk_session_t *s, int i, const hidet_nccl__sk_msg_t *m) {
    char w[64];
    if (s->state == HN_SS_HEALING)
        THEN_RETURN(hidet_nccl__sk_ms_tell(s, i, -1, 0, "joined recovery round %llu while heal round %llu is under way: the "
                                           "ranks do not call the same bootstrap steps", (unsigned long long)m->tag,
                                           (unsigned long long)s->r_epoch));
    if (s->state == HN_SS_RECOVERING) {
        if (m->tag != s->r_epoch)
            THEN_RETURN(hidet_nccl__sk_ms_tell(s, i, -1, 0, "joined recovery round %llu while round %llu is under way",
                        (unsigned long long)m->tag, (unsigned long long)s->r_epoch));
        s->m[i].joined = 1;
        return;
    }
    if (m->tag != s->epoch + 1)
        THEN_RETURN(hidet_nccl__sk_ms_tell(s, i, -1, 0, "joined recovery round %llu; this bootstrap's next is %llu",
                                           (unsigned long long)m->tag, (unsigned long long)(s->epoch + 1)));
    s->state = HN_SS_RECOVERING;
    s->r_epoch = m->tag;
    s->r_start = hidet_nccl__now();
    s->r_until = s->r_start + m->wait_ms / 1000.0;
    hidet_nccl__sk_ms_end_allgather(s);
    for (int r = 0; r < s->world; r++) s->m[r].joined = r == i;
    hidet_nccl__sk_ms_who(s, i, w, sizeof w); /* named here: HN_INFO evaluates its arguments only at INFO */
    HN_INFO("socket rendezvous session %d: %s began recovery round %llu (waits up to %.3f s)", s->id, w,
            (unsigned long long)m->tag, m->wait_ms / 1000.0);
    /* every rank hears of it at once: in a round, about to start one, or waiting on a communicator */
    hidet_nccl__sk_ms_tell(s, -1, i, m->tag, "%s began recovery round %llu: join it", w, (unsigned long long)m->tag);
}

/* Decides the recovery round under way: every rank still connected that joined goes on. */
static void decide(hn_sk_session_t *s) {
    int old = s->world, kept = 0;
    uint8_t bits[HN_SK_MAX_WORLD / 8] = {0};
    char set[256] = "";
    size_t used = 0;
    for (int r = 0; r < old; r++)
        if (hidet_nccl__sk_ms_alive(s, r) && s->m[r].joined) {
            bits[r / 8] |= (uint8_t)(1u << (r % 8));
            kept++;
            if (used + 16 < sizeof set)
                used += (size_t)snprintf(set + used, sizeof set - used, "%s%d", used ? " " : "", s->m[r].job_rank);
        }
    if (kept == 0) { /* every rank that joined has died since */
        s->state = HN_SS_BROKEN;
        HN_INFO("socket rendezvous session %d: recovery round %llu: every rank that joined is gone", s->id,
                (unsigned long long)s->r_epoch);
        return;
    }
    for (int r = 0; r < old; r++)
        if (hidet_nccl__sk_ms_alive(s, r))
            hidet_nccl__sk_ms_send(s, &s->m[r].c, HN_SK_KIND_DECIDE, (uint32_t)old, s->r_epoch, bits,
                                   (size_t)(old + 7) / 8);
    int j = 0;
    for (int r = 0; r < old; r++) {
        if (bits[r / 8] >> (r % 8) & 1) {
            if (j != r) {
                s->m[j] = s->m[r];
                hidet_nccl__sk_conn_init(&s->m[r].c, -1);
            }
            s->m[j++].joined = 0;
        } else { /* left out: it reads the decision, then closes */
            hidet_nccl__sk_ms_linger(s, &s->m[r].c);
        }
    }
    HN_INFO("socket rendezvous session %d: recovery round %llu decided after %.3f s: job ranks %s go on (%d of %d)",
            s->id, (unsigned long long)s->r_epoch, hidet_nccl__now() - s->r_start, set, kept, old);
    s->world = kept;
    s->epoch = s->r_epoch;
    s->any_tag = 0;
    s->state = HN_SS_RUNNING;
}

static void maybe_decide(hn_sk_session_t *s) {
    if (s->state == HN_SS_HEALING) THEN_RETURN(hidet_nccl__sk_heal_maybe_decide(s));
    if (s->state != HN_SS_RECOVERING) return;
    int waiting = 0;
    for (int r = 0; r < s->world; r++) waiting += hidet_nccl__sk_ms_alive(s, r) && !s->m[r].joined;
    if (waiting == 0 || hidet_nccl__now() >= s->r_until) decide(s);
}

/* A whole message from member i. */
static void on_message(hn_sk_session_t *s, int i, const uint8_t *buf, size_t len) {
    hidet_nccl__sk_msg_t m;
    char why[320], key[HN_SK_KEY_BYTES + 1];
    if (hidet_nccl__sk_parse(buf, len, &m, why, sizeof why) != 0) THEN_RETURN(violates(s, i, why));
    if (strcmp(m.key, s->job.key) != 0 || memcmp(m.nonce, s->nonce, HN_SK_NONCE) != 0 ||
        m.world_size != (uint32_t)s->world || m.rank != (uint32_t)i || s->state == HN_SS_ADMITTING) {
        snprintf(why, sizeof why, "a message of kind %d, key '%s', world %u, rank %u%s (session %d: %d ranks, %s)",
                 m.kind, hidet_nccl__sk_printable(m.key, key), m.world_size, m.rank,
                 memcmp(m.nonce, s->nonce, HN_SK_NONCE) ? ", another session" : "", s->id, s->world, k_state[s->state]);
        THEN_RETURN(violates(s, i, why));
    }
    if (m.kind == HN_SK_KIND_JOIN) THEN_RETURN(on_join(s, i, &m));
    if (m.kind == HN_SK_KIND_HEAL) THEN_RETURN(hidet_nccl__sk_heal_on_heal(s, i, &m));
    if (m.kind == HN_SK_KIND_BYE) { /* it leaves well: its close follows */
        s->bye[s->m[i].job_rank] = 1;
        return;
    }
    if (m.kind != HN_SK_KIND_DATA && m.kind != HN_SK_KIND_PART) {
        snprintf(why, sizeof why, "a message of kind %d", m.kind);
        THEN_RETURN(violates(s, i, why));
    }
    if ((s->state == HN_SS_RECOVERING || s->state == HN_SS_HEALING) && !s->m[i].joined) /* it has not heard yet */
        THEN_RETURN(hidet_nccl__sk_ms_tell(s, i, -1, s->r_epoch, "%s round %llu is under way: join it",
                                           s->state == HN_SS_HEALING ? "heal" : "recovery", (unsigned long long)s->r_epoch));
    if (s->state != HN_SS_RUNNING) return; /* broken: the ranks were told; their rounds are dropped */
    if (m.kind == HN_SK_KIND_DATA) on_broadcast(s, i, &m, buf, len);
    else on_part(s, i, &m);
}

int hidet_nccl__sk_session_lacks(const hn_sk_session_t *s, uint32_t rank) {
    return s->state == HN_SS_ADMITTING && rank < (uint32_t)s->job.nranks && !hidet_nccl__sk_ms_alive(s, (int)rank);
}

void hidet_nccl__sk_session_add(hn_sk_session_t *s, const hn_sk_admitted_t *a) {
    hn_sk_member_t *p = &s->m[a->rank];
    hidet_nccl__sk_conn_init(&p->c, a->fd);
    p->job_rank = (int)a->rank;
    memcpy(p->theirs, a->theirs, HN_SK_NONCE);
    memcpy(p->ours, a->ours, HN_SK_NONCE);
    snprintf(p->peer, sizeof p->peer, "%s", a->peer);
    if (++s->admitted < s->job.nranks) return;
    char why[512];
    if (getrandom(s->nonce, sizeof s->nonce, 0) != (ssize_t)sizeof s->nonce) {
        HN_WARN("socket rendezvous session %d: getrandom: %s", s->id, strerror(errno));
        return;
    }
    s->state = HN_SS_RUNNING;
    for (int r = 0; r < s->job.nranks; r++) {
        uint8_t w[HN_SK_WELCOME_BYTES];
        size_t len = hidet_nccl__sk_welcome_encode(&s->job, 0, (uint32_t)r, s->m[r].theirs, s->m[r].ours, s->nonce, w,
                                                   sizeof w, why, sizeof why);
        if (len == 0 || hidet_nccl__sk_conn_push_bytes(&s->m[r].c, w, len, why, sizeof why) != 0)
            HN_WARN("socket rendezvous session %d: cannot welcome rank %d (%s): %s", s->id, r, s->m[r].peer, why);
    }
    HN_INFO("socket rendezvous session %d: every one of the %d ranks came (job key '%s'); welcomed", s->id,
            s->job.nranks, s->job.key);
}

/* Its pollfds: the members (job size slots), the joiners (by job rank), the lingering connections. */
int hidet_nccl__sk_session_nfds(const hn_sk_session_t *s) { return 2 * s->job.nranks + s->n_linger; }

static struct pollfd conn_pollfd(const hn_sk_conn_t *c) {
    return (struct pollfd){c->fd, (short)(POLLIN | (c->out ? POLLOUT : 0)), 0};
}

void hidet_nccl__sk_session_poll(const hn_sk_session_t *s, struct pollfd *fds, double *next) {
    int n = s->job.nranks;
    for (int r = 0; r < n; r++) fds[r] = conn_pollfd(&s->m[r].c), fds[n + r] = conn_pollfd(&s->jn[r].c);
    for (int i = 0; i < s->n_linger; i++) fds[2 * n + i] = conn_pollfd(&s->linger[i]);
    if (s->state == HN_SS_ADMITTING && s->admit_until < *next) *next = s->admit_until;
    if ((s->state == HN_SS_RECOVERING || s->state == HN_SS_HEALING) && s->r_until < *next) *next = s->r_until;
}

/* The ranks that came are refused (text: why); their connections linger while there is room. */
static void refuse_all(hn_sk_session_t *s, const char *text) {
    uint8_t m[HN_SK_HEADER + HN_SK_MAX_REFUSE + 4], zero[HN_SK_NONCE] = {0};
    size_t len = hidet_nccl__sk_encode(m, sizeof m, HN_SK_KIND_REFUSE, "-", 1, 0, 0, zero, text, (uint32_t)strlen(text));
    char why[256];
    for (int r = 0; r < s->job.nranks; r++) {
        if (!hidet_nccl__sk_ms_alive(s, r)) continue;
        if (hidet_nccl__sk_conn_push_bytes(&s->m[r].c, m, len, why, sizeof why) == 0)
            hidet_nccl__sk_ms_linger(s, &s->m[r].c);
        else hidet_nccl__sk_conn_close(&s->m[r].c);
    }
    s->state = HN_SS_CLOSING;
}

/* Past the admission's end: the ranks that came are refused, saying who never did. */
static void admission_over(hn_sk_session_t *s) {
    char missing[192], text[HN_SK_MAX_REFUSE];
    list_ranks(s, 0, missing, sizeof missing);
    HN_WARN("socket rendezvous at port %d (job key '%s'): ranks %s never connected with a valid hello%s within %.0f s "
            "of the first; the %d that came are refused", s->job.port, s->job.key, missing,
            s->job.secret_len ? " and proof of the job secret" : "", s->admit_s, s->admitted);
    snprintf(text, sizeof text, "ranks %s never connected within %.0f s of the first", missing, s->admit_s);
    refuse_all(s, text);
}

void hidet_nccl__sk_session_end(hn_sk_session_t *s) {
    if (s->state != HN_SS_ADMITTING || s->admitted == 0) return;
    char missing[192], came[192], text[HN_SK_MAX_REFUSE];
    list_ranks(s, 0, missing, sizeof missing);
    list_ranks(s, 1, came, sizeof came);
    HN_WARN("socket rendezvous at port %d (job key '%s'): stopped while a bootstrap of the job waited for ranks %s; "
            "the ranks that came, %s, are refused (a node started twice with one --node-rank? ranks that made a "
            "bootstrap the others did not?)", s->job.port, s->job.key, missing, came);
    snprintf(text, sizeof text, "it ended, its launcher (node 0's) done or stopped, while this bootstrap waited for "
             "ranks %s, which never came to it (a node started twice with one --node-rank? ranks that made a "
             "bootstrap the others did not?)", missing);
    refuse_all(s, text);
}

/* A lingering connection: its output goes, what it sends is dropped, its end closes it. */
static int linger_event(hn_sk_conn_t *c, short revents) {
    char why[256];
    if ((revents & POLLOUT) && hidet_nccl__sk_conn_flush(c, why, sizeof why) != 0) return -1;
    if (!(revents & (POLLIN | POLLHUP | POLLERR))) return 0;
    for (int k = 0; k < MESSAGES_PER_WAKE; k++) {
        uint8_t *msg = NULL;
        size_t len;
        int got = hidet_nccl__sk_conn_read(c, &msg, &len, why, sizeof why);
        free(msg);
        if (got < 0) return -1;
        if (got == 0) break;
    }
    return 0;
}

static void member_event(hn_sk_session_t *s, int r, short revents) {
    char why[256];
    if ((revents & POLLOUT) && hidet_nccl__sk_conn_flush(&s->m[r].c, why, sizeof why) != 0) THEN_RETURN(gone(s, r, why));
    if (s->m[r].c.queued > QUEUE_MAX) THEN_RETURN(gone(s, r, "it did not read what the rendezvous sent it (256 MiB waiting)"));
    if (!(revents & (POLLIN | POLLHUP | POLLERR))) return;
    for (int k = 0; k < MESSAGES_PER_WAKE && hidet_nccl__sk_ms_alive(s, r); k++) {
        uint8_t *msg = NULL;
        size_t len;
        int got = hidet_nccl__sk_conn_read(&s->m[r].c, &msg, &len, why, sizeof why);
        if (got < 0) THEN_RETURN(gone(s, r, why));
        if (got == 0) return;
        on_message(s, r, msg, len);
        free(msg);
    }
}

void hidet_nccl__sk_session_catch_up(hn_sk_session_t *s, uint32_t rank) {
    if (s->state == HN_SS_ADMITTING || s->state == HN_SS_CLOSING) return;
    for (int i = 0; i < s->world; i++)
        if (s->m[i].job_rank == (int)rank && hidet_nccl__sk_ms_alive(s, i)) member_event(s, i, POLLIN);
}

void hidet_nccl__sk_session_events(hn_sk_session_t *s, const struct pollfd *fds) {
    int nranks = s->job.nranks, n_linger = s->n_linger;
    const struct pollfd *lf = fds + 2 * nranks;
    for (int i = 0; i < n_linger; i++)
        if (s->linger[i].fd >= 0 && lf[i].fd == s->linger[i].fd && lf[i].revents &&
            linger_event(&s->linger[i], lf[i].revents) != 0)
            hidet_nccl__sk_conn_close(&s->linger[i]);
    int j = 0; /* closed lingering connections out */
    for (int i = 0; i < s->n_linger; i++)
        if (s->linger[i].fd >= 0) s->linger[j++] = s->linger[i];
    s->n_linger = j;
    hidet_nccl__sk_heal_joiner_events(s, fds + nranks);
    for (int r = 0; r < nranks; r++) /* members are renumbered only by decide, below */
        if (fds[r].fd >= 0 && fds[r].fd == s->m[r].c.fd && fds[r].revents) member_event(s, r, fds[r].revents);
    if (s->state == HN_SS_ADMITTING && hidet_nccl__now() >= s->admit_until) admission_over(s);
    maybe_decide(s);
    hidet_nccl__sk_heal_orphans(s);
}

int hidet_nccl__sk_session_over(const hn_sk_session_t *s) {
    if (s->n_linger > 0 || s->n_joiners > 0) return 0;
    for (int r = 0; r < s->job.nranks; r++)
        if (hidet_nccl__sk_ms_alive(s, r)) return 0;
    return 1;
}

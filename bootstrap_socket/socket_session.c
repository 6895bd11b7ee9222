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
 * Every message of a rank is checked (key, session, size, its number, rounds in order); one that
 * fails closes its connection, as a death. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

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

typedef enum { ADMITTING, RUNNING, BROKEN, RECOVERING, CLOSING } state_t;
static const char *const k_state[] = {"admitting", "running", "broken", "recovering", "closing"};

typedef struct {
    hn_sk_conn_t c; /* fd -1: gone */
    int job_rank;
    int joined; /* the recovery round under way */
    uint8_t theirs[HN_SK_NONCE], ours[HN_SK_NONCE];
    char peer[HN_SK_PEER_BYTES];
} member_t;

struct hn_sk_session {
    hn_sk_state_t job; /* key, size, secret, port */
    int id;
    state_t state;
    double admit_s, admit_until;
    uint8_t nonce[HN_SK_NONCE];
    int world, admitted;
    member_t *m; /* admitting: by job rank; then the first `world` are the ranks, in their order */
    uint64_t epoch, last_tag;
    int any_tag;
    /* an allgather under way */
    int ag_on, ag_count;
    uint64_t ag_tag;
    size_t ag_bytes;
    uint8_t *ag_buf;
    unsigned char *ag_got;
    /* a recovery round under way */
    uint64_t r_epoch;
    double r_start, r_until;
    /* connections left out or refused: read until their ranks close them */
    hn_sk_conn_t *linger;
    int n_linger, cap_linger;
};

hn_sk_session_t *hidet_nccl__sk_session_new(const hn_sk_state_t *job, int id, double admit_s) {
    hn_sk_session_t *s = calloc(1, sizeof *s);
    if (s == NULL || (s->m = calloc((size_t)job->nranks, sizeof *s->m)) == NULL) {
        free(s);
        return NULL;
    }
    hidet_nccl__sk_job_copy(&s->job, job);
    s->id = id;
    s->admit_s = admit_s;
    s->admit_until = hidet_nccl__now() + admit_s;
    s->world = job->nranks;
    for (int r = 0; r < job->nranks; r++) hidet_nccl__sk_conn_init(&s->m[r].c, -1);
    return s;
}

void hidet_nccl__sk_session_free(hn_sk_session_t *s) {
    if (s == NULL) return;
    for (int r = 0; r < s->job.nranks; r++) hidet_nccl__sk_conn_close(&s->m[r].c);
    for (int i = 0; i < s->n_linger; i++) hidet_nccl__sk_conn_close(&s->linger[i]);
    explicit_bzero(s->job.secret, sizeof s->job.secret);
    free(s->linger);
    free(s->ag_buf);
    free(s->ag_got);
    free(s->m);
    free(s);
}

static int alive(const hn_sk_session_t *s, int i) { return s->m[i].c.fd >= 0; }

/* "1, 3 (2 of 4 ranks)": the job ranks connected (in 1) or not, or no longer (in 0), while admitting. */
static void list_ranks(const hn_sk_session_t *s, int in, char *out, size_t cap) {
    size_t used = 0;
    int count = 0, shown = 0;
    out[0] = '\0';
    for (int r = 0; r < s->job.nranks; r++) {
        if (alive(s, r) != in) continue;
        count++;
        if (shown < 16 && used + 16 < cap) used += (size_t)snprintf(out + used, cap - used, "%s%d", shown++ ? ", " : "", r);
    }
    snprintf(out + used, cap - used, "%s (%d of %d ranks)", count > shown ? ", ..." : "", count, s->job.nranks);
}

/* "rank 2 (job rank 3)", or "rank 2" while the numbers are the job's. */
static const char *who(const hn_sk_session_t *s, int i, char *out, size_t cap) {
    if (s->m[i].job_rank == i) snprintf(out, cap, "rank %d", i);
    else snprintf(out, cap, "rank %d (job rank %d)", i, s->m[i].job_rank);
    return out;
}

static void push(hn_sk_session_t *s, hn_sk_conn_t *c, hn_sk_blob_t *b) {
    char why[256];
    if (c->fd >= 0 && hidet_nccl__sk_conn_push(c, b, why, sizeof why) != 0)
        HN_INFO("socket rendezvous session %d: %s (its reader sees the connection fail)", s->id, why);
}

/* A message of the session (its key, size and nonce) to c. */
static void send_kind(hn_sk_session_t *s, hn_sk_conn_t *c, int kind, uint32_t world, uint64_t tag, const void *body,
                      size_t bytes) {
    hn_sk_blob_t *b = hidet_nccl__sk_blob_new(HN_SK_HEADER + bytes + 4);
    if (b == NULL) {
        HN_WARN("socket rendezvous session %d: out of memory for a message of %zu bytes", s->id, bytes);
        return;
    }
    b->len = hidet_nccl__sk_encode(b->data, b->len, kind, s->job.key, world, 0, tag, s->nonce, body, (uint32_t)bytes);
    if (b->len) push(s, c, b);
    hidet_nccl__sk_blob_unref(b);
}

/* A fail to rank i (i < 0: every live rank but except); epoch: the recovery round it announces
 * (a rank waiting on a communicator takes it as news: socket_news.c), 0 for any other word. */
static void tell(hn_sk_session_t *s, int i, int except, uint64_t epoch, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void tell(hn_sk_session_t *s, int i, int except, uint64_t epoch, const char *fmt, ...) {
    char text[HN_SK_MAX_REFUSE + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (int r = 0; r < s->world; r++)
        if ((i < 0 ? r != except : r == i) && alive(s, r))
            send_kind(s, &s->m[r].c, HN_SK_KIND_FAIL, (uint32_t)s->world, epoch, text, strlen(text));
}

static void end_allgather(hn_sk_session_t *s) {
    free(s->ag_buf);
    free(s->ag_got);
    s->ag_buf = NULL;
    s->ag_got = NULL;
    s->ag_on = 0;
}

/* The rounds cannot go on (why): every rank still connected is told. */
static void breaks(hn_sk_session_t *s, const char *why) {
    HN_INFO("socket rendezvous session %d (%d ranks): %s; its rounds wait for a recovery round", s->id, s->world, why);
    s->state = BROKEN;
    end_allgather(s);
    tell(s, -1, -1, 0, "%s", why);
}

/* Member i's connection is over (closed, failed, or it broke the protocol: why). */
static void gone(hn_sk_session_t *s, int i, const char *why) {
    char w[64], missing[192];
    who(s, i, w, sizeof w);
    list_ranks(s, 0, missing, sizeof missing); /* while it waited */
    hidet_nccl__sk_conn_close(&s->m[i].c);
    s->m[i].joined = 0;
    int closed = strcmp(why, HN_SK_PEER_CLOSED) == 0;
    switch (s->state) {
        case ADMITTING:
            if (--s->admitted == 0) s->state = CLOSING;
            HN_WARN("socket rendezvous at port %d (job key '%s'): rank %d left before every rank came (%s: it gave up "
                    "at its deadline, or died) while ranks %s never connected with a valid hello%s", s->job.port,
                    s->job.key, s->m[i].job_rank, why, missing, s->job.secret_len ? " and proof of the job secret" : "");
            break;
        case RUNNING: {
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
    HN_WARN("socket rendezvous session %d: %s sent %s; closing its connection", s->id, who(s, i, w, sizeof w), what);
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
    snprintf(text, sizeof text, "%s %s: the ranks do not call the same bootstrap steps", who(s, i, w, sizeof w), what);
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
    end_allgather(s);
}

static void on_join(hn_sk_session_t *s, int i, const hidet_nccl__sk_msg_t *m) {
    char w[64];
    if (s->state == RECOVERING) {
        if (m->tag != s->r_epoch)
            THEN_RETURN(tell(s, i, -1, 0, "joined recovery round %llu while round %llu is under way",
                        (unsigned long long)m->tag, (unsigned long long)s->r_epoch));
        s->m[i].joined = 1;
        return;
    }
    if (m->tag != s->epoch + 1)
        THEN_RETURN(tell(s, i, -1, 0, "joined recovery round %llu; this bootstrap's next is %llu", (unsigned long long)m->tag,
                    (unsigned long long)(s->epoch + 1)));
    s->state = RECOVERING;
    s->r_epoch = m->tag;
    s->r_start = hidet_nccl__now();
    s->r_until = s->r_start + m->wait_ms / 1000.0;
    end_allgather(s);
    for (int r = 0; r < s->world; r++) s->m[r].joined = r == i;
    who(s, i, w, sizeof w); /* named here: HN_INFO evaluates its arguments only at INFO */
    HN_INFO("socket rendezvous session %d: %s began recovery round %llu (waits up to %.3f s)", s->id, w,
            (unsigned long long)m->tag, m->wait_ms / 1000.0);
    /* every rank hears of it at once: in a round, about to start one, or waiting on a communicator */
    tell(s, -1, i, m->tag, "%s began recovery round %llu: join it", w, (unsigned long long)m->tag);
}

/* Decides the recovery round under way: every rank still connected that joined goes on. */
static void decide(hn_sk_session_t *s) {
    int old = s->world, kept = 0;
    uint8_t bits[HN_SK_MAX_WORLD / 8] = {0};
    char set[256] = "";
    size_t used = 0;
    for (int r = 0; r < old; r++)
        if (alive(s, r) && s->m[r].joined) {
            bits[r / 8] |= (uint8_t)(1u << (r % 8));
            kept++;
            if (used + 16 < sizeof set) used += (size_t)snprintf(set + used, sizeof set - used, "%s%d", used ? " " : "", s->m[r].job_rank);
        }
    if (kept == 0) { /* every rank that joined has died since */
        s->state = BROKEN;
        HN_INFO("socket rendezvous session %d: recovery round %llu: every rank that joined is gone", s->id,
                (unsigned long long)s->r_epoch);
        return;
    }
    for (int r = 0; r < old; r++)
        if (alive(s, r)) send_kind(s, &s->m[r].c, HN_SK_KIND_DECIDE, (uint32_t)old, s->r_epoch, bits, (size_t)(old + 7) / 8);
    int j = 0;
    for (int r = 0; r < old; r++) {
        if (bits[r / 8] >> (r % 8) & 1) {
            if (j != r) {
                s->m[j] = s->m[r];
                hidet_nccl__sk_conn_init(&s->m[r].c, -1);
            }
            s->m[j++].joined = 0;
        } else if (alive(s, r)) { /* left out: it reads the decision, then closes */
            if (s->n_linger == s->cap_linger) {
                int cap = s->cap_linger ? 2 * s->cap_linger : 8;
                hn_sk_conn_t *more = realloc(s->linger, (size_t)cap * sizeof *more);
                if (more == NULL) {
                    hidet_nccl__sk_conn_close(&s->m[r].c);
                    continue;
                }
                s->linger = more;
                s->cap_linger = cap;
            }
            s->linger[s->n_linger++] = s->m[r].c;
            hidet_nccl__sk_conn_init(&s->m[r].c, -1);
        }
    }
    HN_INFO("socket rendezvous session %d: recovery round %llu decided after %.3f s: job ranks %s go on (%d of %d)",
            s->id, (unsigned long long)s->r_epoch, hidet_nccl__now() - s->r_start, set, kept, old);
    s->world = kept;
    s->epoch = s->r_epoch;
    s->any_tag = 0;
    s->state = RUNNING;
}

static void maybe_decide(hn_sk_session_t *s) {
    if (s->state != RECOVERING) return;
    int waiting = 0;
    for (int r = 0; r < s->world; r++) waiting += alive(s, r) && !s->m[r].joined;
    if (waiting == 0 || hidet_nccl__now() >= s->r_until) decide(s);
}

/* A whole message from member i. */
static void on_message(hn_sk_session_t *s, int i, const uint8_t *buf, size_t len) {
    hidet_nccl__sk_msg_t m;
    char why[320], key[HN_SK_KEY_BYTES + 1];
    if (hidet_nccl__sk_parse(buf, len, &m, why, sizeof why) != 0) THEN_RETURN(violates(s, i, why));
    if (strcmp(m.key, s->job.key) != 0 || memcmp(m.nonce, s->nonce, HN_SK_NONCE) != 0 ||
        m.world_size != (uint32_t)s->world || m.rank != (uint32_t)i || s->state == ADMITTING) {
        snprintf(why, sizeof why, "a message of kind %d, key '%s', world %u, rank %u%s (session %d: %d ranks, %s)",
                 m.kind, hidet_nccl__sk_printable(m.key, key), m.world_size, m.rank,
                 memcmp(m.nonce, s->nonce, HN_SK_NONCE) ? ", another session" : "", s->id, s->world, k_state[s->state]);
        THEN_RETURN(violates(s, i, why));
    }
    if (m.kind == HN_SK_KIND_JOIN) THEN_RETURN(on_join(s, i, &m));
    if (m.kind != HN_SK_KIND_DATA && m.kind != HN_SK_KIND_PART) {
        snprintf(why, sizeof why, "a message of kind %d", m.kind);
        THEN_RETURN(violates(s, i, why));
    }
    if (s->state == RECOVERING && !s->m[i].joined) /* it has not heard yet: it will */
        THEN_RETURN(tell(s, i, -1, s->r_epoch, "recovery round %llu is under way: join it", (unsigned long long)s->r_epoch));
    if (s->state != RUNNING) return; /* broken: the ranks were told; their rounds are dropped */
    if (m.kind == HN_SK_KIND_DATA) on_broadcast(s, i, &m, buf, len);
    else on_part(s, i, &m);
}

int hidet_nccl__sk_session_lacks(const hn_sk_session_t *s, uint32_t rank) {
    return s->state == ADMITTING && rank < (uint32_t)s->job.nranks && !alive(s, (int)rank);
}

void hidet_nccl__sk_session_add(hn_sk_session_t *s, const hn_sk_admitted_t *a) {
    member_t *p = &s->m[a->rank];
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
    s->state = RUNNING;
    for (int r = 0; r < s->job.nranks; r++) {
        uint8_t w[HN_SK_WELCOME_BYTES];
        size_t len = hidet_nccl__sk_welcome_encode(&s->job, (uint32_t)r, s->m[r].theirs, s->m[r].ours, s->nonce, w,
                                                   sizeof w, why, sizeof why);
        if (len == 0 || hidet_nccl__sk_conn_push_bytes(&s->m[r].c, w, len, why, sizeof why) != 0)
            HN_WARN("socket rendezvous session %d: cannot welcome rank %d (%s): %s", s->id, r, s->m[r].peer, why);
    }
    HN_INFO("socket rendezvous session %d: every one of the %d ranks came (job key '%s'); welcomed", s->id,
            s->job.nranks, s->job.key);
}

int hidet_nccl__sk_session_nfds(const hn_sk_session_t *s) { return s->job.nranks + s->n_linger; }

void hidet_nccl__sk_session_poll(const hn_sk_session_t *s, struct pollfd *fds, double *next) {
    for (int r = 0; r < s->job.nranks; r++)
        fds[r] = (struct pollfd){s->m[r].c.fd, (short)(POLLIN | (s->m[r].c.out ? POLLOUT : 0)), 0};
    for (int i = 0; i < s->n_linger; i++)
        fds[s->job.nranks + i] = (struct pollfd){s->linger[i].fd, (short)(POLLIN | (s->linger[i].out ? POLLOUT : 0)), 0};
    if (s->state == ADMITTING && s->admit_until < *next) *next = s->admit_until;
    if (s->state == RECOVERING && s->r_until < *next) *next = s->r_until;
}

/* The ranks that came are refused (text: why); their connections linger while there is room. */
static void refuse_all(hn_sk_session_t *s, const char *text) {
    uint8_t m[HN_SK_HEADER + HN_SK_MAX_REFUSE + 4], zero[HN_SK_NONCE] = {0};
    size_t len = hidet_nccl__sk_encode(m, sizeof m, HN_SK_KIND_REFUSE, "-", 1, 0, 0, zero, text, (uint32_t)strlen(text));
    char why[256];
    for (int r = 0; r < s->job.nranks; r++) {
        if (!alive(s, r)) continue;
        if (hidet_nccl__sk_conn_push_bytes(&s->m[r].c, m, len, why, sizeof why) == 0 && s->n_linger < s->cap_linger) {
            s->linger[s->n_linger++] = s->m[r].c;
            hidet_nccl__sk_conn_init(&s->m[r].c, -1);
        } else {
            hidet_nccl__sk_conn_close(&s->m[r].c);
        }
    }
    s->state = CLOSING;
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
    if (s->state != ADMITTING || s->admitted == 0) return;
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
    for (int k = 0; k < MESSAGES_PER_WAKE && alive(s, r); k++) {
        uint8_t *msg = NULL;
        size_t len;
        int got = hidet_nccl__sk_conn_read(&s->m[r].c, &msg, &len, why, sizeof why);
        if (got < 0) THEN_RETURN(gone(s, r, why));
        if (got == 0) return;
        on_message(s, r, msg, len);
        free(msg);
    }
}

void hidet_nccl__sk_session_events(hn_sk_session_t *s, const struct pollfd *fds) {
    int nranks = s->job.nranks, n_linger = s->n_linger;
    for (int i = 0; i < n_linger; i++)
        if (s->linger[i].fd >= 0 && fds[nranks + i].fd == s->linger[i].fd && fds[nranks + i].revents &&
            linger_event(&s->linger[i], fds[nranks + i].revents) != 0)
            hidet_nccl__sk_conn_close(&s->linger[i]);
    int j = 0; /* closed lingering connections out */
    for (int i = 0; i < s->n_linger; i++)
        if (s->linger[i].fd >= 0) s->linger[j++] = s->linger[i];
    s->n_linger = j;
    for (int r = 0; r < nranks; r++) /* members are renumbered only by decide, below */
        if (fds[r].fd >= 0 && fds[r].fd == s->m[r].c.fd && fds[r].revents) member_event(s, r, fds[r].revents);
    if (s->state == ADMITTING && hidet_nccl__now() >= s->admit_until) {
        if (s->cap_linger < nranks) { /* room for every rank that came */
            hn_sk_conn_t *more = realloc(s->linger, (size_t)(s->n_linger + nranks) * sizeof *more);
            if (more != NULL) {
                s->linger = more;
                s->cap_linger = s->n_linger + nranks;
            }
        }
        admission_over(s);
    }
    maybe_decide(s);
}

int hidet_nccl__sk_session_over(const hn_sk_session_t *s) {
    if (s->n_linger > 0) return 0;
    for (int r = 0; r < s->job.nranks; r++)
        if (alive(s, r)) return 0;
    return 1;
}

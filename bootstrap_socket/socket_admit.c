/* Admitting a socket rendezvous' ranks at its hub (docs/bootstrap_socket.md). The hub faces the
 * network: every connection that has not yet been admitted has its own short deadline per step,
 * and when more connect than it holds the oldest waiting one is evicted, so silent, slow or
 * flooding strangers cannot keep a rank of the job out. With a job secret, a rank proves it holds
 * it (a MAC over the hub's fresh nonce and its own) before it is admitted; a stranger gets a
 * random challenge and a refusal, nothing of the job. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_socket/socket_admit_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "bootstrap_socket/socket_proof_int.h"

#define STEP_S 5.0     /* a connection's time to say hello, or to answer the challenge */
#define LOGGED_DROPS 8 /* drops logged one by one; the rest are counted */
/* Descriptors a hub's process keeps besides the ranks' connections and those waiting: rank 0's
 * own (standard streams, the listening socket, what CUDA and the program hold); the launcher's
 * (the listening socket, a wake pipe, its ranks' pipes and logs, its watchdog). */
#define SPARE_RANK0 32
#define SPARE_SERVED 64

typedef enum { WAIT_HELLO, WAIT_PROOF } step_t;

/* A connection accepted and not yet admitted. */
typedef struct {
    int fd; /* -1: a free slot */
    step_t step;
    uint32_t rank, flags;
    double since, until; /* accepted at; the end of its current step */
    uint8_t theirs[HN_SK_NONCE], ours[HN_SK_NONCE];
    uint8_t buf[HN_SK_HEADER + HN_SK_MAC + 4]; /* a hello or a proof, the longest */
    size_t got;
    char peer[HN_SK_PEER_BYTES];
} pending_t;

struct hn_sk_admit {
    hn_sk_state_t job; /* key, size, secret, port (no descriptors) */
    int lfd, serves_rank0;
    hn_sk_take_t take;
    void *ctx;
    const char *hub; /* "rank 0", or "the rendezvous" */
    double deadline; /* of the current events call: no send waits past it */
    int cap;         /* connections that may wait at once: as many as the open-files limit leaves */
    pending_t *pend;
    long dropped;
    char last[384];
    char *msg;
    size_t n;
};

static void drop(hn_sk_admit_t *r, pending_t *p, const char *why) {
    if (r->dropped++ < LOGGED_DROPS) HN_WARN("socket rendezvous: dropped a connection from %s: %s", p->peer, why);
    else if (r->dropped == LOGGED_DROPS + 1) HN_WARN("socket rendezvous: more connections dropped; counting them");
    snprintf(r->last, sizeof r->last, "%s from %s", why, p->peer);
    close(p->fd);
    p->fd = -1;
}

void hidet_nccl__sk_send_refuse(int fd, const char *told) {
    uint8_t m[HN_SK_HEADER + HN_SK_MAX_REFUSE + 4], zero[HN_SK_NONCE] = {0};
    char why[128];
    /* Neither the job's key nor its size: a refused peer learns nothing it could join with. */
    size_t len = hidet_nccl__sk_encode(m, sizeof m, HN_SK_KIND_REFUSE, "-", 1, 0, 0, zero, told, (uint32_t)strlen(told));
    double soon = hidet_nccl__now() + 0.1; /* a few bytes into an empty socket: at once, or never */
    if (len) hidet_nccl__sk_send(fd, m, len, soon, why, sizeof why);
}

/* Tells a peer that spoke this protocol why it is not taken, then drops it. */
static void refuse(hn_sk_admit_t *r, pending_t *p, const char *told, const char *logged) {
    hidet_nccl__sk_send_refuse(p->fd, told);
    drop(r, p, logged);
}

/* Makes room: the oldest connection still owing a hello, else the oldest owing a proof (one that
 * has said a valid hello of this job is a rank in the middle of proving itself). 0 when none. */
static int evict_oldest(hn_sk_admit_t *r) {
    pending_t *old = NULL;
    for (int i = 0; i < r->cap; i++) {
        pending_t *p = &r->pend[i];
        if (p->fd < 0) continue;
        int better = old == NULL || (p->step == WAIT_HELLO && old->step == WAIT_PROOF) ||
                     (p->step == old->step && p->since < old->since);
        if (better) old = p;
    }
    if (old != NULL) drop(r, old, "evicted, the oldest of the connections waiting when another came");
    return old != NULL;
}

/* A rank that proved itself (or any hello of the job, without a secret) goes to the taker. */
static hidet_nccl_status_t admit(hn_sk_admit_t *r, pending_t *p) {
    hn_sk_admitted_t a = {.fd = p->fd, .rank = p->rank, .flags = p->flags};
    memcpy(a.theirs, p->theirs, HN_SK_NONCE);
    memcpy(a.ours, p->ours, HN_SK_NONCE);
    snprintf(a.peer, sizeof a.peer, "%s", p->peer);
    p->fd = -1;
    return r->take(r->ctx, &a, r->msg, r->n);
}

static hidet_nccl_status_t on_hello(hn_sk_admit_t *r, pending_t *p, const hidet_nccl__sk_msg_t *m) {
    const hn_sk_state_t *s = &r->job;
    char why[320], told[HN_SK_MAX_REFUSE];
    if (m->kind != HN_SK_KIND_HELLO || strcmp(m->key, s->key) != 0 || m->world_size != (uint32_t)s->nranks ||
        (m->rank == 0 && !r->serves_rank0) || m->rank >= (uint32_t)s->nranks) {
        char key[HN_SK_KEY_BYTES + 1];
        snprintf(why, sizeof why, "a message of kind %d, job key '%s', world %u, rank %u (this job: key '%s', %d "
                 "ranks)", m->kind, hidet_nccl__sk_printable(m->key, key), m->world_size, m->rank, s->key, s->nranks);
        snprintf(told, sizeof told, "%s at this address and port runs another job (its job key or number of ranks "
                 "differs from this hello's)", r->hub);
        refuse(r, p, told, why);
        return HIDET_NCCL_SUCCESS;
    }
    int has = (m->flags & HN_SK_HELLO_SECRET) != 0;
    if (has != (s->secret_len > 0)) {
        if (has)
            snprintf(told, sizeof told, "%s holds no job secret and this rank does: give every rank the same secret, "
                     "or none", r->hub);
        else
            snprintf(told, sizeof told, "%s holds a job secret and this rank does not: give every rank the same "
                     "secret (HIDET_NCCL_JOB_SECRET_FILE)", r->hub);
        refuse(r, p, told, has ? "a hello with a job secret (the hub holds none)" : "a hello without the job secret");
        return HIDET_NCCL_SUCCESS;
    }
    p->rank = m->rank;
    p->flags = m->flags;
    memcpy(p->theirs, m->nonce, HN_SK_NONCE);
    if (!has) return admit(r, p);
    uint8_t c[HN_SK_HEADER + 4];
    if (getrandom(p->ours, HN_SK_NONCE, 0) != HN_SK_NONCE)
        return hidet_nccl__say(r->msg, r->n, HIDET_NCCL_ERROR_SYSTEM, "getrandom: %s", strerror(errno));
    size_t len = hidet_nccl__sk_encode(c, sizeof c, HN_SK_KIND_CHALLENGE, s->key, (uint32_t)s->nranks, 0, 0, p->ours,
                                       NULL, 0);
    if (hidet_nccl__sk_send(p->fd, c, len, p->until < r->deadline ? p->until : r->deadline, why, sizeof why) != 0) {
        drop(r, p, why);
        return HIDET_NCCL_SUCCESS;
    }
    p->step = WAIT_PROOF;
    p->got = 0;
    p->until = hidet_nccl__now() + STEP_S;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t on_proof(hn_sk_admit_t *r, pending_t *p, const hidet_nccl__sk_msg_t *m) {
    uint8_t want[HN_MAC_BYTES];
    char why[512], told[HN_SK_MAX_REFUSE];
    if (m->kind != HN_SK_KIND_PROOF || m->rank != p->rank) {
        snprintf(why, sizeof why, "a message of kind %d from rank %u where rank %u's proof was due", m->kind, m->rank,
                 p->rank);
        drop(r, p, why);
        return HIDET_NCCL_SUCCESS;
    }
    if (hidet_nccl__sk_proof(&r->job, HN_SK_CLIENT_ROLE, p->ours, p->theirs, NULL, 0, p->rank, want, why, sizeof why) != 0)
        return hidet_nccl__say(r->msg, r->n, HIDET_NCCL_ERROR_BOOTSTRAP, "%s: %s", r->hub, why);
    if (!hidet_nccl__mac_equal(want, m->body)) {
        snprintf(why, sizeof why, "a claim to be rank %u without the job secret", p->rank);
        snprintf(told, sizeof told, "this rank's proof of the job secret does not match %s's secret", r->hub);
        refuse(r, p, told, why);
        return HIDET_NCCL_SUCCESS;
    }
    return admit(r, p);
}

/* Reads what a waiting connection has sent; acts on a whole message. */
static hidet_nccl_status_t step(hn_sk_admit_t *r, pending_t *p) {
    size_t want = HN_SK_HEADER;
    char why[256];
    if (p->got >= HN_SK_HEADER && hidet_nccl__sk_total(p->buf, &want, why, sizeof why) != 0) {
        drop(r, p, why);
        return HIDET_NCCL_SUCCESS;
    }
    if (want > sizeof p->buf) {
        snprintf(why, sizeof why, "a message of %zu bytes where a %s of at most %zu was due", want,
                 p->step == WAIT_HELLO ? "hello" : "proof", sizeof p->buf);
        drop(r, p, why);
        return HIDET_NCCL_SUCCESS;
    }
    ssize_t got = recv(p->fd, p->buf + p->got, want - p->got, 0);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        drop(r, p, got == 0 ? "closed before it was taken" : strerror(errno));
        return HIDET_NCCL_SUCCESS;
    }
    if (got < 0) return HIDET_NCCL_SUCCESS;
    p->got += (size_t)got;
    if (p->got == HN_SK_HEADER && want == HN_SK_HEADER) return step(r, p); /* the header told the length */
    if (p->got < want) return HIDET_NCCL_SUCCESS;
    hidet_nccl__sk_msg_t m;
    if (hidet_nccl__sk_parse(p->buf, p->got, &m, why, sizeof why) != 0) {
        drop(r, p, why);
        return HIDET_NCCL_SUCCESS;
    }
    return p->step == WAIT_HELLO ? on_hello(r, p, &m) : on_proof(r, p, &m);
}

static pending_t *free_slot(hn_sk_admit_t *r) {
    for (int i = 0; i < r->cap; i++)
        if (r->pend[i].fd < 0) return &r->pend[i];
    return NULL;
}

/* Takes every waiting connection off the listening socket: the oldest waiting one makes room
 * when the table (or the process's descriptors) is full. Each is read at once: a rank sends
 * its hello as soon as it connects. */
static hidet_nccl_status_t accept_all(hn_sk_admit_t *r) {
    /* At most a quarter of the table per wait: proofs already in their sockets are read before
     * a flood can push their connections out. */
    for (int tries = 0; tries < r->cap / 4; tries++) {
        char peer[HN_SK_PEER_BYTES], why[256];
        int fd = hidet_nccl__sk_accept(r->lfd, peer, sizeof peer, why, sizeof why);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            if (!evict_oldest(r)) { /* every descriptor is an admitted rank's: wait, do not spin */
                struct timespec ms = {0, 10000000L};
                nanosleep(&ms, NULL);
                return HIDET_NCCL_SUCCESS;
            }
            continue;
        }
        if (fd < 0) return HIDET_NCCL_SUCCESS;
        pending_t *p = free_slot(r);
        if (p == NULL) {
            evict_oldest(r);
            p = free_slot(r);
        }
        double now = hidet_nccl__now();
        *p = (pending_t){.fd = fd, .step = WAIT_HELLO, .since = now, .until = now + STEP_S};
        snprintf(p->peer, sizeof p->peer, "%s", peer);
        hidet_nccl_status_t st = step(r, p);
        if (st != HIDET_NCCL_SUCCESS) return st;
    }
    return HIDET_NCCL_SUCCESS;
}

/* How many connections may wait at once at the hub: up to HN_SK_PENDING_MAX, as many as the
 * open-files limit (raised to the hard one where it is lower) leaves beside the ranks'
 * connections and the process's own; 0 and why when it leaves fewer than HN_SK_PENDING_MIN. */
static int room(const hn_sk_state_t *job, int serves_rank0, char *msg, size_t n) {
    int conns = serves_rank0 ? job->nranks : job->nranks - 1, spare = serves_rank0 ? SPARE_SERVED : SPARE_RANK0;
    /* a served rendezvous: room for two bootstraps of the job at once before the waiting ones */
    int hard, limit = hidet_nccl__sk_enough_files(conns * (serves_rank0 ? 2 : 1) + spare + HN_SK_PENDING_MAX, &hard);
    int need = conns + spare + HN_SK_PENDING_MIN;
    if (limit >= need) {
        if (limit - conns - spare >= HN_SK_PENDING_MAX) return HN_SK_PENDING_MAX;
        HN_INFO("socket rendezvous (%d ranks): the open-files limit %d leaves room for %d connections waiting to be "
                "admitted at once (of %d)", job->nranks, limit, limit - conns - spare, HN_SK_PENDING_MAX);
        return limit - conns - spare;
    }
    char hard_s[48] = "";
    if (hard != limit) snprintf(hard_s, sizeof hard_s, ", the hard limit %d", hard);
    hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM,
                    "%s: the open-files limit (ulimit -n) is %d%s: too few for the socket rendezvous of %d ranks, "
                    "whose hub needs at least %d descriptors (%d for the ranks' connections, %d for connections "
                    "waiting to be admitted, %d for the process); raise it (ulimit -n %d or more)",
                    serves_rank0 ? "the rendezvous" : "rank 0", limit, hard_s, job->nranks, need, conns,
                    HN_SK_PENDING_MIN, spare, need);
    return 0;
}

hidet_nccl_status_t hidet_nccl__sk_admit_new(const hn_sk_state_t *job, int lfd, int serves_rank0, hn_sk_take_t take,
                                             void *ctx, hn_sk_admit_t **out, char *msg, size_t n) {
    int cap = room(job, serves_rank0, msg, n);
    if (cap == 0) return HIDET_NCCL_ERROR_SYSTEM;
    hn_sk_admit_t *r = calloc(1, sizeof *r);
    pending_t *pend = calloc((size_t)cap, sizeof *pend);
    if (r == NULL || pend == NULL) {
        free(r);
        free(pend);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for the admission table");
    }
    r->cap = cap;
    r->pend = pend;
    hidet_nccl__sk_job_copy(&r->job, job);
    r->lfd = lfd;
    r->serves_rank0 = serves_rank0;
    r->hub = serves_rank0 ? "the rendezvous" : "rank 0";
    r->take = take;
    r->ctx = ctx;
    for (int i = 0; i < r->cap; i++) r->pend[i].fd = -1;
    *out = r;
    return HIDET_NCCL_SUCCESS;
}

void hidet_nccl__sk_admit_retake(hn_sk_admit_t *r, hn_sk_take_t take, void *ctx) {
    r->take = take;
    r->ctx = ctx;
}

void hidet_nccl__sk_admit_free(hn_sk_admit_t *r) {
    if (r == NULL) return;
    for (int i = 0; i < r->cap; i++)
        if (r->pend[i].fd >= 0) close(r->pend[i].fd);
    if (r->dropped > LOGGED_DROPS)
        HN_WARN("socket rendezvous: %ld connections dropped in all (the first %d logged)", r->dropped, LOGGED_DROPS);
    explicit_bzero(r->job.secret, sizeof r->job.secret);
    free(r->pend);
    free(r);
}

int hidet_nccl__sk_admit_nfds(const hn_sk_admit_t *r) { return 1 + r->cap; }

void hidet_nccl__sk_admit_poll(const hn_sk_admit_t *r, struct pollfd *fds, double *next) {
    fds[0] = (struct pollfd){r->lfd, POLLIN, 0};
    for (int i = 0; i < r->cap; i++) {
        fds[1 + i] = (struct pollfd){r->pend[i].fd, POLLIN, 0};
        if (r->pend[i].fd >= 0 && r->pend[i].until < *next) *next = r->pend[i].until;
    }
}

hidet_nccl_status_t hidet_nccl__sk_admit_events(hn_sk_admit_t *r, const struct pollfd *fds, double deadline,
                                                char *msg, size_t n) {
    r->deadline = deadline;
    r->msg = msg;
    r->n = n;
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    for (int i = 0; i < r->cap && st == HIDET_NCCL_SUCCESS; i++)
        if (r->pend[i].fd >= 0 && r->pend[i].fd == fds[1 + i].fd && (fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
            st = step(r, &r->pend[i]);
    if (st == HIDET_NCCL_SUCCESS && (fds[0].revents & POLLIN)) st = accept_all(r);
    if (st != HIDET_NCCL_SUCCESS) return st;
    double now = hidet_nccl__now();
    for (int i = 0; i < r->cap; i++)
        if (r->pend[i].fd >= 0 && now >= r->pend[i].until)
            drop(r, &r->pend[i], r->pend[i].step == WAIT_HELLO ? "no hello within its time" : "no proof within its time");
    return HIDET_NCCL_SUCCESS;
}

long hidet_nccl__sk_admit_dropped(const hn_sk_admit_t *r, const char **last) {
    *last = r->last;
    return r->dropped;
}

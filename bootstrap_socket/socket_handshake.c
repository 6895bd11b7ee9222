/* How the socket rendezvous' ranks meet (docs/bootstrap_socket.md). Rank 0 faces the network:
 * every connection that has not yet been admitted has its own short deadline per step, and
 * when more connect than it holds the oldest waiting one is evicted, so silent, slow or
 * flooding strangers cannot keep a rank of the job out. With a job secret, a rank proves it
 * holds it (a MAC over rank 0's fresh nonce and its own) before it is admitted, and rank 0
 * proves it in its welcome; a stranger gets nothing of the job. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_socket/socket_handshake_int.h"
#include "bootstrap_socket/socket_io_int.h"

#define STEP_S 5.0       /* a connection's time to say hello, or to answer the challenge */
#define LOGGED_DROPS 8   /* drops logged one by one; the rest are counted */
#define PEER_BYTES 80

/* ---------------------------------------------------------------- proofs of the secret */

/* MAC under the secret of: role, a, b, extra, rank, world size, key. */
static int proof(const hn_sk_state_t *s, const char *role, const uint8_t a[HN_SK_NONCE], const uint8_t b[HN_SK_NONCE],
                 const uint8_t *extra, size_t extra_len, uint32_t rank, uint8_t out[HN_MAC_BYTES], char *why,
                 size_t why_bytes) {
    uint8_t data[64 + 2 * HN_SK_NONCE + HN_SK_NONCE + 8 + HN_SK_KEY_BYTES];
    size_t len = strlen(role) + 1;
    memcpy(data, role, len);
    memcpy(data + len, a, HN_SK_NONCE);
    memcpy(data + len + HN_SK_NONCE, b, HN_SK_NONCE);
    len += 2 * HN_SK_NONCE;
    if (extra_len) memcpy(data + len, extra, extra_len);
    len += extra_len;
    hidet_nccl__put32(data + len, rank);
    hidet_nccl__put32(data + len + 4, (uint32_t)s->nranks);
    len += 8;
    memset(data + len, 0, HN_SK_KEY_BYTES);
    memcpy(data + len, s->key, strlen(s->key));
    len += HN_SK_KEY_BYTES;
    return hidet_nccl__mac(s->secret, s->secret_len, data, len, out, why, why_bytes);
}

/* A key from the network as it may be printed: every byte outside ' ' .. '~' as '?'. */
static const char *printable(const char *key, char out[HN_SK_KEY_BYTES + 1]) {
    size_t i = 0;
    for (; key[i] != '\0' && i < HN_SK_KEY_BYTES; i++) out[i] = key[i] >= ' ' && key[i] <= '~' ? key[i] : '?';
    out[i] = '\0';
    return out;
}

#define CLIENT_ROLE "hidet-nccl socket rendezvous 2: a rank's proof"
#define SERVER_ROLE "hidet-nccl socket rendezvous 2: rank 0's proof"

/* ---------------------------------------------------------------- rank 0 */

typedef enum { WAIT_HELLO, WAIT_PROOF } step_t;

/* A connection rank 0 has accepted and not yet admitted. */
typedef struct {
    int fd; /* -1: a free slot */
    step_t step;
    uint32_t rank, flags;
    double since, until; /* accepted at; the end of its current step */
    uint8_t theirs[HN_SK_NONCE], ours[HN_SK_NONCE];
    uint8_t buf[HN_SK_HEADER + HN_SK_MAC + 4]; /* a hello or a proof, the longest */
    size_t got;
    char peer[PEER_BYTES];
} pending_t;

typedef struct {
    hn_sk_state_t *s;
    double deadline;
    pending_t *pend;
    int cap;
    uint8_t *theirs, *ours; /* per admitted rank: its nonce, rank 0's challenge */
    char *peers;            /* per admitted rank: where it connected from */
    long dropped;
    char last[384];
    char *msg;
    size_t n;
} root_t;

static void drop(root_t *r, pending_t *p, const char *why) {
    if (r->dropped++ < LOGGED_DROPS) HN_WARN("socket rendezvous: dropped a connection from %s: %s", p->peer, why);
    snprintf(r->last, sizeof r->last, "%s from %s", why, p->peer);
    close(p->fd);
    p->fd = -1;
}

/* Tells a peer that spoke this protocol why it is not taken, then drops it. */
static void refuse(root_t *r, pending_t *p, const char *told, const char *logged) {
    uint8_t m[HN_SK_HEADER + HN_SK_MAX_REFUSE + 4], zero[HN_SK_NONCE] = {0};
    char why[128];
    /* Neither the job's key nor its size: a refused peer learns nothing it could join with. */
    size_t len = hidet_nccl__sk_encode(m, sizeof m, HN_SK_KIND_REFUSE, "-", 1, 0, 0, zero, told, (uint32_t)strlen(told));
    double soon = hidet_nccl__now() + 0.1; /* a few bytes into an empty socket: at once, or never */
    if (len) hidet_nccl__sk_send(p->fd, m, len, soon < r->deadline ? soon : r->deadline, why, sizeof why);
    drop(r, p, logged);
}

/* Makes room: the oldest connection still owing a hello, else the oldest owing a proof (one that
 * has said a valid hello of this job is a rank in the middle of proving itself). 0 when none. */
static int evict_oldest(root_t *r) {
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

/* A rank that proved itself (or any hello of the job, without a secret) becomes a rank. */
static hidet_nccl_status_t admit(root_t *r, pending_t *p) {
    hn_sk_state_t *s = r->s;
    if (s->fds[p->rank] >= 0)
        return hidet_nccl__say(r->msg, r->n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %u connected twice to rank 0 (port %d): from %s and from %s. Two jobs with the "
                               "job key '%s'%s on one address and port? Give each job its own HIDET_NCCL_JOB_KEY or "
                               "MASTER_PORT",
                               p->rank, s->port, r->peers + (size_t)p->rank * PEER_BYTES, p->peer, s->key,
                               s->secret_len ? " and one secret" : "");
    s->fds[p->rank] = p->fd;
    memcpy(r->theirs + (size_t)p->rank * HN_SK_NONCE, p->theirs, HN_SK_NONCE);
    memcpy(r->ours + (size_t)p->rank * HN_SK_NONCE, p->ours, HN_SK_NONCE);
    snprintf(r->peers + (size_t)p->rank * PEER_BYTES, PEER_BYTES, "%s", p->peer);
    p->fd = -1;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t on_hello(root_t *r, pending_t *p, const hidet_nccl__sk_msg_t *m) {
    hn_sk_state_t *s = r->s;
    char why[320];
    if (m->kind != HN_SK_KIND_HELLO || strcmp(m->key, s->key) != 0 || m->world_size != (uint32_t)s->nranks ||
        m->rank == 0 || m->rank >= (uint32_t)s->nranks) {
        char key[HN_SK_KEY_BYTES + 1];
        snprintf(why, sizeof why, "a message of kind %d, job key '%s', world %u, rank %u (this job: key '%s', %d "
                 "ranks)", m->kind, printable(m->key, key), m->world_size, m->rank, s->key, s->nranks);
        refuse(r, p, "rank 0 at this address and port runs another job (its job key or number of ranks differs "
               "from this hello's)", why);
        return HIDET_NCCL_SUCCESS;
    }
    int has = (m->flags & HN_SK_HELLO_SECRET) != 0;
    if (has != (s->secret_len > 0)) {
        refuse(r, p, has ? "rank 0 holds no job secret and this rank does: give every rank the same secret, or none"
                         : "rank 0 holds a job secret and this rank does not: give every rank the same secret "
                           "(HIDET_NCCL_JOB_SECRET_FILE)",
               has ? "a hello with a job secret (rank 0 holds none)" : "a hello without the job secret");
        return HIDET_NCCL_SUCCESS;
    }
    p->rank = m->rank;
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

static hidet_nccl_status_t on_proof(root_t *r, pending_t *p, const hidet_nccl__sk_msg_t *m) {
    uint8_t want[HN_MAC_BYTES];
    char why[512];
    if (m->kind != HN_SK_KIND_PROOF || m->rank != p->rank) {
        snprintf(why, sizeof why, "a message of kind %d from rank %u where rank %u's proof was due", m->kind, m->rank,
                 p->rank);
        drop(r, p, why);
        return HIDET_NCCL_SUCCESS;
    }
    if (proof(r->s, CLIENT_ROLE, p->ours, p->theirs, NULL, 0, p->rank, want, why, sizeof why) != 0)
        return hidet_nccl__say(r->msg, r->n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: %s", why);
    if (!hidet_nccl__mac_equal(want, m->body)) {
        snprintf(why, sizeof why, "a claim to be rank %u without the job secret", p->rank);
        refuse(r, p, "this rank's proof of the job secret does not match rank 0's secret", why);
        return HIDET_NCCL_SUCCESS;
    }
    return admit(r, p);
}

/* Reads what a waiting connection has sent; acts on a whole message. */
static hidet_nccl_status_t step(root_t *r, pending_t *p) {
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

/* Takes every waiting connection off the listening socket: the oldest waiting one makes room
 * when the table (or the process's descriptors) is full. Each is read at once: a rank sends
 * its hello as soon as it connects. */
static hidet_nccl_status_t accept_all(root_t *r, int lfd) {
    /* At most a quarter of the table per wait: proofs already in their sockets are read before
     * a flood can push their connections out. */
    for (int tries = 0; tries < r->cap / 4; tries++) {
        char peer[PEER_BYTES], why[256];
        int fd = hidet_nccl__sk_accept(lfd, peer, sizeof peer, why, sizeof why);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            if (!evict_oldest(r)) { /* every descriptor is an admitted rank's: wait, do not spin */
                struct timespec ms = {0, 10000000L};
                nanosleep(&ms, NULL);
                return HIDET_NCCL_SUCCESS;
            }
            continue;
        }
        if (fd < 0) return HIDET_NCCL_SUCCESS;
        pending_t *p = NULL;
        for (int i = 0; i < r->cap && p == NULL; i++)
            if (r->pend[i].fd < 0) p = &r->pend[i];
        if (p == NULL) {
            evict_oldest(r);
            for (int i = 0; i < r->cap && p == NULL; i++)
                if (r->pend[i].fd < 0) p = &r->pend[i];
        }
        double now = hidet_nccl__now();
        *p = (pending_t){.fd = fd, .step = WAIT_HELLO, .since = now, .until = now + STEP_S};
        snprintf(p->peer, sizeof p->peer, "%s", peer);
        hidet_nccl_status_t st = step(r, p);
        if (st != HIDET_NCCL_SUCCESS) return st;
    }
    return HIDET_NCCL_SUCCESS;
}

static int joined(const hn_sk_state_t *s) {
    int n = 0;
    for (int i = 1; i < s->nranks; i++) n += s->fds[i] >= 0;
    return n;
}

/* "1, 3 (2 of 4 ranks)" for the ranks r >= 1 not admitted. */
static void list_missing(const hn_sk_state_t *s, char *out, size_t cap) {
    size_t used = 0;
    int count = 0, shown = 0;
    out[0] = '\0';
    for (int r = 1; r < s->nranks; r++) {
        if (s->fds[r] >= 0) continue;
        count++;
        if (shown < 16 && used + 16 < cap) used += (size_t)snprintf(out + used, cap - used, "%s%d", shown++ ? ", " : "", r);
    }
    snprintf(out + used, cap - used, "%s (%d of %d ranks)", count > shown ? ", ..." : "", count, s->nranks);
}

static hidet_nccl_status_t timed_out(root_t *r) {
    char missing[192];
    list_missing(r->s, missing, sizeof missing);
    return hidet_nccl__say(r->msg, r->n, HIDET_NCCL_ERROR_TIMEOUT,
                           "rank 0 listened on port %d until its deadline; ranks %s never connected with a valid "
                           "hello%s (to %s:%d, job key '%s'); %ld other connections dropped%s%s",
                           r->s->port, missing, r->s->secret_len ? " and proof of the job secret" : "", r->s->addr,
                           r->s->port, r->s->key, r->dropped, r->last[0] ? ", the last: " : "", r->last);
}

/* One wait: poll the listening socket and every waiting connection until something happens or
 * the first of their deadlines; then accept, read, and drop whatever is past its step's end. */
static hidet_nccl_status_t wait_once(root_t *r, int lfd, struct pollfd *fds) {
    double now = hidet_nccl__now(), next = r->deadline;
    int k = 0;
    fds[k++] = (struct pollfd){lfd, POLLIN, 0};
    for (int i = 0; i < r->cap; i++) {
        fds[k++] = (struct pollfd){r->pend[i].fd, POLLIN, 0};
        if (r->pend[i].fd >= 0 && r->pend[i].until < next) next = r->pend[i].until;
    }
    if (next - now > 60.0) next = now + 60.0; /* a far deadline: wake each minute (ms fits an int) */
    int ms = next > now ? (int)((next - now) * 1000) + 1 : 0;
    if (poll(fds, (nfds_t)k, ms) < 0 && errno != EINTR)
        return hidet_nccl__say(r->msg, r->n, HIDET_NCCL_ERROR_SYSTEM, "rank 0: poll: %s", strerror(errno));
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    for (int i = 0; i < r->cap && st == HIDET_NCCL_SUCCESS; i++)
        if (r->pend[i].fd >= 0 && (fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR))) st = step(r, &r->pend[i]);
    if (st == HIDET_NCCL_SUCCESS && (fds[0].revents & POLLIN)) st = accept_all(r, lfd);
    if (st != HIDET_NCCL_SUCCESS) return st;
    now = hidet_nccl__now();
    for (int i = 0; i < r->cap; i++)
        if (r->pend[i].fd >= 0 && now >= r->pend[i].until)
            drop(r, &r->pend[i], r->pend[i].step == WAIT_HELLO ? "no hello within its time" : "no proof within its time");
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t welcome(root_t *r, int rank) {
    hn_sk_state_t *s = r->s;
    uint8_t body[HN_SK_NONCE + HN_MAC_BYTES], m[HN_SK_HEADER + sizeof body + 4];
    char why[512];
    size_t body_len = HN_SK_NONCE;
    memcpy(body, r->theirs + (size_t)rank * HN_SK_NONCE, HN_SK_NONCE);
    if (s->secret_len) {
        if (proof(s, SERVER_ROLE, body, r->ours + (size_t)rank * HN_SK_NONCE, s->session, HN_SK_NONCE, (uint32_t)rank,
                  body + HN_SK_NONCE, why, sizeof why) != 0)
            return hidet_nccl__say(r->msg, r->n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: %s", why);
        body_len += HN_MAC_BYTES;
    }
    size_t len = hidet_nccl__sk_encode(m, sizeof m, HN_SK_KIND_WELCOME, s->key, (uint32_t)s->nranks, 0, 0, s->session,
                                       body, (uint32_t)body_len);
    if (hidet_nccl__sk_send(s->fds[rank], m, len, r->deadline, why, sizeof why) != 0)
        return hidet_nccl__say(r->msg, r->n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0 could not welcome rank %d (%s): %s",
                               rank, r->peers + (size_t)rank * PEER_BYTES, why);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__sk_root_handshake(hn_sk_state_t *s, double deadline, char *msg, size_t n) {
    char why[512];
    int lfd = hidet_nccl__sk_listen(s->port, why, sizeof why);
    if (lfd < 0) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: %s", why);
    root_t r = {.s = s, .deadline = deadline, .cap = HN_SK_PENDING_MAX, .msg = msg, .n = n};
    r.pend = calloc((size_t)r.cap, sizeof *r.pend);
    struct pollfd *fds = calloc((size_t)r.cap + 1, sizeof *fds);
    r.theirs = calloc((size_t)s->nranks, HN_SK_NONCE);
    r.ours = calloc((size_t)s->nranks, HN_SK_NONCE);
    r.peers = calloc((size_t)s->nranks, PEER_BYTES);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (!r.pend || !fds || !r.theirs || !r.ours || !r.peers)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    for (int i = 0; r.pend && i < r.cap; i++) r.pend[i].fd = -1;
    while (st == HIDET_NCCL_SUCCESS && joined(s) < s->nranks - 1)
        st = hidet_nccl__now() >= deadline ? timed_out(&r) : wait_once(&r, lfd, fds);
    for (int i = 0; r.pend && i < r.cap; i++)
        if (r.pend[i].fd >= 0) close(r.pend[i].fd);
    close(lfd);
    if (r.dropped > LOGGED_DROPS)
        HN_WARN("socket rendezvous: %ld connections dropped in all (the first %d logged)", r.dropped, LOGGED_DROPS);
    for (int rank = 1; st == HIDET_NCCL_SUCCESS && rank < s->nranks; rank++) st = welcome(&r, rank);
    free(r.pend);
    free(fds);
    free(r.theirs);
    free(r.ours);
    free(r.peers);
    return st;
}

/* ---------------------------------------------------------------- the other ranks */

/* The next message from rank 0: 1 and *m (buf to free), 0 past the deadline, -1 closed (why). */
static int next(int fd, double deadline, uint8_t **buf, hidet_nccl__sk_msg_t *m, char *why, size_t why_bytes) {
    size_t len = 0;
    int got = hidet_nccl__sk_recv(fd, deadline, buf, &len, why, why_bytes);
    if (got <= 0) return got;
    if (hidet_nccl__sk_parse(*buf, len, m, why, why_bytes) != 0) return -2;
    return 1;
}

/* rank 0's welcome: this rank's nonce back and, with a secret, rank 0's proof. */
static hidet_nccl_status_t check_welcome(hn_sk_state_t *s, const hidet_nccl__sk_msg_t *m, const uint8_t *nonce,
                                         const uint8_t *challenge, char *msg, size_t n) {
    uint8_t want[HN_MAC_BYTES];
    char why[512], key[HN_SK_KEY_BYTES + 1];
    if (m->kind != HN_SK_KIND_WELCOME || strcmp(m->key, s->key) != 0 || m->world_size != (uint32_t)s->nranks ||
        m->rank != 0 || memcmp(m->body, nonce, HN_SK_NONCE) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d: %s:%d answered with kind %d, key '%s', world %u, not this rank's welcome",
                               s->rank, s->addr, s->port, m->kind, printable(m->key, key), m->world_size);
    if (s->secret_len) {
        if (m->body_bytes != HN_SK_NONCE + HN_MAC_BYTES)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d: the welcome from %s:%d carries no proof of the job secret", s->rank, s->addr,
                                   s->port);
        if (proof(s, SERVER_ROLE, nonce, challenge, m->nonce, HN_SK_NONCE, (uint32_t)s->rank, want, why, sizeof why) != 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->rank, why);
        if (!hidet_nccl__mac_equal(want, m->body + HN_SK_NONCE))
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d: the welcome from %s:%d does not prove the job secret: the process at that "
                                   "port is not this job's rank 0", s->rank, s->addr, s->port);
    }
    memcpy(s->session, m->nonce, HN_SK_NONCE);
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t send_proof(hn_sk_state_t *s, int fd, const uint8_t *challenge, const uint8_t *nonce,
                                      double deadline, char *msg, size_t n) {
    uint8_t mac[HN_MAC_BYTES], m[HN_SK_HEADER + HN_MAC_BYTES + 4];
    char why[512];
    if (proof(s, CLIENT_ROLE, challenge, nonce, NULL, 0, (uint32_t)s->rank, mac, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->rank, why);
    size_t len = hidet_nccl__sk_encode(m, sizeof m, HN_SK_KIND_PROOF, s->key, (uint32_t)s->nranks, (uint32_t)s->rank, 0,
                                       nonce, mac, HN_MAC_BYTES);
    if (hidet_nccl__sk_send(fd, m, len, deadline, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not send its proof to %s:%d: %s",
                               s->rank, s->addr, s->port, why);
    return HIDET_NCCL_SUCCESS;
}

/* One connection's try. *closed 1: rank 0 closed it before a welcome (it may have evicted it). */
static hidet_nccl_status_t client_once(hn_sk_state_t *s, int fd, double deadline, int *closed, char *msg, size_t n) {
    uint8_t nonce[HN_SK_NONCE], challenge[HN_SK_NONCE] = {0}, hello[HN_SK_HEADER + 8], flags[4];
    char why[512];
    if (getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "getrandom: %s", strerror(errno));
    hidet_nccl__put32(flags, s->secret_len ? HN_SK_HELLO_SECRET : 0);
    size_t len = hidet_nccl__sk_encode(hello, sizeof hello, HN_SK_KIND_HELLO, s->key, (uint32_t)s->nranks,
                                       (uint32_t)s->rank, 0, nonce, flags, 4);
    if (hidet_nccl__sk_send(fd, hello, len, deadline, why, sizeof why) != 0) {
        *closed = 1;
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not say hello to %s:%d: %s", s->rank,
                               s->addr, s->port, why);
    }
    for (int challenged = 0;;) {
        uint8_t *buf = NULL;
        hidet_nccl__sk_msg_t m;
        int got = next(fd, deadline, &buf, &m, why, sizeof why);
        hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
        if (got == 0)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                                 "rank %d connected to %s:%d but no welcome came before the deadline (rank 0 waits for "
                                 "every rank first: is one missing?)", s->rank, s->addr, s->port);
        else if (got < 0)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s:%d: %s", s->rank, s->addr, s->port, why);
        else if (m.kind == HN_SK_KIND_REFUSE)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: rank 0 at %s:%d refused it: %.*s", s->rank,
                                 s->addr, s->port, (int)m.body_bytes, (const char *)m.body);
        else if (m.kind == HN_SK_KIND_CHALLENGE && s->secret_len && !challenged) {
            challenged = 1;
            memcpy(challenge, m.nonce, HN_SK_NONCE);
            st = send_proof(s, fd, challenge, nonce, deadline, msg, n);
            free(buf);
            if (st != HIDET_NCCL_SUCCESS) return st;
            continue;
        } else
            st = check_welcome(s, &m, nonce, challenge, msg, n);
        *closed = got == -1;
        free(buf);
        return st;
    }
}

hidet_nccl_status_t hidet_nccl__sk_client_handshake(hn_sk_state_t *s, double deadline, char *msg, size_t n) {
    hn_poll_t wait; /* between tries after rank 0 closed a connection: 10 ms doubling to 200 ms */
    hidet_nccl__poll_begin(&wait, deadline - hidet_nccl__now(), 0, 10000000L, 200000000L, 1);
    for (int closes = 0;; closes++) {
        char why[512];
        /* Again after a close: rank 0 evicting a flood still listens, and takes the connection at
         * once; a rank 0 that failed and left does not, and waiting for it to the deadline would
         * hide its failure: 2 s. */
        double until = closes > 0 && hidet_nccl__now() + 2.0 < deadline ? hidet_nccl__now() + 2.0 : deadline;
        int fd = hidet_nccl__sk_connect(s->addr, s->port, until, why, sizeof why);
        if (fd < 0 && closes > 0 && until < deadline)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d: rank 0 at %s:%d closed this rank's connection before a welcome and no "
                                   "longer accepts one: it failed or left (its own message says why)",
                                   s->rank, s->addr, s->port);
        if (fd < 0)
            return hidet_nccl__say(msg, n, hidet_nccl__now() >= deadline ? HIDET_NCCL_ERROR_TIMEOUT : HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d could not reach rank 0: %s", s->rank, why);
        int closed = 0;
        hidet_nccl_status_t st = client_once(s, fd, deadline, &closed, msg, n);
        if (st == HIDET_NCCL_SUCCESS) {
            s->fds[0] = fd;
            if (closes > 0) HN_INFO("rank %d: welcomed after rank 0 closed %d earlier connections", s->rank, closes);
            return st;
        }
        close(fd);
        if (!closed) return st;
        if (hidet_nccl__poll_expired(&wait))
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d: rank 0 at %s:%d closed its connection %d times before a welcome, until the "
                                   "deadline (it drops what it cannot take: another job's key or size there, this rank "
                                   "twice, or a flood of connections)", s->rank, s->addr, s->port, closes + 1);
        HN_INFO("rank %d: rank 0 closed the connection before a welcome; connecting again", s->rank);
        hidet_nccl__poll_pause(&wait);
    }
}

/* How the socket rendezvous' ranks meet (docs/bootstrap_socket.md). Rank 0's hub admits the
 * other ranks through bootstrap_socket/socket_admit.c (fair, each waiting connection with its own
 * deadline, strangers dropped, the job secret proved) and welcomes each once all are in; a
 * client (a rank other than 0, or every rank of a served rendezvous) says hello, proves the
 * secret, and checks the hub's proof in its welcome. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_socket/socket_admit_int.h"
#include "bootstrap_socket/socket_handshake_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "bootstrap_socket/socket_proof_int.h"

/* ---------------------------------------------------------------- rank 0 */

typedef struct {
    hn_sk_state_t *s;
    uint8_t *theirs, *ours; /* per admitted rank: its nonce, rank 0's challenge */
    char *peers;            /* per admitted rank: where it connected from */
} root_t;

/* An admitted rank's connection: its place, unless the rank is there already. */
static hidet_nccl_status_t take(void *ctx, const hn_sk_admitted_t *a, char *msg, size_t n) {
    root_t *r = ctx;
    hn_sk_state_t *s = r->s;
    if (s->fds[a->rank] >= 0) {
        close(a->fd);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %u connected twice to rank 0 (port %d): from %s and from %s. Two jobs with the "
                               "job key '%s'%s on one address and port? Give each job its own HIDET_NCCL_JOB_KEY or "
                               "MASTER_PORT",
                               a->rank, s->port, r->peers + (size_t)a->rank * HN_SK_PEER_BYTES, a->peer, s->key,
                               s->secret_len ? " and one secret" : "");
    }
    s->fds[a->rank] = a->fd;
    memcpy(r->theirs + (size_t)a->rank * HN_SK_NONCE, a->theirs, HN_SK_NONCE);
    memcpy(r->ours + (size_t)a->rank * HN_SK_NONCE, a->ours, HN_SK_NONCE);
    snprintf(r->peers + (size_t)a->rank * HN_SK_PEER_BYTES, HN_SK_PEER_BYTES, "%s", a->peer);
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

static hidet_nccl_status_t timed_out(const hn_sk_state_t *s, const hn_sk_admit_t *a, char *msg, size_t n) {
    char missing[192];
    const char *last;
    long dropped = hidet_nccl__sk_admit_dropped(a, &last);
    list_missing(s, missing, sizeof missing);
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                           "rank 0 listened on port %d until its deadline; ranks %s never connected with a valid "
                           "hello%s (to %s:%d, job key '%s'); %ld other connections dropped%s%s",
                           s->port, missing, s->secret_len ? " and proof of the job secret" : "", s->addr, s->port,
                           s->key, dropped, last[0] ? ", the last: " : "", last);
}

/* One wait: poll the listening socket and every waiting connection until something happens or
 * the first of their deadlines; then accept, read, and drop whatever is past its step's end. */
static hidet_nccl_status_t wait_once(hn_sk_admit_t *a, struct pollfd *fds, hn_sk_poller_t *poller, double deadline,
                                     char *msg, size_t n) {
    double now = hidet_nccl__now(), next = deadline;
    hidet_nccl__sk_admit_poll(a, fds, &next);
    if (next - now > 60.0) next = now + 60.0; /* a far deadline: wake each minute (ms fits an int) */
    int ms = next > now ? (int)((next - now) * 1000) + 1 : 0;
    if (hidet_nccl__sk_poll(poller, fds, (size_t)hidet_nccl__sk_admit_nfds(a), ms) < 0 && errno != EINTR)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "rank 0: poll: %s", strerror(errno));
    return hidet_nccl__sk_admit_events(a, fds, deadline, msg, n);
}

static hidet_nccl_status_t welcome(root_t *r, int rank, double deadline, char *msg, size_t n) {
    hn_sk_state_t *s = r->s;
    uint8_t m[HN_SK_WELCOME_BYTES];
    char why[512];
    size_t len = hidet_nccl__sk_welcome_encode(s, 0, (uint32_t)rank, r->theirs + (size_t)rank * HN_SK_NONCE,
                                               r->ours + (size_t)rank * HN_SK_NONCE, s->session, m, sizeof m, why,
                                               sizeof why);
    if (len == 0) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: %s", why);
    if (hidet_nccl__sk_send(s->fds[rank], m, len, deadline, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0 could not welcome rank %d (%s): %s", rank,
                               r->peers + (size_t)rank * HN_SK_PEER_BYTES, why);
    return HIDET_NCCL_SUCCESS;
}

/* A rank admitted after the job formed: refused, saying why (it may be a restarted rank). */
static hidet_nccl_status_t late_take(void *ctx, const hn_sk_admitted_t *a, char *msg, size_t n) {
    (void)msg, (void)n;
    hn_sk_state_t *s = ctx;
    char text[HN_SK_MAX_REFUSE];
    snprintf(text, sizeof text, "the job (%d ranks) formed before this rank came: its socket rendezvous lives in rank 0 "
             "and cannot take a restarted rank back in; heal needs hidet-nccl-run's (--rendezvous socket)",
             s->job_nranks);
    HN_WARN("socket rendezvous at port %d (job key '%s'): rank %u came from %s after the job formed (restarted, or "
            "started twice?); refused: %s", s->port, s->key, a->rank, a->peer, HN_SK_HEAL_UNSERVED);
    hidet_nccl__sk_send_refuse(a->fd, text);
    close(a->fd);
    return HIDET_NCCL_SUCCESS;
}

/* The rank 0 hubs of this process that keep their port, so that a later bootstrap of this process on
 * the same port takes the port over (it listens there as the port's earlier bootstraps did when they
 * closed it once formed), and so that a round on one thread and a look of news on another never
 * serve one port at once. */
#define KEPT_MAX 64
static pthread_mutex_t g_kept_mu = PTHREAD_MUTEX_INITIALIZER;
static hn_sk_state_t *g_kept[KEPT_MAX];

/* Frees what keeps s's port (not the port itself); under g_kept_mu. */
static void unkeep(hn_sk_state_t *s) {
    for (int i = 0; i < KEPT_MAX; i++)
        if (g_kept[i] == s) g_kept[i] = NULL;
    hidet_nccl__sk_admit_free(s->late); /* connections waiting are closed: they connect again */
    s->late = NULL;
    if (s->late_poller) hidet_nccl__sk_poller_free(s->late_poller);
    free(s->late_poller);
    free(s->late_fds);
    s->late_poller = NULL;
    s->late_fds = NULL;
}

/* An earlier bootstrap's listening socket on port, taken over; -1 when none keeps it. */
static int take_kept(int port) {
    int lfd = -1;
    pthread_mutex_lock(&g_kept_mu);
    for (int i = 0; i < KEPT_MAX && lfd < 0; i++)
        if (g_kept[i] != NULL && g_kept[i]->port == port) {
            hn_sk_state_t *old = g_kept[i];
            lfd = old->lfd;
            old->lfd = -1;
            unkeep(old);
        }
    pthread_mutex_unlock(&g_kept_mu);
    return lfd;
}

/* s keeps its port (lfd, admission a, fds for it): 0, or -1 when the table is full (nothing kept). */
static int keep(hn_sk_state_t *s, int lfd, hn_sk_admit_t *a, struct pollfd *fds) {
    int rc = -1;
    pthread_mutex_lock(&g_kept_mu);
    for (int i = 0; i < KEPT_MAX && rc < 0; i++)
        if (g_kept[i] == NULL && (s->late_poller = calloc(1, sizeof(hn_sk_poller_t))) != NULL) {
            g_kept[i] = s;
            hidet_nccl__sk_admit_retake(a, late_take, s); /* late ranks are told why not */
            s->late = a;
            s->lfd = lfd;
            s->late_fds = fds;
            rc = 0;
        }
    pthread_mutex_unlock(&g_kept_mu);
    return rc;
}

void hidet_nccl__sk_hub_late(hn_sk_state_t *s) {
    (void)s; /* every port a hub of this process keeps is served: a later bootstrap may have taken
                this one's over, and the process may call only the earlier one */
    pthread_mutex_lock(&g_kept_mu);
    for (int i = 0; i < KEPT_MAX; i++) {
        hn_sk_state_t *k = g_kept[i];
        if (k == NULL) continue;
        char msg[512];
        int nf = hidet_nccl__sk_admit_nfds(k->late);
        double next = hidet_nccl__now() + 60.0;
        hidet_nccl__sk_admit_poll(k->late, k->late_fds, &next);
        if (hidet_nccl__sk_poll(k->late_poller, k->late_fds, (size_t)nf, 0) > 0 &&
            hidet_nccl__sk_admit_events(k->late, k->late_fds, hidet_nccl__now() + 0.2, msg, sizeof msg) !=
                HIDET_NCCL_SUCCESS)
            HN_WARN("socket rendezvous at port %d: %s", k->port, msg);
    }
    pthread_mutex_unlock(&g_kept_mu);
}

void hidet_nccl__sk_hub_late_close(hn_sk_state_t *s) {
    pthread_mutex_lock(&g_kept_mu);
    unkeep(s);
    if (s->lfd >= 0) close(s->lfd);
    s->lfd = -1;
    pthread_mutex_unlock(&g_kept_mu);
}

hidet_nccl_status_t hidet_nccl__sk_root_handshake(hn_sk_state_t *s, double deadline, char *msg, size_t n) {
    char why[512];
    int lfd = take_kept(s->port); /* an earlier bootstrap of this process kept it */
    if (lfd < 0) lfd = hidet_nccl__sk_listen(s->port, why, sizeof why);
    if (lfd < 0) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: %s", why);
    root_t r = {.s = s};
    hn_sk_admit_t *a = NULL;
    hn_sk_poller_t poller = {0};
    struct pollfd *fds = NULL;
    hidet_nccl_status_t st = hidet_nccl__sk_admit_new(s, lfd, 0, take, &r, &a, msg, n);
    if (st == HIDET_NCCL_SUCCESS) {
        fds = calloc((size_t)hidet_nccl__sk_admit_nfds(a), sizeof *fds);
        r.theirs = calloc((size_t)s->nranks, HN_SK_NONCE);
        r.ours = calloc((size_t)s->nranks, HN_SK_NONCE);
        r.peers = calloc((size_t)s->nranks, HN_SK_PEER_BYTES);
        if (!fds || !r.theirs || !r.ours || !r.peers) st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    }
    while (st == HIDET_NCCL_SUCCESS && joined(s) < s->nranks - 1)
        st = hidet_nccl__now() >= deadline ? timed_out(s, a, msg, n) : wait_once(a, fds, &poller, deadline, msg, n);
    for (int rank = 1; st == HIDET_NCCL_SUCCESS && rank < s->nranks; rank++) st = welcome(&r, rank, deadline, msg, n);
    hidet_nccl__sk_poller_free(&poller);
    if (st != HIDET_NCCL_SUCCESS || keep(s, lfd, a, fds) != 0) { /* kept: the port stays open */
        hidet_nccl__sk_admit_free(a);
        close(lfd);
        free(fds);
    }
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

/* rank 0's welcome: this rank's nonce back and, with a secret, rank 0's proof. A served rendezvous'
 * welcome of a joiner (tag HN_SK_WELCOME_JOINER, proved in the joiner's role) makes this rank one. */
static hidet_nccl_status_t check_welcome(hn_sk_state_t *s, const hidet_nccl__sk_msg_t *m, const uint8_t *nonce,
                                         const uint8_t *challenge, char *msg, size_t n) {
    uint8_t want[HN_MAC_BYTES];
    char why[512], key[HN_SK_KEY_BYTES + 1];
    if (m->kind != HN_SK_KIND_WELCOME || strcmp(m->key, s->key) != 0 || m->world_size != (uint32_t)s->nranks ||
        m->rank != 0 || memcmp(m->body, nonce, HN_SK_NONCE) != 0 || (m->tag == HN_SK_WELCOME_JOINER && !s->served))
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d: %s:%d answered with kind %d, key '%s', world %u, not this rank's welcome",
                               s->rank, s->addr, s->port, m->kind, hidet_nccl__sk_printable(m->key, key), m->world_size);
    int joiner = m->tag == HN_SK_WELCOME_JOINER;
    if (s->secret_len) {
        if (m->body_bytes != HN_SK_NONCE + HN_MAC_BYTES)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d: the welcome from %s:%d carries no proof of the job secret", s->rank, s->addr,
                                   s->port);
        if (hidet_nccl__sk_proof(s, joiner ? HN_SK_JOINER_ROLE : HN_SK_SERVER_ROLE, nonce, challenge, m->nonce,
                                 HN_SK_NONCE, (uint32_t)s->rank, want, why, sizeof why) != 0)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->rank, why);
        if (!hidet_nccl__mac_equal(want, m->body + HN_SK_NONCE))
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d: the welcome from %s:%d does not prove the job secret: the process at that "
                                   "port is not this job's %s", s->rank, s->addr, s->port, s->served ? "rendezvous" : "rank 0");
    }
    memcpy(s->session, m->nonce, HN_SK_NONCE);
    s->joining = joiner;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t send_proof(hn_sk_state_t *s, int fd, const uint8_t *challenge, const uint8_t *nonce,
                                      double deadline, char *msg, size_t n) {
    uint8_t mac[HN_MAC_BYTES], m[HN_SK_HEADER + HN_MAC_BYTES + 4];
    char why[512];
    if (hidet_nccl__sk_proof(s, HN_SK_CLIENT_ROLE, challenge, nonce, NULL, 0, (uint32_t)s->rank, mac, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->rank, why);
    size_t len = hidet_nccl__sk_encode(m, sizeof m, HN_SK_KIND_PROOF, s->key, (uint32_t)s->nranks, (uint32_t)s->rank, 0,
                                       nonce, mac, HN_MAC_BYTES);
    if (hidet_nccl__sk_send(fd, m, len, deadline, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not send its proof to %s:%d: %s",
                               s->rank, s->addr, s->port, why);
    return HIDET_NCCL_SUCCESS;
}

/* This rank connected and no welcome came before the deadline: the hub waits for every rank
 * before it welcomes any (one is missing), and closes the connections when it gives up. */
static hidet_nccl_status_t no_welcome(const hn_sk_state_t *s, const char *then, char *msg, size_t n) {
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                           "rank %d connected to %s:%d but no welcome came before the deadline (%s waits for every "
                           "rank first: is one missing?)%s", s->rank, s->addr, s->port, hidet_nccl__sk_hub(s), then);
}

/* One connection's try. *closed 1: the hub closed it before a welcome (it may have evicted it).
 * fresh: this is its process's first socket bootstrap (a restarted rank's is). */
static hidet_nccl_status_t client_once(hn_sk_state_t *s, int fd, int fresh, double deadline, int *closed, char *msg,
                                       size_t n) {
    uint8_t nonce[HN_SK_NONCE], challenge[HN_SK_NONCE] = {0}, hello[HN_SK_HEADER + 8], flags[4];
    char why[512];
    if (getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "getrandom: %s", strerror(errno));
    hidet_nccl__put32(flags, (s->secret_len ? HN_SK_HELLO_SECRET : 0) | (fresh ? HN_SK_HELLO_FRESH : 0));
    size_t len = hidet_nccl__sk_encode(hello, sizeof hello, HN_SK_KIND_HELLO, s->key, (uint32_t)s->nranks,
                                       (uint32_t)s->rank, 0, nonce, flags, 4);
    if (hidet_nccl__sk_send(fd, hello, len, deadline, why, sizeof why) != 0) {
        *closed = 1;
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not say hello to %s:%d: %s", s->rank,
                               s->addr, s->port, why);
    }
    /* A served rendezvous (the launcher's) always answers: at the end of its admission, which
     * began at the first hello, it names the ranks that never came. This rank's deadline began
     * before that hello, so it waits a second past it for that answer. */
    double answer_by = s->served ? deadline + 1.0 : deadline;
    for (int challenged = 0;;) {
        uint8_t *buf = NULL;
        hidet_nccl__sk_msg_t m;
        int got = next(fd, answer_by, &buf, &m, why, sizeof why);
        hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
        if (got == 0)
            st = no_welcome(s, "", msg, n);
        else if (got < 0)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s:%d: %s", s->rank, s->addr, s->port, why);
        else if (m.kind == HN_SK_KIND_REFUSE)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (job key '%s'): %s at %s:%d refused it: %.*s",
                                 s->rank, s->key, hidet_nccl__sk_hub(s), s->addr, s->port, (int)m.body_bytes,
                                 (const char *)m.body);
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
    static atomic_int bootstraps; /* this process's socket bootstraps so far: its first says so (fresh) */
    int fresh = atomic_fetch_add(&bootstraps, 1) == 0;
    hn_poll_t wait; /* between tries after the hub closed a connection: 10 ms doubling to 200 ms */
    const char *hub = hidet_nccl__sk_hub(s);
    hidet_nccl__poll_begin(&wait, deadline - hidet_nccl__now(), 0, 10000000L, 200000000L, 1);
    for (int closes = 0;; closes++) {
        char why[512];
        /* Again after a close: a hub evicting a flood still listens, and takes the connection at
         * once; a rank 0 that failed and left does not, and waiting for it to the deadline would
         * hide its failure: 2 s. */
        double until = closes > 0 && hidet_nccl__now() + 2.0 < deadline ? hidet_nccl__now() + 2.0 : deadline;
        int fd = hidet_nccl__sk_connect(s->addr, s->port, until, why, sizeof why);
        if (fd < 0 && closes > 0 && until < deadline)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d: %s at %s:%d closed this rank's connection before a welcome and no "
                                   "longer accepts one: %s", s->rank, hub, s->addr, s->port,
                                   s->served ? "the launcher of node 0 ended or was killed (its output says why)"
                                             : "rank 0 failed or left (its own error says why)");
        if (fd < 0 && closes > 0) /* the hub gave up at its deadline, which came just before this rank's */
            return no_welcome(s, "; it closed this rank's connection and accepted no other", msg, n);
        if (fd < 0)
            return hidet_nccl__say(msg, n, hidet_nccl__now() >= deadline ? HIDET_NCCL_ERROR_TIMEOUT : HIDET_NCCL_ERROR_BOOTSTRAP,
                                   "rank %d could not reach %s: %s", s->rank, hub, why);
        int closed = 0;
        hidet_nccl_status_t st = client_once(s, fd, fresh, deadline, &closed, msg, n);
        if (st == HIDET_NCCL_SUCCESS) {
            s->fds[0] = fd;
            if (closes > 0) HN_INFO("rank %d: welcomed after %s closed %d earlier connections", s->rank, hub, closes);
            return st;
        }
        close(fd);
        if (!closed) return st;
        /* The hub's first close with this rank's deadline gone too: it gave up at its own
         * deadline, a moment before this rank's (on a loaded machine the close is read late). */
        int expired = hidet_nccl__poll_expired(&wait); /* one look: both answers from the same moment */
        if (expired && closes == 0)
            return no_welcome(s, "; it closed this rank's connection as the deadline came", msg, n);
        if (expired)
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d: %s at %s:%d closed its connection %d times before a welcome, until the "
                                   "deadline (it drops what it cannot take: another job's key or size there, this rank "
                                   "twice, or a flood of connections)", s->rank, hub, s->addr, s->port, closes + 1);
        HN_INFO("rank %d: %s closed the connection before a welcome; connecting again", s->rank, hub);
        hidet_nccl__poll_pause(&wait);
    }
}

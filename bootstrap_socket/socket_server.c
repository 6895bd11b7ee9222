/* A served socket rendezvous (include/hidet_nccl/rendezvous.h): hidet-nccl-run's, from a thread of
 * its own. One poll loop over the listening socket and the connections waiting to be admitted
 * (bootstrap_socket/socket_admit.c, the same admission as rank 0's), and the sessions' connections
 * (bootstrap_socket/socket_session.c, one session per bootstrap of the job): the k-th connection a
 * rank makes goes to the oldest session that lacks it; a restarted rank's goes, as a joiner, to the
 * oldest formed session that lacks it (socket_heal_round.c). A pipe wakes the loop to stop it. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap_socket/socket_admit_int.h"
#include "bootstrap_socket/socket_heal_round_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "bootstrap_socket/socket_proof_int.h"
#include "bootstrap_socket/socket_session_int.h"
#include "core/base/kit.h"
#include "hidet_nccl/rendezvous.h"

struct hidet_nccl_rendezvous {
    hn_sk_state_t job; /* key, size, secret, port */
    double admit_s;
    int lfd, wake[2];
    pthread_t thread;
    hn_sk_admit_t *admit;
    hn_sk_session_t **sessions;
    int n_sessions, cap_sessions, next_id;
    struct pollfd *fds;
    size_t cap_fds;
    hn_sk_poller_t poller; /* passes poll(2) the descriptors of fds alone */
    atomic_int live; /* sessions with a rank still connected, after the last wait */
};

/* A hello of a rank the rendezvous will not take: refused (told why), logged. */
static hidet_nccl_status_t refuse(hidet_nccl_rendezvous_h rv, const hn_sk_admitted_t *a, const char *text) {
    HN_WARN("socket rendezvous at port %d (job key '%s'): refused job rank %u from %s: %s", rv->job.port, rv->job.key,
            a->rank, a->peer, text);
    hidet_nccl__sk_send_refuse(a->fd, text);
    close(a->fd);
    return HIDET_NCCL_SUCCESS;
}

/* A restarted rank's hello (its rank died, or a round left it out, in a formed session): joins the
 * oldest formed session that lacks the rank (a restarted process makes its bootstraps in the order
 * its first life did; a later bootstrap of it, the next one that has no joiner for the rank yet).
 * 1 when the hello was taken so (joined, or refused), 0 when it is not a joiner's. */
static int take_joiner(hidet_nccl_rendezvous_h rv, const hn_sk_admitted_t *a) {
    int fresh = (a->flags & HN_SK_HELLO_FRESH) != 0;
    char peer[HN_SK_PEER_BYTES], text[HN_SK_MAX_REFUSE];
    for (int i = 0; i < rv->n_sessions; i++) /* what a rank's old connection says first: its bye, its end */
        hidet_nccl__sk_session_catch_up(rv->sessions[i], a->rank);
    for (int i = 0; i < rv->n_sessions; i++) {
        int lacks = hidet_nccl__sk_heal_lacks(rv->sessions[i], a->rank, peer, sizeof peer);
        if (lacks == 1) {
            hidet_nccl__sk_heal_add_joiner(rv->sessions[i], a);
            return 1;
        }
        if (lacks == 2 && fresh) {
            snprintf(text, sizeof text, "a restarted process for job rank %u waits already to join the job (it "
                     "connected from %s): one joiner per rank", a->rank, peer);
            refuse(rv, a, text);
            return 1;
        }
    }
    for (int i = 0; fresh && i < rv->n_sessions; i++)
        if (hidet_nccl__sk_heal_live(rv->sessions[i], a->rank, peer, sizeof peer)) {
            snprintf(text, sizeof text, "job rank %u is a live member of the job (its process connected from %s): "
                     "one process per rank (was this rank started twice?)", a->rank, peer);
            refuse(rv, a, text);
            return 1;
        }
    return 0;
}

/* An admitted rank's connection: a joiner's (above), else to the oldest session that lacks the
 * rank, else a new one. */
static hidet_nccl_status_t take(void *ctx, const hn_sk_admitted_t *a, char *msg, size_t n) {
    hidet_nccl_rendezvous_h rv = ctx;
    if (take_joiner(rv, a)) return HIDET_NCCL_SUCCESS;
    for (int i = 0; i < rv->n_sessions; i++)
        if (hidet_nccl__sk_session_lacks(rv->sessions[i], a->rank)) {
            hidet_nccl__sk_session_add(rv->sessions[i], a);
            return HIDET_NCCL_SUCCESS;
        }
    if (rv->n_sessions == rv->cap_sessions) {
        int cap = rv->cap_sessions ? 2 * rv->cap_sessions : 8;
        hn_sk_session_t **more = realloc(rv->sessions, (size_t)cap * sizeof *more);
        if (more == NULL) {
            close(a->fd);
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d sessions", cap);
        }
        rv->sessions = more;
        rv->cap_sessions = cap;
    }
    hn_sk_session_t *s = hidet_nccl__sk_session_new(&rv->job, ++rv->next_id, rv->admit_s);
    if (s == NULL) {
        close(a->fd);
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for a session of %d ranks", rv->job.nranks);
    }
    rv->sessions[rv->n_sessions++] = s;
    hidet_nccl__sk_session_add(s, a);
    return HIDET_NCCL_SUCCESS;
}

/* Room for n pollfds. 0, or -1. */
static int room(hidet_nccl_rendezvous_h rv, size_t n) {
    if (n <= rv->cap_fds) return 0;
    struct pollfd *more = realloc(rv->fds, n * sizeof *more);
    if (more == NULL) return -1;
    rv->fds = more;
    rv->cap_fds = n;
    return 0;
}

/* After a failure: a second's pause, which a stop ends. 0, or 1 when asked to stop. */
static int pause_for_stop(hidet_nccl_rendezvous_h rv) {
    struct pollfd wake = {rv->wake[0], POLLIN, 0};
    return poll(&wake, 1, 1000) > 0;
}

/* One wait and what came: 0, or 1 when asked to stop. */
static int serve_once(hidet_nccl_rendezvous_h rv) {
    int na = hidet_nccl__sk_admit_nfds(rv->admit), polled = rv->n_sessions;
    size_t total = 1 + (size_t)na;
    for (int i = 0; i < polled; i++) total += (size_t)hidet_nccl__sk_session_nfds(rv->sessions[i]);
    if (room(rv, total) != 0) {
        HN_WARN("socket rendezvous at port %d: out of memory for %zu descriptors; waiting", rv->job.port, total);
        return pause_for_stop(rv);
    }
    double now = hidet_nccl__now(), next = now + 60.0;
    rv->fds[0] = (struct pollfd){rv->wake[0], POLLIN, 0};
    hidet_nccl__sk_admit_poll(rv->admit, rv->fds + 1, &next);
    size_t k = 1 + (size_t)na;
    for (int i = 0; i < polled; i++) {
        hidet_nccl__sk_session_poll(rv->sessions[i], rv->fds + k, &next);
        k += (size_t)hidet_nccl__sk_session_nfds(rv->sessions[i]);
    }
    int ms = next > now ? (int)((next - now) * 1000) + 1 : 0;
    if (hidet_nccl__sk_poll(&rv->poller, rv->fds, k, ms) < 0 && errno != EINTR) {
        HN_WARN("socket rendezvous at port %d: poll: %s", rv->job.port, strerror(errno));
        return pause_for_stop(rv);
    }
    if (rv->fds[0].revents) return 1;
    char msg[512] = "";
    if (hidet_nccl__sk_admit_events(rv->admit, rv->fds + 1, hidet_nccl__now() + 1.0, msg, sizeof msg) !=
        HIDET_NCCL_SUCCESS)
        HN_WARN("socket rendezvous at port %d: %s", rv->job.port, msg);
    k = 1 + (size_t)na;
    for (int i = 0; i < polled; i++) { /* sessions the admission just made were not polled */
        size_t nf = (size_t)hidet_nccl__sk_session_nfds(rv->sessions[i]);
        hidet_nccl__sk_session_events(rv->sessions[i], rv->fds + k);
        k += nf;
    }
    int j = 0;
    for (int i = 0; i < rv->n_sessions; i++) {
        if (hidet_nccl__sk_session_over(rv->sessions[i])) hidet_nccl__sk_session_free(rv->sessions[i]);
        else rv->sessions[j++] = rv->sessions[i];
    }
    rv->n_sessions = j;
    atomic_store(&rv->live, j);
    return 0;
}

static void *serve(void *arg) {
    hidet_nccl_rendezvous_h rv = arg;
    sigset_t all; /* signals are the process's other threads' (the launcher's signalfd) */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (serve_once(rv) == 0) {
    }
    return NULL;
}

/* Frees what start made (the thread stopped, or never started). */
static void release(hidet_nccl_rendezvous_h rv) {
    for (int i = 0; i < rv->n_sessions; i++) {
        hidet_nccl__sk_session_end(rv->sessions[i]); /* ranks waiting for others are told why it ends */
        hidet_nccl__sk_session_free(rv->sessions[i]);
    }
    hidet_nccl__sk_admit_free(rv->admit);
    if (rv->lfd >= 0) close(rv->lfd);
    for (int i = 0; i < 2; i++)
        if (rv->wake[i] >= 0) close(rv->wake[i]);
    explicit_bzero(rv->job.secret, sizeof rv->job.secret);
    free(rv->sessions);
    free(rv->fds);
    hidet_nccl__sk_poller_free(&rv->poller);
    free(rv);
}

/* The job's secret, as the ranks read it, checked by one MAC (libcrypto there); or a warning. */
static hidet_nccl_status_t job_secret(hidet_nccl_rendezvous_h rv) {
    char why[512];
    int got = hidet_nccl__job_secret(rv->job.secret, &rv->job.secret_len, why, sizeof why);
    if (got < 0) return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", why);
    if (got == 0) {
        HN_WARN("socket rendezvous at port %d (job key '%s') without a job secret: any process that reaches the port "
                "and knows the key can take a rank's place. Set HIDET_NCCL_JOB_SECRET_FILE (or HIDET_NCCL_JOB_SECRET)",
                rv->job.port, rv->job.key);
        return HIDET_NCCL_SUCCESS;
    }
    uint8_t nonce[HN_SK_NONCE] = {0}, mac[HN_MAC_BYTES];
    if (hidet_nccl__sk_proof(&rv->job, HN_SK_SERVER_ROLE, nonce, nonce, NULL, 0, 0, mac, why, sizeof why) != 0)
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "the rendezvous cannot prove the job secret: %s", why);
    return HIDET_NCCL_SUCCESS;
}

/* Listens, and takes the port and the key. */
static hidet_nccl_status_t open_port(hidet_nccl_rendezvous_h rv, const hidet_nccl_rendezvous_params_t *p) {
    char why[512];
    rv->lfd = hidet_nccl__sk_listen(p->port, why, sizeof why);
    if (rv->lfd < 0) return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "the rendezvous: %s", why);
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    if (getsockname(rv->lfd, (struct sockaddr *)&sa, &len) != 0)
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "getsockname of the rendezvous' socket: %s", strerror(errno));
    rv->job.port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                                  : ((struct sockaddr_in *)&sa)->sin_port);
    if (p->job_key) snprintf(rv->job.key, sizeof rv->job.key, "%s", p->job_key);
    else snprintf(rv->job.key, sizeof rv->job.key, "socket-%d", rv->job.port);
    snprintf(rv->job.addr, sizeof rv->job.addr, "*");
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t checked(const hidet_nccl_rendezvous_params_t *given, hidet_nccl_rendezvous_params_t *p,
                                   double *admit_s) {
    char why[384];
    if (hidet_nccl__copy_sized(p, sizeof *p, given, "params", why, sizeof why) != 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", why);
    if (p->nranks < 1 || p->nranks > HN_SK_MAX_WORLD)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "params->nranks %d is not in 1 .. %d", p->nranks,
                       HN_SK_MAX_WORLD);
    if (p->port < 0 || p->port > 65535)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "params->port %d is not in 0 .. 65535", p->port);
    if (p->job_key && !hidet_nccl__key_ok(p->job_key, HN_SK_KEY_BYTES))
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "params->job_key '%.80s' is not 1 to %d of the characters A-Z a-z 0-9 . _ -", p->job_key,
                       HN_SK_KEY_BYTES);
    if (p->timeout_s != 0 && !(p->timeout_s > 0 && p->timeout_s <= HN_TIMEOUT_MAX_S))
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "params->timeout_s %g is not in (0, %g] (0: HIDET_NCCL_TIMEOUT)",
                       p->timeout_s, HN_TIMEOUT_MAX_S);
    *admit_s = p->timeout_s;
    if (*admit_s == 0) HN_CHECK(hidet_nccl__timeout_seconds(admit_s));
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_rendezvous_start(const hidet_nccl_rendezvous_params_t *params,
                                                hidet_nccl_rendezvous_h *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(params);
    HN_CHECK_NOT_NULL(out);
    *out = NULL;
    hidet_nccl_rendezvous_params_t p = HIDET_NCCL_RENDEZVOUS_PARAMS_INIT;
    double admit_s;
    HN_CHECK(checked(params, &p, &admit_s));
    hidet_nccl_rendezvous_h rv = calloc(1, sizeof *rv);
    if (rv == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    rv->lfd = rv->wake[0] = rv->wake[1] = -1;
    rv->job.nranks = p.nranks;
    rv->admit_s = admit_s;
    char msg[512] = "";
    hidet_nccl_status_t st = open_port(rv, &p);
    if (st == HIDET_NCCL_SUCCESS) st = job_secret(rv);
    if (st == HIDET_NCCL_SUCCESS && pipe2(rv->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        st = HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "pipe: %s", strerror(errno));
    if (st == HIDET_NCCL_SUCCESS && (st = hidet_nccl__sk_admit_new(&rv->job, rv->lfd, 1, take, rv, &rv->admit, msg,
                                                                    sizeof msg)) != HIDET_NCCL_SUCCESS)
        st = HN_FAIL(st, "%s", msg);
    if (st == HIDET_NCCL_SUCCESS) { /* the admission sized itself from the open-files limit */
        int rc = pthread_create(&rv->thread, NULL, serve, rv);
        if (rc != 0) st = HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "cannot start the rendezvous' thread: %s", strerror(rc));
    }
    if (st != HIDET_NCCL_SUCCESS) {
        release(rv);
        return st;
    }
    HN_INFO("socket rendezvous served at port %d (job key '%s', %d ranks, %s, %.0f s for a bootstrap's ranks to come)",
            rv->job.port, rv->job.key, rv->job.nranks, rv->job.secret_len ? "with the job secret" : "no secret",
            rv->admit_s);
    *out = rv;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_rendezvous_port(hidet_nccl_rendezvous_h rv, int *port) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(rv);
    HN_CHECK_NOT_NULL(port);
    *port = rv->job.port;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_rendezvous_live(hidet_nccl_rendezvous_h rv, int *sessions) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(rv);
    HN_CHECK_NOT_NULL(sessions);
    *sessions = atomic_load(&rv->live);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_rendezvous_stop(hidet_nccl_rendezvous_h rv) {
    HN_ENTER();
    if (rv == NULL) return HIDET_NCCL_SUCCESS;
    ssize_t w;
    do {
        w = write(rv->wake[1], "x", 1);
    } while (w < 0 && errno == EINTR);
    int rc = pthread_join(rv->thread, NULL);
    release(rv);
    if (rc != 0) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "joining the rendezvous' thread: %s", strerror(rc));
    return HIDET_NCCL_SUCCESS;
}

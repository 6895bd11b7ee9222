/* The socket rendezvous, for many nodes without MPI, PMIx or a shared file system (as torchrun
 * does it): rank 0 listens on MASTER_PORT, every other rank connects to MASTER_ADDR:MASTER_PORT
 * and keeps its connection for the bootstrap's life (a star). Protocol (docs/bootstrap_socket.md):
 *   1. each rank sends a HELLO (job key, world size, its rank, a fresh nonce);
 *   2. rank 0 takes the HELLOs of ranks 1 .. n-1, dropping (and logging) any connection that
 *      is not one (a stranger, another job's key or size), and answers each with a WELCOME
 *      carrying the job's session nonce and the rank's own nonce back;
 *   3. a broadcast goes through rank 0 (from a root other than 0: to rank 0, then to the
 *      others); an allgather sends every part to rank 0, which sends the whole to every rank.
 * Every message is checked (kind, key, world, sender, round, session); every wait has the
 * deadline. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <unistd.h>

#include "bootstrap_socket/socket_format_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"

typedef struct {
    char addr[256];
    int port;
    char key[HN_SK_KEY_BYTES + 1];
    int rank, nranks, local_rank, local_size;
    uint8_t session[HN_SK_NONCE];
    int *fds; /* rank 0: fds[r] of rank r (fds[0] unused); the others: fds[0], to rank 0 */
} socket_state_t;

/* Address, port and job key from params or the settings. */
static hidet_nccl_status_t resolve_place(const hidet_nccl_socket_bootstrap_params_t *p, socket_state_t *s, char *msg,
                                         size_t n) {
    const char *addr = p->master_addr ? p->master_addr : hidet_nccl__setting_str(HN_SETTING_MASTER_ADDR);
    const char *bad_port = hidet_nccl__setting_error(HN_SETTING_MASTER_PORT);
    int port = p->master_port;
    if (port < 0) {
        if (bad_port != NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", bad_port);
        port = -1;
        if (hidet_nccl__setting_is_set(HN_SETTING_MASTER_PORT)) hidet_nccl__setting_int(HN_SETTING_MASTER_PORT, &port);
    }
    if (addr == NULL)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "no rendezvous address: pass params->master_addr or set $MASTER_ADDR to the host of "
                               "rank 0");
    if (strlen(addr) >= sizeof s->addr)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "the address '%.64s...' is too long", addr);
    if (port < 1 || port > 65535)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "no rendezvous port: pass params->master_port or set $MASTER_PORT (1 .. 65535; got %d)",
                               port);
    const char *key = p->job_key ? p->job_key : hidet_nccl__setting_str(HN_SETTING_JOB_KEY);
    char fallback[32];
    if (key == NULL) { /* jobs on one address and port at once must set different keys */
        snprintf(fallback, sizeof fallback, "socket-%d", port);
        key = fallback;
    }
    if (!hidet_nccl__key_ok(key, HN_SK_KEY_BYTES))
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "job key '%.80s' is not 1 to %d of the characters A-Z a-z 0-9 . _ -", key,
                               HN_SK_KEY_BYTES);
    snprintf(s->addr, sizeof s->addr, "%s", addr);
    snprintf(s->key, sizeof s->key, "%s", key);
    s->port = port;
    return HIDET_NCCL_SUCCESS;
}

/* "1, 3 (2 of 4 ranks)" for the ranks r >= 1 with fds[r] < 0. */
static void list_missing(const socket_state_t *s, char *out, size_t cap) {
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

/* A connection rank 0 has accepted but not yet taken a HELLO from. */
typedef struct {
    int fd;
    char peer[80];
    uint8_t buf[HN_SK_HEADER + 4]; /* a HELLO is exactly this long */
    size_t got;
} pending_t;

static void drop(pending_t *p, const char *why, char *last, size_t last_bytes) {
    HN_WARN("socket rendezvous: dropped a connection from %s: %s", p->peer, why);
    snprintf(last, last_bytes, "%s from %s", why, p->peer);
    close(p->fd);
    p->fd = -1;
}

/* Reads what a pending connection has sent; takes a complete, valid HELLO. */
static hidet_nccl_status_t take_hello(socket_state_t *s, pending_t *p, uint8_t *nonces, char *peers, char *last,
                                      size_t last_bytes, char *msg, size_t n) {
    ssize_t got = recv(p->fd, p->buf + p->got, sizeof p->buf - p->got, 0);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        drop(p, got == 0 ? "closed before a hello" : strerror(errno), last, last_bytes);
        return HIDET_NCCL_SUCCESS;
    }
    if (got < 0) return HIDET_NCCL_SUCCESS;
    p->got += (size_t)got;
    char why[256];
    size_t total;
    if (p->got >= HN_SK_HEADER && hidet_nccl__sk_total(p->buf, &total, why, sizeof why) != 0) {
        drop(p, why, last, last_bytes);
        return HIDET_NCCL_SUCCESS;
    }
    if (p->got < sizeof p->buf) return HIDET_NCCL_SUCCESS;
    hidet_nccl__sk_msg_t m;
    if (hidet_nccl__sk_parse(p->buf, p->got, &m, why, sizeof why) != 0) {
        drop(p, why, last, last_bytes);
    } else if (m.kind != HN_SK_KIND_HELLO || strcmp(m.key, s->key) != 0 || m.world_size != (uint32_t)s->nranks ||
               m.rank == 0) {
        snprintf(why, sizeof why, "a message of kind %d, job key '%s', world %u, rank %u (this job: key '%s', %d ranks)",
                 m.kind, m.key, m.world_size, m.rank, s->key, s->nranks);
        drop(p, why, last, last_bytes);
    } else if (s->fds[m.rank] >= 0) {
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %u connected twice to rank 0 (port %d): from %s and from %s. Two jobs with the "
                               "job key '%s' on one address and port? Give each job its own HIDET_NCCL_JOB_KEY or "
                               "MASTER_PORT",
                               m.rank, s->port, peers + (size_t)m.rank * 80, p->peer, s->key);
    } else {
        s->fds[m.rank] = p->fd;
        memcpy(nonces + (size_t)m.rank * HN_SK_NONCE, m.nonce, HN_SK_NONCE);
        snprintf(peers + (size_t)m.rank * 80, 80, "%s", p->peer);
        p->fd = -1;
    }
    return HIDET_NCCL_SUCCESS;
}

/* Rank 0: every other rank's HELLO, strangers dropped, until the deadline; then the WELCOMEs. */
static hidet_nccl_status_t root_handshake(socket_state_t *s, double deadline, char *msg, size_t n) {
    char why[512];
    int lfd = hidet_nccl__sk_listen(s->port, why, sizeof why);
    if (lfd < 0) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0: %s", why);
    int cap = s->nranks + 64; /* connections waiting for their HELLO at once */
    pending_t *pend = calloc((size_t)cap, sizeof *pend);
    struct pollfd *fds = calloc((size_t)cap + 1, sizeof *fds);
    uint8_t *nonces = calloc((size_t)s->nranks, HN_SK_NONCE);
    char *peers = calloc((size_t)s->nranks, 80);
    char last[384] = "";
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (!pend || !fds || !nonces || !peers) st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    for (int i = 0; pend && i < cap; i++) pend[i].fd = -1;
    for (int joined = 0; st == HIDET_NCCL_SUCCESS && joined < s->nranks - 1;) {
        int k = 0;
        fds[k++] = (struct pollfd){lfd, POLLIN, 0};
        for (int i = 0; i < cap; i++) fds[k++] = (struct pollfd){pend[i].fd, POLLIN, 0};
        double left = deadline - hidet_nccl__now();
        if (left <= 0) {
            char missing[192];
            list_missing(s, missing, sizeof missing);
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                                 "rank 0 listened on port %d until its deadline; ranks %s never connected with a valid "
                                 "hello (to %s:%d, job key '%s')%s%s",
                                 s->port, missing, s->addr, s->port, s->key, last[0] ? "; last dropped: " : "", last);
            break;
        }
        if (poll(fds, (nfds_t)k, (int)(left * 1000) + 1) <= 0) continue;
        if (fds[0].revents & POLLIN) {
            for (;;) {
                char peer[80];
                int fd = hidet_nccl__sk_accept(lfd, peer, sizeof peer, why, sizeof why);
                if (fd < 0) break;
                int slot = -1;
                for (int i = 0; i < cap && slot < 0; i++)
                    if (pend[i].fd < 0) slot = i;
                if (slot < 0) {
                    HN_WARN("socket rendezvous: dropped a connection from %s: %d connections already wait", peer, cap);
                    close(fd);
                    continue;
                }
                pend[slot] = (pending_t){.fd = fd, .got = 0};
                snprintf(pend[slot].peer, sizeof pend[slot].peer, "%s", peer);
            }
        }
        for (int i = 0; i < cap && st == HIDET_NCCL_SUCCESS; i++) {
            if (pend[i].fd < 0 || !(fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            st = take_hello(s, &pend[i], nonces, peers, last, sizeof last, msg, n);
            if (pend[i].fd < 0 && st == HIDET_NCCL_SUCCESS) {
                joined = 0;
                for (int r = 1; r < s->nranks; r++) joined += s->fds[r] >= 0;
            }
        }
    }
    for (int i = 0; pend && i < cap; i++)
        if (pend[i].fd >= 0) close(pend[i].fd);
    close(lfd);
    for (int r = 1; st == HIDET_NCCL_SUCCESS && r < s->nranks; r++) {
        uint8_t welcome[HN_SK_HEADER + HN_SK_NONCE + 4];
        size_t len = hidet_nccl__sk_encode(welcome, sizeof welcome, HN_SK_KIND_WELCOME, s->key, (uint32_t)s->nranks, 0,
                                           0, s->session, nonces + (size_t)r * HN_SK_NONCE, HN_SK_NONCE);
        if (hidet_nccl__sk_send(s->fds[r], welcome, len, deadline, why, sizeof why) != 0)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0 could not welcome rank %d (%s): %s", r,
                                 peers + (size_t)r * 80, why);
    }
    free(pend);
    free(fds);
    free(nonces);
    free(peers);
    return st;
}

/* A rank other than 0: connect, HELLO, and rank 0's WELCOME with this rank's nonce in it. */
static hidet_nccl_status_t client_handshake(socket_state_t *s, double deadline, char *msg, size_t n) {
    char why[512];
    int fd = hidet_nccl__sk_connect(s->addr, s->port, deadline, why, sizeof why);
    if (fd < 0)
        return hidet_nccl__say(msg, n, hidet_nccl__now() >= deadline ? HIDET_NCCL_ERROR_TIMEOUT : HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d could not reach rank 0: %s", s->rank, why);
    s->fds[0] = fd;
    uint8_t nonce[HN_SK_NONCE], hello[HN_SK_HEADER + 4];
    if (getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "getrandom: %s", strerror(errno));
    size_t len = hidet_nccl__sk_encode(hello, sizeof hello, HN_SK_KIND_HELLO, s->key, (uint32_t)s->nranks,
                                       (uint32_t)s->rank, 0, nonce, NULL, 0);
    if (hidet_nccl__sk_send(fd, hello, len, deadline, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d could not say hello to %s:%d: %s", s->rank,
                               s->addr, s->port, why);
    uint8_t *buf = NULL;
    size_t got_len = 0;
    int got = hidet_nccl__sk_recv(fd, deadline, &buf, &got_len, why, sizeof why);
    if (got == 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                               "rank %d connected to %s:%d but no welcome came before the deadline (rank 0 waits for "
                               "every rank first: is one missing?)",
                               s->rank, s->addr, s->port);
    if (got < 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d got no welcome from %s:%d (%s): rank 0 refused its hello (another job's key "
                               "or size there, or this rank twice?)",
                               s->rank, s->addr, s->port, why);
    hidet_nccl__sk_msg_t m;
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (hidet_nccl__sk_parse(buf, got_len, &m, why, sizeof why) != 0)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: the welcome from %s:%d is bad: %s", s->rank,
                             s->addr, s->port, why);
    else if (m.kind != HN_SK_KIND_WELCOME || strcmp(m.key, s->key) != 0 || m.world_size != (uint32_t)s->nranks ||
             m.rank != 0 || memcmp(m.body, nonce, HN_SK_NONCE) != 0)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                             "rank %d: %s:%d answered with kind %d, key '%s', world %u, not this rank's welcome", s->rank,
                             s->addr, s->port, m.kind, m.key, m.world_size);
    else
        memcpy(s->session, m.nonce, HN_SK_NONCE);
    free(buf);
    return st;
}

/* Raises the soft limit of open files to the hard one when rank 0 needs more. */
static void enough_files(int needed) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)needed && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void close_all(socket_state_t *s) {
    for (int r = 0; s->fds && r < s->nranks; r++)
        if (s->fds[r] >= 0) close(s->fds[r]);
    free(s->fds);
    free(s);
}

static hidet_nccl_status_t socket_init(const void *params_v, const hidet_nccl_bootstrap_init_args_t *args,
                                       void **state, char *msg, size_t n) {
    hidet_nccl_socket_bootstrap_params_t p = HIDET_NCCL_SOCKET_BOOTSTRAP_PARAMS_INIT;
    char why[384];
    if (params_v != NULL && hidet_nccl__copy_sized(&p, sizeof p, params_v, "params", why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", why);
    socket_state_t *s = calloc(1, sizeof *s);
    if (s == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    hidet_nccl_status_t st = resolve_place(&p, s, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__rank_field(p.rank, args->rank, "rank", 1, args, &s->rank, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__rank_field(p.nranks, args->nranks, "number of ranks", 1, args, &s->nranks, msg, n);
    if (st == HIDET_NCCL_SUCCESS)
        st = hidet_nccl__rank_field(p.local_rank, args->local_rank, "local rank", 0, args, &s->local_rank, msg, n);
    if (st == HIDET_NCCL_SUCCESS)
        st = hidet_nccl__rank_field(p.local_size, args->local_size, "local size", 0, args, &s->local_size, msg, n);
    if (st == HIDET_NCCL_SUCCESS && (s->nranks < 1 || s->nranks > HN_SK_MAX_WORLD || s->rank >= s->nranks))
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank %d of %d ranks is out of range (1 .. %d ranks)",
                             s->rank, s->nranks, HN_SK_MAX_WORLD);
    if (st == HIDET_NCCL_SUCCESS && (s->fds = malloc((size_t)s->nranks * sizeof *s->fds)) == NULL)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", s->nranks);
    if (st != HIDET_NCCL_SUCCESS) {
        free(s);
        return st;
    }
    for (int r = 0; r < s->nranks; r++) s->fds[r] = -1;
    double deadline = hidet_nccl__now() + args->timeout_s;
    if (s->nranks > 1 && s->rank == 0) {
        enough_files(s->nranks + 64 + 32);
        if (getrandom(s->session, sizeof s->session, 0) != (ssize_t)sizeof s->session)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "getrandom: %s", strerror(errno));
        else
            st = root_handshake(s, deadline, msg, n);
    } else if (s->nranks > 1) {
        st = client_handshake(s, deadline, msg, n);
    }
    if (st != HIDET_NCCL_SUCCESS) {
        close_all(s);
        return st;
    }
    HN_INFO("socket rendezvous at %s:%d (key '%s'): rank %d of %d ready", s->addr, s->port, s->key, s->rank, s->nranks);
    *state = s;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t socket_rank_size(void *state, int *rank, int *size, char *msg, size_t n) {
    (void)msg, (void)n;
    const socket_state_t *s = state;
    *rank = s->rank;
    *size = s->nranks;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t socket_local_rank(void *state, int *local_rank, int *local_size, char *msg, size_t n) {
    (void)msg, (void)n;
    const socket_state_t *s = state;
    *local_rank = s->local_rank;
    *local_size = s->local_size;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t socket_finalize(void *state, char *msg, size_t n) {
    (void)msg, (void)n;
    close_all(state);
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t send_data(const socket_state_t *s, int to, uint64_t tag, const void *buf, size_t bytes,
                                     double deadline, char *msg, size_t n) {
    size_t cap = HN_SK_HEADER + bytes + 4;
    uint8_t *m = malloc(cap);
    if (m == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %zu bytes", cap);
    size_t len = hidet_nccl__sk_encode(m, cap, HN_SK_KIND_DATA, s->key, (uint32_t)s->nranks, (uint32_t)s->rank, tag,
                                       s->session, buf, (uint32_t)bytes);
    char why[256];
    int rc = len ? hidet_nccl__sk_send(s->fds[s->rank == 0 ? to : 0], m, len, deadline, why, sizeof why) : -1;
    free(m);
    if (rc == 0) return HIDET_NCCL_SUCCESS;
    return hidet_nccl__say(msg, n, hidet_nccl__now() >= deadline ? HIDET_NCCL_ERROR_TIMEOUT : HIDET_NCCL_ERROR_BOOTSTRAP,
                           "rank %d could not send round %llu to rank %d: %s", s->rank, (unsigned long long)tag, to,
                           len ? why : "too large");
}

/* Round `tag`'s bytes from rank `from` (through rank 0's connection for ranks other than 0). */
static hidet_nccl_status_t recv_data(const socket_state_t *s, int from, uint64_t tag, void *buf, size_t bytes,
                                     double deadline, double timeout_s, char *msg, size_t n) {
    uint8_t *m = NULL;
    size_t len = 0;
    char why[256];
    int got = hidet_nccl__sk_recv(s->fds[s->rank == 0 ? from : 0], deadline, &m, &len, why, sizeof why);
    if (got == 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                               "rank %d waited %.1f s for round %llu from rank %d: a rank has not called the same "
                               "bootstrap step (or has died)",
                               s->rank, timeout_s, (unsigned long long)tag, from);
    if (got < 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: round %llu from rank %d: %s%s", s->rank,
                               (unsigned long long)tag, s->rank == 0 ? from : 0, why,
                               strstr(why, "closed") ? " (it gave up at its deadline, or died)" : "");
    hidet_nccl__sk_msg_t d;
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (hidet_nccl__sk_parse(m, len, &d, why, sizeof why) != 0)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: round %llu from rank %d is bad: %s", s->rank,
                             (unsigned long long)tag, from, why);
    else if (d.kind != HN_SK_KIND_DATA || strcmp(d.key, s->key) != 0 || d.world_size != (uint32_t)s->nranks ||
             d.rank != (uint32_t)from || d.tag != tag || memcmp(d.nonce, s->session, HN_SK_NONCE) != 0 ||
             d.body_bytes != bytes)
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP,
                             "rank %d expected round %llu from rank %d (%zu bytes) and got kind %d, round %llu from rank "
                             "%u (%u bytes)%s: the ranks do not call the same bootstrap steps",
                             s->rank, (unsigned long long)tag, from, bytes, d.kind, (unsigned long long)d.tag, d.rank,
                             d.body_bytes, memcmp(d.nonce, s->session, HN_SK_NONCE) ? ", another session" : "");
    else if (bytes)
        memcpy(buf, d.body, bytes);
    free(m);
    return st;
}

static hidet_nccl_status_t socket_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                            double timeout_s, char *msg, size_t n) {
    const socket_state_t *s = state;
    double deadline = hidet_nccl__now() + timeout_s;
    if (s->nranks == 1) return HIDET_NCCL_SUCCESS;
    if (s->rank != 0) {
        if (s->rank == root) return send_data(s, 0, tag, buf, bytes, deadline, msg, n);
        return recv_data(s, 0, tag, buf, bytes, deadline, timeout_s, msg, n);
    }
    hidet_nccl_status_t st = root == 0 ? HIDET_NCCL_SUCCESS : recv_data(s, root, tag, buf, bytes, deadline, timeout_s, msg, n);
    for (int r = 1; st == HIDET_NCCL_SUCCESS && r < s->nranks; r++)
        if (r != root) st = send_data(s, r, tag, buf, bytes, deadline, msg, n);
    return st;
}

static hidet_nccl_status_t socket_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                            double timeout_s, char *msg, size_t n) {
    const socket_state_t *s = state;
    double deadline = hidet_nccl__now() + timeout_s;
    size_t all = bytes * (size_t)s->nranks; /* at most 8 MiB (the plug-in contract) */
    if (s->rank != 0) {
        hidet_nccl_status_t st = send_data(s, 0, tag, send, bytes, deadline, msg, n);
        return st == HIDET_NCCL_SUCCESS ? recv_data(s, 0, tag, recv, all, deadline, timeout_s, msg, n) : st;
    }
    memmove(recv, send, bytes);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    for (int r = 1; st == HIDET_NCCL_SUCCESS && r < s->nranks; r++)
        st = recv_data(s, r, tag, (uint8_t *)recv + (size_t)r * bytes, bytes, deadline, timeout_s, msg, n);
    for (int r = 1; st == HIDET_NCCL_SUCCESS && r < s->nranks; r++) st = send_data(s, r, tag, recv, all, deadline, msg, n);
    return st;
}

const hidet_nccl_bootstrap_v2_t hidet_nccl_bootstrap_socket_v2 = {
    .name = "socket",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = socket_init,
    .rank_size = socket_rank_size,
    .local_rank = socket_local_rank,
    .broadcast = socket_broadcast,
    .allgather = socket_allgather,
    .finalize = socket_finalize,
};

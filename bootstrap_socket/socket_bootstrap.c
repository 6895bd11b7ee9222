/* The socket rendezvous, for many nodes without MPI, PMIx or a shared file system (as torchrun
 * does it): rank 0 listens on MASTER_PORT, every other rank connects to MASTER_ADDR:MASTER_PORT
 * and keeps its connection for the bootstrap's life (a star). Protocol (docs/bootstrap_socket.md):
 *   1. each rank says hello; with a job secret, each proves it holds it, and rank 0 proves it in
 *      its welcome; rank 0 admits the ranks fairly, dropping and logging strangers
 *      (bootstrap_socket/socket_handshake.c);
 *   2. a broadcast goes through rank 0 (from a root other than 0: to rank 0, then to the
 *      others); an allgather sends every part to rank 0, which sends the whole to every rank.
 * Every message is checked (kind, key, world, sender, round, session); every wait has the
 * deadline. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <unistd.h>

#include "bootstrap_socket/socket_format_int.h"
#include "bootstrap_socket/socket_handshake_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"

/* Address, port and job key from params or the settings. */
static hidet_nccl_status_t resolve_place(const hidet_nccl_socket_bootstrap_params_t *p, hn_sk_state_t *s, char *msg,
                                         size_t n) {
    const char *addr = p->master_addr ? p->master_addr : hidet_nccl__setting_str(HN_SETTING_MASTER_ADDR);
    const char *bad_port = hidet_nccl__setting_error(HN_SETTING_MASTER_PORT);
    int port = p->master_port;
    if (port < 0) {
        if (bad_port != NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", bad_port);
        port = -1;
        if (hidet_nccl__setting_is_set(HN_SETTING_MASTER_PORT)) hidet_nccl__setting_int(HN_SETTING_MASTER_PORT, &port);
        /* torchrun's agent already serves its own store on MASTER_PORT: meet on the next port,
         * the same on every rank and node (open both in a firewall). */
        const char *agent = hidet_nccl__setting_str(HN_SETTING_TORCHELASTIC_USE_AGENT_STORE);
        if (port > 0 && port < 65535 && agent != NULL && strcasecmp(agent, "true") == 0) {
            HN_INFO("socket rendezvous: torchrun's agent holds MASTER_PORT %d; meeting on port %d", port, port + 1);
            port++;
        }
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

/* The job's secret, if any; without one, a warning (from rank 0, once) that the rendezvous admits
 * whoever knows the job key. */
static hidet_nccl_status_t job_secret(hn_sk_state_t *s, char *msg, size_t n) {
    static atomic_int warned;
    char why[512];
    int got = hidet_nccl__job_secret(s->secret, &s->secret_len, why, sizeof why);
    if (got < 0) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", why);
    if (got == 0 && s->rank == 0 && atomic_exchange(&warned, 1) == 0) /* once per job: rank 0 says it */
        HN_WARN("socket rendezvous at %s:%d (job key '%s') without a job secret: any process that reaches the port and "
                "knows the key can take a rank's place. Set HIDET_NCCL_JOB_SECRET_FILE (or HIDET_NCCL_JOB_SECRET) on "
                "every rank; hidet-nccl-run sets a secret for the ranks it starts", s->addr, s->port, s->key);
    return HIDET_NCCL_SUCCESS;
}

/* Raises the soft limit of open files to the hard one when rank 0 needs more. */
static void enough_files(int needed) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)needed && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void close_all(hn_sk_state_t *s) {
    explicit_bzero(s->secret, sizeof s->secret);
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
    hn_sk_state_t *s = calloc(1, sizeof *s);
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
    if (s->nranks > 1 && (st = job_secret(s, msg, n)) != HIDET_NCCL_SUCCESS) {
        close_all(s);
        return st;
    }
    double deadline = hidet_nccl__now() + args->timeout_s;
    if (s->nranks > 1 && s->rank == 0) {
        enough_files(s->nranks + HN_SK_PENDING_MAX + 32); /* the ranks, the connections waiting, spare */
        if (getrandom(s->session, sizeof s->session, 0) != (ssize_t)sizeof s->session)
            st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "getrandom: %s", strerror(errno));
        else
            st = hidet_nccl__sk_root_handshake(s, deadline, msg, n);
    } else if (s->nranks > 1) {
        st = hidet_nccl__sk_client_handshake(s, deadline, msg, n);
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
    const hn_sk_state_t *s = state;
    *rank = s->rank;
    *size = s->nranks;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t socket_local_rank(void *state, int *local_rank, int *local_size, char *msg, size_t n) {
    (void)msg, (void)n;
    const hn_sk_state_t *s = state;
    *local_rank = s->local_rank;
    *local_size = s->local_size;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t socket_finalize(void *state, char *msg, size_t n) {
    (void)msg, (void)n;
    close_all(state);
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t send_data(const hn_sk_state_t *s, int to, uint64_t tag, const void *buf, size_t bytes,
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
static hidet_nccl_status_t recv_data(const hn_sk_state_t *s, int from, uint64_t tag, void *buf, size_t bytes,
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
    const hn_sk_state_t *s = state;
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
    const hn_sk_state_t *s = state;
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

const hidet_nccl_bootstrap_v3_t hidet_nccl_bootstrap_socket_v3 = {
    .name = "socket",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = socket_init,
    .rank_size = socket_rank_size,
    .local_rank = socket_local_rank,
    .broadcast = socket_broadcast,
    .allgather = socket_allgather,
    .finalize = socket_finalize,
};

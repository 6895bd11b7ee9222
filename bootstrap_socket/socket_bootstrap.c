/* The socket rendezvous, for many nodes without MPI, PMIx or a shared file system (as torchrun
 * does it): a star of connections to one hub, kept for the bootstrap's life. The hub is rank 0,
 * which listens on MASTER_PORT while every other rank connects to MASTER_ADDR:MASTER_PORT; or,
 * under hidet-nccl-run ($HIDET_NCCL_RENDEZVOUS_SERVED=1), the launcher of node 0, which serves
 * the job's rendezvous (bootstrap_socket/socket_server.c) and outlives any rank: every rank, rank
 * 0 included, connects to it. Protocol (docs/bootstrap_socket.md):
 *   1. each rank says hello; with a job secret, each proves it holds it, and the hub proves it in
 *      its welcome; the hub admits the ranks fairly, dropping and logging strangers
 *      (bootstrap_socket/socket_admit.c, socket_handshake.c);
 *   2. broadcasts and allgathers go through the hub (bootstrap_socket/socket_rounds.c);
 *   3. after a rank died, a recovery round: the hub decides who goes on (socket_recover.c);
 *   4. a rank that died and was started again joins the others (a served rendezvous only): its
 *      init finds the job formed (joining), and a heal round takes it back in (socket_heal.c).
 * Every message is checked (kind, key, world, sender, round, session); every wait has the
 * deadline. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap_socket/socket_format_int.h"
#include "bootstrap_socket/socket_handshake_int.h"
#include "bootstrap_socket/socket_heal_int.h"
#include "bootstrap_socket/socket_io_int.h"
#include "bootstrap_socket/socket_news_int.h"
#include "bootstrap_socket/socket_recover_int.h"
#include "bootstrap_socket/socket_rounds_int.h"
#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"

/* Whether a served rendezvous (hidet-nccl-run) is the hub. */
static hidet_nccl_status_t served(hn_sk_state_t *s, char *msg, size_t n) {
    const char *bad = hidet_nccl__setting_error(HN_SETTING_RENDEZVOUS_SERVED);
    if (bad != NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", bad);
    hidet_nccl__setting_int(HN_SETTING_RENDEZVOUS_SERVED, &s->served);
    return HIDET_NCCL_SUCCESS;
}

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
         * the same on every rank and node (open both in a firewall). A served rendezvous is on
         * the port its launcher gave, whatever launcher started that one. */
        const char *agent = hidet_nccl__setting_str(HN_SETTING_TORCHELASTIC_USE_AGENT_STORE);
        if (port > 0 && port < 65535 && agent != NULL && strcasecmp(agent, "true") == 0 && !s->served) {
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
    if (got == 0 && s->rank == 0 && !s->served && atomic_exchange(&warned, 1) == 0) /* once per job: rank 0 says it
                                                                                   (a served rendezvous says it itself) */
        HN_WARN("socket rendezvous at %s:%d (job key '%s') without a job secret: any process that reaches the port and "
                "knows the key can take a rank's place. Set HIDET_NCCL_JOB_SECRET_FILE (or HIDET_NCCL_JOB_SECRET) on "
                "every rank; hidet-nccl-run sets a secret for the ranks it starts", s->addr, s->port, s->key);
    return HIDET_NCCL_SUCCESS;
}

/* A connection closed after what its peer sent is read: with unread bytes in it, a close resets the
 * connection, and the peer may lose what was sent to it last (a decision, a refusal). */
static void drain_close(int fd) {
    char buf[4096];
    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    close(fd);
}

static void close_all(hn_sk_state_t *s) {
    explicit_bzero(s->secret, sizeof s->secret);
    if (s->served && !s->joining && s->fds && s->fds[0] >= 0) { /* it leaves well: not a rank to take back */
        char why[128];
        hidet_nccl__sk_send_kind(s, s->fds[0], HN_SK_KIND_BYE, 0, NULL, 0, hidet_nccl__now() + 0.1, why, sizeof why);
    }
    for (int r = 0; s->fds && r < s->nranks; r++)
        if (s->fds[r] >= 0) drain_close(s->fds[r]);
    for (int i = 0; i < s->n_left; i++) drain_close(s->left[i]);
    hidet_nccl__sk_hub_late_close(s);
    free(s->fds);
    free(s->jobs);
    free(s->joins);
    free(s->waits);
    free(s->left);
    free(s->seen_bits);
    free(s);
}

/* The tables of rank 0's hub. */
static hidet_nccl_status_t tables(hn_sk_state_t *s, char *msg, size_t n) {
    size_t k = (size_t)s->nranks;
    s->fds = malloc(k * sizeof *s->fds);
    s->jobs = malloc(k * sizeof *s->jobs);
    s->joins = calloc(k, sizeof *s->joins);
    s->waits = calloc(k, sizeof *s->waits);
    for (int r = 0; s->fds && r < s->nranks; r++) s->fds[r] = -1; /* what close_all closes */
    if (!s->fds || !s->jobs || !s->joins || !s->waits)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", s->nranks);
    for (int r = 0; r < s->nranks; r++) s->jobs[r] = r;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t socket_init(const void *params_v, const hidet_nccl_bootstrap_init_args_t *args,
                                       void **state, char *msg, size_t n) {
    hidet_nccl_socket_bootstrap_params_t p = HIDET_NCCL_SOCKET_BOOTSTRAP_PARAMS_INIT;
    char why[384];
    if (params_v != NULL && hidet_nccl__copy_sized(&p, sizeof p, params_v, "params", why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", why);
    hn_sk_state_t *s = calloc(1, sizeof *s);
    if (s == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    s->lfd = -1;
    hidet_nccl_status_t st = served(s, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = resolve_place(&p, s, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__rank_field(p.rank, args->rank, "rank", 1, args, &s->rank, msg, n);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__rank_field(p.nranks, args->nranks, "number of ranks", 1, args, &s->nranks, msg, n);
    if (st == HIDET_NCCL_SUCCESS)
        st = hidet_nccl__rank_field(p.local_rank, args->local_rank, "local rank", 0, args, &s->local_rank, msg, n);
    if (st == HIDET_NCCL_SUCCESS)
        st = hidet_nccl__rank_field(p.local_size, args->local_size, "local size", 0, args, &s->local_size, msg, n);
    if (st == HIDET_NCCL_SUCCESS && (s->nranks < 1 || s->nranks > HN_SK_MAX_WORLD || s->rank >= s->nranks))
        st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank %d of %d ranks is out of range (1 .. %d ranks)",
                             s->rank, s->nranks, HN_SK_MAX_WORLD);
    if (st == HIDET_NCCL_SUCCESS) st = tables(s, msg, n);
    s->job_rank = s->rank;
    s->job_nranks = s->nranks;
    if (st == HIDET_NCCL_SUCCESS && s->nranks > 1) st = job_secret(s, msg, n);
    if (st != HIDET_NCCL_SUCCESS) {
        close_all(s);
        return st;
    }
    double deadline = hidet_nccl__now() + args->timeout_s;
    if (s->nranks > 1 && s->rank == 0 && !s->served) { /* its hub sizes itself from the open-files limit */
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
    HN_INFO("socket rendezvous at %s:%d (key '%s', hub: %s): rank %d of %d ready", s->addr, s->port, s->key,
            hidet_nccl__sk_hub(s), s->rank, s->nranks);
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

static hidet_nccl_status_t socket_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                            double timeout_s, char *msg, size_t n) {
    return hidet_nccl__sk_broadcast(state, buf, bytes, root, tag, timeout_s, msg, n);
}

static hidet_nccl_status_t socket_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                            double timeout_s, char *msg, size_t n) {
    return hidet_nccl__sk_allgather(state, send, recv, bytes, tag, timeout_s, msg, n);
}

static hidet_nccl_status_t socket_recover(void *state, uint64_t epoch, double wait_s, double timeout_s,
                                          unsigned char *kept, char *msg, size_t n) {
    return hidet_nccl__sk_recover(state, epoch, wait_s, timeout_s, kept, msg, n);
}

static int socket_joining(void *state) { return ((const hn_sk_state_t *)state)->joining; }

static hidet_nccl_status_t socket_heal(void *state, uint64_t *epoch, double wait_s, double timeout_s,
                                       unsigned char *members, unsigned char *joined, char *msg, size_t n) {
    return hidet_nccl__sk_heal(state, epoch, wait_s, timeout_s, members, joined, msg, n);
}

const hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_socket_v4 = {
    .name = "socket",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = socket_init,
    .rank_size = socket_rank_size,
    .local_rank = socket_local_rank,
    .broadcast = socket_broadcast,
    .allgather = socket_allgather,
    .finalize = socket_finalize,
    .recover = socket_recover,
    .recover_unsupported = NULL,
    .peer_lost = hidet_nccl__sk_peer_lost,
    .joining = socket_joining,
    .heal = socket_heal,
    .heal_unsupported = NULL,
};

/* The MPI bootstrap: a duplicated communicator, MPI_Comm_idup/MPI_Ibcast/MPI_Iallgather polled
 * against a deadline, and MPI initialized (and later finalized) only when the application did not. */
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/kit.h"
#include "hidet_nccl/bootstrap_mpi.h"

typedef struct {
    MPI_Comm comm; /* our duplicate */
    int rank, size, local_rank, local_size;
} mpi_state_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_we_initialized; /* this library called MPI_Init_thread */
static int g_live;           /* MPI bootstraps not yet finalized */
static int g_finalize_asked; /* hidet_nccl_finalize ran while some were live */

static hidet_nccl_status_t mpi_fail(char *msg, size_t n, const char *call, int rc) {
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "%s failed: %s (MPI error %d)", call, s, rc);
}

/* MPI_Finalize, if this library initialized MPI and no MPI bootstrap is live. */
static void finalize_mpi_if_ours_locked(void) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (g_we_initialized && g_live == 0 && !finalized) {
        HN_INFO("finalizing MPI, which hidet_nccl initialized");
        MPI_Finalize();
        g_we_initialized = 0;
    }
}

static void at_hidet_finalize(void) {
    pthread_mutex_lock(&g_lock);
    g_finalize_asked = 1;
    finalize_mpi_if_ours_locked();
    pthread_mutex_unlock(&g_lock);
}

static hidet_nccl_status_t ensure_mpi(char *msg, size_t n) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_USAGE, "MPI is already finalized; MPI cannot be used again");
    if (initialized) return HIDET_NCCL_SUCCESS;
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) return mpi_fail(msg, n, "MPI_Init_thread", rc);
    g_we_initialized = 1;
    hidet_nccl__at_finalize(at_hidet_finalize);
    HN_INFO("MPI was not initialized: hidet_nccl initialized it (thread level %d) and will finalize it", provided);
    return HIDET_NCCL_SUCCESS;
}

/* Polls a non-blocking collective until done or the deadline. */
static hidet_nccl_status_t wait_request(MPI_Request *req, const mpi_state_t *s, const char *what, double timeout_s,
                                        char *msg, size_t n) {
    hn_poll_t poll;
    hidet_nccl__poll_begin(&poll, timeout_s, 0, 1000, 100000, 0);
    for (;;) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_fail(msg, n, what, rc);
        if (done) return HIDET_NCCL_SUCCESS;
        if (hidet_nccl__poll_expired(&poll))
            return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                       "%s did not complete within %.1f s on rank %d of %d: a rank of the communicator has not "
                       "called it (or has died)",
                       what, timeout_s, s->rank, s->size);
        hidet_nccl__poll_pause(&poll);
    }
}

/* MPI_Comm_idup: our own communicator, whose collectives cannot mix with the application's. */
static hidet_nccl_status_t dup_comm(MPI_Comm user, mpi_state_t *s, double timeout_s, char *msg, size_t n) {
    MPI_Request req;
    int rc = MPI_Comm_idup(user, &s->comm, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(msg, n, "MPI_Comm_idup", rc);
    hidet_nccl_status_t st = wait_request(&req, s, "MPI_Comm_idup", timeout_s, msg, n);
    if (st == HIDET_NCCL_SUCCESS) MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
    return st; /* on a timeout the request stays pending: MPI cannot cancel a collective */
}

/* The local rank among the ranks of this machine (what MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED gives, but polled): an MPI_Iallgather of the kernel's boot id and
 * the host name, which together name one machine even across containers. */
#define NODE_KEY 128
static hidet_nccl_status_t find_local_rank(mpi_state_t *s, double timeout_s, char *msg, size_t n) {
    char mine[NODE_KEY] = "";
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(boot, sizeof boot, f) == NULL) boot[0] = '\0';
        boot[strcspn(boot, "\n")] = '\0';
        fclose(f);
    }
    char host[NODE_KEY - sizeof boot] = "";
    gethostname(host, sizeof host - 1);
    snprintf(mine, sizeof mine, "%s|%s", boot, host);
    char *all = calloc((size_t)s->size, NODE_KEY);
    if (all == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d node names", s->size);
    MPI_Request req;
    int rc = MPI_Iallgather(mine, NODE_KEY, MPI_BYTE, all, NODE_KEY, MPI_BYTE, s->comm, &req);
    hidet_nccl_status_t st = rc != MPI_SUCCESS ? mpi_fail(msg, n, "MPI_Iallgather", rc)
                                               : wait_request(&req, s, "MPI_Iallgather of node names", timeout_s,
                                                              msg, n);
    if (st == HIDET_NCCL_SUCCESS) {
        s->local_rank = s->local_size = 0;
        for (int r = 0; r < s->size; r++) {
            if (memcmp(all + (size_t)r * NODE_KEY, mine, NODE_KEY) != 0) continue;
            if (r < s->rank) s->local_rank++;
            s->local_size++;
        }
    }
    if (st != HIDET_NCCL_ERROR_TIMEOUT) free(all); /* after a timeout MPI still owns it */
    return st;
}

/* Every step of init is non-blocking and polled against init's deadline (args->timeout_s),
 * so that a rank that never calls init is an error here rather than a hang. The launcher's
 * rank hints are not needed: MPI knows. */
static hidet_nccl_status_t mpi_init(const void *params, const hidet_nccl_bootstrap_init_args_t *args, void **state,
                                    char *msg, size_t n) {
    MPI_Comm user = params ? *(const MPI_Comm *)params : MPI_COMM_WORLD;
    if (user == MPI_COMM_NULL)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                   "the MPI communicator is MPI_COMM_NULL (never created, or freed)");
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = ensure_mpi(msg, n);
    pthread_mutex_unlock(&g_lock);
    if (st != HIDET_NCCL_SUCCESS) return st;
    /* Errors on these calls come back to us instead of aborting the job. */
    MPI_Errhandler saved;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int inter = 0;
    int rc = MPI_Comm_test_inter(user, &inter);
    mpi_state_t *s = calloc(1, sizeof *s);
    if (s == NULL) st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    else if (rc != MPI_SUCCESS) st = mpi_fail(msg, n, "MPI_Comm_test_inter (is the communicator valid?)", rc);
    else if (inter) st = hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "an intercommunicator is not supported");
    else {
        MPI_Comm_rank(user, &s->rank);
        MPI_Comm_size(user, &s->size);
        st = dup_comm(user, s, args->timeout_s, msg, n);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, saved);
    MPI_Errhandler_free(&saved);
    if (st == HIDET_NCCL_SUCCESS) {
        st = find_local_rank(s, args->timeout_s, msg, n);
        if (st != HIDET_NCCL_SUCCESS) MPI_Comm_free(&s->comm);
    }
    if (st != HIDET_NCCL_SUCCESS) {
        if (st != HIDET_NCCL_ERROR_TIMEOUT) free(s); /* a timed-out MPI_Comm_idup may still write s->comm */
        return st;
    }
    pthread_mutex_lock(&g_lock);
    g_live++;
    pthread_mutex_unlock(&g_lock);
    *state = s;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t mpi_rank_size(void *state, int *rank, int *size, char *msg, size_t n) {
    (void)msg;
    (void)n;
    const mpi_state_t *s = state;
    *rank = s->rank;
    *size = s->size;
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t mpi_local_rank(void *state, int *local_rank, int *local_size, char *msg, size_t n) {
    (void)msg;
    (void)n;
    const mpi_state_t *s = state;
    *local_rank = s->local_rank;
    *local_size = s->local_size;
    return HIDET_NCCL_SUCCESS;
}

/* Collectives work on a heap copy: after a timeout MPI may still complete the collective
 * (when the late rank arrives) and write into it, so it is then left allocated. */
static hidet_nccl_status_t finish_staged(hidet_nccl_status_t st, unsigned char *stage, void *out, size_t bytes) {
    if (st == HIDET_NCCL_ERROR_TIMEOUT) return st; /* stage stays: MPI still owns it */
    if (st == HIDET_NCCL_SUCCESS) memcpy(out, stage, bytes);
    free(stage);
    return st;
}

static hidet_nccl_status_t mpi_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                         double timeout_s, char *msg, size_t n) {
    (void)tag; /* MPI keeps collectives apart by order */
    const mpi_state_t *s = state;
    unsigned char *stage = malloc(bytes ? bytes : 1);
    if (stage == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %zu bytes", bytes);
    memcpy(stage, buf, bytes);
    MPI_Request req;
    int rc = MPI_Ibcast(stage, (int)bytes, MPI_BYTE, root, s->comm, &req);
    hidet_nccl_status_t st = rc != MPI_SUCCESS ? mpi_fail(msg, n, "MPI_Ibcast", rc)
                                               : wait_request(&req, s, "MPI_Ibcast", timeout_s, msg, n);
    return finish_staged(st, stage, buf, bytes);
}

static hidet_nccl_status_t mpi_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                         double timeout_s, char *msg, size_t n) {
    (void)tag;
    const mpi_state_t *s = state;
    size_t all = bytes * (size_t)s->size;
    unsigned char *stage = malloc(bytes + all ? bytes + all : 1);
    if (stage == NULL) return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %zu bytes", bytes + all);
    memcpy(stage + all, send, bytes);
    MPI_Request req;
    int rc = MPI_Iallgather(stage + all, (int)bytes, MPI_BYTE, stage, (int)bytes, MPI_BYTE, s->comm, &req);
    hidet_nccl_status_t st = rc != MPI_SUCCESS ? mpi_fail(msg, n, "MPI_Iallgather", rc)
                                               : wait_request(&req, s, "MPI_Iallgather", timeout_s, msg, n);
    return finish_staged(st, stage, recv, all);
}

static hidet_nccl_status_t mpi_finalize(void *state, char *msg, size_t n) {
    (void)msg;
    (void)n;
    mpi_state_t *s = state;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&s->comm);
    free(s);
    pthread_mutex_lock(&g_lock);
    g_live--;
    if (g_finalize_asked) finalize_mpi_if_ours_locked();
    pthread_mutex_unlock(&g_lock);
    return HIDET_NCCL_SUCCESS;
}

const hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_mpi_v4 = {
    .name = "mpi",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = mpi_init,
    .rank_size = mpi_rank_size,
    .local_rank = mpi_local_rank,
    .broadcast = mpi_broadcast,
    .allgather = mpi_allgather,
    .finalize = mpi_finalize,
    .recover = NULL,
    .recover_unsupported = "MPI ends the whole job when a rank dies (MPI without ULFM cannot shrink its communicator "
                           "to the survivors); start the job with hidet-nccl-run (file or socket rendezvous) to "
                           "survive a dead rank",
    .heal_unsupported = "an MPI job does not take a restarted process back in under its old rank (MPI_Comm_spawn "
                        "makes new ranks, and without ULFM the job ends when a rank dies); start the job with "
                        "hidet-nccl-run --max-restarts (file or socket rendezvous) to heal",
};

hidet_nccl_status_t hidet_nccl_bootstrap_mpi(MPI_Comm comm, hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    return hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_mpi_v4, &comm, out);
}

hidet_nccl_status_t hidet_nccl_mpi_comm_init(MPI_Comm comm, const hidet_nccl_init_options_t *options, int *comm_id) {
    HN_ENTER();
    return hidet_nccl__comm_init_over(&hidet_nccl_bootstrap_mpi_v4, &comm, options, comm_id);
}

hidet_nccl_status_t hidet_nccl_mpi_init(int *comm_id) {
    HN_ENTER();
    return hidet_nccl_mpi_comm_init(MPI_COMM_WORLD, NULL, comm_id);
}

hidet_nccl_status_t hidet_nccl_mpi_comm_init_fortran(MPI_Fint comm, const hidet_nccl_init_options_t *options,
                                                     int *comm_id) {
    HN_ENTER();
    return hidet_nccl_mpi_comm_init(MPI_Comm_f2c(comm), options, comm_id);
}

/* The MPI bootstrap: a duplicated communicator, MPI_Ibcast/MPI_Iallgather polled against a
 * deadline, and MPI initialized (and later finalized) only when the application did not. */
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error_int.h"
#include "core/finalize_hooks_int.h"
#include "core/log_int.h"
#include "core/wait_int.h"
#include "hidet_nccl/bootstrap_mpi.h"

typedef struct {
    MPI_Comm comm; /* our duplicate */
    int rank, size, local_rank, local_size;
} mpi_state_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_we_initialized; /* this library called MPI_Init_thread */
static int g_live;           /* MPI bootstraps not yet finalized */
static int g_finalize_asked; /* hidet_nccl_finalize ran while some were live */

static hidet_nccl_status_t say(char *msg, size_t n, hidet_nccl_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static hidet_nccl_status_t say(char *msg, size_t n, hidet_nccl_status_t st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, n, fmt, ap);
    va_end(ap);
    return st;
}

static hidet_nccl_status_t mpi_fail(char *msg, size_t n, const char *call, int rc) {
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "%s failed: %s (MPI error %d)", call, s, rc);
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
        return say(msg, n, HIDET_NCCL_ERROR_INVALID_USAGE, "MPI is already finalized; MPI cannot be used again");
    if (initialized) return HIDET_NCCL_SUCCESS;
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) return mpi_fail(msg, n, "MPI_Init_thread", rc);
    g_we_initialized = 1;
    hidet_nccl__at_finalize(at_hidet_finalize);
    HN_INFO("MPI was not initialized: hidet_nccl initialized it (thread level %d) and will finalize it", provided);
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t mpi_init(const void *params, void **state, char *msg, size_t n) {
    MPI_Comm user = params ? *(const MPI_Comm *)params : MPI_COMM_WORLD;
    if (user == MPI_COMM_NULL)
        return say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
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
    if (s == NULL) st = say(msg, n, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    else if (rc != MPI_SUCCESS) st = mpi_fail(msg, n, "MPI_Comm_test_inter (is the communicator valid?)", rc);
    else if (inter) st = say(msg, n, HIDET_NCCL_ERROR_INVALID_ARGUMENT, "an intercommunicator is not supported");
    else if ((rc = MPI_Comm_dup(user, &s->comm)) != MPI_SUCCESS) st = mpi_fail(msg, n, "MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, saved);
    MPI_Errhandler_free(&saved);
    if (st == HIDET_NCCL_SUCCESS) {
        MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
        MPI_Comm_rank(s->comm, &s->rank);
        MPI_Comm_size(s->comm, &s->size);
        MPI_Comm local; /* collective, so done here, where every rank is */
        rc = MPI_Comm_split_type(s->comm, MPI_COMM_TYPE_SHARED, s->rank, MPI_INFO_NULL, &local);
        if (rc != MPI_SUCCESS) {
            st = mpi_fail(msg, n, "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)", rc);
            MPI_Comm_free(&s->comm);
        } else {
            MPI_Comm_rank(local, &s->local_rank);
            MPI_Comm_size(local, &s->local_size);
            MPI_Comm_free(&local);
        }
    }
    if (st != HIDET_NCCL_SUCCESS) {
        free(s);
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

/* Polls a non-blocking collective until done or the deadline. */
static hidet_nccl_status_t wait_request(MPI_Request *req, const mpi_state_t *s, const char *what, double timeout_s,
                                        char *msg, size_t n) {
    double start = hidet_nccl__now();
    long sleep_ns = 1000;
    for (;;) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_fail(msg, n, what, rc);
        if (done) return HIDET_NCCL_SUCCESS;
        if (hidet_nccl__now() - start > timeout_s)
            return say(msg, n, HIDET_NCCL_ERROR_TIMEOUT,
                       "%s did not complete within %.1f s on rank %d of %d: a rank of the communicator has not "
                       "called it (or has died)",
                       what, timeout_s, s->rank, s->size);
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 100000) sleep_ns *= 2;
    }
}

static hidet_nccl_status_t mpi_broadcast(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                         double timeout_s, char *msg, size_t n) {
    (void)tag; /* MPI keeps collectives apart by order */
    const mpi_state_t *s = state;
    MPI_Request req;
    int rc = MPI_Ibcast(buf, (int)bytes, MPI_BYTE, root, s->comm, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(msg, n, "MPI_Ibcast", rc);
    return wait_request(&req, s, "MPI_Ibcast", timeout_s, msg, n);
}

static hidet_nccl_status_t mpi_allgather(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                         double timeout_s, char *msg, size_t n) {
    (void)tag;
    const mpi_state_t *s = state;
    MPI_Request req;
    int rc = MPI_Iallgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, s->comm, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(msg, n, "MPI_Iallgather", rc);
    return wait_request(&req, s, "MPI_Iallgather", timeout_s, msg, n);
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

const hidet_nccl_bootstrap_v1_t hidet_nccl_bootstrap_mpi_v1 = {
    .name = "mpi",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = mpi_init,
    .rank_size = mpi_rank_size,
    .local_rank = mpi_local_rank,
    .broadcast = mpi_broadcast,
    .allgather = mpi_allgather,
    .finalize = mpi_finalize,
};

hidet_nccl_status_t hidet_nccl_bootstrap_mpi(MPI_Comm comm, hidet_nccl_bootstrap_h *out) {
    return hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_mpi_v1, &comm, out);
}

hidet_nccl_status_t hidet_nccl_mpi_comm_init(MPI_Comm comm, const hidet_nccl_init_options_t *options, int *comm_id) {
    hidet_nccl_bootstrap_h bs;
    HN_CHECK(hidet_nccl_bootstrap_mpi(comm, &bs));
    hidet_nccl_status_t st = hidet_nccl_comm_init(bs, options, comm_id);
    if (st != HIDET_NCCL_SUCCESS) {
        char saved[4096];
        snprintf(saved, sizeof saved, "%s", hidet_nccl_last_error());
        hidet_nccl_bootstrap_destroy(bs);
        hidet_nccl__enter("hidet_nccl_mpi_comm_init");
        return hidet_nccl__fail(st, "hidet_nccl_mpi_comm_init", "%s", saved);
    }
    return hidet_nccl_bootstrap_destroy(bs);
}

hidet_nccl_status_t hidet_nccl_mpi_init(int *comm_id) { return hidet_nccl_mpi_comm_init(MPI_COMM_WORLD, NULL, comm_id); }

/* hidet_nccl_comm_destroy and hidet_nccl_finalize: releasing what the library owns, once;
 * first what the layers above keep per communicator, through the droppers they give. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/comm/blocking_call_int.h"
#include "core/comm/comm_destroy_int.h"
#include "core/base/status_int.h"
#include "core/base/finalize_hooks_int.h"
#include "core/base/log_int.h"
#include "core/base/settings_int.h"
#include "core/comm/registry_int.h"
#include "core/comm/wait_int.h"

#define MAX_DROPPERS 4

static pthread_mutex_t g_drop_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void (*comm)(int comm_id, int abandon);
    void (*all)(void);
} g_droppers[MAX_DROPPERS];
static int g_ndroppers;

void hidet_nccl__at_comm_drop(void (*comm)(int comm_id, int abandon), void (*all)(void)) {
    pthread_mutex_lock(&g_drop_lock);
    int known = 0;
    for (int i = 0; i < g_ndroppers; i++) known |= g_droppers[i].comm == comm && g_droppers[i].all == all;
    if (!known && g_ndroppers < MAX_DROPPERS) {
        g_droppers[g_ndroppers].comm = comm;
        g_droppers[g_ndroppers].all = all;
        g_ndroppers++;
    }
    pthread_mutex_unlock(&g_drop_lock);
}

/* The droppers given so far (a copy: they run without the lock). */
static int droppers(void (*comm[MAX_DROPPERS])(int, int), void (*all[MAX_DROPPERS])(void)) {
    pthread_mutex_lock(&g_drop_lock);
    int n = g_ndroppers;
    for (int i = 0; i < n; i++) {
        comm[i] = g_droppers[i].comm;
        all[i] = g_droppers[i].all;
    }
    pthread_mutex_unlock(&g_drop_lock);
    return n;
}

void hidet_nccl__comm_drop(int comm_id, int abandon) {
    void (*comm[MAX_DROPPERS])(int, int), (*all[MAX_DROPPERS])(void);
    int n = droppers(comm, all);
    for (int i = 0; i < n; i++) comm[i](comm_id, abandon);
}

/* ncclCommFinalize (awaited, non-blocking communicators need it) then ncclCommDestroy.
 * A finalize that fails or passes the deadline aborts the communicator instead. */
static hidet_nccl_status_t release(const hn_nccl_t *n, ncclComm_t comm, int id) {
    char what[96];
    snprintf(what, sizeof what, "ncclCommFinalize of communicator id %d", id);
    if (n->CommFinalize != NULL) {
        /* The setting's value is its default when the environment's is bad: a bad
         * HIDET_NCCL_TIMEOUT must not keep a communicator alive, nor leave a message. */
        hn_setting_info_t timeout_setting;
        hidet_nccl__setting_info(HN_SETTING_TIMEOUT, &timeout_setting);
        double timeout = timeout_setting.number;
        hidet_nccl_status_t st;
        ncclResult_t r = n->CommFinalize(comm);
        if (r != ncclSuccess && r != ncclInProgress) {
            n->CommAbort(comm);
            return hidet_nccl__nccl_fail("hidet_nccl_comm_destroy", what, r, comm);
        }
        ncclComm_t one = comm;
        st = hidet_nccl__await(n, &one, 1, timeout, 1, what);
        if (st != HIDET_NCCL_SUCCESS) return st; /* aborted by the await */
    }
    ncclResult_t r = n->CommDestroy(comm);
    if (r != ncclSuccess) {
        snprintf(what, sizeof what, "ncclCommDestroy of communicator id %d", id);
        return hidet_nccl__nccl_fail("hidet_nccl_comm_destroy", what, r, NULL);
    }
    return HIDET_NCCL_SUCCESS;
}

/* A failed communicator: its peers may be gone, so no finalize; ncclCommAbort. */
static hidet_nccl_status_t release_failed(const hn_nccl_t *n, ncclComm_t comm, int id) {
    ncclResult_t r = n->CommAbort(comm);
    if (r == ncclSuccess) return HIDET_NCCL_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "ncclCommAbort of failed communicator id %d", id);
    return hidet_nccl__nccl_fail("hidet_nccl_comm_destroy", what, r, NULL);
}

hidet_nccl_status_t hidet_nccl_comm_destroy(int comm_id) {
    HN_ENTER();
    hn_slot_t slot;
    HN_CHECK(hidet_nccl__registry_get(comm_id, 1, &slot));
    hidet_nccl__comm_drop(comm_id, slot.failed ? 2 : 0); /* its registrations and siblings first */
    return hidet_nccl__destroy_id(comm_id);
}

hidet_nccl_status_t hidet_nccl__destroy_id(int comm_id) {
    ncclComm_t comm;
    int owned, failed;
    HN_CHECK(hidet_nccl__registry_kill(comm_id, NULL, &comm, &owned, &failed));
    if (!owned) return HIDET_NCCL_SUCCESS; /* borrowed: the caller destroys it */
    const hn_nccl_t *n = hidet_nccl__nccl_loaded(); /* an owned communicator implies a loaded NCCL */
    if (failed) return release_failed(n, comm, comm_id);
    return release(n, comm, comm_id);
}

hidet_nccl_status_t hidet_nccl_finalize(void) {
    HN_ENTER();
    void (*comm[MAX_DROPPERS])(int, int), (*all[MAX_DROPPERS])(void);
    int ndroppers = droppers(comm, all);
    for (int i = 0; i < ndroppers; i++) all[i](); /* registrations undone while their communicators live */
    hn_registered_t *slots;
    int count;
    HN_CHECK(hidet_nccl__registry_take_all(&slots, &count));
    hidet_nccl_status_t first = HIDET_NCCL_SUCCESS;
    char first_message[1024] = "";
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    int released = 0;
    for (int i = 0; i < count; i++) {
        if (!slots[i].owned || n == NULL) continue;
        hidet_nccl_status_t st = slots[i].failed ? release_failed(n, slots[i].comm, slots[i].id)
                                                 : release(n, slots[i].comm, slots[i].id);
        released++;
        if (st != HIDET_NCCL_SUCCESS && first == HIDET_NCCL_SUCCESS) {
            first = st;
            snprintf(first_message, sizeof first_message, "%s", hidet_nccl__error_detail());
        }
    }
    HN_INFO("finalize: %d owned communicators destroyed, %d borrowed dropped", released, count - released);
    int stuck = hidet_nccl__blocking_calls_abandoned();
    if (stuck > 0)
        HN_WARN("finalize: %d NCCL init or split calls given up at their deadline are still inside NCCL on helper "
                "threads; what they make, if they ever return, is aborted", stuck);
    free(slots);
    hidet_nccl__run_finalize_hooks();
    if (first != HIDET_NCCL_SUCCESS)
        return HN_FAIL(first, "everything was released, but the first failure was: %s", first_message);
    return HIDET_NCCL_SUCCESS;
}

/* The communicator registry: ids, ownership, checks on every use. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error_int.h"
#include "core/nccl_loader_int.h"
#include "core/registry_int.h"

typedef struct {
    ncclComm_t comm;
    int owned;
    int live;
    int pending; /* reserved by a split inside a group; filled at group_end */
    int nranks;  /* 0: unknown (borrowed) */
    hidet_nccl_error_policy_t policy;
    char why[128]; /* why a dead id is dead; empty: destroyed */
} slot_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t *g_slots;
static int g_count;    /* ids handed out */
static int g_capacity;

static hidet_nccl_status_t check_id_locked(int id) {
    if (id < 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM, "communicator id %d is negative", id);
    if (g_count == 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM,
                       "communicator id %d was never given: no communicator exists (none created yet, or all "
                       "released by hidet_nccl_finalize)", id);
    if (id >= g_count)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM,
                       "communicator id %d was never given (%d ids have been given: 0 .. %d)", id, g_count,
                       g_count - 1);
    if (!g_slots[id].live)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_COMM, "communicator id %d was %s", id,
                       g_slots[id].why[0] ? g_slots[id].why : "destroyed");
    if (g_slots[id].pending)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "communicator id %d is not ready: it comes from a split inside a group that has not ended "
                       "(call hidet_nccl_group_end first)", id);
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t reserve_locked(int needed) {
    if (needed <= g_capacity) return HIDET_NCCL_SUCCESS;
    int cap = g_capacity ? g_capacity : 16;
    while (cap < needed) cap = cap > INT_MAX / 2 ? INT_MAX : cap * 2;
    slot_t *s = realloc(g_slots, (size_t)cap * sizeof *s);
    if (s == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory growing the registry to %d slots", cap);
    g_slots = s;
    g_capacity = cap;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__registry_add(ncclComm_t comm, int owned, int nranks, int *id) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = g_count == INT_MAX
                                 ? HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "the registry is full (%d ids)", g_count)
                                 : reserve_locked(g_count + 1);
    if (st == HIDET_NCCL_SUCCESS) {
        g_slots[g_count] = (slot_t){comm, owned, 1, comm == NULL, nranks, HIDET_NCCL_ON_ERROR_RETURN, ""};
        *id = g_count++;
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

void hidet_nccl__registry_fill(int id, ncclComm_t comm, int nranks) {
    pthread_mutex_lock(&g_lock);
    if (id >= 0 && id < g_count && g_slots[id].pending) {
        g_slots[id].comm = comm;
        g_slots[id].nranks = nranks;
        g_slots[id].pending = 0;
        g_slots[id].live = comm != NULL;
    }
    pthread_mutex_unlock(&g_lock);
}

hidet_nccl_status_t hidet_nccl__registry_get(int id, ncclComm_t *comm, int *owned) {
    return hidet_nccl__registry_lookup(id, comm, owned, NULL);
}

hidet_nccl_status_t hidet_nccl__registry_lookup(int id, ncclComm_t *comm, int *owned, int *nranks) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(id);
    if (st == HIDET_NCCL_SUCCESS) {
        *comm = g_slots[id].comm;
        if (owned) *owned = g_slots[id].owned;
        if (nranks) *nranks = g_slots[id].nranks;
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

hidet_nccl_status_t hidet_nccl__registry_kill(int id, const char *why, ncclComm_t *comm, int *owned) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(id);
    if (st == HIDET_NCCL_SUCCESS) {
        *comm = g_slots[id].comm;
        *owned = g_slots[id].owned;
        g_slots[id].live = 0;
        g_slots[id].comm = NULL;
        snprintf(g_slots[id].why, sizeof g_slots[id].why, "%s", why ? why : "");
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

hidet_nccl_status_t hidet_nccl__registry_remove(int id, ncclComm_t *comm, int *owned) {
    return hidet_nccl__registry_kill(id, NULL, comm, owned);
}

hidet_nccl_status_t hidet_nccl__registry_policy(int id, hidet_nccl_error_policy_t *policy) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(id);
    if (st == HIDET_NCCL_SUCCESS) *policy = g_slots[id].policy;
    pthread_mutex_unlock(&g_lock);
    return st;
}

hidet_nccl_status_t hidet_nccl_comm_set_error_policy(int comm_id, hidet_nccl_error_policy_t policy) {
    HN_ENTER();
    if ((int)policy < 0 || policy >= HIDET_NCCL_NUM_ERROR_POLICIES)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "error policy %d is not one of 0 .. %d", (int)policy,
                       HIDET_NCCL_NUM_ERROR_POLICIES - 1);
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = check_id_locked(comm_id);
    if (st == HIDET_NCCL_SUCCESS) g_slots[comm_id].policy = policy;
    pthread_mutex_unlock(&g_lock);
    return st;
}

hidet_nccl_status_t hidet_nccl__registry_take_all(hn_registered_t **slots, int *n) {
    pthread_mutex_lock(&g_lock);
    int live = 0;
    for (int i = 0; i < g_count; i++) live += g_slots[i].live && !g_slots[i].pending;
    hn_registered_t *out = calloc((size_t)live + 1, sizeof *out);
    if (out == NULL) {
        pthread_mutex_unlock(&g_lock);
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory listing %d communicators", live);
    }
    int k = 0;
    for (int i = 0; i < g_count; i++)
        if (g_slots[i].live && !g_slots[i].pending) out[k++] = (hn_registered_t){i, g_slots[i].owned, g_slots[i].comm};
    free(g_slots);
    g_slots = NULL;
    g_count = g_capacity = 0;
    pthread_mutex_unlock(&g_lock);
    *slots = out;
    *n = k;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_set_comms(int num_comms, ncclComm_t *comms) {
    HN_ENTER();
    if (num_comms < 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "num_comms %d is negative", num_comms);
    if (num_comms > 0 && comms == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comms is NULL but num_comms is %d", num_comms);
    for (int i = 0; i < num_comms; i++)
        if (comms[i] == NULL)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comms[%d] of %d is NULL", i, num_comms);
    const hn_nccl_t *n; /* all_reduce on these needs the table */
    HN_CHECK(hidet_nccl__nccl(&n));
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    for (int i = 0; i < g_count; i++) {
        if (g_slots[i].live && g_slots[i].owned) {
            st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                         "communicator id %d is owned by the library and live; set_comms would drop it "
                         "(destroy it or call hidet_nccl_finalize first)", i);
            break;
        }
    }
    if (st == HIDET_NCCL_SUCCESS) {
        g_count = 0;
        st = reserve_locked(num_comms);
    }
    if (st == HIDET_NCCL_SUCCESS) {
        for (int i = 0; i < num_comms; i++) g_slots[i] = (slot_t){comms[i], 0, 1, 0, 0, HIDET_NCCL_ON_ERROR_RETURN, ""};
        g_count = num_comms;
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

hidet_nccl_status_t hidet_nccl_get_comm(int idx, ncclComm_t *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(out);
    return hidet_nccl__registry_get(idx, out, NULL);
}

hidet_nccl_status_t hidet_nccl_comm_count(int *count) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(count);
    pthread_mutex_lock(&g_lock);
    *count = g_count;
    pthread_mutex_unlock(&g_lock);
    return HIDET_NCCL_SUCCESS;
}

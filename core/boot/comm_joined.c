/* Which ranks of a communicator are new: a table by id, filled by hidet_nccl_comm_heal on the
 * members and by a restarted rank's init (joining), read by hidet_nccl_comm_joined, emptied through
 * the dropper the communicator layer runs when an id goes. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/status_int.h"
#include "core/boot/bootstrap_int.h"
#include "core/boot/comm_joined_int.h"
#include "core/comm/comm_destroy_int.h"
#include "core/comm/registry_int.h"

typedef struct {
    unsigned char *joined; /* one per rank of the communicator; NULL: none new */
    int n;
} entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t *g_entries;
static int g_capacity;

static void drop_one(int comm_id, int abandon) {
    (void)abandon;
    pthread_mutex_lock(&g_lock);
    if (comm_id >= 0 && comm_id < g_capacity) {
        free(g_entries[comm_id].joined);
        g_entries[comm_id] = (entry_t){NULL, 0};
    }
    pthread_mutex_unlock(&g_lock);
}

static void drop_all(void) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_capacity; i++) free(g_entries[i].joined);
    free(g_entries);
    g_entries = NULL;
    g_capacity = 0;
    pthread_mutex_unlock(&g_lock);
}

void hidet_nccl__comm_joined_set(int comm_id, hidet_nccl_bootstrap_h bs, const unsigned char *joined) {
    int rank, size;
    if (comm_id < 0 || hidet_nccl__bootstrap_rank(bs, &rank, &size) != HIDET_NCCL_SUCCESS) return;
    unsigned char *places = calloc((size_t)size, 1);
    if (places == NULL) {
        HN_WARN("out of memory to keep which of communicator id %d's %d ranks are new: hidet_nccl_comm_joined will "
                "say none",
                comm_id, size);
        return;
    }
    for (int p = 0; p < size; p++) places[p] = joined[bs->job_of[p]];
    hidet_nccl__at_comm_drop(drop_one, drop_all);
    pthread_mutex_lock(&g_lock);
    if (comm_id >= g_capacity) {
        int cap = g_capacity ? g_capacity : 16;
        while (cap <= comm_id) cap *= 2;
        entry_t *e = realloc(g_entries, (size_t)cap * sizeof *e);
        if (e != NULL) {
            memset(e + g_capacity, 0, (size_t)(cap - g_capacity) * sizeof *e);
            g_entries = e;
            g_capacity = cap;
        }
    }
    if (comm_id < g_capacity) {
        free(g_entries[comm_id].joined);
        g_entries[comm_id] = (entry_t){places, size};
        places = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    if (places != NULL)
        HN_WARN("out of memory to keep which ranks of communicator id %d are new: hidet_nccl_comm_joined will say "
                "none",
                comm_id);
    free(places);
}

hidet_nccl_status_t hidet_nccl_comm_joined(int comm_id, int *joined, int *n_joined) {
    HN_ENTER();
    hn_slot_t slot;
    HN_CHECK(hidet_nccl__registry_get(comm_id, 1, &slot));
    int count = 0;
    pthread_mutex_lock(&g_lock);
    const entry_t *e = comm_id < g_capacity ? &g_entries[comm_id] : NULL;
    for (int r = 0; r < slot.nranks; r++) {
        int is_new = e != NULL && e->joined != NULL && r < e->n && e->joined[r];
        if (joined != NULL) joined[r] = is_new;
        count += is_new;
    }
    pthread_mutex_unlock(&g_lock);
    if (n_joined != NULL) *n_joined = count;
    return HIDET_NCCL_SUCCESS;
}

/* The bootstrap each communicator made over one keeps for hidet_nccl_comm_recover and _heal: a table by
 * id (ids are not reused before finalize), emptied through the dropper the communicator layer
 * runs when an id goes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/log_int.h"
#include "core/base/status_int.h"
#include "core/boot/bootstrap_int.h"
#include "core/boot/comm_bootstrap_int.h"
#include "core/comm/comm_destroy_int.h"
#include "core/comm/comm_health_int.h"

typedef struct {
    hn_comm_boot_t b;
    int present;
    int busy; /* taken by a recovery under way */
} record_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static record_t *g_records;
static int g_capacity;

static void release(hidet_nccl_bootstrap_h bs) {
    if (bs != NULL && hidet_nccl_bootstrap_destroy(bs) != HIDET_NCCL_SUCCESS)
        HN_WARN("a bootstrap kept for recovery: %s", hidet_nccl__error_detail());
}

/* Destroyed healthy (0) or after it failed (2): its bootstrap goes. Aborted after a failure (1):
 * kept, the id may still be recovered. A record under recovery is left to the recovery. */
static void drop_one(int comm_id, int abandon) {
    hidet_nccl_bootstrap_h bs = NULL;
    pthread_mutex_lock(&g_lock);
    if (comm_id >= 0 && comm_id < g_capacity && g_records[comm_id].present && !g_records[comm_id].busy &&
        abandon != 1) {
        bs = g_records[comm_id].b.bs;
        g_records[comm_id].b.bs = NULL;
        g_records[comm_id].present = 0;
    }
    pthread_mutex_unlock(&g_lock);
    release(bs);
}

static void drop_all(void) {
    pthread_mutex_lock(&g_lock);
    record_t *records = g_records;
    int n = g_capacity;
    g_records = NULL;
    g_capacity = 0;
    pthread_mutex_unlock(&g_lock);
    for (int i = 0; i < n; i++) /* a record under recovery: its bootstrap is the recovery's to release */
        if (records[i].present && !records[i].busy) release(records[i].b.bs);
    free(records);
}

/* g_records has room for comm_id; under the lock. */
static int room_locked(int comm_id) {
    if (comm_id < g_capacity) return 1;
    int cap = g_capacity ? g_capacity : 16;
    while (cap <= comm_id) cap *= 2;
    record_t *r = realloc(g_records, (size_t)cap * sizeof *r);
    if (r == NULL) return 0;
    memset(r + g_capacity, 0, (size_t)(cap - g_capacity) * sizeof *r);
    g_records = r;
    g_capacity = cap;
    return 1;
}

/* comm_wait's news: the kept bootstrap's peer_lost, looked at with the table unlocked (a file
 * system may be slow) and a hold on the bootstrap; skipped while a round holds it. */
static int peer_news(int comm_id, char *why, size_t n) {
    hidet_nccl_bootstrap_h bs = NULL;
    pthread_mutex_lock(&g_lock);
    if (comm_id >= 0 && comm_id < g_capacity && g_records[comm_id].present && !g_records[comm_id].busy &&
        g_records[comm_id].b.bs != NULL && g_records[comm_id].b.bs->ops.peer_lost != NULL) {
        bs = g_records[comm_id].b.bs;
        hidet_nccl__bootstrap_keep(bs);
    }
    pthread_mutex_unlock(&g_lock);
    if (bs == NULL) return 0;
    int news = hidet_nccl__bootstrap_probe(bs, why, n);
    release(bs);
    return news;
}

void hidet_nccl__comm_keep_bootstrap(int comm_id, hidet_nccl_bootstrap_h bs, int device) {
    hidet_nccl__at_comm_drop(drop_one, drop_all);
    if (bs->ops.peer_lost != NULL) hidet_nccl__at_comm_wait(peer_news);
    hn_comm_boot_t b;
    memset(&b, 0, sizeof b);
    snprintf(b.name, sizeof b.name, "%s", bs->ops.name);
    if (bs->ops.recover == NULL)
        snprintf(b.why, sizeof b.why, "%s",
                 bs->ops.recover_unsupported ? bs->ops.recover_unsupported : "it has no recover");
    if (bs->ops.heal == NULL)
        snprintf(b.heal_why, sizeof b.heal_why, "%s",
                 bs->ops.heal_unsupported ? bs->ops.heal_unsupported : "it has no heal");
    b.device = device;
    b.recovered_into = -1;
    pthread_mutex_lock(&g_lock);
    int ok = comm_id >= 0 && room_locked(comm_id);
    if (ok) {
        if (bs->ops.recover != NULL || bs->ops.heal != NULL) {
            hidet_nccl__bootstrap_keep(bs);
            b.bs = bs;
        }
        g_records[comm_id].b = b;
        g_records[comm_id].present = 1;
        g_records[comm_id].busy = 0;
    }
    pthread_mutex_unlock(&g_lock);
    if (!ok) HN_WARN("out of memory to keep the bootstrap of communicator id %d: it cannot be recovered", comm_id);
}

int hidet_nccl__comm_boot_take(int comm_id, hn_comm_boot_t *out) {
    pthread_mutex_lock(&g_lock);
    int rc = 0;
    if (comm_id < 0 || comm_id >= g_capacity || !g_records[comm_id].present) rc = -1;
    else if (g_records[comm_id].busy) rc = -2;
    else if (g_records[comm_id].b.recovered_into >= 0) rc = -3;
    if (rc == 0 || rc == -3) *out = g_records[comm_id].b;
    if (rc == 0) g_records[comm_id].busy = 1;
    pthread_mutex_unlock(&g_lock);
    return rc;
}

void hidet_nccl__comm_boot_done(int comm_id, const hn_comm_boot_t *taken, int new_id) {
    hidet_nccl_bootstrap_h spare = NULL;
    pthread_mutex_lock(&g_lock);
    if (comm_id < 0 || comm_id >= g_capacity) { /* finalize emptied the table meanwhile */
        pthread_mutex_unlock(&g_lock);
        if (new_id != -2) release(taken->bs);
        return;
    }
    record_t *old = &g_records[comm_id];
    old->busy = 0;
    if (new_id == -2) { /* nothing was done: the record stays as it was */
        pthread_mutex_unlock(&g_lock);
        return;
    }
    old->b.bs = NULL; /* the old id keeps no bootstrap either way */
    spare = taken->bs;
    if (new_id == -1) {
        old->b.round_failed = 1;
        snprintf(old->b.why, sizeof old->b.why, "its recovery failed on this rank, which left the bootstrap out of "
                 "use: destroy the communicator");
    }
    if (new_id >= 0) {
        old->b.recovered_into = new_id;
        if (room_locked(new_id) && !g_records[new_id].present) { /* a shrink's: no record of its own yet */
            g_records[new_id].b = *taken;
            g_records[new_id].b.recovered_into = -1;
            g_records[new_id].present = 1;
            g_records[new_id].busy = 0;
            spare = NULL;
        }
    }
    pthread_mutex_unlock(&g_lock);
    release(spare); /* a rebuild's init kept its own hold; a failed round's bootstrap is out of use */
}

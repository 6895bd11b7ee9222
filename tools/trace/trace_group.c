/* The ranks' dumps put together: the communicators of every dump grouped by key (unknown keys
 * by id), each group's members in the order read, the groups in the order their first members
 * were read; and what the judge and the printers ask of an operation and a member. */
#include <stdlib.h>
#include <string.h>

#include "tools/trace/trace_group_int.h"

const tr_op_t *tr_at_seq(const tr_comm_t *c, uint64_t seq) {
    size_t lo = 0, hi = c->nops;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->ops[mid].seq < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < c->nops && c->ops[lo].seq == seq ? &c->ops[lo] : NULL;
}

int tr_rooted(const char *coll) {
    return !strcmp(coll, "broadcast") || !strcmp(coll, "reduce") || !strcmp(coll, "gather") ||
           !strcmp(coll, "scatter");
}
int tr_p2p(const char *coll) { return !strcmp(coll, "send") || !strcmp(coll, "recv"); }

int tr_rank_of(const tr_member_t *m) { return m->comm->rank >= 0 ? m->comm->rank : m->dump->rank; }

/* One communicator of one dump, in the order read (idx), for grouping by sort. */
typedef struct {
    size_t idx;
    tr_member_t m;
} entry_t;

/* A group, the place of its first member as read (groups are reported in that order), and
 * where its members start among the sorted entries. */
typedef struct {
    size_t first, start;
    tr_group_t g;
} run_t;

static int unknown_key(const char *key) { return !strcmp(key, "00000000"); }

/* By key (unknown keys by id), then as read: a group's members in order, its first one first. */
static int compare_entries(const void *a, const void *b) {
    const entry_t *x = a, *y = b;
    int c = strcmp(x->m.comm->key, y->m.comm->key);
    if (c != 0) return c;
    if (unknown_key(x->m.comm->key) && x->m.comm->id != y->m.comm->id) return x->m.comm->id < y->m.comm->id ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int compare_runs(const void *a, const void *b) {
    const run_t *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

tr_group_t *tr_group_all(const tr_set_t *set, const char *comm, size_t *ngroups) {
    size_t total = 0, n = 0, ne = 0;
    for (size_t d = 0; d < set->ndumps; d++) total += set->dumps[d].ncomms;
    entry_t *e = malloc((total ? total : 1) * sizeof *e);
    run_t *runs = calloc(total ? total : 1, sizeof *runs);
    tr_group_t *g = calloc(total ? total : 1, sizeof *g);
    *ngroups = 0;
    if (e == NULL || runs == NULL || g == NULL) { /* out of memory: no group to report on */
        free(e);
        free(runs);
        free(g);
        return NULL;
    }
    for (size_t d = 0; d < set->ndumps; d++)
        for (size_t c = 0; c < set->dumps[d].ncomms; c++) {
            const tr_comm_t *cm = &set->dumps[d].comms[c];
            if (comm != NULL && strcmp(cm->key, comm) != 0) continue;
            e[ne] = (entry_t){ne, {&set->dumps[d], cm}};
            ne++;
        }
    qsort(e, ne, sizeof *e, compare_entries);
    for (size_t i = 0; i < ne; i++) {
        const tr_comm_t *cm = e[i].m.comm;
        tr_group_t *last = n ? &runs[n - 1].g : NULL;
        if (last == NULL || strcmp(last->key, cm->key) != 0 || (unknown_key(cm->key) && last->id != cm->id)) {
            runs[n].first = e[i].idx;
            runs[n].start = i;
            memcpy(runs[n].g.key, cm->key, sizeof runs[n].g.key);
            runs[n].g.id = cm->id;
            last = &runs[n++].g;
        }
        last->n++;
        if (cm->nranks > last->nranks) last->nranks = cm->nranks;
    }
    qsort(runs, n, sizeof *runs, compare_runs);
    size_t kept = 0;
    for (size_t k = 0; k < n; k++) { /* each group its own array of members, as the report frees them */
        tr_member_t *m = malloc(runs[k].g.n * sizeof *m);
        if (m == NULL) continue; /* out of memory: this group left out */
        for (size_t i = 0; i < runs[k].g.n; i++) m[i] = e[runs[k].start + i].m;
        g[kept] = runs[k].g;
        g[kept++].m = m;
    }
    free(runs);
    free(e);
    *ngroups = kept;
    return g;
}

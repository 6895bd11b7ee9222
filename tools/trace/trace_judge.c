/* Where the ranks diverged: the judge (tr_analyze) goes through the dumps of one communicator
 * (same key) from every rank, seq by seq, and fills a verdict per communicator, and one for ranks
 * chosen by --ranks that left no dump: what was found, at which seq, on which ranks, about which
 * field. The verdict, most telling first: two ranks that disagree about an operation, a rank
 * behind the others, a rank with no dump, work not completed. */
#include <stdlib.h>
#include <string.h>

#include "tools/trace/trace_judge_int.h"

#define MAX_LISTED 1024 /* ranks a verdict names; the others are counted */

/* The first field two operations at one seq disagree on, or NULL. */
static const char *differ(const tr_op_t *a, const tr_op_t *b) {
    if (tr_p2p(a->coll) && tr_p2p(b->coll)) return NULL; /* a send meets the peer's recv */
    if (strcmp(a->coll, b->coll)) return "collective";
    if (strcmp(a->dtype, b->dtype)) return "dtype";
    if (a->count != b->count) return "count";
    if (strcmp(a->op, b->op)) return "op";
    if (tr_rooted(a->coll) && a->peer != b->peer) return "root";
    if (a->tag[0] && b->tag[0] && strcmp(a->tag, b->tag)) return "tag";
    return NULL;
}

/* The seqs every rank still holds, [*lo, *hi]; 0 if a rank holds none. */
static int common_seqs(const tr_group_t *g, uint64_t *lo, uint64_t *hi) {
    *lo = 0, *hi = UINT64_MAX;
    for (size_t i = 0; i < g->n; i++) {
        const tr_comm_t *c = g->m[i].comm;
        if (c->nops == 0) return 0;
        if (c->ops[0].seq > *lo) *lo = c->ops[0].seq;
        if (c->ops[c->nops - 1].seq < *hi) *hi = c->ops[c->nops - 1].seq;
    }
    return 1;
}

/* Two ranks that disagree about seq s, into v: 1; else 0. */
static int disagree_at(const tr_group_t *g, uint64_t s, tr_verdict_t *v) {
    const tr_op_t *first = NULL;
    size_t first_i = 0;
    for (size_t i = 0; i < g->n; i++) {
        const tr_op_t *o = tr_at_seq(g->m[i].comm, s);
        if (o == NULL) continue; /* torn while dumped */
        if (first == NULL) {
            first = o, first_i = i;
            continue;
        }
        const char *field = differ(first, o);
        if (field == NULL) continue;
        v->kind = TR_V_DISAGREE;
        v->has_seq = 1, v->seq = s;
        v->field = field;
        v->rank[0] = tr_rank_of(&g->m[first_i]), v->rank[1] = tr_rank_of(&g->m[i]);
        v->op[0] = first, v->op[1] = o;
        return 1;
    }
    return 0;
}

/* Disagreement within the seqs every rank still holds, into v: 1; else 0. */
static int find_disagreement(const tr_group_t *g, tr_verdict_t *v) {
    uint64_t lo, hi;
    if (!common_seqs(g, &lo, &hi) || g->n < 2) return 0;
    const tr_comm_t *shortest = g->m[0].comm; /* walk its seqs: a hostile dump's gaps cost nothing */
    for (size_t i = 1; i < g->n; i++)
        if (g->m[i].comm->nops < shortest->nops) shortest = g->m[i].comm;
    for (size_t k = 0; k < shortest->nops; k++) {
        uint64_t s = shortest->ops[k].seq;
        if (s >= lo && s <= hi && disagree_at(g, s, v)) return 1;
    }
    return 0;
}

/* The ranks whose next seq is lowest (*lo_i, the first such) and highest (*hi_i). */
static void seq_extremes(const tr_group_t *g, size_t *lo_i, size_t *hi_i) {
    *lo_i = 0, *hi_i = 0;
    for (size_t i = 1; i < g->n; i++) {
        if (g->m[i].comm->next_seq < g->m[*lo_i].comm->next_seq) *lo_i = i;
        if (g->m[i].comm->next_seq > g->m[*hi_i].comm->next_seq) *hi_i = i;
    }
}

static int compare_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* have (n ranks, sorted in place and made distinct): its new length. */
static size_t distinct(int *have, size_t n) {
    if (n > 1) qsort(have, n, sizeof *have, compare_int);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || have[i] != have[k - 1]) have[k++] = have[i];
    return k;
}

/* The ranks of want that have (sorted, distinct) lacks, into v->list (at most MAX_LISTED, the
 * others counted in v->more): how many in all; 0 with no list when none (or out of memory). */
static uint64_t absent_ranks(const tr_range_t *want, size_t nwant, const int *have, size_t nhave, tr_verdict_t *v) {
    uint64_t total = 0;
    for (size_t w = 0, j = 0; w < nwant; w++) { /* want is sorted, its ranges apart */
        total += (uint64_t)want[w].hi - (uint64_t)want[w].lo + 1;
        while (j < nhave && have[j] < want[w].lo) j++;
        for (; j < nhave && have[j] <= want[w].hi; j++) total--;
    }
    if (total == 0 || (v->list = malloc((total < MAX_LISTED ? total : MAX_LISTED) * sizeof *v->list)) == NULL)
        return 0;
    size_t j = 0;
    for (size_t w = 0; w < nwant && v->nlist < MAX_LISTED; w++)
        for (long long r = want[w].lo; r <= want[w].hi && v->nlist < MAX_LISTED; r++) {
            while (j < nhave && have[j] < r) j++;
            if (j < nhave && have[j] == r) continue;
            v->list[v->nlist++] = (int)r;
        }
    v->more = total - v->nlist;
    return total;
}

/* The group's ranks (0 .. nranks-1) with no dump, into v: 1 if there are any. */
static int find_missing(const tr_group_t *g, tr_verdict_t *v) {
    int *have = malloc(g->n * sizeof *have);
    if (have == NULL) return 0;
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        int r = tr_rank_of(&g->m[i]);
        if (r >= 0 && r < g->nranks) have[n++] = r;
    }
    n = distinct(have, n);
    tr_range_t all = {0, g->nranks - 1};
    uint64_t absent = absent_ranks(&all, 1, have, n, v);
    free(have);
    if (absent > 0) v->kind = TR_V_MISSING;
    return absent > 0;
}

/* Every rank at one seq: whether its last operation completed everywhere, into v. */
static void judge_last(const tr_group_t *g, const tr_comm_t *ahead, tr_verdict_t *v) {
    if (ahead->nops == 0) return; /* consistent, nothing recorded */
    const tr_op_t *last = &ahead->ops[ahead->nops - 1];
    v->has_seq = 1, v->seq = last->seq, v->last = last;
    for (size_t i = 0; i < g->n; i++) {
        const tr_op_t *o = tr_at_seq(g->m[i].comm, last->seq);
        if (o == NULL || strcmp(o->state, "pending")) continue;
        if (v->list == NULL && (v->list = malloc(g->n * sizeof *v->list)) == NULL) return;
        v->list[v->nlist++] = tr_rank_of(&g->m[i]);
    }
    if (v->nlist > 0) v->kind = TR_V_INCOMPLETE;
}

/* The group's verdict into v. With ranks chosen (listed), the ranks not chosen are not missing:
 * a chosen rank with no dump is said once, for all communicators (the analysis' absent). */
static void judge(const tr_group_t *g, int listed, tr_verdict_t *v) {
    memset(v, 0, sizeof *v);
    v->g = g;
    if (find_disagreement(g, v)) return;
    size_t lo_i, hi_i;
    seq_extremes(g, &lo_i, &hi_i);
    const tr_comm_t *behind = g->m[lo_i].comm, *ahead = g->m[hi_i].comm;
    if (behind->next_seq < ahead->next_seq) {
        v->kind = TR_V_BEHIND;
        v->rank[0] = tr_rank_of(&g->m[lo_i]), v->rank[1] = tr_rank_of(&g->m[hi_i]);
        v->op[0] = behind->nops ? &behind->ops[behind->nops - 1] : NULL;
        v->op[1] = ahead->nops ? &ahead->ops[ahead->nops - 1] : NULL;
        v->has_seq = v->op[0] != NULL;
        v->seq = v->op[0] ? v->op[0]->seq : 0;
        v->ahead_seq = ahead->next_seq - 1;
        return;
    }
    if (!listed && g->nranks > 0 && g->n < (size_t)g->nranks && find_missing(g, v)) {
        v->has_seq = ahead->next_seq > 0;
        v->seq = ahead->next_seq ? ahead->next_seq - 1 : 0;
        return;
    }
    judge_last(g, ahead, v);
}

/* The ranks --ranks chose that have no dump in set, into v. */
static void judge_absent(const tr_set_t *set, const tr_ranks_t *listed, tr_verdict_t *v) {
    memset(v, 0, sizeof *v);
    int *have = malloc((set->ndumps ? set->ndumps : 1) * sizeof *have);
    if (have == NULL) return;
    size_t n = 0;
    for (size_t d = 0; d < set->ndumps; d++)
        if (set->dumps[d].rank >= 0) have[n++] = set->dumps[d].rank;
    n = distinct(have, n);
    if (absent_ranks(listed->r, listed->n, have, n, v) > 0) v->kind = TR_V_MISSING;
    free(have);
}

tr_analysis_t *tr_analyze(const tr_set_t *set, const tr_ranks_t *listed, const char *comm) {
    tr_analysis_t *a = calloc(1, sizeof *a);
    if (a == NULL) return NULL;
    a->set = set, a->listed = listed, a->comm = comm;
    a->g = tr_group_all(set, comm, &a->ng);
    if (a->ng > 0 && (a->v = calloc(a->ng, sizeof *a->v)) == NULL) {
        tr_analysis_free(a);
        return NULL;
    }
    a->worst = &a->empty; /* no communicator: consistent */
    for (size_t i = 0; i < a->ng; i++) {
        judge(&a->g[i], listed != NULL, &a->v[i]);
        if (i == 0 || a->v[i].kind > a->worst->kind) a->worst = &a->v[i];
    }
    if (listed != NULL) judge_absent(set, listed, &a->absent);
    if (a->absent.kind > a->worst->kind) a->worst = &a->absent;
    return a;
}

int tr_analysis_bad(const tr_analysis_t *a) { return a->worst->kind != TR_V_NONE; }

void tr_analysis_free(tr_analysis_t *a) {
    if (a == NULL) return;
    for (size_t i = 0; i < a->ng; i++) {
        free(a->g[i].m);
        if (a->v) free(a->v[i].list);
    }
    free(a->absent.list);
    free(a->g);
    free(a->v);
    free(a);
}

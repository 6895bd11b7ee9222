/* Where the ranks diverged: the dumps of one communicator (same key) from every rank, seq by
 * seq. One judge (tr_analyze) fills a verdict per communicator, and one for ranks chosen by
 * --ranks that left no dump: what was found, at which seq, on which ranks, about which field.
 * Two printers say the same verdicts: text (tr_print_text) and JSON (tr_print_json). The
 * verdict, most telling first: two ranks that disagree about an operation, a rank behind the
 * others, a rank with no dump, work not completed; then each rank's last operations. */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace/trace_read.h"

#define TAIL 3          /* operations shown per rank in the detail */
#define MAX_LISTED 1024 /* ranks a verdict names; the others are counted */

typedef struct {
    const tr_dump_t *dump;
    const tr_comm_t *comm;
} member_t;

typedef struct {
    char key[9];
    int id; /* for key 00000000 (unknown): the id, the best guess of one communicator */
    int nranks;
    member_t *m;
    size_t n;
} group_t;

enum { V_NONE, V_INCOMPLETE, V_MISSING, V_BEHIND, V_DISAGREE }; /* worse is larger */
static const char *const k_kind[] = {"consistent", "not_completed", "missing_dump", "behind", "divergence"};

/* What the judge found on one communicator (or, g NULL, of the ranks --ranks chose). */
typedef struct {
    int kind;
    const group_t *g;
    int has_seq;
    uint64_t seq;          /* divergence: where; behind: where the rank behind stopped; missing: where
                            * the others are; not completed, consistent: the last operation */
    int rank[2];           /* divergence: the two ranks; behind: the rank behind, the rank ahead */
    const tr_op_t *op[2];  /* divergence: theirs at seq; behind: their last (NULL: none recorded) */
    const char *field;     /* divergence: the first field they disagree on */
    uint64_t ahead_seq;    /* behind: the seq the rank ahead is at */
    const tr_op_t *last;   /* not completed, consistent: the operation at seq (NULL: none) */
    int *list;             /* missing: the ranks with no dump; not completed: where not completed */
    size_t nlist;
    uint64_t more;         /* missing: ranks past MAX_LISTED, counted, not in list */
} verdict_t;

struct tr_analysis {
    const tr_set_t *set;
    const tr_ranks_t *listed; /* --ranks, or NULL */
    const char *comm;         /* --comm, or NULL */
    group_t *g;
    size_t ng;
    verdict_t *v;     /* one per group */
    verdict_t absent; /* ranks --ranks chose that left no dump: V_MISSING, else V_NONE */
    verdict_t empty;  /* no communicator */
    const verdict_t *worst;
};

/* ------------------------------------------------------------------------ operations */

static const tr_op_t *at_seq(const tr_comm_t *c, uint64_t seq) {
    size_t lo = 0, hi = c->nops;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->ops[mid].seq < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < c->nops && c->ops[lo].seq == seq ? &c->ops[lo] : NULL;
}

static int rooted(const char *coll) {
    return !strcmp(coll, "broadcast") || !strcmp(coll, "reduce") || !strcmp(coll, "gather") ||
           !strcmp(coll, "scatter");
}
static int p2p(const char *coll) { return !strcmp(coll, "send") || !strcmp(coll, "recv"); }

static void describe(const tr_op_t *o, char *out, size_t size) {
    char extra[48] = "";
    if (strcmp(o->op, "-") != 0) snprintf(extra, sizeof extra, " %s", o->op);
    if (rooted(o->coll)) snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " root %d", o->peer);
    if (p2p(o->coll)) snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " peer %d", o->peer);
    const char *st = !strcmp(o->state, "pending") ? "not completed" : o->state;
    snprintf(out, size, "%s %s x%" PRIu64 "%s (%s%s%s%s)", o->coll, o->dtype, o->count, extra, st,
             o->tag[0] ? ", tag '" : "", o->tag, o->tag[0] ? "'" : "");
}

static int rank_of(const member_t *m) { return m->comm->rank >= 0 ? m->comm->rank : m->dump->rank; }

/* The first field two operations at one seq disagree on, or NULL. */
static const char *differ(const tr_op_t *a, const tr_op_t *b) {
    if (p2p(a->coll) && p2p(b->coll)) return NULL; /* a send meets the peer's recv */
    if (strcmp(a->coll, b->coll)) return "collective";
    if (strcmp(a->dtype, b->dtype)) return "dtype";
    if (a->count != b->count) return "count";
    if (strcmp(a->op, b->op)) return "op";
    if (rooted(a->coll) && a->peer != b->peer) return "root";
    if (a->tag[0] && b->tag[0] && strcmp(a->tag, b->tag)) return "tag";
    return NULL;
}

/* A field of o as the text says it. */
static void field_text(const tr_op_t *o, const char *field, char *out, size_t size) {
    if (!strcmp(field, "collective")) snprintf(out, size, "%s", o->coll);
    else if (!strcmp(field, "dtype")) snprintf(out, size, "%s", o->dtype);
    else if (!strcmp(field, "count")) snprintf(out, size, "%" PRIu64, o->count);
    else if (!strcmp(field, "op")) snprintf(out, size, "%s", o->op);
    else if (!strcmp(field, "root")) snprintf(out, size, "%d", o->peer);
    else snprintf(out, size, "'%s'", o->tag);
}

/* ----------------------------------------------------------------------------- judge */

/* The seqs every rank still holds, [*lo, *hi]; 0 if a rank holds none. */
static int common_seqs(const group_t *g, uint64_t *lo, uint64_t *hi) {
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
static int disagree_at(const group_t *g, uint64_t s, verdict_t *v) {
    const tr_op_t *first = NULL;
    size_t first_i = 0;
    for (size_t i = 0; i < g->n; i++) {
        const tr_op_t *o = at_seq(g->m[i].comm, s);
        if (o == NULL) continue; /* torn while dumped */
        if (first == NULL) {
            first = o, first_i = i;
            continue;
        }
        const char *field = differ(first, o);
        if (field == NULL) continue;
        v->kind = V_DISAGREE;
        v->has_seq = 1, v->seq = s;
        v->field = field;
        v->rank[0] = rank_of(&g->m[first_i]), v->rank[1] = rank_of(&g->m[i]);
        v->op[0] = first, v->op[1] = o;
        return 1;
    }
    return 0;
}

/* Disagreement within the seqs every rank still holds, into v: 1; else 0. */
static int find_disagreement(const group_t *g, verdict_t *v) {
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
static void seq_extremes(const group_t *g, size_t *lo_i, size_t *hi_i) {
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
static uint64_t absent_ranks(const tr_range_t *want, size_t nwant, const int *have, size_t nhave, verdict_t *v) {
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
static int find_missing(const group_t *g, verdict_t *v) {
    int *have = malloc(g->n * sizeof *have);
    if (have == NULL) return 0;
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        int r = rank_of(&g->m[i]);
        if (r >= 0 && r < g->nranks) have[n++] = r;
    }
    n = distinct(have, n);
    tr_range_t all = {0, g->nranks - 1};
    uint64_t absent = absent_ranks(&all, 1, have, n, v);
    free(have);
    if (absent > 0) v->kind = V_MISSING;
    return absent > 0;
}

/* Every rank at one seq: whether its last operation completed everywhere, into v. */
static void judge_last(const group_t *g, const tr_comm_t *ahead, verdict_t *v) {
    if (ahead->nops == 0) return; /* consistent, nothing recorded */
    const tr_op_t *last = &ahead->ops[ahead->nops - 1];
    v->has_seq = 1, v->seq = last->seq, v->last = last;
    for (size_t i = 0; i < g->n; i++) {
        const tr_op_t *o = at_seq(g->m[i].comm, last->seq);
        if (o == NULL || strcmp(o->state, "pending")) continue;
        if (v->list == NULL && (v->list = malloc(g->n * sizeof *v->list)) == NULL) return;
        v->list[v->nlist++] = rank_of(&g->m[i]);
    }
    if (v->nlist > 0) v->kind = V_INCOMPLETE;
}

/* The group's verdict into v. With ranks chosen (listed), the ranks not chosen are not missing:
 * a chosen rank with no dump is said once, for all communicators (the analysis' absent). */
static void judge(const group_t *g, int listed, verdict_t *v) {
    memset(v, 0, sizeof *v);
    v->g = g;
    if (find_disagreement(g, v)) return;
    size_t lo_i, hi_i;
    seq_extremes(g, &lo_i, &hi_i);
    const tr_comm_t *behind = g->m[lo_i].comm, *ahead = g->m[hi_i].comm;
    if (behind->next_seq < ahead->next_seq) {
        v->kind = V_BEHIND;
        v->rank[0] = rank_of(&g->m[lo_i]), v->rank[1] = rank_of(&g->m[hi_i]);
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
static void judge_absent(const tr_set_t *set, const tr_ranks_t *listed, verdict_t *v) {
    memset(v, 0, sizeof *v);
    int *have = malloc((set->ndumps ? set->ndumps : 1) * sizeof *have);
    if (have == NULL) return;
    size_t n = 0;
    for (size_t d = 0; d < set->ndumps; d++)
        if (set->dumps[d].rank >= 0) have[n++] = set->dumps[d].rank;
    n = distinct(have, n);
    if (absent_ranks(listed->r, listed->n, have, n, v) > 0) v->kind = V_MISSING;
    free(have);
}

/* One communicator of one dump, in the order read (idx), for grouping by sort. */
typedef struct {
    size_t idx;
    member_t m;
} entry_t;

/* A group, the place of its first member as read (groups are reported in that order), and
 * where its members start among the sorted entries. */
typedef struct {
    size_t first, start;
    group_t g;
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

/* The communicators of every dump (only those keyed comm, if given), grouped by key (unknown
 * keys by id), in the order their first members were read: one sort, so that many dumps of
 * many communicators stay fast. */
static group_t *group_all(const tr_set_t *set, const char *comm, size_t *ngroups) {
    size_t total = 0, n = 0, ne = 0;
    for (size_t d = 0; d < set->ndumps; d++) total += set->dumps[d].ncomms;
    entry_t *e = malloc((total ? total : 1) * sizeof *e);
    run_t *runs = calloc(total ? total : 1, sizeof *runs);
    group_t *g = calloc(total ? total : 1, sizeof *g);
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
        group_t *last = n ? &runs[n - 1].g : NULL;
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
        member_t *m = malloc(runs[k].g.n * sizeof *m);
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

tr_analysis_t *tr_analyze(const tr_set_t *set, const tr_ranks_t *listed, const char *comm) {
    tr_analysis_t *a = calloc(1, sizeof *a);
    if (a == NULL) return NULL;
    a->set = set, a->listed = listed, a->comm = comm;
    a->g = group_all(set, comm, &a->ng);
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

int tr_analysis_bad(const tr_analysis_t *a) { return a->worst->kind != V_NONE; }

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

/* ------------------------------------------------------------------- the text printer */

/* v's ranks, "1,3,7", into out: as many as fit, then how many in all. */
static void ranks_text(const verdict_t *v, char *out, size_t size) {
    size_t k = 0;
    out[0] = '\0';
    for (; k < v->nlist && strlen(out) < 112; k++)
        snprintf(out + strlen(out), size - strlen(out), "%s%d", k ? "," : "", v->list[k]);
    if (k < v->nlist || v->more > 0)
        snprintf(out + strlen(out), size - strlen(out), ",... (%" PRIu64 " in all)", (uint64_t)v->nlist + v->more);
}

/* The verdict as one line. */
static void verdict_text(const tr_analysis_t *a, const verdict_t *v, char *line, size_t size) {
    const group_t *g = v->g;
    char x[160], y[160], ranks[192];
    ranks_text(v, ranks, sizeof ranks);
    switch (v->kind) {
    case V_DISAGREE:
        field_text(v->op[0], v->field, x, sizeof x);
        field_text(v->op[1], v->field, y, sizeof y);
        snprintf(line, size, "ranks disagree at seq %" PRIu64 " of communicator %s: %s %s on rank %d, %s on rank %d",
                 v->seq, g->key, v->field, x, v->rank[0], y, v->rank[1]);
        break;
    case V_BEHIND:
        if (v->op[1]) describe(v->op[1], y, sizeof y);
        if (v->op[0]) {
            describe(v->op[0], x, sizeof x);
            snprintf(line, size, "rank %d stopped at seq %" PRIu64 " %s; rank %d is at seq %" PRIu64 " %s", v->rank[0],
                     v->seq, x, v->rank[1], v->ahead_seq, v->op[1] ? y : "");
        } else {
            snprintf(line, size, "rank %d issued nothing on communicator %s; rank %d is at seq %" PRIu64 " %s",
                     v->rank[0], g->key, v->rank[1], v->ahead_seq, v->op[1] ? y : "");
        }
        break;
    case V_MISSING:
        if (g)
            snprintf(line, size, "rank(s) %s of communicator %s left no dump (dead, or no trace directory); the %zu "
                     "others are at seq %" PRIu64, ranks, g->key, g->n, v->seq);
        else
            snprintf(line, size, "rank(s) %s chosen by --ranks left no dump (dead, or no trace directory)", ranks);
        break;
    case V_INCOMPLETE:
        describe(v->last, x, sizeof x);
        snprintf(line, size, "every rank issued seq %" PRIu64 " of communicator %s, %s; not completed on rank(s) %s",
                 v->seq, g->key, x, ranks);
        break;
    default:
        if (g == NULL) {
            snprintf(line, size, "no communicator%s%s in %zu dump(s)", a->comm ? " " : "", a->comm ? a->comm : "",
                     a->set->ndumps);
        } else if (v->last == NULL) {
            snprintf(line, size, "no divergence on communicator %s: no operations recorded", g->key);
        } else {
            describe(v->last, x, sizeof x);
            snprintf(line, size, "no divergence on communicator %s: every rank at seq %" PRIu64 " %s", g->key, v->seq,
                     x);
        }
    }
}

/* Every line through tr_say: hosts, reasons, states, tags and file names come from the dumps. */
static void detail(const group_t *g, const char *verdict, FILE *out) {
    fputc('\n', out);
    tr_say(out, "communicator %s (%d ranks, dumps of %zu): %s", g->key, g->nranks, g->n, verdict);
    if (g->n > 0 && g->m[0].comm->from[0] != '\0')
        tr_say(out, "  made by %s from communicator %s", g->m[0].comm->how, g->m[0].comm->from);
    for (size_t i = 0; i < g->n; i++) {
        const member_t *m = &g->m[i];
        tr_say(out, "  rank %d  %s pid %ld  id %d  %s%s%s  next seq %" PRIu64 "  (%s: %s)", rank_of(m), m->dump->host,
               m->dump->pid, m->comm->id, m->comm->state, m->comm->why[0] ? ": " : "", m->comm->why,
               m->comm->next_seq, m->dump->name, m->dump->reason);
        size_t from = m->comm->nops > TAIL ? m->comm->nops - TAIL : 0;
        for (size_t k = from; k < m->comm->nops; k++) {
            char d[160];
            describe(&m->comm->ops[k], d, sizeof d);
            tr_say(out, "    seq %" PRIu64 "  %s", m->comm->ops[k].seq, d);
        }
    }
}

void tr_print_text(const tr_analysis_t *a, FILE *out) {
    char line[512];
    verdict_text(a, a->worst, line, sizeof line);
    tr_say(out, "%s", line);
    if (a->absent.kind != V_NONE) {
        verdict_text(a, &a->absent, line, sizeof line);
        fputc('\n', out);
        tr_say(out, "%s", line);
    }
    for (size_t i = 0; i < a->ng; i++) {
        verdict_text(a, &a->v[i], line, sizeof line);
        detail(&a->g[i], line, out);
    }
}

int tr_report(const tr_set_t *set, FILE *out) {
    tr_analysis_t *a = tr_analyze(set, NULL, NULL);
    if (a == NULL) {
        tr_say(out, "hidet-nccl-trace: out of memory judging %zu dump(s)", set->ndumps);
        return 1;
    }
    tr_print_text(a, out);
    int bad = tr_analysis_bad(a);
    tr_analysis_free(a);
    return bad;
}

/* ------------------------------------------------------------------- the JSON printer */

/* jansson's calls take NULL (out of memory) and say it with -1: each builder ORs them into *bad. */
static void put(json_t *o, const char *k, json_t *v, int *bad) { *bad |= json_object_set_new(o, k, v) != 0; }
static void append(json_t *arr, json_t *v, int *bad) { *bad |= json_array_append_new(arr, v) != 0; }
static json_t *seq_or_null(int has, uint64_t seq) { return has ? json_integer((json_int_t)seq) : json_null(); }

/* An operation, with the dump's names for its fields. */
static json_t *op_json(const tr_op_t *o, int *bad) {
    if (o == NULL) return json_null();
    json_t *j = json_object();
    put(j, "seq", json_integer((json_int_t)o->seq), bad);
    put(j, "coll", tr_json_string(o->coll), bad);
    put(j, "dtype", tr_json_string(o->dtype), bad);
    put(j, "count", json_integer((json_int_t)o->count), bad);
    put(j, "op", tr_json_string(o->op), bad);
    put(j, "peer", json_integer(o->peer), bad);
    put(j, "state", tr_json_string(o->state), bad);
    put(j, "tag", tr_json_string(o->tag), bad);
    return j;
}

/* A field of o, typed: count and root numbers, the others strings (a tag without quotes). */
static json_t *field_json(const tr_op_t *o, const char *field) {
    if (!strcmp(field, "count")) return json_integer((json_int_t)o->count);
    if (!strcmp(field, "root")) return json_integer(o->peer);
    return tr_json_string(!strcmp(field, "collective") ? o->coll
                          : !strcmp(field, "dtype")    ? o->dtype
                          : !strcmp(field, "op")       ? o->op
                                                       : o->tag);
}

static json_t *verdict_json(const tr_analysis_t *a, const verdict_t *v, int *bad) {
    json_t *j = json_object(), *ranks = json_array();
    char line[512];
    verdict_text(a, v, line, sizeof line);
    put(j, "kind", json_string(k_kind[v->kind]), bad);
    put(j, "text", tr_json_string(line), bad);
    put(j, "comm", v->g ? json_string(v->g->key) : json_null(), bad);
    put(j, "seq", seq_or_null(v->has_seq, v->seq), bad);
    if (v->kind == V_DISAGREE || v->kind == V_BEHIND) {
        json_t *ops = json_array();
        for (int i = 0; i < 2; i++) {
            append(ranks, json_integer(v->rank[i]), bad);
            append(ops, op_json(v->op[i], bad), bad);
        }
        put(j, "ranks", ranks, bad);
        if (v->kind == V_DISAGREE) {
            json_t *values = json_array();
            append(values, field_json(v->op[0], v->field), bad);
            append(values, field_json(v->op[1], v->field), bad);
            put(j, "field", json_string(v->field), bad);
            put(j, "values", values, bad);
        } else {
            put(j, "ahead_seq", json_integer((json_int_t)v->ahead_seq), bad);
        }
        put(j, "ops", ops, bad);
        return j;
    }
    for (size_t i = 0; i < v->nlist; i++) append(ranks, json_integer(v->list[i]), bad);
    put(j, "ranks", ranks, bad);
    if (v->kind == V_MISSING) put(j, "more_ranks", json_integer((json_int_t)v->more), bad);
    else if (v->g != NULL) put(j, "op", op_json(v->last, bad), bad);
    return j;
}

static json_t *member_json(const member_t *m, int *bad) {
    json_t *j = json_object(), *ops = json_array();
    put(j, "rank", json_integer(rank_of(m)), bad);
    put(j, "host", tr_json_string(m->dump->host), bad);
    put(j, "pid", json_integer(m->dump->pid), bad);
    put(j, "id", json_integer(m->comm->id), bad);
    put(j, "state", tr_json_string(m->comm->state), bad);
    put(j, "why", tr_json_string(m->comm->why), bad);
    put(j, "next_seq", json_integer((json_int_t)m->comm->next_seq), bad);
    put(j, "file", tr_json_string(m->dump->name), bad);
    put(j, "reason", tr_json_string(m->dump->reason), bad);
    size_t from = m->comm->nops > TAIL ? m->comm->nops - TAIL : 0;
    for (size_t k = from; k < m->comm->nops; k++) append(ops, op_json(&m->comm->ops[k], bad), bad);
    put(j, "ops", ops, bad);
    return j;
}

/* The ranks --ranks chose, "0,2-5" (merged). NULL when out of memory. */
static json_t *listed_json(const tr_ranks_t *listed) {
    size_t size = listed->n * 24 + 1;
    char *t = malloc(size);
    if (t == NULL) return NULL;
    size_t k = 0;
    t[0] = '\0';
    for (size_t i = 0; i < listed->n; i++) {
        const tr_range_t *r = &listed->r[i];
        k += (size_t)(r->lo == r->hi ? snprintf(t + k, size - k, "%s%d", i ? "," : "", r->lo)
                                     : snprintf(t + k, size - k, "%s%d-%d", i ? "," : "", r->lo, r->hi));
    }
    json_t *j = json_string(t);
    free(t);
    return j;
}

/* Writes text, every DEL as \u007f: jansson leaves it raw in a string (valid JSON, yet a byte a
 * terminal may act on); everything else JSON_ENSURE_ASCII made printable ASCII already. */
static void write_ascii(const char *text, FILE *out) {
    for (const char *p = text; *p; p++) {
        if (*p == 0x7f) fputs("\\u007f", out);
        else fputc(*p, out);
    }
    fputc('\n', out);
}

int tr_print_json(const tr_analysis_t *a, int files_skipped, FILE *out) {
    int bad = 0;
    json_t *root = json_object(), *options = json_object(), *comms = json_array();
    put(root, "hidet_nccl_trace_report", json_integer(1), &bad);
    put(root, "verdict", verdict_json(a, a->worst, &bad), &bad);
    put(options, "ranks", a->listed ? listed_json(a->listed) : json_null(), &bad);
    put(options, "comm", a->comm ? json_string(a->comm) : json_null(), &bad);
    put(root, "options", options, &bad);
    put(root, "dumps", json_integer((json_int_t)a->set->ndumps), &bad);
    put(root, "files_skipped", json_integer(files_skipped), &bad);
    put(root, "missing_listed", a->absent.kind != V_NONE ? verdict_json(a, &a->absent, &bad) : json_null(), &bad);
    for (size_t i = 0; i < a->ng; i++) {
        const group_t *g = &a->g[i];
        json_t *c = json_object(), *ranks = json_array();
        put(c, "key", json_string(g->key), &bad);
        if (!strcmp(g->key, "00000000")) put(c, "id", json_integer(g->id), &bad);
        put(c, "nranks", g->nranks > 0 ? json_integer(g->nranks) : json_null(), &bad);
        put(c, "dumps", json_integer((json_int_t)g->n), &bad);
        const tr_comm_t *first = g->n > 0 ? g->m[0].comm : NULL;
        put(c, "from", first && first->from[0] ? json_string(first->from) : json_null(), &bad);
        put(c, "how", first && first->from[0] ? json_string(first->how) : json_null(), &bad);
        put(c, "verdict", verdict_json(a, &a->v[i], &bad), &bad);
        for (size_t k = 0; k < g->n; k++) append(ranks, member_json(&g->m[k], &bad), &bad);
        put(c, "ranks", ranks, &bad);
        append(comms, c, &bad);
    }
    put(root, "comms", comms, &bad);
    char *text = bad ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_ENSURE_ASCII);
    json_decref(root);
    if (text == NULL) return -1;
    write_ascii(text, out);
    free(text);
    return 0;
}

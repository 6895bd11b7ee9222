/* Where the ranks diverged: the dumps of one communicator (same key) from every rank, seq by
 * seq. The verdict, most telling first: two ranks that disagree about an operation, a rank
 * behind the others, a rank with no dump, work not completed; then each rank's last
 * operations. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace_read.h"

#define TAIL 3 /* operations shown per rank in the detail */

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
static const char *differ(const tr_op_t *a, const tr_op_t *b, char *va, char *vb, size_t size) {
#define DIFF(field, fmt, x, y)              \
    do {                                    \
        snprintf(va, size, fmt, x);         \
        snprintf(vb, size, fmt, y);         \
        if (strcmp(va, vb) != 0) return field; \
    } while (0)
    if (p2p(a->coll) && p2p(b->coll)) return NULL; /* a send meets the peer's recv */
    DIFF("collective", "%s", a->coll, b->coll);
    DIFF("dtype", "%s", a->dtype, b->dtype);
    DIFF("count", "%" PRIu64, a->count, b->count);
    DIFF("op", "%s", a->op, b->op);
    if (rooted(a->coll)) DIFF("root", "%d", a->peer, b->peer);
    if (a->tag[0] && b->tag[0]) DIFF("tag", "'%s'", a->tag, b->tag);
    return NULL;
#undef DIFF
}

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

/* Two ranks that disagree about seq s, said into line: 1; else 0. */
static int disagree_at(const group_t *g, uint64_t s, char *line, size_t size) {
    const tr_op_t *first = NULL;
    size_t first_i = 0;
    for (size_t i = 0; i < g->n; i++) {
        const tr_op_t *o = at_seq(g->m[i].comm, s);
        if (o == NULL) continue; /* torn while dumped */
        if (first == NULL) {
            first = o, first_i = i;
            continue;
        }
        char va[64], vb[64];
        const char *field = differ(first, o, va, vb, sizeof va);
        if (field == NULL) continue;
        snprintf(line, size, "ranks disagree at seq %" PRIu64 " of communicator %s: %s %s on rank %d, %s on rank %d",
                 s, g->key, field, va, rank_of(&g->m[first_i]), vb, rank_of(&g->m[i]));
        return 1;
    }
    return 0;
}

/* Disagreement within the seqs every rank still holds, said into line: 1; else 0. */
static int find_disagreement(const group_t *g, char *line, size_t size) {
    uint64_t lo, hi;
    if (!common_seqs(g, &lo, &hi) || g->n < 2) return 0;
    const tr_comm_t *shortest = g->m[0].comm; /* walk its seqs: a hostile dump's gaps cost nothing */
    for (size_t i = 1; i < g->n; i++)
        if (g->m[i].comm->nops < shortest->nops) shortest = g->m[i].comm;
    for (size_t k = 0; k < shortest->nops; k++) {
        uint64_t s = shortest->ops[k].seq;
        if (s >= lo && s <= hi && disagree_at(g, s, line, size)) return 1;
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

/* Rank lo_i behind rank hi_i: where each stopped, into line. */
static void say_behind(const group_t *g, size_t lo_i, size_t hi_i, char *line, size_t size) {
    const tr_comm_t *behind = g->m[lo_i].comm, *ahead = g->m[hi_i].comm;
    char a[160], b[160];
    const tr_op_t *ao = ahead->nops ? &ahead->ops[ahead->nops - 1] : NULL;
    const tr_op_t *bo = behind->nops ? &behind->ops[behind->nops - 1] : NULL;
    if (ao) describe(ao, a, sizeof a);
    if (bo) describe(bo, b, sizeof b);
    if (bo)
        snprintf(line, size, "rank %d stopped at seq %" PRIu64 " %s; rank %d is at seq %" PRIu64 " %s",
                 rank_of(&g->m[lo_i]), bo->seq, b, rank_of(&g->m[hi_i]), ahead->next_seq - 1, ao ? a : "");
    else
        snprintf(line, size, "rank %d issued nothing on communicator %s; rank %d is at seq %" PRIu64 " %s",
                 rank_of(&g->m[lo_i]), g->key, rank_of(&g->m[hi_i]), ahead->next_seq - 1, ao ? a : "");
}

/* The ranks of the communicator with no dump, and where the others are, into line. */
static void say_missing(const group_t *g, const tr_comm_t *ahead, char *line, size_t size) {
    char missing[128] = "";
    for (int r = 0; r < g->nranks && strlen(missing) < sizeof missing - 16; r++) {
        int seen = 0;
        for (size_t i = 0; i < g->n; i++) seen |= rank_of(&g->m[i]) == r;
        if (!seen)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%d", *missing ? "," : "", r);
    }
    snprintf(line, size, "rank(s) %s of communicator %s left no dump (dead, or no trace directory); the %zu "
             "others are at seq %" PRIu64, missing, g->key, g->n, ahead->next_seq ? ahead->next_seq - 1 : 0);
}

/* Every rank at one seq: whether its last operation completed everywhere, into line; the kind. */
static int judge_last(const group_t *g, const tr_comm_t *ahead, char *line, size_t size) {
    if (ahead->nops == 0) {
        snprintf(line, size, "no divergence on communicator %s: no operations recorded", g->key);
        return V_NONE;
    }
    const tr_op_t *last = &ahead->ops[ahead->nops - 1];
    char pending[128] = "", a[160];
    for (size_t i = 0; i < g->n; i++) {
        const tr_op_t *o = at_seq(g->m[i].comm, last->seq);
        if (o && !strcmp(o->state, "pending") && strlen(pending) < sizeof pending - 16)
            snprintf(pending + strlen(pending), sizeof pending - strlen(pending), "%s%d", *pending ? "," : "",
                     rank_of(&g->m[i]));
    }
    describe(last, a, sizeof a);
    if (*pending) {
        snprintf(line, size, "every rank issued seq %" PRIu64 " of communicator %s, %s; not completed on rank(s) %s",
                 last->seq, g->key, a, pending);
        return V_INCOMPLETE;
    }
    snprintf(line, size, "no divergence on communicator %s: every rank at seq %" PRIu64 " %s", g->key, last->seq, a);
    return V_NONE;
}

/* The group's verdict into line; its kind. */
static int judge(const group_t *g, char *line, size_t size) {
    if (find_disagreement(g, line, size)) return V_DISAGREE;
    size_t lo_i, hi_i;
    seq_extremes(g, &lo_i, &hi_i);
    const tr_comm_t *ahead = g->m[hi_i].comm;
    if (g->m[lo_i].comm->next_seq < ahead->next_seq) {
        say_behind(g, lo_i, hi_i, line, size);
        return V_BEHIND;
    }
    if (g->nranks > 0 && g->n < (size_t)g->nranks) {
        say_missing(g, ahead, line, size);
        return V_MISSING;
    }
    return judge_last(g, ahead, line, size);
}

/* Every line through tr_say: hosts, reasons, states, tags and file names come from the dumps. */
static void detail(const group_t *g, const char *verdict, FILE *out) {
    fputc('\n', out);
    tr_say(out, "communicator %s (%d ranks, dumps of %zu): %s", g->key, g->nranks, g->n, verdict);
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

/* The communicators of every dump, grouped by key (unknown keys by id). */
static group_t *group_all(const tr_set_t *set, size_t *ngroups) {
    group_t *g = NULL;
    size_t n = 0;
    for (size_t d = 0; d < set->ndumps; d++)
        for (size_t c = 0; c < set->dumps[d].ncomms; c++) {
            const tr_comm_t *cm = &set->dumps[d].comms[c];
            int unknown = !strcmp(cm->key, "00000000");
            size_t k = 0;
            while (k < n && (strcmp(g[k].key, cm->key) || (unknown && g[k].id != cm->id))) k++;
            member_t *members = realloc(k < n ? g[k].m : NULL, (k < n ? g[k].n + 1 : 1) * sizeof *members);
            if (members == NULL) continue; /* out of memory: this member left out */
            if (k == n) { /* a new group, made with its first member: judge reads m[0] */
                group_t *grown = realloc(g, (n + 1) * sizeof *g);
                if (grown == NULL) {
                    free(members);
                    continue;
                }
                g = grown;
                memset(&g[n], 0, sizeof g[n]);
                memcpy(g[n].key, cm->key, sizeof g[n].key);
                g[n].id = cm->id;
                n++;
            }
            g[k].m = members;
            g[k].m[g[k].n++] = (member_t){&set->dumps[d], cm};
            if (cm->nranks > g[k].nranks) g[k].nranks = cm->nranks;
        }
    *ngroups = n;
    return g;
}

int tr_report(const tr_set_t *set, FILE *out) {
    size_t n;
    group_t *g = group_all(set, &n);
    char(*verdicts)[512] = n ? calloc(n, sizeof *verdicts) : NULL;
    int worst = V_NONE;
    size_t worst_i = 0;
    for (size_t i = 0; verdicts && i < n; i++) {
        int v = judge(&g[i], verdicts[i], sizeof verdicts[i]);
        if (v > worst) worst = v, worst_i = i;
    }
    if (n == 0 || verdicts == NULL) tr_say(out, "no communicator in %zu dump(s)", set->ndumps);
    else tr_say(out, "%s", verdicts[worst_i]);
    for (size_t i = 0; verdicts && i < n; i++) detail(&g[i], verdicts[i], out);
    for (size_t i = 0; i < n; i++) free(g[i].m);
    free(g);
    free(verdicts);
    return worst != V_NONE;
}

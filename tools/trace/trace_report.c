/* Saying the verdicts (tools/trace/trace_judge.c) two ways: text (tr_print_text: the verdict in
 * one line, then each communicator's detail, each rank's last operations) and JSON
 * (tr_print_json), from one judgement, so that the two say the same. */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace/trace_judge_int.h"

#define TAIL 3 /* operations shown per rank in the detail */

/* The verdicts' kinds (TR_V_*, in their order) as the JSON names them. */
static const char *const k_kind[] = {"consistent", "not_completed", "missing_dump", "behind", "divergence"};

/* ------------------------------------------------------------------- the text printer */

static void describe(const tr_op_t *o, char *out, size_t size) {
    char extra[48] = "";
    if (strcmp(o->op, "-") != 0) snprintf(extra, sizeof extra, " %s", o->op);
    if (tr_rooted(o->coll)) snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " root %d", o->peer);
    if (tr_p2p(o->coll)) snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " peer %d", o->peer);
    const char *st = !strcmp(o->state, "pending") ? "not completed" : o->state;
    snprintf(out, size, "%s %s x%" PRIu64 "%s (%s%s%s%s)", o->coll, o->dtype, o->count, extra, st,
             o->tag[0] ? ", tag '" : "", o->tag, o->tag[0] ? "'" : "");
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

/* v's ranks, "1,3,7", into out: as many as fit, then how many in all. */
static void ranks_text(const tr_verdict_t *v, char *out, size_t size) {
    size_t k = 0;
    out[0] = '\0';
    for (; k < v->nlist && strlen(out) < 112; k++)
        snprintf(out + strlen(out), size - strlen(out), "%s%d", k ? "," : "", v->list[k]);
    if (k < v->nlist || v->more > 0)
        snprintf(out + strlen(out), size - strlen(out), ",... (%" PRIu64 " in all)", (uint64_t)v->nlist + v->more);
}

/* The verdict as one line. */
static void verdict_text(const tr_analysis_t *a, const tr_verdict_t *v, char *line, size_t size) {
    const tr_group_t *g = v->g;
    char x[160], y[160], ranks[192];
    ranks_text(v, ranks, sizeof ranks);
    switch (v->kind) {
    case TR_V_DISAGREE:
        field_text(v->op[0], v->field, x, sizeof x);
        field_text(v->op[1], v->field, y, sizeof y);
        snprintf(line, size, "ranks disagree at seq %" PRIu64 " of communicator %s: %s %s on rank %d, %s on rank %d",
                 v->seq, g->key, v->field, x, v->rank[0], y, v->rank[1]);
        break;
    case TR_V_BEHIND:
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
    case TR_V_MISSING:
        if (g)
            snprintf(line, size, "rank(s) %s of communicator %s left no dump (dead, or no trace directory); the %zu "
                     "others are at seq %" PRIu64, ranks, g->key, g->n, v->seq);
        else
            snprintf(line, size, "rank(s) %s chosen by --ranks left no dump (dead, or no trace directory)", ranks);
        break;
    case TR_V_INCOMPLETE:
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
static void detail(const tr_group_t *g, const char *verdict, FILE *out) {
    fputc('\n', out);
    tr_say(out, "communicator %s (%d ranks, dumps of %zu): %s", g->key, g->nranks, g->n, verdict);
    if (g->n > 0 && g->m[0].comm->from[0] != '\0')
        tr_say(out, "  made by %s from communicator %s", g->m[0].comm->how, g->m[0].comm->from);
    for (size_t i = 0; i < g->n; i++) {
        const tr_member_t *m = &g->m[i];
        tr_say(out, "  rank %d  %s pid %ld  id %d  %s%s%s  next seq %" PRIu64 "  (%s: %s)", tr_rank_of(m), m->dump->host,
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

/* 1 when the dump's process recorded nothing by choice (its header's "recorder" is "off (why)"). */
static int recorder_off(const tr_dump_t *d) { return strncmp(d->recorder, "off", 3) == 0; }

void tr_print_text(const tr_analysis_t *a, FILE *out) {
    char line[512];
    verdict_text(a, a->worst, line, sizeof line);
    tr_say(out, "%s", line);
    if (a->absent.kind != TR_V_NONE) {
        verdict_text(a, &a->absent, line, sizeof line);
        fputc('\n', out);
        tr_say(out, "%s", line);
    }
    for (size_t i = 0; i < a->set->ndumps; i++) {
        const tr_dump_t *d = &a->set->dumps[i];
        if (!recorder_off(d)) continue;
        if (d->rank >= 0)
            tr_say(out, "rank %d (pid %ld, %s) recorded nothing: its flight recorder was %s", d->rank, d->pid, d->name,
                   d->recorder);
        else /* a process no launcher numbered */
            tr_say(out, "pid %ld (%s) recorded nothing: its flight recorder was %s", d->pid, d->name, d->recorder);
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

static json_t *verdict_json(const tr_analysis_t *a, const tr_verdict_t *v, int *bad) {
    json_t *j = json_object(), *ranks = json_array();
    char line[512];
    verdict_text(a, v, line, sizeof line);
    put(j, "kind", json_string(k_kind[v->kind]), bad);
    put(j, "text", tr_json_string(line), bad);
    put(j, "comm", v->g ? json_string(v->g->key) : json_null(), bad);
    put(j, "seq", seq_or_null(v->has_seq, v->seq), bad);
    if (v->kind == TR_V_DISAGREE || v->kind == TR_V_BEHIND) {
        json_t *ops = json_array();
        for (int i = 0; i < 2; i++) {
            append(ranks, json_integer(v->rank[i]), bad);
            append(ops, op_json(v->op[i], bad), bad);
        }
        put(j, "ranks", ranks, bad);
        if (v->kind == TR_V_DISAGREE) {
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
    if (v->kind == TR_V_MISSING) put(j, "more_ranks", json_integer((json_int_t)v->more), bad);
    else if (v->g != NULL) put(j, "op", op_json(v->last, bad), bad);
    return j;
}

static json_t *member_json(const tr_member_t *m, int *bad) {
    json_t *j = json_object(), *ops = json_array();
    put(j, "rank", json_integer(tr_rank_of(m)), bad);
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
    put(root, "missing_listed", a->absent.kind != TR_V_NONE ? verdict_json(a, &a->absent, &bad) : json_null(), &bad);
    json_t *off = json_array();
    for (size_t i = 0; i < a->set->ndumps; i++) {
        const tr_dump_t *d = &a->set->dumps[i];
        if (!recorder_off(d)) continue;
        json_t *o = json_object();
        put(o, "rank", json_integer(d->rank), &bad);
        put(o, "pid", json_integer(d->pid), &bad);
        put(o, "file", tr_json_string(d->name), &bad);
        put(o, "recorder", tr_json_string(d->recorder), &bad);
        append(off, o, &bad);
    }
    put(root, "recorder_off", off, &bad);
    for (size_t i = 0; i < a->ng; i++) {
        const tr_group_t *g = &a->g[i];
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

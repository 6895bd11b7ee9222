/* Reading one flight recorder dump (JSON lines, docs/flight_recorder.md) with jansson. */
#include "tools/trace_read.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *err;
    size_t err_size;
    const char *name;
    size_t line;
} ctx_t;

static int fail(ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ctx_t *c, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->err_size, "%s: line %zu: %s", c->name, c->line, what);
    return -1;
}

/* A string member copied into out (truncated to fit); required. */
static int get_str(ctx_t *c, json_t *o, const char *k, char *out, size_t size) {
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) return fail(c, "\"%s\" is missing or not a string", k);
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

/* An integer member in [lo, hi]; required. */
static int get_int(ctx_t *c, json_t *o, const char *k, long long lo, long long hi, long long *out) {
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) return fail(c, "\"%s\" is missing or not an integer", k);
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return fail(c, "\"%s\" is %lld, not in %lld .. %lld", k, x, lo, hi);
    *out = x;
    return 0;
}

static int read_header(ctx_t *c, json_t *o, tr_dump_t *d) {
    long long format, pid, rank;
    if (get_int(c, o, "hidet_nccl_trace", 0, 1000000, &format)) return -1;
    if (format != 1) return fail(c, "format %lld; this tool reads format 1", format);
    if (get_str(c, o, "host", d->host, sizeof d->host) || get_str(c, o, "reason", d->reason, sizeof d->reason) ||
        get_int(c, o, "pid", 0, 1LL << 40, &pid) || get_int(c, o, "rank", -1, 1 << 30, &rank))
        return -1;
    d->pid = (long)pid;
    d->rank = (int)rank;
    return 0;
}

static tr_comm_t *find_comm(tr_dump_t *d, int id) {
    for (size_t i = 0; i < d->ncomms; i++)
        if (d->comms[i].id == id) return &d->comms[i];
    return NULL;
}

/* A key is 8 hex digits. */
static int valid_key(const char *k) {
    if (strlen(k) != 8) return 0;
    for (int i = 0; i < 8; i++)
        if (!strchr("0123456789abcdef", k[i])) return 0;
    return 1;
}

static int read_comm(ctx_t *c, json_t *o, tr_dump_t *d) {
    tr_comm_t m = {0};
    long long id, rank, nranks, next;
    if (get_int(c, o, "comm", 0, 1LL << 31, &id) || get_str(c, o, "key", m.key, sizeof m.key) ||
        get_int(c, o, "rank", -1, 1 << 30, &rank) || get_int(c, o, "nranks", -1, 1 << 30, &nranks) ||
        get_str(c, o, "state", m.state, sizeof m.state) || get_str(c, o, "why", m.why, sizeof m.why) ||
        get_int(c, o, "next_seq", 0, 1LL << 62, &next))
        return -1;
    if (!valid_key(m.key)) return fail(c, "key \"%s\" is not 8 hex digits", m.key);
    if (nranks >= 0 && rank >= nranks) return fail(c, "rank %lld of %lld ranks", rank, nranks);
    if (find_comm(d, (int)id)) return fail(c, "communicator %lld appears twice", id);
    if (d->ncomms >= TR_MAX_COMMS) return fail(c, "more than %d communicators", TR_MAX_COMMS);
    tr_comm_t *grown = realloc(d->comms, (d->ncomms + 1) * sizeof *grown);
    if (grown == NULL) return fail(c, "out of memory");
    d->comms = grown;
    m.id = (int)id;
    m.rank = (int)rank;
    m.nranks = (int)nranks;
    m.next_seq = (uint64_t)next;
    d->comms[d->ncomms++] = m;
    return 0;
}

static int read_op(ctx_t *c, json_t *o, tr_dump_t *d, size_t *total) {
    long long id, seq, count, peer;
    tr_op_t op = {0};
    if (get_int(c, o, "comm", 0, 1LL << 31, &id) || get_int(c, o, "seq", 0, 1LL << 62, &seq) ||
        get_str(c, o, "coll", op.coll, sizeof op.coll) || get_str(c, o, "dtype", op.dtype, sizeof op.dtype) ||
        get_int(c, o, "count", 0, INT64_MAX, &count) || get_str(c, o, "op", op.op, sizeof op.op) ||
        get_int(c, o, "peer", -1, 1 << 30, &peer) || get_str(c, o, "state", op.state, sizeof op.state) ||
        get_str(c, o, "tag", op.tag, sizeof op.tag))
        return -1;
    tr_comm_t *m = find_comm(d, (int)id);
    if (m == NULL) return fail(c, "an operation of communicator %lld before its \"comm\" line", id);
    if ((uint64_t)seq >= m->next_seq)
        return fail(c, "seq %lld is not below the communicator's next_seq %llu", seq, (unsigned long long)m->next_seq);
    if (m->nops > 0 && (uint64_t)seq <= m->ops[m->nops - 1].seq)
        return fail(c, "seq %lld does not follow seq %llu", seq, (unsigned long long)m->ops[m->nops - 1].seq);
    if (++*total > TR_MAX_OPS) return fail(c, "more than %u operations", TR_MAX_OPS);
    if (m->nops == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        tr_op_t *grown = realloc(m->ops, cap * sizeof *grown);
        if (grown == NULL) return fail(c, "out of memory");
        m->ops = grown;
        m->cap = cap;
    }
    op.seq = (uint64_t)seq;
    op.count = (uint64_t)count;
    op.peer = (int)peer;
    m->ops[m->nops++] = op;
    return 0;
}

static void free_dump(tr_dump_t *d) {
    for (size_t i = 0; i < d->ncomms; i++) free(d->comms[i].ops);
    free(d->comms);
}

/* One line (without its newline) into d. */
static int read_line(ctx_t *c, const char *line, size_t len, tr_dump_t *d, size_t *total) {
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (o == NULL) return fail(c, "not JSON: %s", je.text);
    int r;
    char type[16];
    if (!json_is_object(o)) r = fail(c, "not a JSON object");
    else if (get_str(c, o, "type", type, sizeof type)) r = -1;
    else if (c->line == 1) r = strcmp(type, "header") ? fail(c, "the first line is not the header") : read_header(c, o, d);
    else if (strcmp(type, "comm") == 0) r = read_comm(c, o, d);
    else if (strcmp(type, "op") == 0) r = read_op(c, o, d, total);
    else if (strcmp(type, "header") == 0) r = fail(c, "a second header");
    else r = fail(c, "unknown type \"%s\"", type);
    json_decref(o);
    return r;
}

int tr_read_file(tr_set_t *set, FILE *f, const char *name, char *err, size_t err_size) {
    ctx_t c = {err, err_size, name, 0};
    tr_dump_t d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    char *buf = malloc(TR_MAX_LINE + 2);
    if (buf == NULL) return fail(&c, "out of memory");
    size_t total = 0;
    int r = 0;
    while (r == 0 && fgets(buf, TR_MAX_LINE + 2, f) != NULL) {
        c.line++;
        size_t len = strlen(buf); /* a NUL inside the line ends it early: jansson then finds it torn */
        if (len == 0 || buf[len - 1] != '\n') {
            r = len > TR_MAX_LINE ? fail(&c, "longer than %d bytes", TR_MAX_LINE)
                                  : fail(&c, "torn: the file ends inside the line");
            break;
        }
        r = read_line(&c, buf, len - 1, &d, &total);
    }
    if (r == 0 && ferror(f)) r = fail(&c, "read error");
    if (r == 0 && c.line == 0) r = fail(&c, "empty file");
    free(buf);
    if (r == 0) {
        tr_dump_t *grown = realloc(set->dumps, (set->ndumps + 1) * sizeof *grown);
        if (grown == NULL) r = fail(&c, "out of memory");
        else {
            set->dumps = grown;
            set->dumps[set->ndumps++] = d;
            return 0;
        }
    }
    free_dump(&d);
    return r;
}

void tr_free(tr_set_t *set) {
    for (size_t i = 0; i < set->ndumps; i++) free_dump(&set->dumps[i]);
    free(set->dumps);
    set->dumps = NULL;
    set->ndumps = 0;
}

/* Reading flight recorder dumps (JSON lines, docs/flight_recorder.md) with jansson: one file,
 * or every dump of a directory; and printing what they hold, escaped. */
#include "tools/trace/trace_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hidet_nccl/hidet_nccl.h"

#define MAX_FILE_BYTES (1LL << 30)

/* --------------------------------------------------------------------------- printing */

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong form, no surrogate,
 * nothing past U+10FFFF), or 0. */
static size_t utf8_length(const unsigned char *p) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80; /* the second byte's range */
    unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (n == 0 || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf) return 0;
    return n;
}

/* Code points a terminal acts on or that reorder what is shown: C1 controls (U+0080 .. U+009F,
 * 0x9b is CSI to some terminals) and the bidirectional overrides and isolates (U+202A .. U+202E,
 * U+2066 .. U+2069), which can make a line read other than it is. */
static int is_unicode_control(const unsigned char *p, size_t n) {
    if (n == 2) return p[0] == 0xc2 && p[1] < 0xa0;
    if (n == 3 && p[0] == 0xe2 && p[1] == 0x80) return p[2] >= 0xaa && p[2] <= 0xae;
    if (n == 3 && p[0] == 0xe2 && p[1] == 0x81) return p[2] >= 0xa6 && p[2] <= 0xa9;
    return 0;
}

static unsigned code_point(const unsigned char *p, size_t n) {
    return n == 2 ? (unsigned)(p[0] & 0x1f) << 6 | (p[1] & 0x3f)
                  : (unsigned)(p[0] & 0x0f) << 12 | (unsigned)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
}

/* Writes s escaped: a control character (C0, DEL) or a byte that is not UTF-8 as \xNN, a
 * Unicode control as \uNNNN, a backslash as \\ (so an escape in the output always is one);
 * everything else as it is. Every string hidet-nccl-trace prints passes here: a dump's strings
 * and the names of its files are anyone's, and "\u001b[2J" in a host name must not clear the
 * reader's terminal. */
static void put_escaped(FILE *out, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0';) {
        size_t n = utf8_length(p);
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
            fprintf(out, "\\x%02x", *p);
            n = 1;
        } else if (n == 1 && *p == '\\') {
            fputs("\\\\", out);
        } else if (is_unicode_control(p, n)) {
            fprintf(out, "\\u%04x", code_point(p, n));
        } else {
            fwrite(p, 1, n, out);
        }
        p += n;
    }
}

void tr_say(FILE *out, const char *fmt, ...) {
    char small[1024], *text = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) small[0] = '\0';
    if (n >= (int)sizeof small && (text = malloc((size_t)n + 1)) != NULL) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    put_escaped(out, text != NULL ? text : small); /* out of memory: the first 1023 bytes */
    fputc('\n', out);
    if (text != small) free(text);
}

json_t *tr_json_string(const char *s) {
    size_t len = strlen(s), k = 0;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len && utf8_length(p + i) != 0) i += utf8_length(p + i);
    if (i >= len) return json_string(s); /* UTF-8 throughout: as it is */
    char *t = len < (SIZE_MAX - 1) / 4 ? malloc(4 * len + 1) : NULL;
    if (t == NULL) return NULL;
    for (i = 0; i < len;) {
        size_t n = utf8_length(p + i);
        if (n == 0) k += (size_t)sprintf(t + k, "\\x%02x", p[i++]);
        else while (n-- > 0) t[k++] = (char)p[i++];
    }
    t[k] = '\0';
    json_t *j = json_string(t);
    free(t);
    return j;
}

/* ---------------------------------------------------------------------- one dump */

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
    /* optional (older dumps lack it): "on", or "off (why)" when its communicators were not recorded */
    if (json_object_get(o, "recorder") != NULL && get_str(c, o, "recorder", d->recorder, sizeof d->recorder)) return -1;
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
    json_t *from = json_object_get(o, "from"); /* optional: where a recovered or healed communicator came from */
    if (from != NULL) {
        if (get_str(c, o, "from", m.from, sizeof m.from) || get_str(c, o, "how", m.how, sizeof m.how)) return -1;
        if (!valid_key(m.from)) return fail(c, "from \"%s\" is not 8 hex digits", m.from);
        if (strcmp(m.how, "recover") != 0 && strcmp(m.how, "heal-rebuild") != 0 && strcmp(m.how, "heal-shrink") != 0)
            return fail(c, "how \"%s\" is not \"recover\", \"heal-rebuild\" nor \"heal-shrink\"", m.how);
    }
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
    else if (c->line == 1)
        r = strcmp(type, "header") ? fail(c, "the first line is not the header") : read_header(c, o, d);
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

/* ------------------------------------------------------------- files and directories */

/* Reads one file (a regular file, not through a symbolic link, at most 1 GiB; O_NONBLOCK: a
 * FIFO is refused, not waited on); a refusal is said on err and counted. */
static void read_one(tr_set_t *set, int dirfd, const char *name, const char *shown, FILE *err, int *refused) {
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    char why[512];
    FILE *f = NULL;
    if (fd < 0 || fstat(fd, &st) != 0) snprintf(why, sizeof why, "%s: %s", shown, strerror(errno));
    else if (!S_ISREG(st.st_mode)) snprintf(why, sizeof why, "%s: not a regular file", shown);
    else if (st.st_size > MAX_FILE_BYTES)
        snprintf(why, sizeof why, "%s: %lld bytes, larger than 1 GiB", shown, (long long)st.st_size);
    else if ((f = fdopen(fd, "r")) == NULL) snprintf(why, sizeof why, "%s: %s", shown, strerror(errno));
    else if (tr_read_file(set, f, shown, why, sizeof why) == 0) why[0] = '\0';
    if (f != NULL) fclose(f);
    else if (fd >= 0) close(fd);
    if (why[0] != '\0') {
        tr_say(err, "hidet-nccl-trace: %s (skipped)", why);
        ++*refused;
    }
}

static int is_dump_name(const char *n) {
    size_t len = strlen(n), pre = strlen(HIDET_NCCL_TRACE_FILE_PREFIX), suf = strlen(HIDET_NCCL_TRACE_FILE_SUFFIX);
    return len > pre + suf && strncmp(n, HIDET_NCCL_TRACE_FILE_PREFIX, pre) == 0 &&
           strcmp(n + len - suf, HIDET_NCCL_TRACE_FILE_SUFFIX) == 0;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names of the dumps in d, sorted, into *names (malloc'ed, each too; NULL when none). -1
 * on running out of memory (said on err; what was listed is freed). */
static long list_dumps(DIR *d, const char *dir, FILE *err, char ***names) {
    size_t n = 0;
    *names = NULL;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!is_dump_name(e->d_name)) continue;
        char **grown = realloc(*names, (n + 1) * sizeof **names);
        if (grown != NULL) *names = grown;
        if (grown == NULL || ((*names)[n] = strdup(e->d_name)) == NULL) {
            tr_say(err, "hidet-nccl-trace: %s: out of memory listing its dumps (%zu so far)", dir, n);
            while (n > 0) free((*names)[--n]);
            free(*names);
            *names = NULL;
            return -1;
        }
        n++;
    }
    if (n > 1) qsort(*names, n, sizeof **names, compare_names); /* none: no array at all, and qsort wants one */
    return (long)n;
}

/* Every dump in dir, in name order: how many there were, or -1. */
static long read_dir(tr_set_t *set, const char *dir, FILE *err, int *refused) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (d == NULL) {
        tr_say(err, "hidet-nccl-trace: %s: %s", dir, strerror(errno));
        if (dfd >= 0) close(dfd);
        return -1;
    }
    char **names;
    long n = list_dumps(d, dir, err, &names);
    for (long i = 0; i < n; i++) {
        char shown[4352];
        snprintf(shown, sizeof shown, "%s/%s", dir, names[i]);
        read_one(set, dirfd(d), names[i], shown, err, refused);
        free(names[i]);
    }
    free(names);
    closedir(d);
    if (n == 0)
        tr_say(err, "hidet-nccl-trace: %s holds no dump (no %s*%s file)", dir, HIDET_NCCL_TRACE_FILE_PREFIX,
               HIDET_NCCL_TRACE_FILE_SUFFIX);
    return n;
}

long tr_read_path(tr_set_t *set, const char *path, FILE *err, int *refused) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return read_dir(set, path, err, refused);
    read_one(set, AT_FDCWD, path, path, err, refused);
    return 1;
}

/* ------------------------------------------------------------------ choosing dumps */

static int compare_ranges(const void *a, const void *b) {
    const tr_range_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* A rank at *p (digits only, at most TR_MAX_RANK) into *out, *p past it; -1 with why in err. */
static int parse_rank(const char *list, const char **p, int *out, char *err, size_t err_size) {
    const char *start = *p;
    long long v = 0;
    while (**p >= '0' && **p <= '9') {
        if (v <= TR_MAX_RANK) v = v * 10 + (**p - '0');
        ++*p;
    }
    if (*p == start) {
        if (**p == '\0' || **p == ',' || **p == '-')
            snprintf(err, err_size, "a rank is missing at byte %zu", (size_t)(start - list) + 1);
        else snprintf(err, err_size, "'%c' at byte %zu is not a digit", **p, (size_t)(start - list) + 1);
        return -1;
    }
    if (v > TR_MAX_RANK) {
        snprintf(err, err_size, "the rank at byte %zu is larger than %d", (size_t)(start - list) + 1, TR_MAX_RANK);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int tr_parse_ranks(const char *list, tr_ranks_t *out, char *err, size_t err_size) {
    out->r = NULL;
    out->n = 0;
    if (*list == '\0') {
        snprintf(err, err_size, "the list is empty");
        return -1;
    }
    size_t items = 1;
    for (const char *c = list; *c; c++) items += *c == ',';
    tr_range_t *r = malloc(items * sizeof *r);
    if (r == NULL) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (const char *p = list;;) {
        tr_range_t x;
        if (parse_rank(list, &p, &x.lo, err, err_size)) goto fail;
        x.hi = x.lo;
        if (*p == '-') {
            p++;
            if (parse_rank(list, &p, &x.hi, err, err_size)) goto fail;
            if (x.hi < x.lo) {
                snprintf(err, err_size, "the range %d-%d runs backwards", x.lo, x.hi);
                goto fail;
            }
        }
        r[n++] = x;
        if (*p == '\0') break;
        if (*p != ',') {
            snprintf(err, err_size, "'%c' at byte %zu: a comma or the end was expected", *p, (size_t)(p - list) + 1);
            goto fail;
        }
        p++;
    }
    qsort(r, n, sizeof *r, compare_ranges);
    size_t m = 0; /* merged: overlapping or touching ranges become one */
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && (long long)r[i].lo <= (long long)r[m - 1].hi + 1) {
            if (r[i].hi > r[m - 1].hi) r[m - 1].hi = r[i].hi;
        } else {
            r[m++] = r[i];
        }
    }
    out->r = r;
    out->n = m;
    return 0;
fail:
    free(r);
    return -1;
}

int tr_ranks_has(const tr_ranks_t *ranks, int rank) {
    size_t lo = 0, hi = ranks->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ranks->r[mid].hi < rank) lo = mid + 1;
        else hi = mid;
    }
    return lo < ranks->n && ranks->r[lo].lo <= rank;
}

void tr_ranks_free(tr_ranks_t *ranks) {
    free(ranks->r);
    ranks->r = NULL;
    ranks->n = 0;
}

void tr_keep_ranks(tr_set_t *set, const tr_ranks_t *ranks, FILE *err) {
    size_t kept = 0;
    for (size_t i = 0; i < set->ndumps; i++) {
        tr_dump_t *d = &set->dumps[i];
        if (d->rank >= 0 && tr_ranks_has(ranks, d->rank)) {
            set->dumps[kept++] = *d;
            continue;
        }
        if (d->rank < 0) tr_say(err, "hidet-nccl-trace: %s: the dump has no rank (left out by --ranks)", d->name);
        free_dump(d);
    }
    set->ndumps = kept;
}

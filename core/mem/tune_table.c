/* The crossover table for collectives on library memory: its text format, the built-in
 * table, and the process's table (HIDET_NCCL_TUNE_FILE or built in).
 *
 *   # comment
 *   all_reduce  float32  1048576  plain     <collective> <dtype or *> <up to bytes, or max> <view>
 *   all_reduce  float32  max      buffer
 *
 * Views: plain, buffer, window (NCCL's), own1, own2 (the own one-shot and two-shot all_reduce).
 *
 * Per collective and dtype the sizes ascend; a line for a dtype overrides the collective's
 * "*" lines for it; sizes past the last range run plain. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/base/number.h"
#include "core/base/status_int.h"
#include "core/mem/tune_table_int.h"

#define HN_NAME(id, name) name,
static const char *const k_colls[HN_NUM_TUNED] = {HN_TUNED(HN_NAME)};
static const char *const k_views[HN_NUM_VIEWS] = {HN_VIEWS(HN_NAME)};
#undef HN_NAME

const char *hidet_nccl__view_name(hn_view_t v) { return (unsigned)v < HN_NUM_VIEWS ? k_views[v] : "?"; }

int hidet_nccl__tune_uses(const hn_tune_t *t, hn_view_t v) {
    for (int c = 0; c < HN_NUM_TUNED; c++)
        for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++)
            for (int i = 0; i < t->cell[c][d].n; i++)
                if (t->cell[c][d].view[i] == v) return 1;
    return 0;
}

/* From `hidet-nccl-bench -m` on 2 x H200 (NVLink, NCCL 2.28.9, 2026-12-01; docs/buffers.md),
 * smoothed where the modes were within run-to-run noise: windows at small sizes and from 2 MiB
 * (all_reduce to 32 MiB for float32, 4 MiB otherwise; all_gather to 128 MiB, then registered
 * buffers); plain (NCCL's own buffers) elsewhere. */
static const char k_default[] = "# hidet-nccl tuning table 1 (built in)\n"
                                "all_reduce * 262144 window\n"
                                "all_reduce * 1048576 plain\n"
                                "all_reduce * 4194304 window\n"
                                "all_reduce * max plain\n"
                                "all_reduce float32 262144 window\n"
                                "all_reduce float32 1048576 plain\n"
                                "all_reduce float32 33554432 window\n"
                                "all_reduce float32 max plain\n"
                                "all_gather * 8192 window\n"
                                "all_gather * 1048576 plain\n"
                                "all_gather * 134217728 window\n"
                                "all_gather * max buffer\n"
                                "reduce_scatter * 262144 window\n"
                                "reduce_scatter * 1048576 plain\n"
                                "reduce_scatter * 2097152 window\n"
                                "reduce_scatter * max plain\n"
                                "reduce_scatter float32 524288 window\n"
                                "reduce_scatter float32 1048576 plain\n"
                                "reduce_scatter float32 33554432 window\n"
                                "reduce_scatter float32 max plain\n";

const char *hidet_nccl__tune_default_text(void) { return k_default; }

static int fail(char *why, size_t why_len, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t why_len, int line, const char *fmt, ...) {
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(why, why_len, "line %d: %s", line, what);
    return -1;
}

static int lookup(const char *const *names, int n, const char *word) {
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], word) == 0) return i;
    return -1;
}

/* "a, b or c" of the n names, for messages. */
static const char *one_of(const char *const *names, int n, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
    return out;
}

/* The dtype of a name, or -1 (hidet_nccl_dtype_name of a valid dtype leaves no message). */
static int dtype_index(const char *word) {
    for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++) {
        const char *name;
        if (hidet_nccl_dtype_name((hidet_nccl_dtype_t)d, &name) == HIDET_NCCL_SUCCESS && strcmp(name, word) == 0)
            return d;
    }
    return -1;
}

/* Appends a range to a cell; sizes must ascend. */
static int add_range(hn_tune_cell_t *c, size_t upto, int view, int line, char *why, size_t why_len) {
    if (c->n == HN_TUNE_RANGES)
        return fail(why, why_len, line, "more than %d ranges for one collective and dtype", HN_TUNE_RANGES);
    if (c->n > 0 && upto <= c->upto[c->n - 1])
        return fail(why, why_len, line, "the size is not above the previous line's for this collective and dtype");
    c->upto[c->n] = upto;
    c->view[c->n] = (unsigned char)view;
    c->n++;
    return 0;
}

#define LINE_BYTES 256 /* a line's longest, its NUL included */

/* The next line of text[*pos .. len) into buf (LINE_BYTES), its comment cut off; *pos moves
 * past it. 0, or -1 with why: too many lines, too long a line, a NUL byte. */
static int next_line(const char *text, size_t len, size_t *pos, int line, char *buf, char *why, size_t why_len) {
    const char *start = text + *pos;
    const char *nl = memchr(start, '\n', len - *pos);
    size_t n = nl ? (size_t)(nl - start) : len - *pos;
    *pos += n + (nl != NULL);
    if (line > HN_TUNE_LINES) return fail(why, why_len, line, "more than %d lines", HN_TUNE_LINES);
    if (n >= LINE_BYTES) return fail(why, why_len, line, "longer than %d bytes", LINE_BYTES - 1);
    memcpy(buf, start, n);
    buf[n] = '\0';
    if (memchr(buf, '\0', n) != NULL) return fail(why, why_len, line, "a NUL byte");
    char *hash = strchr(buf, '#');
    if (hash != NULL) *hash = '\0';
    return 0;
}

#define FIELDS 4        /* collective, dtype or *, up-to bytes or max, view */
#define FIELD_BYTES 32  /* a field's longest, its NUL included */

static int is_blank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Splits a line at blanks into whole fields: *n of them (FIELDS + 1: more than FIELDS). A field
 * longer than FIELD_BYTES - 1 is an error, not cut in two (sscanf's %31s read
 * "0000000000000000000000000000001buffer" as size 1 and view buffer). 0, or -1 with why. */
static int split_fields(const char *buf, int line, char field[FIELDS][FIELD_BYTES], int *n, char *why,
                        size_t why_len) {
    *n = 0;
    for (const char *p = buf; *p != '\0' && *n <= FIELDS;) {
        if (is_blank(*p)) {
            p++;
            continue;
        }
        size_t len = 0;
        while (p[len] != '\0' && !is_blank(p[len])) len++;
        if (len >= FIELD_BYTES)
            return fail(why, why_len, line, "field %d ('%.*s...', %zu bytes) is longer than %d bytes", *n + 1,
                        FIELD_BYTES - 1, p, len, FIELD_BYTES - 1);
        if (*n < FIELDS) {
            memcpy(field[*n], p, len);
            field[*n][len] = '\0';
        }
        ++*n;
        p += len;
    }
    return 0;
}

/* A byte count in the one grammar (core/base/number.h), from 1 to SIZE_MAX - 1 (SIZE_MAX is
 * what "max" means). 0, or -1. */
static int parse_bytes(const char *word, size_t *out) {
    uint64_t v;
    if (hn_parse_uint(word, 1, SIZE_MAX - 1, &v) != HN_NUMBER_OK) return -1;
    *out = (size_t)v;
    return 0;
}

/* One line's fields: collective *ci, dtype *d (-1: "*"), up-to bytes *upto, view *vi. 1 for a
 * range, 0 for a blank line, -1 with why. */
static int parse_fields(const char *buf, int line, int *ci, int *d, size_t *upto, int *vi, char *why, size_t why_len) {
    char field[FIELDS][FIELD_BYTES], names[64];
    int fields;
    if (split_fields(buf, line, field, &fields, why, why_len) != 0) return -1;
    if (fields == 0) return 0; /* blank or comment */
    if (fields != FIELDS)
        return fail(why, why_len, line,
                    "want %d fields (collective, dtype or *, up-to bytes or max, view); it has %s%d", FIELDS,
                    fields > FIELDS ? "more than " : "", fields > FIELDS ? FIELDS : fields);
    const char *coll = field[0], *dtype = field[1], *size = field[2], *view = field[3];
    if ((*ci = lookup(k_colls, HN_NUM_TUNED, coll)) < 0)
        return fail(why, why_len, line, "collective '%s' is not %s", coll,
                    one_of(k_colls, HN_NUM_TUNED, names, sizeof names));
    if ((*vi = lookup(k_views, HN_NUM_VIEWS, view)) < 0)
        return fail(why, why_len, line, "view '%s' is not %s", view,
                    one_of(k_views, HN_NUM_VIEWS, names, sizeof names));
    if (hidet_nccl__view_is_own(*vi) && *ci != HN_TUNED_ALL_REDUCE)
        return fail(why, why_len, line, "view '%s' (the library's own kernels) is for all_reduce only, not %s", view,
                    coll);
    *upto = SIZE_MAX;
    if (strcmp(size, "max") != 0 && parse_bytes(size, upto) != 0)
        return fail(why, why_len, line, "size '%s' is not a byte count from 1 to %zu in decimal digits (or max)", size,
                    (size_t)(SIZE_MAX - 1));
    *d = -1;
    if (strcmp(dtype, "*") != 0 && (*d = dtype_index(dtype)) < 0)
        return fail(why, why_len, line, "dtype '%s' is not one of the library's", dtype);
    return 1;
}

int hidet_nccl__tune_parse(const char *text, size_t len, hn_tune_t *out, char *why, size_t why_len) {
    hn_tune_t *t = calloc(1, sizeof *t);
    hn_tune_cell_t(*any)[1] = calloc(HN_NUM_TUNED, sizeof *any); /* the "*" lines per collective */
    unsigned char given[HN_NUM_TUNED][HIDET_NCCL_NUM_DTYPES] = {{0}};
    int rc = 0, line = 0;
    if (t == NULL || any == NULL) {
        snprintf(why, why_len, "out of memory");
        rc = -1;
    }
    for (size_t pos = 0; rc == 0 && pos < len;) {
        char buf[LINE_BYTES];
        int ci = 0, d = -1, vi = 0;
        size_t upto = 0;
        rc = next_line(text, len, &pos, ++line, buf, why, why_len);
        int got = rc == 0 ? parse_fields(buf, line, &ci, &d, &upto, &vi, why, why_len) : -1;
        if (got < 0) rc = -1;
        if (got <= 0) continue;
        if (d >= 0) given[ci][d] = 1;
        rc = add_range(d < 0 ? &any[ci][0] : &t->cell[ci][d], upto, vi, line, why, why_len);
    }
    if (rc == 0) {
        for (int c = 0; c < HN_NUM_TUNED; c++)
            for (int dt = 0; dt < HIDET_NCCL_NUM_DTYPES; dt++)
                if (!given[c][dt]) t->cell[c][dt] = any[c][0];
        t->crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)text, (uInt)len);
        *out = *t;
    }
    free(any);
    free(t);
    return rc;
}

#define TUNE_FILE_BYTES (1 << 20) /* a table file's largest */

static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

/* Whether the opened file may be trusted as the table: a regular file, owned by this user or
 * root, that no one else can write (whoever can write it picks how this process's collectives
 * run), of at most 1 MiB. 0, or -1 with why. */
static int check_file(const struct stat *st, char *why, size_t why_len) {
    uid_t me = geteuid();
    if (!S_ISREG(st->st_mode))
        snprintf(why, why_len, "%s, not a regular file", file_kind(st->st_mode));
    else if (st->st_uid != me && st->st_uid != 0)
        snprintf(why, why_len, "owned by uid %u, neither this user (uid %u) nor root", (unsigned)st->st_uid,
                 (unsigned)me);
    else if (st->st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, why_len, "writable by %s (mode %04o); chmod go-w it",
                 (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 07777));
    else if (st->st_size > TUNE_FILE_BYTES)
        snprintf(why, why_len, "%lld bytes, more than the %d (1 MiB) a table may have", (long long)st->st_size,
                 TUNE_FILE_BYTES);
    else
        return 0;
    return -1;
}

/* All of a checked file (size bytes by fstat) into a malloc'ed *text; a file that changed size
 * while read is refused rather than parsed torn. 0, or -1 with why. */
static int read_file(int fd, size_t size, char **text, char *why, size_t why_len) {
    char *buf = malloc(size + 1); /* one byte more: a file that grew reads past size */
    size_t got = 0;
    while (buf != NULL && got <= size) {
        ssize_t r = read(fd, buf + got, size + 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(why, why_len, "cannot read it: %s", strerror(errno));
            free(buf);
            return -1;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (buf == NULL) snprintf(why, why_len, "out of memory reading %zu bytes", size);
    else if (got != size)
        snprintf(why, why_len, "it changed size while read (%zu bytes read, %zu by fstat)", got, size);
    else {
        *text = buf;
        return 0;
    }
    free(buf);
    return -1;
}

int hidet_nccl__tune_load(const char *path, hn_tune_t *t, char *why, size_t why_len) {
    /* O_NONBLOCK: a FIFO (or a device) is opened without waiting for a writer, then refused by
     * fstat; open() without it blocked forever. Symbolic links are followed: a link to one's
     * own table is a normal setup, and what is checked is the file reached, by its descriptor. */
    char reason[256];
    char *text = NULL;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    int rc = -1;
    if (fd < 0) snprintf(reason, sizeof reason, "cannot open it: %s", strerror(errno));
    else if (fstat(fd, &st) != 0) snprintf(reason, sizeof reason, "cannot fstat it: %s", strerror(errno));
    else if (check_file(&st, reason, sizeof reason) == 0 && read_file(fd, (size_t)st.st_size, &text, reason,
                                                                       sizeof reason) == 0)
        rc = hidet_nccl__tune_parse(text, (size_t)st.st_size, t, reason, sizeof reason);
    if (fd >= 0) close(fd);
    free(text);
    if (rc != 0) snprintf(why, why_len, "%s: %s", path, reason);
    return rc;
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static hn_tune_t g_table;
static char g_error[600];

static void load_once(void) {
    const char *path = hidet_nccl__setting_str(HN_SETTING_TUNE_FILE);
    char why[sizeof g_error];
    if (path == NULL) {
        if (hidet_nccl__tune_parse(k_default, sizeof k_default - 1, &g_table, why, sizeof why) != 0)
            snprintf(g_error, sizeof g_error, "the built-in tuning table: %s", why);
    } else if (hidet_nccl__tune_load(path, &g_table, why, sizeof why) != 0) {
        snprintf(g_error, sizeof g_error, "HIDET_NCCL_TUNE_FILE %s", why);
    }
}

hidet_nccl_status_t hidet_nccl__tune_get(const hn_tune_t **t) {
    pthread_once(&g_once, load_once);
    if (g_error[0] != '\0') return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", g_error);
    *t = &g_table;
    return HIDET_NCCL_SUCCESS;
}

/* The crossover table for collectives on library memory: its text format, the built-in
 * table, and the process's table (HIDET_NCCL_TUNE_FILE or built in).
 *
 *   # comment
 *   all_reduce  float32  1048576  plain     <collective> <dtype or *> <up to bytes, or max> <view>
 *   all_reduce  float32  max      buffer
 *
 * Per collective and dtype the sizes ascend; a line for a dtype overrides the collective's
 * "*" lines for it; sizes past the last range run plain. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error_int.h"
#include "core/tune_table_int.h"

static const char *const k_colls[HN_NUM_TUNED] = {"all_reduce", "all_gather", "reduce_scatter"};
static const char *const k_views[HN_NUM_VIEWS] = {"plain", "buffer", "window"};

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

static int fail(char *why, size_t why_len, int line, const char *fmt, const char *arg) {
    char what[160];
    snprintf(what, sizeof what, fmt, arg);
    snprintf(why, why_len, "line %d: %s", line, what);
    return -1;
}

static int lookup(const char *const *names, int n, const char *word) {
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], word) == 0) return i;
    return -1;
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
        return fail(why, why_len, line, "more than %s ranges for one collective and dtype", "16");
    if (c->n > 0 && upto <= c->upto[c->n - 1])
        return fail(why, why_len, line, "the size is not above the previous line's for this collective and dtype%s",
                    "");
    c->upto[c->n] = upto;
    c->view[c->n] = (unsigned char)view;
    c->n++;
    return 0;
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
    size_t pos = 0;
    while (rc == 0 && pos < len) {
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + (nl != NULL);
        if (++line > HN_TUNE_LINES) {
            rc = fail(why, why_len, line, "more than %s lines", "1024");
            break;
        }
        char buf[256];
        if (n >= sizeof buf) {
            rc = fail(why, why_len, line, "longer than %s bytes", "255");
            break;
        }
        memcpy(buf, start, n);
        buf[n] = '\0';
        if (memchr(buf, '\0', n) != NULL) {
            rc = fail(why, why_len, line, "a NUL byte%s", "");
            break;
        }
        char *hash = strchr(buf, '#');
        if (hash != NULL) *hash = '\0';
        char coll[32], dtype[32], size[32], view[32], extra[2];
        int fields = sscanf(buf, "%31s %31s %31s %31s %1s", coll, dtype, size, view, extra);
        if (fields <= 0) continue; /* blank or comment */
        if (fields != 4) {
            rc = fail(why, why_len, line, "want 4 fields (collective, dtype or *, up-to bytes or max, view)%s", "");
            break;
        }
        int ci = lookup(k_colls, HN_NUM_TUNED, coll);
        if (ci < 0) {
            rc = fail(why, why_len, line, "collective '%s' is not all_reduce, all_gather or reduce_scatter", coll);
            break;
        }
        int vi = lookup(k_views, HN_NUM_VIEWS, view);
        if (vi < 0) {
            rc = fail(why, why_len, line, "view '%s' is not plain, buffer or window", view);
            break;
        }
        size_t upto = (size_t)-1;
        if (strcmp(size, "max") != 0) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(size, &end, 10);
            if (size[0] < '0' || size[0] > '9' || *end != '\0' || errno != 0 || v == 0 || v >= (size_t)-1) {
                rc = fail(why, why_len, line, "size '%s' is not a byte count from 1 (or max)", size);
                break;
            }
            upto = (size_t)v;
        }
        hn_tune_cell_t *cell;
        if (strcmp(dtype, "*") == 0) {
            cell = &any[ci][0];
        } else {
            int d = dtype_index(dtype);
            if (d < 0) {
                rc = fail(why, why_len, line, "dtype '%s' is not one of the library's", dtype);
                break;
            }
            cell = &t->cell[ci][d];
            given[ci][d] = 1;
        }
        rc = add_range(cell, upto, vi, line, why, why_len);
    }
    if (rc == 0) {
        for (int c = 0; c < HN_NUM_TUNED; c++)
            for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++)
                if (!given[c][d]) t->cell[c][d] = any[c][0];
        t->crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)text, (uInt)len);
        *out = *t;
    }
    free(any);
    free(t);
    return rc;
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static hn_tune_t g_table;
static char g_error[600];

static void load_once(void) {
    const char *path = hidet_nccl__setting_str(HN_SETTING_TUNE_FILE);
    char why[256];
    if (path == NULL) {
        if (hidet_nccl__tune_parse(k_default, sizeof k_default - 1, &g_table, why, sizeof why) != 0)
            snprintf(g_error, sizeof g_error, "the built-in tuning table: %s", why);
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
        snprintf(g_error, sizeof g_error, "HIDET_NCCL_TUNE_FILE %s: %s", path,
                 fd < 0 ? strerror(errno) : "not a regular file of at most 1 MiB");
        if (fd >= 0) close(fd);
        return;
    }
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t got = text ? read(fd, text, (size_t)st.st_size) : -1;
    close(fd);
    if (got != (ssize_t)st.st_size)
        snprintf(g_error, sizeof g_error, "HIDET_NCCL_TUNE_FILE %s: cannot read it", path);
    else if (hidet_nccl__tune_parse(text, (size_t)got, &g_table, why, sizeof why) != 0)
        snprintf(g_error, sizeof g_error, "HIDET_NCCL_TUNE_FILE %s: %s", path, why);
    free(text);
}

hidet_nccl_status_t hidet_nccl__tune_get(const hn_tune_t **t) {
    pthread_once(&g_once, load_once);
    if (g_error[0] != '\0') return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", g_error);
    *t = &g_table;
    return HIDET_NCCL_SUCCESS;
}

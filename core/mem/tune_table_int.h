/* Internal: the crossover table that picks, per collective, dtype and size, which way NCCL
 * runs a collective on library memory (core/mem/tune_table.c; format in docs/buffers.md). */
#ifndef HIDET_NCCL_CORE_MEM_TUNE_TABLE_INT_H_
#define HIDET_NCCL_CORE_MEM_TUNE_TABLE_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "hidet_nccl/hidet_nccl.h"

/* The ways a collective runs on library memory (views: NCCL's plain, registered buffer and
 * window; the library's own one-shot and two-shot all_reduce kernels), and the collectives the
 * table tunes: one list each, with the names the file format and the messages use. */
#define HN_VIEWS(X) X(PLAIN, "plain") X(BUFFER, "buffer") X(WINDOW, "window") X(OWN1, "own1") X(OWN2, "own2")
#define HN_TUNED(X) X(ALL_REDUCE, "all_reduce") X(ALL_GATHER, "all_gather") X(REDUCE_SCATTER, "reduce_scatter")

#define HN_VIEW_ENUM(id, name) HN_VIEW_##id,
#define HN_TUNED_ENUM(id, name) HN_TUNED_##id,
typedef enum { HN_VIEWS(HN_VIEW_ENUM) HN_NUM_VIEWS } hn_view_t;
typedef enum { HN_TUNED(HN_TUNED_ENUM) HN_NUM_TUNED } hn_tuned_t;
/* NCCL's views are those before the own kernels'. */
#define HN_NUM_NCCL_VIEWS HN_VIEW_OWN1
static inline int hidet_nccl__view_is_own(int v) { return v == HN_VIEW_OWN1 || v == HN_VIEW_OWN2; }

#define HN_TUNE_RANGES 16  /* size ranges per collective and dtype */
#define HN_TUNE_LINES 1024 /* lines a file may have */

typedef struct {
    int n;                       /* ranges; 0: always plain */
    size_t upto[HN_TUNE_RANGES]; /* ascending; a size up to upto[i] bytes takes view[i] */
    unsigned char view[HN_TUNE_RANGES];
} hn_tune_cell_t;

typedef struct {
    hn_tune_cell_t cell[HN_NUM_TUNED][HIDET_NCCL_NUM_DTYPES];
    uint32_t crc; /* of the text it was read from: equal tables, equal crc */
} hn_tune_t;

/* Reads a table from text (len bytes, not NUL-terminated); 0, or -1 with why (the line
 * number and what is wrong) and t untouched. */
int hidet_nccl__tune_parse(const char *text, size_t len, hn_tune_t *t, char *why, size_t why_len);
/* Reads the table file at path: a regular file (a FIFO, a directory or a device is refused
 * without waiting on it; a symbolic link is followed to what it names), owned by this user or
 * root, not writable by group or others, at most 1 MiB, then parsed. 0, or -1 with why
 * ("<path>: <what is wrong>") and t untouched. */
int hidet_nccl__tune_load(const char *path, hn_tune_t *t, char *why, size_t why_len);
/* The table built into the library (measured on 2 x H200, docs/buffers.md). */
const char *hidet_nccl__tune_default_text(void);
/* The view for `bytes` (the collective's size as nccl-tests counts it: all_reduce the
 * buffer, all_gather the output, reduce_scatter the input). */
static inline hn_view_t hidet_nccl__tune_pick(const hn_tune_t *t, hn_tuned_t coll, hidet_nccl_dtype_t dtype,
                                              size_t bytes) {
    const hn_tune_cell_t *c = &t->cell[coll][dtype];
    for (int i = 0; i < c->n; i++)
        if (bytes <= c->upto[i]) return (hn_view_t)c->view[i];
    return HN_VIEW_PLAIN;
}
/* The process's table: HIDET_NCCL_TUNE_FILE's (read once), else the built-in one; an
 * unreadable or malformed file is an error naming it. */
hidet_nccl_status_t hidet_nccl__tune_get(const hn_tune_t **t);
/* Whether any collective, dtype or size of t takes view v (AUTO makes a sibling only for a
 * view its table takes). */
int hidet_nccl__tune_uses(const hn_tune_t *t, hn_view_t v);
/* "plain", "buffer", "window", "own1", "own2"; "?" for no view. */
const char *hidet_nccl__view_name(hn_view_t v);
/* "all_reduce", "all_gather", "reduce_scatter"; "?" for no collective of the table. */

#endif

/* Reading flight recorder dumps (tools/trace/trace_read.c) and saying where the ranks diverged
 * (tools/trace/: trace_group.c groups them, trace_judge.c judges, trace_report.c prints), for
 * hidet-nccl-trace and its fuzz target. A dump is untrusted input: every line is parsed by
 * jansson, every field checked, every size bounded. */
#ifndef HIDET_NCCL_TOOLS_TRACE_READ_H_
#define HIDET_NCCL_TOOLS_TRACE_READ_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TR_MAX_LINE (64 * 1024)     /* bytes in one line */
#define TR_MAX_COMMS 4096           /* communicators in one dump */
#define TR_MAX_OPS (1u << 22)       /* operations in one dump */

typedef struct {
    uint64_t seq;
    char coll[24], dtype[16], op[16], state[16], tag[48];
    uint64_t count;
    int peer;
} tr_op_t;

typedef struct {
    int id;            /* the communicator id in that process */
    char key[9];       /* the same on every rank; "00000000": unknown (borrowed) */
    int rank, nranks;  /* -1: unknown */
    char state[12];    /* live, failed, dead, pending */
    char why[160];
    char from[9];      /* the key of the communicator it was made from ("" : not said), */
    char how[16];      /* and how ("recover") */
    uint64_t next_seq;
    tr_op_t *ops;      /* by seq, increasing */
    size_t nops, cap;
} tr_comm_t;

typedef struct {
    char name[256];    /* the file */
    char host[64], reason[128];
    char recorder[160]; /* the header's: "on", "off (why)", or "" (not said) */
    long pid;
    int rank;
    tr_comm_t *comms;
    size_t ncomms;
} tr_dump_t;

typedef struct {
    tr_dump_t *dumps;
    size_t ndumps;
} tr_set_t;

/* Reads one dump from f (name for messages) into set. 0, or -1 with err set and nothing of
 * the file kept. */
int tr_read_file(tr_set_t *set, FILE *f, const char *name, char *err, size_t err_size);
/* Reads the dumps path names: a directory's hidet-nccl-trace.*.jsonl files in name order, or
 * the one file. Each file is opened without following a symbolic link or waiting (a FIFO is
 * refused, not waited on), must be a regular file of at most 1 GiB, and is read by
 * tr_read_file; a refused one is said on err ("hidet-nccl-trace: <why> (skipped)") and counted
 * in *refused. Returns the dump files found (1 for a file; a directory with none is said on
 * err), or -1 if the directory cannot be read (said on err). */
long tr_read_path(tr_set_t *set, const char *path, FILE *err, int *refused);
void tr_free(tr_set_t *set);

/* ------------------------------------------------- choosing dumps (--ranks LIST) */

#define TR_MAX_RANK (1 << 30) /* the largest rank a dump may hold */

typedef struct {
    int lo, hi; /* lo <= hi */
} tr_range_t;

/* The ranks of a list like "0,2-5": sorted ranges, none touching another. */
typedef struct {
    tr_range_t *r;
    size_t n;
} tr_ranks_t;

/* Parses list strictly: items of digits (a rank, 0 .. TR_MAX_RANK) or two ranks joined by '-'
 * (a range, not backwards), separated by single commas; nothing else (no sign, space or empty
 * item). 0, or -1 with why in err and nothing kept. Free with tr_ranks_free. */
int tr_parse_ranks(const char *list, tr_ranks_t *out, char *err, size_t err_size);
int tr_ranks_has(const tr_ranks_t *ranks, int rank);
void tr_ranks_free(tr_ranks_t *ranks);
/* Keeps in set only the dumps whose rank (the header's: the launcher's rank, the one in the
 * file name) is listed; a dump that has no rank (-1: a pid<pid> file) is left out, said on
 * err. */
void tr_keep_ranks(tr_set_t *set, const tr_ranks_t *ranks, FILE *err);

/* --------------------------------------------- judging (one analysis, two printers) */

typedef struct tr_analysis tr_analysis_t;

/* Judges set: the dumps of each communicator (one key; key 00000000 by id), seq by seq, and the
 * verdict over all of them, the most telling first: ranks that disagree about an operation, a
 * rank behind the others, a rank with no dump, work not completed. comm: only the communicator
 * of that key (NULL: all). listed: the ranks --ranks chose (NULL: none chosen); set must hold
 * only theirs (tr_keep_ranks), a listed rank with no dump is a missing dump, and a
 * communicator's ranks that were not chosen are not. set and listed must outlive the result.
 * NULL when out of memory. */
tr_analysis_t *tr_analyze(const tr_set_t *set, const tr_ranks_t *listed, const char *comm);
/* 1 if the analysis found something wrong (its verdict is not "consistent"), else 0. */
int tr_analysis_bad(const tr_analysis_t *a);
/* The text report: the verdict (one line), then the detail; every line through tr_say. */
void tr_print_text(const tr_analysis_t *a, FILE *out);
/* The same as one JSON document (docs/flight_recorder.md, "--json"), ASCII only; files_skipped:
 * the dump files refused while reading. 0, or -1 when out of memory (nothing written). */
int tr_print_json(const tr_analysis_t *a, int files_skipped, FILE *out);
void tr_analysis_free(tr_analysis_t *a);

/* tr_analyze (everything), then tr_print_text: 1 if it found something wrong (ranks disagree,
 * a rank behind, a rank missing, work not completed), else 0. */
int tr_report(const tr_set_t *set, FILE *out);

/* Prints one line to out: the formatted text with every control character, Unicode control
 * (C1, bidirectional overrides) and byte that is not UTF-8 escaped (\xNN, \uNNNN) and a
 * backslash doubled, then a newline. What the tool prints passes here: dumps and file names
 * are untrusted, and a terminal acts on what they may hold. */
void tr_say(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A JSON string (jansson's json_t) of s, which may be any bytes (a file name, a field cut at
 * its length): a byte that is not UTF-8 becomes the text \xNN. NULL when out of memory. */
struct json_t;
struct json_t *tr_json_string(const char *s);

#endif

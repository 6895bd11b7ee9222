/* Reading flight recorder dumps (tools/trace_read.c) and saying where the ranks diverged
 * (tools/trace_report.c), for hidet-nccl-trace and its fuzz target. A dump is untrusted
 * input: every line is parsed by jansson, every field checked, every size bounded. */
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
    uint64_t next_seq;
    tr_op_t *ops;      /* by seq, increasing */
    size_t nops, cap;
} tr_comm_t;

typedef struct {
    char name[256];    /* the file */
    char host[64], reason[128];
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
void tr_free(tr_set_t *set);

/* Writes the verdict (one line), then the detail, to out. 1 if it found something wrong
 * (ranks disagree, a rank behind, a rank missing, work not completed), else 0. */
int tr_report(const tr_set_t *set, FILE *out);

#endif

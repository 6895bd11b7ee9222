/* Internal to hidet-nccl-trace: what the judge (tools/trace/trace_judge.c, tr_analyze) found,
 * for the printers (trace_report.c). */
#ifndef HIDET_NCCL_TOOLS_TRACE_JUDGE_INT_H_
#define HIDET_NCCL_TOOLS_TRACE_JUDGE_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "tools/trace/trace_group_int.h"
#include "tools/trace/trace_read.h"

enum { TR_V_NONE, TR_V_INCOMPLETE, TR_V_MISSING, TR_V_BEHIND, TR_V_DISAGREE }; /* worse is larger */

/* What the judge found on one communicator (or, g NULL, of the ranks --ranks chose). */
typedef struct {
    int kind;
    const tr_group_t *g;
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
    uint64_t more;         /* missing: ranks past MAX_LISTED (trace_judge.c), counted, not in list */
} tr_verdict_t;

struct tr_analysis {
    const tr_set_t *set;
    const tr_ranks_t *listed; /* --ranks, or NULL */
    const char *comm;         /* --comm, or NULL */
    tr_group_t *g;
    size_t ng;
    tr_verdict_t *v;     /* one per group */
    tr_verdict_t absent; /* ranks --ranks chose that left no dump: TR_V_MISSING, else TR_V_NONE */
    tr_verdict_t empty;  /* no communicator */
    const tr_verdict_t *worst;
};

#endif

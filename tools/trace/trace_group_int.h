/* Internal to hidet-nccl-trace: the ranks' dumps put together (tools/trace/trace_group.c), one
 * group per communicator, for the judge (trace_judge.c) and the printers (trace_report.c). */
#ifndef HIDET_NCCL_TOOLS_TRACE_GROUP_INT_H_
#define HIDET_NCCL_TOOLS_TRACE_GROUP_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "tools/trace/trace_read.h"

/* One rank's communicator: the dump it came in, and the communicator as that dump says it. */
typedef struct {
    const tr_dump_t *dump;
    const tr_comm_t *comm;
} tr_member_t;

typedef struct {
    char key[9];
    int id; /* for key 00000000 (unknown): the id, the best guess of one communicator */
    int nranks;
    tr_member_t *m;
    size_t n;
} tr_group_t;

/* The communicators of every dump (only those keyed comm, if given), grouped by key (unknown
 * keys by id), in the order their first members were read: one sort, so that many dumps of
 * many communicators stay fast. *ngroups groups (each its own malloc'ed array of members);
 * NULL and 0 when out of memory (a group whose members find no memory is left out). */
tr_group_t *tr_group_all(const tr_set_t *set, const char *comm, size_t *ngroups);

/* The operation of c at seq (c's operations are by seq, increasing), or NULL. */
const tr_op_t *tr_at_seq(const tr_comm_t *c, uint64_t seq);
/* Whether a collective has a root (broadcast, reduce, gather, scatter), is a send or a recv. */
int tr_rooted(const char *coll);
int tr_p2p(const char *coll);
/* The member's rank: its communicator's, else its dump's (the launcher's). */
int tr_rank_of(const tr_member_t *m);

#endif

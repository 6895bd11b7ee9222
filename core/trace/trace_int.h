/* Internal: the flight recorder (core/trace/trace_ring.c: each communicator's ring of its last
 * operations; core/trace/trace_dump.c: the JSON-lines dump; core/trace/trace_signal.c: SIGUSR1). */
#ifndef HIDET_NCCL_CORE_TRACE_TRACE_INT_H_
#define HIDET_NCCL_CORE_TRACE_TRACE_INT_H_

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#include "hidet_nccl/hidet_nccl.h"

typedef struct hn_trace hn_trace_t;

/* Why the recorder is off, in words, or NULL when it records: where HIDET_NCCL_TRACE_ENTRIES
 * is set, as it says (0: off); where it is not, only with a trace directory set (a dump has
 * somewhere to go: a deadline, an abort, SIGUSR1, hidet_nccl_trace_dump(NULL)), so that a
 * job nobody will read a dump of pays nothing per call (docs/flight_recorder.md). */
const char *hidet_nccl__trace_off_why(void);
/* A new ring for a communicator named key (see the key functions), with
 * HIDET_NCCL_TRACE_ENTRIES entries; NULL when the recorder is off (trace_off_why, said at
 * INFO) or memory is short (a warning says so: the communicator works, unrecorded). With
 * HIDET_NCCL_TRACE_COMPLETION=1 each entry gets a CUDA event (made here, once). */
hn_trace_t *hidet_nccl__trace_new(uint32_t key);
void hidet_nccl__trace_free(hn_trace_t *t);
/* This rank and the number of ranks, for the dump (-1: unknown). */
void hidet_nccl__trace_set_place(hn_trace_t *t, int rank, int nranks);
/* The communicator t's was made from (its key) and how (a static word: "recover"), for the
 * dump; NULL t: nothing. */
void hidet_nccl__trace_set_origin(hn_trace_t *t, uint32_t from_key, const char *how);

/* Keys: the same on every rank of one communicator. From the unique id of an init; from the
 * parent's key, the ordinal of the child and how it was made (split color, shrink). */
uint32_t hidet_nccl__trace_key_id(const void *id, size_t bytes, int nranks);
uint32_t hidet_nccl__trace_key_child(uint32_t parent, uint32_t ordinal, const char *how, int color);

/* hidet_nccl__trace_record, what a collective writes of one operation: core/trace/trace_record_int.h. */

/* Writes the ring's lines (one for the communicator, one per entry, oldest first) to f;
 * state and why: what the registry says of the id. */
void hidet_nccl__trace_write(FILE *f, int id, const hn_trace_t *t, const char *state, const char *why);

/* The rings a dump writes come from the registry, which gives its walk here when it takes its
 * first communicator (the recorder sits below the communicators and never calls up): each
 * calls fn for every ring under the registry's lock, with what the registry says of the id
 * (state "live", "failed" or "dead"; why, may be ""). Until then a dump has no ring. */
typedef void (*hn_trace_visit_fn)(void *arg, int id, const hn_trace_t *trace, const char *state, const char *why);
typedef void (*hn_trace_each_fn)(hn_trace_visit_fn fn, void *arg);
void hidet_nccl__trace_set_source(hn_trace_each_fn each);

/* Writes this process's dump (every ring) into dir (NULL: HIDET_NCCL_TRACE_DIR) as
 * hidet-nccl-trace.<rank>.jsonl, atomically; reason goes in the header. *path (may be NULL)
 * gets the file written. Errors: no directory set, not a directory, a symlink, not
 * writable, a write that fails (a full disk). */
hidet_nccl_status_t hidet_nccl__trace_dump(const char *dir, const char *reason, char *path, size_t path_size);
/* After a failure (a deadline, an abort): a dump when a trace directory is set; its own
 * failure is a warning, the caller's message is kept. */
void hidet_nccl__trace_dump_on_failure(const char *reason);
/* With a trace directory set, SIGUSR1 makes a dump (once per process: a handler that wakes a
 * dump thread; a handler the program had is still called). */
void hidet_nccl__trace_signal_install(void);

#endif

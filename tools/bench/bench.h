/* hidet-nccl-bench in parts, lowest first: each uses only the parts before it (no circle:
 * tests/layers checks it).
 *   bench_common.c   the options' values, the clock and the ranks' meeting points on the
 *                    library's communicator (every part uses it)
 *   bench_calls.c    the collectives, library and raw, timed
 *   bench_options.c  the command line, into the options
 *   bench_table.c    every collective in nccl-tests' table
 *   bench_modes.c    library memory against raw NCCL's modes
 *   bench_init.c     the time to a ready communicator
 *   hidet_nccl_bench.c  main and what only main uses: the communicator, the header
 * No MPI: the ranks meet through hidet_nccl_init and, after it, through the library's own
 * communicator. */
#ifndef HIDET_NCCL_TOOLS_BENCH_H_
#define HIDET_NCCL_TOOLS_BENCH_H_

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tools/support/raw_nccl.h"

#define TOOL_NAME "hidet-nccl-bench"
#include "tools/support/tool_checks.h" /* DIE, HN, CU */

/* The collectives, in the order -c all runs them. */
typedef enum {
    COLL_ALL_REDUCE,
    COLL_BROADCAST,
    COLL_REDUCE,
    COLL_ALL_GATHER,
    COLL_REDUCE_SCATTER,
    COLL_ALL_TO_ALL,
    COLL_GATHER,
    COLL_SCATTER,
    COLL_SEND_RECV,
    COLL_COUNT
} coll_t;

/* Where the in-place form puts the input (nccl-tests' in-place offsets). */
typedef enum {
    IP_SAME,         /* sendbuff == recvbuff */
    IP_SEND_IN_RECV, /* sendbuff == recvbuff + rank * block (all_gather, gather) */
    IP_RECV_IN_SEND, /* recvbuff == sendbuff + rank * block (reduce_scatter, scatter) */
    IP_NONE          /* no in-place form (send/recv) */
} in_place_t;

/* What the table needs to know of a collective. blocks_send / blocks_recv: 1 when that buffer
 * holds one block per rank (then the row's count is nccl-tests' per-rank count and its size
 * count x ranks x element size); bus_factor: busbw / algbw as nccl-tests reckons it. */
typedef struct {
    const char *name, *lib_call, *raw_call;
    int reduces, rooted, blocks_send, blocks_recv, result_on_root;
    in_place_t in_place;
    const char *factor_text;
} coll_info_t;

extern const coll_info_t bench_colls[COLL_COUNT];
double bench_bus_factor(coll_t coll, int nranks);

typedef struct {
    size_t min_bytes, max_bytes;
    double factor;
    int iters, warmup, check, reps;
    hidet_nccl_dtype_t dtype;
    hidet_nccl_op_t op;
    int root;           /* -r: a rank, or -1: each rank in turn */
    int average;        /* -a: a time over ranks: 0 rank 0's, 1 the mean, 2 the least, 3 the greatest */
    int blocking;       /* -z 1: each call waited for before the next */
    int graph_launches; /* -G N: -n calls captured in a CUDA graph, replayed N times */
    unsigned colls;     /* 1 << coll_t of each collective to run */
    int all_colls;      /* -c all: a collective the dtype and op cannot do is skipped, not refused */
    int modes;          /* --modes: library memory against raw NCCL's three modes */
    const char *tune_file;
    const char *tmpdir;
    int init_times; /* --init-times */
    int aa;         /* --aa: raw NCCL in the library's columns too (the noise of a ratio) */
    const char *samples; /* --samples FILE: every timed run of both columns appended there */
    int rank, nranks;
} bench_options_t;

/* bench_common.c: the defaults; bench_options.c: the command line's values. */
extern bench_options_t opt;

/* The library's communicator and raw NCCL beside it. */
typedef struct {
    const hn_raw_nccl_t *nccl;
    ncclComm_t comm;
    int id;
    cudaStream_t stream;
    hidet_nccl_reduction_t red; /* how (-d, -o) reduces; red_why empty when it can */
    char red_why[256];
    int grouped_p2p; /* HIDET_NCCL_GROUPED_P2P=1: all_to_all, gather, scatter as grouped send/recv */
} ctx_t;

/* One call's arguments, for the library (count of dtype) and for raw NCCL (nccl_count of
 * nccl_type: what the library hands NCCL). block_bytes: one rank's block. */
typedef struct {
    coll_t coll;
    const void *send;
    void *recv;
    size_t count, nccl_count, block_bytes;
    ncclDataType_t nccl_type;
    int root;
} call_t;

/* bench_options.c: the command line; a bad one ends the run with status 2 before CUDA or NCCL
 * is touched. */
void bench_parse_options(int argc, char **argv);

/* bench_common.c: the clock, and the ranks' meeting points on the library's communicator id
 * (bench_meet_on: from then on; bench_meet_end: its device scratch freed). */
void bench_meet_on(int id);
void bench_meet_end(void);
double bench_now(void);
double bench_over_ranks(double v, hidet_nccl_op_t op); /* SUM, MIN or MAX of v over the ranks */
double bench_time_over_ranks(double seconds);          /* -a's value of a time */
void bench_barrier(void);
void bench_spread(void *bytes, size_t n); /* rank 0's n bytes (at most 4096) to every rank */
/* The bootstrap hidet_nccl_init took: "shared-file", "socket", "PMIx", or HIDET_NCCL_BOOTSTRAP's value. */
const char *bench_bootstrap_label(void);

/* bench_calls.c */
/* The NCCL type and elements per element the library moves dtype as (data movement). */
void bench_movement(hidet_nccl_dtype_t dtype, ncclDataType_t *type, size_t *mult);
/* The call of coll for count, in place or not, on the buffers send and recv (in place: recv). */
call_t bench_make_call(const ctx_t *c, coll_t coll, char *send, char *recv, size_t count, int in_place, int root);
void bench_call(const ctx_t *c, int raw, const call_t *k);
/* Seconds per call of `iters` calls (with -z each waited for; with -G in a graph), -a over ranks. */
double bench_timed(const ctx_t *c, int raw, const call_t *k, int iters);
/* Seconds per call of per_graph calls captured in one CUDA graph, replayed `launches` times. */
double bench_graph_timed(const ctx_t *c, int raw, const call_t *k, int per_graph, int launches);

/* bench_table.c: every collective of -c in nccl-tests' table, then the footer; returns the
 * number of results a check found wrong. */
int bench_tables(const ctx_t *c);

/* bench_modes.c: --modes. */
void bench_modes(const ctx_t *c);

/* bench_init.c: --init-times, `reps` runs of each path. */
void bench_init_times(const ctx_t *c, int reps);

#endif

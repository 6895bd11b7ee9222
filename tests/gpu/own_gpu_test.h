/* own_gpu_test in two files: own_gpu_test.c holds the cases (routes, the exact sweep, back-to-back
 * calls, a graph, two communicators, a peer that leaves) and main; own_gpu_check.c what they are
 * checked against: the dtypes and ops, the inputs and the host's reference, the one check. */
#ifndef HIDET_NCCL_TESTS_GPU_OWN_GPU_TEST_H_
#define HIDET_NCCL_TESTS_GPU_OWN_GPU_TEST_H_

#include <stddef.h>
#include <stdint.h>

#include "hidet_nccl/hidet_nccl.h"

#define MAX_RANKS 8
#define PERIOD ((size_t)65521)  /* inputs repeat every PERIOD elements */
#define GUARD 64                /* bytes after an output that must stay untouched */
#define POISON 0xA5             /* what the output and its guards hold before a call */
#define MAX_PRINTED 20          /* failures printed in full */

extern int g_rank, g_checks, g_wrong;
extern unsigned char *g_want; /* expected output, PERIOD elements */
/* 1 while a call the own kernels run is filled and checked: its float8 e5m2 inputs hold infinities. */
extern int g_with_inf;

/* One check: counted, and described (printf-style) when it fails, for the first MAX_PRINTED failures. */
__attribute__((format(printf, 2, 3))) void check(int ok, const char *fmt, ...);

/* ---------------------------------------------------------------- dtypes, ops */

typedef enum { K_FLOAT, K_INT32, K_UINT32, K_FP8 } kind_t;
typedef struct {
    int ebits, mbits; /* a binary float format with a hidden bit and subnormals */
} fmt_t;

typedef struct {
    hidet_nccl_dtype_t dtype;
    const char *name;
    kind_t kind;
    int lane_bytes; /* bytes of one scalar */
    int lanes;      /* scalars per element (complex: 2) */
    fmt_t fmt;      /* K_FLOAT, K_FP8: the scalar's format */
    int span;       /* K_FLOAT: inputs k / 4 with |k| <= span, so that 8 ranks' sums are exact */
    unsigned ops;   /* the ops the own kernels take, bit 1 << op */
} dtype_case_t;

#define OP_BIT(op) (1u << (op))
#define MAX_MIN (OP_BIT(HIDET_NCCL_MAX) | OP_BIT(HIDET_NCCL_MIN))
#define SUM_AVG (OP_BIT(HIDET_NCCL_SUM) | OP_BIT(HIDET_NCCL_AVG))
#define ALL_OPS (SUM_AVG | OP_BIT(HIDET_NCCL_PROD) | MAX_MIN)

/* The dtypes the own kernels take, each with the ops it takes: k_dtypes[0 .. NUM_DTYPES - 1]. */
extern const dtype_case_t k_dtypes[];
extern const size_t k_num_dtypes;
#define NUM_DTYPES k_num_dtypes
extern const char *const k_op_names[HIDET_NCCL_NUM_OPS];

const dtype_case_t *find_dtype(hidet_nccl_dtype_t dtype); /* exits when the table has none */
size_t elem_size(const dtype_case_t *d);
/* The input of (world) rank for a call (salt): count elements of d at out. */
void fill_input(const dtype_case_t *d, hidet_nccl_op_t op, uint32_t salt, int rank, size_t count, void *out);
/* Checks an output held at got + off (count elements of d, the result over ranks[0 .. n-1] of the salt's
 * inputs): exact, and the off bytes before it and GUARD bytes after it still POISON. */
void check_output(const dtype_case_t *d, hidet_nccl_op_t op, uint32_t salt, const int *ranks, int n,
                  const unsigned char *got, size_t off, size_t count, const char *what);

#endif

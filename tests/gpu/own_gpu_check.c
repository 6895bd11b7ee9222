/* What own_gpu_test checks its calls against (tests/gpu/own_gpu_test.h): the dtypes and ops the own
 * kernels take, each rank's inputs and the host's reference of their reduction, bit for bit, and the
 * one check, counted and described when it fails. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gpu/own_gpu_test.h"
#include "tools/support/reference.h"

int g_rank, g_checks, g_wrong;
unsigned char *g_want;

/* One check: counted, and described (printf-style) when it fails, for the first MAX_PRINTED failures. */
__attribute__((format(printf, 2, 3))) void check(int ok, const char *fmt, ...) {
    g_checks++;
    if (ok) return;
    if (++g_wrong <= MAX_PRINTED) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "own_gpu_test: rank %d: WRONG: ", g_rank);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    } else if (g_wrong == MAX_PRINTED + 1) {
        fprintf(stderr, "own_gpu_test: rank %d: more failures, not printed\n", g_rank);
    }
}


/* Exact sums of 8 ranks: |sum| <= 8 * span fits the precision (float32 24 bits, tfloat32 and float16 11,
 * bfloat16 8). */
const dtype_case_t k_dtypes[] = {
    {HIDET_NCCL_FLOAT32, "float32", K_FLOAT, 4, 1, {8, 23}, 1 << 20, ALL_OPS},
    {HIDET_NCCL_TFLOAT32, "tfloat32", K_FLOAT, 4, 1, {8, 23}, 256, ALL_OPS},
    {HIDET_NCCL_FLOAT16, "float16", K_FLOAT, 2, 1, {5, 10}, 256, ALL_OPS},
    {HIDET_NCCL_BFLOAT16, "bfloat16", K_FLOAT, 2, 1, {8, 7}, 32, ALL_OPS},
    {HIDET_NCCL_INT32, "int32", K_INT32, 4, 1, {0, 0}, 0, ALL_OPS},
    {HIDET_NCCL_UINT32, "uint32", K_UINT32, 4, 1, {0, 0}, 0, ALL_OPS},
    {HIDET_NCCL_FLOAT8_E4M3, "float8_e4m3", K_FP8, 1, 1, {4, 3}, 0, MAX_MIN},
    {HIDET_NCCL_FLOAT8_E5M2, "float8_e5m2", K_FP8, 1, 1, {5, 2}, 0, MAX_MIN},
    {HIDET_NCCL_COMPLEX64, "complex64", K_FLOAT, 4, 2, {8, 23}, 1 << 20, SUM_AVG},
};

const size_t k_num_dtypes = sizeof k_dtypes / sizeof k_dtypes[0];

const char *const k_op_names[HIDET_NCCL_NUM_OPS] = {"sum", "prod", "max", "min", "avg"};

const dtype_case_t *find_dtype(hidet_nccl_dtype_t dtype) {
    for (size_t i = 0; i < NUM_DTYPES; i++)
        if (k_dtypes[i].dtype == dtype) return &k_dtypes[i];
    fprintf(stderr, "own_gpu_test: no dtype %d in the table\n", (int)dtype);
    exit(1);
}

size_t elem_size(const dtype_case_t *d) { return (size_t)d->lane_bytes * (size_t)d->lanes; }

/* ---------------------------------------------------------------- host arithmetic */

static double decode(fmt_t f, uint32_t bits) {
    int bias = (1 << (f.ebits - 1)) - 1;
    uint32_t m = bits & ((1u << f.mbits) - 1), e = (bits >> f.mbits) & ((1u << f.ebits) - 1);
    if (f.ebits == 5 && f.mbits == 2 && e == 31 && m == 0) /* e5m2's infinities */
        return (bits >> 7) & 1u ? -INFINITY : INFINITY;
    double mag = e == 0 ? ldexp(m, 1 - bias - f.mbits) : ldexp(m | (1u << f.mbits), (int)e - bias - f.mbits);
    return (bits >> (f.ebits + f.mbits)) & 1u ? -mag : mag;
}

/* v rounded to format f, to nearest with ties to even (v finite, within f's range), as f's bits. */
static uint32_t encode(fmt_t f, double v) {
    int bias = (1 << (f.ebits - 1)) - 1, e;
    uint32_t sign = signbit(v) ? 1u << (f.ebits + f.mbits) : 0;
    double a = fabs(v);
    if (a == 0) return sign;
    frexp(a, &e);                                   /* the leading bit of a is 2^(e - 1) */
    int lead = e - 1 < 1 - bias ? 1 - bias : e - 1; /* subnormals: the smallest normals' place */
    uint32_t units = (uint32_t)nearbyint(ldexp(a, f.mbits - lead)); /* in ulps, ties to even */
    /* units holds the hidden bit (normals), so the exponent field is one less; a carry of the rounding
     * into the next binade, and a subnormal rounded up to the smallest normal, come out right */
    return sign | (((uint32_t)(lead + bias - 1) << f.mbits) + units);
}

/* A scalar of d as a float (exact: the scalars here fit a float). */
static float lane_value(const dtype_case_t *d, uint32_t bits) {
    if (d->lane_bytes == 4) {
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    return (float)decode(d->fmt, bits);
}

/* v (a float) rounded once to d's scalar, as bits. */
static uint32_t lane_bits(const dtype_case_t *d, float v) {
    uint32_t bits;
    if (d->lane_bytes == 4) {
        memcpy(&bits, &v, 4);
        return bits;
    }
    return encode(d->fmt, v);
}

static uint32_t mix(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* 1 while a call the own kernels run is filled and checked: its float8 e5m2 inputs hold infinities.
 * NCCL's path (above their staging) saturates an infinite max or min to the largest finite value
 * (seen on 2.28.9: 0x7b for 0x7c), so its calls get finite inputs only, as before. */
int g_with_inf;

/* Whether a float8 byte is a number other than -0 (max/min of +0 and -0 have no single winner):
 * e5m2's infinities are, for the own kernels (a max or min must keep them, not saturate them). */
static int fp8_usable(fmt_t f, uint32_t b) {
    uint32_t e = (b >> f.mbits) & ((1u << f.ebits) - 1), m = b & ((1u << f.mbits) - 1);
    if (b == 0x80) return 0;
    if (f.ebits == 4) return !(e == 15 && m == 7);  /* e4m3: S.1111.111 is NaN; no infinities */
    return e != 31 || (m == 0 && g_with_inf);       /* e5m2: NaNs out; infinities for the own kernels */
}

/* Scalar j (element j / lanes) of rank's input of a call (salt), as bits. */
static uint32_t input_lane(const dtype_case_t *d, hidet_nccl_op_t op, uint32_t salt, int rank, size_t j) {
    static const float k_factors[] = {-2.0f, -1.0f, -0.5f, 0.5f, 1.0f, 2.0f};
    uint32_t h = mix(mix(salt * 0x9e3779b9u + (uint32_t)rank) ^ ((uint32_t)j * 0x85ebca6bu + 0x68e31da4u));
    switch (d->kind) {
        case K_INT32:
        case K_UINT32: return h;
        case K_FP8: return fp8_usable(d->fmt, h & 0xffu) ? h & 0xffu : (h >> 8) & 0x3fu;
        default: break;
    }
    if (op == HIDET_NCCL_PROD) return lane_bits(d, k_factors[h % 6u]);
    int k = (int)(h % (2u * (uint32_t)d->span + 1u)) - d->span;
    return lane_bits(d, (float)k * 0.25f);
}

/* The reduction of one scalar over the ranks' inputs in[0 .. n-1] (rank order), as the own kernels
 * define it: floats accumulated in float32 and rounded once (avg: a float32 division first); max/min:
 * the winner's bits; 32-bit integers wrap, their avg is C's division of the wrapped sum. */
static uint32_t reduce_lane(const dtype_case_t *d, hidet_nccl_op_t op, const uint32_t *in, int n) {
    if (d->kind == K_INT32 || d->kind == K_UINT32) {
        int sgn = d->kind == K_INT32;
        uint32_t acc = in[0];
        for (int r = 1; r < n; r++) {
            uint32_t v = in[r];
            int greater = sgn ? (int32_t)v > (int32_t)acc : v > acc;
            int less = sgn ? (int32_t)v < (int32_t)acc : v < acc;
            if (op == HIDET_NCCL_SUM || op == HIDET_NCCL_AVG) acc += v;
            if (op == HIDET_NCCL_PROD) acc *= v;
            if ((op == HIDET_NCCL_MAX && greater) || (op == HIDET_NCCL_MIN && less)) acc = v;
        }
        if (op == HIDET_NCCL_AVG) acc = sgn ? (uint32_t)((int32_t)acc / n) : acc / (uint32_t)n;
        return acc;
    }
    float acc = lane_value(d, in[0]);
    uint32_t winner = in[0];
    for (int r = 1; r < n; r++) {
        float v = lane_value(d, in[r]);
        if (op == HIDET_NCCL_SUM || op == HIDET_NCCL_AVG) acc += v;
        if (op == HIDET_NCCL_PROD) acc *= v;
        if ((op == HIDET_NCCL_MAX && v > acc) || (op == HIDET_NCCL_MIN && v < acc)) {
            acc = v;
            winner = in[r];
        }
    }
    if (op == HIDET_NCCL_MAX || op == HIDET_NCCL_MIN) return winner;
    if (op == HIDET_NCCL_AVG) acc /= (float)n;
    return lane_bits(d, acc);
}

static void put_lane(void *p, size_t j, int bytes, uint32_t bits) {
    memcpy((unsigned char *)p + j * (size_t)bytes, &bits, (size_t)bytes); /* little-endian */
}

/* The input of (world) rank for a call (salt): count elements of d at out. */
void fill_input(const dtype_case_t *d, hidet_nccl_op_t op, uint32_t salt, int rank, size_t count, void *out) {
    size_t first = count < PERIOD ? count : PERIOD;
    for (size_t j = 0; j < first * (size_t)d->lanes; j++)
        put_lane(out, j, d->lane_bytes, input_lane(d, op, salt, rank, j));
    hn_ref_repeat(out, elem_size(d), first, count);
}

/* The first min(count, PERIOD) elements of the result over ranks[0 .. n-1] (world ranks, in the
 * communicator's order) into g_want; the rest repeats them. */
static void fill_expected(const dtype_case_t *d, hidet_nccl_op_t op, uint32_t salt, const int *ranks, int n,
                          size_t count) {
    size_t first = count < PERIOD ? count : PERIOD;
    uint32_t in[MAX_RANKS];
    for (size_t j = 0; j < first * (size_t)d->lanes; j++) {
        for (int r = 0; r < n; r++) in[r] = input_lane(d, op, salt, ranks[r], j);
        put_lane(g_want, j, d->lane_bytes, reduce_lane(d, op, in, n));
    }
}

/* The first element of got (count elements of es bytes) that differs from g_want repeated, or -1. */
static size_t first_wrong(const unsigned char *got, size_t es, size_t count) {
    for (size_t at = 0; at < count; at += PERIOD) {
        size_t m = count - at < PERIOD ? count - at : PERIOD;
        if (memcmp(got + at * es, g_want, m * es) == 0) continue;
        for (size_t k = 0; k < m; k++)
            if (memcmp(got + (at + k) * es, g_want + k * es, es) != 0) return at + k;
    }
    return (size_t)-1;
}

/* An element's bytes as a hex number into buf (little-endian: the last byte first). */
static void hex(const unsigned char *p, size_t es, char *buf) {
    char *o = buf + sprintf(buf, "0x");
    for (size_t k = es; k-- > 0;) o += sprintf(o, "%02x", p[k]);
}

/* Checks an output held at got + off (count elements of d, the result over ranks[0 .. n-1] of the salt's
 * inputs): exact, and the off bytes before it and GUARD bytes after it still POISON. */
void check_output(const dtype_case_t *d, hidet_nccl_op_t op, uint32_t salt, const int *ranks, int n,
                  const unsigned char *got, size_t off, size_t count, const char *what) {
    size_t es = elem_size(d), bytes = count * es;
    fill_expected(d, op, salt, ranks, n, count);
    size_t bad = first_wrong(got + off, es, count);
    char g[40] = "", w[40] = "";
    if (bad != (size_t)-1) {
        hex(got + off + bad * es, es, g);
        hex(g_want + (bad % PERIOD) * es, es, w);
    }
    check(bad == (size_t)-1, "%s: element %zu is %s, want %s", what, bad, g, w);
    int guards = 1;
    for (size_t k = 0; k < off; k++) guards &= got[k] == POISON;
    for (size_t k = 0; k < GUARD; k++) guards &= got[off + bytes + k] == POISON;
    check(guards, "%s: bytes next to the output were written", what);
}

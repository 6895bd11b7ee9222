#include "tools/support/reference.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

size_t hn_ref_elem_size(ncclDataType_t t) {
    switch (t) {
        case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
        case ncclFloat16: case ncclBfloat16: return 2;
        case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
        default: return 8;
    }
}

static int is_float(ncclDataType_t t) {
    return t == ncclFloat16 || t == ncclBfloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclFloat8e4m3 ||
           t == ncclFloat8e5m2;
}
static int is_signed_int(ncclDataType_t t) { return t == ncclInt8 || t == ncclInt32 || t == ncclInt64; }

/* An exact value v (normal, with few mantissa bits) in a float format of ebits/mbits. */
static uint32_t encode_small_float(double v, int ebits, int mbits) {
    if (v == 0) return 0;
    uint32_t sign = v < 0 ? 1u : 0u;
    int e;
    double f = frexp(fabs(v), &e); /* |v| = f * 2^e, f in [0.5, 1) */
    int bias = (1 << (ebits - 1)) - 1;
    uint32_t mant = (uint32_t)ldexp(2 * f - 1, mbits);
    return sign << (ebits + mbits) | (uint32_t)(e - 1 + bias) << mbits | mant;
}

static void store(ncclDataType_t t, double fv, int64_t iv, void *out, size_t i) {
    size_t sz = hn_ref_elem_size(t);
    unsigned char *p = (unsigned char *)out + i * sz;
    uint64_t bits;
    switch (t) {
        case ncclFloat32: { float f = (float)fv; memcpy(p, &f, 4); return; }
        case ncclFloat64: memcpy(p, &fv, 8); return;
        case ncclFloat16: bits = encode_small_float(fv, 5, 10); break;
        case ncclBfloat16: bits = encode_small_float(fv, 8, 7); break;
        case ncclFloat8e4m3: bits = encode_small_float(fv, 4, 3); break;
        case ncclFloat8e5m2: bits = encode_small_float(fv, 5, 2); break;
        default: bits = (uint64_t)iv; break; /* integers: two's complement, low bytes */
    }
    memcpy(p, &bits, sz); /* little-endian */
}

static ncclDataType_t nccl_type(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op) {
    hidet_nccl_reduction_t r;
    if (hidet_nccl_reduction(dtype, op, &r) != HIDET_NCCL_SUCCESS) return ncclFloat32;
    return r.nccl_dtype;
}

/* The input of rank at element i, as a small integer every type holds exactly. */
static int64_t value(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, int rank, size_t i) {
    int flip = (int)((i + 3u * (unsigned)rank) % 2u);
    if (dtype == HIDET_NCCL_BOOL) return flip;
    if (op == HIDET_NCCL_MAX || op == HIDET_NCCL_MIN) return flip ? -3 : 2; /* signedness matters */
    if (dtype == HIDET_NCCL_FLOAT8_E4M3 || dtype == HIDET_NCCL_FLOAT8_E5M2) return flip; /* few mantissa bits */
    return 1 + flip;
}

/* value() has period 2 in i: the first PERIOD elements are repeated up to n. */
#define PERIOD 2
void hn_ref_repeat(void *out, size_t elem, size_t done, size_t n) {
    unsigned char *p = out;
    while (done < n) {
        size_t m = done < n - done ? done : n - done;
        memcpy(p + done * elem, p, m * elem);
        done += m;
    }
}

void hn_ref_fill(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, int rank, size_t n, void *out) {
    ncclDataType_t t = nccl_type(dtype, op);
    size_t first = n < PERIOD ? n : PERIOD;
    for (size_t i = 0; i < first; i++) {
        int64_t v = value(dtype, op, rank, i);
        store(t, (double)v, v, out, i);
    }
    hn_ref_repeat(out, hn_ref_elem_size(t), first, n);
}

static uint64_t wrap(ncclDataType_t t, uint64_t x) {
    size_t bits = 8 * hn_ref_elem_size(t);
    return bits == 64 ? x : x & ((UINT64_C(1) << bits) - 1);
}
static int64_t as_signed(ncclDataType_t t, uint64_t x) {
    size_t bits = 8 * hn_ref_elem_size(t);
    if (bits == 64) return (int64_t)x;
    uint64_t sign = UINT64_C(1) << (bits - 1);
    return (int64_t)((x ^ sign) - sign);
}

void hn_ref_expected(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, int nranks, size_t n, void *out) {
    ncclDataType_t t = nccl_type(dtype, op);
    size_t first = n < PERIOD ? n : PERIOD;
    for (size_t i = 0; i < first; i++) {
        if (is_float(t)) {
            double acc = (double)value(dtype, op, 0, i);
            for (int r = 1; r < nranks; r++) {
                double v = (double)value(dtype, op, r, i);
                acc = op == HIDET_NCCL_PROD ? acc * v
                    : op == HIDET_NCCL_MAX  ? fmax(acc, v)
                    : op == HIDET_NCCL_MIN  ? fmin(acc, v)
                                            : acc + v;
            }
            if (op == HIDET_NCCL_AVG) acc /= nranks;
            store(t, acc, 0, out, i);
            continue;
        }
        uint64_t acc = wrap(t, (uint64_t)value(dtype, op, 0, i));
        for (int r = 1; r < nranks; r++) {
            uint64_t v = wrap(t, (uint64_t)value(dtype, op, r, i));
            int less = is_signed_int(t) ? as_signed(t, v) < as_signed(t, acc) : v < acc;
            acc = op == HIDET_NCCL_PROD ? wrap(t, acc * v)
                : op == HIDET_NCCL_MAX  ? (less ? acc : v)
                : op == HIDET_NCCL_MIN  ? (less ? v : acc)
                                        : wrap(t, acc + v);
        }
        if (op == HIDET_NCCL_AVG)
            acc = is_signed_int(t) ? (uint64_t)(as_signed(t, acc) / nranks) : acc / (uint64_t)nranks;
        store(t, 0, (int64_t)acc, out, i);
    }
    hn_ref_repeat(out, hn_ref_elem_size(t), first, n);
}

size_t hn_ref_first_difference(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, const void *a, const void *b,
                               size_t n) {
    size_t sz = hn_ref_elem_size(nccl_type(dtype, op));
    if (memcmp(a, b, n * sz) == 0) return (size_t)-1;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * sz, (const char *)b + i * sz, sz) != 0) return i;
    return (size_t)-1;
}

/* hn_ref_fill_bytes' pattern repeats every BYTE_PERIOD bytes (a prime: no block size is a
 * multiple of it), so that 4 GiB cost a few memcpy once the first period is made. */
#define BYTE_PERIOD 4093u
static unsigned char pattern_byte(int rank, size_t at) {
    uint32_t x = (uint32_t)(at % BYTE_PERIOD) * 2654435761u ^ ((uint32_t)rank + 1u) * 0x9E3779B9u;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return (unsigned char)(x >> 8);
}

void hn_ref_fill_bytes(int rank, size_t offset, size_t bytes, void *out) {
    unsigned char *p = out;
    size_t first = bytes < BYTE_PERIOD ? bytes : BYTE_PERIOD;
    for (size_t i = 0; i < first; i++) p[i] = pattern_byte(rank, offset + i);
    hn_ref_repeat(out, 1, first, bytes);
}

/* hidet data types and reduction ops: names, sizes, and the one table to NCCL. */
#include <stdint.h>
#include <string.h>

#include "core/nccl/dtype_int.h"
#include "core/base/status_int.h"
#include "core/nccl/nccl_version_int.h"

#define NCCL_2_10 21000
#define NCCL_2_24 22400
#define NO_NCCL_TYPE ((ncclDataType_t)-1)

/* One row per hidet DataType. nccl: the type NCCL reduces it as (NO_NCCL_TYPE: none);
 * mult: NCCL elements per element; ops: bit (1 << op) set for each op done exactly;
 * why: the reason the other ops are refused. */
typedef struct {
    const char *name;
    const char *short_name;
    size_t size;
    ncclDataType_t nccl;
    size_t mult;
    unsigned ops;
    int min_version;
    const char *why;
} dtype_row_t;

#define ALL_OPS 0x1Fu
#define OP_BIT(op) (1u << (op))

static const dtype_row_t k_dtypes[HIDET_NCCL_NUM_DTYPES] = {
    [HIDET_NCCL_BOOL] = {"bool", "bool", 1, ncclUint8, 1, OP_BIT(HIDET_NCCL_MAX) | OP_BIT(HIDET_NCCL_MIN), 0,
                         "bool reduces only with max (logical or) and min (logical and), done as uint8; "
                         "a sum or product of bools is not a bool"},
    [HIDET_NCCL_INT8] = {"int8", "i8", 1, ncclInt8, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_INT16] = {"int16", "i16", 2, NO_NCCL_TYPE, 1, 0, 0, "NCCL has no 16-bit integer type"},
    [HIDET_NCCL_INT32] = {"int32", "i32", 4, ncclInt32, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_INT64] = {"int64", "i64", 8, ncclInt64, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_UINT8] = {"uint8", "u8", 1, ncclUint8, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_UINT16] = {"uint16", "u16", 2, NO_NCCL_TYPE, 1, 0, 0, "NCCL has no 16-bit integer type"},
    [HIDET_NCCL_UINT32] = {"uint32", "u32", 4, ncclUint32, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_UINT64] = {"uint64", "u64", 8, ncclUint64, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_FLOAT16] = {"float16", "f16", 2, ncclFloat16, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_BFLOAT16] = {"bfloat16", "bf16", 2, ncclBfloat16, 1, ALL_OPS, NCCL_2_10, NULL},
    [HIDET_NCCL_TFLOAT32] = {"tfloat32", "tf32", 4, ncclFloat32, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_FLOAT32] = {"float32", "f32", 4, ncclFloat32, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_FLOAT64] = {"float64", "f64", 8, ncclFloat64, 1, ALL_OPS, 0, NULL},
    [HIDET_NCCL_FLOAT8_E4M3] = {"float8_e4m3", "f8e4m3", 1, ncclFloat8e4m3, 1, ALL_OPS, NCCL_2_24, NULL},
    [HIDET_NCCL_FLOAT8_E5M2] = {"float8_e5m2", "f8e5m2", 1, ncclFloat8e5m2, 1, ALL_OPS, NCCL_2_24, NULL},
    [HIDET_NCCL_COMPLEX64] = {"complex64", "c64", 8, ncclFloat32, 2, OP_BIT(HIDET_NCCL_SUM) | OP_BIT(HIDET_NCCL_AVG), 0,
                              "complex numbers are reduced exactly only by sum and avg (as float32 pairs); "
                              "complex product, max and min are not element-wise on their parts"},
    [HIDET_NCCL_COMPLEX128] = {"complex128", "c128", 16, ncclFloat64, 2, OP_BIT(HIDET_NCCL_SUM) | OP_BIT(HIDET_NCCL_AVG), 0,
                               "complex numbers are reduced exactly only by sum and avg (as float64 pairs); "
                               "complex product, max and min are not element-wise on their parts"},
};

/* Movement by element size: unsigned words of the same width, copied and never converted (NCCL
 * has no 16-bit integer type: 2-byte types as two uint8; complex128 as two uint64). */
#define MOVE(size)                                                                                         \
    {(uint8_t)((size) == 4 ? ncclUint32 : (size) >= 8 ? ncclUint64 : ncclUint8), (size) == 2 || (size) == 16 ? 2 : 1, \
     (size)}
_Alignas(64) const hn_move_t hidet_nccl__moves[HIDET_NCCL_NUM_DTYPES] = {
    [HIDET_NCCL_BOOL] = MOVE(1),     [HIDET_NCCL_INT8] = MOVE(1),         [HIDET_NCCL_INT16] = MOVE(2),
    [HIDET_NCCL_INT32] = MOVE(4),    [HIDET_NCCL_INT64] = MOVE(8),        [HIDET_NCCL_UINT8] = MOVE(1),
    [HIDET_NCCL_UINT16] = MOVE(2),   [HIDET_NCCL_UINT32] = MOVE(4),       [HIDET_NCCL_UINT64] = MOVE(8),
    [HIDET_NCCL_FLOAT16] = MOVE(2),  [HIDET_NCCL_BFLOAT16] = MOVE(2),     [HIDET_NCCL_TFLOAT32] = MOVE(4),
    [HIDET_NCCL_FLOAT32] = MOVE(4),  [HIDET_NCCL_FLOAT64] = MOVE(8),      [HIDET_NCCL_FLOAT8_E4M3] = MOVE(1),
    [HIDET_NCCL_FLOAT8_E5M2] = MOVE(1), [HIDET_NCCL_COMPLEX64] = MOVE(8), [HIDET_NCCL_COMPLEX128] = MOVE(16),
};
_Static_assert(sizeof hidet_nccl__moves <= 64, "the movement table fits one line");

static const struct {
    const char *name;
    ncclRedOp_t nccl;
    int min_version;
} k_ops[HIDET_NCCL_NUM_OPS] = {
    [HIDET_NCCL_SUM] = {"sum", ncclSum, 0},
    [HIDET_NCCL_PROD] = {"prod", ncclProd, 0},
    [HIDET_NCCL_MAX] = {"max", ncclMax, 0},
    [HIDET_NCCL_MIN] = {"min", ncclMin, 0},
    [HIDET_NCCL_AVG] = {"avg", ncclAvg, NCCL_2_10},
};

static int dtype_ok(hidet_nccl_dtype_t d) { return (int)d >= 0 && d < HIDET_NCCL_NUM_DTYPES; }
static int op_ok(hidet_nccl_op_t o) { return (int)o >= 0 && o < HIDET_NCCL_NUM_OPS; }

#define CHECK_DTYPE(d)                                                                        \
    do {                                                                                      \
        if (!dtype_ok(d))                                                                     \
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,                                 \
                           "dtype %d is not a hidet_nccl_dtype_t (0 .. %d)", (int)(d),        \
                           HIDET_NCCL_NUM_DTYPES - 1);                                        \
    } while (0)
#define CHECK_OP(o)                                                                                \
    do {                                                                                           \
        if (!op_ok(o))                                                                             \
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,                                      \
                           "op %d is not a hidet_nccl_op_t (0 .. %d)", (int)(o), HIDET_NCCL_NUM_OPS - 1); \
    } while (0)

hidet_nccl_status_t hidet_nccl_dtype_name(hidet_nccl_dtype_t dtype, const char **name) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(name);
    CHECK_DTYPE(dtype);
    *name = k_dtypes[dtype].name;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_dtype_from_name(const char *name, hidet_nccl_dtype_t *dtype) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(name);
    HN_CHECK_NOT_NULL(dtype);
    for (int i = 0; i < HIDET_NCCL_NUM_DTYPES; i++) {
        if (strcmp(name, k_dtypes[i].name) == 0 || strcmp(name, k_dtypes[i].short_name) == 0) {
            *dtype = (hidet_nccl_dtype_t)i;
            return HIDET_NCCL_SUCCESS;
        }
    }
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                   "'%.64s' is not a hidet data type (bool, int8..int64, uint8..uint64, float16, "
                   "bfloat16, tfloat32, float32, float64, float8_e4m3, float8_e5m2, complex64, complex128)",
                   name);
}

hidet_nccl_status_t hidet_nccl_dtype_size(hidet_nccl_dtype_t dtype, size_t *bytes) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bytes);
    CHECK_DTYPE(dtype);
    *bytes = k_dtypes[dtype].size;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_op_name(hidet_nccl_op_t op, const char **name) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(name);
    CHECK_OP(op);
    *name = k_ops[op].name;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_op_from_name(const char *name, hidet_nccl_op_t *op) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(name);
    HN_CHECK_NOT_NULL(op);
    for (int i = 0; i < HIDET_NCCL_NUM_OPS; i++) {
        if (strcmp(name, k_ops[i].name) == 0) {
            *op = (hidet_nccl_op_t)i;
            return HIDET_NCCL_SUCCESS;
        }
    }
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                   "'%.64s' is not a reduction op (sum, prod, max, min, avg)", name);
}

hidet_nccl_status_t hidet_nccl__reduction(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                          hidet_nccl_reduction_t *out) {
    return hidet_nccl__reduction_for("all_reduce", dtype, op, out);
}

hidet_nccl_status_t hidet_nccl__reduction_for(const char *what, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                              hidet_nccl_reduction_t *out) {
    CHECK_DTYPE(dtype);
    CHECK_OP(op);
    const dtype_row_t *row = &k_dtypes[dtype];
    if ((row->ops & OP_BIT(op)) == 0)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED, "%s of %s with op %s is not supported: %s", what,
                       row->name, k_ops[op].name, row->why);
    out->nccl_dtype = row->nccl;
    out->nccl_op = k_ops[op].nccl;
    out->count_multiplier = row->mult;
    out->min_nccl_version =
        row->min_version > k_ops[op].min_version ? row->min_version : k_ops[op].min_version;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_reduction(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                         hidet_nccl_reduction_t *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(out);
    return hidet_nccl__reduction(dtype, op, out);
}

hidet_nccl_status_t hidet_nccl__plan(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, size_t count,
                                     int nccl_version, hidet_nccl_reduction_t *red,
                                     size_t *nccl_count) {
    return hidet_nccl__plan_for("all_reduce", dtype, op, count, nccl_version, red, nccl_count);
}

HN_HOT hidet_nccl_status_t hidet_nccl__plan_for(const char *what, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, size_t count,
                                         int nccl_version, hidet_nccl_reduction_t *red, size_t *nccl_count) {
    HN_CHECK(hidet_nccl__reduction_for(what, dtype, op, red));
    if (nccl_version < red->min_nccl_version) {
        const char *feature = k_ops[op].min_version > k_dtypes[dtype].min_version ? k_ops[op].name
                                                                                   : k_dtypes[dtype].name;
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED,
                       "%s of %s with op %s needs NCCL %d.%d or newer for %s; the loaded NCCL is %d.%d.%d", what,
                       k_dtypes[dtype].name, k_ops[op].name, red->min_nccl_version / 10000,
                       red->min_nccl_version / 100 % 100, feature, hidet_nccl__version_major(nccl_version),
                       hidet_nccl__version_minor(nccl_version), hidet_nccl__version_patch(nccl_version));
    }
    size_t size = k_dtypes[dtype].size, bytes;
    if (__builtin_mul_overflow(count, size, &bytes))
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "count %zu of %s (%zu bytes each) overflows size_t", count, k_dtypes[dtype].name, size);
    *nccl_count = count * red->count_multiplier;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__movement(hidet_nccl_dtype_t dtype, ncclDataType_t *type, size_t *mult) {
    CHECK_DTYPE(dtype);
    *type = (ncclDataType_t)hidet_nccl__moves[dtype].type;
    *mult = hidet_nccl__moves[dtype].mult;
    return HIDET_NCCL_SUCCESS;
}

int hidet_nccl__sum_allowed(hidet_nccl_dtype_t dtype) {
    return dtype_ok(dtype) && (k_dtypes[dtype].ops & OP_BIT(HIDET_NCCL_SUM)) != 0;
}

const char *hidet_nccl__dtype_str(hidet_nccl_dtype_t dtype) { return dtype_ok(dtype) ? k_dtypes[dtype].name : "?"; }

HN_HOT size_t hidet_nccl__nccl_type_size(ncclDataType_t t) {
    switch (t) {
        case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
        case ncclFloat16: case ncclBfloat16: return 2;
        case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
        default: return 8;
    }
}

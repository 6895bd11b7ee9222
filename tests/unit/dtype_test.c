/* The dtype and op tables: names both ways, sizes, and the mapping to NCCL entry by entry. */
#include <stdint.h>
#include <string.h>

#include "core/nccl/dtype_int.h"
#include "core/nccl/nccl_version_int.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"

#define NONE (-1) /* refused */

/* Written from NCCL's nccl.h and the issue, independently of core/nccl/dtype.c. One row per
 * dtype: name, short name, bytes, then per op (sum, prod, max, min, avg) the NCCL type
 * (NONE: refused), and the count multiplier. */
static const struct {
    hidet_nccl_dtype_t dtype;
    const char *name, *short_name;
    size_t size;
    int nccl[HIDET_NCCL_NUM_OPS];
    size_t mult;
} k_expected[] = {
    {HIDET_NCCL_BOOL, "bool", "bool", 1, {NONE, NONE, ncclUint8, ncclUint8, NONE}, 1},
    {HIDET_NCCL_INT8, "int8", "i8", 1, {0, 0, 0, 0, 0}, 1},
    {HIDET_NCCL_INT16, "int16", "i16", 2, {NONE, NONE, NONE, NONE, NONE}, 1},
    {HIDET_NCCL_INT32, "int32", "i32", 4, {2, 2, 2, 2, 2}, 1},
    {HIDET_NCCL_INT64, "int64", "i64", 8, {4, 4, 4, 4, 4}, 1},
    {HIDET_NCCL_UINT8, "uint8", "u8", 1, {1, 1, 1, 1, 1}, 1},
    {HIDET_NCCL_UINT16, "uint16", "u16", 2, {NONE, NONE, NONE, NONE, NONE}, 1},
    {HIDET_NCCL_UINT32, "uint32", "u32", 4, {3, 3, 3, 3, 3}, 1},
    {HIDET_NCCL_UINT64, "uint64", "u64", 8, {5, 5, 5, 5, 5}, 1},
    {HIDET_NCCL_FLOAT16, "float16", "f16", 2, {6, 6, 6, 6, 6}, 1},
    {HIDET_NCCL_BFLOAT16, "bfloat16", "bf16", 2, {9, 9, 9, 9, 9}, 1},
    {HIDET_NCCL_TFLOAT32, "tfloat32", "tf32", 4, {7, 7, 7, 7, 7}, 1},
    {HIDET_NCCL_FLOAT32, "float32", "f32", 4, {7, 7, 7, 7, 7}, 1},
    {HIDET_NCCL_FLOAT64, "float64", "f64", 8, {8, 8, 8, 8, 8}, 1},
    {HIDET_NCCL_FLOAT8_E4M3, "float8_e4m3", "f8e4m3", 1, {10, 10, 10, 10, 10}, 1},
    {HIDET_NCCL_FLOAT8_E5M2, "float8_e5m2", "f8e5m2", 1, {11, 11, 11, 11, 11}, 1},
    {HIDET_NCCL_COMPLEX64, "complex64", "c64", 8, {7, NONE, NONE, NONE, 7}, 2},
    {HIDET_NCCL_COMPLEX128, "complex128", "c128", 16, {8, NONE, NONE, NONE, 8}, 2},
};
#define NROWS (sizeof k_expected / sizeof k_expected[0])

static void test_table_covers_every_dtype(void) {
    CU_ASSERT_EQUAL(NROWS, HIDET_NCCL_NUM_DTYPES);
    for (size_t i = 0; i < NROWS; i++) CU_ASSERT_EQUAL(k_expected[i].dtype, (hidet_nccl_dtype_t)i);
}

static void test_nccl_enum_values(void) {
    /* The raw numbers above are NCCL's ABI; pin them against the header. */
    CU_ASSERT_EQUAL(ncclInt8, 0);
    CU_ASSERT_EQUAL(ncclUint8, 1);
    CU_ASSERT_EQUAL(ncclInt32, 2);
    CU_ASSERT_EQUAL(ncclUint32, 3);
    CU_ASSERT_EQUAL(ncclInt64, 4);
    CU_ASSERT_EQUAL(ncclUint64, 5);
    CU_ASSERT_EQUAL(ncclFloat16, 6);
    CU_ASSERT_EQUAL(ncclFloat32, 7);
    CU_ASSERT_EQUAL(ncclFloat64, 8);
    CU_ASSERT_EQUAL(ncclBfloat16, 9);
    CU_ASSERT_EQUAL(ncclFloat8e4m3, 10);
    CU_ASSERT_EQUAL(ncclFloat8e5m2, 11);
    CU_ASSERT_EQUAL(ncclSum, 0);
    CU_ASSERT_EQUAL(ncclProd, 1);
    CU_ASSERT_EQUAL(ncclMax, 2);
    CU_ASSERT_EQUAL(ncclMin, 3);
    CU_ASSERT_EQUAL(ncclAvg, 4);
}

static void test_names_both_ways(void) {
    for (size_t i = 0; i < NROWS; i++) {
        const char *name = NULL;
        hidet_nccl_dtype_t d;
        size_t size = 0;
        HN_ASSERT_STATUS(hidet_nccl_dtype_name(k_expected[i].dtype, &name), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_STRING_EQUAL(name, k_expected[i].name);
        HN_ASSERT_STATUS(hidet_nccl_dtype_from_name(k_expected[i].name, &d), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_EQUAL(d, k_expected[i].dtype);
        HN_ASSERT_STATUS(hidet_nccl_dtype_from_name(k_expected[i].short_name, &d), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_EQUAL(d, k_expected[i].dtype);
        HN_ASSERT_STATUS(hidet_nccl_dtype_size(k_expected[i].dtype, &size), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_EQUAL(size, k_expected[i].size);
    }
    static const char *const ops[] = {"sum", "prod", "max", "min", "avg"};
    for (int i = 0; i < HIDET_NCCL_NUM_OPS; i++) {
        const char *name = NULL;
        hidet_nccl_op_t op;
        HN_ASSERT_STATUS(hidet_nccl_op_name((hidet_nccl_op_t)i, &name), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_STRING_EQUAL(name, ops[i]);
        HN_ASSERT_STATUS(hidet_nccl_op_from_name(ops[i], &op), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_EQUAL(op, (hidet_nccl_op_t)i);
    }
}

static void test_bad_names_and_values(void) {
    hidet_nccl_dtype_t d;
    hidet_nccl_op_t op;
    const char *name;
    size_t size;
    HN_ASSERT_STATUS(hidet_nccl_dtype_from_name("float33", &d), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "float33");
    HN_ASSERT_STATUS(hidet_nccl_dtype_from_name("", &d), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "''");
    HN_ASSERT_STATUS(hidet_nccl_dtype_from_name("Float32", &d), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "Float32");
    HN_ASSERT_STATUS(hidet_nccl_dtype_from_name(NULL, &d), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "name");
    HN_ASSERT_STATUS(hidet_nccl_dtype_from_name("int8", NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "dtype");
    HN_ASSERT_STATUS(hidet_nccl_op_from_name("mean", &op), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "mean");
    HN_ASSERT_STATUS(hidet_nccl_op_from_name(NULL, &op), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "name");
    HN_ASSERT_STATUS(hidet_nccl_op_from_name("sum", NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "op");
    HN_ASSERT_STATUS(hidet_nccl_dtype_name(HIDET_NCCL_NUM_DTYPES, &name), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "18");
    HN_ASSERT_STATUS(hidet_nccl_dtype_name((hidet_nccl_dtype_t)-1, &name), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "-1");
    HN_ASSERT_STATUS(hidet_nccl_dtype_name(HIDET_NCCL_INT8, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "name");
    HN_ASSERT_STATUS(hidet_nccl_dtype_size((hidet_nccl_dtype_t)1000, &size), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "1000");
    HN_ASSERT_STATUS(hidet_nccl_dtype_size(HIDET_NCCL_INT8, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bytes");
    HN_ASSERT_STATUS(hidet_nccl_op_name(HIDET_NCCL_NUM_OPS, &name), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "5");
    HN_ASSERT_STATUS(hidet_nccl_op_name((hidet_nccl_op_t)-3, &name), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "-3");
    HN_ASSERT_STATUS(hidet_nccl_op_name(HIDET_NCCL_SUM, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "name");
}

static void test_mapping_entry_by_entry(void) {
    static const char *const ops[] = {"sum", "prod", "max", "min", "avg"};
    for (size_t i = 0; i < NROWS; i++) {
        for (int op = 0; op < HIDET_NCCL_NUM_OPS; op++) {
            hidet_nccl_reduction_t r;
            memset(&r, 0xAB, sizeof r);
            int want = k_expected[i].nccl[op];
            hidet_nccl_status_t st = hidet_nccl_reduction(k_expected[i].dtype, (hidet_nccl_op_t)op, &r);
            if (want == NONE) {
                /* The message names the dtype, the op and a reason. */
                HN_ASSERT_STATUS(st, HIDET_NCCL_ERROR_UNSUPPORTED, k_expected[i].name);
                CU_ASSERT_PTR_NOT_NULL(strstr(hidet_nccl_last_error(), ops[op]));
                CU_ASSERT_PTR_NOT_NULL(strstr(hidet_nccl_last_error(), "not supported: "));
            } else {
                HN_ASSERT_STATUS(st, HIDET_NCCL_SUCCESS, NULL);
                CU_ASSERT_EQUAL((int)r.nccl_dtype, want);
                CU_ASSERT_EQUAL((int)r.nccl_op, op); /* hidet op order is NCCL's */
                CU_ASSERT_EQUAL(r.count_multiplier, k_expected[i].mult);
            }
        }
    }
}

static void test_min_versions(void) {
    hidet_nccl_reduction_t r;
    HN_ASSERT_STATUS(hidet_nccl_reduction(HIDET_NCCL_BFLOAT16, HIDET_NCCL_SUM, &r), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(r.min_nccl_version, 21000);
    HN_ASSERT_STATUS(hidet_nccl_reduction(HIDET_NCCL_FLOAT8_E5M2, HIDET_NCCL_MAX, &r), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(r.min_nccl_version, 22400);
    HN_ASSERT_STATUS(hidet_nccl_reduction(HIDET_NCCL_INT32, HIDET_NCCL_AVG, &r), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(r.min_nccl_version, 21000);
    HN_ASSERT_STATUS(hidet_nccl_reduction(HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, &r), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(r.min_nccl_version, 0);
    HN_ASSERT_STATUS(hidet_nccl_reduction(HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "out");
}

static void test_plan_refuses_by_version(void) {
    hidet_nccl_reduction_t r;
    size_t n;
    HN_ASSERT_STATUS(hidet_nccl__plan(HIDET_NCCL_BFLOAT16, HIDET_NCCL_SUM, 4, 20907, &r, &n),
                     HIDET_NCCL_ERROR_UNSUPPORTED, "needs NCCL 2.10");
    CU_ASSERT_PTR_NOT_NULL(strstr(hidet_nccl_last_error(), "2.9.7"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hidet_nccl_last_error(), "bfloat16"));
    HN_ASSERT_STATUS(hidet_nccl__plan(HIDET_NCCL_FLOAT8_E4M3, HIDET_NCCL_MIN, 4, 22304, &r, &n),
                     HIDET_NCCL_ERROR_UNSUPPORTED, "needs NCCL 2.24");
    HN_ASSERT_STATUS(hidet_nccl__plan(HIDET_NCCL_FLOAT32, HIDET_NCCL_AVG, 4, 20906, &r, &n),
                     HIDET_NCCL_ERROR_UNSUPPORTED, "for avg");
    HN_ASSERT_STATUS(hidet_nccl__plan(HIDET_NCCL_FLOAT8_E4M3, HIDET_NCCL_MIN, 4, 22400, &r, &n), HIDET_NCCL_SUCCESS,
                     NULL);
    HN_ASSERT_STATUS(hidet_nccl__plan(HIDET_NCCL_COMPLEX128, HIDET_NCCL_SUM, 5, 22803, &r, &n), HIDET_NCCL_SUCCESS,
                     NULL);
    CU_ASSERT_EQUAL(n, 10);
}

static void test_plan_refuses_overflow(void) {
    hidet_nccl_reduction_t r;
    size_t n;
    HN_ASSERT_STATUS(hidet_nccl__plan(HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, SIZE_MAX / 2, 22803, &r, &n),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "overflows");
    HN_ASSERT_STATUS(hidet_nccl__plan(HIDET_NCCL_COMPLEX128, HIDET_NCCL_SUM, SIZE_MAX / 16 + 1, 22803, &r, &n),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "overflows");
    HN_ASSERT_STATUS(hidet_nccl__plan(HIDET_NCCL_INT8, HIDET_NCCL_SUM, SIZE_MAX, 22803, &r, &n), HIDET_NCCL_SUCCESS,
                     NULL);
}

/* The collectives' inlined movement table agrees with the element sizes and NCCL's type sizes:
 * every element moves whole, as unsigned words of its width (two for 2-byte types, as bytes,
 * and for complex128). */
static void test_movement_table(void) {
    for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++) {
        size_t size = 0, mult = 0;
        ncclDataType_t type;
        CU_ASSERT_EQUAL_FATAL(hidet_nccl_dtype_size((hidet_nccl_dtype_t)d, &size), HIDET_NCCL_SUCCESS);
        CU_ASSERT_EQUAL(hidet_nccl__moves[d].bytes, size);
        CU_ASSERT_EQUAL(hidet_nccl__movement((hidet_nccl_dtype_t)d, &type, &mult), HIDET_NCCL_SUCCESS);
        CU_ASSERT_EQUAL(mult * hidet_nccl__nccl_type_size(type), size);
        CU_ASSERT(type == ncclUint8 || type == ncclUint32 || type == ncclUint64);
        CU_ASSERT_EQUAL(mult, size == 2 || size == 16 ? 2u : 1u);
    }
    ncclDataType_t type;
    size_t mult;
    HN_ASSERT_STATUS(hidet_nccl__movement(HIDET_NCCL_NUM_DTYPES, &type, &mult), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "is not a hidet_nccl_dtype_t");
}

static void test_version_codes(void) {
    CU_ASSERT_EQUAL(hidet_nccl__version_normalize(2804), 20804);
    CU_ASSERT_EQUAL(hidet_nccl__version_normalize(22803), 22803);
    CU_ASSERT_EQUAL(hidet_nccl__version_major(22803), 2);
    CU_ASSERT_EQUAL(hidet_nccl__version_minor(22803), 28);
    CU_ASSERT_EQUAL(hidet_nccl__version_patch(22803), 3);
    CU_ASSERT_EQUAL(hidet_nccl__version_minor(2708), 7);
}

int main(void) {
    static const hn_test_t tests[] = {
        {"table covers every dtype", test_table_covers_every_dtype},
        {"NCCL enum values", test_nccl_enum_values},
        {"names both ways", test_names_both_ways},
        {"bad names and values", test_bad_names_and_values},
        {"mapping entry by entry", test_mapping_entry_by_entry},
        {"minimum NCCL versions", test_min_versions},
        {"plan refuses by version", test_plan_refuses_by_version},
        {"plan refuses overflow", test_plan_refuses_overflow},
        {"movement table", test_movement_table},
        {"version codes", test_version_codes},
        {NULL, NULL},
    };
    return hn_run_tests("dtype", tests);
}

/* The hostile-input sweep: every public function with every bad value we could think of
 * (NULL pointers, negative and huge ids and counts, invalid enum values, byte sizes that
 * overflow size_t, calls before any init and after finalize), one table, each case expecting
 * an error status and a message; then the same table from 8 threads at once. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"

#define FAKE ((ncclComm_t)(uintptr_t)0x1000)

static float g_buf[4];
static const int k_bad_ids[] = {-1, -2, INT_MIN, 1, 2, 1000, INT_MAX};
static const int k_bad_enums[] = {-1, -100, INT_MIN, INT_MAX, 18, 19, 5, 1 << 20};
#define N_IDS (int)(sizeof k_bad_ids / sizeof k_bad_ids[0])
#define N_ENUMS (int)(sizeof k_bad_enums / sizeof k_bad_enums[0])

typedef struct {
    const char *what;
    hidet_nccl_status_t expected;
    hidet_nccl_status_t (*call)(int v);
    int nvalues;  /* the call runs for v = 0 .. nvalues-1 */
    int uses_id0; /* calls all_reduce on id 0: without a live id 0 the id is what is wrong */
} hostile_t;

/* NULL pointers, one function each (v unused). */
static hidet_nccl_status_t null_dtype_name(int v) { (void)v; return hidet_nccl_dtype_name(HIDET_NCCL_INT8, NULL); }
static hidet_nccl_status_t null_dtype_from_name(int v) { return v ? hidet_nccl_dtype_from_name(NULL, NULL) : hidet_nccl_dtype_from_name("int8", NULL); }
static hidet_nccl_status_t null_dtype_size(int v) { (void)v; return hidet_nccl_dtype_size(HIDET_NCCL_INT8, NULL); }
static hidet_nccl_status_t null_op_name(int v) { (void)v; return hidet_nccl_op_name(HIDET_NCCL_SUM, NULL); }
static hidet_nccl_status_t null_op_from_name(int v) { return v ? hidet_nccl_op_from_name(NULL, NULL) : hidet_nccl_op_from_name("sum", NULL); }
static hidet_nccl_status_t null_reduction(int v) { (void)v; return hidet_nccl_reduction(HIDET_NCCL_INT8, HIDET_NCCL_SUM, NULL); }
static hidet_nccl_status_t null_library_path(int v) { (void)v; return hidet_nccl_library_path(NULL); }
static hidet_nccl_status_t null_nccl_version(int v) { (void)v; return hidet_nccl_nccl_version(NULL); }
static hidet_nccl_status_t null_unique_id(int v) { (void)v; return hidet_nccl_get_unique_id(NULL); }
static hidet_nccl_status_t null_get_comm(int v) { (void)v; return hidet_nccl_get_comm(0, NULL); }
static hidet_nccl_status_t null_comm_count(int v) { (void)v; return hidet_nccl_comm_count(NULL); }
static hidet_nccl_status_t null_set_comms(int v) { return hidet_nccl_set_comms(v + 1, NULL); }
static hidet_nccl_status_t null_init_rank(int v) {
    ncclUniqueId id = {{0}};
    int cid;
    return v ? hidet_nccl_comm_init_rank(2, &id, 0, NULL) : hidet_nccl_comm_init_rank(2, NULL, 0, &cid);
}
static hidet_nccl_status_t null_init_all(int v) { (void)v; return hidet_nccl_comm_init_all(2, NULL, NULL); }
static hidet_nccl_status_t null_split(int v) { (void)v; return hidet_nccl_comm_split(0, 0, 0, NULL); }
static hidet_nccl_status_t null_query(int v) {
    switch (v) {
        case 0: return hidet_nccl_comm_rank(0, NULL);
        case 1: return hidet_nccl_comm_size(0, NULL);
        case 2: return hidet_nccl_comm_device(0, NULL);
        default: return hidet_nccl_comm_is_owned(0, NULL);
    }
}
static hidet_nccl_status_t null_buffers(int v) {
    v += 1; /* 1: send NULL, 2: recv NULL, 3: both */
    return hidet_nccl_all_reduce(0, v & 1 ? NULL : g_buf, v & 2 ? NULL : g_buf, 4, HIDET_NCCL_FLOAT32,
                                 HIDET_NCCL_SUM, 0);
}
static hidet_nccl_status_t null_bootstrap(int v) {
    hidet_nccl_bootstrap_h bs;
    int a, b;
    const char *s;
    char buf[4];
    switch (v) {
        case 0: return hidet_nccl_bootstrap_create(NULL, NULL, &bs);
        case 1: return hidet_nccl_bootstrap_load(NULL, NULL, &bs);
        case 2: return hidet_nccl_bootstrap_load("/x.so", NULL, NULL);
        case 3: return hidet_nccl_bootstrap_from_env(NULL);
        case 4: return hidet_nccl_bootstrap_name(NULL, &s);
        case 5: return hidet_nccl_bootstrap_rank(NULL, &a, &b);
        case 6: return hidet_nccl_bootstrap_local_rank(NULL, &a, &b);
        case 7: return hidet_nccl_bootstrap_broadcast(NULL, buf, sizeof buf, 0, 1);
        case 8: return hidet_nccl_bootstrap_file(NULL, NULL);
        case 9: return hidet_nccl_comm_init(NULL, NULL, &a);
        default: return hidet_nccl_init(NULL);
    }
}

/* Bad ids for every function that takes one. */
static hidet_nccl_status_t bad_id(int v) {
    int id = k_bad_ids[v % N_IDS], x;
    ncclComm_t c;
    switch (v / N_IDS) {
        case 0: return hidet_nccl_get_comm(id, &c);
        case 1: return hidet_nccl_comm_destroy(id);
        case 2: return hidet_nccl_comm_rank(id, &x);
        case 3: return hidet_nccl_comm_size(id, &x);
        case 4: return hidet_nccl_comm_device(id, &x);
        case 5: return hidet_nccl_comm_is_owned(id, &x);
        case 6: return hidet_nccl_comm_split(id, 0, 0, &x);
        case 7: return hidet_nccl_comm_check(id);
        case 8: return hidet_nccl_comm_wait(id, 0, 1.0);
        case 9: return hidet_nccl_comm_abort(id);
        case 10: return hidet_nccl_comm_set_error_policy(id, HIDET_NCCL_ON_ERROR_ABORT_COMM);
        default: return hidet_nccl_all_reduce(id, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0);
    }
}

/* Invalid enum values for every function that takes one (5 is a valid dtype, not an op). */
static const int k_bad_dtypes[] = {-1, -100, INT_MIN, INT_MAX, 18, 19, 1 << 20};
#define N_DT (int)(sizeof k_bad_dtypes / sizeof k_bad_dtypes[0])
static hidet_nccl_status_t bad_enum(int v) {
    int d = k_bad_dtypes[v % N_DT], o = k_bad_enums[v % N_ENUMS];
    const char *s;
    size_t z;
    hidet_nccl_reduction_t r;
    switch (v / N_ENUMS) { /* N_ENUMS > N_DT: dtype groups index k_bad_dtypes modulo its size */
        case 0: return hidet_nccl_dtype_name((hidet_nccl_dtype_t)d, &s);
        case 1: return hidet_nccl_dtype_size((hidet_nccl_dtype_t)d, &z);
        case 2: return hidet_nccl_op_name((hidet_nccl_op_t)o, &s);
        case 3: return hidet_nccl_reduction(HIDET_NCCL_FLOAT32, (hidet_nccl_op_t)o, &r);
        default: return hidet_nccl_reduction((hidet_nccl_dtype_t)d, HIDET_NCCL_SUM, &r);
    }
}
static hidet_nccl_status_t bad_enum_all_reduce(int v) {
    if (v < N_ENUMS)
        return hidet_nccl_all_reduce(0, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, (hidet_nccl_op_t)k_bad_enums[v], 0);
    return hidet_nccl_all_reduce(0, g_buf, g_buf, 4, (hidet_nccl_dtype_t)k_bad_dtypes[v - N_ENUMS], HIDET_NCCL_SUM, 0);
}

/* Counts whose byte size overflows size_t, for every dtype wider than a byte. */
static const hidet_nccl_dtype_t k_wide[] = {HIDET_NCCL_INT32, HIDET_NCCL_INT64, HIDET_NCCL_UINT32, HIDET_NCCL_UINT64,
                                            HIDET_NCCL_FLOAT16, HIDET_NCCL_BFLOAT16, HIDET_NCCL_TFLOAT32,
                                            HIDET_NCCL_FLOAT32, HIDET_NCCL_FLOAT64, HIDET_NCCL_COMPLEX64,
                                            HIDET_NCCL_COMPLEX128};
static hidet_nccl_status_t overflow(int v) {
    hidet_nccl_dtype_t d = k_wide[v / 2];
    size_t size;
    hidet_nccl_dtype_size(d, &size);
    size_t count = v % 2 ? SIZE_MAX : SIZE_MAX / size + 1;
    return hidet_nccl_all_reduce(0, g_buf, g_buf, count, d, HIDET_NCCL_SUM, 0);
}

/* Other bad values. */
static hidet_nccl_status_t bad_values(int v) {
    ncclUniqueId id = {{0}};
    int cid, ids[4], dup[2] = {1, 1};
    ncclComm_t with_null[2] = {FAKE, NULL};
    hidet_nccl_dtype_t d;
    hidet_nccl_op_t op;
    switch (v) {
        case 0: return hidet_nccl_set_comms(-1, NULL);
        case 1: return hidet_nccl_set_comms(INT_MIN, with_null);
        case 2: return hidet_nccl_set_comms(2, with_null);
        case 3: return hidet_nccl_comm_init_rank(0, &id, 0, &cid);
        case 4: return hidet_nccl_comm_init_rank(INT_MIN, &id, 0, &cid);
        case 5: return hidet_nccl_comm_init_rank(4, &id, 4, &cid);
        case 6: return hidet_nccl_comm_init_rank(4, &id, INT_MAX, &cid);
        case 7: return hidet_nccl_comm_init_rank(4, &id, -1, &cid);
        case 8: return hidet_nccl_comm_init_all(0, NULL, ids);
        case 9: return hidet_nccl_comm_init_all(-5, NULL, ids);
        case 10: return hidet_nccl_comm_init_all(2, dup, ids);
        case 11: return hidet_nccl_comm_split(0, -7, 0, &cid);
        case 12: return hidet_nccl_dtype_from_name("", &d);
        case 13: return hidet_nccl_dtype_from_name("float32 ", &d);
        case 14: return hidet_nccl_dtype_from_name("x\xff\xfe", &d);
        case 15: return hidet_nccl_op_from_name("SUM", &op);
        case 16: return hidet_nccl_op_from_name("", &op);
        case 17: return hidet_nccl_comm_wait(0, 0, -1.0);
        case 18: return hidet_nccl_comm_wait(0, 0, NAN);
        case 19: return hidet_nccl_comm_wait(0, 0, INFINITY);
        case 20: return hidet_nccl_comm_wait(0, 0, -INFINITY);
        case 21: return hidet_nccl_comm_set_error_policy(0, (hidet_nccl_error_policy_t)-1);
        case 22: return hidet_nccl_comm_set_error_policy(0, HIDET_NCCL_NUM_ERROR_POLICIES);
        case 23: return hidet_nccl_comm_set_error_policy(0, (hidet_nccl_error_policy_t)INT_MAX);
        default: return hidet_nccl_group_end();
    }
}

/* NULL arguments to what the second wave added (adopt, lookup, settings, plug-in v1/v2,
 * the socket and PMIx backends, allgather). */
static hidet_nccl_status_t null_second_wave(int v) {
    int id;
    const char *value;
    hidet_nccl_bootstrap_h bs;
    char buf[8] = "";
    switch (v) {
        case 0: return hidet_nccl_comm_adopt(NULL, &id);
        case 1: return hidet_nccl_comm_adopt(FAKE, NULL);
        case 2: return hidet_nccl_comm_lookup(NULL, &id);
        case 3: return hidet_nccl_comm_lookup(FAKE, NULL);
        case 4: return hidet_nccl_setting(NULL, &value, NULL);
        case 5: return hidet_nccl_setting("HIDET_NCCL_TIMEOUT", NULL, NULL);
        case 6: return hidet_nccl_setting("NOT_A_SETTING", &value, NULL);
        case 7: return hidet_nccl_bootstrap_create_v1(NULL, NULL, &bs);
        case 8: return hidet_nccl_bootstrap_socket(NULL, NULL);
        case 9: return hidet_nccl_bootstrap_pmix(NULL);
        default: return hidet_nccl_bootstrap_allgather(NULL, buf, buf, 1, 1.0);
    }
}

static const hostile_t k_cases[] = {
    {"NULL arguments of the second wave", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_second_wave, 11, 0},
    {"NULL name", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_dtype_name, 1, 0},
    {"NULL dtype/name", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_dtype_from_name, 2, 0},
    {"NULL bytes", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_dtype_size, 1, 0},
    {"NULL op name", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_op_name, 1, 0},
    {"NULL op/name", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_op_from_name, 2, 0},
    {"NULL reduction", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_reduction, 1, 0},
    {"NULL path", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_library_path, 1, 0},
    {"NULL version", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_nccl_version, 1, 0},
    {"NULL unique id", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_unique_id, 1, 0},
    {"NULL comm out", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_get_comm, 1, 0},
    {"NULL count", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_comm_count, 1, 0},
    {"NULL comms array", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_set_comms, 3, 0},
    {"NULL id / out to init_rank", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_init_rank, 2, 0},
    {"NULL ids to init_all", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_init_all, 1, 0},
    {"NULL new id", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_split, 1, 0},
    {"NULL query outputs", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_query, 4, 0},
    {"NULL buffers", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_buffers, 3, 1},
    {"NULL bootstrap arguments", HIDET_NCCL_ERROR_INVALID_ARGUMENT, null_bootstrap, 11, 0},
    {"bad communicator ids", HIDET_NCCL_ERROR_INVALID_COMM, bad_id, 12 * N_IDS, 0},
    {"invalid enum values", HIDET_NCCL_ERROR_INVALID_ARGUMENT, bad_enum, 5 * N_ENUMS, 0},
    {"invalid enum values to all_reduce", HIDET_NCCL_ERROR_INVALID_ARGUMENT, bad_enum_all_reduce, N_ENUMS + N_DT, 1},
    {"byte sizes overflowing size_t", HIDET_NCCL_ERROR_INVALID_ARGUMENT, overflow, 2 * 11, 1},
    {NULL, 0, NULL, 0, 0},
};

/* bad_values: each with its own expected status. */
static const hidet_nccl_status_t k_bad_values_expected[] = {
    HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
    HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
    HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
    HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
    HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
    HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
    HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
    HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
    HIDET_NCCL_ERROR_INVALID_USAGE,
};
#define N_BAD_VALUES (int)(sizeof k_bad_values_expected / sizeof k_bad_values_expected[0])

/* Runs every case once; returns how many did not fail as expected (printing them if loud).
 * id0_live: whether communicator id 0 exists (then all_reduce's other arguments are judged). */
static int sweep(int loud, int id0_live, int *count) {
    int wrong = 0;
    *count = 0;
    for (const hostile_t *c = k_cases; c->what; c++) {
        for (int v = 0; v < c->nvalues; v++) {
            hidet_nccl_status_t st = c->call(v);
            const char *msg = hidet_nccl_last_error();
            hidet_nccl_status_t want = c->uses_id0 && !id0_live ? HIDET_NCCL_ERROR_INVALID_COMM : c->expected;
            int ok = st == want && msg[0] != '\0';
            if (!ok && loud) fprintf(stderr, "case '%s' value %d: got %d, message '%s'\n", c->what, v, (int)st, msg);
            wrong += !ok;
            (*count)++;
        }
    }
    for (int v = 0; v < N_BAD_VALUES; v++) {
        hidet_nccl_status_t st = bad_values(v);
        int ok = st == k_bad_values_expected[v] && hidet_nccl_last_error()[0] != '\0';
        if (!ok && loud) fprintf(stderr, "bad value %d: got %d, message '%s'\n", v, (int)st, hidet_nccl_last_error());
        wrong += !ok;
        (*count)++;
    }
    return wrong;
}

static void test_before_any_init(void) {
    int count = 0;
    CU_ASSERT_EQUAL(sweep(1, 0, &count), 0);
    printf("\n  %d hostile calls before any communicator exists\n", count);
}

static void test_with_a_registry(void) {
    ncclComm_t comms[1] = {FAKE}; /* id 0 is live: bad values must be caught before NCCL sees it */
    HN_ASSERT_STATUS(hidet_nccl_set_comms(1, comms), HIDET_NCCL_SUCCESS, NULL);
    int count = 0;
    /* With id 0 live, "bad ids" still excludes 0, and the rest must not reach the fake. */
    CU_ASSERT_EQUAL(sweep(1, 1, &count), 0);
    printf("\n  %d hostile calls with a live (fake) communicator\n", count);
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

static void test_after_finalize_twice(void) {
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
    int count = 0;
    CU_ASSERT_EQUAL(sweep(1, 0, &count), 0);
    ncclComm_t c;
    HN_ASSERT_STATUS(hidet_nccl_get_comm(0, &c), HIDET_NCCL_ERROR_INVALID_COMM, "never given");
}

static void *sweeper(void *arg) {
    (void)arg;
    long wrong = 0;
    for (int i = 0; i < 200; i++) {
        int count;
        wrong += sweep(0, 1, &count);
    }
    return (void *)wrong;
}

static void test_eight_threads(void) {
    ncclComm_t comms[1] = {FAKE};
    HN_ASSERT_STATUS(hidet_nccl_set_comms(1, comms), HIDET_NCCL_SUCCESS, NULL);
    pthread_t t[8];
    for (int i = 0; i < 8; i++) CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, sweeper, NULL), 0);
    long wrong = 0;
    for (int i = 0; i < 8; i++) {
        void *r;
        pthread_join(t[i], &r);
        wrong += (long)r;
    }
    CU_ASSERT_EQUAL(wrong, 0);
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

int main(void) {
    static const hn_test_t tests[] = {
        {"every bad value, before any init", test_before_any_init},
        {"every bad value, with a live communicator", test_with_a_registry},
        {"after finalize, twice", test_after_finalize_twice},
        {"8 threads at once, 200 sweeps each", test_eight_threads},
        {NULL, NULL},
    };
    return hn_run_tests("hostile", tests);
}

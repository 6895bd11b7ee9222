/* The registry: seed-compatible set_comms/get_comm, comm_adopt/comm_lookup beside owned
 * communicators, ids checked on every use, ownership, finalize, and many threads at once. Borrowed communicators here are fake pointers that
 * the library must never hand to NCCL (it destroys only what it owns). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm/registry_int.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"

#define FAKE(i) ((ncclComm_t)(uintptr_t)(0x1000 + 16 * (i)))

static void test_set_and_get(void) {
    ncclComm_t comms[3] = {FAKE(0), FAKE(1), FAKE(2)};
    HN_ASSERT_STATUS(hidet_nccl_set_comms(3, comms), HIDET_NCCL_SUCCESS, NULL);
    comms[1] = FAKE(9); /* the array was copied */
    for (int i = 0; i < 3; i++) {
        ncclComm_t c = NULL;
        int owned = -1;
        HN_ASSERT_STATUS(hidet_nccl_get_comm(i, &c), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_PTR_EQUAL(c, FAKE(i));
        HN_ASSERT_STATUS(hidet_nccl_comm_is_owned(i, &owned), HIDET_NCCL_SUCCESS, NULL);
        CU_ASSERT_EQUAL(owned, 0);
    }
    int count = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_count(&count), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(count, 3);
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

static void test_bad_ids(void) {
    ncclComm_t comms[2] = {FAKE(0), FAKE(1)};
    ncclComm_t c;
    HN_ASSERT_STATUS(hidet_nccl_set_comms(2, comms), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_get_comm(-1, &c), HIDET_NCCL_ERROR_INVALID_COMM, "-1 is negative");
    HN_ASSERT_STATUS(hidet_nccl_get_comm(2, &c), HIDET_NCCL_ERROR_INVALID_COMM, "2 was never given");
    HN_ASSERT_STATUS(hidet_nccl_get_comm(INT32_MAX, &c), HIDET_NCCL_ERROR_INVALID_COMM, "2147483647");
    HN_ASSERT_STATUS(hidet_nccl_get_comm(0, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "out");
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

static void test_destroy_borrowed_twice(void) {
    ncclComm_t comms[2] = {FAKE(0), FAKE(1)};
    ncclComm_t c;
    HN_ASSERT_STATUS(hidet_nccl_set_comms(2, comms), HIDET_NCCL_SUCCESS, NULL);
    /* Borrowed: the library drops the id and never calls ncclCommDestroy on the fake. */
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(0), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(0), HIDET_NCCL_ERROR_INVALID_COMM, "0 was destroyed");
    HN_ASSERT_STATUS(hidet_nccl_get_comm(0, &c), HIDET_NCCL_ERROR_INVALID_COMM, "destroyed");
    HN_ASSERT_STATUS(hidet_nccl_get_comm(1, &c), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_PTR_EQUAL(c, FAKE(1));
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(5), HIDET_NCCL_ERROR_INVALID_COMM, "5");
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(-2), HIDET_NCCL_ERROR_INVALID_COMM, "-2");
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

static void test_finalize_twice_and_ids_after(void) {
    ncclComm_t comms[1] = {FAKE(0)};
    ncclComm_t c;
    HN_ASSERT_STATUS(hidet_nccl_set_comms(1, comms), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_get_comm(0, &c), HIDET_NCCL_ERROR_INVALID_COMM, "never given");
    int count = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_count(&count), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(count, 0);
}

static void test_set_comms_replaces_borrowed(void) {
    ncclComm_t a[3] = {FAKE(0), FAKE(1), FAKE(2)};
    ncclComm_t b[1] = {FAKE(7)};
    ncclComm_t c;
    HN_ASSERT_STATUS(hidet_nccl_set_comms(3, a), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_set_comms(1, b), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_get_comm(0, &c), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_PTR_EQUAL(c, FAKE(7));
    HN_ASSERT_STATUS(hidet_nccl_get_comm(1, &c), HIDET_NCCL_ERROR_INVALID_COMM, "never given");
    HN_ASSERT_STATUS(hidet_nccl_set_comms(0, NULL), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_get_comm(0, &c), HIDET_NCCL_ERROR_INVALID_COMM, "never given");
}

/* Owned, adopted and pooled communicators side by side: set_comms no longer refuses while an
 * owned one lives, numbers its pool after the live ids, and no communicator gets two ids. */
static void test_owned_and_borrowed_mix(void) {
    int owned_id = -1, id = -1, owned = -1;
    ncclComm_t c;
    HN_ASSERT_STATUS(hidet_nccl_set_comms(0, NULL), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl__registry_add(FAKE(3), 1, 2, 0, 0, &owned_id), HIDET_NCCL_SUCCESS, NULL); /* as init does */
    CU_ASSERT_EQUAL(owned_id, 0);
    ncclComm_t pool[2] = {FAKE(7), FAKE(8)};
    HN_ASSERT_STATUS(hidet_nccl_set_comms(2, pool), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_lookup(FAKE(7), &id), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(id, 1);
    HN_ASSERT_STATUS(hidet_nccl_get_comm(2, &c), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_PTR_EQUAL(c, FAKE(8));
    HN_ASSERT_STATUS(hidet_nccl_comm_is_owned(0, &owned), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(owned, 1);
    ncclComm_t again[1] = {FAKE(3)};
    HN_ASSERT_STATUS(hidet_nccl_set_comms(1, again), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "already communicator id 0 (owned by the library)");
    /* One at a time: a fresh id; the same communicator twice names the id it has. */
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt(FAKE(9), &id), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(id, 3);
    HN_ASSERT_STATUS(hidet_nccl_comm_is_owned(3, &owned), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(owned, 0);
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt(FAKE(9), &id), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "already registered as id 3");
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt(FAKE(7), &id), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "id 1 (in the set_comms pool)");
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt(FAKE(3), &id), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "id 0 (owned");
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt(NULL, &id), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comm");
    /* A new pool replaces the old one only: the owned and the adopted ids stay. */
    ncclComm_t next[1] = {FAKE(5)};
    HN_ASSERT_STATUS(hidet_nccl_set_comms(1, next), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_get_comm(1, &c), HIDET_NCCL_ERROR_INVALID_COMM, "replaced by hidet_nccl_set_comms");
    HN_ASSERT_STATUS(hidet_nccl_comm_lookup(FAKE(7), &id), HIDET_NCCL_ERROR_INVALID_COMM, "not registered");
    HN_ASSERT_STATUS(hidet_nccl_comm_lookup(FAKE(5), &id), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(id, 4);
    HN_ASSERT_STATUS(hidet_nccl_comm_lookup(FAKE(9), &id), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(id, 3);
    HN_ASSERT_STATUS(hidet_nccl_get_comm(0, &c), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_PTR_EQUAL(c, FAKE(3));
    /* Destroying the adopted id drops it; the communicator is the caller's. */
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(3), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt(FAKE(9), &id), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(id, 5);
    /* Take the owned fake back out without NCCL seeing it. */
    HN_ASSERT_STATUS(hidet_nccl__registry_kill(owned_id, NULL, &c, &owned, NULL), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(owned, 1);
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
    /* With nothing else live, the pool is numbered from 0 again, as the seed did. */
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt(FAKE(9), &id), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_set_comms(2, pool), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_lookup(FAKE(7), &id), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(id, 0);
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

static void test_set_comms_arguments(void) {
    ncclComm_t with_null[3] = {FAKE(0), NULL, FAKE(2)};
    HN_ASSERT_STATUS(hidet_nccl_set_comms(-1, with_null), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "-1");
    HN_ASSERT_STATUS(hidet_nccl_set_comms(2, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comms is NULL");
    HN_ASSERT_STATUS(hidet_nccl_set_comms(3, with_null), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "comms[1] of 3");
    ncclComm_t twice[3] = {FAKE(0), FAKE(1), FAKE(0)};
    HN_ASSERT_STATUS(hidet_nccl_set_comms(3, twice), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "comms[0] and comms[2] are the same communicator");
    HN_ASSERT_STATUS(hidet_nccl_comm_count(NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "count");
}

/* 2 million communicators: the duplicate check sorts a copy of the pointers (O(n log n)); the
 * pairwise check before it took minutes here, past the test's timeout. A duplicate is named by
 * both positions however far apart. */
#define MANY 2000000

static void test_set_comms_two_million(void) {
    ncclComm_t *comms = malloc(MANY * sizeof *comms);
    CU_ASSERT_PTR_NOT_NULL_FATAL(comms);
    for (int i = 0; i < MANY; i++) comms[i] = FAKE(MANY - i); /* descending: the sort has work to do */
    HN_ASSERT_STATUS(hidet_nccl_set_comms(MANY, comms), HIDET_NCCL_SUCCESS, NULL);
    int count = -1;
    ncclComm_t c = NULL;
    HN_ASSERT_STATUS(hidet_nccl_comm_count(&count), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(count, MANY);
    HN_ASSERT_STATUS(hidet_nccl_get_comm(MANY - 1, &c), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_PTR_EQUAL(c, FAKE(1));
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
    comms[MANY - 7] = comms[3];
    HN_ASSERT_STATUS(hidet_nccl_set_comms(MANY, comms), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "comms[3] and comms[1999993] are the same communicator");
    HN_ASSERT_STATUS(hidet_nccl_comm_count(&count), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(count, 0);
    free(comms);
}

/* Of several duplicates the pair named is the one a reader of the array meets first (the
 * pairwise check's choice); a communicator registered outside the pool is named by its position. */
static void test_set_comms_which_duplicate(void) {
    enum { N = 1000 };
    ncclComm_t comms[N];
    for (int i = 0; i < N; i++) comms[i] = FAKE(N - i);
    comms[990] = comms[3];
    comms[40] = comms[500]; /* its later copy comes first */
    HN_ASSERT_STATUS(hidet_nccl_set_comms(N, comms), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "comms[40] and comms[500] are the same communicator");
    comms[40] = FAKE(N + 1);
    comms[990] = FAKE(N + 2);
    comms[600] = comms[9]; /* three copies: the first two */
    comms[999] = comms[9];
    HN_ASSERT_STATUS(hidet_nccl_set_comms(N, comms), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "comms[9] and comms[600] are the same communicator");
    comms[600] = FAKE(N + 3);
    comms[999] = FAKE(N + 4);
    int id = -1, count = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt(comms[777], &id), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt(comms[123], &id), HIDET_NCCL_SUCCESS, NULL);
    char needle[128];
    snprintf(needle, sizeof needle, "comms[123] (%p) is already communicator id %d (adopted)", (void *)comms[123], id);
    HN_ASSERT_STATUS(hidet_nccl_set_comms(N, comms), HIDET_NCCL_ERROR_INVALID_ARGUMENT, needle);
    HN_ASSERT_STATUS(hidet_nccl_comm_count(&count), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(count, 2); /* nothing of the refused pools was kept */
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

#define THREADS 8
#define PER_THREAD 2000

static void *adder(void *arg) {
    int *ids = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        if (hidet_nccl__registry_add(FAKE(i), 0, 0, -1, 0, &ids[i]) != HIDET_NCCL_SUCCESS) return NULL;
        ncclComm_t c;
        if (hidet_nccl_get_comm(ids[i], &c) != HIDET_NCCL_SUCCESS || c != FAKE(i)) return NULL;
        if (i % 3 == 0 && hidet_nccl_comm_destroy(ids[i]) != HIDET_NCCL_SUCCESS) return NULL;
    }
    return arg;
}

static void test_threads_get_unique_ids(void) {
    static int ids[THREADS][PER_THREAD];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, adder, ids[i]), 0);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        CU_ASSERT_PTR_EQUAL(r, ids[i]);
    }
    static unsigned char seen[THREADS * PER_THREAD];
    memset(seen, 0, sizeof seen);
    int dup = 0;
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < PER_THREAD; j++) {
            int id = ids[i][j];
            if (id < 0 || id >= THREADS * PER_THREAD || seen[id]++) dup++;
        }
    CU_ASSERT_EQUAL(dup, 0);
    int count;
    hidet_nccl_comm_count(&count);
    CU_ASSERT_EQUAL(count, THREADS * PER_THREAD);
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

int main(void) {
    static const hn_test_t tests[] = {
        {"set_comms then get_comm", test_set_and_get},
        {"bad ids", test_bad_ids},
        {"destroy a borrowed communicator twice", test_destroy_borrowed_twice},
        {"finalize twice, ids after finalize", test_finalize_twice_and_ids_after},
        {"set_comms replaces borrowed communicators", test_set_comms_replaces_borrowed},
        {"owned, adopted and pooled communicators together", test_owned_and_borrowed_mix},
        {"set_comms arguments", test_set_comms_arguments},
        {"set_comms with 2 million communicators", test_set_comms_two_million},
        {"set_comms names the first duplicate", test_set_comms_which_duplicate},
        {"8 threads get unique ids", test_threads_get_unique_ids},
        {NULL, NULL},
    };
    return hn_run_tests("registry", tests);
}

/* The deadline around blocking NCCL calls (core/comm/blocking_call.c), with stand-in calls that
 * return at once, fail, or stay stuck until the test lets them go: results and arguments come
 * back, a call past the deadline is a timeout at the deadline (while the call is still stuck),
 * and the call's `late` hook runs on the helper when it finally returns. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/comm/blocking_call_int.h"
#include "core/base/kit.h"
#include "tests/cunit_runner.h"
#include "tests/deadline.h"

#define STUCK ((useconds_t)-1) /* a sleep_us: stays until the test lets it go (g_let_go) */

typedef struct {
    int in, out;
    useconds_t sleep_us;
    ncclResult_t result;
    pid_t tid; /* the helper that ran it (kernel thread ids are not reused at once, pthread_t's are) */
} job_t;

static atomic_int g_late_calls, g_late_value, g_let_go;

static ncclResult_t run(void *p) {
    job_t *j = p;
    if (j->sleep_us == STUCK) {
        int let_go = 0;
        HN_WAIT_FOR(let_go, atomic_load(&g_let_go), 60, "the test letting the stuck call go");
        (void)let_go; /* else it returns now: the case fails on the late hook's count */
    } else if (j->sleep_us) {
        usleep(j->sleep_us); /* a call that takes a moment */
    }
    j->out = j->in * 2;
    j->tid = gettid();
    return j->result;
}

static void late(void *p, ncclResult_t r) {
    job_t *j = p;
    atomic_store(&g_late_value, j->out + (int)r);
    atomic_fetch_add(&g_late_calls, 1);
}

static const hn_blocking_call_t k_call = {run, late};

static void test_returns_in_time(void) {
    job_t j = {21, 0, 0, ncclSuccess, 0};
    ncclResult_t r = ncclInternalError;
    HN_ASSERT_STATUS(hidet_nccl__blocking_call(&k_call, &j, sizeof j, -1, 5.0, "a quick call", &r),
                     HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(r, ncclSuccess);
    CU_ASSERT_EQUAL(j.out, 42); /* the helper's copy came back */
    CU_ASSERT_EQUAL(atomic_load(&g_late_calls), 0);
}

/* A deadline that is no number of seconds is refused before any thread is asked (an infinite
 * or NaN one made the deadline's arithmetic wait forever). */
static void test_bad_deadlines(void) {
    const double bad[] = {INFINITY, NAN, -1.0, 0.0, 1e300};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        job_t j = {1, 0, 0, ncclSuccess, 0};
        ncclResult_t r = ncclSuccess;
        HN_ASSERT_STATUS(hidet_nccl__blocking_call(&k_call, &j, sizeof j, -1, bad[i], "a call", &r),
                         HIDET_NCCL_ERROR_INVALID_ARGUMENT, "a call: the deadline");
        CU_ASSERT_EQUAL(j.out, 0); /* never run */
    }
}

static void test_nccl_error_comes_back(void) {
    job_t j = {1, 0, 1000, ncclRemoteError, 0};
    ncclResult_t r = ncclSuccess;
    HN_ASSERT_STATUS(hidet_nccl__blocking_call(&k_call, &j, sizeof j, -1, 5.0, "a failing call", &r),
                     HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(r, ncclRemoteError);
    CU_ASSERT_EQUAL(j.out, 2);
}

static void test_deadline(void) {
    job_t j = {5, 0, STUCK, ncclSuccess, 0}; /* stuck against a 0.2 s deadline */
    ncclResult_t r = ncclSuccess;
    size_t bytes;
    hidet_nccl_dtype_size(HIDET_NCCL_FLOAT32, &bytes); /* a public call ran in this thread before */
    double start = hidet_nccl__now();
    HN_ASSERT_STATUS(hidet_nccl__blocking_call(&k_call, &j, sizeof j, -1, 0.2, "a stuck init of rank 3", &r),
                     HIDET_NCCL_ERROR_TIMEOUT, "a stuck init of rank 3 did not return within 0.2 s");
    /* Outside any public call the message names the function that failed, not the last public one. */
    CU_ASSERT_PTR_NOT_NULL(strstr(hidet_nccl_last_error(), "hidet_nccl: hidet_nccl__blocking_call: "));
    double took = hidet_nccl__now() - start;
    CU_ASSERT(took >= 0.2); /* at the deadline, the call still stuck: not when it ends */
    CU_ASSERT_EQUAL(j.out, 0); /* nothing written back after a timeout */
    CU_ASSERT_EQUAL(hidet_nccl__blocking_calls_abandoned(), 1);
    CU_ASSERT_EQUAL(atomic_load(&g_late_calls), 0);
    atomic_store(&g_let_go, 1);
    int done = 0;
    HN_WAIT_FOR(done, atomic_load(&g_late_calls) != 0, 10, "the late hook of the abandoned call");
    CU_ASSERT_EQUAL(atomic_load(&g_late_calls), 1); /* the helper cleaned up what it made */
    CU_ASSERT_EQUAL(atomic_load(&g_late_value), 10);
    HN_WAIT_FOR(done, hidet_nccl__blocking_calls_abandoned() == 0, 10, "no abandoned call left");
    (void)done; /* said by the asserts */
    CU_ASSERT_EQUAL(hidet_nccl__blocking_calls_abandoned(), 0);
}

static void test_many_at_once(void) {
    for (int k = 0; k < 200; k++) {
        job_t j = {k, -1, 0, ncclSuccess, 0};
        ncclResult_t r;
        HN_ASSERT_STATUS(hidet_nccl__blocking_call(&k_call, &j, sizeof j, -1, 5.0, "call", &r), HIDET_NCCL_SUCCESS,
                         NULL);
        CU_ASSERT_EQUAL(j.out, 2 * k);
    }
}

/* Until one helper is left and it is kept (hn_test_scaled(10) s at most); the helper of the
 * abandoned call of test_deadline ends once it finds another kept. */
static void wait_kept(void) {
    int kept = 0;
    HN_WAIT_FOR(kept, hidet_nccl__blocking_helper_kept() && hidet_nccl__blocking_helpers_alive() == 1, 10,
                "one helper left, kept");
    (void)kept; /* said below */
    CU_ASSERT(hidet_nccl__blocking_helper_kept());
    CU_ASSERT_EQUAL(hidet_nccl__blocking_helpers_alive(), 1);
}

/* Calls one after another run on one kept helper, not on the caller's thread, with no wait
 * between them (the helper takes the kept place before its caller is told); in a fork's child
 * (where the parent's kept helper does not exist) a call still runs, on a new helper. */
static void test_kept_helper(void) {
    job_t a = {1, 0, 0, ncclSuccess, 0}, b = {2, 0, 0, ncclSuccess, 0};
    ncclResult_t r;
    HN_ASSERT_STATUS(hidet_nccl__blocking_call(&k_call, &a, sizeof a, -1, 5.0, "first", &r), HIDET_NCCL_SUCCESS, NULL);
    wait_kept();
    HN_ASSERT_STATUS(hidet_nccl__blocking_call(&k_call, &b, sizeof b, -1, 5.0, "second", &r), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(a.tid, b.tid);
    CU_ASSERT_NOT_EQUAL(a.tid, gettid());
    CU_ASSERT_EQUAL(b.out, 4);
    for (int k = 0; k < 20; k++) { /* back to back */
        job_t c = {k, 0, 0, ncclSuccess, 0};
        HN_ASSERT_STATUS(hidet_nccl__blocking_call(&k_call, &c, sizeof c, -1, 5.0, "again", &r), HIDET_NCCL_SUCCESS,
                         NULL);
        CU_ASSERT_EQUAL(c.tid, a.tid);
    }
    CU_ASSERT_EQUAL(hidet_nccl__blocking_helpers_alive(), 1);
    wait_kept(); /* the child inherits the state of a kept helper, not the helper */
    pid_t pid = fork();
    if (pid == 0) {
        job_t c = {3, 0, 0, ncclSuccess, 0};
        ncclResult_t rc = ncclInternalError;
        int st = hidet_nccl__blocking_call(&k_call, &c, sizeof c, -1, 2.0, "in the child", &rc);
        _exit(st == HIDET_NCCL_SUCCESS && rc == ncclSuccess && c.out == 6 ? 0 : 1);
    }
    int status = -1;
    CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
    static const hn_test_t tests[] = {
        {"a call that returns in time gives its result and arguments back", test_returns_in_time},
        {"an NCCL error of the call is its result", test_nccl_error_comes_back},
        {"a deadline that is not a number of seconds is refused", test_bad_deadlines},
        {"past the deadline: a timeout at the deadline, the late hook when the call returns", test_deadline},
        {"200 calls in a row", test_many_at_once},
        {"one helper kept between calls; a fork's child makes its own", test_kept_helper},
        {NULL, NULL},
    };
    return hn_run_tests("blocking_call", tests);
}

/* A CUnit main for every test binary: one suite per table, verbose output, exit status 1
 * if any assertion failed (so Bazel sees the failure). */
#ifndef HIDET_NCCL_TESTS_CUNIT_RUNNER_H_
#define HIDET_NCCL_TESTS_CUNIT_RUNNER_H_

#include <CUnit/CUnit.h>

typedef struct {
    const char *name;
    void (*fn)(void);
} hn_test_t;

/* Runs the NULL-terminated table as one suite named `suite`; returns the process exit code. */
int hn_run_tests(const char *suite, const hn_test_t *tests);

/* Asserts a status and, for a failure, a non-empty message containing `needle` (may be NULL). */
#define HN_ASSERT_STATUS(expr, expected, needle) hn_assert_status((expr), (expected), (needle), #expr, __FILE__, __LINE__)
void hn_assert_status(int got, int expected, const char *needle, const char *expr, const char *file, int line);

#endif

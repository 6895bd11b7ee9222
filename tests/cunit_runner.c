#include "tests/cunit_runner.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "hidet_nccl/hidet_nccl.h"

void hn_assert_status(int got, int expected, const char *needle, const char *expr, const char *file, int line) {
    const char *msg = hidet_nccl_last_error();
    int ok = got == expected;
    if (ok && expected != HIDET_NCCL_SUCCESS) ok = msg[0] != '\0' && (needle == NULL || strstr(msg, needle) != NULL);
    if (!ok)
        fprintf(stderr, "%s:%d: %s gave %d (%s), expected %d (%s); message: '%s'; wanted in it: '%s'\n", file, line,
                expr, got, hidet_nccl_status_string(got), expected, hidet_nccl_status_string(expected), msg,
                needle ? needle : "");
    CU_assertImplementation(ok, (unsigned)line, expr, file, "", CU_FALSE);
}

int hn_run_tests(const char *suite_name, const hn_test_t *tests) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite suite = CU_add_suite(suite_name, NULL, NULL);
    if (suite == NULL) return 2;
    for (const hn_test_t *t = tests; t->name != NULL; t++)
        if (CU_add_test(suite, t->name, t->fn) == NULL) return 2;
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned ran = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    return failed == 0 && ran > 0 ? 0 : 1;
}

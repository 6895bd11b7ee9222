/* Status names and the thread-local error message. */
#include <pthread.h>
#include <string.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"

static void test_every_status_has_a_distinct_name(void) {
    for (int i = 0; i < HIDET_NCCL_NUM_STATUS; i++) {
        const char *a = hidet_nccl_status_string((hidet_nccl_status_t)i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT(strlen(a) > 0);
        CU_ASSERT_STRING_NOT_EQUAL(a, "unknown status");
        for (int j = 0; j < i; j++) CU_ASSERT_STRING_NOT_EQUAL(a, hidet_nccl_status_string((hidet_nccl_status_t)j));
    }
    CU_ASSERT_STRING_EQUAL(hidet_nccl_status_string(HIDET_NCCL_SUCCESS), "success");
}

static void test_unknown_status(void) {
    CU_ASSERT_STRING_EQUAL(hidet_nccl_status_string((hidet_nccl_status_t)-1), "unknown status");
    CU_ASSERT_STRING_EQUAL(hidet_nccl_status_string(HIDET_NCCL_NUM_STATUS), "unknown status");
    CU_ASSERT_STRING_EQUAL(hidet_nccl_status_string((hidet_nccl_status_t)12345), "unknown status");
}

static void test_message_names_function_and_value(void) {
    const char *name;
    HN_ASSERT_STATUS(hidet_nccl_dtype_name((hidet_nccl_dtype_t)99, &name), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "99");
    CU_ASSERT_PTR_NOT_NULL(strstr(hidet_nccl_last_error(), "hidet_nccl_dtype_name"));
}

static void test_success_clears_message(void) {
    const char *name;
    hidet_nccl_dtype_name((hidet_nccl_dtype_t)99, &name);
    CU_ASSERT(hidet_nccl_last_error()[0] != '\0');
    HN_ASSERT_STATUS(hidet_nccl_dtype_name(HIDET_NCCL_FLOAT32, &name), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(hidet_nccl_last_error(), "");
}

static void *other_thread(void *arg) {
    (void)arg;
    /* A failure in the main thread is not visible here. */
    int empty = hidet_nccl_last_error()[0] == '\0';
    hidet_nccl_op_t op;
    hidet_nccl_op_from_name("not-an-op", &op);
    int own = strstr(hidet_nccl_last_error(), "not-an-op") != NULL;
    return (void *)(long)(empty && own);
}

static void test_message_is_per_thread(void) {
    const char *name;
    hidet_nccl_dtype_name((hidet_nccl_dtype_t)77, &name);
    pthread_t t;
    void *ok = NULL;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, other_thread, NULL), 0);
    pthread_join(t, &ok);
    CU_ASSERT(ok != NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hidet_nccl_last_error(), "77"));
    CU_ASSERT_PTR_NULL(strstr(hidet_nccl_last_error(), "not-an-op"));
}

int main(void) {
    static const hn_test_t tests[] = {
        {"every status has a distinct name", test_every_status_has_a_distinct_name},
        {"unknown status", test_unknown_status},
        {"message names function and value", test_message_names_function_and_value},
        {"success clears the message", test_success_clears_message},
        {"message is per thread", test_message_is_per_thread},
        {NULL, NULL},
    };
    return hn_run_tests("status", tests);
}

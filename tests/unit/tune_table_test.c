/* The tuning table's text format (core/mem/tune_table.c): what it accepts, what a lookup picks,
 * and every malformed line refused with its line number. */
#include <stdio.h>
#include <string.h>

#include "core/mem/tune_table_int.h"
#include "tests/cunit_runner.h"

static int parse(const char *text, hn_tune_t *t, char *why) {
    return hidet_nccl__tune_parse(text, strlen(text), t, why, 256);
}

static void test_builtin_and_picks(void) {
    hn_tune_t t;
    char why[256] = "";
    const char *text = hidet_nccl__tune_default_text();
    CU_ASSERT_EQUAL_FATAL(parse(text, &t, why), 0);
    /* float32 has its own rows; every other dtype the "*" rows */
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_FLOAT32, 8), HN_VIEW_WINDOW);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_FLOAT32, 262145), HN_VIEW_PLAIN);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_FLOAT32, 16u << 20), HN_VIEW_WINDOW);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_BFLOAT16, 16u << 20), HN_VIEW_PLAIN);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_BFLOAT16, 2u << 20), HN_VIEW_WINDOW);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_GATHER, HIDET_NCCL_UINT8, 2u << 20), HN_VIEW_WINDOW);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_GATHER, HIDET_NCCL_UINT8, 1u << 30), HN_VIEW_BUFFER);
    /* the views AUTO makes siblings for: the built-in table takes both */
    CU_ASSERT_TRUE(hidet_nccl__tune_uses(&t, HN_VIEW_BUFFER));
    CU_ASSERT_TRUE(hidet_nccl__tune_uses(&t, HN_VIEW_WINDOW));
    /* equal texts, equal crc (what the ranks compare); another text, another crc */
    hn_tune_t u;
    CU_ASSERT_EQUAL_FATAL(parse(text, &u, why), 0);
    CU_ASSERT_EQUAL(t.crc, u.crc);
    CU_ASSERT_EQUAL_FATAL(parse("all_reduce * max buffer\n", &u, why), 0);
    CU_ASSERT_NOT_EQUAL(t.crc, u.crc);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&u, HN_TUNED_ALL_REDUCE, HIDET_NCCL_INT64, (size_t)-1), HN_VIEW_BUFFER);
    CU_ASSERT_TRUE(hidet_nccl__tune_uses(&u, HN_VIEW_BUFFER));
    CU_ASSERT_FALSE(hidet_nccl__tune_uses(&u, HN_VIEW_WINDOW));
    /* past the last range: plain; an empty table: plain */
    CU_ASSERT_EQUAL_FATAL(parse("# nothing but this\n\nreduce_scatter float64 100 window  # trailing comment", &u, why),
                          0);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&u, HN_TUNED_REDUCE_SCATTER, HIDET_NCCL_FLOAT64, 100), HN_VIEW_WINDOW);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&u, HN_TUNED_REDUCE_SCATTER, HIDET_NCCL_FLOAT64, 101), HN_VIEW_PLAIN);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&u, HN_TUNED_ALL_REDUCE, HIDET_NCCL_FLOAT64, 1), HN_VIEW_PLAIN);
    CU_ASSERT_TRUE(hidet_nccl__tune_uses(&u, HN_VIEW_WINDOW)); /* one dtype's one range is enough */
    CU_ASSERT_FALSE(hidet_nccl__tune_uses(&u, HN_VIEW_BUFFER));
    CU_ASSERT_EQUAL_FATAL(parse("all_reduce * max plain\n", &u, why), 0);
    CU_ASSERT_FALSE(hidet_nccl__tune_uses(&u, HN_VIEW_BUFFER));
    CU_ASSERT_FALSE(hidet_nccl__tune_uses(&u, HN_VIEW_WINDOW));
}

static void test_refusals(void) {
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"all_reduce float32 10 plain\nall_reduce float32 10 window\n", "line 2: the size is not above"},
        {"broadcast * max plain\n", "line 1: collective 'broadcast'"},
        {"all_reduce * max fast\n", "view 'fast'"},
        {"all_reduce float33 max plain\n", "dtype 'float33'"},
        {"all_reduce * 0 plain\n", "size '0'"},
        {"all_reduce * -5 plain\n", "size '-5'"},
        {"all_reduce * 12k plain\n", "size '12k'"},
        {"all_reduce * 99999999999999999999999 plain\n", "size '99999999999999999999999'"},
        {"all_reduce * max\n", "want 4 fields"},
        {"all_reduce * max plain extra\n", "want 4 fields"},
        {"\n\n\nall_reduce\n", "line 4: want 4 fields"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hn_tune_t t;
        char why[256] = "";
        CU_ASSERT_EQUAL(parse(bad[i].text, &t, why), -1);
        if (strstr(why, bad[i].why) == NULL) {
            fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, why, bad[i].why);
            CU_FAIL("message");
        }
    }
    char text[8192] = "";
    for (int i = 1; i <= 17; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "all_reduce * %d plain\n", i);
    hn_tune_t t;
    char why[256] = "";
    CU_ASSERT_EQUAL(parse(text, &t, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 17: more than 16 ranges"));
    char nul[] = "all_reduce * max plain\nall_reduce\0* max plain\n";
    CU_ASSERT_EQUAL(hidet_nccl__tune_parse(nul, sizeof nul - 1, &t, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 2: a NUL byte"));
    char longline[400];
    memset(longline, ' ', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    CU_ASSERT_EQUAL(parse(longline, &t, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "longer than 255 bytes"));
}

int main(void) {
    static const hn_test_t tests[] = {
        {"the built-in table and what lookups pick", test_builtin_and_picks},
        {"malformed tables refused with the line", test_refusals},
        {NULL, NULL},
    };
    return hn_run_tests("tune_table", tests);
}

/* The tuning table's text format (core/mem/tune_table.c): what it accepts, what a lookup picks,
 * every malformed line refused with its line number; and HIDET_NCCL_TUNE_FILE: a FIFO, a
 * directory, a file others can write or another user owns refused, at once, naming the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/mem/tune_table_int.h"
#include "tests/cunit_runner.h"

static char g_dir[1024];

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
        /* whole fields: sscanf's %31s read this one as size 1, view buffer */
        {"all_reduce float32 0000000000000000000000000000001buffer\n",
         "line 1: field 3 ('0000000000000000000000000000001...', 37 bytes) is longer than 31 bytes"},
        {"# a table\nall_reduce float32 00000000000000000000000000000001 plain\n", "line 2: field 3"},
        {"all_reduce_all_reduce_all_reduce * max plain\n", "line 1: field 1 ('all_reduce_all_reduce_all_reduc..."},
        {"all_reduce * max plainplainplainplainplainplainplain\n", "line 1: field 4"},
        {"all_reduce * max plain 0123456789012345678901234567890123456789\n", "line 1: field 5"},
        /* a byte count is decimal digits, nothing else strtoull would take */
        {"all_reduce * +5 plain\n", "size '+5'"},
        {"all_reduce * 0x10 plain\n", "size '0x10'"},
        {"all_reduce * 1e6 plain\n", "size '1e6'"},
        {"all_reduce * 000 plain\n", "size '000'"},
        {"all_reduce * 18446744073709551615 plain\n", "size '18446744073709551615'"}, /* SIZE_MAX is max */
        {"all_reduce * 18446744073709551616 plain\n", "size '18446744073709551616'"},
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

/* Fields up to 31 bytes, split at any blank; sizes up to SIZE_MAX - 1 (SIZE_MAX is max). */
static void test_whole_fields_accepted(void) {
    hn_tune_t t;
    char why[256] = "";
    CU_ASSERT_EQUAL_FATAL(parse("\tall_reduce\t*\v0000000000000000000000000000064\f window \r\n", &t, why), 0);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_INT8, 64), HN_VIEW_WINDOW);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_INT8, 65), HN_VIEW_PLAIN);
    CU_ASSERT_EQUAL_FATAL(parse("all_gather * 18446744073709551614 buffer\n", &t, why), 0);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_GATHER, HIDET_NCCL_INT8, SIZE_MAX - 1), HN_VIEW_BUFFER);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_GATHER, HIDET_NCCL_INT8, SIZE_MAX), HN_VIEW_PLAIN);
}

/* The own kernels' views: all_reduce only; AUTO makes their workspace only for a table that
 * takes one. */
static void test_own_views(void) {
    hn_tune_t t;
    char why[256] = "";
    CU_ASSERT_EQUAL_FATAL(parse("all_reduce * 65536 own1\nall_reduce * 4194304 own2\nall_reduce * max plain\n"
                                "all_reduce float64 max window\n",
                                &t, why),
                          0);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_FLOAT32, 8), HN_VIEW_OWN1);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_BFLOAT16, 65536), HN_VIEW_OWN1);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_BFLOAT16, 65537), HN_VIEW_OWN2);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_BFLOAT16, 4194305), HN_VIEW_PLAIN);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_REDUCE, HIDET_NCCL_FLOAT64, 8), HN_VIEW_WINDOW);
    CU_ASSERT_EQUAL(hidet_nccl__tune_pick(&t, HN_TUNED_ALL_GATHER, HIDET_NCCL_FLOAT32, 8), HN_VIEW_PLAIN);
    CU_ASSERT_TRUE(hidet_nccl__tune_uses(&t, HN_VIEW_OWN1));
    CU_ASSERT_TRUE(hidet_nccl__tune_uses(&t, HN_VIEW_OWN2));
    CU_ASSERT_FALSE(hidet_nccl__tune_uses(&t, HN_VIEW_BUFFER));
    CU_ASSERT_STRING_EQUAL(hidet_nccl__view_name(HN_VIEW_OWN2), "own2");
    CU_ASSERT_TRUE(hidet_nccl__view_is_own(HN_VIEW_OWN1) && !hidet_nccl__view_is_own(HN_VIEW_WINDOW));
    CU_ASSERT_EQUAL(parse("all_reduce * 8 plain\nall_gather * 1024 own1\n", &t, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 2: view 'own1' (the library's own kernels) is for all_reduce only, not "
                                       "all_gather"));
    CU_ASSERT_EQUAL(parse("reduce_scatter float32 max own2\n", &t, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 1: view 'own2'"));
    CU_ASSERT_EQUAL(parse("all_reduce * max own3\n", &t, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "view 'own3' is not"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "own1"));
}

static void write_file(const char *path, const char *text, size_t len, mode_t mode) {
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(text, 1, len, f), len);
    fclose(f);
    CU_ASSERT_EQUAL(chmod(path, mode), 0);
}

/* hidet_nccl__tune_load(path): 0 if ok, else the message must hold "<path>: <needle>". */
static void expect_load(const char *path, int ok, const char *needle) {
    hn_tune_t t;
    char why[2048] = "", want[2048];
    int rc = hidet_nccl__tune_load(path, &t, why, sizeof why);
    snprintf(want, sizeof want, "%s: %s", path, needle ? needle : "");
    if (rc != (ok ? 0 : -1) || (!ok && strstr(why, want) == NULL)) {
        fprintf(stderr, "loading %s gave %d '%s'; wanted %d '%s'\n", path, rc, why, ok ? 0 : -1, want);
        CU_FAIL("tune_load");
    }
}

/* HIDET_NCCL_TUNE_FILE naming a FIFO, as the first AUTO registration reads it: refused at once.
 * open() without O_NONBLOCK waited for a writer that never came (this test timed out). */
static void test_fifo_through_the_setting(void) {
    char path[1100];
    snprintf(path, sizeof path, "%s/fifo_setting", g_dir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
    setenv("HIDET_NCCL_TUNE_FILE", path, 1);
    hidet_nccl_settings_reload();
    const hn_tune_t *t = NULL;
    char needle[1200];
    snprintf(needle, sizeof needle, "HIDET_NCCL_TUNE_FILE %s: a FIFO, not a regular file", path);
    HN_ASSERT_STATUS(hidet_nccl__tune_get(&t), HIDET_NCCL_ERROR_INVALID_ARGUMENT, needle);
    unsetenv("HIDET_NCCL_TUNE_FILE");
    hidet_nccl_settings_reload();
    unlink(path);
}

static void test_file_checks(void) {
    static const char good[] = "all_reduce * max window\n";
    char path[1100], link[1200], fifo[1100];
    snprintf(path, sizeof path, "%s/good", g_dir);
    write_file(path, good, sizeof good - 1, 0644);
    expect_load(path, 1, NULL);
    snprintf(link, sizeof link, "%s/link_to_good", g_dir); /* a link to one's own table is followed */
    CU_ASSERT_EQUAL(symlink(path, link), 0);
    expect_load(link, 1, NULL);
    unlink(link);
    snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    expect_load(fifo, 0, "a FIFO, not a regular file");
    CU_ASSERT_EQUAL(symlink(fifo, link), 0); /* what is checked is what the link names */
    expect_load(link, 0, "a FIFO, not a regular file");
    unlink(link);
    unlink(fifo);
    expect_load(g_dir, 0, "a directory, not a regular file");
    expect_load("/dev/null", 0, "a character device, not a regular file");
    CU_ASSERT_EQUAL(chmod(path, 0664), 0);
    expect_load(path, 0, "writable by its group (mode 0664); chmod go-w it");
    CU_ASSERT_EQUAL(chmod(path, 0646), 0);
    expect_load(path, 0, "writable by others (mode 0646)");
    CU_ASSERT_EQUAL(chmod(path, 0400), 0); /* read-only to its owner: fine */
    expect_load(path, 1, NULL);
    if (geteuid() == 0) { /* root can give a file away: one of another user's is refused */
        CU_ASSERT_EQUAL(chmod(path, 0644), 0);
        CU_ASSERT_EQUAL_FATAL(chown(path, 65534, 65534), 0);
        expect_load(path, 0, "owned by uid 65534, neither this user (uid 0) nor root");
    } else {
        fprintf(stderr, "not root: a file of another user is not made here (root's own files are trusted)\n");
    }
    unlink(path);
    expect_load(path, 0, "cannot open it: No such file or directory");
    size_t big = (1 << 20) + 1;
    char *text = malloc(big);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    memset(text, '#', big);
    write_file(path, text, big, 0600);
    expect_load(path, 0, "1048577 bytes, more than the 1048576 (1 MiB) a table may have");
    write_file(path, text, big - 1, 0600); /* 1 MiB: read and parsed (no table that long parses) */
    expect_load(path, 0, "line 1: longer than 255 bytes");
    free(text);
    static const char hostile[] = "all_reduce float32 0000000000000000000000000000001buffer\n";
    write_file(path, hostile, sizeof hostile - 1, 0600);
    expect_load(path, 0, "line 1: field 3");
    unlink(path);
}

int main(void) {
    const char *tmp = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%.900s/tuneXXXXXX", tmp);
    if (mkdtemp(g_dir) == NULL) {
        fprintf(stderr, "cannot make a directory in %s\n", tmp);
        return 1;
    }
    static const hn_test_t tests[] = {
        {"the built-in table and what lookups pick", test_builtin_and_picks},
        {"malformed tables refused with the line", test_refusals},
        {"whole fields and sizes up to SIZE_MAX - 1 accepted", test_whole_fields_accepted},
        {"the own kernels' views: all_reduce only", test_own_views},
        {"HIDET_NCCL_TUNE_FILE naming a FIFO refused at once", test_fifo_through_the_setting},
        {"the tuning file: a regular file of this user, no one else can write", test_file_checks},
        {NULL, NULL},
    };
    return hn_run_tests("tune_table", tests);
}

/* Settings read once from the environment (values, defaults, sources, bad values named), the
 * launchers' rank variables in their one order, and size-versioned structs that grow. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/base/settings_int.h"
#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"

static void set_env(const char *name, const char *value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
}

static void test_values_defaults_sources(void) {
    set_env("HIDET_NCCL_TIMEOUT", NULL);
    set_env("HIDET_NCCL_POLL_MAX_MS", "40");
    HN_ASSERT_STATUS(hidet_nccl_settings_reload(), HIDET_NCCL_SUCCESS, NULL);
    const char *v, *src;
    HN_ASSERT_STATUS(hidet_nccl_setting("HIDET_NCCL_TIMEOUT", &v, &src), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(v, "300");
    CU_ASSERT_STRING_EQUAL(src, "default");
    HN_ASSERT_STATUS(hidet_nccl_setting("HIDET_NCCL_POLL_MAX_MS", &v, &src), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(v, "40");
    CU_ASSERT_STRING_EQUAL(src, "environment");
    int ms = 0;
    HN_ASSERT_STATUS(hidet_nccl__setting_int(HN_SETTING_POLL_MAX_MS, &ms), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(ms, 40);
    HN_ASSERT_STATUS(hidet_nccl_setting("HIDET_NCCL_JOB_KEY", &v, &src), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_PTR_NULL(v);
    CU_ASSERT_STRING_EQUAL(src, "unset");
    HN_ASSERT_STATUS(hidet_nccl_setting("HIDET_NCCL_TIMEOUTS", &v, &src), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "'HIDET_NCCL_TIMEOUTS' is not a variable the library reads");
    HN_ASSERT_STATUS(hidet_nccl_setting(NULL, &v, &src), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "name");
    /* Read once: a change of the environment counts from the next reload on. */
    set_env("HIDET_NCCL_POLL_MAX_MS", "7");
    HN_ASSERT_STATUS(hidet_nccl_setting("HIDET_NCCL_POLL_MAX_MS", &v, NULL), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(v, "40");
    const char *old = v;
    HN_ASSERT_STATUS(hidet_nccl_settings_reload(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_setting("HIDET_NCCL_POLL_MAX_MS", &v, NULL), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(v, "7");
    CU_ASSERT_STRING_EQUAL(old, "40"); /* strings handed out stay valid */
    set_env("HIDET_NCCL_POLL_MAX_MS", NULL);
    hidet_nccl_settings_reload();
}

/* Every bad value is an error of the calls that need it, naming the variable and the value. */
static void test_bad_values_named(void) {
    static const struct {
        const char *name, *value;
        hn_setting_t id;
    } bad[] = {
        {"HIDET_NCCL_TIMEOUT", "soon", HN_SETTING_TIMEOUT},     {"HIDET_NCCL_TIMEOUT", "0", HN_SETTING_TIMEOUT},
        {"HIDET_NCCL_TIMEOUT", "-1", HN_SETTING_TIMEOUT},       {"HIDET_NCCL_TIMEOUT", "nan", HN_SETTING_TIMEOUT},
        {"HIDET_NCCL_TIMEOUT", "1e99", HN_SETTING_TIMEOUT},     {"HIDET_NCCL_TIMEOUT", "1e8", HN_SETTING_TIMEOUT},
        {"HIDET_NCCL_TIMEOUT", "inf", HN_SETTING_TIMEOUT},     {"HIDET_NCCL_POLL_MAX_MS", "0", HN_SETTING_POLL_MAX_MS},
        {"HIDET_NCCL_POLL_MAX_MS", "2.5", HN_SETTING_POLL_MAX_MS}, {"HIDET_NCCL_NONBLOCKING", "yes", HN_SETTING_NONBLOCKING},
        /* one grammar (core/base/number.h): digits only, what strtod and atoi read otherwise */
        {"MASTER_PORT", "3e4", HN_SETTING_MASTER_PORT},          {"MASTER_PORT", "0x7531", HN_SETTING_MASTER_PORT},
        {"MASTER_PORT", " 29500", HN_SETTING_MASTER_PORT},       {"MASTER_PORT", "29500 ", HN_SETTING_MASTER_PORT},
        {"MASTER_PORT", "+29500", HN_SETTING_MASTER_PORT},       {"MASTER_PORT", "65536", HN_SETTING_MASTER_PORT},
        {"HIDET_NCCL_POLL_MAX_MS", "0x64", HN_SETTING_POLL_MAX_MS}, {"HIDET_NCCL_TRACE_ENTRIES", "1e3", HN_SETTING_TRACE_ENTRIES},
        {"HIDET_NCCL_TRACE_ENTRIES", "99999999999999999999999", HN_SETTING_TRACE_ENTRIES},
        {"HIDET_NCCL_TIMEOUT", " 5", HN_SETTING_TIMEOUT},        {"HIDET_NCCL_TIMEOUT", "0x1p3", HN_SETTING_TIMEOUT},
        {"HIDET_NCCL_TIMEOUT", "5.", HN_SETTING_TIMEOUT},        {"HIDET_NCCL_TIMEOUT", ".5", HN_SETTING_TIMEOUT},
        {"HIDET_NCCL_TIMEOUT", "1.2.3", HN_SETTING_TIMEOUT},     {"HIDET_NCCL_TIMEOUT", "0", HN_SETTING_TIMEOUT},
        {"HIDET_NCCL_RANKS_PER_ROOT", "", HN_SETTING_RANKS_PER_ROOT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set_env(bad[i].name, bad[i].value);
        hidet_nccl_settings_reload();
        if (bad[i].value[0] == '\0') { /* empty is unset: the default */
            CU_ASSERT_PTR_NULL(hidet_nccl__setting_error(bad[i].id));
            set_env(bad[i].name, NULL);
            continue;
        }
        char needle[128];
        snprintf(needle, sizeof needle, "%s='%s'", bad[i].name, bad[i].value);
        double x;
        HN_ASSERT_STATUS(hidet_nccl__setting_double(bad[i].id, &x), HIDET_NCCL_ERROR_INVALID_ARGUMENT, needle);
        const char *v;
        HN_ASSERT_STATUS(hidet_nccl_setting(bad[i].name, &v, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, needle);
        CU_ASSERT_PTR_NOT_NULL(hidet_nccl__setting_error(bad[i].id));
        set_env(bad[i].name, NULL);
    }
    set_env("HIDET_NCCL_TIMEOUT", "2.5");
    hidet_nccl_settings_reload();
    double t = 0;
    HN_ASSERT_STATUS(hidet_nccl__timeout_seconds(&t), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_DOUBLE_EQUAL(t, 2.5, 1e-12);
    set_env("HIDET_NCCL_TIMEOUT", NULL);
    /* What the parser accepts is what is used. */
    set_env("MASTER_PORT", "29500");
    set_env("HIDET_NCCL_POLL_MAX_MS", "100");
    hidet_nccl_settings_reload();
    int port = 0, ms = 0;
    HN_ASSERT_STATUS(hidet_nccl__setting_int(HN_SETTING_MASTER_PORT, &port), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl__setting_int(HN_SETTING_POLL_MAX_MS, &ms), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(port, 29500);
    CU_ASSERT_EQUAL(ms, 100);
    set_env("MASTER_PORT", NULL);
    set_env("HIDET_NCCL_POLL_MAX_MS", NULL);
    /* A bad debug level: logging goes on at WARN, and the public getter says the value is bad. */
    set_env("HIDET_NCCL_DEBUG", "LOUD");
    hidet_nccl_settings_reload();
    CU_ASSERT_EQUAL(hidet_nccl__log_level(), HN_LOG_WARN);
    const char *level = NULL;
    HN_ASSERT_STATUS(hidet_nccl_setting("HIDET_NCCL_DEBUG", &level, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "HIDET_NCCL_DEBUG='LOUD'");
    CU_ASSERT_STRING_EQUAL(level, "WARN");
    set_env("HIDET_NCCL_DEBUG", "trace");
    hidet_nccl_settings_reload();
    CU_ASSERT_EQUAL(hidet_nccl__log_level(), HN_LOG_TRACE);
    set_env("HIDET_NCCL_DEBUG", NULL);
    hidet_nccl_settings_reload();
}

/* A bad number's message (issue 38, items 12 and 13): the range in the decimal digits it asks for,
 * never an exponent ("0 .. 1.04858e+06"), and no "default (null)" for a setting without one. */
static void test_bad_number_messages(void) {
    static const struct {
        const char *name, *value, *range, *tail;
        hn_setting_t id;
    } bad[] = {
        {"MASTER_PORT", "3e4", "in 1 .. 65535 (", "; no default)", HN_SETTING_MASTER_PORT},
        {"HIDET_NCCL_TRACE_ENTRIES", "1e3", "in 0 .. 1048576 (", "; default 2048)", HN_SETTING_TRACE_ENTRIES},
        {"HIDET_NCCL_RANKS_PER_ROOT", "x", "in 1 .. 1073741824 (", "; default 128)", HN_SETTING_RANKS_PER_ROOT},
        {"HIDET_NCCL_TIMEOUT", "soon", "up to 10000000, in digits (", "; default 300)", HN_SETTING_TIMEOUT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set_env(bad[i].name, bad[i].value);
        hidet_nccl_settings_reload();
        const char *err = hidet_nccl__setting_error(bad[i].id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(err);
        size_t len = strlen(err), tail = strlen(bad[i].tail);
        if (strstr(err, bad[i].range) == NULL || strstr(err, "(null)") != NULL || strstr(err, "e+") != NULL ||
            len < tail || strcmp(err + len - tail, bad[i].tail) != 0) {
            fprintf(stderr, "%s: want '%s' and the end '%s', no '(null)' and no exponent\n", err, bad[i].range,
                    bad[i].tail);
            CU_FAIL("a bad number's message");
        }
        set_env(bad[i].name, NULL);
    }
    hidet_nccl_settings_reload();
}

static const char *const k_rank_vars[] = {
    "HIDET_NCCL_RANK", "HIDET_NCCL_WORLD_SIZE", "HIDET_NCCL_LOCAL_RANK", "HIDET_NCCL_LOCAL_WORLD_SIZE", "RANK",
    "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
    "SLURM_NTASKS_PER_NODE", "PMI_RANK", "PMI_SIZE", "PMI_LOCAL_RANK", "MPI_LOCALRANKID", NULL};

static void clear_rank_vars(void) {
    for (int i = 0; k_rank_vars[i]; i++) unsetenv(k_rank_vars[i]);
}

/* The innermost launcher first: hidet-nccl-run, torchrun, then MPI launchers, then Slurm. */
static void test_launcher_order(void) {
    clear_rank_vars();
    set_env("SLURM_PROCID", "5");
    set_env("SLURM_NTASKS", "8");
    set_env("SLURM_LOCALID", "1");
    set_env("OMPI_COMM_WORLD_RANK", "2");
    set_env("OMPI_COMM_WORLD_SIZE", "4");
    hidet_nccl_settings_reload();
    hn_hints_t h;
    HN_ASSERT_STATUS(hidet_nccl__launcher_hints(&h), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(h.rank == 2 && h.nranks == 4);     /* mpirun inside a Slurm allocation */
    CU_ASSERT(h.local_rank == 1 && h.local_size == -1);
    CU_ASSERT_STRING_EQUAL(h.local_source, "$SLURM_LOCALID");
    CU_ASSERT_EQUAL(hidet_nccl__launcher_rank(), 2);
    set_env("RANK", "6");
    set_env("WORLD_SIZE", "16");
    set_env("LOCAL_RANK", "3");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl__launcher_hints(&h), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(h.rank == 6 && h.nranks == 16 && h.local_rank == 3); /* torchrun inside srun */
    CU_ASSERT_PTR_NOT_NULL(strstr(h.source, "torchrun"));
    set_env("HIDET_NCCL_RANK", "0");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl__launcher_hints(&h), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(h.rank == 0 && h.nranks == -1); /* never another launcher's world size */
    CU_ASSERT_PTR_NOT_NULL(strstr(h.source, "HIDET_NCCL_WORLD_SIZE is not set"));
    const char *v;
    HN_ASSERT_STATUS(hidet_nccl_setting("SLURM_PROCID", &v, NULL), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(v, "5");
    set_env("LOCAL_RANK", "-1");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl__launcher_hints(&h), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "LOCAL_RANK='-1'");
    clear_rank_vars();
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl__launcher_hints(&h), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(h.rank == -1 && h.nranks == -1 && h.local_rank == -1);
    CU_ASSERT_EQUAL(hidet_nccl__launcher_rank(), -1);
}

/* No pause of the poller passes its deadline (issue 15, item 10): a 100 s cap under a 0.2 s
 * deadline pauses at most until the deadline (the bound here is loose: 5 s). */
static void test_poll_pause_stops_at_deadline(void) {
    hn_poll_t poll;
    hidet_nccl__poll_begin(&poll, 0.2, 0, 100000000000L, 100000000000L, 1);
    double start = hidet_nccl__now();
    hidet_nccl__poll_pause(&poll);
    CU_ASSERT(hidet_nccl__now() - start < 5);
    CU_ASSERT(hidet_nccl__poll_waited(&poll) >= 0.2 - 1e-3 || !hidet_nccl__poll_expired(&poll));
    hidet_nccl__poll_pause(&poll); /* past the deadline: no pause at all */
    CU_ASSERT(hidet_nccl__now() - start < 5);
}

/* A caller's deadline: 0 is the setting's; NaN, infinite, negative and absurd are refused with
 * the limit (issue 15, item 9). */
static void test_deadline_seconds(void) {
    double t = -7;
    HN_ASSERT_STATUS(hidet_nccl__deadline_seconds(0, "x", &t), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_DOUBLE_EQUAL(t, 300, 1e-9);
    HN_ASSERT_STATUS(hidet_nccl__deadline_seconds(2.5, "x", &t), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_DOUBLE_EQUAL(t, 2.5, 1e-9);
    const double bad[] = {NAN, INFINITY, -INFINITY, -0.5, 1e7 * 1.0001, 1e308};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        HN_ASSERT_STATUS(hidet_nccl__deadline_seconds(bad[i], "options->timeout_s", &t),
                         HIDET_NCCL_ERROR_INVALID_ARGUMENT, "options->timeout_s");
    HN_ASSERT_STATUS(hidet_nccl__deadline_seconds(INFINITY, "w", &t), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "(0, 1e+07]");
}

typedef struct {
    size_t size;
    int a;
    double b;
} small_t;
typedef struct {
    size_t size;
    int a;
    double b;
    int c;     /* added later */
    double d;  /* added later */
} big_t;

static void test_copy_sized(void) {
    char why[512];
    big_t ours = {sizeof ours, -1, -1, 77, 88};
    small_t old = {sizeof old, 3, 4.5};
    CU_ASSERT_EQUAL(hidet_nccl__copy_sized(&ours, sizeof ours, &old, "params", why, sizeof why), 0);
    CU_ASSERT(ours.a == 3 && ours.b == 4.5 && ours.c == 77 && ours.d == 88); /* newer fields keep defaults */
    CU_ASSERT_EQUAL(ours.size, sizeof ours);
    /* A newer struct than ours: fine while what we do not know is zero. */
    small_t mine = {sizeof mine, -1, -1};
    big_t newer;
    memset(&newer, 0, sizeof newer);
    newer.size = sizeof newer;
    newer.a = 9;
    CU_ASSERT_EQUAL(hidet_nccl__copy_sized(&mine, sizeof mine, &newer, "params", why, sizeof why), 0);
    CU_ASSERT_EQUAL(mine.a, 9);
    newer.d = 1.0;
    CU_ASSERT_EQUAL(hidet_nccl__copy_sized(&mine, sizeof mine, &newer, "params", why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "newer hidet-nccl"));
    newer.size = 3;
    CU_ASSERT_EQUAL(hidet_nccl__copy_sized(&mine, sizeof mine, &newer, "params", why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "params->size is 3"));
}

/* The public structs: an older (smaller) one is taken with defaults for the rest, a newer one
 * only with zeros past what this library knows. */
static void test_public_structs_grow(void) {
    clear_rank_vars();
    char dir[] = "/tmp/hidet-nccl-settings-test-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    set_env("HIDET_NCCL_RANK", "1");
    set_env("HIDET_NCCL_WORLD_SIZE", "3");
    hidet_nccl_settings_reload();
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.job_key = "grow";
    p.rank = 0;
    p.nranks = 2;
    hidet_nccl_bootstrap_h bs = NULL;
    p.size = offsetof(hidet_nccl_file_bootstrap_params_t, rank); /* a program built when only dir and key existed */
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_SUCCESS, NULL);
    int rank = -1, size = -1;
    hidet_nccl_bootstrap_rank(bs, &rank, &size);
    CU_ASSERT(rank == 1 && size == 3); /* rank and nranks past its size: from the environment */
    hidet_nccl_bootstrap_destroy(bs);
    struct {
        hidet_nccl_file_bootstrap_params_t known;
        int future;
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.known = p;
    newer.known.size = sizeof newer;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&newer.known, &bs), HIDET_NCCL_SUCCESS, NULL);
    hidet_nccl_bootstrap_rank(bs, &rank, &size);
    CU_ASSERT(rank == 0 && size == 2);
    hidet_nccl_bootstrap_destroy(bs);
    newer.future = 5;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&newer.known, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "newer hidet-nccl");
    p.size = 2;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "params->size is 2");
    /* The init options likewise, checked before any GPU is touched. */
    p.size = sizeof p;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_SUCCESS, NULL);
    struct {
        hidet_nccl_init_options_t known;
        double future;
    } opt;
    memset(&opt, 0, sizeof opt);
    opt.known.size = sizeof opt;
    opt.future = 2.0;
    int id;
    HN_ASSERT_STATUS(hidet_nccl_comm_init(bs, &opt.known, &id), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "options->size");
    hidet_nccl_init_options_t tiny = HIDET_NCCL_INIT_OPTIONS_INIT;
    tiny.size = 4;
    HN_ASSERT_STATUS(hidet_nccl_comm_init(bs, &tiny, &id), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "options->size is 4");
    hidet_nccl_bootstrap_destroy(bs);
    clear_rank_vars();
    hidet_nccl_settings_reload();
    rmdir(dir);
}

int main(void) {
    static const hn_test_t tests[] = {
        {"values, defaults and sources, read once", test_values_defaults_sources},
        {"bad values named", test_bad_values_named},
        {"a bad number's message: its range in digits, its default", test_bad_number_messages},
        {"the launchers' rank variables in one order", test_launcher_order},
        {"copying size-versioned structs", test_copy_sized},
        {"a poll pause stops at the deadline", test_poll_pause_stops_at_deadline},
        {"deadlines checked", test_deadline_seconds},
        {"public structs that grow", test_public_structs_grow},
        {NULL, NULL},
    };
    return hn_run_tests("settings", tests);
}

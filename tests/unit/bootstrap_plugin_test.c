/* Version 2 bootstrap plug-ins, written against the public header alone: one given directly
 * (what its init is told: the deadline and the launcher's rank hints), bad ones refused, one
 * loaded from a shared object (also through HIDET_NCCL_BOOTSTRAP). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"

static const char *g_v2_so;

static hidet_nccl_bootstrap_init_args_t g_args; /* what the last init was told */
static char g_hint_source[512];

static hidet_nccl_status_t ok_init(const void *p, const hidet_nccl_bootstrap_init_args_t *a, void **s, char *m,
                                   size_t n) {
    (void)p, (void)m, (void)n;
    g_args = *a;
    snprintf(g_hint_source, sizeof g_hint_source, "%s", a->hint_source);
    *s = NULL;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t rs(void *s, int *r, int *z, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    *r = 0;
    *z = 1;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t lr(void *s, int *r, int *z, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    *r = *z = -1;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t bc(void *s, void *b, size_t k, int root, uint64_t t, double to, char *m, size_t n) {
    (void)s, (void)b, (void)k, (void)root, (void)t, (void)to, (void)m, (void)n;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t ag(void *s, const void *in, void *out, size_t k, uint64_t t, double to, char *m, size_t n) {
    (void)s, (void)t, (void)to, (void)m, (void)n;
    memmove(out, in, k);
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t fin(void *s, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    return HIDET_NCCL_SUCCESS;
}

static const hidet_nccl_bootstrap_t k_good = {
    .name = "mine2",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = ok_init,
    .rank_size = rs,
    .local_rank = lr,
    .broadcast = bc,
    .allgather = ag,
    .finalize = fin,
};

static void set_env(const char *name, const char *value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
}

static void test_good_plugin_given(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_good, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    const char *name;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_name(bs, &name), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(name, "mine2");
    char send[4] = "abc", recv[4] = "";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_allgather(bs, send, recv, 4, 1), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(recv, "abc");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_allgather(bs, NULL, recv, 4, 1), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "send");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, send, 4, 0, 1), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
}

/* init gets HIDET_NCCL_TIMEOUT and the first launcher's variables, in the library's order. */
static void test_init_args(void) {
    set_env("HIDET_NCCL_TIMEOUT", "7.5");
    set_env("HIDET_NCCL_RANK", "3");
    set_env("HIDET_NCCL_WORLD_SIZE", "4");
    set_env("SLURM_PROCID", "9"); /* an outer launcher: hidet-nccl-run's variables win */
    set_env("SLURM_NTASKS", "16");
    set_env("SLURM_LOCALID", "5");
    set_env("HIDET_NCCL_LOCAL_RANK", NULL);
    set_env("LOCAL_RANK", "1"); /* torchrun's local rank comes before Slurm's */
    set_env("LOCAL_WORLD_SIZE", "2");
    hidet_nccl_settings_reload();
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_good, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    hidet_nccl_bootstrap_destroy(bs);
    CU_ASSERT_EQUAL(g_args.size, sizeof(hidet_nccl_bootstrap_init_args_t));
    CU_ASSERT_DOUBLE_EQUAL(g_args.timeout_s, 7.5, 1e-9);
    CU_ASSERT_EQUAL(g_args.rank, 3);
    CU_ASSERT_EQUAL(g_args.nranks, 4);
    CU_ASSERT_EQUAL(g_args.local_rank, 1);
    CU_ASSERT_EQUAL(g_args.local_size, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_hint_source, "HIDET_NCCL_RANK"));
    /* Without hidet-nccl-run's variables Slurm's give the rank. */
    set_env("HIDET_NCCL_RANK", NULL);
    set_env("HIDET_NCCL_WORLD_SIZE", NULL);
    set_env("LOCAL_RANK", NULL);
    set_env("LOCAL_WORLD_SIZE", NULL);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_good, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    hidet_nccl_bootstrap_destroy(bs);
    CU_ASSERT_EQUAL(g_args.rank, 9);
    CU_ASSERT_EQUAL(g_args.nranks, 16);
    CU_ASSERT_EQUAL(g_args.local_rank, 5);
    CU_ASSERT_EQUAL(g_args.local_size, -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_hint_source, "Slurm"));
    /* A malformed variable of the launcher in use is an error naming it, before init runs. */
    set_env("SLURM_PROCID", "nine");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_good, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "SLURM_PROCID='nine'");
    set_env("HIDET_NCCL_TIMEOUT", "never");
    set_env("SLURM_PROCID", NULL);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_good, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "HIDET_NCCL_TIMEOUT='never'");
    set_env("HIDET_NCCL_TIMEOUT", NULL);
    set_env("SLURM_NTASKS", NULL);
    set_env("SLURM_LOCALID", NULL);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_good, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    hidet_nccl_bootstrap_destroy(bs);
    CU_ASSERT_EQUAL(g_args.rank, -1);
    CU_ASSERT_DOUBLE_EQUAL(g_args.timeout_s, 300, 1e-9);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_hint_source, "no launcher's rank variable is set"));
}

/* A plug-in that fills the message to its last byte, with no NUL (issue 15, item 16): the
 * library's message ends inside the buffer (ASan sees any read past it). */
static hidet_nccl_status_t bc_unterminated(void *s, void *b, size_t k, int root, uint64_t t, double to, char *m,
                                           size_t n) {
    (void)s, (void)b, (void)k, (void)root, (void)t, (void)to;
    memset(m, 'x', n);
    return HIDET_NCCL_ERROR_BOOTSTRAP;
}

static void test_unterminated_message(void) {
    hidet_nccl_bootstrap_t ops = k_good;
    ops.broadcast = bc_unterminated;
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&ops, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    char buf[4] = "abc";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, buf, 4, 0, 1), HIDET_NCCL_ERROR_BOOTSTRAP,
                     "broadcast failed: xxxxxxxx");
    const char *last = hidet_nccl_last_error();
    const char *x = strstr(last, "xxxx");
    CU_ASSERT(x != NULL && strspn(x, "x") < 2048); /* cut at the buffer's last byte */
    hidet_nccl_bootstrap_destroy(bs);
}

/* NaN, infinite, negative and absurd deadlines are refused with the limit, before the
 * backend runs (issue 15, item 9); 0 is the setting's. */
static void test_bad_deadlines(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_good, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    char buf[4] = "abc", all[4];
    const double bad[] = {NAN, INFINITY, -INFINITY, -1, 1e19, 1.5e7};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, buf, 4, 0, bad[i]), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                         "is not a number of seconds in (0, 1e+07]");
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_allgather(bs, buf, all, 4, bad[i]), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                         "timeout_s");
        hidet_nccl_init_options_t opt = HIDET_NCCL_INIT_OPTIONS_INIT;
        opt.timeout_s = bad[i];
        int id;
        HN_ASSERT_STATUS(hidet_nccl_comm_init(bs, &opt, &id), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                         "options->timeout_s");
        HN_ASSERT_STATUS(hidet_nccl_comm_wait(0, NULL, bad[i]), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "timeout_s");
    }
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, buf, 4, 0, 0), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, buf, 4, 0, 1e7), HIDET_NCCL_SUCCESS, NULL);
    hidet_nccl_bootstrap_destroy(bs);
    set_env("HIDET_NCCL_TIMEOUT", "1e19");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_good, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "HIDET_NCCL_TIMEOUT='1e19'");
    set_env("HIDET_NCCL_TIMEOUT", NULL);
    hidet_nccl_settings_reload();
}

/* Rank hints out of range are refused (issue 15, item 17). */
static void test_hints_in_range(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    const struct {
        const char *vars[4];
        const char *needle;
    } bad[] = {
        {{"HIDET_NCCL_RANK", "1", "HIDET_NCCL_WORLD_SIZE", "1"}, "rank 1 of 1 ranks"},
        {{"HIDET_NCCL_RANK", " 1", "HIDET_NCCL_WORLD_SIZE", "2"}, "HIDET_NCCL_RANK=' 1'"},
        {{"HIDET_NCCL_LOCAL_RANK", "5", "HIDET_NCCL_LOCAL_WORLD_SIZE", "2"}, "local rank 5 of local size 2"},
        {{"HIDET_NCCL_LOCAL_RANK", "0", "HIDET_NCCL_LOCAL_WORLD_SIZE", "0"}, "local rank 0 of local size 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set_env(bad[i].vars[0], bad[i].vars[1]);
        set_env(bad[i].vars[2], bad[i].vars[3]);
        hidet_nccl_settings_reload();
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_good, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                         bad[i].needle);
        set_env(bad[i].vars[0], NULL);
        set_env(bad[i].vars[2], NULL);
    }
    hidet_nccl_settings_reload();
}

static void test_bad_plugins_refused(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    hidet_nccl_bootstrap_t b = k_good;
    b.allgather = NULL; /* required in version 2 */
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&b, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "has no allgather");
    b = k_good;
    b.api_version = 1; /* a v1 struct is given to hidet_nccl_bootstrap_create_v1 */
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&b, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "API version 1");
    b = k_good;
    b.name = "";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&b, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "has no name");
    b = k_good;
    b.local_rank = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&b, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "has no local_rank");
    CU_ASSERT_PTR_NULL(bs);
}

static void test_plugin_from_shared_object(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_load(g_v2_so, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    const char *name;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_name(bs, &name), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(name, "loopback2");
    int in = 42, out = 0;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_allgather(bs, &in, &out, sizeof in, 0), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(out, 42);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    set_env("HIDET_NCCL_TIMEOUT", "12");
    set_env("OMPI_COMM_WORLD_RANK", "2");
    set_env("OMPI_COMM_WORLD_SIZE", "8");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_load(g_v2_so, "echo-args", &bs), HIDET_NCCL_ERROR_BOOTSTRAP,
                     "timeout 12.0 s, rank 2 of 8, local rank -1 of -1, hints from Open MPI");
    set_env("HIDET_NCCL_BOOTSTRAP", g_v2_so);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_from_env(&bs), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_name(bs, &name), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(name, "loopback2");
    hidet_nccl_bootstrap_destroy(bs);
    set_env("HIDET_NCCL_BOOTSTRAP", NULL);
    set_env("HIDET_NCCL_TIMEOUT", NULL);
    set_env("OMPI_COMM_WORLD_RANK", NULL);
    set_env("OMPI_COMM_WORLD_SIZE", NULL);
    hidet_nccl_settings_reload();
}

int main(int argc, char **argv) {
    static char path[4096];
    if (argc < 2 || realpath(argv[1], path) == NULL) return 1;
    g_v2_so = path;
    static const hn_test_t tests[] = {
        {"a good v2 plug-in given directly", test_good_plugin_given},
        {"init's deadline and rank hints", test_init_args},
        {"bad v2 plug-ins refused", test_bad_plugins_refused},
        {"a plug-in's message without a NUL", test_unterminated_message},
        {"bad deadlines refused everywhere", test_bad_deadlines},
        {"rank hints out of range refused", test_hints_in_range},
        {"a v2 plug-in from a shared object", test_plugin_from_shared_object},
        {NULL, NULL},
    };
    return hn_run_tests("bootstrap_plugin", tests);
}

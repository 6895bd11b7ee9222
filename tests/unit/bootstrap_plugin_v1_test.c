/* Version 1 bootstrap plug-ins, as written before version 2 existed: a good one given
 * directly and loaded from a shared object (also through HIDET_NCCL_BOOTSTRAP), bad ones
 * refused with a message, and the adapter's allgather for a v1 plug-in that has none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"

static const char *g_good_so, *g_no_symbol_so;

static hidet_nccl_status_t ok_init(const void *p, void **s, char *m, size_t n) {
    (void)p, (void)m, (void)n;
    *s = NULL;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t failing_init(const void *p, void **s, char *m, size_t n) {
    (void)p, (void)s;
    strncpy(m, "the plug-in's own reason", n - 1);
    return HIDET_NCCL_ERROR_BOOTSTRAP;
}
static hidet_nccl_status_t rs(void *s, int *r, int *z, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    *r = 0;
    *z = 1;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t bad_rs(void *s, int *r, int *z, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    *r = 3;
    *z = 2;
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
static hidet_nccl_status_t fin(void *s, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    return HIDET_NCCL_SUCCESS;
}

static const hidet_nccl_bootstrap_v1_t k_good = {"mine", HIDET_NCCL_BOOTSTRAP_API_VERSION_V1, ok_init, rs, lr, bc, NULL,
                                                  fin};

static void test_good_plugin_given(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&k_good, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    const char *name;
    int rank, size, local, local_size;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_name(bs, &name), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(name, "mine");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_rank(bs, &rank, &size), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(rank == 0 && size == 1);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_local_rank(bs, &local, &local_size), HIDET_NCCL_SUCCESS, NULL);
    char buf[8] = "abc";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, buf, sizeof buf, 0, 1), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, buf, sizeof buf, 1, 1), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "root 1");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, buf, 65537, 0, 1), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "65537");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(NULL), HIDET_NCCL_SUCCESS, NULL);
}

static void test_bad_plugins_refused(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    hidet_nccl_bootstrap_v1_t b = k_good;
    b.name = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&b, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "has no name");
    b = k_good;
    b.name = "";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&b, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "has no name");
    b = k_good;
    b.api_version = 7;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&b, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "API version 7");
    b = k_good;
    b.broadcast = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&b, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "has no broadcast");
    b = k_good;
    b.finalize = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&b, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "has no finalize");
    b = k_good;
    b.init = failing_init;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&b, NULL, &bs), HIDET_NCCL_ERROR_BOOTSTRAP, "the plug-in's own reason");
    CU_ASSERT_PTR_NULL(bs);
    b = k_good;
    b.rank_size = bad_rs;
    /* The job's numbering is read right after init (version 4: heal rounds are in it), so a rank
     * out of its size is refused by create, with the plug-in finalized. */
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&b, NULL, &bs), HIDET_NCCL_ERROR_BOOTSTRAP, "rank 3 of size 2");
    CU_ASSERT_PTR_NULL(bs);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(NULL, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "ops");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&k_good, NULL, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "out");
}

/* Rank 1 of 3 whose broadcast gives every root's buffer as "r<root>": the adapter's allgather
 * (a v1 plug-in has none) is one broadcast from each rank in turn. */
static hidet_nccl_status_t rs_1_of_3(void *s, int *r, int *z, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    *r = 1;
    *z = 3;
    return HIDET_NCCL_SUCCESS;
}
static int g_tags[8], g_ntags;
static hidet_nccl_status_t bc_fake(void *s, void *b, size_t k, int root, uint64_t t, double to, char *m, size_t n) {
    (void)s, (void)to, (void)m, (void)n;
    if (g_ntags < 8) g_tags[g_ntags++] = (int)t;
    if (root != 1) snprintf(b, k, "r%d", root); /* this rank's own bytes stay */
    return HIDET_NCCL_SUCCESS;
}

static void test_adapter_allgather(void) {
    hidet_nccl_bootstrap_v1_t b = k_good;
    b.rank_size = rs_1_of_3;
    b.broadcast = bc_fake;
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v1(&b, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    char mine[4] = "me!", all[12];
    memset(all, 'x', sizeof all);
    g_ntags = 0;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_allgather(bs, mine, all, 4, 5.0), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(all, "r0");
    CU_ASSERT_STRING_EQUAL(all + 4, "me!");
    CU_ASSERT_STRING_EQUAL(all + 8, "r2");
    char one[4] = "";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, one, 4, 0, 5.0), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g_ntags, 4); /* three rounds, then the broadcast: each with its own tag */
    for (int i = 0; i < g_ntags; i++) CU_ASSERT_EQUAL(g_tags[i], i);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_allgather(bs, mine, all, 4 << 20, 5.0), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "more than a bootstrap allgather carries");
    hidet_nccl_bootstrap_destroy(bs);
}

static void test_plugin_from_shared_object(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_load(g_good_so, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    const char *name;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_name(bs, &name), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(name, "loopback");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 5, NULL, NULL), HIDET_NCCL_ERROR_UNSUPPORTED,
                     "bootstrap 'loopback' cannot recover after a rank died: it is a version 1 plug-in");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_load("/no/such/libplugin.so", NULL, &bs), HIDET_NCCL_ERROR_BOOTSTRAP,
                     "/no/such/libplugin.so could not be loaded");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_load(g_no_symbol_so, NULL, &bs), HIDET_NCCL_ERROR_BOOTSTRAP,
                     "exports none of hidet_nccl_bootstrap_v4, hidet_nccl_bootstrap_v3, hidet_nccl_bootstrap_v2 and "
                     "hidet_nccl_bootstrap_v1");
}

static void test_plugin_from_environment(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    const char *name;
    setenv("HIDET_NCCL_BOOTSTRAP", g_good_so, 1);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_from_env(&bs), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_name(bs, &name), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(name, "loopback");
    hidet_nccl_bootstrap_destroy(bs);
    setenv("HIDET_NCCL_BOOTSTRAP", "carrier-pigeon", 1);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_from_env(&bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "'carrier-pigeon'");
    setenv("HIDET_NCCL_BOOTSTRAP", "mpi", 1);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_from_env(&bs), HIDET_NCCL_ERROR_INVALID_USAGE, "hidet_nccl_mpi_init");
    unsetenv("HIDET_NCCL_BOOTSTRAP");
    unsetenv("HIDET_NCCL_RENDEZVOUS_DIR");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_from_env(&bs), HIDET_NCCL_ERROR_BOOTSTRAP, "hidet-nccl-run");
    int id;
    HN_ASSERT_STATUS(hidet_nccl_init(&id), HIDET_NCCL_ERROR_BOOTSTRAP, "no bootstrap found");
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    g_good_so = argv[1];
    g_no_symbol_so = argv[2];
    static char good[4096], none[4096];
    if (realpath(g_good_so, good) == NULL || realpath(g_no_symbol_so, none) == NULL) return 1;
    g_good_so = good;
    g_no_symbol_so = none;
    static const hn_test_t tests[] = {
        {"a good plug-in given directly", test_good_plugin_given},
        {"bad plug-ins refused", test_bad_plugins_refused},
        {"the adapter's allgather", test_adapter_allgather},
        {"a plug-in from a shared object", test_plugin_from_shared_object},
        {"a plug-in from HIDET_NCCL_BOOTSTRAP", test_plugin_from_environment},
        {NULL, NULL},
    };
    return hn_run_tests("bootstrap_plugin_v1", tests);
}

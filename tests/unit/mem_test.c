/* Library memory on the CPU, through the recording stand-in for NCCL (tools/support/
 * fake_nccl.c): allocation and free, buffer registration, the checks a collective makes on
 * such memory, every bad input of the API, and NCCL's knobs in the init options.
 *   mem_test LIBFAKE_NCCL.so
 * Against the fake as NCCL 2.28.9 and as 2.10.3 (memory, registration and knobs refused with
 * the version they need). Windows and AUTO need a GPU (NCCL runs them on one): their argument
 * checks are here, the rest in tests/gpu/mem_gpu_test.c. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"
#include "tools/support/fake_nccl.h"

static fake_nccl_log_fn g_log;
static fake_nccl_clear_fn g_clear;
static int g_new; /* the fake is NCCL 2.28 (else 2.10) */
#define STREAM ((cudaStream_t)(uintptr_t)0x5)

static int adopt(fake_comm_t *c) {
    int id = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt((ncclComm_t)(void *)c, &id), HIDET_NCCL_SUCCESS, NULL);
    return id;
}

/* How many calls of fn the fake logged since the last clear (the last one in *last). */
static int logged(const char *fn, const fake_call_t **last) {
    int n, depth, found = 0;
    const fake_call_t *log = g_log(&n, &depth);
    for (int i = 0; i < n; i++)
        if (strcmp(log[i].fn, fn) == 0) {
            found++;
            if (last) *last = &log[i];
        }
    return found;
}

static void test_alloc_and_free(void) {
    fake_comm_t fc = {2, 0};
    int id = adopt(&fc);
    void *p = NULL;
    if (!g_new) {
        HN_ASSERT_STATUS(hidet_nccl_mem_alloc(id, 1 << 20, &p), HIDET_NCCL_ERROR_UNSUPPORTED, "2.19.0");
        CU_ASSERT_PTR_NULL(p);
        hidet_nccl_comm_destroy(id);
        return;
    }
    HN_ASSERT_STATUS(hidet_nccl_mem_alloc(id, 0, &p), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bytes is 0");
    HN_ASSERT_STATUS(hidet_nccl_mem_alloc(id, 64, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, NULL);
    HN_ASSERT_STATUS(hidet_nccl_mem_alloc(id + 100, 64, &p), HIDET_NCCL_ERROR_INVALID_COMM, NULL);
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_mem_alloc(id, 1 << 20, &p), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(logged("ncclMemAlloc", NULL), 1);
    int local = 0;
    HN_ASSERT_STATUS(hidet_nccl_mem_free(&local), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "not memory from hidet_nccl_mem_alloc");
    HN_ASSERT_STATUS(hidet_nccl_mem_free((char *)p + 4096), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "4096 bytes into");
    CU_ASSERT_EQUAL(logged("ncclMemFree", NULL), 0); /* nothing freed by a refusal */
    HN_ASSERT_STATUS(hidet_nccl_mem_free(NULL), HIDET_NCCL_SUCCESS, NULL);
    const fake_call_t *c = NULL;
    HN_ASSERT_STATUS(hidet_nccl_mem_free(p), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(logged("ncclMemFree", &c), 1);
    CU_ASSERT_PTR_EQUAL(c ? c->send : NULL, p);
    HN_ASSERT_STATUS(hidet_nccl_mem_free(p), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "freed already"); /* twice */
    CU_ASSERT_EQUAL(logged("ncclMemFree", NULL), 1);
    /* memory outlives its communicator; finalize frees what is left */
    HN_ASSERT_STATUS(hidet_nccl_mem_alloc(id, 4096, &p), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(logged("ncclMemFree", NULL), 1);
}

static void test_register_buffer(void) {
    fake_comm_t fc = {2, 1}, other = {2, 1};
    int id = adopt(&fc), id2 = adopt(&other);
    int local[8], h = -1;
    if (!g_new) {
        HN_ASSERT_STATUS(hidet_nccl_register(id, local, sizeof local, HIDET_NCCL_REGISTER_BUFFER, &h),
                         HIDET_NCCL_ERROR_UNSUPPORTED, "2.19.0");
        HN_ASSERT_STATUS(hidet_nccl_register(id, local, sizeof local, HIDET_NCCL_REGISTER_AUTO, &h),
                         HIDET_NCCL_ERROR_UNSUPPORTED, NULL);
        CU_ASSERT_EQUAL(h, -1);
        HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
        return;
    }
    void *p = NULL;
    HN_ASSERT_STATUS(hidet_nccl_mem_alloc(id, 1 << 16, &p), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char *b = p;
    /* argument checks */
    HN_ASSERT_STATUS(hidet_nccl_register(id, p, 0, HIDET_NCCL_REGISTER_BUFFER, &h), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "bytes is 0");
    HN_ASSERT_STATUS(hidet_nccl_register(id, p, 64, 7, &h), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "flags 7");
    HN_ASSERT_STATUS(hidet_nccl_register(id, NULL, 64, 1, &h), HIDET_NCCL_ERROR_INVALID_ARGUMENT, NULL);
    HN_ASSERT_STATUS(hidet_nccl_register(id, b, (1 << 16) + 1, HIDET_NCCL_REGISTER_BUFFER, &h),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "1 bytes past the end of its library memory");
    HN_ASSERT_STATUS(hidet_nccl_register(id, local, sizeof local, HIDET_NCCL_REGISTER_WINDOW, &h),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "not memory from hidet_nccl_mem_alloc");
    HN_ASSERT_STATUS(hidet_nccl_register(id, b + 8, 64, HIDET_NCCL_REGISTER_AUTO, &h),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "4096-byte aligned");
    hidet_nccl_group_start();
    HN_ASSERT_STATUS(hidet_nccl_register(id, p, 64, HIDET_NCCL_REGISTER_BUFFER, &h), HIDET_NCCL_ERROR_INVALID_USAGE,
                     "inside a group");
    hidet_nccl_group_end();
    CU_ASSERT_EQUAL(h, -1);
    /* a registration: on the communicator itself, overlaps refused */
    g_clear();
    const fake_call_t *c = NULL;
    HN_ASSERT_STATUS(hidet_nccl_register(id, b, 1 << 15, HIDET_NCCL_REGISTER_BUFFER, &h), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(h > 0);
    CU_ASSERT_EQUAL(logged("ncclCommRegister", &c), 1);
    CU_ASSERT(c != NULL && c->comm == (ncclComm_t)(void *)&fc && c->send == p && c->count == (1 << 15));
    int h2 = -1;
    HN_ASSERT_STATUS(hidet_nccl_register(id, b + 4096, 4096, HIDET_NCCL_REGISTER_BUFFER, &h2),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "overlaps registration");
    HN_ASSERT_STATUS(hidet_nccl_register(id2, b + 4096, 4096, HIDET_NCCL_REGISTER_BUFFER, &h2), HIDET_NCCL_SUCCESS,
                     NULL); /* another communicator may register it too */
    /* what collectives check: a buffer that starts inside a registration ends inside it */
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(id, b + 4096, b + 4096, 8192, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "ends 4096 bytes past it");
    HN_ASSERT_STATUS(hidet_nccl_all_gather(id, b, b + 28672, 4096, HIDET_NCCL_UINT8, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "recvbuff"); /* 2 x 4096 bytes from 4096 before its end */
    CU_ASSERT_EQUAL(logged("ncclAllReduce", NULL) + logged("ncclAllGather", NULL), 0);
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(id, b, b, 1024, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM),
                     HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(logged("ncclAllReduce", &c), 1);
    CU_ASSERT(c != NULL && c->comm == (ncclComm_t)(void *)&fc); /* a BUFFER registration: no other view */
    /* deregister: refusals lose nothing */
    HN_ASSERT_STATUS(hidet_nccl_deregister(id2, h), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "belongs to communicator id");
    HN_ASSERT_STATUS(hidet_nccl_deregister(id, 12345), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "not a registration");
    HN_ASSERT_STATUS(hidet_nccl_mem_free(p), HIDET_NCCL_ERROR_INVALID_USAGE, "deregister it first");
    /* the all_reduce used it on STREAM: without a GPU that stream cannot be asked, so it may
     * still be in use (on a GPU: tests/gpu/mem_gpu_test.c) */
    HN_ASSERT_STATUS(hidet_nccl_deregister(id, h), HIDET_NCCL_ERROR_INVALID_USAGE, "in use");
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_deregister(id2, h2), HIDET_NCCL_SUCCESS, NULL); /* never used */
    CU_ASSERT_EQUAL(logged("ncclCommDeregister", &c), 1);
    CU_ASSERT(c != NULL && c->comm == (ncclComm_t)(void *)&other);
    HN_ASSERT_STATUS(hidet_nccl_deregister(id2, h2), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "deregistered already");
    /* destroying the communicator deregisters what is left */
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(logged("ncclCommDeregister", NULL), 1);
    HN_ASSERT_STATUS(hidet_nccl_deregister(id, h), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "not a registration");
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

/* A one-rank shared-file bootstrap in dir under job key. */
static hidet_nccl_bootstrap_h one_rank(const char *dir, const char *key) {
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.job_key = key;
    p.rank = 0;
    p.nranks = 1;
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_SUCCESS, NULL);
    return bs;
}

/* NCCL's knobs: ranges and versions are checked before anything reaches NCCL or the GPU. */
/* HIDET_NCCL_REGISTER_OWN's refusals that need no GPU (the kernels run in tests/gpu/
 * own_gpu_test.c), and the route all_reduce would take, in words. */
static void test_register_own(void) {
    if (!g_new) return; /* library memory needs NCCL 2.19: test_alloc_and_free */
    fake_comm_t one = {1, 0}, nine = {9, 3}, two = {2, 1};
    int id1 = adopt(&one), id9 = adopt(&nine), id2 = adopt(&two), h = -1;
    void *p = NULL;
    HN_ASSERT_STATUS(hidet_nccl_mem_alloc(id2, 1 << 16, &p), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int local[8];
    g_clear();
    char want[160];
    snprintf(want, sizeof want, "communicator id %d: the communicator has 1 ranks; the own kernels run on 2 to 8", id1);
    HN_ASSERT_STATUS(hidet_nccl_register(id1, p, 4096, HIDET_NCCL_REGISTER_OWN, &h), HIDET_NCCL_ERROR_UNSUPPORTED, want);
    HN_ASSERT_STATUS(hidet_nccl_register(id9, p, 4096, HIDET_NCCL_REGISTER_OWN, &h), HIDET_NCCL_ERROR_UNSUPPORTED,
                     "has 9 ranks");
    CU_ASSERT_EQUAL(logged("ncclAllGather", NULL), 0); /* the same on every rank: nothing exchanged */
    HN_ASSERT_STATUS(hidet_nccl_register(id2, local, sizeof local, HIDET_NCCL_REGISTER_OWN, &h),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "the own kernels (flags HIDET_NCCL_REGISTER_OWN) run on library "
                     "memory only");
    HN_ASSERT_STATUS(hidet_nccl_register(id2, p, 64, 4, &h), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "_OWN (3)");
    CU_ASSERT_EQUAL(h, -1);
    char route[256];
    HN_ASSERT_STATUS(hidet_nccl_all_reduce_route(id2, p, p, 16, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, route, sizeof route),
                     HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(route, "nccl plain"); /* nothing registered: NCCL's plain path */
    HN_ASSERT_STATUS(hidet_nccl_all_reduce_route(id2, p, p, 0, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, route, sizeof route),
                     HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_STRING_EQUAL(route, "nothing (count 0)");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce_route(id2, p, p, 16, HIDET_NCCL_INT16, HIDET_NCCL_SUM, route, sizeof route),
                     HIDET_NCCL_ERROR_UNSUPPORTED, NULL); /* all_reduce's own refusal */
    HN_ASSERT_STATUS(hidet_nccl_all_reduce_route(id2, p, NULL, 16, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, route,
                                                 sizeof route),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "recvbuff");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce_route(id2, p, p, 16, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, route, 0),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "route_len is 0");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce_route(77, p, p, 16, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, route, sizeof route),
                     HIDET_NCCL_ERROR_INVALID_COMM, "communicator id 77");
    CU_ASSERT_EQUAL(logged("ncclAllReduce", NULL), 0); /* the route runs nothing, records no stream: */
    HN_ASSERT_STATUS(hidet_nccl_mem_free(p), HIDET_NCCL_SUCCESS, NULL);       /* the memory is free to go */
    HN_ASSERT_STATUS(hidet_nccl_finalize(), HIDET_NCCL_SUCCESS, NULL);
}

static void test_init_knobs(void) {
    char dir[] = "/tmp/hidet-nccl-mem-test-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    struct {
        const char *field;
        int value, version; /* the version it needs, or 0: out of range */
    } cases[] = {{"cta_policy", 3, 0},  {"cta_policy", 1, 22700}, {"cta_policy", 2, 22800}, {"min_ctas", 0, 0},
                 {"max_ctas", 65, 0},   {"max_ctas", 8, 21700},   {"traffic_class", -2, 0}, {"traffic_class", 3, 22400},
                 {"split_share", 2, 0}, {"split_share", 1, 21800}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hidet_nccl_init_options_t o = HIDET_NCCL_INIT_OPTIONS_INIT;
        int *f = strcmp(cases[i].field, "cta_policy") == 0      ? &o.cta_policy
                 : strcmp(cases[i].field, "min_ctas") == 0      ? &o.min_ctas
                 : strcmp(cases[i].field, "max_ctas") == 0      ? &o.max_ctas
                 : strcmp(cases[i].field, "traffic_class") == 0 ? &o.traffic_class
                                                                : &o.split_share;
        *f = cases[i].value;
        hidet_nccl_bootstrap_h bs = one_rank(dir, "knobs");
        int id = -1;
        int st = hidet_nccl_comm_init(bs, &o, &id);
        char needle[64];
        snprintf(needle, sizeof needle, "options->%s", cases[i].field);
        if (cases[i].version == 0)
            HN_ASSERT_STATUS(st, HIDET_NCCL_ERROR_INVALID_ARGUMENT, needle);
        else if (!g_new || cases[i].version > 22809)
            HN_ASSERT_STATUS(st, HIDET_NCCL_ERROR_UNSUPPORTED, needle);
        else
            CU_ASSERT(st != HIDET_NCCL_ERROR_INVALID_ARGUMENT &&
                      st != HIDET_NCCL_ERROR_UNSUPPORTED); /* on to the GPU */
        hidet_nccl_bootstrap_destroy(bs);
    }
    hidet_nccl_init_options_t o = HIDET_NCCL_INIT_OPTIONS_INIT;
    o.min_ctas = 8;
    o.max_ctas = 4;
    hidet_nccl_bootstrap_h bs = one_rank(dir, "knobs2");
    int id = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_init(bs, &o, &id),
                     g_new ? HIDET_NCCL_ERROR_INVALID_ARGUMENT : HIDET_NCCL_ERROR_UNSUPPORTED,
                     g_new ? "above options->max_ctas" : NULL);
    o = (hidet_nccl_init_options_t)HIDET_NCCL_INIT_OPTIONS_INIT;
    char name[200];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    o.comm_name = name;
    HN_ASSERT_STATUS(hidet_nccl_comm_init(bs, &o, &id), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "options->comm_name is too long");
    hidet_nccl_bootstrap_destroy(bs);
    rmdir(dir);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBFAKE_NCCL.so\n", argv[0]);
        return 2;
    }
    int version = 0;
    if (fake_nccl_load(argv[1], &version, &g_log, &g_clear) == NULL) return 1;
    g_new = version >= 22800;
    static const hn_test_t tests[] = {
        {"library memory: alloc, free, bad pointers", test_alloc_and_free},
        {"buffer registration and what collectives check", test_register_buffer},
        {"NCCL's knobs in the init options", test_init_knobs},
        {"HIDET_NCCL_REGISTER_OWN's refusals and the route in words", test_register_own},
        {NULL, NULL},
    };
    return hn_run_tests("mem", tests);
}

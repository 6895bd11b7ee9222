/* What a collective asks of the CUDA runtime on NCCL's path: nothing. Linked against a
 * counting stand-in for the CUDA runtime (tests/cuda_stand_in.c) in place of libcudart_static
 * and the recording stand-in for NCCL, every collective and the send/recv pair are called on
 * borrowed and owned communicators of 4 ranks, with the flight recorder on and off, inside and
 * outside a group, on registered library memory (the route), and must make no CUDA
 * runtime call at all: anything a GPU would wait for (an event recorded, a stream waited on, a
 * capture query, a memset) would show here. The counter is shown to count: with completion
 * tracking on, each call records its event (a capture query and an event: 2 calls); a one-rank
 * reduction is a copy (1 call out of place, 0 in place).
 *   coll_cuda_calls_test LIBFAKE_NCCL.so */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/comm/registry_int.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cuda_stand_in.h"
#include "tests/cunit_runner.h"
#include "tools/support/fake_nccl.h"

#define STREAM ((cudaStream_t)(uintptr_t)0x5)
#define FLOAT HIDET_NCCL_FLOAT32
#define SUM HIDET_NCCL_SUM
/* The recorder asked for (its default is off without a trace directory): main sets it */
#define RECORDER_ON "2048"

static fake_nccl_clear_fn g_clear;
static char g_buf[1 << 16];

#define OK(call) HN_ASSERT_STATUS((call), HIDET_NCCL_SUCCESS, NULL)

/* Every collective once, out of place and (where NCCL has one) in place, on comm id (rank 1
 * of 4) with buffers at b; the pair grouped unless the caller's group holds it already. The
 * calls each collective makes: 18. */
static void every_collective(int id, char *b, int in_group) {
    enum { N = 64 }; /* floats per rank's block */
    char *s = b, *r = b + 16384;
    OK(hidet_nccl_all_reduce(id, s, r, N, FLOAT, SUM, STREAM));
    OK(hidet_nccl_all_reduce(id, r, r, N, FLOAT, SUM, STREAM));
    OK(hidet_nccl_broadcast(id, s, r, N, FLOAT, 0, STREAM));
    OK(hidet_nccl_broadcast(id, r, r, N, FLOAT, 1, STREAM));
    OK(hidet_nccl_reduce(id, s, r, N, FLOAT, SUM, 0, STREAM));
    OK(hidet_nccl_reduce(id, r, r, N, FLOAT, SUM, 1, STREAM));
    OK(hidet_nccl_all_gather(id, s, r, N, FLOAT, STREAM));
    OK(hidet_nccl_all_gather(id, r + 1 * N * 4, r, N, FLOAT, STREAM));
    OK(hidet_nccl_reduce_scatter(id, s, r, N, FLOAT, SUM, STREAM));
    OK(hidet_nccl_reduce_scatter(id, s, s + 1 * N * 4, N, FLOAT, SUM, STREAM));
    OK(hidet_nccl_all_to_all(id, s, r, N, FLOAT, STREAM));
    OK(hidet_nccl_gather(id, s, r, N, FLOAT, 1, STREAM));
    OK(hidet_nccl_gather(id, r + 1 * N * 4, r, N, FLOAT, 1, STREAM));
    OK(hidet_nccl_scatter(id, s, r, N, FLOAT, 1, STREAM));
    OK(hidet_nccl_scatter(id, s, s + 1 * N * 4, N, FLOAT, 1, STREAM));
    OK(hidet_nccl_barrier(id, STREAM));
    if (!in_group) OK(hidet_nccl_group_start());
    OK(hidet_nccl_send(id, s, N, FLOAT, 2, STREAM));
    OK(hidet_nccl_recv(id, r, N, FLOAT, 0, STREAM));
    if (!in_group) OK(hidet_nccl_group_end());
}

/* every_collective after a first round (what is made once per communicator: the recorder's
 * ring, the barrier's byte), counted: no CUDA runtime call. */
static void none_on(int id, char *b, int in_group, const char *what) {
    every_collective(id, b, in_group);
    hn_cuda_reset();
    every_collective(id, b, in_group);
    if (hn_cuda_calls() != 0) fprintf(stderr, "%s: %d CUDA calls: %s\n", what, hn_cuda_calls(), hn_cuda_names());
    CU_ASSERT_EQUAL(hn_cuda_calls(), 0);
    g_clear();
}

static void set_env(const char *name, const char *value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    hidet_nccl_settings_reload();
}

static void test_borrowed(void) {
    fake_comm_t fc = {4, 1};
    int id;
    OK(hidet_nccl_comm_adopt((ncclComm_t)(void *)&fc, &id));
    none_on(id, g_buf, 0, "borrowed, recorder on");
    OK(hidet_nccl_comm_destroy(id));
}

static void test_owned(void) {
    static fake_comm_t fc = {4, 1};
    int id;
    OK(hidet_nccl__registry_add((ncclComm_t)(void *)&fc, 1, 4, 1, 0x77u, &id));
    none_on(id, g_buf, 0, "owned, recorder on");
    OK(hidet_nccl_group_start());
    none_on(id, g_buf, 1, "owned, inside a group");
    OK(hidet_nccl_group_end());
    OK(hidet_nccl_comm_destroy(id));
}

/* Off as asked (0), and off by default (neither a size nor a trace directory set). */
static void test_recorder_off(void) {
    static const char *const entries[] = {"0", NULL};
    for (int k = 0; k < 2; k++) {
        fake_comm_t fc = {4, 1};
        int id;
        set_env("HIDET_NCCL_TRACE_ENTRIES", entries[k]);
        OK(hidet_nccl_comm_adopt((ncclComm_t)(void *)&fc, &id));
        none_on(id, g_buf, 0, k ? "borrowed, recorder off by default" : "borrowed, recorder off (0)");
        OK(hidet_nccl_comm_destroy(id));
    }
    set_env("HIDET_NCCL_TRACE_ENTRIES", RECORDER_ON);
}

/* Library memory with a registration on the communicator: the route (the buffers checked
 * against their allocation and registration, the tuning table asked) is host work only. AUTO's
 * views need ncclCommSplit, which the stand-in for NCCL lacks; the route that picks a view is
 * the same code (core/coll/mem_route.c). */
static void test_library_memory_route(void) {
    fake_comm_t fc = {4, 1};
    int id, h;
    void *p;
    OK(hidet_nccl_comm_adopt((ncclComm_t)(void *)&fc, &id));
    OK(hidet_nccl_mem_alloc(id, 1 << 16, &p));
    OK(hidet_nccl_register(id, p, 1 << 16, HIDET_NCCL_REGISTER_BUFFER, &h));
    none_on(id, p, 0, "library memory, registered");
    OK(hidet_nccl_deregister(id, h));
    OK(hidet_nccl_mem_free(p));
    OK(hidet_nccl_comm_destroy(id));
}

/* The counter counts: completion tracking (HIDET_NCCL_TRACE_COMPLETION=1, off by default) asks
 * whether the stream is capturing and records the entry's event, on every call. */
static void test_completion_tracking_counted(void) {
    fake_comm_t fc = {4, 1};
    int id;
    set_env("HIDET_NCCL_TRACE_COMPLETION", "1");
    OK(hidet_nccl_comm_adopt((ncclComm_t)(void *)&fc, &id));
    OK(hidet_nccl_broadcast(id, g_buf, g_buf + 4096, 8, FLOAT, 0, STREAM)); /* makes the ring and its events */
    hn_cuda_reset();
    OK(hidet_nccl_broadcast(id, g_buf, g_buf + 4096, 8, FLOAT, 0, STREAM));
    CU_ASSERT_EQUAL(hn_cuda_calls(), 2);
    CU_ASSERT_EQUAL(hn_cuda_calls_of("cudaStreamIsCapturing"), 1);
    CU_ASSERT_EQUAL(hn_cuda_calls_of("cudaEventRecord"), 1);
    OK(hidet_nccl_comm_destroy(id));
    set_env("HIDET_NCCL_TRACE_COMPLETION", NULL);
    g_clear();
}

/* A reduction on one rank is the library's copy, not NCCL's call: one cudaMemcpyAsync out of
 * place, nothing in place. */
static void test_one_rank_copy_counted(void) {
    static fake_comm_t fc = {1, 0};
    int id;
    OK(hidet_nccl__registry_add((ncclComm_t)(void *)&fc, 1, 1, 0, 0x78u, &id));
    OK(hidet_nccl_all_reduce(id, g_buf, g_buf + 4096, 8, FLOAT, SUM, STREAM));
    hn_cuda_reset();
    OK(hidet_nccl_all_reduce(id, g_buf, g_buf + 4096, 8, FLOAT, SUM, STREAM));
    CU_ASSERT_EQUAL(hn_cuda_calls(), 1);
    CU_ASSERT_EQUAL(hn_cuda_calls_of("cudaMemcpyAsync"), 1);
    hn_cuda_reset();
    OK(hidet_nccl_all_reduce(id, g_buf, g_buf, 8, FLOAT, SUM, STREAM));
    CU_ASSERT_EQUAL(hn_cuda_calls(), 0);
    OK(hidet_nccl_comm_destroy(id));
    g_clear();
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBFAKE_NCCL.so\n", argv[0]);
        return 2;
    }
    int version = 0;
    fake_nccl_log_fn log;
    if (fake_nccl_load(argv[1], &version, &log, &g_clear) == NULL) return 1;
    setenv("HIDET_NCCL_TRACE_ENTRIES", RECORDER_ON, 1);
    static const hn_test_t tests[] = {
        {"no CUDA call on NCCL's path: a borrowed communicator", test_borrowed},
        {"no CUDA call on NCCL's path: an owned one, and inside a group", test_owned},
        {"no CUDA call on NCCL's path: the flight recorder off, as asked and by default", test_recorder_off},
        {"no CUDA call on NCCL's path: library memory, registered (the route)", test_library_memory_route},
        {"counted: completion tracking's capture query and event", test_completion_tracking_counted},
        {"counted: a one-rank reduction's copy", test_one_rank_copy_counted},
        {NULL, NULL},
    };
    return hn_run_tests("coll_cuda_calls", tests);
}

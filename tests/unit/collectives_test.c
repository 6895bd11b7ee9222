/* What the collectives hand NCCL, on the CPU: a recording stand-in for NCCL
 * (tools/support/fake_nccl.c) logs every call; fake communicators of 4 ranks are adopted.
 *   collectives_test LIBFAKE_NCCL.so
 * Run against the fake as NCCL 2.28.9 (native all_to_all, gather, scatter, scaled sums) and
 * as NCCL 2.10.3 (grouped send/recv in their place, scaled sums refused). Checked: every
 * dtype's NCCL type and count for data movement and for reductions, roots and peers,
 * in-place and overlap rules, overflow, NULL buffers, count 0, the grouped send/recv forms
 * (also forced by HIDET_NCCL_GROUPED_P2P=1), groups balanced on failure, failures named, and
 * scaled-sum ops tied to their communicator and dtype. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm/registry_int.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"
#include "tools/support/fake_nccl.h"

static fake_nccl_log_fn g_log;
static fake_nccl_clear_fn g_clear;
static fake_comm_t g_comm4 = {4, 1}, g_root4 = {4, 0}, g_other = {4, 2};
static int g_id, g_root_id, g_other_id; /* rank 1 of 4; rank 0 of 4; another communicator */
static int g_new;                       /* the fake is NCCL 2.28 (else 2.10) */
static fake_nccl_rank_queries_fn g_queries;
static char g_buf[1 << 16];
#define STREAM ((cudaStream_t)(uintptr_t)0x5)

/* The calls logged since the last clear. */
static const fake_call_t *calls(int *n) {
    int depth;
    return g_log(n, &depth);
}

static int group_depth(void) {
    int n, depth;
    g_log(&n, &depth);
    return depth;
}

/* The one call logged since the last clear (NULL and a failed check if not exactly one). */
static const fake_call_t *only_call(const char *fn) {
    int n;
    const fake_call_t *c = calls(&n);
    CU_ASSERT_EQUAL(n, 1);
    if (n != 1) return NULL;
    CU_ASSERT_STRING_EQUAL(c[0].fn, fn);
    return &c[0];
}

static void set_env(const char *name, const char *value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    hidet_nccl_settings_reload();
}

/* Data movement: every dtype as an NCCL type of its width, count scaled; root passed on. */
static void test_movement_types(void) {
    static const struct {
        hidet_nccl_dtype_t dtype;
        int type;
        size_t mult;
    } rows[] = {
        {HIDET_NCCL_BOOL, ncclUint8, 1},       {HIDET_NCCL_INT8, ncclUint8, 1},
        {HIDET_NCCL_INT16, ncclUint8, 2},      {HIDET_NCCL_UINT16, ncclUint8, 2},
        {HIDET_NCCL_FLOAT16, ncclUint8, 2},    {HIDET_NCCL_BFLOAT16, ncclUint8, 2},
        {HIDET_NCCL_INT32, ncclUint32, 1},     {HIDET_NCCL_TFLOAT32, ncclUint32, 1},
        {HIDET_NCCL_FLOAT32, ncclUint32, 1},   {HIDET_NCCL_INT64, ncclUint64, 1},
        {HIDET_NCCL_FLOAT64, ncclUint64, 1},   {HIDET_NCCL_COMPLEX64, ncclUint64, 1},
        {HIDET_NCCL_COMPLEX128, ncclUint64, 2}, {HIDET_NCCL_FLOAT8_E4M3, ncclUint8, 1},
        {HIDET_NCCL_FLOAT8_E5M2, ncclUint8, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        g_clear();
        HN_ASSERT_STATUS(hidet_nccl_broadcast(g_id, g_buf, g_buf + 4096, 5, rows[i].dtype, 3, STREAM),
                         HIDET_NCCL_SUCCESS, NULL);
        const fake_call_t *c = only_call("ncclBroadcast");
        if (c == NULL) continue;
        CU_ASSERT_EQUAL(c->type, rows[i].type);
        CU_ASSERT_EQUAL(c->count, 5 * rows[i].mult);
        CU_ASSERT_EQUAL(c->rank, 3);
        CU_ASSERT(c->send == g_buf && c->recv == g_buf + 4096);
        g_clear();
        HN_ASSERT_STATUS(hidet_nccl_all_gather(g_id, g_buf, g_buf + 4096, 3, rows[i].dtype, STREAM),
                         HIDET_NCCL_SUCCESS, NULL);
        c = only_call("ncclAllGather");
        if (c != NULL) CU_ASSERT(c->type == rows[i].type && c->count == 3 * rows[i].mult);
        g_clear();
        HN_ASSERT_STATUS(hidet_nccl_send(g_id, g_buf, 7, rows[i].dtype, 2, STREAM), HIDET_NCCL_SUCCESS, NULL);
        c = only_call("ncclSend");
        if (c != NULL) CU_ASSERT(c->type == rows[i].type && c->count == 7 * rows[i].mult && c->rank == 2);
        g_clear();
        HN_ASSERT_STATUS(hidet_nccl_recv(g_id, g_buf + 4096, 7, rows[i].dtype, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
        c = only_call("ncclRecv");
        if (c != NULL) CU_ASSERT(c->type == rows[i].type && c->count == 7 * rows[i].mult && c->rank == 0);
    }
}

/* Reductions follow all_reduce's table: what it allows reaches NCCL the same way, what it
 * refuses is refused by name, and nothing reaches NCCL then. */
static void test_reduction_table(void) {
    for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++)
        for (int o = 0; o < HIDET_NCCL_NUM_OPS; o++) {
            hidet_nccl_reduction_t red;
            int ok = hidet_nccl_reduction((hidet_nccl_dtype_t)d, (hidet_nccl_op_t)o, &red) == HIDET_NCCL_SUCCESS;
            int version = 0;
            hidet_nccl_nccl_version(&version);
            ok = ok && red.min_nccl_version <= version;
            g_clear();
            hidet_nccl_status_t st = hidet_nccl_reduce(g_id, g_buf, g_buf + 8192, 6, (hidet_nccl_dtype_t)d,
                                                       (hidet_nccl_op_t)o, 0, STREAM);
            CU_ASSERT_EQUAL(st, ok ? HIDET_NCCL_SUCCESS : HIDET_NCCL_ERROR_UNSUPPORTED);
            if (!ok) {
                int n;
                calls(&n);
                CU_ASSERT_EQUAL(n, 0);
                CU_ASSERT_PTR_NOT_NULL(strstr(hidet_nccl_last_error(), "reduce of "));
                continue;
            }
            const fake_call_t *c = only_call("ncclReduce");
            if (c != NULL)
                CU_ASSERT(c->type == (int)red.nccl_dtype && c->op == (int)red.nccl_op &&
                          c->count == 6 * red.count_multiplier && c->rank == 0);
            g_clear();
            HN_ASSERT_STATUS(hidet_nccl_reduce_scatter(g_id, g_buf, g_buf + 8192, 6, (hidet_nccl_dtype_t)d,
                                                       (hidet_nccl_op_t)o, STREAM),
                             HIDET_NCCL_SUCCESS, NULL);
            c = only_call("ncclReduceScatter");
            if (c != NULL) CU_ASSERT(c->type == (int)red.nccl_dtype && c->count == 6 * red.count_multiplier);
        }
    HN_ASSERT_STATUS(hidet_nccl_reduce_scatter(g_id, g_buf, g_buf + 8192, 6, HIDET_NCCL_BOOL, HIDET_NCCL_SUM, STREAM),
                     HIDET_NCCL_ERROR_UNSUPPORTED, "reduce_scatter of bool with op sum is not supported");
}

/* Roots and peers out of range, NULL buffers with a count, count 0, overflow. */
static void test_bad_arguments(void) {
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_broadcast(g_id, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, 4, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "broadcast: root 4 is not a rank of communicator id");
    HN_ASSERT_STATUS(hidet_nccl_reduce(g_id, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, -1, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "root -1");
    HN_ASSERT_STATUS(hidet_nccl_gather(g_id, g_buf, g_buf + 64, 4, HIDET_NCCL_FLOAT32, 9, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "(0 .. 3)");
    HN_ASSERT_STATUS(hidet_nccl_scatter(g_id, g_buf, g_buf + 64, 4, HIDET_NCCL_FLOAT32, 4, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "root 4");
    HN_ASSERT_STATUS(hidet_nccl_send(g_id, g_buf, 4, HIDET_NCCL_FLOAT32, 4, STREAM), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "send: peer 4");
    HN_ASSERT_STATUS(hidet_nccl_recv(g_id, g_buf, 4, HIDET_NCCL_FLOAT32, -2, STREAM), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "recv: peer -2");
    HN_ASSERT_STATUS(hidet_nccl_broadcast(g_id, g_buf, NULL, 4, HIDET_NCCL_FLOAT32, 0, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "recvbuff is NULL with count 4");
    HN_ASSERT_STATUS(hidet_nccl_broadcast(g_root_id, NULL, g_buf, 4, HIDET_NCCL_FLOAT32, 0, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "sendbuff is NULL"); /* the root reads it */
    HN_ASSERT_STATUS(hidet_nccl_all_to_all(g_id, NULL, g_buf, 4, HIDET_NCCL_FLOAT32, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "sendbuff is NULL");
    HN_ASSERT_STATUS(hidet_nccl_all_gather(g_id, g_buf, g_buf, SIZE_MAX / 8, HIDET_NCCL_FLOAT32, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "overflows size_t");
    HN_ASSERT_STATUS(hidet_nccl_send(g_id, g_buf, SIZE_MAX / 2, HIDET_NCCL_COMPLEX64, 0, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "count 9223372036854775807 of complex64");
    HN_ASSERT_STATUS(hidet_nccl_broadcast(g_id, g_buf, g_buf, 4, (hidet_nccl_dtype_t)99, 0, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "dtype 99");
    HN_ASSERT_STATUS(hidet_nccl_reduce(g_id, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, (hidet_nccl_op_t)7, 0, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "op 7");
    HN_ASSERT_STATUS(hidet_nccl_barrier(12345, STREAM), HIDET_NCCL_ERROR_INVALID_COMM, "12345");
    /* A non-root's unused buffer may be NULL; count 0 reaches nothing, whatever the buffers. */
    HN_ASSERT_STATUS(hidet_nccl_broadcast(g_id, NULL, g_buf, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_reduce(g_id, g_buf, NULL, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0, STREAM),
                     HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_gather(g_id, g_buf, NULL, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_scatter(g_id, NULL, g_buf, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    int n;
    calls(&n);
    int before = n;
    HN_ASSERT_STATUS(hidet_nccl_all_gather(g_id, NULL, NULL, 0, HIDET_NCCL_FLOAT32, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_all_to_all(g_id, NULL, NULL, 0, HIDET_NCCL_FLOAT32, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_send(g_id, NULL, 0, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    calls(&n);
    CU_ASSERT_EQUAL(n, before);
}

/* In place as NCCL defines it, and overlap any other way refused. Rank 1 of 4, 16-byte blocks. */
static void test_in_place_rules(void) {
    char *b = g_buf;
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_all_gather(g_id, b + 16, b, 4, HIDET_NCCL_FLOAT32, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_all_gather(g_id, b + 8, b, 4, HIDET_NCCL_FLOAT32, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "in place is sendbuff == recvbuff + rank * sendcount");
    HN_ASSERT_STATUS(hidet_nccl_all_gather(g_id, b, b, 4, HIDET_NCCL_FLOAT32, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "overlaps");
    HN_ASSERT_STATUS(hidet_nccl_reduce_scatter(g_id, b, b + 16, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM),
                     HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_reduce_scatter(g_id, b, b, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "in place is recvbuff == sendbuff + rank * recvcount");
    HN_ASSERT_STATUS(hidet_nccl_all_to_all(g_id, b, b + 32, 4, HIDET_NCCL_FLOAT32, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "overlaps");
    HN_ASSERT_STATUS(hidet_nccl_all_to_all(g_id, b, b + 64, 4, HIDET_NCCL_FLOAT32, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_broadcast(g_root_id, b, b + 4, 4, HIDET_NCCL_FLOAT32, 0, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "in place is sendbuff == recvbuff");
    HN_ASSERT_STATUS(hidet_nccl_broadcast(g_root_id, b, b, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_reduce(g_root_id, b, b + 4, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, 0, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "overlaps");
    /* gather / scatter at root 0 (this is rank 0 of g_root_id): in place at block 0. */
    HN_ASSERT_STATUS(hidet_nccl_gather(g_root_id, b, b, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_gather(g_root_id, b + 16, b, 4, HIDET_NCCL_FLOAT32, 0, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "in place is sendbuff == recvbuff + root * count");
    HN_ASSERT_STATUS(hidet_nccl_scatter(g_root_id, b, b, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_scatter(g_root_id, b, b + 20, 4, HIDET_NCCL_FLOAT32, 0, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "in place is recvbuff == sendbuff + root * count");
    /* On a non-root, the root-only buffer is not looked at: no overlap to refuse. */
    HN_ASSERT_STATUS(hidet_nccl_gather(g_id, b, b, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
}

/* The grouped send/recv form of all_to_all, gather and scatter: the NCCL 2.10 fake always,
 * the 2.28 one with HIDET_NCCL_GROUPED_P2P=1; native calls otherwise. */
static void check_grouped_forms(int grouped) {
    char *b = g_buf;
    int n;
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_all_to_all(g_id, b, b + 1024, 4, HIDET_NCCL_FLOAT64, STREAM), HIDET_NCCL_SUCCESS, NULL);
    const fake_call_t *c = calls(&n);
    if (!grouped) {
        c = only_call("ncclAlltoAll");
        if (c) CU_ASSERT(c->count == 4 && c->type == ncclUint64 && c->send == b && c->recv == b + 1024);
    } else {
        CU_ASSERT_EQUAL_FATAL(n, 2 + 2 * 4);
        CU_ASSERT_STRING_EQUAL(c[0].fn, "ncclGroupStart");
        for (int j = 0; j < 4; j++) {
            CU_ASSERT(strcmp(c[1 + 2 * j].fn, "ncclSend") == 0 && c[1 + 2 * j].rank == j &&
                      c[1 + 2 * j].send == b + 32 * j && c[1 + 2 * j].count == 4 && c[1 + 2 * j].depth == 1);
            CU_ASSERT(strcmp(c[2 + 2 * j].fn, "ncclRecv") == 0 && c[2 + 2 * j].rank == j &&
                      c[2 + 2 * j].recv == b + 1024 + 32 * j);
        }
        CU_ASSERT_STRING_EQUAL(c[9].fn, "ncclGroupEnd");
    }
    /* gather to root 0 from rank 1: one send; on the root (not in place): a send to itself and 4 receives. */
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_gather(g_id, b, b + 1024, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    c = calls(&n);
    if (!grouped) {
        c = only_call("ncclGather");
        if (c) CU_ASSERT(c->rank == 0 && c->count == 4);
    } else {
        CU_ASSERT(n == 3 && strcmp(c[1].fn, "ncclSend") == 0 && c[1].rank == 0 && c[1].send == b);
    }
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_gather(g_root_id, b, b + 1024, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS,
                     NULL);
    calls(&n);
    CU_ASSERT_EQUAL(n, grouped ? 2 + 1 + 4 : 1);
    g_clear(); /* in place on the root: its own block does not move */
    HN_ASSERT_STATUS(hidet_nccl_gather(g_root_id, b, b, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    c = calls(&n);
    CU_ASSERT_EQUAL(n, grouped ? 2 + 3 : 1);
    for (int i = 0; grouped && i < n; i++) CU_ASSERT(strcmp(c[i].fn, "ncclSend") != 0 && c[i].rank != 0);
    /* scatter from root 0: rank 1 receives once; the root sends 4 and receives its own. */
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_scatter(g_id, NULL, b, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    c = calls(&n);
    if (grouped) CU_ASSERT(n == 3 && strcmp(c[1].fn, "ncclRecv") == 0 && c[1].rank == 0 && c[1].recv == b);
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_scatter(g_root_id, b, b + 1024, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS,
                     NULL);
    c = calls(&n);
    CU_ASSERT_EQUAL(n, grouped ? 2 + 4 + 1 : 1);
    for (int j = 0; grouped && j < 4; j++) { /* some send of the group sends block j to rank j */
        int found = 0;
        for (int i = 1; i < n - 1; i++)
            found |= strcmp(c[i].fn, "ncclSend") == 0 && c[i].send == b + 16 * j && c[i].rank == j;
        CU_ASSERT(found);
    }
    /* all_to_all in place: refused in both forms, before NCCL is called (measured wrong on NCCL 2.28.9). */
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_all_to_all(g_id, b, b, 4, HIDET_NCCL_FLOAT32, STREAM), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "all_to_all has no in-place form");
    calls(&n);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(group_depth(), 0);
}

static void test_grouped_forms(void) {
    check_grouped_forms(!g_new);
    if (!g_new) return;
    set_env("HIDET_NCCL_GROUPED_P2P", "1");
    check_grouped_forms(1);
    set_env("HIDET_NCCL_GROUPED_P2P", "sometimes");
    HN_ASSERT_STATUS(hidet_nccl_all_to_all(g_id, g_buf, g_buf + 1024, 4, HIDET_NCCL_FLOAT32, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "HIDET_NCCL_GROUPED_P2P='sometimes'");
    set_env("HIDET_NCCL_GROUPED_P2P", NULL);
}

/* A send to this rank itself only within a group; send and receive inside a group are
 * launched by group_end. */
static void test_send_recv_groups(void) {
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_send(g_id, g_buf, 4, HIDET_NCCL_FLOAT32, 1, STREAM), HIDET_NCCL_ERROR_INVALID_USAGE,
                     "peer 1 is this rank");
    HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_send(g_id, g_buf, 4, HIDET_NCCL_FLOAT32, 1, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_recv(g_id, g_buf + 64, 4, HIDET_NCCL_FLOAT32, 1, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_send(g_id, g_buf, 4, HIDET_NCCL_FLOAT32, 2, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_recv(g_id, g_buf + 128, 4, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
    int n;
    const fake_call_t *c = calls(&n);
    CU_ASSERT_EQUAL_FATAL(n, 6);
    CU_ASSERT(strcmp(c[0].fn, "ncclGroupStart") == 0 && strcmp(c[5].fn, "ncclGroupEnd") == 0);
    for (int i = 1; i < 5; i++) CU_ASSERT_EQUAL(c[i].depth, 1);
    CU_ASSERT_EQUAL(group_depth(), 0);
}

/* With non-blocking communicators (ncclGroupEnd says ncclInProgress) group_end awaits every
 * communicator the group used, each once: one; two; 17, past the thread's inline array. A
 * group without that answer asks nothing. */
static int awaited(const fake_call_t *c, int n, ncclComm_t comm) {
    int k = 0;
    for (int i = 0; i < n; i++) k += strcmp(c[i].fn, "ncclCommGetAsyncError") == 0 && c[i].comm == comm;
    return k;
}
static void test_group_awaits_its_communicators(void) {
    enum { MANY = 17 };
    fake_comm_t comms[MANY];
    int ids[MANY], n;
    for (int i = 0; i < MANY; i++) {
        comms[i] = (fake_comm_t){4, 1};
        HN_ASSERT_STATUS(hidet_nccl_comm_adopt((ncclComm_t)(void *)&comms[i], &ids[i]), HIDET_NCCL_SUCCESS, NULL);
    }
    set_env("FAKE_NCCL_IN_PROGRESS", "1");
    for (int used = 1; used <= MANY; used += used == 1 ? 1 : MANY - 2) { /* 1, 2, 17 */
        g_clear();
        HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
        for (int i = 0; i < used; i++) { /* each twice, interleaved: tracked once */
            HN_ASSERT_STATUS(hidet_nccl_send(ids[i], g_buf, 4, HIDET_NCCL_FLOAT32, 2, STREAM), HIDET_NCCL_SUCCESS, NULL);
            HN_ASSERT_STATUS(hidet_nccl_recv(ids[(i + 1) % used], g_buf + 64, 4, HIDET_NCCL_FLOAT32, 0, STREAM),
                             HIDET_NCCL_SUCCESS, NULL);
        }
        HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
        const fake_call_t *c = calls(&n);
        CU_ASSERT_EQUAL(n, 1 + 2 * used + 1 + used); /* start, the calls, end, one question each */
        for (int i = 0; i < MANY; i++) CU_ASSERT_EQUAL(awaited(c, n, (ncclComm_t)(void *)&comms[i]), i < used);
    }
    set_env("FAKE_NCCL_IN_PROGRESS", NULL);
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_send(ids[0], g_buf, 4, HIDET_NCCL_FLOAT32, 2, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
    calls(&n);
    CU_ASSERT_EQUAL(n, 3);
    for (int i = 0; i < MANY; i++) HN_ASSERT_STATUS(hidet_nccl_comm_destroy(ids[i]), HIDET_NCCL_SUCCESS, NULL);
}

/* An NCCL failure names the call, count, dtype and root; a grouped form stays balanced. */
static void test_failures_named(void) {
    set_env("FAKE_NCCL_FAIL", "ncclBroadcast");
    HN_ASSERT_STATUS(hidet_nccl_broadcast(g_id, g_buf, g_buf, 3, HIDET_NCCL_COMPLEX64, 2, STREAM),
                     HIDET_NCCL_ERROR_NCCL, "ncclBroadcast(communicator id");
    CU_ASSERT_PTR_NOT_NULL(strstr(hidet_nccl_last_error(), "count 3 of complex64, root 2"));
    set_env("FAKE_NCCL_FAIL", "ncclSend");
    set_env("HIDET_NCCL_GROUPED_P2P", "1");
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_all_to_all(g_id, g_buf, g_buf + 1024, 4, HIDET_NCCL_FLOAT32, STREAM),
                     HIDET_NCCL_ERROR_NCCL, "grouped ncclSend/ncclRecv (all_to_all)");
    CU_ASSERT_EQUAL(group_depth(), 0); /* the group was ended */
    set_env("HIDET_NCCL_GROUPED_P2P", NULL);
    set_env("FAKE_NCCL_FAIL", NULL);
}

/* Scaled sums: made on one communicator for one dtype, used by all_reduce, reduce and
 * reduce_scatter there only, destroyed once. Refused on NCCL 2.10. */
static void test_premul_sum(void) {
    float half = 0.5f;
    hidet_nccl_op_t op;
    if (!g_new) {
        HN_ASSERT_STATUS(hidet_nccl_op_premul_sum(g_id, HIDET_NCCL_FLOAT32, &half, 0, &op), HIDET_NCCL_ERROR_UNSUPPORTED,
                         "needs NCCL 2.11");
        return;
    }
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_op_premul_sum(g_id, HIDET_NCCL_FLOAT32, &half, 0, &op), HIDET_NCCL_SUCCESS, NULL);
    const fake_call_t *c = only_call("ncclRedOpCreatePreMulSum");
    if (c) {
        CU_ASSERT(c->type == ncclFloat32 && c->count == ncclScalarHostImmediate && memcmp(c->scalar, &half, 4) == 0);
    }
    int nccl_op = c ? c->op : -1;
    CU_ASSERT((int)op >= HIDET_NCCL_NUM_OPS);
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(g_id, g_buf, g_buf, 8, HIDET_NCCL_FLOAT32, op, STREAM), HIDET_NCCL_SUCCESS,
                     NULL);
    HN_ASSERT_STATUS(hidet_nccl_reduce(g_id, g_buf, g_buf, 8, HIDET_NCCL_FLOAT32, op, 0, STREAM), HIDET_NCCL_SUCCESS,
                     NULL);
    HN_ASSERT_STATUS(hidet_nccl_reduce_scatter(g_id, g_buf, g_buf + 4096, 8, HIDET_NCCL_FLOAT32, op, STREAM),
                     HIDET_NCCL_SUCCESS, NULL);
    int n;
    c = calls(&n);
    CU_ASSERT_EQUAL(n, 3);
    for (int i = 0; i < n; i++) CU_ASSERT(c[i].op == nccl_op && c[i].type == ncclFloat32);
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(g_id, g_buf, g_buf, 8, HIDET_NCCL_FLOAT64, op, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "was made for float32, not for float64");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(g_other_id, g_buf, g_buf, 8, HIDET_NCCL_FLOAT32, op, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "belongs to communicator id");
    HN_ASSERT_STATUS(hidet_nccl_op_destroy(g_other_id, op), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "belongs to");
    /* complex: the scalar is its real part's type; from device memory: read at each call */
    hidet_nccl_op_t cop;
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_op_premul_sum(g_id, HIDET_NCCL_COMPLEX128, g_buf, 1, &cop), HIDET_NCCL_SUCCESS, NULL);
    c = only_call("ncclRedOpCreatePreMulSum");
    if (c) CU_ASSERT(c->type == ncclFloat64 && c->count == ncclScalarDevice && c->send == g_buf);
    HN_ASSERT_STATUS(hidet_nccl_op_premul_sum(g_id, HIDET_NCCL_BOOL, &half, 0, &cop), HIDET_NCCL_ERROR_UNSUPPORTED,
                     "a scaled sum of bool is not supported");
    HN_ASSERT_STATUS(hidet_nccl_op_premul_sum(g_id, HIDET_NCCL_FLOAT32, &half, 2, &cop),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "scalar_on_device 2");
    HN_ASSERT_STATUS(hidet_nccl_op_premul_sum(g_id, HIDET_NCCL_FLOAT32, NULL, 0, &cop),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "scalar");
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_op_destroy(g_id, op), HIDET_NCCL_SUCCESS, NULL);
    c = only_call("ncclRedOpDestroy");
    if (c) CU_ASSERT_EQUAL(c->op, nccl_op);
    HN_ASSERT_STATUS(hidet_nccl_op_destroy(g_id, op), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "not a live scaled sum");
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(g_id, g_buf, g_buf, 8, HIDET_NCCL_FLOAT32, op, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "not a live scaled sum");
    HN_ASSERT_STATUS(hidet_nccl_op_destroy(g_id, HIDET_NCCL_SUM), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "built-in ops are never destroyed");
    HN_ASSERT_STATUS(hidet_nccl_op_destroy(g_id, cop), HIDET_NCCL_SUCCESS, NULL);
}

/* On one rank a scaled sum is an all_reduce made as a multiple of 4096 NCCL elements and the
 * rest (NCCL 2.28.9 leaves the last elements of some one-rank counts unwritten). */
static void test_one_rank_scaled_sum(void) {
    if (!g_new) return;
    static fake_comm_t one = {1, 0};
    int id;
    float two = 2;
    hidet_nccl_op_t op, cop;
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt((ncclComm_t)(void *)&one, &id), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_op_premul_sum(id, HIDET_NCCL_FLOAT32, &two, 0, &op), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_op_premul_sum(id, HIDET_NCCL_COMPLEX64, &two, 0, &cop), HIDET_NCCL_SUCCESS, NULL);
    char *b = g_buf;
    int n;
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(id, b, b + 20000, 4097, HIDET_NCCL_FLOAT32, op, STREAM), HIDET_NCCL_SUCCESS,
                     NULL);
    const fake_call_t *c = calls(&n);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT(strcmp(c[0].fn, "ncclAllReduce") == 0 && c[0].count == 4096 && c[0].send == b && c[0].recv == b + 20000);
    CU_ASSERT(c[1].count == 1 && c[1].send == b + 4 * 4096 && c[1].recv == b + 20000 + 4 * 4096);
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_reduce_scatter(id, b, b + 20000, 2049, HIDET_NCCL_COMPLEX64, cop, STREAM),
                     HIDET_NCCL_SUCCESS, NULL);
    c = calls(&n);
    CU_ASSERT(n == 2 && c[0].count == 4096 && c[1].count == 2 && c[1].send == b + 4 * 4096);
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_reduce(id, b, b + 20000, 3, HIDET_NCCL_FLOAT32, op, 0, STREAM), HIDET_NCCL_SUCCESS, NULL);
    c = only_call("ncclAllReduce");
    if (c) CU_ASSERT(c->count == 3);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
}

/* A collective reads a slot without the registry's lock while nothing changed since its
 * thread's last look: a destroy, a failure (from another thread too) and a new communicator
 * under a reused pointer are each seen at the next call. */
static void *fail_from_another_thread(void *arg) {
    hidet_nccl__registry_fail(*(int *)arg, "its peer stopped answering (test)");
    return NULL;
}

static void test_lockless_slot_follows_changes(void) {
    static fake_comm_t comm = {4, 1};
    int id;
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt((ncclComm_t)(void *)&comm, &id), HIDET_NCCL_SUCCESS, NULL);
    for (int i = 0; i < 2; i++) /* the second call is served from this thread's copy */
        HN_ASSERT_STATUS(hidet_nccl_all_gather(id, g_buf, g_buf + 4096, 8, HIDET_NCCL_UINT8, STREAM),
                         HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_all_gather(id, g_buf, g_buf + 4096, 8, HIDET_NCCL_UINT8, STREAM),
                     HIDET_NCCL_ERROR_INVALID_COMM, "was destroyed");
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt((ncclComm_t)(void *)&comm, &id), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_all_gather(id, g_buf, g_buf + 4096, 8, HIDET_NCCL_UINT8, STREAM), HIDET_NCCL_SUCCESS,
                     NULL);
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, fail_from_another_thread, &id), 0);
    pthread_join(t, NULL);
    HN_ASSERT_STATUS(hidet_nccl_all_gather(id, g_buf, g_buf + 4096, 8, HIDET_NCCL_UINT8, STREAM),
                     HIDET_NCCL_ERROR_INVALID_COMM, "its peer stopped answering (test)");
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
}

/* An owned communicator's rank and size come from the registry: a collective asks NCCL
 * nothing but the collective; a borrowed one's are asked at its first collective that needs
 * them, and kept. */
static void test_owned_ranks_not_asked(void) {
    static fake_comm_t comm = {4, 2}, lent = {4, 3};
    int id, lent_id, before = g_queries();
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt((ncclComm_t)(void *)&lent, &lent_id), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_all_gather(lent_id, g_buf, g_buf + 4096, 8, HIDET_NCCL_UINT8, STREAM),
                     HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(g_queries() > before); /* borrowed: asked at its first collective */
    before = g_queries();
    HN_ASSERT_STATUS(hidet_nccl_broadcast(lent_id, g_buf, g_buf + 4096, 8, HIDET_NCCL_UINT8, 3, STREAM),
                     HIDET_NCCL_SUCCESS, NULL); /* root 3: the rank it was told, not asked again */
    HN_ASSERT_STATUS(hidet_nccl_send(lent_id, g_buf, 8, HIDET_NCCL_FLOAT32, 4, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "peer 4 is not a rank"); /* the size it was told */
    CU_ASSERT_EQUAL(g_queries(), before);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(lent_id), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl__registry_add((ncclComm_t)(void *)&comm, 1, 4, 2, 0x1234u, &id), HIDET_NCCL_SUCCESS,
                     NULL);
    before = g_queries();
    g_clear();
    /* in place at rank 2's block, which only the right rank accepts */
    HN_ASSERT_STATUS(hidet_nccl_all_gather(id, g_buf + 2 * 8, g_buf, 8, HIDET_NCCL_UINT8, STREAM), HIDET_NCCL_SUCCESS,
                     NULL);
    HN_ASSERT_STATUS(hidet_nccl_reduce_scatter(id, g_buf, g_buf + 4096, 8, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM),
                     HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_send(id, g_buf, 8, HIDET_NCCL_FLOAT32, 3, STREAM), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_send(id, g_buf, 8, HIDET_NCCL_FLOAT32, 4, STREAM), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "peer 4 is not a rank");
    CU_ASSERT_EQUAL(g_queries(), before);
    int n;
    calls(&n);
    CU_ASSERT_EQUAL(n, 3);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBFAKE_NCCL.so\n", argv[0]);
        return 2;
    }
    int version = 0;
    void *fake = fake_nccl_load(argv[1], &version, &g_log, &g_clear);
    if (fake == NULL) return 1;
    *(void **)&g_queries = dlsym(fake, "fake_nccl_rank_queries");
    if (g_queries == NULL) {
        fprintf(stderr, "%s has no fake_nccl_rank_queries\n", argv[1]);
        return 1;
    }
    g_new = version >= 22800;
    if (hidet_nccl_comm_adopt((ncclComm_t)(void *)&g_comm4, &g_id) ||
        hidet_nccl_comm_adopt((ncclComm_t)(void *)&g_root4, &g_root_id) ||
        hidet_nccl_comm_adopt((ncclComm_t)(void *)&g_other, &g_other_id)) {
        fprintf(stderr, "setup failed: %s\n", hidet_nccl_last_error());
        return 1;
    }
    printf("fake NCCL %d\n", version);
    static const hn_test_t tests[] = {
        {"data movement: every dtype as an NCCL type of its width", test_movement_types},
        {"reductions: all_reduce's table, refusals named", test_reduction_table},
        {"bad roots, peers, buffers, counts", test_bad_arguments},
        {"in place as NCCL defines it, other overlap refused", test_in_place_rules},
        {"all_to_all, gather, scatter: native or grouped send/recv", test_grouped_forms},
        {"send and recv in groups; to itself only in one", test_send_recv_groups},
        {"a group awaits each communicator it used, each once", test_group_awaits_its_communicators},
        {"NCCL failures named, groups balanced", test_failures_named},
        {"scaled sums tied to a communicator and a dtype", test_premul_sum},
        {"a one-rank scaled sum in two parts", test_one_rank_scaled_sum},
        {"an owned communicator's ranks not asked of NCCL per call", test_owned_ranks_not_asked},
        {"a collective's lockless look at its slot sees destroy and failure", test_lockless_slot_follows_changes},
        {NULL, NULL},
    };
    return hn_run_tests("collectives", tests);
}

/* The flight recorder, shrink and revoke on the CPU, through the recording stand-in for NCCL
 * (tools/support/fake_nccl.c), and hidet-nccl-trace's reader and report on synthetic dumps
 * of every divergence kind and on hostile ones (the text and the JSON of one judgement), and
 * the tool itself on a directory with no dump, on dumps and file names holding terminal
 * escapes, and with its options (--help, --json, --ranks, --comm, unknown ones).
 *   flight_recorder_test LIBFAKE_NCCL.so HIDET_NCCL_TRACE_TOOL
 * Against the fake as NCCL 2.28.9 (shrink and revoke there) and as 2.10.3 (both refused
 * with the version they need). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"
#include "tools/support/fake_nccl.h"
#include "tools/trace/trace_read.h"

static fake_nccl_log_fn g_log;
static fake_nccl_clear_fn g_clear;
static int g_new; /* the fake is NCCL 2.28 (else 2.10) */
static char g_dir[1024];
static const char *g_tool; /* hidet-nccl-trace */
static char g_buf[1 << 12];
#define STREAM ((cudaStream_t)(uintptr_t)0x5)

static void set_env(const char *name, const char *value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    hidet_nccl_settings_reload();
}

static int adopt(fake_comm_t *c) {
    int id = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_adopt((ncclComm_t)(void *)c, &id), HIDET_NCCL_SUCCESS, NULL);
    return id;
}

/* The dump at path, read back; 0 if it could not be read (and the test failed). */
static int read_dump(const char *path, tr_set_t *set) {
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char err[512] = "";
    int r = tr_read_file(set, f, path, err, sizeof err);
    fclose(f);
    if (r != 0) fprintf(stderr, "reading the dump: %s\n", err);
    CU_ASSERT_EQUAL(r, 0);
    return r == 0;
}

static const tr_comm_t *comm_of(const tr_set_t *set, int id) {
    for (size_t i = 0; set->ndumps && i < set->dumps[0].ncomms; i++)
        if (set->dumps[0].comms[i].id == id) return &set->dumps[0].comms[i];
    return NULL;
}

/* A ring of 16 after 40 calls holds seqs 24 .. 39, each as called, with its tag. */
static void test_ring_wraps(void) {
    set_env("HIDET_NCCL_TRACE_ENTRIES", "16");
    static fake_comm_t c = {4, 1};
    int id = adopt(&c);
    char tag[32];
    for (int i = 0; i < 40; i++) {
        snprintf(tag, sizeof tag, "step %d", i);
        HN_ASSERT_STATUS(hidet_nccl_set_tag(i % 10 == 9 ? NULL : tag), HIDET_NCCL_SUCCESS, NULL);
        if (i % 2) HN_ASSERT_STATUS(hidet_nccl_all_reduce(id, g_buf, g_buf + 2048, (size_t)i + 1, HIDET_NCCL_FLOAT32,
                                                          HIDET_NCCL_MAX, STREAM), HIDET_NCCL_SUCCESS, NULL);
        else HN_ASSERT_STATUS(hidet_nccl_broadcast(id, g_buf, g_buf, (size_t)i + 1, HIDET_NCCL_BFLOAT16, 2, STREAM),
                              HIDET_NCCL_SUCCESS, NULL);
    }
    /* count 0 reaches nothing and is not recorded; a refused call neither */
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(id, g_buf, g_buf, 0, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM),
                     HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_broadcast(id, g_buf, g_buf, 1, HIDET_NCCL_FLOAT32, 9, STREAM),
                     HIDET_NCCL_ERROR_INVALID_ARGUMENT, "root 9");
    hidet_nccl_set_tag(NULL);
    char path[4096];
    HN_ASSERT_STATUS(hidet_nccl_trace_dump(g_dir, path, sizeof path), HIDET_NCCL_SUCCESS, NULL);
    tr_set_t set = {0};
    if (read_dump(path, &set)) {
        const tr_comm_t *m = comm_of(&set, id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_EQUAL(m->next_seq, 40);
        CU_ASSERT_EQUAL(m->nops, 16);
        CU_ASSERT_EQUAL(m->rank, 1);
        CU_ASSERT_EQUAL(m->nranks, 4);
        CU_ASSERT_STRING_EQUAL(m->key, "00000000"); /* borrowed: no key */
        for (size_t k = 0; k < m->nops; k++) {
            const tr_op_t *o = &m->ops[k];
            uint64_t i = 24 + k;
            CU_ASSERT_EQUAL(o->seq, i);
            CU_ASSERT_EQUAL(o->count, i + 1);
            CU_ASSERT_STRING_EQUAL(o->coll, i % 2 ? "all_reduce" : "broadcast");
            CU_ASSERT_STRING_EQUAL(o->dtype, i % 2 ? "float32" : "bfloat16");
            CU_ASSERT_STRING_EQUAL(o->op, i % 2 ? "max" : "-");
            CU_ASSERT_EQUAL(o->peer, i % 2 ? -1 : 2);
            CU_ASSERT_STRING_EQUAL(o->state, "not_tracked");
            snprintf(tag, sizeof tag, "step %d", (int)i);
            CU_ASSERT_STRING_EQUAL(o->tag, i % 10 == 9 ? "" : tag);
        }
    }
    tr_free(&set);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
    set_env("HIDET_NCCL_TRACE_ENTRIES", NULL);
}

/* HIDET_NCCL_TRACE_ENTRIES=0: no ring, a dump lists nothing. */
static void test_recorder_off(void) {
    set_env("HIDET_NCCL_TRACE_ENTRIES", "0");
    static fake_comm_t c = {2, 0};
    int id = adopt(&c);
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(id, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM),
                     HIDET_NCCL_SUCCESS, NULL);
    char path[4096];
    HN_ASSERT_STATUS(hidet_nccl_trace_dump(g_dir, path, sizeof path), HIDET_NCCL_SUCCESS, NULL);
    tr_set_t set = {0};
    if (read_dump(path, &set)) CU_ASSERT_PTR_NULL(comm_of(&set, id));
    tr_free(&set);
    hidet_nccl_comm_destroy(id);
    set_env("HIDET_NCCL_TRACE_ENTRIES", NULL);
}

static void test_bad_tags_and_dirs(void) {
    char long_tag[64];
    memset(long_tag, 'x', sizeof long_tag - 1);
    long_tag[63] = '\0';
    HN_ASSERT_STATUS(hidet_nccl_set_tag(long_tag), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "63 bytes; at most 47");
    set_env("HIDET_NCCL_TRACE_DIR", NULL);
    HN_ASSERT_STATUS(hidet_nccl_trace_dump(NULL, NULL, 0), HIDET_NCCL_ERROR_INVALID_USAGE, "HIDET_NCCL_TRACE_DIR");
    char p[1100];
    snprintf(p, sizeof p, "%s/none", g_dir);
    HN_ASSERT_STATUS(hidet_nccl_trace_dump(p, NULL, 0), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "must exist");
    snprintf(p, sizeof p, "%s/link", g_dir);
    CU_ASSERT_EQUAL(symlink(g_dir, p), 0);
    HN_ASSERT_STATUS(hidet_nccl_trace_dump(p, NULL, 0), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "symbolic link");
    unlink(p);
    snprintf(p, sizeof p, "%s/file", g_dir);
    FILE *f = fopen(p, "w");
    if (f) fclose(f);
    HN_ASSERT_STATUS(hidet_nccl_trace_dump(p, NULL, 0), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "not a directory");
    unlink(p);
    char path[16];
    HN_ASSERT_STATUS(hidet_nccl_trace_dump(g_dir, path, 0), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "path_size 0");
    if (geteuid() != 0) { /* root writes anywhere */
        snprintf(p, sizeof p, "%s/ro", g_dir);
        mkdir(p, 0500);
        HN_ASSERT_STATUS(hidet_nccl_trace_dump(p, NULL, 0), HIDET_NCCL_ERROR_SYSTEM, "not writable");
        rmdir(p);
    }
}

/* A write that fails (the file size limit stands in for a full disk): an error, no file. */
static void test_full_disk(void) {
    static fake_comm_t c = {2, 1};
    int id = adopt(&c);
    for (int i = 0; i < 50; i++)
        hidet_nccl_all_reduce(id, g_buf, g_buf, 8, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM);
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/full", g_dir);
    mkdir(sub, 0700);
    struct rlimit old, small = {256, 256};
    getrlimit(RLIMIT_FSIZE, &old);
    small.rlim_max = old.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    hidet_nccl_status_t st = hidet_nccl_trace_dump(sub, NULL, 0);
    setrlimit(RLIMIT_FSIZE, &old);
    HN_ASSERT_STATUS(st, HIDET_NCCL_ERROR_SYSTEM, "nothing was kept");
    CU_ASSERT_EQUAL(rmdir(sub), 0); /* empty: the temporary file is gone */
    hidet_nccl_comm_destroy(id);
}

/* An abort dumps (with a trace directory set); the id shows dead, with why. */
static void test_abort_dumps(void) {
    set_env("HIDET_NCCL_TRACE_DIR", g_dir);
    static fake_comm_t c = {2, 0};
    int id = adopt(&c);
    hidet_nccl_all_reduce(id, g_buf, g_buf, 3, HIDET_NCCL_INT32, HIDET_NCCL_SUM, STREAM);
    char path[4096];
    snprintf(path, sizeof path, "%s/hidet-nccl-trace.pid%ld.jsonl", g_dir, (long)getpid());
    unlink(path);
    HN_ASSERT_STATUS(hidet_nccl_comm_abort(id), HIDET_NCCL_SUCCESS, NULL);
    tr_set_t set = {0};
    if (read_dump(path, &set)) {
        CU_ASSERT_STRING_EQUAL(set.dumps[0].reason, "hidet_nccl_comm_abort");
        const tr_comm_t *m = comm_of(&set, id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_STRING_EQUAL(m->state, "live"); /* dumped before the abort */
        CU_ASSERT_EQUAL(m->nops, 1);
    }
    tr_free(&set);
    set_env("HIDET_NCCL_TRACE_DIR", NULL);
}

static int fake_calls(const char *fn) {
    int n, depth, k = 0;
    const fake_call_t *c = g_log(&n, &depth);
    for (int i = 0; i < n; i++) k += strcmp(c[i].fn, fn) == 0;
    return k;
}

static void test_shrink_and_revoke(void) {
    static fake_comm_t c = {4, 2};
    int id = adopt(&c), child = -1;
    int none[1] = {0};
    if (!g_new) {
        HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 1, none, HIDET_NCCL_SHRINK_DEFAULT, &child),
                         HIDET_NCCL_ERROR_UNSUPPORTED, "needs NCCL 2.27.0 or newer (ncclCommShrink)");
        HN_ASSERT_STATUS(hidet_nccl_comm_revoke(id), HIDET_NCCL_ERROR_UNSUPPORTED, "needs NCCL 2.28.7");
        hidet_nccl_comm_destroy(id);
        return;
    }
    set_env("HIDET_NCCL_NONBLOCKING", "1"); /* the blocking form asks CUDA for the device */
    int bad[3] = {1, 5, 1}, self[1] = {2}, twice[2] = {3, 3};
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 1, none, 2, &child), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "flags 2");
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, -1, none, 0, &child), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "n_exclude -1");
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 4, none, 0, &child), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "n_exclude 4");
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 1, NULL, 0, &child), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "NULL");
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 2, bad, 0, &child), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "exclude_ranks[1] = 5 is not a rank");
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 1, self, 0, &child), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "this rank");
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 2, twice, 0, &child), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "both rank 3");
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 0, NULL, 0, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "new_id");
    HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 0, NULL, 0, &child), HIDET_NCCL_ERROR_INVALID_USAGE, "group");
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
    g_clear();
    /* Exclude ranks 0 and 3: this rank (2) becomes rank 1 of 2, the child is owned. */
    int two[2] = {0, 3};
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(id, 2, two, HIDET_NCCL_SHRINK_DEFAULT, &child), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(fake_calls("ncclCommShrink"), 1);
    int rank = -1, size = -1, owned = -1;
    hidet_nccl_comm_rank(child, &rank);
    hidet_nccl_comm_size(child, &size);
    hidet_nccl_comm_is_owned(child, &owned);
    CU_ASSERT_EQUAL(rank, 1);
    CU_ASSERT_EQUAL(size, 2);
    CU_ASSERT_EQUAL(owned, 1);
    /* Revoke: the id is failed; collectives and splits refused, queries and shrink taken. */
    HN_ASSERT_STATUS(hidet_nccl_comm_revoke(child), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(fake_calls("ncclCommRevoke"), 1);
    HN_ASSERT_STATUS(hidet_nccl_all_reduce(child, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM),
                     HIDET_NCCL_ERROR_INVALID_COMM, "failed (revoked by hidet_nccl_comm_revoke)");
    int split = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_split(child, 0, 0, &split), HIDET_NCCL_ERROR_INVALID_COMM, "hidet_nccl_comm_shrink");
    HN_ASSERT_STATUS(hidet_nccl_comm_wait(child, STREAM, 1.0), HIDET_NCCL_ERROR_INVALID_COMM, "failed");
    HN_ASSERT_STATUS(hidet_nccl_comm_rank(child, &rank), HIDET_NCCL_SUCCESS, NULL);
    /* Recovery needs the bootstrap a communicator was made over: a borrowed one and a shrink's
     * child (failed, so it is a recovery's case) are refused at once, saying what to do. */
    int rec = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_recover(id, 5, &rec, NULL), HIDET_NCCL_ERROR_INVALID_USAGE, "is borrowed");
    HN_ASSERT_STATUS(hidet_nccl_comm_recover(child, 5, &rec, NULL), HIDET_NCCL_ERROR_INVALID_USAGE,
                     "was not made over a bootstrap");
    CU_ASSERT_EQUAL(rec, -1);
    int grandchild = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_shrink(child, 0, NULL, HIDET_NCCL_SHRINK_ABORT, &grandchild), HIDET_NCCL_SUCCESS,
                     NULL);
    int n, depth;
    const fake_call_t *log = g_log(&n, &depth);
    CU_ASSERT_EQUAL(log[n - 1].op, 1); /* NCCL_SHRINK_ABORT */
    /* Destroying a failed owned communicator aborts it (its peers may be gone). */
    g_clear();
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(child), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(fake_calls("ncclCommAbort"), 1);
    CU_ASSERT_EQUAL(fake_calls("ncclCommDestroy"), 0);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(grandchild), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(fake_calls("ncclCommDestroy"), 1);
    hidet_nccl_comm_destroy(id);
    set_env("HIDET_NCCL_NONBLOCKING", NULL);
}

/* --------------------------------------------------------- the reader and the report */

/* The report's first line for dumps given as text (rank r's in texts[r]); also its result. */
static int verdict(const char *const *texts, int n, char *line, size_t size) {
    tr_set_t set = {0};
    for (int r = 0; r < n; r++) {
        FILE *f = fmemopen((void *)texts[r], strlen(texts[r]), "r");
        char err[512];
        char name[16];
        snprintf(name, sizeof name, "rank%d", r);
        if (tr_read_file(&set, f, name, err, sizeof err) != 0) fprintf(stderr, "%s\n", err);
        fclose(f);
    }
    char *out = NULL;
    size_t out_size = 0;
    FILE *o = open_memstream(&out, &out_size);
    int bad = tr_report(&set, o);
    fclose(o);
    size_t len = strcspn(out, "\n");
    snprintf(line, size, "%.*s", (int)len, out);
    free(out);
    tr_free(&set);
    return bad;
}

/* Members of a parsed JSON document, never NULL: "(none)" or -999 when absent or of another type. */
static const char *jstr(json_t *o, const char *k) {
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "(none)";
}
static long long jint(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : -999;
}
static json_t *jat(json_t *o, const char *k, size_t i) { return json_array_get(json_object_get(o, k), i); }

/* The same dumps judged once and printed both ways: the JSON parses, its verdict is kind, and
 * its text is the text report's first line. Returns the parsed document (caller decrefs). */
static json_t *judged_json(const char *const *texts, int n, const char *kind) {
    tr_set_t set = {0};
    for (int r = 0; r < n; r++) {
        FILE *f = fmemopen((void *)texts[r], strlen(texts[r]), "r");
        char err[512];
        if (tr_read_file(&set, f, "rank", err, sizeof err) != 0) fprintf(stderr, "%s\n", err);
        fclose(f);
    }
    tr_analysis_t *a = tr_analyze(&set, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    char *text = NULL, *js = NULL;
    size_t text_size = 0, js_size = 0;
    FILE *t = open_memstream(&text, &text_size), *j = open_memstream(&js, &js_size);
    tr_print_text(a, t);
    CU_ASSERT_EQUAL(tr_print_json(a, 0, j), 0);
    fclose(t);
    fclose(j);
    json_error_t je;
    json_t *doc = json_loads(js, 0, &je);
    if (doc == NULL) fprintf(stderr, "not JSON (%s):\n%s\n", je.text, js);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    json_t *v = json_object_get(doc, "verdict");
    const char *got = json_string_value(json_object_get(v, "kind"));
    const char *line = json_string_value(json_object_get(v, "text"));
    if (got == NULL || strcmp(got, kind)) fprintf(stderr, "kind '%s', wanted '%s'\n", got ? got : "(none)", kind);
    CU_ASSERT(got != NULL && !strcmp(got, kind));
    CU_ASSERT(line != NULL && strncmp(text, line, strlen(line)) == 0 && text[strlen(line)] == '\n');
    CU_ASSERT_EQUAL(tr_analysis_bad(a), strcmp(kind, "consistent") != 0);
    free(text);
    free(js);
    tr_analysis_free(a);
    tr_free(&set);
    return doc;
}

#define HEADER(r) "{\"type\":\"header\",\"hidet_nccl_trace\":1,\"host\":\"h\",\"pid\":1,\"rank\":" #r \
                  ",\"time\":1.0,\"nccl_version\":22809,\"reason\":\"test\"}\n"
#define COMM(r, n, next) "{\"type\":\"comm\",\"comm\":0,\"key\":\"1234abcd\",\"rank\":" #r ",\"nranks\":" #n \
                         ",\"state\":\"live\",\"why\":\"\",\"next_seq\":" #next ",\"entries\":2048,\"completion\":true}\n"
#define OP(seq, coll, dtype, count, op, peer, state, tag)                                                        \
    "{\"type\":\"op\",\"comm\":0,\"key\":\"1234abcd\",\"seq\":" #seq ",\"coll\":\"" coll "\",\"dtype\":\"" dtype \
    "\",\"count\":" #count ",\"op\":\"" op "\",\"peer\":" #peer ",\"stream\":\"0x5\",\"t\":1.0,"                 \
    "\"nccl_result\":0,\"state\":\"" state "\",\"tag\":\"" tag "\"}\n"

static void test_report_kinds(void) {
    char line[512];
    /* count differs at seq 1 */
    const char *count[2] = {HEADER(0) COMM(0, 2, 2) OP(0, "all_reduce", "float32", 16, "sum", -1, "completed", "")
                                OP(1, "all_reduce", "float32", 1024, "sum", -1, "pending", ""),
                            HEADER(1) COMM(1, 2, 2) OP(0, "all_reduce", "float32", 16, "sum", -1, "completed", "")
                                OP(1, "all_reduce", "float32", 1000, "sum", -1, "pending", "")};
    CU_ASSERT_EQUAL(verdict(count, 2, line, sizeof line), 1);
    CU_ASSERT_STRING_EQUAL(line, "ranks disagree at seq 1 of communicator 1234abcd: count 1024 on rank 0, 1000 on rank 1");
    /* a skipped call shows as tags that disagree */
    const char *tags[2] = {HEADER(0) COMM(0, 2, 2) OP(0, "all_reduce", "float32", 8, "sum", -1, "completed", "step 5")
                               OP(1, "all_reduce", "float32", 8, "sum", -1, "pending", "step 6"),
                           HEADER(1) COMM(1, 2, 1) OP(0, "all_reduce", "float32", 8, "sum", -1, "completed", "step 6")};
    verdict(tags, 2, line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "ranks disagree at seq 0 of communicator 1234abcd: tag 'step 5' on rank 0, 'step 6' on rank 1");
    /* collective, root */
    const char *coll[2] = {HEADER(0) COMM(0, 2, 1) OP(0, "broadcast", "float32", 16, "-", 0, "pending", ""),
                           HEADER(1) COMM(1, 2, 1) OP(0, "all_reduce", "float32", 16, "sum", -1, "pending", "")};
    verdict(coll, 2, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "collective broadcast on rank 0, all_reduce on rank 1"));
    const char *root[2] = {HEADER(0) COMM(0, 2, 1) OP(0, "broadcast", "float32", 16, "-", 0, "pending", ""),
                           HEADER(1) COMM(1, 2, 1) OP(0, "broadcast", "float32", 16, "-", 1, "pending", "")};
    verdict(root, 2, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "root 0 on rank 0, 1 on rank 1"));
    /* a send meets a recv */
    const char *p2p[2] = {HEADER(0) COMM(0, 2, 1) OP(0, "send", "float32", 16, "-", 1, "completed", ""),
                          HEADER(1) COMM(1, 2, 1) OP(0, "recv", "float32", 16, "-", 0, "completed", "")};
    CU_ASSERT_EQUAL(verdict(p2p, 2, line, sizeof line), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "no divergence"));
    /* a rank behind */
    const char *behind[2] = {HEADER(0) COMM(0, 2, 59) OP(57, "all_reduce", "float32", 1024, "sum", -1, "completed", "")
                                 OP(58, "broadcast", "float32", 16, "-", 0, "pending", ""),
                             HEADER(1) COMM(1, 2, 58) OP(57, "all_reduce", "float32", 1024, "sum", -1, "pending", "")};
    CU_ASSERT_EQUAL(verdict(behind, 2, line, sizeof line), 1);
    CU_ASSERT_STRING_EQUAL(line, "rank 1 stopped at seq 57 all_reduce float32 x1024 sum (not completed); rank 0 is at "
                                 "seq 58 broadcast float32 x16 root 0 (not completed)");
    const char *nothing[2] = {HEADER(0) COMM(0, 2, 1) OP(0, "all_reduce", "float32", 4, "sum", -1, "pending", ""),
                              HEADER(1) COMM(1, 2, 0)};
    verdict(nothing, 2, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "rank 1 issued nothing on communicator 1234abcd"));
    /* a rank with no dump */
    const char *missing[2] = {HEADER(0) COMM(0, 3, 1) OP(0, "all_reduce", "float32", 4, "sum", -1, "pending", ""),
                              HEADER(2) COMM(2, 3, 1) OP(0, "all_reduce", "float32", 4, "sum", -1, "pending", "")};
    verdict(missing, 2, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "rank(s) 1 of communicator 1234abcd left no dump"));
    /* in step, not completed */
    const char *stuck[2] = {HEADER(0) COMM(0, 2, 1) OP(0, "all_gather", "int8", 4, "-", -1, "pending", ""),
                            HEADER(1) COMM(1, 2, 1) OP(0, "all_gather", "int8", 4, "-", -1, "completed", "")};
    CU_ASSERT_EQUAL(verdict(stuck, 2, line, sizeof line), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "every rank issued seq 0 of communicator 1234abcd, all_gather int8 x4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "not completed on rank(s) 0"));
    const char *fine[2] = {HEADER(0) COMM(0, 2, 1) OP(0, "all_gather", "int8", 4, "-", -1, "completed", ""),
                           HEADER(1) COMM(1, 2, 1) OP(0, "all_gather", "int8", 4, "-", -1, "completed", "")};
    CU_ASSERT_EQUAL(verdict(fine, 2, line, sizeof line), 0);
    /* every kind, judged once, printed as text and as JSON: the same verdict */
    const struct {
        const char *const *texts;
        const char *kind;
    } kinds[] = {{count, "divergence"}, {tags, "divergence"}, {root, "divergence"}, {p2p, "consistent"},
                 {behind, "behind"},    {nothing, "behind"}, {missing, "missing_dump"}, {stuck, "not_completed"},
                 {fine, "consistent"}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) json_decref(judged_json(kinds[i].texts, 2, kinds[i].kind));
    json_t *doc = judged_json(count, 2, "divergence"), *v = json_object_get(doc, "verdict");
    CU_ASSERT_STRING_EQUAL(jstr(v, "field"), "count");
    CU_ASSERT_EQUAL(json_integer_value(jat(v, "values", 1)), 1000);
    json_decref(doc);
    doc = judged_json(tags, 2, "divergence"), v = json_object_get(doc, "verdict");
    CU_ASSERT(json_is_string(jat(v, "values", 0)) && !strcmp(json_string_value(jat(v, "values", 0)), "step 5")); /* no quotes */
    json_decref(doc);
    doc = judged_json(behind, 2, "behind"), v = json_object_get(doc, "verdict");
    CU_ASSERT_EQUAL(jint(v, "seq"), 57);
    CU_ASSERT_EQUAL(jint(v, "ahead_seq"), 58);
    CU_ASSERT_EQUAL(json_integer_value(jat(v, "ranks", 0)), 1);
    CU_ASSERT_STRING_EQUAL(jstr(jat(v, "ops", 1), "coll"),
                           "broadcast");
    json_decref(doc);
    doc = judged_json(nothing, 2, "behind"), v = json_object_get(doc, "verdict");
    CU_ASSERT(json_is_null(json_object_get(v, "seq")));
    CU_ASSERT(json_is_null(jat(v, "ops", 0)));
    json_decref(doc);
    doc = judged_json(missing, 2, "missing_dump"), v = json_object_get(doc, "verdict");
    CU_ASSERT_EQUAL(json_array_size(json_object_get(v, "ranks")), 1);
    CU_ASSERT_EQUAL(json_integer_value(jat(v, "ranks", 0)), 1);
    CU_ASSERT_STRING_EQUAL(jstr(v, "comm"), "1234abcd");
    json_decref(doc);
    doc = judged_json(stuck, 2, "not_completed"), v = json_object_get(doc, "verdict");
    CU_ASSERT_EQUAL(json_integer_value(jat(v, "ranks", 0)), 0);
    CU_ASSERT_STRING_EQUAL(jstr(json_object_get(v, "op"), "coll"), "all_gather");
    json_decref(doc);
}

/* Hostile dumps: each refused with a reason, nothing kept, no crash. */
/* A recovered communicator names the one it came from: kept by the reader, said by the report. */
static void test_recovered_link(void) {
#define COMM_FROM(r) "{\"type\":\"comm\",\"comm\":0,\"key\":\"1234abcd\",\"rank\":" #r ",\"nranks\":2," \
                     "\"state\":\"live\",\"why\":\"\",\"from\":\"9999abcd\",\"how\":\"recover\",\"next_seq\":0}\n"
    const char *texts[] = {HEADER(0) COMM_FROM(0), HEADER(1) COMM_FROM(1)};
    json_t *doc = judged_json(texts, 2, "consistent");
    json_t *c = jat(doc, "comms", 0);
    CU_ASSERT_STRING_EQUAL(jstr(c, "from"), "9999abcd");
    CU_ASSERT_STRING_EQUAL(jstr(c, "how"), "recover");
    json_decref(doc);
#undef COMM_FROM
}

static void test_hostile_dumps(void) {
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {"", "empty file"},
        {HEADER(0) COMM(0, 2, 1) "{\"type\":\"op\"", "torn"},
        {"not json\n", "not JSON"},
        {"[1,2]\n", "not a JSON object"},
        {COMM(0, 2, 1), "first line is not the header"},
        {HEADER(0) HEADER(0), "a second header"},
        {"{\"type\":\"header\",\"hidet_nccl_trace\":2}\n", "format 2"},
        {HEADER(0) OP(0, "all_reduce", "float32", 4, "sum", -1, "pending", ""), "before its \"comm\" line"},
        {HEADER(0) COMM(0, 2, 1) COMM(0, 2, 1), "appears twice"},
        {HEADER(0) COMM(5, 2, 1), "rank 5 of 2 ranks"},
        {HEADER(0) COMM(0, 2, 1) OP(1, "all_reduce", "float32", 4, "sum", -1, "pending", ""), "not below"},
        {HEADER(0) COMM(0, 2, 3) OP(1, "all_reduce", "float32", 4, "sum", -1, "pending", "")
             OP(0, "all_reduce", "float32", 4, "sum", -1, "pending", ""), "does not follow"},
        {HEADER(0) "{\"type\":\"comm\",\"comm\":0,\"key\":\"xyz\",\"rank\":0,\"nranks\":1,\"state\":\"live\",\"why\":\"\","
                   "\"next_seq\":0}\n", "not 8 hex digits"},
        {HEADER(0) "{\"type\":\"comm\",\"comm\":-4}\n", "\"comm\" is -4"},
        {HEADER(0) "{\"type\":\"comm\",\"comm\":0,\"key\":\"1234abcd\",\"rank\":0,\"nranks\":1,\"state\":\"live\","
                   "\"why\":\"\",\"from\":\"zz\",\"how\":\"recover\",\"next_seq\":0}\n", "from \"zz\" is not 8 hex"},
        {HEADER(0) "{\"type\":\"comm\",\"comm\":0,\"key\":\"1234abcd\",\"rank\":0,\"nranks\":1,\"state\":\"live\","
                   "\"why\":\"\",\"from\":\"00000001\",\"how\":\"split\",\"next_seq\":0}\n", "is not \"recover\""},
        {HEADER(0) "{\"type\":\"comm\",\"comm\":0,\"key\":\"1234abcd\",\"rank\":0,\"nranks\":1,\"state\":\"live\","
                   "\"why\":\"\",\"from\":\"00000001\",\"next_seq\":0}\n", "\"how\" is missing"},
        {HEADER(0) "{\"type\":\"what\"}\n", "unknown type"},
        {HEADER(0) "{\"type\":\"op\",\"type\":\"op\"}\n", "not JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tr_set_t set = {0};
        FILE *f = cases[i].text[0] ? fmemopen((void *)cases[i].text, strlen(cases[i].text), "r") : tmpfile();
        char err[512] = "";
        CU_ASSERT_EQUAL(tr_read_file(&set, f, "x", err, sizeof err), -1);
        fclose(f);
        if (strstr(err, cases[i].needle) == NULL) fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, err, cases[i].needle);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].needle));
        CU_ASSERT_EQUAL(set.ndumps, 0);
        tr_free(&set);
    }
    /* a line past the limit */
    size_t big = TR_MAX_LINE + 100;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    huge[big - 1] = '\n';
    huge[big] = '\0';
    tr_set_t set = {0};
    FILE *f = fmemopen(huge, big, "r");
    char err[512] = "";
    CU_ASSERT_EQUAL(tr_read_file(&set, f, "x", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "longer than"));
    fclose(f);
    free(huge);
}

/* ------------------------------------------------------------ the tool on directories */

/* Everything a stream got, as a string (caller frees). */
static char *text_of(FILE *f) {
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    char *t = malloc((size_t)n + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    rewind(f);
    t[fread(t, 1, (size_t)n, f)] = '\0';
    return t;
}

/* hidet-nccl-trace with args (at most 15, NULL-terminated): its exit status (-1: it did not
 * exit, e.g. a sanitizer abort), its stdout in *out and its stderr in *err (caller frees); err
 * NULL: stderr into *out too. */
static int run_tool_args(const char *const *args, char **out, char **err) {
    FILE *f = tmpfile(), *e = err ? tmpfile() : f;
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    char *argv[16] = {(char *)g_tool};
    for (int i = 0; args[i] != NULL && i < 14; i++) argv[i + 1] = (char *)args[i];
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fileno(f), 1);
        dup2(fileno(e), 2);
        execv(g_tool, argv);
        _exit(127);
    }
    int status = 0;
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    *out = text_of(f);
    fclose(f);
    if (err != NULL) {
        *err = text_of(e);
        fclose(e);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* hidet-nccl-trace ARG: its exit status and its stdout and stderr together in *out. */
static int run_tool(const char *arg, char **out) {
    const char *args[] = {arg, NULL};
    return run_tool_args(args, out, NULL);
}

/* Whether text holds a byte a terminal acts on: a C0 control but the newline, DEL, a C1
 * control (U+0080 .. U+009F), a bidirectional override (U+202E), or a byte no UTF-8 has. */
static int raw_control(const char *text) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f || *p == 0xff || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0) ||
            (p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xae))
            return 1;
    return 0;
}

/* tr_say's escaping, byte by byte: controls, Unicode controls, what is not UTF-8 (overlong,
 * surrogate, past U+10FFFF, cut short), and what is kept (UTF-8 text, a no-break space). */
static void test_escaping(void) {
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain text", "plain text"},
        {"a\\b", "a\\\\b"},
        {"\x1b[2J\r\n\t\x7f", "\\x1b[2J\\x0d\\x0a\\x09\\x7f"},
        {"\xc2\x9b" "1m \xc2\x80", "\\u009b1m \\u0080"},
        {"\xc2\xa0 \xc3\xa9 \xf0\x9f\x98\x80", "\xc2\xa0 \xc3\xa9 \xf0\x9f\x98\x80"},
        {"\xe2\x80\xae" "abc\xe2\x81\xa6\xe2\x81\xa9\xe2\x80\x8f", "\\u202e" "abc\\u2066\\u2069\xe2\x80\x8f"},
        {"\xed\xa0\x80", "\\xed\\xa0\\x80"},
        {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},
        {"\xe0\x80\x80\xc0\xaf", "\\xe0\\x80\\x80\\xc0\\xaf"},
        {"cut \xe2\x80", "cut \\xe2\\x80"},
        {"\xff\xfe", "\\xff\\xfe"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = tmpfile();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        tr_say(f, "[%s]", cases[i].in);
        char *got = text_of(f);
        fclose(f);
        char want[256];
        snprintf(want, sizeof want, "[%s]\n", cases[i].out);
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "case %zu: '%s', wanted '%s'\n", i, got, want);
            CU_FAIL("escaping");
        }
        free(got);
    }
    char big[5000]; /* past tr_say's buffer on the stack: all of it, escaped */
    memset(big, '\x1b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    FILE *f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    tr_say(f, "%s", big);
    char *got = text_of(f);
    fclose(f);
    CU_ASSERT_EQUAL(strlen(got), 4 * (sizeof big - 1) + 1);
    CU_ASSERT_FALSE(raw_control(got));
    free(got);
}

/* A directory with no dump (empty, or other files only): said, nothing read, and the tool
 * exits 2. Listing it called qsort(NULL, 0, ...), which the UBSan build aborts on. */
static void test_no_dumps(void) {
    char dir[1100], path[1200];
    snprintf(dir, sizeof dir, "%s/no_dumps", g_dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* other files only */
            snprintf(path, sizeof path, "%s/hidet-nccl-trace.notes.txt", dir);
            FILE *f = fopen(path, "w");
            CU_ASSERT_PTR_NOT_NULL_FATAL(f);
            fclose(f);
        }
        tr_set_t set = {0};
        int refused = 0;
        FILE *err = tmpfile();
        CU_ASSERT_PTR_NOT_NULL_FATAL(err);
        CU_ASSERT_EQUAL(tr_read_path(&set, dir, err, &refused), 0);
        char *said = text_of(err);
        fclose(err);
        CU_ASSERT_EQUAL(set.ndumps, 0);
        CU_ASSERT_EQUAL(refused, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(said, "holds no dump (no hidet-nccl-trace.*.jsonl file)"));
        free(said);
        char *out = NULL;
        CU_ASSERT_EQUAL(run_tool(dir, &out), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "holds no dump"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "hidet-nccl-trace: no dump could be read (none found)"));
        free(out);
    }
    unlink(path);
    rmdir(dir);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

/* Every string the tool prints from a dump (host, reason, state, why, collective, dtype, op,
 * tag) and every file name, with terminal escapes in it: printed escaped, never raw. */
static void test_escapes(void) {
    static const char dump[] =
        "{\"type\":\"header\",\"hidet_nccl_trace\":1,\"host\":\"\\u001b[2J\\u001b[Hh\",\"pid\":1,\"rank\":0,"
        "\"time\":1.0,\"nccl_version\":22809,\"reason\":\"r\\u009b31m \\u202eevil\"}\n"
        "{\"type\":\"comm\",\"comm\":0,\"key\":\"1234abcd\",\"rank\":0,\"nranks\":2,\"state\":\"\\u001b[5m\","
        "\"why\":\"line\\nbreak \\\\x1b\",\"next_seq\":1,\"entries\":2048,\"completion\":true}\n"
        "{\"type\":\"op\",\"comm\":0,\"key\":\"1234abcd\",\"seq\":0,\"coll\":\"all_reduce\\u0007\","
        "\"dtype\":\"float32\\u007f\",\"count\":4,\"op\":\"sum\\r\",\"peer\":-1,\"stream\":\"0x5\",\"t\":1.0,"
        "\"nccl_result\":0,\"state\":\"pending\",\"tag\":\"\\u001b]0;title\\u0007\"}\n";
    char dir[1100], good[1200], bad[1200], odd[1200];
    snprintf(dir, sizeof dir, "%s/escapes", g_dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
    snprintf(good, sizeof good, "%s/hidet-nccl-trace.\x1b[31m.jsonl", dir);
    write_text(good, dump);
    snprintf(bad, sizeof bad, "%s/hidet-nccl-trace.\x1b[1m.bad.jsonl", dir); /* refused: its name is said */
    write_text(bad, "not json \x1b[2J\n");
    snprintf(odd, sizeof odd, "%s/hidet-nccl-trace.\xff\x9b.jsonl", dir); /* not UTF-8 */
    write_text(odd, "");
    tr_set_t set = {0};
    int refused = 0;
    FILE *out = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    CU_ASSERT_EQUAL(tr_read_path(&set, dir, out, &refused), 3);
    CU_ASSERT_EQUAL(set.ndumps, 1);
    CU_ASSERT_EQUAL(refused, 2);
    CU_ASSERT_EQUAL(tr_report(&set, out), 1); /* rank 1 left no dump */
    tr_free(&set);
    char *text = text_of(out);
    fclose(out);
    static const char *const shown[] = {
        "\\x1b[2J\\x1b[Hh",           /* host */
        "r\\u009b31m \\u202eevil",      /* reason */
        "\\x1b[5m",                     /* the communicator's state */
        "line\\x0abreak \\\\x1b",       /* why: a newline, and a backslash that is one */
        "all_reduce\\x07 float32\\x7f", /* collective, dtype */
        "sum\\x0d",                     /* op */
        "tag '\\x1b]0;title\\x07'",     /* tag */
        "hidet-nccl-trace.\\x1b[31m.jsonl",
        "hidet-nccl-trace.\\x1b[1m.bad.jsonl: line 1: not JSON",
        "hidet-nccl-trace.\\xff\\x9b.jsonl: line 0: empty file",
    };
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
        if (strstr(text, shown[i]) == NULL) {
            fprintf(stderr, "'%s' is not in what was printed:\n%s\n", shown[i], text);
            CU_FAIL("escaped");
        }
    CU_ASSERT_FALSE(raw_control(text));
    free(text);
    char *tool = NULL;
    CU_ASSERT_EQUAL(run_tool(dir, &tool), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(tool, shown[0]));
    CU_ASSERT_PTR_NOT_NULL(strstr(tool, shown[8]));
    CU_ASSERT_FALSE(raw_control(tool));
    free(tool);
    /* --json: valid JSON, ASCII only, the strings as they were (a byte of a name that is not
     * UTF-8 as the text \xNN) */
    char *err = NULL;
    const char *args[] = {"--json", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(args, &tool, &err), 1);
    for (const unsigned char *p = (const unsigned char *)tool; *p; p++)
        if (*p >= 0x7f || (*p < 0x20 && *p != '\n')) {
            CU_FAIL("a byte of the JSON that is not printable ASCII");
            break;
        }
    json_error_t je;
    json_t *doc = json_loads(tool, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    json_t *r0 = jat(jat(doc, "comms", 0), "ranks", 0);
    CU_ASSERT_STRING_EQUAL(jstr(r0, "host"), "\x1b[2J\x1b[Hh");
    CU_ASSERT_STRING_EQUAL(jstr(r0, "why"), "line\nbreak \\x1b");
    CU_ASSERT_STRING_EQUAL(jstr(jat(r0, "ops", 0), "dtype"),
                           "float32\x7f");
    CU_ASSERT_PTR_NOT_NULL(strstr(jstr(r0, "file"), "hidet-nccl-trace.\x1b[31m.jsonl"));
    CU_ASSERT_EQUAL(jint(doc, "files_skipped"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "hidet-nccl-trace.\\xff\\x9b.jsonl: line 0: empty file"));
    json_decref(doc);
    free(tool);
    free(err);
    /* a file name that is not UTF-8 reaches the JSON as \xNN text */
    unlink(bad);
    write_text(odd, dump);
    CU_ASSERT_EQUAL(run_tool_args(args, &tool, &err), 1);
    doc = json_loads(tool, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    json_t *comm = jat(doc, "comms", 0);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(comm, "ranks")), 2);
    json_t *r1 = jat(comm, "ranks", 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(jstr(r1, "file"), "hidet-nccl-trace.\\xff\\x9b.jsonl"));
    json_decref(doc);
    free(tool);
    free(err);
    unlink(good);
    unlink(bad);
    unlink(odd);
    rmdir(dir);
}

/* ------------------------------------------------------------------- the tool's options */

#define COMM_K(id, key, r, n, next)                                                                               \
    "{\"type\":\"comm\",\"comm\":" #id ",\"key\":\"" key "\",\"rank\":" #r ",\"nranks\":" #n ",\"state\":\"live\"," \
    "\"why\":\"\",\"next_seq\":" #next ",\"entries\":2048,\"completion\":true}\n"
#define SUM_K(id, key, seq, count)                                                                                  \
    "{\"type\":\"op\",\"comm\":" #id ",\"key\":\"" key "\",\"seq\":" #seq ",\"coll\":\"all_reduce\",\"dtype\":"    \
    "\"float32\",\"count\":" #count ",\"op\":\"sum\",\"peer\":-1,\"stream\":\"0x5\",\"t\":1.0,\"nccl_result\":0,"   \
    "\"state\":\"completed\",\"tag\":\"\"}\n"
/* Rank r of 4: communicator 1234abcd (seq 1: count 1024, or 1000 where r is 1) and 5678ef01
 * (one all_reduce, the same everywhere). */
#define JOB(r, count1)                                                                                              \
    HEADER(r) COMM_K(0, "1234abcd", r, 4, 2) SUM_K(0, "1234abcd", 0, 16) SUM_K(0, "1234abcd", 1, count1)       \
        COMM_K(1, "5678ef01", r, 4, 1) SUM_K(1, "5678ef01", 0, 8)

/* g_dir/name holding hidet-nccl-trace.<r>.jsonl = texts[r] for each r, its path into dir. */
static void dump_dir(const char *name, const char *const *texts, int n, char *dir, size_t size) {
    snprintf(dir, size, "%s/%s", g_dir, name);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
    for (int r = 0; r < n; r++) {
        char path[1300];
        snprintf(path, sizeof path, "%s/hidet-nccl-trace.%d.jsonl", dir, r);
        write_text(path, texts[r]);
    }
}

static void remove_dumps(const char *dir, int n) {
    for (int r = 0; r < n; r++) {
        char path[1300];
        snprintf(path, sizeof path, "%s/hidet-nccl-trace.%d.jsonl", dir, r);
        unlink(path);
    }
    CU_ASSERT_EQUAL(rmdir(dir), 0);
}

/* The tool's stdout parsed as JSON (the test fails if it is not). */
static json_t *parsed(const char *out) {
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    if (doc == NULL) fprintf(stderr, "not JSON (%s, line %d):\n%s\n", je.text, je.line, out);
    CU_ASSERT_PTR_NOT_NULL(doc);
    return doc;
}

/* --help and -h: the whole usage on stdout, exit 0; no argument, an unknown option, an option
 * without its value or given twice: a message on stderr, nothing on stdout, exit 2. */
static void test_tool_usage(void) {
    static const char *const help[][2] = {{"--help", NULL}, {"-h", NULL}};
    for (size_t i = 0; i < 2; i++) {
        char *out, *err;
        CU_ASSERT_EQUAL(run_tool_args(help[i], &out, &err), 0);
        static const char *const parts[] = {"usage: hidet-nccl-trace [OPTIONS] DIR | FILE...", "-h, --help", "--json",
                                            "--ranks LIST", "e.g. 0,2-5", "--comm KEY", "exit status:",
                                            "0  nothing wrong found", "1  something wrong found",
                                            "2  usage or input error"};
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++)
            if (strstr(out, parts[k]) == NULL) {
                fprintf(stderr, "'%s' is not in the help:\n%s\n", parts[k], out);
                CU_FAIL("help");
            }
        CU_ASSERT_STRING_EQUAL(err, "");
        free(out);
        free(err);
    }
    static const struct {
        const char *args[4], *said;
    } bad[] = {
        {{NULL}, "usage: hidet-nccl-trace"},
        {{"--bogus", "dir", NULL}, "hidet-nccl-trace: unknown option '--bogus' (see --help)"},
        {{"dir", "-j", NULL}, "unknown option '-j'"},
        {{"--jsonx", "dir", NULL}, "unknown option '--jsonx'"},
        {{"dir", "--ranks", NULL}, "--ranks needs a value"},
        {{"--comm", NULL}, "--comm needs a value"},
        {{"--ranks", "0", "--ranks=1", "dir"}, "--ranks given twice"},
        {{"--json", NULL}, "usage: hidet-nccl-trace"}, /* options but no path */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out, *err;
        CU_ASSERT_EQUAL(run_tool_args(bad[i].args, &out, &err), 2);
        CU_ASSERT_STRING_EQUAL(out, "");
        if (strstr(err, bad[i].said) == NULL) fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, err, bad[i].said);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].said));
        free(out);
        free(err);
    }
}

/* --json on a divergence and on consistent dumps: one document, the verdict the text's first
 * line says, then each communicator and rank; options may follow the path. */
static void test_tool_json(void) {
    const char *job[4] = {JOB(0, 1024), JOB(1, 1000), JOB(2, 1024), JOB(3, 1024)};
    char dir[1100], *out, *err;
    dump_dir("json", job, 4, dir, sizeof dir);
    const char *text[] = {dir, NULL}, *json[] = {dir, "--json", NULL};
    CU_ASSERT_EQUAL(run_tool_args(text, &out, &err), 1);
    static const char first[] = "ranks disagree at seq 1 of communicator 1234abcd: count 1024 on rank 0, 1000 on rank 1\n";
    CU_ASSERT_EQUAL(strncmp(out, first, strlen(first)), 0);
    free(out);
    free(err);
    CU_ASSERT_EQUAL(run_tool_args(json, &out, &err), 1);
    CU_ASSERT_STRING_EQUAL(err, "");
    json_t *doc = parsed(out);
    if (doc != NULL) {
        CU_ASSERT_EQUAL(jint(doc, "hidet_nccl_trace_report"), 1);
        json_t *v = json_object_get(doc, "verdict");
        CU_ASSERT_STRING_EQUAL(jstr(v, "kind"), "divergence");
        CU_ASSERT_EQUAL(strncmp(jstr(v, "text"), first, strlen(first) - 1), 0);
        CU_ASSERT_STRING_EQUAL(jstr(v, "comm"), "1234abcd");
        CU_ASSERT_EQUAL(jint(v, "seq"), 1);
        CU_ASSERT_EQUAL(json_integer_value(jat(v, "ranks", 0)), 0);
        CU_ASSERT_EQUAL(json_integer_value(jat(v, "ranks", 1)), 1);
        CU_ASSERT_STRING_EQUAL(jstr(v, "field"), "count");
        CU_ASSERT_EQUAL(json_integer_value(jat(v, "values", 0)), 1024);
        CU_ASSERT_EQUAL(json_integer_value(jat(v, "values", 1)), 1000);
        CU_ASSERT_EQUAL(jint(jat(v, "ops", 1), "count"), 1000);
        CU_ASSERT_STRING_EQUAL(jstr(jat(v, "ops", 1), "state"), "completed");
        CU_ASSERT(json_is_null(json_object_get(json_object_get(doc, "options"), "ranks")));
        CU_ASSERT(json_is_null(json_object_get(json_object_get(doc, "options"), "comm")));
        CU_ASSERT_EQUAL(jint(doc, "dumps"), 4);
        CU_ASSERT_EQUAL(jint(doc, "files_skipped"), 0);
        CU_ASSERT(json_is_null(json_object_get(doc, "missing_listed")));
        CU_ASSERT_EQUAL(json_array_size(json_object_get(doc, "comms")), 2);
        json_t *c0 = jat(doc, "comms", 0), *c1 = jat(doc, "comms", 1);
        CU_ASSERT_STRING_EQUAL(jstr(c0, "key"), "1234abcd");
        CU_ASSERT_EQUAL(jint(c0, "nranks"), 4);
        CU_ASSERT_EQUAL(jint(c0, "dumps"), 4);
        CU_ASSERT_STRING_EQUAL(jstr(json_object_get(c0, "verdict"), "kind"), "divergence");
        CU_ASSERT_EQUAL(json_array_size(json_object_get(c0, "ranks")), 4);
        json_t *r1 = jat(c0, "ranks", 1);
        CU_ASSERT_EQUAL(jint(r1, "rank"), 1);
        CU_ASSERT_STRING_EQUAL(jstr(r1, "host"), "h");
        CU_ASSERT_EQUAL(jint(r1, "pid"), 1);
        CU_ASSERT_EQUAL(jint(r1, "id"), 0);
        CU_ASSERT_STRING_EQUAL(jstr(r1, "state"), "live");
        CU_ASSERT_EQUAL(jint(r1, "next_seq"), 2);
        CU_ASSERT_STRING_EQUAL(jstr(r1, "reason"), "test");
        CU_ASSERT_PTR_NOT_NULL(strstr(jstr(r1, "file"), "/hidet-nccl-trace.1.jsonl"));
        CU_ASSERT_EQUAL(json_array_size(json_object_get(r1, "ops")), 2);
        CU_ASSERT_EQUAL(jint(jat(r1, "ops", 1), "seq"), 1);
        CU_ASSERT_EQUAL(jint(jat(r1, "ops", 1), "count"), 1000);
        CU_ASSERT_STRING_EQUAL(jstr(jat(r1, "ops", 1), "coll"), "all_reduce");
        CU_ASSERT_STRING_EQUAL(jstr(c1, "key"), "5678ef01");
        json_t *v1 = json_object_get(c1, "verdict");
        CU_ASSERT_STRING_EQUAL(jstr(v1, "kind"), "consistent");
        CU_ASSERT_EQUAL(jint(v1, "seq"), 0);
        CU_ASSERT_EQUAL(json_array_size(json_object_get(v1, "ranks")), 0);
        CU_ASSERT_EQUAL(jint(json_object_get(v1, "op"), "count"), 8);
    }
    json_decref(doc);
    free(out);
    free(err);
    remove_dumps(dir, 4);
    /* consistent: exit 0 */
    const char *fine[2] = {HEADER(0) COMM(0, 2, 1) OP(0, "all_gather", "int8", 4, "-", -1, "completed", "step 0"),
                           HEADER(1) COMM(1, 2, 1) OP(0, "all_gather", "int8", 4, "-", -1, "completed", "step 0")};
    dump_dir("json_fine", fine, 2, dir, sizeof dir);
    const char *fine_json[] = {"--json", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(fine_json, &out, &err), 0);
    doc = parsed(out);
    json_t *v = json_object_get(doc, "verdict");
    CU_ASSERT_STRING_EQUAL(jstr(v, "kind"), "consistent");
    CU_ASSERT_STRING_EQUAL(jstr(v, "text"), "no divergence on communicator 1234abcd: every rank at seq 0 all_gather int8 "
                                            "x4 (completed, tag 'step 0')");
    CU_ASSERT_EQUAL(jint(v, "seq"), 0);
    CU_ASSERT_STRING_EQUAL(jstr(json_object_get(v, "op"), "tag"), "step 0");
    CU_ASSERT_EQUAL(json_array_size(json_object_get(doc, "comms")), 1);
    json_decref(doc);
    free(out);
    free(err);
    remove_dumps(dir, 2);
}

/* --ranks: only the listed ranks' dumps; the others are neither judged nor missing; a listed
 * rank with no dump is missing (exit 1); a bad list names itself, exit 2. */
static void test_tool_ranks(void) {
    const char *job[4] = {JOB(0, 1024), JOB(1, 1000), JOB(2, 1024), JOB(3, 1024)};
    char dir[1100], *out, *err;
    dump_dir("ranks", job, 3, dir, sizeof dir); /* rank 3 left no dump */
    const char *plain[] = {dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(plain, &out, &err), 1); /* rank 1 diverges */
    free(out);
    free(err);
    /* rank 1 left out, rank 3 not listed: consistent */
    const char *without[] = {"--ranks", "0,2", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(without, &out, &err), 0);
    CU_ASSERT_EQUAL(strncmp(out, "no divergence on communicator 1234abcd: every rank at seq 1", 59), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "communicator 1234abcd (4 ranks, dumps of 2)"));
    CU_ASSERT_PTR_NULL(strstr(out, "left no dump"));
    CU_ASSERT_PTR_NULL(strstr(out, "  rank 1 "));
    CU_ASSERT_STRING_EQUAL(err, "");
    free(out);
    free(err);
    /* rank 3 listed, no dump: missing */
    const char *listed[] = {"--ranks=2-3,0", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(listed, &out, &err), 1);
    CU_ASSERT_EQUAL(strncmp(out, "rank(s) 3 chosen by --ranks left no dump (dead, or no trace directory)\n", 71), 0);
    free(out);
    free(err);
    const char *listed_json[] = {"--json", "--ranks", "7,0,2-3,5-6", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(listed_json, &out, &err), 1);
    json_t *doc = parsed(out), *v = json_object_get(doc, "verdict");
    CU_ASSERT_STRING_EQUAL(jstr(v, "kind"), "missing_dump");
    CU_ASSERT(json_is_null(json_object_get(v, "comm")));
    CU_ASSERT(json_is_null(json_object_get(v, "seq")));
    CU_ASSERT_EQUAL(json_array_size(json_object_get(v, "ranks")), 4);
    CU_ASSERT_EQUAL(json_integer_value(jat(v, "ranks", 0)), 3);
    CU_ASSERT_EQUAL(json_integer_value(jat(v, "ranks", 3)), 7);
    CU_ASSERT_EQUAL(jint(v, "more_ranks"), 0);
    CU_ASSERT_STRING_EQUAL(jstr(json_object_get(doc, "options"), "ranks"), "0,2-3,5-7");
    CU_ASSERT_STRING_EQUAL(jstr(json_object_get(doc, "missing_listed"), "kind"), "missing_dump");
    CU_ASSERT_EQUAL(jint(doc, "dumps"), 2);
    CU_ASSERT_EQUAL(jint(jat(doc, "comms", 0), "dumps"), 2);
    json_decref(doc);
    free(out);
    free(err);
    /* rank 1 listed: the divergence is the verdict, the missing rank said too */
    const char *with_1[] = {"--ranks", "0-1,3", "--json", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(with_1, &out, &err), 1);
    doc = parsed(out);
    CU_ASSERT_STRING_EQUAL(jstr(json_object_get(doc, "verdict"), "kind"), "divergence");
    CU_ASSERT_EQUAL(json_integer_value(jat(json_object_get(doc, "missing_listed"), "ranks", 0)), 3);
    json_decref(doc);
    free(out);
    free(err);
    static const struct {
        const char *list, *why;
    } bad[] = {
        {"", "the list is empty"},
        {"0,,2", "a rank is missing at byte 3"},
        {"1,", "a rank is missing at byte 3"},
        {",1", "a rank is missing at byte 1"},
        {"-1", "a rank is missing at byte 1"},
        {"3-1", "the range 3-1 runs backwards"},
        {"1-2-3", "'-' at byte 4: a comma or the end was expected"},
        {"0x1", "'x' at byte 2"},
        {"a", "'a' at byte 1 is not a digit"},
        {" 1", "' ' at byte 1 is not a digit"},
        {"+1", "'+' at byte 1 is not a digit"},
        {"1;2", "';' at byte 2"},
        {"2147483648", "the rank at byte 1 is larger than 1073741824"},
        {"1-99999999999999999999", "the rank at byte 3 is larger than"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[] = {"--ranks", bad[i].list, dir, NULL};
        CU_ASSERT_EQUAL(run_tool_args(args, &out, &err), 2);
        CU_ASSERT_STRING_EQUAL(out, "");
        char want[160];
        snprintf(want, sizeof want, "hidet-nccl-trace: --ranks '%s': %s", bad[i].list, bad[i].why);
        if (strstr(err, want) == NULL) fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, err, want);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
        free(out);
        free(err);
    }
    remove_dumps(dir, 3);
}

/* The parser itself: ranges sorted and merged, membership. */
static void test_rank_lists(void) {
    tr_ranks_t r;
    char err[160];
    CU_ASSERT_EQUAL_FATAL(tr_parse_ranks("9,0,2-5,4-6,8,1073741824", &r, err, sizeof err), 0);
    CU_ASSERT_EQUAL(r.n, 4); /* 0, 2-6, 8-9, and the largest rank */
    if (r.n == 4) {
        CU_ASSERT(r.r[0].lo == 0 && r.r[0].hi == 0);
        CU_ASSERT(r.r[1].lo == 2 && r.r[1].hi == 6);
        CU_ASSERT(r.r[2].lo == 8 && r.r[2].hi == 9);
        CU_ASSERT(r.r[3].lo == TR_MAX_RANK && r.r[3].hi == TR_MAX_RANK);
    }
    tr_ranks_free(&r);
    CU_ASSERT_EQUAL_FATAL(tr_parse_ranks("007,1-3", &r, err, sizeof err), 0);
    CU_ASSERT(tr_ranks_has(&r, 7) && tr_ranks_has(&r, 1) && tr_ranks_has(&r, 3));
    CU_ASSERT(!tr_ranks_has(&r, 0) && !tr_ranks_has(&r, 4) && !tr_ranks_has(&r, 8));
    tr_ranks_free(&r);
    CU_ASSERT_EQUAL(tr_parse_ranks("1,,2", &r, err, sizeof err), -1);
    CU_ASSERT_PTR_NULL(r.r);
}

/* --comm: only that communicator (its key as printed, any case); a key no dump holds names
 * the keys there, exit 2; a key that is not one, exit 2. */
static void test_tool_comm(void) {
    const char *job[4] = {JOB(0, 1024), JOB(1, 1000), JOB(2, 1024), JOB(3, 1024)};
    char dir[1100], *out, *err;
    dump_dir("comm", job, 4, dir, sizeof dir);
    const char *one[] = {"--comm", "5678EF01", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(one, &out, &err), 0);
    CU_ASSERT_EQUAL(strncmp(out, "no divergence on communicator 5678ef01: every rank at seq 0 all_reduce float32 x8 sum "
                                 "(completed)\n", 95), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "1234abcd"));
    free(out);
    free(err);
    const char *diverged[] = {"--comm=1234abcd", "--json", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(diverged, &out, &err), 1);
    json_t *doc = parsed(out);
    CU_ASSERT_STRING_EQUAL(jstr(json_object_get(doc, "verdict"), "kind"), "divergence");
    CU_ASSERT_STRING_EQUAL(jstr(json_object_get(doc, "options"), "comm"), "1234abcd");
    CU_ASSERT_EQUAL(json_array_size(json_object_get(doc, "comms")), 1);
    CU_ASSERT_STRING_EQUAL(jstr(jat(doc, "comms", 0), "key"), "1234abcd");
    json_decref(doc);
    free(out);
    free(err);
    /* both options: rank 1 left out of 1234abcd */
    const char *both[] = {"--comm", "1234abcd", "--ranks", "0,2-3", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(both, &out, &err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "communicator 1234abcd (4 ranks, dumps of 3)"));
    free(out);
    free(err);
    const char *unknown[] = {"--comm", "deadbeef", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(unknown, &out, &err), 2);
    CU_ASSERT_STRING_EQUAL(out, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "hidet-nccl-trace: --comm deadbeef: none of the 4 dump(s) read holds that "
                                       "communicator; the keys they hold: 1234abcd, 5678ef01"));
    free(out);
    free(err);
    static const char *const not_keys[] = {"xyz", "1234abcd0", "1234abc", "1234abcg", ""};
    for (size_t i = 0; i < sizeof not_keys / sizeof not_keys[0]; i++) {
        const char *args[] = {"--comm", not_keys[i], dir, NULL};
        CU_ASSERT_EQUAL(run_tool_args(args, &out, &err), 2);
        CU_ASSERT_STRING_EQUAL(out, "");
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "a communicator's key is 8 hex digits"));
        free(out);
        free(err);
    }
    remove_dumps(dir, 4);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBFAKE_NCCL.so HIDET_NCCL_TRACE_TOOL\n", argv[0]);
        return 2;
    }
    g_tool = argv[2];
    unsetenv("HIDET_NCCL_RANK");
    int version = 0;
    if (fake_nccl_load(argv[1], &version, &g_log, &g_clear) == NULL) return 1;
    g_new = version >= 22800;
    const char *tmp = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%.900s/traceXXXXXX", tmp);
    if (mkdtemp(g_dir) == NULL) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    static const hn_test_t tests[] = {
        {"the ring wraps; every field as called", test_ring_wraps},
        {"the recorder off", test_recorder_off},
        {"bad tags and trace directories", test_bad_tags_and_dirs},
        {"a dump that cannot be written leaves nothing", test_full_disk},
        {"an abort dumps", test_abort_dumps},
        {"shrink and revoke: checks, failed ids, versions; recover refused without a bootstrap", test_shrink_and_revoke},
        {"the report names every kind of divergence", test_report_kinds},
        {"hostile dumps refused", test_hostile_dumps},
        {"a recovered communicator names the one it came from", test_recovered_link},
        {"escaping what is printed", test_escaping},
        {"a directory with no dump: said, exit 2", test_no_dumps},
        {"terminal escapes in dumps and file names printed escaped", test_escapes},
        {"the tool's usage: --help, unknown options, exit 2", test_tool_usage},
        {"--json: the verdict and the detail, parsed back", test_tool_json},
        {"--ranks lists parsed strictly", test_rank_lists},
        {"--ranks: only those dumps; a listed rank with no dump is missing", test_tool_ranks},
        {"--comm: only that communicator; an unknown key lists the keys", test_tool_comm},
        {NULL, NULL},
    };
    return hn_run_tests("flight_recorder", tests);
}

/* The flight recorder, shrink and revoke on the CPU, through the recording stand-in for NCCL
 * (tools/support/fake_nccl.c), and hidet-nccl-trace's reader and report on synthetic dumps
 * of every divergence kind and on hostile ones (the text and the JSON of one judgement), and
 * the tool itself on a directory with no dump, on dumps and file names holding terminal
 * escapes, and with its options (--help, --json, --ranks, --comm, unknown ones).
 *   flight_recorder_test LIBFAKE_NCCL.so HIDET_NCCL_TRACE_TOOL
 * Against the fake as NCCL 2.28.9 (shrink and revoke there) and as 2.10.3 (both refused
 * with the version they need). One binary in three files (tests/unit/flight_recorder_test.h):
 * this one holds main, the table and the recorder's cases; flight_recorder_report.c the reader's
 * and the report's; flight_recorder_tool.c the tool's. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"
#include "tests/unit/flight_recorder_test.h"
#include "tools/support/fake_nccl.h"
#include "tools/trace/trace_read.h"

static fake_nccl_log_fn g_log;
static fake_nccl_clear_fn g_clear;
static int g_new; /* the fake is NCCL 2.28 (else 2.10) */
char g_dir[1024];
const char *g_tool; /* hidet-nccl-trace */
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

/* Dumps this process's rings and reads the dump back into *set: communicator id's ring (the
 * test stops when it is not there), or NULL when the dump could not be read. */
static const tr_comm_t *dumped_comm(int id, tr_set_t *set) {
    char path[4096];
    HN_ASSERT_STATUS(hidet_nccl_trace_dump(g_dir, path, sizeof path), HIDET_NCCL_SUCCESS, NULL);
    if (!read_dump(path, set)) return NULL;
    const tr_comm_t *m = comm_of(set, id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    return m;
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
    tr_set_t set = {0};
    const tr_comm_t *m = dumped_comm(id, &set);
    if (m != NULL) {
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

/* A ring asked for 5 entries keeps 8 (rounded up to a power of two: a call finds its slot with a
 * mask): after 20 calls it holds seqs 12 .. 19, each with its own count. */
static void test_ring_rounded_up(void) {
    set_env("HIDET_NCCL_TRACE_ENTRIES", "5");
    static fake_comm_t c = {2, 0};
    int id = adopt(&c);
    for (int i = 0; i < 20; i++)
        HN_ASSERT_STATUS(hidet_nccl_broadcast(id, g_buf, g_buf, (size_t)i + 1, HIDET_NCCL_FLOAT32, 0, STREAM),
                         HIDET_NCCL_SUCCESS, NULL);
    tr_set_t set = {0};
    const tr_comm_t *m = dumped_comm(id, &set);
    if (m != NULL) {
        CU_ASSERT_EQUAL(m->next_seq, 20);
        CU_ASSERT_EQUAL(m->nops, 8);
        for (size_t k = 0; k < m->nops; k++) {
            CU_ASSERT_EQUAL(m->ops[k].seq, 12 + k);
            CU_ASSERT_EQUAL(m->ops[k].count, 13 + k);
        }
    }
    tr_free(&set);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
    set_env("HIDET_NCCL_TRACE_ENTRIES", NULL);
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Each entry's time ("t", seconds since the epoch) is its call's: between the wall clock read
 * just before and just after the call, for two calls 100 ms apart, and the second not before the
 * first. The slack is 250 ms, not the recorder's clock's tick: the coarse clock is the kernel's
 * last tick, and on a loaded machine (CI's sanitizer runs) that tick came 6 ms late once; a wrong
 * unit (us for ns: off by 1e3) or base (the boot, not the epoch: off by the uptime, or by years)
 * is off by far more. The gap between the two is checked closer, to 20 ms (a few ticks): a clock
 * read at the wrong rate (a counter's ticks taken for ns) makes 100 ms into 200-400. */
static void test_stamps(void) {
    const double slack = 0.25;
    set_env("HIDET_NCCL_TRACE_ENTRIES", "16");
    static fake_comm_t c = {4, 1};
    int id = adopt(&c);
    double window[2][2];
    for (int k = 0; k < 2; k++) {
        if (k) nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
        window[k][0] = wall_now();
        HN_ASSERT_STATUS(hidet_nccl_broadcast(id, g_buf, g_buf, 1, HIDET_NCCL_FLOAT32, 0, STREAM), HIDET_NCCL_SUCCESS,
                         NULL);
        window[k][1] = wall_now();
    }
    char path[4096];
    HN_ASSERT_STATUS(hidet_nccl_trace_dump(g_dir, path, sizeof path), HIDET_NCCL_SUCCESS, NULL);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char line[4096];
    int seen = 0;
    double at[2] = {0, 0};
    while (fgets(line, sizeof line, f) != NULL) {
        json_t *o = json_loads(line, 0, NULL);
        if (o == NULL) continue;
        const char *type = json_string_value(json_object_get(o, "type"));
        json_int_t comm = json_integer_value(json_object_get(o, "comm"));
        json_int_t seq = json_integer_value(json_object_get(o, "seq"));
        if (type != NULL && strcmp(type, "op") == 0 && comm == id && seq >= 0 && seq < 2) {
            double t = json_number_value(json_object_get(o, "t"));
            CU_ASSERT(t >= window[seq][0] - slack && t <= window[seq][1] + slack);
            if (!(t >= window[seq][0] - slack && t <= window[seq][1] + slack))
                fprintf(stderr, "op %d: t %.6f outside [%.6f, %.6f]\n", (int)seq, t, window[seq][0], window[seq][1]);
            at[seq] = t;
            seen++;
        }
        json_decref(o);
    }
    fclose(f);
    CU_ASSERT_EQUAL(seen, 2);
    CU_ASSERT(at[1] >= at[0]);
    double gap = at[1] - at[0], gap_min = window[1][0] - window[0][1], gap_max = window[1][1] - window[0][0];
    CU_ASSERT(gap >= gap_min - 0.02 && gap <= gap_max + 0.02);
    if (!(gap >= gap_min - 0.02 && gap <= gap_max + 0.02))
        fprintf(stderr, "the stamps %.6f s apart, the calls %.6f .. %.6f s\n", gap, gap_min, gap_max);
    HN_ASSERT_STATUS(hidet_nccl_comm_destroy(id), HIDET_NCCL_SUCCESS, NULL);
    set_env("HIDET_NCCL_TRACE_ENTRIES", NULL);
}

/* The recorder records where a dump of it can be read: as HIDET_NCCL_TRACE_ENTRIES says where it
 * is set (0: off, even with a trace directory; a size: on, even without one, for
 * hidet_nccl_trace_dump(dir)), and where it is not, only with HIDET_NCCL_TRACE_DIR set. Off: no
 * ring, so the dump lists no communicator, and its header says why. */
static void test_recorder_off(void) {
    static const struct {
        const char *entries;
        int dir;
        const char *recorder; /* the header's */
    } cases[] = {
        {"0", 0, "off (HIDET_NCCL_TRACE_ENTRIES=0)"},
        {"0", 1, "off (HIDET_NCCL_TRACE_ENTRIES=0)"},
        {NULL, 0, "off (neither HIDET_NCCL_TRACE_DIR nor HIDET_NCCL_TRACE_ENTRIES set; set one to record)"},
        {NULL, 1, "on"},
        {"16", 0, "on"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        set_env("HIDET_NCCL_TRACE_ENTRIES", cases[k].entries);
        set_env("HIDET_NCCL_TRACE_DIR", cases[k].dir ? g_dir : NULL);
        static fake_comm_t c = {2, 0};
        int id = adopt(&c);
        for (int i = 0; i < 3; i++)
            HN_ASSERT_STATUS(hidet_nccl_all_reduce(id, g_buf, g_buf, 4, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, STREAM),
                             HIDET_NCCL_SUCCESS, NULL);
        char path[4096];
        HN_ASSERT_STATUS(hidet_nccl_trace_dump(g_dir, path, sizeof path), HIDET_NCCL_SUCCESS, NULL);
        tr_set_t set = {0};
        if (read_dump(path, &set)) {
            int on = strcmp(cases[k].recorder, "on") == 0;
            const tr_comm_t *m = comm_of(&set, id);
            CU_ASSERT_STRING_EQUAL(set.dumps[0].recorder, cases[k].recorder);
            CU_ASSERT_EQUAL(m != NULL, on);
            if (m != NULL) CU_ASSERT_EQUAL(m->nops, 3);
            if (strcmp(set.dumps[0].recorder, cases[k].recorder) != 0 || (m != NULL) != on)
                fprintf(stderr, "case %zu: recorder '%s', ring %s\n", k, set.dumps[0].recorder, m ? "made" : "none");
        }
        tr_free(&set);
        hidet_nccl_comm_destroy(id);
    }
    set_env("HIDET_NCCL_TRACE_ENTRIES", NULL);
    set_env("HIDET_NCCL_TRACE_DIR", NULL);
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
    set_env("HIDET_NCCL_TRACE_ENTRIES", "64");
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
    set_env("HIDET_NCCL_TRACE_ENTRIES", NULL);
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
        {"a ring's size rounded up to a power of two", test_ring_rounded_up},
        {"each entry stamped with its call's time", test_stamps},
        {"the recorder on only where a dump can be read, or as asked", test_recorder_off},
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
        {"a rank whose recorder was off: said, with why", test_tool_recorder_off},
        {NULL, NULL},
    };
    return hn_run_tests("flight_recorder", tests);
}

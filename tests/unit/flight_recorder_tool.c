/* flight_recorder_test's cases of the hidet-nccl-trace program (run as a child): a directory
 * with no dump, dumps and file names holding terminal escapes printed escaped, and its options
 * (--help, --json parsed back with jansson, --ranks, --comm, unknown ones). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/cunit_runner.h"
#include "tests/unit/flight_recorder_test.h"
#include "tools/trace/trace_read.h"

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
void test_escaping(void) {
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
void test_no_dumps(void) {
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
void test_escapes(void) {
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
void test_tool_usage(void) {
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
void test_tool_json(void) {
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
void test_tool_ranks(void) {
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
    remove_dumps(dir, 4);
}

/* The parser itself: ranges sorted and merged, membership. */
void test_rank_lists(void) {
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
void test_tool_comm(void) {
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

/* A rank whose recorder was off (its header's "recorder": "off (why)"): its dump holds no
 * communicator; the text says so under the verdict, with why (a process without a launcher's
 * rank by its pid), and --json lists it; a rank whose recorder was on (or whose dump does not
 * say, an older one) is not listed. */
void test_tool_recorder_off(void) {
    const char *job[4] = {
        "{\"type\":\"header\",\"hidet_nccl_trace\":1,\"host\":\"h\",\"pid\":1,\"rank\":0,\"time\":1.0,"
        "\"nccl_version\":22809,\"reason\":\"test\",\"recorder\":\"on\"}\n" COMM_K(0, "1234abcd", 0, 3, 1)
            SUM_K(0, "1234abcd", 0, 16),
        "{\"type\":\"header\",\"hidet_nccl_trace\":1,\"host\":\"h\",\"pid\":2,\"rank\":1,\"time\":1.0,"
        "\"nccl_version\":22809,\"reason\":\"test\",\"recorder\":\"off (HIDET_NCCL_TRACE_ENTRIES=0)\"}\n",
        HEADER(2) COMM_K(0, "1234abcd", 2, 3, 1) SUM_K(0, "1234abcd", 0, 16),
        "{\"type\":\"header\",\"hidet_nccl_trace\":1,\"host\":\"h\",\"pid\":3,\"rank\":-1,\"time\":1.0,"
        "\"nccl_version\":22809,\"reason\":\"test\",\"recorder\":\"off (why)\"}\n"};
    char dir[1100], *out, *err;
    dump_dir("recorder_off", job, 4, dir, sizeof dir);
    const char *text[] = {dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(text, &out, &err), 1); /* rank 1 left nothing of 1234abcd */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "rank 1 (pid 2, " /* then the file's path */));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(out, ") recorded nothing: its flight recorder was off (HIDET_NCCL_TRACE_ENTRIES=0)\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\npid 3 (")); /* no launcher's rank: named by its pid */
    CU_ASSERT_PTR_NULL(strstr(out, "rank 0 (pid 1"));
    CU_ASSERT_PTR_NULL(strstr(out, "rank 2 (pid 1"));
    free(out);
    free(err);
    const char *json[] = {"--json", dir, NULL};
    CU_ASSERT_EQUAL(run_tool_args(json, &out, &err), 1);
    json_t *doc = parsed(out);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(doc, "recorder_off")), 2);
    CU_ASSERT_EQUAL(jint(jat(doc, "recorder_off", 0), "rank"), 1);
    CU_ASSERT_EQUAL(jint(jat(doc, "recorder_off", 0), "pid"), 2);
    CU_ASSERT_STRING_EQUAL(jstr(jat(doc, "recorder_off", 0), "recorder"), "off (HIDET_NCCL_TRACE_ENTRIES=0)");
    json_decref(doc);
    free(out);
    free(err);
    remove_dumps(dir, 4);
}

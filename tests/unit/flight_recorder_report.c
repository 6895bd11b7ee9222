/* flight_recorder_test's cases of hidet-nccl-trace's reader and report (tools/trace), on
 * synthetic dumps given as text: every kind of divergence named, the text and the JSON of one
 * judgement alike, a recovered communicator linked to the one it came from, hostile dumps
 * refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/cunit_runner.h"
#include "tests/unit/flight_recorder_test.h"
#include "tools/trace/trace_read.h"

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
const char *jstr(json_t *o, const char *k) {
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "(none)";
}
long long jint(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : -999;
}
json_t *jat(json_t *o, const char *k, size_t i) { return json_array_get(json_object_get(o, k), i); }

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

void test_report_kinds(void) {
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
void test_recovered_link(void) {
#define COMM_FROM(r) "{\"type\":\"comm\",\"comm\":0,\"key\":\"1234abcd\",\"rank\":" #r ",\"nranks\":2," \
                     "\"state\":\"live\",\"why\":\"\",\"from\":\"9999abcd\",\"how\":\"recover\",\"next_seq\":0}\n"
    const char *texts[] = {HEADER(0) COMM_FROM(0), HEADER(1) COMM_FROM(1)};
    json_t *doc = judged_json(texts, 2, "consistent");
    json_t *c = jat(doc, "comms", 0);
    CU_ASSERT_STRING_EQUAL(jstr(c, "from"), "9999abcd");
    CU_ASSERT_STRING_EQUAL(jstr(c, "how"), "recover");
    json_decref(doc);
#undef COMM_FROM
    /* A healed one says by which path (hidet_nccl_comm_heal). */
#define COMM_HEALED(r) "{\"type\":\"comm\",\"comm\":0,\"key\":\"1234abcd\",\"rank\":" #r ",\"nranks\":2," \
                       "\"state\":\"live\",\"why\":\"\",\"from\":\"9999abcd\",\"how\":\"heal-rebuild\",\"next_seq\":0}\n"
    const char *healed[] = {HEADER(0) COMM_HEALED(0), HEADER(1) COMM_HEALED(1)};
    doc = judged_json(healed, 2, "consistent");
    CU_ASSERT_STRING_EQUAL(jstr(jat(doc, "comms", 0), "how"), "heal-rebuild");
    json_decref(doc);
#undef COMM_HEALED
}

void test_hostile_dumps(void) {
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
                   "\"why\":\"\",\"from\":\"00000001\",\"how\":\"split\",\"next_seq\":0}\n",
         "is not \"recover\", \"heal-rebuild\" nor \"heal-shrink\""},
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

/* flight_recorder_test, one binary in three files (shared here):
 *   flight_recorder_test.c     main, the table, the recorder's cases (ring, off, tags and
 *                              directories, a full disk, an abort, shrink and revoke)
 *   flight_recorder_report.c   hidet-nccl-trace's reader and report on dumps given as text
 *   flight_recorder_tool.c     the hidet-nccl-trace program on directories, and its options */
#ifndef HIDET_NCCL_TESTS_UNIT_FLIGHT_RECORDER_TEST_H_
#define HIDET_NCCL_TESTS_UNIT_FLIGHT_RECORDER_TEST_H_

#include <jansson.h>

extern char g_dir[1024];   /* this run's directory, under $TEST_TMPDIR */
extern const char *g_tool; /* hidet-nccl-trace */

/* Members of a parsed JSON document, never NULL: "(none)" or -999 when absent or of another
 * type (flight_recorder_report.c). */
const char *jstr(json_t *o, const char *k);
long long jint(json_t *o, const char *k);
json_t *jat(json_t *o, const char *k, size_t i);

/* Lines of a dump: rank r's header, communicator 0 (key 1234abcd) of n ranks, one operation. */
#define HEADER(r) "{\"type\":\"header\",\"hidet_nccl_trace\":1,\"host\":\"h\",\"pid\":1,\"rank\":" #r \
                  ",\"time\":1.0,\"nccl_version\":22809,\"reason\":\"test\"}\n"
#define COMM(r, n, next) "{\"type\":\"comm\",\"comm\":0,\"key\":\"1234abcd\",\"rank\":" #r ",\"nranks\":" #n \
                         ",\"state\":\"live\",\"why\":\"\",\"next_seq\":" #next ",\"entries\":2048,\"completion\":true}\n"
#define OP(seq, coll, dtype, count, op, peer, state, tag)                                                        \
    "{\"type\":\"op\",\"comm\":0,\"key\":\"1234abcd\",\"seq\":" #seq ",\"coll\":\"" coll "\",\"dtype\":\"" dtype \
    "\",\"count\":" #count ",\"op\":\"" op "\",\"peer\":" #peer ",\"stream\":\"0x5\",\"t\":1.0,"                 \
    "\"nccl_result\":0,\"state\":\"" state "\",\"tag\":\"" tag "\"}\n"

/* flight_recorder_report.c */
void test_report_kinds(void);
void test_recovered_link(void);
void test_hostile_dumps(void);

/* flight_recorder_tool.c */
void test_escaping(void);
void test_no_dumps(void);
void test_escapes(void);
void test_tool_usage(void);
void test_tool_json(void);
void test_tool_ranks(void);
void test_rank_lists(void);
void test_tool_comm(void);
void test_tool_recorder_off(void);

#endif

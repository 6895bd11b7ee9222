/* The recording stand-in for NCCL (tools/support/fake_nccl.c): its communicators and its log. */
#ifndef HIDET_NCCL_TOOLS_SUPPORT_FAKE_NCCL_H_
#define HIDET_NCCL_TOOLS_SUPPORT_FAKE_NCCL_H_

#include <nccl.h>
#include <stddef.h>

/* What a test or bench passes as an ncclComm_t. */
typedef struct {
    int nranks, rank;
} fake_comm_t;

#define FAKE_LOG_MAX 4096

typedef struct {
    char fn[32];                /* "ncclBroadcast" */
    const void *send;
    void *recv;
    size_t count;               /* ncclRedOpCreatePreMulSum: the scalar's residence */
    int type;                   /* ncclDataType_t */
    int op;                     /* ncclRedOp_t, or -1 */
    int rank;                   /* root or peer, or -1 */
    ncclComm_t comm;
    int depth;                  /* ncclGroupStart depth at the call (after a GroupStart: its own) */
    unsigned char scalar[8];    /* ncclRedOpCreatePreMulSum with a host scalar: its bytes */
} fake_call_t;

/* The calls so far (the log) and the group depth now. */
typedef const fake_call_t *(*fake_nccl_log_fn)(int *n, int *group_depth);
typedef void (*fake_nccl_clear_fn)(void);
const fake_call_t *fake_nccl_log(int *n, int *group_depth);
void fake_nccl_clear(void);

/* How many times ncclCommCount and ncclCommUserRank were called (dlsym it from the handle). */
typedef int (*fake_nccl_rank_queries_fn)(void);
int fake_nccl_rank_queries(void);

/* For a test or bench (tools/support/fake_nccl_load.c, target fake_nccl_load): makes the
 * stand-in at path arg the library's NCCL (HIDET_NCCL_LIBRARY, hidet_nccl_load), gives its
 * version and log functions, and returns its dlopen handle; NULL (said on stderr) if not. */
void *fake_nccl_load(const char *arg, int *version, fake_nccl_log_fn *log, fake_nccl_clear_fn *clear);

#endif

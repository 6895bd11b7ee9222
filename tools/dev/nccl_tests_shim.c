/* nccl-tests through the library (issue 37): an LD_PRELOAD library that defines NCCL's
 * collectives, send/recv and group calls and routes each through hidet_nccl_*, so an
 * unmodified nccl-tests binary (built by the user from NVIDIA's public source) times the
 * library instead of raw NCCL:
 *
 *   HIDET_NCCL_LIBRARY=$DIR/libnccl.so.2 LD_LIBRARY_PATH=$DIR \
 *   LD_PRELOAD=libhidet_nccl_tests_shim.so ./all_reduce_perf -b 8 -e 2M -f 8 -g 1
 *
 * Each communicator the test made is adopted (hidet_nccl_comm_adopt) the first time a call
 * names it, and dropped from the registry (hidet_nccl_comm_destroy) before the test's own
 * ncclCommDestroy/ncclCommAbort reaches NCCL. NCCL's ncclDataType_t and ncclRedOp_t are
 * mapped to the library's dtype and op (custom ops such as PreMulSum are refused);
 * ncclGroupStart/End are hidet_nccl_group_start/end. A failure prints the library's message
 * (hidet_nccl_last_error) on stderr and returns ncclInvalidArgument (arguments the library
 * refuses), ncclInvalidUsage (wrong moment) or ncclInternalError (the rest).
 *
 * The library must load the NCCL the test is linked with, not find these definitions again
 * (its in-process lookup would): the constructor sets HIDET_NCCL_LIBRARY, the documented
 * explicit file, to the libnccl this process loaded (found through RTLD_NEXT), unless it is
 * already set to that file; set to another file, it is replaced and a line says so (the
 * test's communicators belong to the NCCL it loaded). dlsym on that file's handle finds
 * NCCL's own functions.
 *
 * One exception: nccl-tests' alltoall_perf also runs in place (sendbuff == recvbuff), a form
 * the library refuses (hidet_nccl_all_to_all: NCCL defines no in-place all_to_all). Those
 * calls go to NCCL's ncclAlltoAll unchanged, and a line on stderr says so once: the in-place
 * column of alltoall_perf is raw NCCL on both sides.
 *
 * At exit a line on stderr says how many communicators were adopted (0: nothing came here).
 *
 * The same file also builds, unchanged, as an ordinary object linked into the test's executable
 * with libhidet_nccl.a (the library in the executable, as HPC codes link it, where a thread-local
 * costs no __tls_get_addr): nccl-tests' objects relinked with this object, libhidet_nccl.a,
 * -lcudart_static -ldl -lpthread -lrt -lz -lm, and libnccl dynamic as in the stock build. The
 * executable's definitions then take the test's calls (the linker exports them, since libnccl
 * defines the same names: NCCL's own calls through its PLT reach them as they reach a preload's);
 * RTLD_NEXT from the executable searches the libraries loaded after it, so the constructor finds
 * libnccl.so.2 as in a preload, and the library's dlopen of that file and dlsym on its handle
 * search libnccl and its dependencies, never the executable. No preload, no switch needed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <nccl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hidet_nccl/hidet_nccl.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define CACHE_SLOTS 8

typedef ncclResult_t (*comm_fn)(ncclComm_t);
typedef ncclResult_t (*alltoall_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);

static comm_fn g_real_destroy, g_real_abort;
/* HIDET_NCCL_SHIM_RAW=1: every call goes straight to NCCL's own function (RTLD_NEXT), through
 * the preload and nothing else: the floor a routed run is compared with, to tell the library's
 * cost from the preload's. */
static int g_raw;
static ncclResult_t (*real_ncclAllReduce)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,                                        ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
static ncclResult_t (*real_ncclBroadcast)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,                                        int root, ncclComm_t comm, cudaStream_t stream);
static ncclResult_t (*real_ncclBcast)(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,                                    cudaStream_t stream);
static ncclResult_t (*real_ncclReduce)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,                                     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
static ncclResult_t (*real_ncclAllGather)(const void *sendbuff, void *recvbuff, size_t sendcount,                                        ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
static ncclResult_t (*real_ncclReduceScatter)(const void *sendbuff, void *recvbuff, size_t recvcount,                                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,                                            cudaStream_t stream);
static ncclResult_t (*real_ncclAlltoAll)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,                                       ncclComm_t comm, cudaStream_t stream);
static ncclResult_t (*real_ncclGather)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,                                     int root, ncclComm_t comm, cudaStream_t stream);
static ncclResult_t (*real_ncclScatter)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,                                      int root, ncclComm_t comm, cudaStream_t stream);
static ncclResult_t (*real_ncclSend)(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,                                   ncclComm_t comm, cudaStream_t stream);
static ncclResult_t (*real_ncclRecv)(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,                                   cudaStream_t stream);
static ncclResult_t (*real_ncclGroupStart)(void);
static ncclResult_t (*real_ncclGroupEnd)(void);

static alltoall_fn g_real_alltoall;

/* Communicator -> id: the library's registry is the table (hidet_nccl_comm_lookup, else
 * hidet_nccl_comm_adopt, under g_lock so that two threads never adopt one communicator
 * twice); each thread keeps its last few answers, valid while g_generation is unchanged
 * (a destroy bumps it). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint g_generation = 1;
static atomic_int g_adopted;  /* communicators adopted: said at exit, the proof that calls came here */
static int g_nccl_in_process; /* the constructor found a libnccl (not a shell the preload reached) */
static _Thread_local struct {
    ncclComm_t comm;
    int id;
} t_cache[CACHE_SLOTS];
static _Thread_local unsigned t_generation, t_next;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "hidet_nccl_tests_shim: %s\n", line);
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

__attribute__((constructor)) static void shim_init(void) {
    g_real_destroy = (comm_fn)dlsym(RTLD_NEXT, "ncclCommDestroy");
    g_real_abort = (comm_fn)dlsym(RTLD_NEXT, "ncclCommAbort");
    g_real_alltoall = (alltoall_fn)dlsym(RTLD_NEXT, "ncclAlltoAll");
    *(void **)&real_ncclAllReduce = dlsym(RTLD_NEXT, "ncclAllReduce");
    *(void **)&real_ncclBroadcast = dlsym(RTLD_NEXT, "ncclBroadcast");
    *(void **)&real_ncclBcast = dlsym(RTLD_NEXT, "ncclBcast");
    *(void **)&real_ncclReduce = dlsym(RTLD_NEXT, "ncclReduce");
    *(void **)&real_ncclAllGather = dlsym(RTLD_NEXT, "ncclAllGather");
    *(void **)&real_ncclReduceScatter = dlsym(RTLD_NEXT, "ncclReduceScatter");
    *(void **)&real_ncclAlltoAll = dlsym(RTLD_NEXT, "ncclAlltoAll");
    *(void **)&real_ncclGather = dlsym(RTLD_NEXT, "ncclGather");
    *(void **)&real_ncclScatter = dlsym(RTLD_NEXT, "ncclScatter");
    *(void **)&real_ncclSend = dlsym(RTLD_NEXT, "ncclSend");
    *(void **)&real_ncclRecv = dlsym(RTLD_NEXT, "ncclRecv");
    *(void **)&real_ncclGroupStart = dlsym(RTLD_NEXT, "ncclGroupStart");
    *(void **)&real_ncclGroupEnd = dlsym(RTLD_NEXT, "ncclGroupEnd");
    const char *raw = getenv("HIDET_NCCL_SHIM_RAW");
    g_raw = raw != NULL && strcmp(raw, "1") == 0;
    void *version = dlsym(RTLD_NEXT, "ncclGetVersion");
    Dl_info info;
    /* No NCCL in this process (a shell the preload reached): nothing to do; a call would
     * fail with the library's message. */
    if (version == NULL || !dladdr(version, &info) || info.dli_fname == NULL || info.dli_fname[0] != '/') return;
    g_nccl_in_process = 1;
    const char *set = getenv("HIDET_NCCL_LIBRARY");
    if (set != NULL && same_file(set, info.dli_fname)) return;
    if (set != NULL)
        say("HIDET_NCCL_LIBRARY=%s is not the libnccl this process loaded; using %s", set, info.dli_fname);
    setenv("HIDET_NCCL_LIBRARY", info.dli_fname, 1);
}

__attribute__((destructor)) static void shim_fini(void) {
    if (g_nccl_in_process)
        say("%d communicator(s) adopted; their calls went through hidet_nccl (NCCL: %s)", atomic_load(&g_adopted),
            getenv("HIDET_NCCL_LIBRARY") ? getenv("HIDET_NCCL_LIBRARY") : "?");
}

static ncclResult_t fail(const char *call, hidet_nccl_status_t st) {
    say("%s: %s", call, hidet_nccl_last_error());
    switch (st) {
    case HIDET_NCCL_ERROR_INVALID_ARGUMENT:
    case HIDET_NCCL_ERROR_INVALID_COMM:
    case HIDET_NCCL_ERROR_UNSUPPORTED:
        return ncclInvalidArgument;
    case HIDET_NCCL_ERROR_INVALID_USAGE:
        return ncclInvalidUsage;
    default:
        return ncclInternalError;
    }
}

static ncclResult_t refuse(const char *call, const char *what) {
    say("%s: %s", call, what);
    return ncclInvalidArgument;
}

static __attribute__((noinline)) ncclResult_t comm_id_slow(ncclComm_t comm, int *id, const char *call) {
    if (comm == NULL) return refuse(call, "NULL communicator");
    pthread_mutex_lock(&g_lock);
    unsigned gen = atomic_load_explicit(&g_generation, memory_order_acquire);
    hidet_nccl_status_t st = hidet_nccl_comm_lookup(comm, id);
    if (st != HIDET_NCCL_SUCCESS) {
        st = hidet_nccl_comm_adopt(comm, id);
        if (st == HIDET_NCCL_SUCCESS) atomic_fetch_add(&g_adopted, 1);
    }
    pthread_mutex_unlock(&g_lock);
    if (st != HIDET_NCCL_SUCCESS) return fail(call, st);
    if (t_generation != gen) {
        memset(t_cache, 0, sizeof t_cache);
        t_generation = gen;
        t_next = 0;
    }
    t_cache[t_next].comm = comm;
    t_cache[t_next].id = *id;
    t_next = (t_next + 1) % CACHE_SLOTS;
    return ncclSuccess;
}

static inline ncclResult_t comm_id(ncclComm_t comm, int *id, const char *call) {
    if (t_generation == atomic_load_explicit(&g_generation, memory_order_acquire))
        for (int i = 0; i < CACHE_SLOTS; i++)
            if (t_cache[i].comm == comm && comm != NULL) {
                *id = t_cache[i].id;
                return ncclSuccess;
            }
    return comm_id_slow(comm, id, call);
}

static int dtype_of(ncclDataType_t t, hidet_nccl_dtype_t *out) {
    switch (t) {
    case ncclInt8: *out = HIDET_NCCL_INT8; return 1;
    case ncclUint8: *out = HIDET_NCCL_UINT8; return 1;
    case ncclInt32: *out = HIDET_NCCL_INT32; return 1;
    case ncclUint32: *out = HIDET_NCCL_UINT32; return 1;
    case ncclInt64: *out = HIDET_NCCL_INT64; return 1;
    case ncclUint64: *out = HIDET_NCCL_UINT64; return 1;
    case ncclFloat16: *out = HIDET_NCCL_FLOAT16; return 1;
    case ncclFloat32: *out = HIDET_NCCL_FLOAT32; return 1;
    case ncclFloat64: *out = HIDET_NCCL_FLOAT64; return 1;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case ncclBfloat16: *out = HIDET_NCCL_BFLOAT16; return 1;
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case ncclFloat8e4m3: *out = HIDET_NCCL_FLOAT8_E4M3; return 1;
    case ncclFloat8e5m2: *out = HIDET_NCCL_FLOAT8_E5M2; return 1;
#endif
    default: return 0;
    }
}

static int op_of(ncclRedOp_t op, hidet_nccl_op_t *out) {
    switch ((int)op) {
    case ncclSum: *out = HIDET_NCCL_SUM; return 1;
    case ncclProd: *out = HIDET_NCCL_PROD; return 1;
    case ncclMax: *out = HIDET_NCCL_MAX; return 1;
    case ncclMin: *out = HIDET_NCCL_MIN; return 1;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case ncclAvg: *out = HIDET_NCCL_AVG; return 1;
#endif
    default: return 0;
    }
}

/* The id, dtype (and op) of a call, or the NCCL error it returns. */
#define SHIM_PREP(call, comm, datatype)                                                                                \
    int id_;                                                                                                           \
    hidet_nccl_dtype_t dt_;                                                                                            \
    do {                                                                                                               \
        if (!dtype_of((datatype), &dt_)) return refuse(call, "an ncclDataType_t the library does not map");            \
        ncclResult_t r_ = comm_id((comm), &id_, call);                                                                 \
        if (r_ != ncclSuccess) return r_;                                                                              \
    } while (0)

#define SHIM_OP(call, op)                                                                                              \
    hidet_nccl_op_t op_;                                                                                               \
    do {                                                                                                               \
        if (!op_of((op), &op_)) return refuse(call, "a custom reduction (ncclRedOpCreatePreMulSum) is not routed");   \
    } while (0)

#define SHIM_RETURN(call, expr)                                                                                        \
    do {                                                                                                               \
        hidet_nccl_status_t st_ = (expr);                                                                              \
        return st_ == HIDET_NCCL_SUCCESS ? ncclSuccess : fail(call, st_);                                              \
    } while (0)

SHIM_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    if (g_raw && real_ncclAllReduce != NULL) return real_ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
    SHIM_PREP("ncclAllReduce", comm, datatype);
    SHIM_OP("ncclAllReduce", op);
    SHIM_RETURN("ncclAllReduce", hidet_nccl_all_reduce(id_, sendbuff, recvbuff, count, dt_, op_, stream));
}

SHIM_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream) {
    if (g_raw && real_ncclBroadcast != NULL) return real_ncclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, stream);
    SHIM_PREP("ncclBroadcast", comm, datatype);
    SHIM_RETURN("ncclBroadcast", hidet_nccl_broadcast(id_, sendbuff, recvbuff, count, dt_, root, stream));
}

SHIM_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream) {
    if (g_raw && real_ncclBcast != NULL) return real_ncclBcast(buff, count, datatype, root, comm, stream);
    SHIM_PREP("ncclBcast", comm, datatype);
    SHIM_RETURN("ncclBcast", hidet_nccl_broadcast(id_, buff, buff, count, dt_, root, stream));
}

SHIM_EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
    if (g_raw && real_ncclReduce != NULL) return real_ncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
    SHIM_PREP("ncclReduce", comm, datatype);
    SHIM_OP("ncclReduce", op);
    SHIM_RETURN("ncclReduce", hidet_nccl_reduce(id_, sendbuff, recvbuff, count, dt_, op_, root, stream));
}

SHIM_EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                       ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
    if (g_raw && real_ncclAllGather != NULL) return real_ncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream);
    SHIM_PREP("ncclAllGather", comm, datatype);
    SHIM_RETURN("ncclAllGather", hidet_nccl_all_gather(id_, sendbuff, recvbuff, sendcount, dt_, stream));
}

SHIM_EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream) {
    if (g_raw && real_ncclReduceScatter != NULL) return real_ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
    SHIM_PREP("ncclReduceScatter", comm, datatype);
    SHIM_OP("ncclReduceScatter", op);
    SHIM_RETURN("ncclReduceScatter",
                hidet_nccl_reduce_scatter(id_, sendbuff, recvbuff, recvcount, dt_, op_, stream));
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
SHIM_EXPORT ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclComm_t comm, cudaStream_t stream) {
    if (g_raw && real_ncclAlltoAll != NULL) return real_ncclAlltoAll(sendbuff, recvbuff, count, datatype, comm, stream);
    if (sendbuff == recvbuff && count > 0 && g_real_alltoall != NULL) {
        static atomic_int said;
        if (!atomic_exchange(&said, 1))
            say("in-place ncclAlltoAll: not a form the library offers; passed to NCCL unchanged");
        return g_real_alltoall(sendbuff, recvbuff, count, datatype, comm, stream);
    }
    SHIM_PREP("ncclAlltoAll", comm, datatype);
    SHIM_RETURN("ncclAlltoAll", hidet_nccl_all_to_all(id_, sendbuff, recvbuff, count, dt_, stream));
}

SHIM_EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t stream) {
    if (g_raw && real_ncclGather != NULL) return real_ncclGather(sendbuff, recvbuff, count, datatype, root, comm, stream);
    SHIM_PREP("ncclGather", comm, datatype);
    SHIM_RETURN("ncclGather", hidet_nccl_gather(id_, sendbuff, recvbuff, count, dt_, root, stream));
}

SHIM_EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
    if (g_raw && real_ncclScatter != NULL) return real_ncclScatter(sendbuff, recvbuff, count, datatype, root, comm, stream);
    SHIM_PREP("ncclScatter", comm, datatype);
    SHIM_RETURN("ncclScatter", hidet_nccl_scatter(id_, sendbuff, recvbuff, count, dt_, root, stream));
}
#endif

SHIM_EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                  ncclComm_t comm, cudaStream_t stream) {
    if (g_raw && real_ncclSend != NULL) return real_ncclSend(sendbuff, count, datatype, peer, comm, stream);
    SHIM_PREP("ncclSend", comm, datatype);
    SHIM_RETURN("ncclSend", hidet_nccl_send(id_, sendbuff, count, dt_, peer, stream));
}

SHIM_EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                  cudaStream_t stream) {
    if (g_raw && real_ncclRecv != NULL) return real_ncclRecv(recvbuff, count, datatype, peer, comm, stream);
    SHIM_PREP("ncclRecv", comm, datatype);
    SHIM_RETURN("ncclRecv", hidet_nccl_recv(id_, recvbuff, count, dt_, peer, stream));
}

SHIM_EXPORT ncclResult_t ncclGroupStart(void) {
    if (g_raw && real_ncclGroupStart != NULL) return real_ncclGroupStart();
    SHIM_RETURN("ncclGroupStart", hidet_nccl_group_start());
}

SHIM_EXPORT ncclResult_t ncclGroupEnd(void) {
    if (g_raw && real_ncclGroupEnd != NULL) return real_ncclGroupEnd();
    SHIM_RETURN("ncclGroupEnd", hidet_nccl_group_end());
}

/* Drops comm from the registry (the library never destroys a borrowed communicator), then
 * hands it to NCCL's own destroy or abort. */
static ncclResult_t release(ncclComm_t comm, comm_fn real, const char *call) {
    if (real == NULL) return refuse(call, "NCCL's own function was not found (RTLD_NEXT)");
    int id;
    pthread_mutex_lock(&g_lock);
    if (comm != NULL && hidet_nccl_comm_lookup(comm, &id) == HIDET_NCCL_SUCCESS) {
        hidet_nccl_status_t st = hidet_nccl_comm_destroy(id);
        if (st != HIDET_NCCL_SUCCESS) say("%s: %s (going on)", call, hidet_nccl_last_error());
        atomic_fetch_add_explicit(&g_generation, 1, memory_order_acq_rel);
    }
    pthread_mutex_unlock(&g_lock);
    return real(comm);
}

SHIM_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return release(comm, g_real_destroy, "ncclCommDestroy"); }

SHIM_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return release(comm, g_real_abort, "ncclCommAbort"); }

/*
 * hidet-nccl: NCCL communicators and dtype-mapped collectives for HPC codes.
 *
 * Model: a bootstrap (or your own ncclUniqueId) gives a communicator, which the library
 * keeps in a process-wide registry under an integer id; the collectives take that id, a
 * hidet data type and, for reductions, an op.
 *
 * Every function returns a hidet_nccl_status_t. On failure, hidet_nccl_last_error()
 * returns a message for the calling thread that says what failed, with the values
 * involved. Nothing in this library calls abort() or exit() on bad input.
 *
 * NCCL is loaded at run time (see hidet_nccl_load()); link the archive by name (a prefix also
 * holds libhidet_nccl.so, which -lhidet_nccl would pick), with no -lnccl:
 *   -L$PREFIX/lib -l:libhidet_nccl.a -L$CUDA_HOME/lib64 -lcudart_static -ldl -lpthread -lrt -lz -lm
 * or `pkg-config --cflags --libs hidet_nccl` (README.md, docs/user_guide.md).
 */
#ifndef HIDET_NCCL_HIDET_NCCL_H_
#define HIDET_NCCL_HIDET_NCCL_H_

#include <stddef.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HIDET_NCCL_VERSION_MAJOR 0
#define HIDET_NCCL_VERSION_MINOR 1
#define HIDET_NCCL_VERSION_PATCH 0

/* ---------------------------------------------------------------- status */

typedef enum {
    HIDET_NCCL_SUCCESS = 0,
    HIDET_NCCL_ERROR_INVALID_ARGUMENT = 1, /* a NULL pointer, a value out of range */
    HIDET_NCCL_ERROR_INVALID_COMM = 2,     /* a communicator id never given, or destroyed */
    HIDET_NCCL_ERROR_UNSUPPORTED = 3,      /* dtype x op NCCL cannot do exactly; NCCL too old */
    HIDET_NCCL_ERROR_NCCL_NOT_FOUND = 4,   /* no libnccl could be loaded */
    HIDET_NCCL_ERROR_NCCL = 5,             /* an NCCL call failed */
    HIDET_NCCL_ERROR_CUDA = 6,             /* a CUDA runtime call failed (e.g. no GPU) */
    HIDET_NCCL_ERROR_TIMEOUT = 7,          /* a wait passed its deadline */
    HIDET_NCCL_ERROR_BOOTSTRAP = 8,        /* the bootstrap could not deliver */
    HIDET_NCCL_ERROR_SYSTEM = 9,           /* an operating-system call failed, out of memory */
    HIDET_NCCL_ERROR_INVALID_USAGE = 10,   /* right arguments, wrong moment (e.g. group nesting) */
    HIDET_NCCL_NUM_STATUS = 11
} hidet_nccl_status_t;

/* A static name for a status ("success", "invalid argument", ...); never NULL. */
const char *hidet_nccl_status_string(hidet_nccl_status_t status);

/* The message of the last failure in the calling thread ("" if none). Valid until the
 * thread's next call into the library. */
const char *hidet_nccl_last_error(void);

/* ---------------------------------------------------------------- data types, ops */

/* Every DataType of the hidet compiler. The numeric values are this library's, not NCCL's. */
typedef enum {
    HIDET_NCCL_BOOL = 0,
    HIDET_NCCL_INT8,
    HIDET_NCCL_INT16,
    HIDET_NCCL_INT32,
    HIDET_NCCL_INT64,
    HIDET_NCCL_UINT8,
    HIDET_NCCL_UINT16,
    HIDET_NCCL_UINT32,
    HIDET_NCCL_UINT64,
    HIDET_NCCL_FLOAT16,
    HIDET_NCCL_BFLOAT16,
    HIDET_NCCL_TFLOAT32, /* stored as float32; reduced as float32 */
    HIDET_NCCL_FLOAT32,
    HIDET_NCCL_FLOAT64,
    HIDET_NCCL_FLOAT8_E4M3,
    HIDET_NCCL_FLOAT8_E5M2,
    HIDET_NCCL_COMPLEX64,  /* two float32; sum/avg as float32 with twice the count */
    HIDET_NCCL_COMPLEX128, /* two float64; sum/avg as float64 with twice the count */
    HIDET_NCCL_NUM_DTYPES
} hidet_nccl_dtype_t;

typedef enum {
    HIDET_NCCL_SUM = 0,
    HIDET_NCCL_PROD,
    HIDET_NCCL_MAX,
    HIDET_NCCL_MIN,
    HIDET_NCCL_AVG,
    HIDET_NCCL_NUM_OPS
} hidet_nccl_op_t;

/* hidet's name ("float32", "bfloat16", "complex64", ...). *name is a static string. */
hidet_nccl_status_t hidet_nccl_dtype_name(hidet_nccl_dtype_t dtype, const char **name);
/* From hidet's name or short name ("float32" or "f32", "bfloat16" or "bf16", ...). */
hidet_nccl_status_t hidet_nccl_dtype_from_name(const char *name, hidet_nccl_dtype_t *dtype);
/* Bytes per element (complex64: 8, bool: 1, tfloat32: 4). */
hidet_nccl_status_t hidet_nccl_dtype_size(hidet_nccl_dtype_t dtype, size_t *bytes);
/* "sum", "prod", "max", "min", "avg", both ways. */
hidet_nccl_status_t hidet_nccl_op_name(hidet_nccl_op_t op, const char **name);
hidet_nccl_status_t hidet_nccl_op_from_name(const char *name, hidet_nccl_op_t *op);

/* How an all_reduce of `dtype` with `op` reaches NCCL. */
typedef struct {
    ncclDataType_t nccl_dtype; /* the type NCCL reduces */
    ncclRedOp_t nccl_op;
    size_t count_multiplier;   /* NCCL elements per element of dtype (2 for complex) */
    int min_nccl_version;      /* the NCCL version code this needs, e.g. 21000 for bf16 */
} hidet_nccl_reduction_t;

/* Whether NCCL can do dtype x op exactly, and how. HIDET_NCCL_ERROR_UNSUPPORTED with the
 * reason for what it cannot do (int16 anything, bool sum, complex max, ...). Independent of
 * the loaded NCCL: compare min_nccl_version with hidet_nccl_nccl_version(). */
hidet_nccl_status_t hidet_nccl_reduction(hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                         hidet_nccl_reduction_t *out);

/* ---------------------------------------------------------------- settings
 *
 * Every environment variable the library reads is declared once (name, type, default, range,
 * documentation; docs/user_guide.md lists them) and read once, at the first call that needs
 * one; HIDET_NCCL_DEBUG=INFO prints them then, each with where its value came from. A bad
 * value is an error, naming the variable and the value, of every call that needs it. */

/* The value the library uses for the variable `name` ("HIDET_NCCL_TIMEOUT", or a launcher's
 * rank variable such as "SLURM_PROCID") as text, and where it came from ("environment",
 * "default", "unset"; source may be NULL). *value is NULL when unset without a default;
 * the strings stay valid until the second hidet_nccl_settings_reload after the call. A name
 * the library does not read is HIDET_NCCL_ERROR_INVALID_ARGUMENT; so is a set but invalid
 * value (with *value the default). */
hidet_nccl_status_t hidet_nccl_setting(const char *name, const char **value, const char **source);
/* Reads every variable again, for a program (or test) that changes its environment after
 * the library first read it. Calls already under way keep the values they started with. Not
 * for a hot loop: each reload re-reads and re-parses every variable. */
hidet_nccl_status_t hidet_nccl_settings_reload(void);

/* ---------------------------------------------------------------- NCCL loading */

/* Loads NCCL if not loaded yet; every function that needs NCCL calls it. Search order:
 *   1. $HIDET_NCCL_LIBRARY, a file path; if it fails nothing else is tried;
 *   2. a copy already in the process (the program itself, or a loaded libnccl.so.2);
 *   3. $NCCL_HOME/lib, $NCCL_HOME/lib64;
 *   4. pip wheels nvidia-nccl-cu11/cu12/cu13: <site-packages>/nvidia/nccl/lib of
 *      $VIRTUAL_ENV, $CONDA_PREFIX, the user site (~/.local) and the python3 on PATH;
 *   5. $CUDA_HOME/lib64, $CUDA_HOME/lib (CUDA_HOME defaults to /usr/local/cuda);
 *   6. the system loader (libnccl.so.2, then libnccl.so).
 * HIDET_NCCL_DEBUG=INFO prints each place tried. When nothing loads, the error lists every
 * place with the loader's reason. */
hidet_nccl_status_t hidet_nccl_load(void);
/* The file NCCL was loaded from (a static string), after a successful load. */
hidet_nccl_status_t hidet_nccl_library_path(const char **path);
/* The loaded NCCL's version code, as ncclGetVersion gives it (22803 for 2.28.3). */
hidet_nccl_status_t hidet_nccl_nccl_version(int *version_code);

/* ---------------------------------------------------------------- communicators */

/*
 * The registry. Communicator ids are small non-negative integers, valid from the call that
 * returns them until hidet_nccl_comm_destroy() or hidet_nccl_finalize(). Every use checks
 * the id: negative, past the end and destroyed ids are HIDET_NCCL_ERROR_INVALID_COMM.
 *
 * Ownership (owned and borrowed communicators live side by side in the one registry):
 *  - OWNED communicators are created by this library (init, init_all, split). The library
 *    destroys them in hidet_nccl_comm_destroy() or, for those left, hidet_nccl_finalize().
 *  - BORROWED communicators are given by the caller: one at a time through
 *    hidet_nccl_comm_adopt(), or as the seed's pool through hidet_nccl_set_comms(). The
 *    library never destroys them; destroying them (after hidet_nccl_comm_destroy() or
 *    hidet_nccl_finalize() has dropped them) is the caller's job.
 * One NCCL communicator has at most one live id.
 * Destroying an id twice is HIDET_NCCL_ERROR_INVALID_COMM, never a crash.
 * All functions are thread-safe. Calls on one communicator from several threads at once
 * are ordered as NCCL orders them (that is, the caller must order them).
 */

/* Seed-compatible: the pool of borrowed communicators, replacing the previous pool (whose ids
 * become dead; communicators adopted one at a time, and owned ones, stay). Numbering: when
 * nothing else is live in the registry (a program that uses only set_comms/get_comm, as the
 * seed did), comms[i] has id i. Otherwise the pool takes fresh consecutive ids after the last
 * id given: comms[i] has id first + i, where hidet_nccl_comm_lookup(comms[0], &first). A
 * communicator given twice, or already registered outside the pool, is refused with the id
 * it has. The array is copied. */
hidet_nccl_status_t hidet_nccl_set_comms(int num_comms, ncclComm_t *comms);
/* Borrows one communicator the caller made (ncclCommInitRank, ncclCommSplit, ...) and gives
 * it a fresh id, beside whatever else is registered. The same communicator twice is
 * HIDET_NCCL_ERROR_INVALID_ARGUMENT naming the id it has. NCCL is loaded by this call. */
hidet_nccl_status_t hidet_nccl_comm_adopt(ncclComm_t comm, int *comm_id);
/* The live id of a registered communicator (owned or borrowed); HIDET_NCCL_ERROR_INVALID_COMM
 * if it has none. */
hidet_nccl_status_t hidet_nccl_comm_lookup(ncclComm_t comm, int *comm_id);
/* Seed-compatible: the NCCL communicator of id idx. */
hidet_nccl_status_t hidet_nccl_get_comm(int idx, ncclComm_t *out);
/* Number of ids handed out so far (live or not); ids are 0 .. count-1. */
hidet_nccl_status_t hidet_nccl_comm_count(int *count);

/* One rank of a communicator of nranks ranks on the current CUDA device, from an id that
 * rank 0 got from ncclGetUniqueId (hidet_nccl_get_unique_id) and shared. The communicator
 * is NCCL-blocking (NCCL enqueues collectives on a non-blocking one through a new thread,
 * ~50 us each on NCCL 2.28; docs/benchmarks.md); its init runs on a helper thread awaited up
 * to $HIDET_NCCL_TIMEOUT seconds (default 300). At the deadline HIDET_NCCL_ERROR_TIMEOUT is
 * returned and the helper is left inside NCCL (what it makes, if NCCL ever returns, is
 * aborted). HIDET_NCCL_NONBLOCKING=1 makes NCCL-non-blocking communicators instead,
 * abortable at any point; so does init inside a group (hidet_nccl_group_start). */
hidet_nccl_status_t hidet_nccl_comm_init_rank(int nranks, const ncclUniqueId *id, int rank,
                                              int *comm_id);
/* One process, ndev GPUs: a communicator of ndev ranks, rank i on devices[i] (devices NULL:
 * 0 .. ndev-1), ids in comm_ids[0 .. ndev-1]. The same device twice is refused. */
hidet_nccl_status_t hidet_nccl_comm_init_all(int ndev, const int *devices, int *comm_ids);
/* ncclGetUniqueId through the loaded NCCL. Each communicator needs a fresh one. */
hidet_nccl_status_t hidet_nccl_get_unique_id(ncclUniqueId *id);

/* Collective over comm_id's ranks (NCCL 2.18 or newer): ranks with the same color form a
 * new communicator, ordered by key then old rank. color HIDET_NCCL_SPLIT_NOCOLOR (NCCL's
 * NCCL_SPLIT_NOCOLOR) gives no communicator and *new_id = -1. Inside a group
 * (hidet_nccl_group_start/end) the new communicator is ready after group_end, and
 * NCCL-non-blocking. Outside a group it is blocking, made like init's on a helper thread
 * against the deadline; at the deadline the parent is still inside NCCL's split, so its
 * id is made dead (left to the process exit) and HIDET_NCCL_ERROR_TIMEOUT returned. */
#define HIDET_NCCL_SPLIT_NOCOLOR NCCL_SPLIT_NOCOLOR
hidet_nccl_status_t hidet_nccl_comm_split(int comm_id, int color, int key, int *new_id);

/* Owned: ncclCommDestroy, then the id is dead. Borrowed: the id is dead; the NCCL
 * communicator is left to the caller. */
hidet_nccl_status_t hidet_nccl_comm_destroy(int comm_id);

hidet_nccl_status_t hidet_nccl_comm_rank(int comm_id, int *rank);
hidet_nccl_status_t hidet_nccl_comm_size(int comm_id, int *size);
hidet_nccl_status_t hidet_nccl_comm_device(int comm_id, int *device);
/* 1 if the library owns (and will destroy) the communicator, 0 if it is borrowed. */
hidet_nccl_status_t hidet_nccl_comm_is_owned(int comm_id, int *owned);

/* ---------------------------------------------------------------- failures
 *
 * NCCL reports a failed peer or network asynchronously, or not at all: a collective whose
 * peer died may simply never finish. These calls turn that into an error the application
 * can act on. After an abort the id is dead (every use is HIDET_NCCL_ERROR_INVALID_COMM
 * saying why), the other communicators keep working, and finalize still releases them.
 * A communicator that comm_wait found failed, on an NCCL that can shrink (2.27 or newer),
 * is kept instead: its id is "failed" (collectives and splits on it are refused saying why;
 * shrink, revoke, destroy, abort and the queries take it), so the survivors can shrink it
 * and carry on. Its unfinished work runs until the shrink (HIDET_NCCL_SHRINK_ABORT), a
 * revoke, an abort or destroy (which aborts a failed communicator) stops it. */

/* What the library does when it finds a communicator failed (an asynchronous NCCL error,
 * a failed NCCL call, a wait past its deadline). */
typedef enum {
    HIDET_NCCL_ON_ERROR_RETURN = 0,     /* return the error (the default); see comm_wait */
    HIDET_NCCL_ON_ERROR_ABORT_COMM = 1, /* also abort the communicator: its id is dead */
    HIDET_NCCL_ON_ERROR_ABORT_PROCESS = 2, /* print the message to stderr and abort() the process */
    HIDET_NCCL_NUM_ERROR_POLICIES
} hidet_nccl_error_policy_t;
hidet_nccl_status_t hidet_nccl_comm_set_error_policy(int comm_id, hidet_nccl_error_policy_t policy);

/* Non-blocking health check: ncclCommGetAsyncError. HIDET_NCCL_SUCCESS while healthy (work
 * in flight included); HIDET_NCCL_ERROR_NCCL naming the communicator, its rank and NCCL's
 * error otherwise, then the error policy applies. */
hidet_nccl_status_t hidet_nccl_comm_check(int comm_id);

/* Waits, from the CPU, for the work queued on stream (cudaStreamQuery), checking the
 * communicator as it waits (ncclCommGetAsyncError). timeout_s > 0 seconds, or
 * HIDET_NCCL_DEFAULT_TIMEOUT for $HIDET_NCCL_TIMEOUT (300 s). On an asynchronous NCCL error
 * or at the deadline the error names the communicator, its rank and what was awaited
 * (HIDET_NCCL_ERROR_NCCL or HIDET_NCCL_ERROR_TIMEOUT), the flight recorder dumps (with a
 * trace directory set), and the id becomes failed (see above: NCCL 2.27 or newer, policy
 * RETURN) or, on an older NCCL or with the policy ABORT_COMM, an owned communicator is
 * aborted and its id is dead (a borrowed one is left to its owner). A failed CUDA stream
 * is HIDET_NCCL_ERROR_CUDA. */
#define HIDET_NCCL_DEFAULT_TIMEOUT 0.0
hidet_nccl_status_t hidet_nccl_comm_wait(int comm_id, cudaStream_t stream, double timeout_s);

/* ncclCommAbort: stops the communicator's work at once, without its peers, and makes the
 * id dead. A borrowed communicator's id is dropped; the NCCL communicator is its owner's. */
hidet_nccl_status_t hidet_nccl_comm_abort(int comm_id);

/* Collective over the ranks that stay (NCCL 2.27 or newer: ncclCommShrink): a new owned
 * communicator of comm_id's ranks minus exclude_ranks[0 .. n_exclude-1] (ranks of comm_id,
 * each once; the excluded ranks do not call), ranked in their old order. flags:
 * HIDET_NCCL_SHRINK_DEFAULT on a healthy communicator (all of its work done), or
 * HIDET_NCCL_SHRINK_ABORT on a failed one (NCCL first stops its unfinished work). Made on a
 * helper thread against the deadline, like split. comm_id stays as it was (failed or live):
 * destroy it when done. Outside a group only. Excluding nobody (a shrink NCCL 2.28.9 refuses)
 * is made as a split of every rank, for a healthy communicator. */
#define HIDET_NCCL_SHRINK_DEFAULT 0
#define HIDET_NCCL_SHRINK_ABORT 1
hidet_nccl_status_t hidet_nccl_comm_shrink(int comm_id, int n_exclude, const int *exclude_ranks, int flags,
                                           int *new_id);

/* ncclCommRevoke (NCCL 2.28.7 or newer): stops the communicator's unfinished work on this
 * rank without destroying it, and waits (to the deadline) until NCCL says it is quiescent;
 * the id is then failed (see above): shrink it or destroy it. Not collective: each rank
 * that revokes stops its own side. */
hidet_nccl_status_t hidet_nccl_comm_revoke(int comm_id);

/* ---------------------------------------------------------------- library memory
 *
 * NCCL runs a collective three ways, and none wins everywhere (docs/buffers.md): on plain
 * memory (copied through NCCL's own buffers), on memory registered with ncclCommRegister
 * (zero-copy; best at large sizes), and on a symmetric window (ncclCommWindowRegister, NCCL
 * 2.27; best at mid sizes). Memory from hidet_nccl_mem_alloc registered with
 * HIDET_NCCL_REGISTER_AUTO gets all three: the library makes two siblings of the communicator
 * (ncclCommSplit; only the ones its tuning table takes, each ~0.5 GiB of device memory on
 * 2 x H200), registers the memory on one as a window and on the other as a buffer, and
 * each all_reduce, all_gather and reduce_scatter of the communicator then runs on the
 * communicator, or the sibling, that is fastest for its collective, dtype and size, by a
 * tuning table (built in; `hidet-nccl-bench --tune FILE` measures one, HIDET_NCCL_TUNE_FILE
 * names it). The choice depends on the call alone, so every rank makes the same one; as with
 * NCCL's windows, every rank passes library memory at the same place, or none does. */

/* ncclMemAlloc (NCCL 2.19): bytes of device memory on the communicator's GPU, cuMem-backed
 * (what windows need), for any communicator on that GPU. Free it with hidet_nccl_mem_free. */
hidet_nccl_status_t hidet_nccl_mem_alloc(int comm_id, size_t bytes, void **ptr);
/* Frees what hidet_nccl_mem_alloc returned; refused (nothing freed) for any other pointer,
 * for memory still registered, and for memory that work queued on a stream may still use
 * (the last stream a collective used it on is not done: wait for it first). */
hidet_nccl_status_t hidet_nccl_mem_free(void *ptr);

#define HIDET_NCCL_REGISTER_AUTO 0   /* buffer and window on siblings; per-call choice (above) */
#define HIDET_NCCL_REGISTER_BUFFER 1 /* ncclCommRegister on the communicator itself (2.19) */
#define HIDET_NCCL_REGISTER_WINDOW 2 /* ncclCommWindowRegister, symmetric, on it itself (2.27) */
#define HIDET_NCCL_REGISTER_OWN 3    /* the library's own all_reduce kernels on it itself */

/* Registers [ptr, ptr + bytes) with the communicator as flags says; *handle names it for
 * hidet_nccl_deregister. AUTO and WINDOW are collective (every rank calls, in the same
 * order) and need memory from hidet_nccl_mem_alloc, 4096-byte aligned; BUFFER is local.
 * A collective on the communicator whose buffer starts inside a registration must end
 * inside it too. */
hidet_nccl_status_t hidet_nccl_register(int comm_id, void *ptr, size_t bytes, int flags, int *handle);
/* Undoes hidet_nccl_register (collective as the registration was); refused for a handle
 * not of this communicator, deregistered already, or still in use (as mem_free). Destroying
 * the communicator, or hidet_nccl_finalize, deregisters what is left. */
hidet_nccl_status_t hidet_nccl_deregister(int comm_id, int handle);

/* The library's own all_reduce kernels (docs/own_kernels.md): below a few MiB, on GPUs of one
 * host with peer access, a one-shot kernel (every rank reads every rank's data and reduces)
 * and a two-shot one (reduce-scatter, then all-gather, through peer memory) are meant to beat
 * NCCL. They run on a communicator of 2 to 8 ranks, up to 4 MiB a call, for float32,
 * tfloat32, float16, bfloat16, int32, uint32 (sum, prod, max, min, avg), complex64 (sum, avg)
 * and float8 (max, min: exact). The tuning table names them as views "own1" and "own2" where
 * they were measured faster, and a communicator with AUTO registrations then takes them at
 * those sizes; HIDET_NCCL_REGISTER_OWN takes them for every all_reduce of the communicator
 * they can run. Like the table's choice, theirs depends on the call alone, never on the
 * buffers (they copy through their own staging), so every rank makes the same one. Each rank
 * maps its peers' workspaces (CUDA IPC, exchanged through the communicator) at the first such
 * registration (collective); every other call takes NCCL's path, with the reason at INFO.
 * Graphs that captured them are destroyed before their communicator is. */

/* How hidet_nccl_all_reduce would run this call on this rank, in words, into route (at most
 * route_len bytes, NUL-terminated): "own one-shot", "own two-shot", "nccl plain", "nccl
 * buffer" or "nccl window", then, when the table named own kernels that cannot run it, ": "
 * and why ("local copy (one rank)" on one rank, "nothing (count 0)"). Checks the arguments as
 * all_reduce does; touches no GPU and records nothing. */
hidet_nccl_status_t hidet_nccl_all_reduce_route(int comm_id, const void *sendbuff, const void *recvbuff,
                                                size_t count, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                                char *route, size_t route_len);

/* ---------------------------------------------------------------- flight recorder
 *
 * With HIDET_NCCL_TRACE_DIR set (hidet-nccl-run --trace-dir), every communicator keeps a ring
 * of its last HIDET_NCCL_TRACE_ENTRIES (2048) operations handed to NCCL: sequence number,
 * collective, dtype, count, op, root or peer, stream, time, the calling thread's tag, and
 * (HIDET_NCCL_TRACE_COMPLETION=1) whether it completed; a deadline or an abort dumps it there
 * (also before the ABORT_PROCESS policy ends the process), and so does SIGUSR1;
 * `hidet-nccl-trace DIR` reads the dumps of every rank and says where they diverged. Without a
 * trace directory no dump would be written, so nothing is recorded and a call costs nothing
 * for it, unless HIDET_NCCL_TRACE_ENTRIES is set (0: off everywhere). Decided per communicator
 * at its first collective. docs/flight_recorder.md has the details. */

/* A dump's file in its directory: prefix, the launcher's rank (else "pid" and the process id),
 * suffix. */
#define HIDET_NCCL_TRACE_FILE_PREFIX "hidet-nccl-trace."
#define HIDET_NCCL_TRACE_FILE_SUFFIX ".jsonl"

/* The calling thread's tag, recorded with each of its later operations until changed (NULL
 * or "": none); at most 47 bytes. */
hidet_nccl_status_t hidet_nccl_set_tag(const char *tag);
/* Dumps every communicator's ring now into dir (NULL: HIDET_NCCL_TRACE_DIR), an existing
 * writable directory, as hidet-nccl-trace.<rank>.jsonl (written atomically; a later dump
 * replaces it); with the recorder off its header says why. path (may be NULL) gets the file's
 * path. */
hidet_nccl_status_t hidet_nccl_trace_dump(const char *dir, char *path, size_t path_size);

/* Destroys every owned communicator, drops the borrowed ones, and empties the registry.
 * Calling it again (or with nothing registered) is a successful no-op. The first failure
 * is returned, after everything else has been released. */
hidet_nccl_status_t hidet_nccl_finalize(void);

/* ---------------------------------------------------------------- collectives */

/* ncclGroupStart/ncclGroupEnd, for one thread driving several GPUs, or for sends and
 * receives that must run together: every collective (and split, init) between them is
 * launched together. group_end waits, up to the timeout, for the communicators used in the
 * group to be ready. Groups nest. */
hidet_nccl_status_t hidet_nccl_group_start(void);
hidet_nccl_status_t hidet_nccl_group_end(void);

/*
 * recvbuff[i] = op over ranks of sendbuff[i], for i < count elements of dtype.
 * sendbuff == recvbuff is in place. count 0 is a successful no-op (buffers may be NULL).
 * Every argument is checked before NCCL is touched. Stream-ordered: it neither
 * synchronizes the host nor allocates, so it can be captured in a CUDA graph.
 */
hidet_nccl_status_t hidet_nccl_all_reduce(int comm_id, const void *sendbuff, void *recvbuff,
                                          size_t count, hidet_nccl_dtype_t dtype,
                                          hidet_nccl_op_t op, cudaStream_t stream);

/*
 * The rest of NCCL's collectives, on the same communicator ids and data types. The same
 * promises as all_reduce: every argument is checked before NCCL is touched (a root or peer
 * out of range, a byte count that overflows size_t, buffers that overlap other than the
 * in-place way NCCL defines), nothing synchronizes the host or allocates, each can be
 * captured in a CUDA graph, and each works between group_start and group_end.
 *
 * Data types: the reductions (reduce, reduce_scatter) follow all_reduce's table
 * (hidet_nccl_reduction: complex sum/avg as twice as many reals; bool only max/min; int16
 * refused, with the reason). Data movement (the others) takes every dtype and moves it byte
 * for byte, as an NCCL type of the same width (complex, bool, tfloat32, int16, and fp8 on an
 * NCCL without fp8 included). Counts are counts of `dtype` elements, as NCCL's own calls
 * take them; count 0 is a successful no-op (buffers may then be NULL).
 */

/* recvbuff on every rank = sendbuff of root (count elements). sendbuff is read on root only;
 * sendbuff == recvbuff is in place. */
hidet_nccl_status_t hidet_nccl_broadcast(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                         hidet_nccl_dtype_t dtype, int root, cudaStream_t stream);
/* recvbuff on root = op over ranks of sendbuff (count elements); recvbuff is written on root
 * only. sendbuff == recvbuff is in place. */
hidet_nccl_status_t hidet_nccl_reduce(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                      hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, int root,
                                      cudaStream_t stream);
/* recvbuff[r * sendcount ...] = sendbuff of rank r, for every rank r (recvbuff holds
 * nranks * sendcount). In place: sendbuff == recvbuff + rank * sendcount. */
hidet_nccl_status_t hidet_nccl_all_gather(int comm_id, const void *sendbuff, void *recvbuff, size_t sendcount,
                                          hidet_nccl_dtype_t dtype, cudaStream_t stream);
/* recvbuff (recvcount elements) on rank r = op over ranks of block r of sendbuff (sendbuff
 * holds nranks * recvcount). In place: recvbuff == sendbuff + rank * recvcount. */
hidet_nccl_status_t hidet_nccl_reduce_scatter(int comm_id, const void *sendbuff, void *recvbuff, size_t recvcount,
                                              hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, cudaStream_t stream);
/* Block j of sendbuff (count elements each, nranks blocks) goes to rank j, landing there as
 * block r of recvbuff, r the sender. Not in place (the buffers must not overlap: NCCL defines no
 * in-place all_to_all, and an in-place ncclAlltoAll was measured wrong over the network). NCCL's
 * ncclAlltoAll (2.28) where the loaded NCCL has it, else grouped send/recv. */
hidet_nccl_status_t hidet_nccl_all_to_all(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                          hidet_nccl_dtype_t dtype, cudaStream_t stream);
/* recvbuff[r * count ...] on root = sendbuff of rank r; recvbuff is used on root only. In
 * place: sendbuff == recvbuff + root * count on root. ncclGather (2.28) or grouped send/recv. */
hidet_nccl_status_t hidet_nccl_gather(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                      hidet_nccl_dtype_t dtype, int root, cudaStream_t stream);
/* recvbuff on rank r = sendbuff[r * count ...] of root; sendbuff is read on root only. In
 * place: recvbuff == sendbuff + root * count on root. ncclScatter (2.28) or grouped send/recv. */
hidet_nccl_status_t hidet_nccl_scatter(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                       hidet_nccl_dtype_t dtype, int root, cudaStream_t stream);
/* Point to point: count elements to / from rank peer, which makes the matching call with the
 * same count and dtype. Several sends and receives between group_start and group_end run
 * together (a halo exchange); a peer may be this rank itself only within a group (a send and
 * its receive in the same group), as NCCL requires. */
hidet_nccl_status_t hidet_nccl_send(int comm_id, const void *sendbuff, size_t count, hidet_nccl_dtype_t dtype,
                                    int peer, cudaStream_t stream);
hidet_nccl_status_t hidet_nccl_recv(int comm_id, void *recvbuff, size_t count, hidet_nccl_dtype_t dtype, int peer,
                                    cudaStream_t stream);
/* Stream-ordered barrier: the work queued on stream after it starts on a rank only once every
 * rank has queued theirs before it (an all_reduce of one value in a device buffer the
 * communicator keeps). The host does not wait: call hidet_nccl_comm_wait for that. */
hidet_nccl_status_t hidet_nccl_barrier(int comm_id, cudaStream_t stream);

/*
 * A scaled sum: op(x over ranks) = sum over ranks of scalar * x (NCCL's PreMulSum; with
 * scalar 1/nranks, an average of any float type, or a scaled gradient sum). The op belongs
 * to one communicator and one dtype: all_reduce, reduce and reduce_scatter of that
 * communicator and dtype accept it in place of a hidet_nccl_op_t. scalar points to one value
 * of dtype (of its real part type for complex: float32 for complex64), in host memory (read
 * now: scalar_on_device 0) or device memory (read when each collective runs:
 * scalar_on_device 1, so it may change between calls and inside a graph). Needs NCCL 2.11.
 * bool and int16/uint16 are refused. Destroy it before its communicator; destroying the
 * communicator destroys its ops.
 */
hidet_nccl_status_t hidet_nccl_op_premul_sum(int comm_id, hidet_nccl_dtype_t dtype, const void *scalar,
                                             int scalar_on_device, hidet_nccl_op_t *op);
hidet_nccl_status_t hidet_nccl_op_destroy(int comm_id, hidet_nccl_op_t op);

#ifdef __cplusplus
}
#endif

#endif /* HIDET_NCCL_HIDET_NCCL_H_ */

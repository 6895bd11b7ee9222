/* Every environment variable the library reads, but the launchers' rank variables (given to
 * backends as hints: core/base/settings.c, k_launchers), declared once: the hn_setting_t enum
 * (core/base/kit.h) and the table of core/base/settings.c are made from this list, and
 * docs/user_guide.md must document every name (//tests:settings_doc_test).
 *
 *   X(id, name, kind, default or NULL, min, max, doc)
 *   kind: STRING, SECRET (a string never printed), INT (min .. max), SECONDS ((min, max]), BOOL (0 or 1),
 *         LEVEL (NONE, WARN, INFO, TRACE)
 * A new setting is a row here, its use, and its line in the user guide. */
#ifndef HIDET_NCCL_CORE_BASE_SETTINGS_LIST_H_
#define HIDET_NCCL_CORE_BASE_SETTINGS_LIST_H_

#define HN_SETTINGS(X) \
    X(DEBUG, "HIDET_NCCL_DEBUG", LEVEL, "WARN", 0, 0, \
      "log level on stderr: NONE, WARN, INFO or TRACE") \
    X(TIMEOUT, "HIDET_NCCL_TIMEOUT", SECONDS, "300", 0, HN_TIMEOUT_MAX_S, \
      "seconds any wait (bootstrap, init, split, group end, comm_wait's default) may last") \
    X(NONBLOCKING, "HIDET_NCCL_NONBLOCKING", BOOL, "0", 0, 1, \
      "1: NCCL-non-blocking communicators (abortable at any point, slower small collectives)") \
    X(RECOVER_REBUILD, "HIDET_NCCL_RECOVER_REBUILD", BOOL, "0", 0, 1, \
      "1: hidet_nccl_comm_recover always rebuilds from the survivors (a new id), never asks NCCL to shrink") \
    X(BOOTSTRAP, "HIDET_NCCL_BOOTSTRAP", STRING, NULL, 0, 0, \
      "bootstrap of hidet_nccl_init: a built-in name (file, socket, pmix) or a plug-in path; unset: chosen from the" \
      " environment") \
    X(RENDEZVOUS_DIR, "HIDET_NCCL_RENDEZVOUS_DIR", STRING, NULL, 0, 0, \
      "directory every rank sees, for the shared-file bootstrap") \
    X(JOB_KEY, "HIDET_NCCL_JOB_KEY", STRING, NULL, 0, 0, \
      "key unique to the job, for the shared-file bootstrap (else from Slurm's ids)") \
    X(JOB_SECRET_FILE, "HIDET_NCCL_JOB_SECRET_FILE", STRING, NULL, 0, 0, \
      "file holding the job's secret (16 .. 4096 bytes, the user's own, readable by nobody else): the ranks of a" \
      " socket rendezvous prove they hold it, shared-file announces carry its MAC (HMAC-SHA-256)") \
    X(JOB_SECRET, "HIDET_NCCL_JOB_SECRET", SECRET, NULL, 0, 0, \
      "the job's secret itself (at least 16 characters), when no secret file is set; hidet-nccl-run sets one") \
    X(POLL_MAX_MS, "HIDET_NCCL_POLL_MAX_MS", INT, "5", 1, 60000, \
      "longest pause, in ms, between two looks at a rendezvous file") \
    X(LIBRARY, "HIDET_NCCL_LIBRARY", STRING, NULL, 0, 0, \
      "the NCCL file to load; nothing else is tried while it is set") \
    X(NCCL_HOME, "NCCL_HOME", STRING, NULL, 0, 0, \
      "NCCL install prefix searched for lib/libnccl.so.2") \
    X(VIRTUAL_ENV, "VIRTUAL_ENV", STRING, NULL, 0, 0, \
      "Python venv searched for NCCL's pip wheel") \
    X(CONDA_PREFIX, "CONDA_PREFIX", STRING, NULL, 0, 0, \
      "conda env searched for NCCL's pip wheel") \
    X(PYTHONUSERBASE, "PYTHONUSERBASE", STRING, NULL, 0, 0, \
      "Python user site searched for NCCL's pip wheel (else ~/.local)") \
    X(HOME, "HOME", STRING, NULL, 0, 0, \
      "for ~/.local, the default Python user site") \
    X(PATH, "PATH", STRING, NULL, 0, 0, \
      "where the python3 whose NCCL wheel is searched is found") \
    X(CUDA_HOME, "CUDA_HOME", STRING, "/usr/local/cuda", 0, 0, \
      "CUDA prefix searched for NCCL") \
    X(SLURM_JOB_ID, "SLURM_JOB_ID", STRING, NULL, 0, 0, \
      "Slurm's job id, for the default job key") \
    X(SLURM_STEP_ID, "SLURM_STEP_ID", STRING, NULL, 0, 0, \
      "Slurm's step id, for the default job key") \
    X(PMIX_LIBRARY, "HIDET_NCCL_PMIX_LIBRARY", STRING, NULL, 0, 0, \
      "the libpmix file the PMIx bootstrap loads; nothing else is tried while it is set") \
    X(PMIX_INSTALL_PREFIX, "PMIX_INSTALL_PREFIX", STRING, NULL, 0, 0, \
      "PMIx install prefix searched for lib/libpmix.so.2") \
    X(PMIX_NAMESPACE, "PMIX_NAMESPACE", STRING, NULL, 0, 0, \
      "set by a PMIx launcher (mpirun, srun --mpi=pmix): the PMIx bootstrap is chosen") \
    X(MASTER_ADDR, "MASTER_ADDR", STRING, NULL, 0, 0, \
      "host of rank 0 for the socket rendezvous (hidet-nccl-run --master-addr, torchrun)") \
    X(TORCHELASTIC_USE_AGENT_STORE, "TORCHELASTIC_USE_AGENT_STORE", STRING, NULL, 0, 0, \
      "set to True by torchrun when its agent serves a store on MASTER_PORT: the socket rendezvous meets on" \
      " MASTER_PORT + 1") \
    X(MASTER_PORT, "MASTER_PORT", INT, NULL, 1, 65535, \
      "port rank 0 listens on for the socket rendezvous") \
    X(RENDEZVOUS_SERVED, "HIDET_NCCL_RENDEZVOUS_SERVED", BOOL, "0", 0, 1, \
      "1: hidet-nccl-run serves the socket rendezvous at MASTER_ADDR:MASTER_PORT and every rank, rank 0 included, is" \
      " its client (set by the launcher)") \
    X(RANKS_PER_ROOT, "HIDET_NCCL_RANKS_PER_ROOT", INT, "128", 1, 1 << 30, \
      "ranks per root of a communicator's init: more ranks than this, and init uses ceil(n / this) roots " \
      "(ncclCommInitRankScalable, NCCL 2.23)") \
    X(NCCL_HOSTID, "NCCL_HOSTID", STRING, NULL, 0, 0, \
      "NCCL's host identity (else the host name): two ranks on one GPU of one host are refused, as NCCL refuses " \
      "them") \
    X(GROUPED_P2P, "HIDET_NCCL_GROUPED_P2P", BOOL, "0", 0, 1, \
      "1: all_to_all, gather and scatter as grouped send/recv even where NCCL has them (ncclAlltoAll, ncclGather, " \
      "ncclScatter: 2.28)") \
    X(TRACE_ENTRIES, "HIDET_NCCL_TRACE_ENTRIES", INT, "2048", 0, 1 << 20, \
      "operations each communicator's flight recorder keeps, rounded up to a power of two (0: the recorder off); " \
      "unset: on only with HIDET_NCCL_TRACE_DIR set, where a dump can go, else off and free") \
    X(TRACE_DIR, "HIDET_NCCL_TRACE_DIR", STRING, NULL, 0, 0, \
      "existing directory the flight recorder dumps into, on a deadline, an abort, SIGUSR1 or hidet_nccl_trace_dump" \
      " (hidet-nccl-run --trace-dir sets it)") \
    X(TRACE_COMPLETION, "HIDET_NCCL_TRACE_COMPLETION", BOOL, "0", 0, 1, \
      "1: a CUDA event per recorded operation, so a dump says which completed") \
    X(TUNE_FILE, "HIDET_NCCL_TUNE_FILE", STRING, NULL, 0, 0, \
      "crossover table for collectives on library memory (hidet-nccl-bench --tune writes one); unset: the built-in " \
      "table") \
    X(VIEW_SHARE, "HIDET_NCCL_VIEW_SHARE", BOOL, "0", 0, 1, \
      "1: the siblings an AUTO registration makes share the communicator's NCCL resources (splitShare: less device " \
      "memory)") \
    X(OWN_KERNELS, "HIDET_NCCL_OWN_KERNELS", BOOL, "1", 0, 1, \
      "0: never the library's own all_reduce kernels (the tuning table's own sizes run plain, " \
      "HIDET_NCCL_REGISTER_OWN is refused); one rank's 0 holds for its communicators' every rank")

#endif

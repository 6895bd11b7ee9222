/* Internal: the table of NCCL functions resolved at run time. */
#ifndef HIDET_NCCL_CORE_NCCL_NCCL_LOADER_INT_H_
#define HIDET_NCCL_CORE_NCCL_NCCL_LOADER_INT_H_

#include <nccl.h>
#include <stdatomic.h>

#include "core/nccl/nccl_symbols.h"
#include "hidet_nccl/hidet_nccl.h"

/* The NCCL functions of core/nccl/nccl_symbols.h, resolved at run time (an optional one NULL when
 * the loaded NCCL lacks it). */
#define HN_NCCL_FIELD(ret, name, since, params) ret(*name) params;
typedef struct {
    HN_NCCL_SYMBOLS(HN_NCCL_FIELD)
    /* Filled by the loader. */
    int version;      /* normalized: X*10000 + Y*100 + Z */
    char path[4096];  /* where it was loaded from */
} hn_nccl_t;

/* The names the last step gives the system loader (NULL-terminated). Tests replace it to
 * see the error of a search that finds nothing on a machine that has NCCL. */
extern const char *const *hidet_nccl__system_sonames;

/* The table once loaded (nccl_loader.c): set once, then read without a lock. */
extern __attribute__((visibility("hidden"))) hn_nccl_t hidet_nccl__nccl_table;
extern __attribute__((visibility("hidden"))) _Atomic int hidet_nccl__nccl_ready;

/* hidet_nccl__nccl's first use: loads NCCL (thread-safe). */
hidet_nccl_status_t hidet_nccl__nccl_load(const hn_nccl_t **out);
/* Loads NCCL on first use (thread-safe) and returns the table, or fails with the list of
 * places searched. Inlined: after the first use, a load and a test (group_start/end's). */
static inline hidet_nccl_status_t hidet_nccl__nccl(const hn_nccl_t **out) {
    if (__builtin_expect(!atomic_load_explicit(&hidet_nccl__nccl_ready, memory_order_acquire), 0))
        return hidet_nccl__nccl_load(out);
    *out = &hidet_nccl__nccl_table;
    return HIDET_NCCL_SUCCESS;
}

/* The table if loaded, else NULL; never loads (for fast paths after a successful init). */
static inline const hn_nccl_t *hidet_nccl__nccl_loaded(void) {
    return atomic_load_explicit(&hidet_nccl__nccl_ready, memory_order_acquire) ? &hidet_nccl__nccl_table : NULL;
}

/* "ncclXxx failed: <NCCL's string> (<last error>)" into the thread's message. */
hidet_nccl_status_t hidet_nccl__nccl_fail(const char *func, const char *call, ncclResult_t r,
                                          ncclComm_t comm);

/* HIDET_NCCL_ERROR_UNSUPPORTED naming what needs which version (and call, the NCCL function)
 * unless the loaded NCCL has fn and is at least min_version (X*10000+Y*100+Z). */
hidet_nccl_status_t hidet_nccl__needs(const hn_nccl_t *n, const void *fn, int min_version, const char *what,
                                      const char *call);

#endif

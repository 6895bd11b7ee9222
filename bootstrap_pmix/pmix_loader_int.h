/* Internal: libpmix resolved at run time into a table, as core/ does with NCCL, so that
 * libhidet_nccl.a has no link dependency on PMIx (bootstrap_pmix/pmix_loader.c). */
#ifndef HIDET_NCCL_BOOTSTRAP_PMIX_PMIX_LOADER_INT_H_
#define HIDET_NCCL_BOOTSTRAP_PMIX_PMIX_LOADER_INT_H_

#include <stddef.h>

#include <pmix.h>

typedef struct {
    pmix_status_t (*Init)(pmix_proc_t *proc, pmix_info_t info[], size_t ninfo);
    pmix_status_t (*Finalize)(const pmix_info_t info[], size_t ninfo);
    pmix_status_t (*Get)(const pmix_proc_t *proc, const char key[], const pmix_info_t info[], size_t ninfo,
                         pmix_value_t **val);
    pmix_status_t (*Put)(pmix_scope_t scope, const char key[], pmix_value_t *val);
    pmix_status_t (*Commit)(void);
    pmix_status_t (*Fence_nb)(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo,
                              pmix_op_cbfunc_t cbfunc, void *cbdata);
    const char *(*Error_string)(pmix_status_t status);
    /* Optional (PMIx 4 and newer): frees what a value holds; else the loader's own does it. */
    void (*Value_destruct)(pmix_value_t *val);
    char path[4096]; /* where it was loaded from */
} hn_pmix_t;

/* Loads libpmix on first use (thread-safe): $HIDET_NCCL_PMIX_LIBRARY (nothing else then), a
 * copy already in the process, $PMIX_INSTALL_PREFIX/lib, Debian's and Ubuntu's pmix2 folder,
 * then the system loader (libpmix.so.2, libpmix.so). 0 and *out; else -1 and why, listing
 * every place looked in. */
int hidet_nccl__pmix(const hn_pmix_t **out, char *why, size_t why_bytes);

/* Frees a value PMIx_Get returned. */
void hidet_nccl__pmix_value_free(const hn_pmix_t *p, pmix_value_t *val);

#endif

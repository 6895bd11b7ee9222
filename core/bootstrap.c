/* Bootstrap handles: checking and loading plug-ins, and the calls the core makes on them. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "core/bootstrap_int.h"
#include "core/error_int.h"
#include "core/log_int.h"
#include "core/wait_int.h"

#define BACKEND_MSG 2048

/* The backend's own words, or the status name when it gave none. */
static hidet_nccl_status_t backend_fail(const hidet_nccl_bootstrap_v1_t *ops, const char *what,
                                        hidet_nccl_status_t st, const char *msg) {
    return HN_FAIL(st, "bootstrap '%s' %s failed: %s", ops->name ? ops->name : "?", what,
                   msg[0] ? msg : hidet_nccl_status_string(st));
}

static hidet_nccl_status_t check_ops(const hidet_nccl_bootstrap_v1_t *ops, const char *where) {
    if (ops->name == NULL || ops->name[0] == '\0')
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bootstrap plug-in %s has no name", where);
    if (ops->api_version != HIDET_NCCL_BOOTSTRAP_API_VERSION)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "bootstrap plug-in '%s' (%s) has API version %d; this library supports %d", ops->name, where,
                       ops->api_version, HIDET_NCCL_BOOTSTRAP_API_VERSION);
    const struct {
        const char *member;
        int present;
    } required[] = {{"init", ops->init != NULL},           {"rank_size", ops->rank_size != NULL},
                    {"local_rank", ops->local_rank != NULL}, {"broadcast", ops->broadcast != NULL},
                    {"finalize", ops->finalize != NULL}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i].present)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bootstrap plug-in '%s' (%s) has no %s", ops->name,
                           where, required[i].member);
    return HIDET_NCCL_SUCCESS;
}

static hidet_nccl_status_t create(const hidet_nccl_bootstrap_v1_t *ops, const void *params, void *dl_handle,
                                  const char *where, hidet_nccl_bootstrap_h *out) {
    HN_CHECK(check_ops(ops, where));
    hidet_nccl_bootstrap_h bs = calloc(1, sizeof *bs);
    if (bs == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for a bootstrap");
    bs->ops = *ops;
    bs->dl_handle = dl_handle;
    char msg[BACKEND_MSG] = "";
    hidet_nccl_status_t st = ops->init(params, &bs->state, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) {
        free(bs);
        return backend_fail(ops, "init", st, msg);
    }
    HN_INFO("bootstrap '%s' ready (%s)", ops->name, where);
    *out = bs;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_bootstrap_create(const hidet_nccl_bootstrap_v1_t *ops, const void *params,
                                                hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(ops);
    HN_CHECK_NOT_NULL(out);
    *out = NULL;
    return create(ops, params, NULL, "given by the caller", out);
}

hidet_nccl_status_t hidet_nccl_bootstrap_load(const char *path, const void *params, hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(path);
    HN_CHECK_NOT_NULL(out);
    *out = NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "bootstrap plug-in %s could not be loaded: %s", path,
                       e ? e : "dlopen failed");
    }
    const hidet_nccl_bootstrap_v1_t *ops = dlsym(h, HIDET_NCCL_BOOTSTRAP_SYMBOL_V1);
    if (ops == NULL) {
        dlclose(h);
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "bootstrap plug-in %s exports no %s", path,
                       HIDET_NCCL_BOOTSTRAP_SYMBOL_V1);
    }
    hidet_nccl_status_t st = create(ops, params, h, path, out);
    if (st != HIDET_NCCL_SUCCESS) dlclose(h);
    return st;
}

hidet_nccl_status_t hidet_nccl_bootstrap_from_env(hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(out);
    *out = NULL;
    const char *choice = getenv("HIDET_NCCL_BOOTSTRAP");
    if (choice != NULL && *choice != '\0') {
        if (strcmp(choice, "file") == 0) return hidet_nccl_bootstrap_file(NULL, out);
        if (strchr(choice, '/') != NULL) return hidet_nccl_bootstrap_load(choice, NULL, out);
        if (strcmp(choice, "mpi") == 0)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                           "HIDET_NCCL_BOOTSTRAP=mpi needs libhidet_nccl_mpi.a: call hidet_nccl_mpi_init "
                           "(hidet_nccl/bootstrap_mpi.h)");
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "HIDET_NCCL_BOOTSTRAP='%.200s' is not 'file', 'mpi' or a plug-in path (containing '/')", choice);
    }
    const char *dir = getenv("HIDET_NCCL_RENDEZVOUS_DIR");
    if (dir != NULL && *dir != '\0') return hidet_nccl_bootstrap_file(NULL, out);
    return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP,
                   "no bootstrap found in the environment: start the program with hidet-nccl-run, or set "
                   "HIDET_NCCL_RENDEZVOUS_DIR to a directory all ranks share (Slurm), or HIDET_NCCL_BOOTSTRAP to "
                   "'file' or a plug-in path; MPI programs use hidet_nccl_mpi_init");
}

hidet_nccl_status_t hidet_nccl_bootstrap_destroy(hidet_nccl_bootstrap_h bs) {
    HN_ENTER();
    if (bs == NULL) return HIDET_NCCL_SUCCESS;
    char msg[BACKEND_MSG] = "";
    hidet_nccl_status_t st = bs->ops.finalize(bs->state, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) st = backend_fail(&bs->ops, "finalize", st, msg);
    if (bs->dl_handle != NULL) dlclose(bs->dl_handle);
    free(bs);
    return st;
}

hidet_nccl_status_t hidet_nccl_bootstrap_name(hidet_nccl_bootstrap_h bs, const char **name) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    HN_CHECK_NOT_NULL(name);
    *name = bs->ops.name;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__bootstrap_rank(hidet_nccl_bootstrap_h bs, int *rank, int *size) {
    char msg[BACKEND_MSG] = "";
    hidet_nccl_status_t st = bs->ops.rank_size(bs->state, rank, size, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) return backend_fail(&bs->ops, "rank_size", st, msg);
    if (*size < 1 || *rank < 0 || *rank >= *size)
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "bootstrap '%s' gave rank %d of size %d", bs->ops.name, *rank,
                       *size);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__bootstrap_local_rank(hidet_nccl_bootstrap_h bs, int *local_rank, int *local_size) {
    char msg[BACKEND_MSG] = "";
    hidet_nccl_status_t st = bs->ops.local_rank(bs->state, local_rank, local_size, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) return backend_fail(&bs->ops, "local_rank", st, msg);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_bootstrap_rank(hidet_nccl_bootstrap_h bs, int *rank, int *size) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    HN_CHECK_NOT_NULL(rank);
    HN_CHECK_NOT_NULL(size);
    return hidet_nccl__bootstrap_rank(bs, rank, size);
}

hidet_nccl_status_t hidet_nccl_bootstrap_local_rank(hidet_nccl_bootstrap_h bs, int *local_rank, int *local_size) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    HN_CHECK_NOT_NULL(local_rank);
    HN_CHECK_NOT_NULL(local_size);
    return hidet_nccl__bootstrap_local_rank(bs, local_rank, local_size);
}

hidet_nccl_status_t hidet_nccl__bootstrap_broadcast(hidet_nccl_bootstrap_h bs, void *buf, size_t bytes, int root,
                                                    double timeout_s) {
    char msg[BACKEND_MSG] = "";
    uint64_t tag = bs->next_tag++;
    hidet_nccl_status_t st = bs->ops.broadcast(bs->state, buf, bytes, root, tag, timeout_s, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) return backend_fail(&bs->ops, "broadcast", st, msg);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__bootstrap_allgather(hidet_nccl_bootstrap_h bs, const void *send, void *recv,
                                                    size_t bytes, double timeout_s) {
    char msg[BACKEND_MSG] = "";
    uint64_t tag = bs->next_tag++;
    hidet_nccl_status_t st = bs->ops.allgather(bs->state, send, recv, bytes, tag, timeout_s, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) return backend_fail(&bs->ops, "allgather", st, msg);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_bootstrap_broadcast(hidet_nccl_bootstrap_h bs, void *buf, size_t bytes, int root,
                                                   double timeout_s) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    if (bytes > 0) HN_CHECK_NOT_NULL(buf);
    if (bytes > 65536)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bytes %zu is more than a bootstrap carries (65536)", bytes);
    int rank, size;
    HN_CHECK(hidet_nccl__bootstrap_rank(bs, &rank, &size));
    if (root < 0 || root >= size)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "root %d is not in 0 .. %d", root, size - 1);
    if (timeout_s <= 0) HN_CHECK(hidet_nccl__timeout_seconds(&timeout_s));
    return hidet_nccl__bootstrap_broadcast(bs, buf, bytes, root, timeout_s);
}

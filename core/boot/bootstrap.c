/* Bootstrap handles: checking and loading plug-ins (versions 4, 3 and 2, and version 1 through the
 * adapter), and the calls the core makes on them. The choice from the environment is in
 * core/boot/bootstrap_env.c. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/boot/bootstrap_int.h"
#include "core/boot/bootstrap_v1_int.h"
#include "core/base/status_int.h"
#include "core/base/settings_int.h"

#define BACKEND_MSG 2048
#define ALLGATHER_MAX (8 << 20)

/* The backend's own words, or the status name when it gave none. msg is the BACKEND_MSG
 * buffer the backend wrote into: terminated here, since a plug-in may have filled it to the
 * last byte without a NUL. */
static hidet_nccl_status_t backend_fail(const char *name, const char *what, hidet_nccl_status_t st, char *msg) {
    msg[BACKEND_MSG - 1] = '\0';
    return HN_FAIL(st, "bootstrap '%s' %s failed: %s", name ? name : "?", what,
                   msg[0] ? msg : hidet_nccl_status_string(st));
}

typedef struct {
    const char *member;
    int present;
} member_t;

/* A name, the expected version, and every required member. */
static hidet_nccl_status_t check_plugin(const char *name, int version, int expected, const member_t *members, int n,
                                        const char *where) {
    if (name == NULL || name[0] == '\0')
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bootstrap plug-in %s has no name", where);
    if (version != expected)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "bootstrap plug-in '%s' (%s) says API version %d, but was given as a version %d struct; this "
                       "library loads versions 4 (%s), 3 (%s), 2 (%s) and 1 (%s)",
                       name, where, version, expected, HIDET_NCCL_BOOTSTRAP_SYMBOL_V4, HIDET_NCCL_BOOTSTRAP_SYMBOL_V3,
                       HIDET_NCCL_BOOTSTRAP_SYMBOL_V2, HIDET_NCCL_BOOTSTRAP_SYMBOL_V1);
    for (int i = 0; i < n; i++)
        if (!members[i].present)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bootstrap plug-in '%s' (%s) has no %s", name, where,
                           members[i].member);
    return HIDET_NCCL_SUCCESS;
}

/* Versions 4, 3 and 2 share their first members (recover, of 3 and 4, and heal, of 4, may be
 * NULL). A version 2 or 3 struct rebuilt against this header with HIDET_NCCL_BOOTSTRAP_API_VERSION
 * says 4: as a v2 or v3 struct (their symbols, create_v2) it is still read as its version. */
static hidet_nccl_status_t check_v2(const hidet_nccl_bootstrap_v2_t *ops, int version, const char *where) {
    const member_t m[] = {{"init", ops->init != NULL},           {"rank_size", ops->rank_size != NULL},
                          {"local_rank", ops->local_rank != NULL}, {"broadcast", ops->broadcast != NULL},
                          {"allgather", ops->allgather != NULL},   {"finalize", ops->finalize != NULL}};
    int says = ops->api_version;
    if (version < HIDET_NCCL_BOOTSTRAP_API_VERSION && says == HIDET_NCCL_BOOTSTRAP_API_VERSION) says = version;
    return check_plugin(ops->name, says, version, m, 6, where);
}

/* ops as the newest version: a version 4 struct as it is (joining and heal both set or both
 * NULL), a version 3 one (only its members are read) that cannot heal, a version 2 one that can
 * neither recover nor heal. */
static hidet_nccl_status_t as_newest(const void *ops_v, int version, const char *where, hidet_nccl_bootstrap_t *out) {
    const hidet_nccl_bootstrap_v2_t *v2 = ops_v;
    HN_CHECK(check_v2(v2, version, where));
    memset(out, 0, sizeof *out);
    if (version == HIDET_NCCL_BOOTSTRAP_API_VERSION) {
        *out = *(const hidet_nccl_bootstrap_t *)ops_v;
        if ((out->joining == NULL) != (out->heal == NULL))
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                           "bootstrap plug-in '%s' (%s) has %s but not %s: a version 4 plug-in sets both or neither",
                           v2->name, where, out->heal ? "heal" : "joining", out->heal ? "joining" : "heal");
        return HIDET_NCCL_SUCCESS;
    }
    if (version == HIDET_NCCL_BOOTSTRAP_API_VERSION_V3) {
        const hidet_nccl_bootstrap_v3_t *v3 = ops_v;
        *out = (hidet_nccl_bootstrap_t){v3->name, version, v3->init, v3->rank_size, v3->local_rank, v3->broadcast,
                                        v3->allgather, v3->finalize, v3->recover, v3->recover_unsupported,
                                        v3->peer_lost, NULL, NULL,
                                        "it is a version 3 plug-in (healing came with version 4)"};
        return HIDET_NCCL_SUCCESS;
    }
    *out = (hidet_nccl_bootstrap_t){v2->name, version, v2->init, v2->rank_size, v2->local_rank, v2->broadcast,
                                    v2->allgather, v2->finalize, NULL,
                                    "it is a version 2 plug-in (recovery came with version 3)", NULL, NULL, NULL,
                                    "it is a version 2 plug-in (healing came with version 4)"};
    return HIDET_NCCL_SUCCESS;
}

/* The version the caller's struct says it is, when it is one create takes (4, 3 or 2). */
static int given_version(const hidet_nccl_bootstrap_t *ops) {
    if (ops->api_version == HIDET_NCCL_BOOTSTRAP_API_VERSION_V2 || ops->api_version == HIDET_NCCL_BOOTSTRAP_API_VERSION_V3)
        return ops->api_version;
    return HIDET_NCCL_BOOTSTRAP_API_VERSION;
}

static hidet_nccl_status_t check_v1(const hidet_nccl_bootstrap_v1_t *ops, const char *where) {
    const member_t m[] = {{"init", ops->init != NULL},
                          {"rank_size", ops->rank_size != NULL},
                          {"local_rank", ops->local_rank != NULL},
                          {"broadcast", ops->broadcast != NULL},
                          {"finalize", ops->finalize != NULL}};
    return check_plugin(ops->name, ops->api_version, HIDET_NCCL_BOOTSTRAP_API_VERSION_V1, m, 5, where);
}

/* init's arguments: the deadline (timeout_s, or the setting when 0) and the launcher's hints. */
static hidet_nccl_status_t init_args(double timeout_s, hidet_nccl_bootstrap_init_args_t *args, hn_hints_t *hints) {
    memset(args, 0, sizeof *args);
    args->size = sizeof *args;
    HN_CHECK(hidet_nccl__deadline_seconds(timeout_s, "timeout_s", &args->timeout_s));
    HN_CHECK(hidet_nccl__launcher_hints(hints));
    args->rank = hints->rank;
    args->nranks = hints->nranks;
    args->local_rank = hints->local_rank;
    args->local_size = hints->local_size;
    args->hint_source = hints->source;
    return HIDET_NCCL_SUCCESS;
}

/* The job's numbering (rank_size right after init) and whether this rank joins a running job. */
static hidet_nccl_status_t job_numbering(hidet_nccl_bootstrap_h bs, int *rank, int *size) {
    HN_CHECK(hidet_nccl__bootstrap_rank(bs, rank, size));
    bs->job_of = malloc((size_t)*size * sizeof *bs->job_of);
    if (bs->job_of == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", *size);
    for (int r = 0; r < *size; r++) bs->job_of[r] = r;
    bs->job_rank = *rank;
    bs->job_size = *size;
    bs->joining = bs->ops.joining != NULL && bs->ops.joining(bs->state) == 1;
    return HIDET_NCCL_SUCCESS;
}

void hidet_nccl__bootstrap_renumber_kept(hidet_nccl_bootstrap_h bs, const unsigned char *kept, int old_size) {
    for (int r = 0, j = 0; r < old_size; r++)
        if (kept[r]) bs->job_of[j++] = bs->job_of[r];
}

void hidet_nccl__bootstrap_renumber_members(hidet_nccl_bootstrap_h bs, const unsigned char *members) {
    for (int r = 0, j = 0; r < bs->job_size; r++)
        if (members[r]) bs->job_of[j++] = r;
}

/* ops has been checked. */
static hidet_nccl_status_t create(const hidet_nccl_bootstrap_t *ops, const void *params, void *dl_handle,
                                  const char *where, double timeout_s, hidet_nccl_bootstrap_h *out) {
    hidet_nccl_bootstrap_init_args_t args;
    hn_hints_t hints;
    HN_CHECK(init_args(timeout_s, &args, &hints));
    hidet_nccl_bootstrap_h bs = calloc(1, sizeof *bs);
    if (bs == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for a bootstrap");
    bs->ops = *ops;
    bs->dl_handle = dl_handle;
    atomic_init(&bs->refs, 1);
    char msg[BACKEND_MSG] = "";
    hidet_nccl_status_t st = ops->init(params, &args, &bs->state, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) {
        free(bs);
        return backend_fail(ops->name, "init", st, msg);
    }
    int rank = 0, size = 0;
    st = job_numbering(bs, &rank, &size);
    if (st != HIDET_NCCL_SUCCESS) {
        char saved[4096];
        snprintf(saved, sizeof saved, "%s", hidet_nccl_last_error());
        hidet_nccl_bootstrap_destroy(bs);
        hidet_nccl__restore_error(saved);
        return st;
    }
    if (bs->joining)
        HN_INFO("bootstrap '%s' ready (%s): rank %d of %d joins a job that goes on without it (a restarted rank); its "
                "first collective is a heal round",
                ops->name, where, rank, size);
    else
        HN_INFO("bootstrap '%s' ready (%s)", ops->name, where);
    *out = bs;
    return HIDET_NCCL_SUCCESS;
}

/* A v1 plug-in through the adapter, under the plug-in's name. */
static hidet_nccl_status_t create_v1(const hidet_nccl_bootstrap_v1_t *v1, const void *params, void *dl_handle,
                                     const char *where, hidet_nccl_bootstrap_h *out) {
    HN_CHECK(check_v1(v1, where));
    hidet_nccl_bootstrap_t adapted = hidet_nccl__bootstrap_v1_adapter;
    adapted.name = v1->name;
    const hn_v1_params_t wrapped = {v1, params};
    return create(&adapted, &wrapped, dl_handle, where, 0, out);
}

hidet_nccl_status_t hidet_nccl_bootstrap_create(const hidet_nccl_bootstrap_t *ops, const void *params,
                                                hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(ops);
    HN_CHECK_NOT_NULL(out);
    *out = NULL;
    hidet_nccl_bootstrap_t newest;
    HN_CHECK(as_newest(ops, given_version(ops), "given by the caller", &newest));
    return create(&newest, params, NULL, "given by the caller", 0, out);
}

hidet_nccl_status_t hidet_nccl_bootstrap_create_v2(const hidet_nccl_bootstrap_v2_t *ops, const void *params,
                                                   hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(ops);
    HN_CHECK_NOT_NULL(out);
    *out = NULL;
    hidet_nccl_bootstrap_t newest;
    HN_CHECK(as_newest(ops, HIDET_NCCL_BOOTSTRAP_API_VERSION_V2, "version 2, given by the caller", &newest));
    return create(&newest, params, NULL, "version 2, given by the caller", 0, out);
}

hidet_nccl_status_t hidet_nccl__bootstrap_create_timed(const hidet_nccl_bootstrap_t *ops, const void *params,
                                                       double timeout_s, hidet_nccl_bootstrap_h *out) {
    hidet_nccl_bootstrap_t newest;
    HN_CHECK(as_newest(ops, HIDET_NCCL_BOOTSTRAP_API_VERSION, "built in", &newest));
    return create(&newest, params, NULL, "built in", timeout_s, out);
}

hidet_nccl_status_t hidet_nccl_bootstrap_create_v1(const hidet_nccl_bootstrap_v1_t *ops, const void *params,
                                                   hidet_nccl_bootstrap_h *out) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(ops);
    HN_CHECK_NOT_NULL(out);
    *out = NULL;
    return create_v1(ops, params, NULL, "version 1, given by the caller", out);
}

/* Newest version first, as NCCL loads its net plug-ins. */
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
    hidet_nccl_status_t st;
    const void *v4 = dlsym(h, HIDET_NCCL_BOOTSTRAP_SYMBOL_V4);
    const void *v3 = v4 ? NULL : dlsym(h, HIDET_NCCL_BOOTSTRAP_SYMBOL_V3);
    const void *v2 = v4 || v3 ? NULL : dlsym(h, HIDET_NCCL_BOOTSTRAP_SYMBOL_V2);
    const hidet_nccl_bootstrap_v1_t *v1 = v4 || v3 || v2 ? NULL : dlsym(h, HIDET_NCCL_BOOTSTRAP_SYMBOL_V1);
    hidet_nccl_bootstrap_t ops;
    if (v4 != NULL || v3 != NULL || v2 != NULL) {
        if (v4 == NULL)
            HN_INFO("bootstrap plug-in %s has no %s; using its %s (it cannot %s)", path, HIDET_NCCL_BOOTSTRAP_SYMBOL_V4,
                    v3 ? HIDET_NCCL_BOOTSTRAP_SYMBOL_V3 : HIDET_NCCL_BOOTSTRAP_SYMBOL_V2,
                    v3 ? "heal" : "recover after a rank died, nor heal");
        int version = v4 ? HIDET_NCCL_BOOTSTRAP_API_VERSION
                      : v3 ? HIDET_NCCL_BOOTSTRAP_API_VERSION_V3
                           : HIDET_NCCL_BOOTSTRAP_API_VERSION_V2;
        st = as_newest(v4 ? v4 : v3 ? v3 : v2, version, path, &ops);
        if (st == HIDET_NCCL_SUCCESS) st = create(&ops, params, h, path, 0, out);
    } else if (v1 != NULL) {
        HN_INFO("bootstrap plug-in %s has no %s, %s nor %s; using its %s through the version 1 adapter", path,
                HIDET_NCCL_BOOTSTRAP_SYMBOL_V4, HIDET_NCCL_BOOTSTRAP_SYMBOL_V3, HIDET_NCCL_BOOTSTRAP_SYMBOL_V2,
                HIDET_NCCL_BOOTSTRAP_SYMBOL_V1);
        st = create_v1(v1, params, h, path, out);
    } else {
        st = HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "bootstrap plug-in %s exports none of %s, %s, %s and %s", path,
                     HIDET_NCCL_BOOTSTRAP_SYMBOL_V4, HIDET_NCCL_BOOTSTRAP_SYMBOL_V3, HIDET_NCCL_BOOTSTRAP_SYMBOL_V2,
                     HIDET_NCCL_BOOTSTRAP_SYMBOL_V1);
    }
    if (st != HIDET_NCCL_SUCCESS) dlclose(h);
    return st;
}

void hidet_nccl__bootstrap_keep(hidet_nccl_bootstrap_h bs) { atomic_fetch_add(&bs->refs, 1); }

hidet_nccl_status_t hidet_nccl_bootstrap_destroy(hidet_nccl_bootstrap_h bs) {
    HN_ENTER();
    if (bs == NULL) return HIDET_NCCL_SUCCESS;
    if (atomic_fetch_sub(&bs->refs, 1) > 1) return HIDET_NCCL_SUCCESS; /* a communicator still keeps it */
    char msg[BACKEND_MSG] = "";
    hidet_nccl_status_t st = bs->ops.finalize(bs->state, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) st = backend_fail(bs->ops.name, "finalize", st, msg);
    if (bs->dl_handle != NULL) dlclose(bs->dl_handle);
    free(bs->job_of);
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
    if (st != HIDET_NCCL_SUCCESS) return backend_fail(bs->ops.name, "rank_size", st, msg);
    if (*size < 1 || *rank < 0 || *rank >= *size)
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "bootstrap '%s' gave rank %d of size %d", bs->ops.name, *rank,
                       *size);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__bootstrap_local_rank(hidet_nccl_bootstrap_h bs, int *local_rank, int *local_size) {
    char msg[BACKEND_MSG] = "";
    hidet_nccl_status_t st = bs->ops.local_rank(bs->state, local_rank, local_size, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) return backend_fail(bs->ops.name, "local_rank", st, msg);
    if (*local_size >= 0 && (*local_size < 1 || *local_rank < 0 || *local_rank >= *local_size))
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "bootstrap '%s' gave local rank %d of local size %d", bs->ops.name,
                       *local_rank, *local_size);
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

/* A joining bootstrap takes no collective before its heal round. */
static hidet_nccl_status_t not_joining(hidet_nccl_bootstrap_h bs, const char *what) {
    if (!bs->joining) return HIDET_NCCL_SUCCESS;
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                   "bootstrap '%s' joins a job that goes on without it (this is a restarted rank %d of %d): its first "
                   "collective is the heal round (hidet_nccl_comm_init or hidet_nccl_bootstrap_heal), not a %s",
                   bs->ops.name, bs->job_rank, bs->job_size, what);
}

hidet_nccl_status_t hidet_nccl__bootstrap_broadcast(hidet_nccl_bootstrap_h bs, void *buf, size_t bytes, int root,
                                                    double timeout_s) {
    if (bs->left_out) return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "%s", bs->left_why);
    HN_CHECK(not_joining(bs, "broadcast"));
    char msg[BACKEND_MSG] = "";
    uint64_t tag = bs->next_tag++;
    hidet_nccl_status_t st = bs->ops.broadcast(bs->state, buf, bytes, root, tag, timeout_s, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) return backend_fail(bs->ops.name, "broadcast", st, msg);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__bootstrap_allgather(hidet_nccl_bootstrap_h bs, const void *send, void *recv,
                                                    size_t bytes, double timeout_s) {
    if (bs->left_out) return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "%s", bs->left_why);
    HN_CHECK(not_joining(bs, "allgather"));
    int rank, size; /* the contract's limit, for the library's own calls as for the caller's */
    HN_CHECK(hidet_nccl__bootstrap_rank(bs, &rank, &size));
    if (bytes > ALLGATHER_MAX / (size_t)size)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "bytes %zu from each of %d ranks is more than a bootstrap allgather carries (%d in all)", bytes,
                       size, ALLGATHER_MAX);
    char msg[BACKEND_MSG] = "";
    uint64_t tag = bs->next_tag++;
    hidet_nccl_status_t st = bs->ops.allgather(bs->state, send, recv, bytes, tag, timeout_s, msg, sizeof msg);
    if (st != HIDET_NCCL_SUCCESS) return backend_fail(bs->ops.name, "allgather", st, msg);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_bootstrap_allgather(hidet_nccl_bootstrap_h bs, const void *send, void *recv,
                                                   size_t bytes, double timeout_s) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    if (bytes > 0) {
        HN_CHECK_NOT_NULL(send);
        HN_CHECK_NOT_NULL(recv);
    }
    HN_CHECK(hidet_nccl__deadline_seconds(timeout_s, "timeout_s", &timeout_s));
    return hidet_nccl__bootstrap_allgather(bs, send, recv, bytes, timeout_s);
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
    HN_CHECK(hidet_nccl__deadline_seconds(timeout_s, "timeout_s", &timeout_s));
    return hidet_nccl__bootstrap_broadcast(bs, buf, bytes, root, timeout_s);
}

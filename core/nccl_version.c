/* NCCL version codes, as ncclGetVersion gives them. */
#include "core/error_int.h"
#include "core/nccl_version_int.h"

/* ncclGetVersion codes: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9. */
int hidet_nccl__version_major(int code) { return code >= 10000 ? code / 10000 : code / 1000; }
int hidet_nccl__version_minor(int code) { return code >= 10000 ? code / 100 % 100 : code / 100 % 10; }
int hidet_nccl__version_patch(int code) { return code % 100; }
int hidet_nccl__version_normalize(int code) {
    return code >= 10000 ? code : hidet_nccl__version_major(code) * 10000 + hidet_nccl__version_minor(code) * 100 +
                                      hidet_nccl__version_patch(code);
}

hidet_nccl_status_t hidet_nccl__needs(const hn_nccl_t *n, const void *fn, int min_version, const char *what,
                                      const char *call) {
    if (fn != NULL && n->version >= min_version) return HIDET_NCCL_SUCCESS;
    return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED, "%s needs NCCL %d.%d.%d or newer (%s); the loaded NCCL is %d.%d.%d (%s)",
                   what, hidet_nccl__version_major(min_version), hidet_nccl__version_minor(min_version),
                   hidet_nccl__version_patch(min_version), call, hidet_nccl__version_major(n->version),
                   hidet_nccl__version_minor(n->version), hidet_nccl__version_patch(n->version), n->path);
}

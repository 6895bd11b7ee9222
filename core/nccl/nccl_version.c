/* NCCL version codes, as ncclGetVersion gives them. */
#include "core/nccl/nccl_version_int.h"

/* ncclGetVersion codes: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9. */
int hidet_nccl__version_major(int code) { return code >= 10000 ? code / 10000 : code / 1000; }
int hidet_nccl__version_minor(int code) { return code >= 10000 ? code / 100 % 100 : code / 100 % 10; }
int hidet_nccl__version_patch(int code) { return code % 100; }
int hidet_nccl__version_normalize(int code) {
    return code >= 10000 ? code : hidet_nccl__version_major(code) * 10000 + hidet_nccl__version_minor(code) * 100 +
                                      hidet_nccl__version_patch(code);
}

/* Loading the recording stand-in for NCCL as the library's NCCL (tools/support/fake_nccl.h). */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tools/support/fake_nccl.h"

void *fake_nccl_load(const char *arg, int *version, fake_nccl_log_fn *log, fake_nccl_clear_fn *clear) {
    char path[PATH_MAX];
    if (realpath(arg, path) == NULL) {
        fprintf(stderr, "%s: no such file\n", arg);
        return NULL;
    }
    setenv("HIDET_NCCL_LIBRARY", path, 1);
    if (hidet_nccl_load() != HIDET_NCCL_SUCCESS || hidet_nccl_nccl_version(version) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "cannot load the fake NCCL: %s\n", hidet_nccl_last_error());
        return NULL;
    }
    void *fake = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    *log = fake ? (fake_nccl_log_fn)dlsym(fake, "fake_nccl_log") : NULL;
    *clear = fake ? (fake_nccl_clear_fn)dlsym(fake, "fake_nccl_clear") : NULL;
    if (*log == NULL || *clear == NULL) {
        fprintf(stderr, "%s is not the stand-in for NCCL (no fake_nccl_log)\n", path);
        return NULL;
    }
    return fake;
}

/* The functions of the NCCL the library loaded, for the raw comparisons of the benchmark and the GPU tests. */
#include "tools/support/raw_nccl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "hidet_nccl/hidet_nccl.h"

/* The loaded copy: by its soname (how the loader registered it), else by the file the library
 * names (its label after the path dropped), else the program itself (a static NCCL). */
static void *loaded_handle(void) {
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL) return h;
    const char *path = NULL;
    if (hidet_nccl_library_path(&path) == HIDET_NCCL_SUCCESS) {
        char file[4096];
        snprintf(file, sizeof file, "%s", path);
        char *label = strstr(file, " (");
        if (label != NULL) *label = '\0';
        h = dlopen(file, RTLD_NOW | RTLD_NOLOAD);
        if (h != NULL) return h;
    }
    return RTLD_DEFAULT;
}

int hn_raw_nccl(hn_raw_nccl_t *out, char *why, size_t why_bytes) {
    if (hidet_nccl_load() != HIDET_NCCL_SUCCESS) {
        snprintf(why, why_bytes, "%s", hidet_nccl_last_error());
        return -1;
    }
    void *h = loaded_handle();
    static const char *const names[] = {"ncclGetVersion",        "ncclGetUniqueId", "ncclCommInitRank",
                                        "ncclCommDestroy",       "ncclCommGetAsyncError", "ncclAllReduce",
                                        "ncclGetErrorString", "ncclAllGather", "ncclReduceScatter"};
    void **slots[] = {(void **)&out->GetVersion,        (void **)&out->GetUniqueId, (void **)&out->CommInitRank,
                      (void **)&out->CommDestroy,       (void **)&out->CommGetAsyncError, (void **)&out->AllReduce,
                      (void **)&out->GetErrorString, (void **)&out->AllGather, (void **)&out->ReduceScatter};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *slots[i] = dlsym(h, names[i]);
        if (*slots[i] == NULL) {
            snprintf(why, why_bytes, "the loaded NCCL has no %s", names[i]);
            return -1;
        }
    }
    *(void **)&out->CommInitRankConfig = dlsym(h, "ncclCommInitRankConfig");
    int mine = 0, theirs = 0;
    hidet_nccl_nccl_version(&theirs);
    out->GetVersion(&mine);
    if (mine != theirs && !(mine < 10000 && theirs >= 10000)) {
        snprintf(why, why_bytes, "found NCCL %d, but the library loaded %d", mine, theirs);
        return -1;
    }
    return 0;
}

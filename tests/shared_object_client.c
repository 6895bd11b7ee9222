/* Calls the library through a shared object made from libhidet_nccl.a (tests/archive_test.sh):
 * dlopen, then the public API by name, as a ctypes or plug-in host would.
 *   shared_object_client path/to/libhn.so                    exit 0 if every check holds */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "hidet_nccl/hidet_nccl.h"

#define CHECK(cond)                                                    \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "shared_object_client: failed: %s\n", #cond); \
            return 1;                                                  \
        }                                                              \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    const char *(*status_string)(hidet_nccl_status_t) = (const char *(*)(hidet_nccl_status_t))dlsym(h, "hidet_nccl_status_string");
    hidet_nccl_status_t (*from_name)(const char *, hidet_nccl_dtype_t *) =
        (hidet_nccl_status_t(*)(const char *, hidet_nccl_dtype_t *))dlsym(h, "hidet_nccl_dtype_from_name");
    hidet_nccl_status_t (*get_comm)(int, ncclComm_t *) = (hidet_nccl_status_t(*)(int, ncclComm_t *))dlsym(h, "hidet_nccl_get_comm");
    const char *(*last_error)(void) = (const char *(*)(void))dlsym(h, "hidet_nccl_last_error");
    hidet_nccl_status_t (*load)(void) = (hidet_nccl_status_t(*)(void))dlsym(h, "hidet_nccl_load");
    hidet_nccl_status_t (*version)(int *) = (hidet_nccl_status_t(*)(int *))dlsym(h, "hidet_nccl_nccl_version");
    CHECK(status_string && from_name && get_comm && last_error && load && version);
    CHECK(strcmp(status_string(HIDET_NCCL_ERROR_TIMEOUT), "timeout") == 0);
    hidet_nccl_dtype_t d;
    CHECK(from_name("bf16", &d) == HIDET_NCCL_SUCCESS && d == HIDET_NCCL_BFLOAT16);
    ncclComm_t c;
    CHECK(get_comm(5, &c) == HIDET_NCCL_ERROR_INVALID_COMM);
    CHECK(strstr(last_error(), "hidet_nccl_get_comm") != NULL);
    CHECK(load() == HIDET_NCCL_SUCCESS); /* NCCL found from inside the shared object */
    int v = 0;
    CHECK(version(&v) == HIDET_NCCL_SUCCESS && v >= 20700);
    printf("through %s: NCCL %d, last error \"%s\"\n", argv[1], v, last_error());
    return 0;
}

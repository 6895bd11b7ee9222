/* What the benchmarks and probes do with a failed call: end the program with the call and its
 * message. Define TOOL_NAME ("hidet-nccl-bench") before including this. */
#ifndef HIDET_NCCL_TOOLS_SUPPORT_TOOL_CHECKS_H_
#define HIDET_NCCL_TOOLS_SUPPORT_TOOL_CHECKS_H_

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "hidet_nccl/hidet_nccl.h"

#ifndef TOOL_NAME
#error "define TOOL_NAME before including tools/support/tool_checks.h"
#endif

#define DIE(...)                                     \
    do {                                             \
        fprintf(stderr, TOOL_NAME ": " __VA_ARGS__); \
        fprintf(stderr, "\n");                       \
        exit(1);                                     \
    } while (0)
#define HN(call)                                                                         \
    do {                                                                                 \
        if ((call) != HIDET_NCCL_SUCCESS) DIE("%s: %s", #call, hidet_nccl_last_error()); \
    } while (0)
#define CU(call)                                                             \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) DIE("%s: %s", #call, cudaGetErrorString(e_)); \
    } while (0)

#endif

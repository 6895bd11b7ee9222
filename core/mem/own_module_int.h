/* Internal: the own kernels' module (core/mem/own_module.c): the archive's fatbin loaded on a
 * device, and its kernels hn_own<1|2>_<type>_<op> by NCCL type and op. */
#ifndef HIDET_NCCL_CORE_MEM_OWN_MODULE_INT_H_
#define HIDET_NCCL_CORE_MEM_OWN_MODULE_INT_H_

#include <stddef.h>

#include <cuda.h>
#include <nccl.h>

#define HN_OWN_NUM_OPS 5 /* ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg */

/* The kernels' index of an NCCL type (-1: none), and whether it reduces by max and min only
 * (float8: the winner is an input, exact; a sum would round). */
int hidet_nccl__own_type(ncclDataType_t type, int *order_only);
/* "sum", "prod", "max", "min", "avg" for ncclSum .. ncclAvg; "?" else. */
const char *hidet_nccl__own_op_name(int op);

/* Loads the module on device (current) and looks up every kernel, once per device: 0, or -1
 * with why (the fatbin has no code for the GPU, the driver is too old, ...). */
int hidet_nccl__own_load(int device, char *why, size_t why_len);
/* A kernel of a loaded device (algo 0 one-shot, 1 two-shot; t from own_type; op ncclSum..). */
CUfunction hidet_nccl__own_kernel(int device, int algo, int t, int op);
/* "hn_own1_f32_sum" into name. */
void hidet_nccl__own_kernel_name(int algo, int t, int op, char *name, size_t len);

#endif

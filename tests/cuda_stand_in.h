/* A stand-in for the CUDA runtime that counts (tests/cuda_stand_in.c): a CPU test links it in
 * place of libcudart_static, so every CUDA runtime call the library makes is seen. It defines
 * each cuda* function the archive calls; one the archive starts calling and this lacks fails
 * the test's link, so nothing goes uncounted. */
#ifndef HIDET_NCCL_TESTS_CUDA_STAND_IN_H_
#define HIDET_NCCL_TESTS_CUDA_STAND_IN_H_

/* Calls since the last reset, and the names of the first few ("cudaEventRecord, ..."). */
int hn_cuda_calls(void);
const char *hn_cuda_names(void);
void hn_cuda_reset(void);
/* Calls of one function since the last reset. */
int hn_cuda_calls_of(const char *name);

#endif

/* Checks for multi-process tests (MPI, PMIx, launchers): every rank counts its failures; the
 * job fails if any rank failed. */
#ifndef HIDET_NCCL_TESTS_MPI_MPI_CHECK_H_
#define HIDET_NCCL_TESTS_MPI_MPI_CHECK_H_

#include <stdio.h>

static int g_checks, g_failures, g_rank = -1;

#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        g_checks++;                                                                                  \
        if (!(cond)) {                                                                               \
            g_failures++;                                                                            \
            fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed; last error: %s\n", g_rank, __FILE__, __LINE__, #cond, \
                    hidet_nccl_last_error());                                                        \
        }                                                                                            \
    } while (0)

#endif

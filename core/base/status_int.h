/* Internal: the thread-local error message beyond what the kit has (HN_FAIL, HN_CHECK:
 * core/base/kit.h). */
#ifndef HIDET_NCCL_CORE_BASE_STATUS_INT_H_
#define HIDET_NCCL_CORE_BASE_STATUS_INT_H_

#include "core/base/kit.h"

/* The collectives' host path: marked hot, these functions sit together in the archive's
 * .text.hot (the linker groups them), so a call between two of NCCL's touches a page or two of
 * the library's code instead of one for each file it passes through; what only a failure runs
 * is marked cold and kept out of the way. (On one H200 host a back-to-back NCCL call leaves
 * little of the library in the caches and TLBs: each page a call touches shows in its time.) */
#define HN_HOT __attribute__((hot))
#define HN_COLD __attribute__((cold))
/* A hot-path helper that more than one caller in a file shares: inlined all the same (gcc
 * otherwise keeps one out-of-line copy, and the caller's call record has to live in memory). */
#define HN_INLINE static inline __attribute__((always_inline))

/* Appends "; <formatted>" to the calling thread's message (context from a caller). */
void hidet_nccl__append_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The calling thread's message without its "hidet_nccl: <function>: " prefix. */
const char *hidet_nccl__error_detail(void);

/* Puts back a message saved from hidet_nccl_last_error(), after calls that may have
 * replaced it (a release after the failure that is the story). */
void hidet_nccl__restore_error(const char *saved);

#endif

/* Internal: the thread-local error message and the macros that set it. */
#ifndef HIDET_NCCL_CORE_BASE_STATUS_INT_H_
#define HIDET_NCCL_CORE_BASE_STATUS_INT_H_

#include "core/base/kit.h"

/* Sets the calling thread's message to "hidet_nccl: <public function>: <formatted>" and
 * returns status. func names the function when no public call is under way (HN_ENTER). */
hidet_nccl_status_t hidet_nccl__fail(hidet_nccl_status_t status, const char *func,
                                     const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends "; <formatted>" to the calling thread's message (context from a caller). */
void hidet_nccl__append_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The calling thread's message without its "hidet_nccl: <function>: " prefix. */
const char *hidet_nccl__error_detail(void);

/* Puts back a message saved from hidet_nccl_last_error(), after calls that may have
 * replaced it (a release after the failure that is the story). */
void hidet_nccl__restore_error(const char *saved);

#define HN_FAIL(status, ...) hidet_nccl__fail((status), __func__, __VA_ARGS__)

/* Returns from the enclosing function if expr fails; the callee has set the message. */
#define HN_CHECK(expr)                                  \
    do {                                                \
        hidet_nccl_status_t hn_st_ = (expr);            \
        if (hn_st_ != HIDET_NCCL_SUCCESS) return hn_st_; \
    } while (0)

#define HN_CHECK_NOT_NULL(ptr) \
    do {                       \
        if ((ptr) == NULL)     \
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "argument '%s' is NULL", #ptr); \
    } while (0)

#endif

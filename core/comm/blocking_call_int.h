/* Internal: a blocking NCCL call run on a helper thread and awaited against a deadline.
 *
 * Blocking communicators are NCCL's fast ones: on a non-blocking one NCCL hands every
 * collective to a new thread (about 50 us at 8 bytes on 2 H200s, against 6.5 us). But a
 * blocking init or split cannot be interrupted, and waits forever for a rank that never
 * comes. So the call runs on a helper thread while the caller waits with a deadline; at the
 * deadline the caller returns HIDET_NCCL_ERROR_TIMEOUT and the helper is left to finish on
 * its own (if NCCL ever returns, `late` releases what it made). One helper is kept for 30 s
 * after its call and takes the next one (NCCL's init runs faster on a thread that has made one
 * before); a fork's child starts its own. */
#ifndef HIDET_NCCL_CORE_COMM_BLOCKING_CALL_INT_H_
#define HIDET_NCCL_CORE_COMM_BLOCKING_CALL_INT_H_

#include <stddef.h>

#include "core/nccl/nccl_loader_int.h"

typedef struct {
    /* The blocking call, on the helper thread with the caller's device current. */
    ncclResult_t (*run)(void *arg);
    /* On the helper thread, when the call returned after the caller gave up (may be NULL). */
    void (*late)(void *arg, ncclResult_t result);
} hn_blocking_call_t;

/* Runs call->run on a copy of arg (arg_size bytes) on a helper thread with `device` current
 * (-1: the helper's device is left alone), the copy copied back when the call returns in
 * time; *result is then its ncclResult_t. HIDET_NCCL_ERROR_TIMEOUT, with a message naming
 * `what`, when it has not returned within timeout_s. */
hidet_nccl_status_t hidet_nccl__blocking_call(const hn_blocking_call_t *call, void *arg, size_t arg_size, int device,
                                              double timeout_s, const char *what, ncclResult_t *result);

/* Helpers left behind by a deadline that are still inside NCCL. */
int hidet_nccl__blocking_calls_abandoned(void);
/* Helper threads alive (for tests: one left by an abandoned call settles as the kept one, or ends). */
int hidet_nccl__blocking_helpers_alive(void);
/* 1 while a kept helper waits for the next call. */
int hidet_nccl__blocking_helper_kept(void);

#endif

/* Status names and the thread-local error message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/base/status_int.h"

#define MESSAGE_BYTES 4096

static _Thread_local char g_message[MESSAGE_BYTES]; /* the message, when the thread's block says fresh */
/* What every public call touches lies in the thread's block (core/base/thread_int.h): entering
 * a call writes no message, only that the message is not fresh (kit.h's HN_ENTER). */

/* The message as the caller sees it: "" unless a failure wrote it since the last public call. */
static char *message(void) {
    if (!hidet_nccl__thread.fresh) {
        g_message[0] = '\0';
        hidet_nccl__thread.fresh = 1;
    }
    return g_message;
}

static const char *const k_status_names[HIDET_NCCL_NUM_STATUS] = {
    [HIDET_NCCL_SUCCESS] = "success",
    [HIDET_NCCL_ERROR_INVALID_ARGUMENT] = "invalid argument",
    [HIDET_NCCL_ERROR_INVALID_COMM] = "invalid communicator id",
    [HIDET_NCCL_ERROR_UNSUPPORTED] = "unsupported",
    [HIDET_NCCL_ERROR_NCCL_NOT_FOUND] = "NCCL not found",
    [HIDET_NCCL_ERROR_NCCL] = "NCCL error",
    [HIDET_NCCL_ERROR_CUDA] = "CUDA error",
    [HIDET_NCCL_ERROR_TIMEOUT] = "timeout",
    [HIDET_NCCL_ERROR_BOOTSTRAP] = "bootstrap error",
    [HIDET_NCCL_ERROR_SYSTEM] = "system error",
    [HIDET_NCCL_ERROR_INVALID_USAGE] = "invalid usage",
};

const char *hidet_nccl_status_string(hidet_nccl_status_t status) {
    if ((int)status < 0 || status >= HIDET_NCCL_NUM_STATUS) return "unknown status";
    return k_status_names[status];
}

const char *hidet_nccl_last_error(void) { return hidet_nccl__thread.fresh ? g_message : ""; }

hidet_nccl_status_t hidet_nccl__say(char *msg, size_t msg_bytes, hidet_nccl_status_t st, const char *fmt, ...) {
    if (msg == NULL || msg_bytes == 0) return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_bytes, fmt, ap);
    va_end(ap);
    return st;
}

const char *hidet_nccl__error_detail(void) {
    const char *m = message();
    return hidet_nccl__thread.prefix_len < strlen(m) ? m + hidet_nccl__thread.prefix_len : m;
}

void hidet_nccl__restore_error(const char *saved) {
    if (saved != g_message) snprintf(g_message, sizeof g_message, "%s", saved);
    hidet_nccl__thread.fresh = 1;
}

hidet_nccl_status_t hidet_nccl__fail(hidet_nccl_status_t status, const char *func,
                                     const char *fmt, ...) {
    char detail[MESSAGE_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    int n = snprintf(g_message, sizeof g_message, "hidet_nccl: %s: ",
                     hidet_nccl__thread.public_func ? hidet_nccl__thread.public_func : func);
    hidet_nccl__thread.prefix_len = n > 0 && (size_t)n < sizeof g_message ? (size_t)n : 0;
    hidet_nccl__thread.fresh = 1;
    snprintf(g_message + hidet_nccl__thread.prefix_len, sizeof g_message - hidet_nccl__thread.prefix_len, "%s", detail);
    return status;
}

void hidet_nccl__append_error(const char *fmt, ...) {
    size_t used = strlen(message());
    if (used + 3 >= sizeof g_message) return;
    memcpy(g_message + used, "; ", 3);
    used += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_message + used, sizeof g_message - used, fmt, ap);
    va_end(ap);
}

/* Status names and the thread-local error message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/base/status_int.h"

#define MESSAGE_BYTES 4096

static _Thread_local char g_message[MESSAGE_BYTES]; /* the message, when g_call.fresh */
/* What every public call touches, together (one cache line): entering a call no longer writes
 * the message itself, only that it is not fresh. */
static _Thread_local struct {
    const char *public_func;
    size_t prefix_len; /* of "hidet_nccl: <function>: " in g_message */
    int depth;         /* public calls under way in this thread */
    int fresh;         /* g_message is this thread's last failure (else the message is "") */
} g_call;

/* The message as the caller sees it: "" unless a failure wrote it since the last public call. */
static char *message(void) {
    if (!g_call.fresh) {
        g_message[0] = '\0';
        g_call.fresh = 1;
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

const char *hidet_nccl_last_error(void) { return g_call.fresh ? g_message : ""; }

HN_HOT int hidet_nccl__enter(const char *public_func) {
    if (g_call.depth++ == 0) {
        g_call.fresh = 0;
        g_call.prefix_len = 0;
        g_call.public_func = public_func;
    }
    return 1;
}

HN_HOT void hidet_nccl__leave(int *entered) {
    (void)entered;
    if (g_call.depth > 0 && --g_call.depth == 0) g_call.public_func = NULL; /* later internal failures name their own */
}

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
    return g_call.prefix_len < strlen(m) ? m + g_call.prefix_len : m;
}

void hidet_nccl__restore_error(const char *saved) {
    if (saved != g_message) snprintf(g_message, sizeof g_message, "%s", saved);
    g_call.fresh = 1;
}

hidet_nccl_status_t hidet_nccl__fail(hidet_nccl_status_t status, const char *func,
                                     const char *fmt, ...) {
    char detail[MESSAGE_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    int n = snprintf(g_message, sizeof g_message, "hidet_nccl: %s: ", g_call.public_func ? g_call.public_func : func);
    g_call.prefix_len = n > 0 && (size_t)n < sizeof g_message ? (size_t)n : 0;
    g_call.fresh = 1;
    snprintf(g_message + g_call.prefix_len, sizeof g_message - g_call.prefix_len, "%s", detail);
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

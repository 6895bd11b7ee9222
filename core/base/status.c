/* Status names and the thread-local error message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/base/status_int.h"

#define MESSAGE_BYTES 4096

static _Thread_local char g_message[MESSAGE_BYTES];
static _Thread_local const char *g_public_func;
static _Thread_local int g_depth;          /* public calls under way in this thread */
static _Thread_local size_t g_prefix_len;  /* of "hidet_nccl: <function>: " in g_message */

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

const char *hidet_nccl_last_error(void) { return g_message; }

int hidet_nccl__enter(const char *public_func) {
    if (g_depth++ == 0) {
        g_message[0] = '\0';
        g_prefix_len = 0;
        g_public_func = public_func;
    }
    return 1;
}

void hidet_nccl__leave(int *entered) {
    (void)entered;
    if (g_depth > 0 && --g_depth == 0) g_public_func = NULL; /* later internal failures name their own */
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
    return g_prefix_len < strlen(g_message) ? g_message + g_prefix_len : g_message;
}

void hidet_nccl__restore_error(const char *saved) {
    if (saved != g_message) snprintf(g_message, sizeof g_message, "%s", saved);
}

hidet_nccl_status_t hidet_nccl__fail(hidet_nccl_status_t status, const char *func,
                                     const char *fmt, ...) {
    char detail[MESSAGE_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    int n = snprintf(g_message, sizeof g_message, "hidet_nccl: %s: ", g_public_func ? g_public_func : func);
    g_prefix_len = n > 0 && (size_t)n < sizeof g_message ? (size_t)n : 0;
    snprintf(g_message + g_prefix_len, sizeof g_message - g_prefix_len, "%s", detail);
    return status;
}

void hidet_nccl__append_error(const char *fmt, ...) {
    size_t used = strlen(g_message);
    if (used + 3 >= sizeof g_message) return;
    memcpy(g_message + used, "; ", 3);
    used += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_message + used, sizeof g_message - used, fmt, ap);
    va_end(ap);
}

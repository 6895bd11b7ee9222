/* Parsing what callers and the environment hand the library (core/base/kit.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/kit.h"
#include "core/base/number.h"

int hidet_nccl__parse_nonneg_int(const char *s, int *out) { return hn_parse_int(s, 0, 1 << 30, out) == HN_NUMBER_OK; }

int hidet_nccl__key_ok(const char *key, size_t max_len) {
    size_t n = strlen(key);
    return n > 0 && n <= max_len &&
           strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

hidet_nccl_status_t hidet_nccl__rank_field(int given, int hint, const char *field, int required,
                                           const hidet_nccl_bootstrap_init_args_t *args, int *out, char *msg,
                                           size_t msg_bytes) {
    if (given < -1)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "the %s %d (params) is out of range: a rank, size or count from 0, or -1 for the "
                               "environment's", field, given);
    *out = given >= 0 ? given : hint;
    if (*out < 0 && required)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "the %s is not given (params) and the environment gives none: %s", field,
                               args->hint_source);
    return HIDET_NCCL_SUCCESS;
}

int hidet_nccl__copy_sized(void *dst, size_t dst_bytes, const void *src, const char *what, char *why,
                           size_t why_bytes) {
    size_t given;
    memcpy(&given, src, sizeof given);
    if (given < sizeof(size_t)) {
        snprintf(why, why_bytes, "%s->size is %zu, too small to be a %s (initialize it with its _INIT macro)", what,
                 given, what);
        return -1;
    }
    if (given > dst_bytes) {
        const unsigned char *extra = (const unsigned char *)src + dst_bytes;
        for (size_t i = 0; i < given - dst_bytes; i++)
            if (extra[i] != 0) {
                snprintf(why, why_bytes,
                         "%s->size is %zu, larger than the %zu bytes this library knows, and byte %zu is set: the "
                         "program was built against a newer hidet-nccl that has fields this one cannot honour",
                         what, given, dst_bytes, dst_bytes + i);
                return -1;
            }
        given = dst_bytes;
    }
    memcpy((unsigned char *)dst + sizeof(size_t), (const unsigned char *)src + sizeof(size_t), given - sizeof(size_t));
    return 0;
}

/*
 * The one grammar for numbers the library and its tools read from outside (the environment,
 * command lines, files): decimal digits only (no sign, space, exponent, hex or octal prefix,
 * trailing text), optionally a fraction (digits '.' digits) where a count of seconds is meant,
 * then a range check. strtol/strtod/atoi accept " 5", "3e4", "0x64", "1X" and the caller used
 * to check with one and use the other; these functions say yes or no once, and what they give
 * is what is used.
 *
 * Header-only and free of the library's symbols, so the tools (hidet-nccl-run, hidet-nccl-bench)
 * parse their command lines by the same rules without linking the library.
 */
#ifndef HIDET_NCCL_CORE_BASE_NUMBER_H_
#define HIDET_NCCL_CORE_BASE_NUMBER_H_

#include <stdint.h>

typedef enum {
    HN_NUMBER_OK = 0,
    HN_NUMBER_SYNTAX = -1, /* empty, or not decimal digits (with one '.' and digits after it, for decimals) */
    HN_NUMBER_RANGE = -2,  /* well formed, outside [min, max] (or too large for 64 bits) */
} hn_number_t;

/* A whole number in [min, max]. */
static inline hn_number_t hn_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    if (s == 0 || *s == '\0') return HN_NUMBER_SYNTAX;
    uint64_t v = 0;
    int big = 0;
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') return HN_NUMBER_SYNTAX;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) big = 1;
        else v = v * 10 + d;
    }
    if (big || v < min || v > max) return HN_NUMBER_RANGE;
    *out = v;
    return HN_NUMBER_OK;
}

/* An int in [min, max] (min >= 0: the grammar has no sign). */
static inline hn_number_t hn_parse_int(const char *s, int min, int max, int *out) {
    uint64_t v;
    hn_number_t r = hn_parse_uint(s, min < 0 ? 0 : (uint64_t)min, max < 0 ? 0 : (uint64_t)max, &v);
    if (r == HN_NUMBER_OK) *out = (int)v;
    return r;
}

/* A decimal number ("300", "0.5", "2.25"; not ".5", "5.", "1e3") in [min, max], or in
 * (min, max] when min_exclusive. Read digit by digit, whatever the program's locale. */
static inline hn_number_t hn_parse_decimal(const char *s, double min, int min_exclusive, double max, double *out) {
    if (s == 0 || *s < '0' || *s > '9') return HN_NUMBER_SYNTAX;
    double v = 0, scale = 1;
    int fraction = 0, digits_after = 0;
    for (const char *p = s; *p != '\0'; p++) {
        if (*p == '.' && !fraction) {
            fraction = 1;
            continue;
        }
        if (*p < '0' || *p > '9') return HN_NUMBER_SYNTAX;
        if (fraction) {
            scale /= 10;
            v += (*p - '0') * scale;
            digits_after++;
        } else {
            v = v * 10 + (*p - '0');
        }
        if (v > 1e300) return HN_NUMBER_RANGE;
    }
    if (fraction && digits_after == 0) return HN_NUMBER_SYNTAX;
    if ((min_exclusive ? !(v > min) : !(v >= min)) || v > max) return HN_NUMBER_RANGE;
    *out = v;
    return HN_NUMBER_OK;
}

#endif

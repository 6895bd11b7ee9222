/* libFuzzer target: the one number grammar (core/base/number.h) against arbitrary bytes, with
 * what a reference reading says: a number is taken only when it is all decimal digits (one '.'
 * between digits for decimals), and then it is exactly the value strtoull / strtod read and in
 * its range; anything else is refused, syntax before range.
 *   bazel build --config=fuzz //tests/fuzz:number_fuzzer
 *   bazel-bin/tests/fuzz/number_fuzzer -max_total_time=300 .fuzz/number_corpus tests/fuzz/number_corpus */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/number.h"

static int all_digits(const char *s) { return *s != '\0' && strspn(s, "0123456789") == strlen(s); }

static int decimal_form(const char *s) {
    size_t whole = strspn(s, "0123456789");
    if (whole == 0) return 0;
    if (s[whole] == '\0') return 1;
    if (s[whole] != '.') return 0;
    size_t frac = strspn(s + whole + 1, "0123456789");
    return frac > 0 && s[whole + 1 + frac] == '\0';
}

static void check_uint(const char *s, uint64_t min, uint64_t max) {
    uint64_t v = 12345;
    hn_number_t r = hn_parse_uint(s, min, max, &v);
    if (!all_digits(s)) {
        if (r != HN_NUMBER_SYNTAX) abort();
        return;
    }
    errno = 0;
    unsigned long long ref = strtoull(s, NULL, 10);
    int in = errno != ERANGE && ref >= min && ref <= max;
    if (in ? (r != HN_NUMBER_OK || v != ref) : r == HN_NUMBER_SYNTAX) abort();
    if (r == HN_NUMBER_OK && (v < min || v > max)) abort();
}

static void check_decimal(const char *s, double min, int exclusive, double max) {
    double v = -1;
    hn_number_t r = hn_parse_decimal(s, min, exclusive, max, &v);
    if (!decimal_form(s)) {
        if (r != HN_NUMBER_SYNTAX) abort();
        return;
    }
    if (r == HN_NUMBER_SYNTAX) abort();
    if (r == HN_NUMBER_OK) {
        double ref = strtod(s, NULL);
        if (!(exclusive ? v > min : v >= min) || v > max) abort();
        if (fabs(v - ref) > 1e-9 * (ref > 1 ? ref : 1)) abort(); /* digit by digit: rounding only */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char s[64];
    if (size >= sizeof s) size = sizeof s - 1;
    memcpy(s, data, size);
    s[size] = '\0';
    check_uint(s, 0, UINT64_MAX);
    check_uint(s, 1, 65535);
    check_uint(s, 0, 1u << 30);
    check_decimal(s, 0, 1, 1e7);
    check_decimal(s, 0, 0, 1);
    int i = -7;
    hn_number_t r = hn_parse_int(s, 1, 65535, &i);
    if (r == HN_NUMBER_OK && (i < 1 || i > 65535)) abort();
    if (r != HN_NUMBER_OK && i != -7) abort(); /* nothing written on a refusal */
    return 0;
}

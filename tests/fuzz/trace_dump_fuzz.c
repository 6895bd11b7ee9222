/* libFuzzer target: hostile flight recorder dumps through hidet-nccl-trace's reader and
 * report. The input is split at its first 0xff byte (if any) into two dumps, so the report
 * compares ranks too; the raw input also goes through the printer's escaping (file names reach
 * it unchecked: any bytes, not only the UTF-8 jansson lets through). Nothing may crash, leak or
 * loop; what is read must be reported. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools/trace_read.h"

static void read_part(tr_set_t *set, const uint8_t *data, size_t size, const char *name) {
    FILE *f = fmemopen((void *)data, size, "r");
    if (f == NULL) return;
    char err[512];
    tr_read_file(set, f, name, err, sizeof err);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    tr_set_t set = {0};
    const uint8_t *cut = memchr(data, 0xff, size);
    size_t first = cut ? (size_t)(cut - data) : size;
    if (first > 0) read_part(&set, data, first, "rank0");
    if (cut && size - first - 1 > 0) read_part(&set, cut + 1, size - first - 1, "rank1");
    FILE *out = fopen("/dev/null", "w");
    if (out != NULL) {
        tr_report(&set, out);
        tr_say(out, "%.*s", (int)(size < 65536 ? size : 65536), (const char *)data);
        fclose(out);
    }
    tr_free(&set);
    return 0;
}

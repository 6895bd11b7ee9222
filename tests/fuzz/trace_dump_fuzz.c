/* libFuzzer target: hostile flight recorder dumps through hidet-nccl-trace's reader and
 * report. The input is split at its first 0xff byte (if any) into two dumps, so the report
 * compares ranks too; the raw input also goes through the printer's escaping (file names reach
 * it unchecked: any bytes, not only the UTF-8 jansson lets through). Nothing may crash, leak or
 * loop; what is read must be reported: as text and as JSON, everything and chosen (rank 0, the
 * first communicator's key), as hidet-nccl-trace --ranks 0 --comm KEY would. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools/trace/trace_read.h"

static void read_part(tr_set_t *set, const uint8_t *data, size_t size, const char *name) {
    FILE *f = fmemopen((void *)data, size, "r");
    if (f == NULL) return;
    char err[512];
    tr_read_file(set, f, name, err, sizeof err);
    fclose(f);
}

/* The input's first line (at most 255 bytes) as a --ranks list: refused with a reason, or
 * ranges sorted and apart. */
static void parse_list(const uint8_t *data, size_t size) {
    char list[256], err[160] = "";
    size_t n = size < sizeof list - 1 ? size : sizeof list - 1;
    memcpy(list, data, n);
    list[n] = '\0';
    list[strcspn(list, "\n")] = '\0';
    tr_ranks_t r = {0};
    if (tr_parse_ranks(list, &r, err, sizeof err) != 0) {
        if (err[0] == '\0' || r.r != NULL) __builtin_trap();
        return;
    }
    for (size_t i = 0; i < r.n; i++)
        if (r.r[i].lo > r.r[i].hi || (i > 0 && r.r[i].lo <= r.r[i - 1].hi + 1) || !tr_ranks_has(&r, r.r[i].lo) ||
            !tr_ranks_has(&r, r.r[i].hi) || (r.r[i].lo > 0 && tr_ranks_has(&r, r.r[i].lo - 1)))
            __builtin_trap();
    tr_ranks_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    parse_list(data, size);
    tr_set_t set = {0};
    const uint8_t *cut = memchr(data, 0xff, size);
    size_t first = cut ? (size_t)(cut - data) : size;
    if (first > 0) read_part(&set, data, first, "rank0");
    if (cut && size - first - 1 > 0) read_part(&set, cut + 1, size - first - 1, "rank1");
    FILE *out = fopen("/dev/null", "w");
    if (out != NULL) {
        tr_report(&set, out);
        tr_analysis_t *a = tr_analyze(&set, NULL, NULL);
        if (a != NULL) tr_print_json(a, 0, out);
        tr_analysis_free(a);
        char key[9] = "";
        if (set.ndumps > 0 && set.dumps[0].ncomms > 0) memcpy(key, set.dumps[0].comms[0].key, sizeof key);
        tr_ranks_t zero = {0};
        char err[160];
        if (tr_parse_ranks("0", &zero, err, sizeof err) == 0) {
            tr_keep_ranks(&set, &zero, out);
            a = tr_analyze(&set, &zero, key[0] ? key : NULL);
            if (a != NULL) {
                tr_print_text(a, out);
                tr_print_json(a, 1, out);
            }
            tr_analysis_free(a);
            tr_ranks_free(&zero);
        }
        tr_say(out, "%.*s", (int)(size < 65536 ? size : 65536), (const char *)data);
        fclose(out);
    }
    tr_free(&set);
    return 0;
}

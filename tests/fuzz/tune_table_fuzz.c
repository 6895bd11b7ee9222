/* libFuzzer target: the tuning table's text (HIDET_NCCL_TUNE_FILE, bytes from outside). A
 * table it accepts has, in every cell, at most HN_TUNE_RANGES ascending ranges of known views,
 * and picking from it stays in range. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/mem/tune_table_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hn_tune_t t;
    char why[256];
    if (hidet_nccl__tune_parse((const char *)data, size, &t, why, sizeof why) != 0) return 0;
    for (int c = 0; c < HN_NUM_TUNED; c++)
        for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++) {
            const hn_tune_cell_t *cell = &t.cell[c][d];
            if (cell->n < 0 || cell->n > HN_TUNE_RANGES) abort();
            for (int i = 0; i < cell->n; i++)
                if (cell->view[i] >= HN_NUM_VIEWS || (i > 0 && cell->upto[i] <= cell->upto[i - 1])) abort();
            size_t probes[4] = {0, 1, 1u << 20, (size_t)-1};
            for (int k = 0; k < 4; k++)
                if (hidet_nccl__tune_pick(&t, (hn_tuned_t)c, (hidet_nccl_dtype_t)d, probes[k]) >= HN_NUM_VIEWS) abort();
        }
    return 0;
}

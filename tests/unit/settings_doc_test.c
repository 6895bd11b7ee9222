/* docs/user_guide.md against the settings table: its "Environment variables" section names
 * every variable the library reads (the first column of its first table: core/base/settings_list.h)
 * and every launcher's rank variables in their one order (its second table: core/base/settings.c),
 * and nothing the library does not read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/settings_int.h"
#include "tests/cunit_runner.h"

static const char *g_guide;

#define MAX_NAMES 128

typedef struct {
    char name[64];
    int found;
} name_t;

/* The section of the guide that starts at `heading` and ends at the next "## ", malloc'ed. */
static char *section(const char *path, const char *heading) {
    FILE *f = fopen(path, "r");
    if (f == NULL) return NULL;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *start = strstr(text, heading);
    if (start == NULL) return NULL;
    char *end = strstr(start + strlen(heading), "\n## ");
    size_t len = end != NULL ? (size_t)(end - start) : strlen(start);
    char *out = malloc(len + 1);
    memcpy(out, start, len);
    out[len] = '\0';
    return out;
}

/* The `NAME` tokens (upper case, digits, '_') of cell `cell` (0: the first) of each row of the
 * markdown table whose header row starts with `header`, into names (at most max). */
static int table_names(const char *text, const char *header, int cell, name_t *names, int max) {
    const char *row = strstr(text, header);
    if (row == NULL) return -1;
    int n = 0;
    for (row = strchr(row, '\n'); row != NULL && row[1] == '|'; row = strchr(row + 1, '\n')) {
        const char *end = strchr(row + 1, '\n');
        if (end == NULL) end = row + strlen(row);
        const char *c = row + 1;
        for (int k = 0; k < cell && c != NULL && c < end; k++) c = strchr(c + 1, '|');
        if (c == NULL || c >= end || strncmp(c, "|---", 4) == 0) continue;
        const char *stop = strchr(c + 1, '|');
        if (stop == NULL || stop > end) stop = end;
        for (const char *q = strchr(c, '`'); q != NULL && q < stop; q = strchr(q + 1, '`')) {
            const char *close = strchr(q + 1, '`');
            if (close == NULL || close > stop) break;
            size_t len = (size_t)(close - q - 1);
            int upper = len > 0 && len < sizeof names[0].name;
            for (size_t i = 0; upper && i < len; i++)
                upper = (q[1 + i] >= 'A' && q[1 + i] <= 'Z') || (q[1 + i] >= '0' && q[1 + i] <= '9') || q[1 + i] == '_';
            if (upper && n < max) {
                memcpy(names[n].name, q + 1, len);
                names[n].name[len] = '\0';
                names[n++].found = 0;
            }
            q = close;
        }
    }
    return n;
}

static int take(name_t *names, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!names[i].found && strcmp(names[i].name, name) == 0) return names[i].found = 1;
    return 0;
}

static void test_settings_documented(void) {
    char *text = section(g_guide, "## Environment variables");
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    name_t names[MAX_NAMES];
    int n = table_names(text, "| variable |", 0, names, MAX_NAMES);
    CU_ASSERT_FATAL(n > 0);
    for (int i = 0; i < HN_NUM_SETTINGS; i++) {
        hn_setting_info_t s;
        hidet_nccl__setting_info((hn_setting_t)i, &s);
        if (!take(names, n, s.name)) {
            fprintf(stderr, "%s is read by the library (core/base/settings_list.h) but not in the user guide's table\n",
                    s.name);
            CU_FAIL("a setting is not documented");
        }
    }
    for (int i = 0; i < n; i++)
        if (!names[i].found) {
            fprintf(stderr, "%s is in the user guide's table but the library does not read it\n", names[i].name);
            CU_FAIL("a stale setting is documented");
        }
    free(text);
}

static void test_launcher_variables_documented(void) {
    char *text = section(g_guide, "## Environment variables");
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    for (int which = 0; which < 4; which++) {
        name_t names[MAX_NAMES];
        int n = table_names(text, "| launcher |", 1 + which, names, MAX_NAMES);
        CU_ASSERT_FATAL(n > 0);
        const char *var, *launcher;
        int l;
        for (l = 0; (var = hidet_nccl__launcher_var(l, which, &launcher)) != NULL; l++) {
            if (l >= n || strcmp(names[l].name, var) != 0) {
                fprintf(stderr, "row %d (%s) of the user guide's launcher table: column %d is %s, the library reads "
                        "%s\n", l + 1, launcher, which + 2, l < n ? names[l].name : "missing", var);
                CU_FAIL("the launcher table differs from the library's");
            }
        }
        CU_ASSERT_EQUAL(n, l);
    }
    free(text);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s docs/user_guide.md\n", argv[0]);
        return 2;
    }
    g_guide = argv[1];
    static const hn_test_t tests[] = {
        {"every setting documented, no stale one", test_settings_documented},
        {"the launchers' rank variables documented in their order", test_launcher_variables_documented},
        {NULL, NULL},
    };
    return hn_run_tests("settings_doc", tests);
}

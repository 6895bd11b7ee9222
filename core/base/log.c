/* Logging on stderr, by HIDET_NCCL_DEBUG (the level is a setting: core/base/settings.c), and the
 * settings each snapshot holds, printed before the first line logged under it. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/base/status_int.h"
#include "core/base/log_int.h"
#include "core/base/settings_int.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_host[64] = "?";
static atomic_int g_rank = -2; /* -2: not known yet; ask the launcher's variables */

static void host_init(void) {
    if (gethostname(g_host, sizeof g_host) != 0) strcpy(g_host, "?");
    g_host[sizeof g_host - 1] = '\0';
    char *dot = strchr(g_host, '.');
    if (dot != NULL) *dot = '\0';
}

void hidet_nccl__log_set_rank(int rank) { atomic_store(&g_rank, rank); }

/* Every setting of the snapshot (the library's own, and others' that are set) at INFO; a bad
 * HIDET_NCCL_DEBUG is a warning whatever the level. */
static void print_settings(hn_log_level_t level) {
    hn_setting_info_t d;
    hidet_nccl__setting_info(HN_SETTING_DEBUG, &d);
    if (d.error != NULL) fprintf(stderr, "hidet_nccl WARN %s\n", d.error);
    if (level < HN_LOG_INFO) return;
    hidet_nccl__log(HN_LOG_INFO, "settings (each read once; hidet_nccl_settings_reload reads them again):");
    for (int i = 0; i < HN_NUM_SETTINGS; i++) {
        hn_setting_info_t s;
        hidet_nccl__setting_info((hn_setting_t)i, &s);
        int own = strncmp(s.name, "HIDET_NCCL_", 11) == 0;
        if (!own && s.env == NULL) continue; /* others' variables: only those set */
        if (s.error != NULL)
            hidet_nccl__log(HN_LOG_INFO, "  %s=%s (environment, INVALID: %s)", s.name, s.env, s.error);
        else
            hidet_nccl__log(HN_LOG_INFO, "  %s=%s (%s) - %s", s.name,
                            s.secret ? (s.value ? "(hidden)" : "") : s.value ? s.value : "",
                            s.env ? "environment" : s.value ? "default" : "unset", s.doc);
    }
    char saved[1024]; /* the hints' check must not leave a message in the caller's thread */
    snprintf(saved, sizeof saved, "%s", hidet_nccl_last_error());
    hn_hints_t h;
    if (hidet_nccl__launcher_hints(&h) == HIDET_NCCL_SUCCESS)
        hidet_nccl__log(HN_LOG_INFO, "  rank hints: rank %d of %d, local rank %d of %d, from %s%s%s", h.rank, h.nranks,
                        h.local_rank, h.local_size, h.source, h.local_source[0] ? "; local rank from " : "",
                        h.local_source);
    else
        hidet_nccl__log(HN_LOG_INFO, "  rank hints: %s", hidet_nccl__error_detail());
    hidet_nccl__restore_error(saved);
}

hn_log_level_t hidet_nccl__log_level(void) {
    static atomic_uint printed; /* the serial of the last snapshot printed */
    int level = 0;
    hidet_nccl__setting_int(HN_SETTING_DEBUG, &level); /* never an error: a bad value is WARN */
    unsigned serial = hidet_nccl__settings_serial(), seen = atomic_load_explicit(&printed, memory_order_relaxed);
    if (serial != seen && atomic_compare_exchange_strong(&printed, &seen, serial)) print_settings((hn_log_level_t)level);
    return (hn_log_level_t)level;
}

void hidet_nccl__log(hn_log_level_t level, const char *fmt, ...) {
    static const char *const names[] = {"NONE", "WARN", "INFO", "TRACE"};
    pthread_once(&g_once, host_init);
    int rank = atomic_load(&g_rank);
    if (rank == -2) { /* until a communicator says otherwise, the rank a launcher gave */
        int expected = -2;
        atomic_compare_exchange_strong(&g_rank, &expected, hidet_nccl__launcher_rank());
        rank = atomic_load(&g_rank);
    }
    char line[2048];
    int n;
    if (rank >= 0)
        n = snprintf(line, sizeof line, "%s:%d [%d] hidet_nccl %s ", g_host, (int)getpid(), rank, names[level]);
    else
        n = snprintf(line, sizeof line, "%s:%d hidet_nccl %s ", g_host, (int)getpid(), names[level]);
    if (n < 0 || (size_t)n >= sizeof line) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line); /* one write per line, so ranks do not interleave mid-line */
}

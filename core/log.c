/* Logging on stderr, by HIDET_NCCL_DEBUG (the level is a setting: core/settings.c). */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log_int.h"
#include "core/settings_int.h"

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

/* Logging on stderr, by HIDET_NCCL_DEBUG. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/log_int.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static hn_log_level_t g_level = HN_LOG_WARN;
static char g_host[64] = "?";
static atomic_int g_rank = -1;

static void log_init(void) {
    const char *v = getenv("HIDET_NCCL_DEBUG");
    if (v != NULL) {
        if (strcasecmp(v, "NONE") == 0) g_level = HN_LOG_NONE;
        else if (strcasecmp(v, "WARN") == 0) g_level = HN_LOG_WARN;
        else if (strcasecmp(v, "INFO") == 0) g_level = HN_LOG_INFO;
        else if (strcasecmp(v, "TRACE") == 0) g_level = HN_LOG_TRACE;
        else fprintf(stderr, "hidet_nccl WARN HIDET_NCCL_DEBUG='%s' is not NONE, WARN, INFO or TRACE; using WARN\n", v);
    }
    if (gethostname(g_host, sizeof g_host) != 0) strcpy(g_host, "?");
    g_host[sizeof g_host - 1] = '\0';
    char *dot = strchr(g_host, '.');
    if (dot != NULL) *dot = '\0';
    /* Until a communicator says otherwise, the rank a launcher gave. */
    const char *const rank_vars[] = {"HIDET_NCCL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                     "SLURM_PROCID", "RANK"};
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *r = getenv(rank_vars[i]);
        if (r != NULL && *r != '\0') {
            char *end;
            long x = strtol(r, &end, 10);
            if (*end == '\0' && x >= 0 && x < (1L << 30)) {
                atomic_store(&g_rank, (int)x);
                break;
            }
        }
    }
}

hn_log_level_t hidet_nccl__log_level(void) {
    pthread_once(&g_once, log_init);
    return g_level;
}

void hidet_nccl__log_set_rank(int rank) {
    pthread_once(&g_once, log_init);
    atomic_store(&g_rank, rank);
}

void hidet_nccl__log(hn_log_level_t level, const char *fmt, ...) {
    static const char *const names[] = {"NONE", "WARN", "INFO", "TRACE"};
    char line[2048];
    int rank = atomic_load(&g_rank);
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

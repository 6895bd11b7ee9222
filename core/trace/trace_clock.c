/* The flight recorder's clock (core/trace/trace_clock_int.h): stamps to CLOCK_MONOTONIC. */
#include <pthread.h>
#include <time.h>

#include "core/trace/trace_clock_int.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static uint64_t g_ticks0, g_ns0; /* the first reading pair */

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The counter and CLOCK_MONOTONIC at one moment: the clock read between two counter readings,
 * the counter taken as their middle. */
static void pair(uint64_t *ticks, uint64_t *ns) {
    uint64_t a = hidet_nccl__trace_ticks();
    *ns = monotonic_ns();
    uint64_t b = hidet_nccl__trace_ticks();
    *ticks = a + (b - a) / 2;
}

static void start(void) { pair(&g_ticks0, &g_ns0); }

void hidet_nccl__trace_clock_start(void) { pthread_once(&g_once, start); }

uint64_t hidet_nccl__trace_ticks_ns(uint64_t ticks) {
#if defined(__x86_64__) || defined(__aarch64__)
    uint64_t ticks1, ns1;
    pair(&ticks1, &ns1);
    if (ticks1 <= g_ticks0 || ns1 <= g_ns0) return ns1; /* no interval to scale by yet */
    double per_tick = (double)(ns1 - g_ns0) / (double)(ticks1 - g_ticks0);
    return g_ns0 + (uint64_t)(((double)ticks - (double)g_ticks0) * per_tick);
#else
    return ticks; /* already CLOCK_MONOTONIC_COARSE nanoseconds */
#endif
}

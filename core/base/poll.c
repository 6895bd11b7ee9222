/* The monotonic clock and the polling loop every wait of the library uses (core/base/kit.h). */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/base/kit.h"

double hidet_nccl__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void hidet_nccl__poll_begin(hn_poll_t *p, double timeout_s, double spin_s, long first_ns, long max_ns, int jitter) {
    p->start = hidet_nccl__now();
    p->timeout_s = timeout_s;
    p->spin_s = spin_s;
    p->sleep_ns = first_ns > 0 ? first_ns : 1;
    p->max_ns = max_ns > p->sleep_ns ? max_ns : p->sleep_ns;
    p->jitter = jitter;
    p->seed = (unsigned)getpid() ^ (unsigned)(uint64_t)(p->start * 1e9); /* wraps, as meant */
}

double hidet_nccl__poll_waited(const hn_poll_t *p) { return hidet_nccl__now() - p->start; }

int hidet_nccl__poll_expired(const hn_poll_t *p) { return hidet_nccl__poll_waited(p) > p->timeout_s; }

void hidet_nccl__poll_pause(hn_poll_t *p) {
    if (hidet_nccl__poll_waited(p) < p->spin_s) return;
    double ns = (double)p->sleep_ns;
    if (p->jitter) ns *= 0.75 + 0.5 * (double)rand_r(&p->seed) / ((double)RAND_MAX + 1.0);
    double left_ns = (p->timeout_s - hidet_nccl__poll_waited(p)) * 1e9 + 1000; /* no pause passes the deadline */
    if (ns > left_ns) ns = left_ns > 0 ? left_ns : 0;
    struct timespec ts = {(time_t)(ns / 1e9), (long)(ns - 1e9 * (double)(time_t)(ns / 1e9))};
    nanosleep(&ts, NULL);
    if (p->sleep_ns < p->max_ns) p->sleep_ns = p->sleep_ns * 2 < p->max_ns ? p->sleep_ns * 2 : p->max_ns;
}

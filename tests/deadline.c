#include "tests/deadline.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define HN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HN_ASAN 1
#endif
#endif

double hn_test_slowdown(void) {
    static double s;
    if (s > 0) return s;
    const char *v = getenv("HIDET_NCCL_TEST_SLOWDOWN");
    char *end = NULL;
    double f = v ? strtod(v, &end) : 1;
    if (v == NULL || end == v || *end != '\0' || !(f >= 1 && f <= 1000)) {
        if (v) fprintf(stderr, "HIDET_NCCL_TEST_SLOWDOWN='%s' is not a factor in [1, 1000]: 1 taken\n", v);
        f = 1;
    }
#ifdef HN_ASAN
    if (f < 3) f = 3; /* a process under ASan starts and runs about 3 times slower (256 ranks: 3.4 s, not 1.0 s) */
#endif
#ifdef RUNNING_ON_VALGRIND
    if (RUNNING_ON_VALGRIND && f < 20) f = 20;
#endif
    s = f;
    return s;
}

int hn_test_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

double hn_test_deadline(double per_rank_s, int ranks, double floor_s) {
    double work = per_rank_s * ranks / hn_test_cores();
    return (work > floor_s ? work : floor_s) * hn_test_slowdown();
}

double hn_test_scaled(double seconds) { return seconds * hn_test_slowdown(); }

double hn_test_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void hn_test_setenv_seconds(const char *name, double seconds) {
    char v[32];
    snprintf(v, sizeof v, "%.3f", seconds);
    setenv(name, v, 1);
}

hn_wait_t hn_wait_begin(double seconds, const char *what) {
    hn_wait_t w = {hn_test_now(), 0, what, 0};
    w.end = w.start + hn_test_scaled(seconds);
    return w;
}

int hn_wait_more(hn_wait_t *w, int ready) {
    if (ready) {
        w->ok = 1;
        return 0;
    }
    double now = hn_test_now();
    if (now >= w->end) {
        fprintf(stderr, "waited %.1f s for %s: it did not come\n", now - w->start, w->what);
        return 0;
    }
    double left = w->end - now, step = (now - w->start) / 10; /* 1 ms at first, 10 ms once it takes a while */
    if (step < 0.001) step = 0.001;
    if (step > 0.01) step = 0.01;
    if (step > left) step = left;
    usleep((useconds_t)(step * 1e6));
    return 1;
}

void hn_test_tell(int fd) {
    while (write(fd, "!", 1) < 0 && errno == EINTR) {
    }
}

int hn_test_await(int fd, int count, double seconds, const char *what) {
    double start = hn_test_now(), end = start + hn_test_scaled(seconds);
    int got = 0;
    while (got < count) {
        double left = end - hn_test_now();
        struct pollfd p = {fd, POLLIN, 0};
        int r = left > 0 ? poll(&p, 1, (int)(left * 1000) + 1) : 0;
        if (r < 0 && errno == EINTR) continue;
        char c;
        if (r <= 0 || read(fd, &c, 1) != 1) {
            fprintf(stderr, "waited %.1f s for %s: %d of %d came\n", hn_test_now() - start, what, got, count);
            return 0;
        }
        got++;
    }
    return 1;
}

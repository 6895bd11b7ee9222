/* Internal: the flight recorder's clock (core/trace/trace_clock.c). A call stamps its entry with
 * the CPU's own counter, read without touching memory (x86-64's time stamp counter, AArch64's
 * virtual counter; elsewhere CLOCK_MONOTONIC_COARSE in nanoseconds), and the dump turns a stamp
 * into CLOCK_MONOTONIC nanoseconds. A back-to-back NCCL call leaves little of the library in
 * the TLBs (docs/benchmarks.md): the coarse clock's vDSO call touched two pages of its own (its
 * code and its data) at every call. */
#ifndef HIDET_NCCL_CORE_TRACE_TRACE_CLOCK_INT_H_
#define HIDET_NCCL_CORE_TRACE_TRACE_CLOCK_INT_H_

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static inline uint64_t hidet_nccl__trace_ticks(void) {
#if defined(__x86_64__)
    return __rdtsc(); /* invariant and in step on every core of the last decade's x86-64 */
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* Takes the clock's first reading pair (the counter and CLOCK_MONOTONIC at once), once per
 * process: before the first entry is stamped (hidet_nccl__trace_new). */
void hidet_nccl__trace_clock_start(void);
/* CLOCK_MONOTONIC nanoseconds of a stamp: between the first reading pair and one taken now
 * (async-signal-safe: the dump of SIGUSR1 calls it). */
uint64_t hidet_nccl__trace_ticks_ns(uint64_t ticks);

#endif

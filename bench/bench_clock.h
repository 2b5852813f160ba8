/*
 * bench/bench_clock.h - the benchmark's timing primitive.
 *
 * This is benchmark code, not library code: the library's port layer has no
 * clock on purpose.
 *
 * x86-64 / i386: the time-stamp counter read between two LFENCEs.  The first
 * fence keeps RDTSC from running ahead of the code before it, the second
 * keeps the code after it from starting before the counter is read.  CPUID
 * would serialise harder but traps to the hypervisor on virtual machines,
 * which costs thousands of cycles and a lot of noise, so it is not used.
 * On CPUs with constant_tsc the counter ticks at a fixed reference rate, not
 * the core clock: the unit is "TSC ticks" (reference cycles).
 *
 * Elsewhere: clock_gettime(CLOCK_MONOTONIC) in nanoseconds.  BENCH_CLOCK_KIND
 * and BENCH_CLOCK_UNIT say which one was compiled in, and the JSON output
 * records them.
 */
#ifndef DMM_BENCH_CLOCK_H
#define DMM_BENCH_CLOCK_H

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)

#define BENCH_CLOCK_KIND "rdtsc"
#define BENCH_CLOCK_FENCE "lfence; rdtsc; lfence"
#define BENCH_CLOCK_UNIT "tsc_ticks"

static inline uint64_t bench_ticks(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}

#else

#include <time.h>

#define BENCH_CLOCK_KIND "clock_gettime"
#define BENCH_CLOCK_FENCE "none (CLOCK_MONOTONIC)"
#define BENCH_CLOCK_UNIT "ns"

static inline uint64_t bench_ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif

#endif /* DMM_BENCH_CLOCK_H */

/*
 * tools/replay/rp_clock.h - the replayer's per-operation clock.
 *
 * x86: the time-stamp counter.  The opening read is "lfence; rdtsc; lfence":
 * the first fence keeps RDTSC from running ahead of the code before it, the
 * second keeps the measured call from starting before the counter is read.
 * The closing read is "rdtscp; lfence": RDTSCP waits until every earlier
 * instruction has executed, the fence keeps later code out.  CPUID is not
 * used (it traps to the hypervisor on virtual machines).  With constant_tsc
 * the unit is reference cycles ("TSC ticks").
 *
 * Elsewhere: clock_gettime(CLOCK_MONOTONIC) in nanoseconds.
 */
#ifndef DMM_RP_CLOCK_H
#define DMM_RP_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)

#define RP_CLOCK_KIND "rdtsc"
#define RP_CLOCK_BRACKET "lfence;rdtsc;lfence ... rdtscp;lfence"
#define RP_CLOCK_UNIT "tsc_ticks"

static inline uint64_t rp_tick_begin(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t rp_tick_end(void)
{
    uint32_t lo, hi, aux;
    __asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
    (void)aux;
    return ((uint64_t)hi << 32) | lo;
}

static inline void rp_cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }

#else

#define RP_CLOCK_KIND "clock_gettime"
#define RP_CLOCK_BRACKET "clock_gettime(CLOCK_MONOTONIC)"
#define RP_CLOCK_UNIT "ns"

static inline uint64_t rp_tick_now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static inline uint64_t rp_tick_begin(void) { return rp_tick_now_(); }
static inline uint64_t rp_tick_end(void) { return rp_tick_now_(); }
static inline void rp_cpu_relax(void) { __asm__ __volatile__("" ::: "memory"); }

#endif

#endif

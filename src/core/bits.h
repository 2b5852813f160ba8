/*
 * src/core/bits.h - bit tricks shared by every component (portable C11 with
 * GCC/Clang builtins, which the freestanding toolchains provide too).
 */
#ifndef DMM_CORE_BITS_H
#define DMM_CORE_BITS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define DMM_WORD_BITS (sizeof(size_t) * CHAR_BIT)

/* Index of the lowest set bit; x must be non-zero. */
static inline unsigned dmm_ctz(size_t x) { return (unsigned)__builtin_ctzl((unsigned long)x); }

/* floor(log2(x)); x must be non-zero. */
static inline unsigned dmm_log2_floor(size_t x)
{
    return (unsigned)(sizeof(unsigned long) * CHAR_BIT - 1u) - (unsigned)__builtin_clzl((unsigned long)x);
}

/* ceil(log2(x)); 0 for x <= 1. */
static inline unsigned dmm_log2_ceil(size_t x)
{
    return x <= 1 ? 0u : dmm_log2_floor(x - 1) + 1u;
}

static inline int dmm_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* Round up to a power-of-two multiple a; caller guarantees no overflow. */
static inline size_t dmm_align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }
static inline size_t dmm_align_down(size_t x, size_t a) { return x & ~(a - 1); }
static inline uintptr_t dmm_align_up_ptr(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }

/* For a few hot helpers the compiler's size heuristics must not decline to
 * inline (they are few, and each variant compiles its own copy) - except
 * when the build optimises for size (-Os), where firmware wants one copy. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__OPTIMIZE_SIZE__)
#define DMM_ALWAYS_INLINE inline __attribute__((always_inline))
#else /* -Os: code size first, the compiler's heuristics decide */
#define DMM_ALWAYS_INLINE inline
#endif
/* Inlined at every optimisation level: for a helper whose inlining makes
 * the code smaller as well (its caller folds what the helper computes). */
#if defined(__GNUC__) || defined(__clang__)
#define DMM_FORCE_INLINE inline __attribute__((always_inline))
#else
#define DMM_FORCE_INLINE inline
#endif
#if defined(__GNUC__) || defined(__clang__)
#define DMM_NOINLINE __attribute__((noinline))
#define DMM_LIKELY(x) __builtin_expect(!!(x), 1)
#define DMM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define DMM_NOINLINE
#define DMM_LIKELY(x) (x)
#define DMM_UNLIKELY(x) (x)
#endif

_Static_assert(sizeof(unsigned long) == sizeof(size_t),
               "dmm_ctz/dmm_log2_floor assume size_t and unsigned long have the same width");

#endif

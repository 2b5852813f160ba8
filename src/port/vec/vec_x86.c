/*
 * src/port/vec/vec_x86.c - AVX-512 and AVX2 memset/memcpy for x86-64 (hosted
 * builds; see README).  Each routine is compiled for its instruction set
 * with a target attribute, so the rest of the library keeps the baseline
 * ISA; dmm__vec_arch_impls lists only what __builtin_cpu_supports says the
 * CPU (and the OS's saved register state) can run.
 *
 * The contract (dmm/vec.h) gives dst and src 16-byte aligned and n a
 * multiple of 16.  The shape of both routines, for a vector of W bytes:
 *   n <= 2W    two (possibly overlapping) moves, one at each end, of 16 or
 *              32 bytes for the smallest sizes;
 *   n <= 4W    four moves, two from each end;
 *   larger     one unaligned move at the start, then a loop of four aligned
 *              moves from the first W-aligned byte after dst, and four moves
 *              ending exactly at the end (they may overlap the loop's).
 *              AVX2 above 512 B: the loop starts at dst itself when dst is
 *              32-byte aligned, and the head move is skipped then.
 * Overlapping a few bytes twice is cheaper than a branch per remainder;
 * the ranges of memcpy do not overlap each other, so storing the same byte
 * twice is harmless.  Measured on the AMD EPYC of bench/results/pool_vec
 * (AVX2): starting the loop at an aligned dst saves a store (an aligned
 * 1 KB memset is then exactly 32 stores, ~3% faster from 768 B up, level
 * with glibc), but was 25-40% slower at 192-384 B, where the extra head
 * store costs nothing; hence the 512 B switch.  A tail that stores only
 * what the loop left (one to four moves, by branches) was no faster.  No non-temporal stores: the blocks these routines
 * serve (64 B .. 4 KB) are used right after they are filled.
 */
#include <immintrin.h>
#include <stdint.h>

#include "dmm/vec.h"

unsigned dmm__vec_arch_impls(const dmm_vec_impl **out, unsigned cap);

#define AVX2_FN __attribute__((target("avx2")))
#define AVX512_FN __attribute__((target("avx512f")))

/* ---- AVX2: 32-byte moves ------------------------------------------------ */

#define LD32(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define ST32(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define STA32(p, v) _mm256_store_si256((__m256i *)(void *)(p), (v))
#define LD16(p) _mm_load_si128((const __m128i *)(const void *)(p))
#define ST16(p, v) _mm_store_si128((__m128i *)(void *)(p), (v))

static AVX2_FN void avx2_memset(void *dst, int c, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    unsigned char *end = d + n;
    if (n <= 32) {
        if (n) {
            __m128i x = _mm_set1_epi8((char)c);
            ST16(d, x);
            ST16(end - 16, x);
        }
        return;
    }
    __m256i v = _mm256_set1_epi8((char)c);
    if (n <= 64) {
        ST32(d, v);
        ST32(end - 32, v);
        return;
    }
    if (n > 128) {
        /* The loop's first store: at the first 32-byte boundary after d
         * (the head store covers the bytes before it); from 512 B on (512 itself
         * included: one store fewer, level with glibc there), at d
         * itself when d is 32-byte aligned (see the header). */
        unsigned char *p = (unsigned char *)(((uintptr_t)d + (n >= 512 ? 31 : 32)) & ~(uintptr_t)31);
        if (p != d)
            ST32(d, v);
        while ((size_t)(end - p) > 128) {
            STA32(p, v);
            STA32(p + 32, v);
            STA32(p + 64, v);
            STA32(p + 96, v);
            p += 128;
        }
        ST32(end - 128, v);
        ST32(end - 96, v);
    } else {
        ST32(d, v);
        ST32(d + 32, v);
    }
    ST32(end - 64, v);
    ST32(end - 32, v);
}

static AVX2_FN void avx2_memcpy(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    unsigned char *end = d + n;
    const unsigned char *send = s + n;
    if (n <= 32) {
        if (n) {
            __m128i a = LD16(s), b = LD16(send - 16);
            ST16(d, a);
            ST16(end - 16, b);
        }
        return;
    }
    if (n <= 64) {
        __m256i a = LD32(s), b = LD32(send - 32);
        ST32(d, a);
        ST32(end - 32, b);
        return;
    }
    if (n <= 128) {
        __m256i a = LD32(s), b = LD32(s + 32), e = LD32(send - 64), f = LD32(send - 32);
        ST32(d, a);
        ST32(d + 32, b);
        ST32(end - 64, e);
        ST32(end - 32, f);
        return;
    }
    /* The four last vectors are loaded first: the loop below may run
     * over them (never past end). */
    __m256i t0 = LD32(send - 128), t1 = LD32(send - 96), t2 = LD32(send - 64), t3 = LD32(send - 32);
    size_t skip = (size_t)((((uintptr_t)d + (n >= 512 ? 31 : 32)) & ~(uintptr_t)31) - (uintptr_t)d);
    if (skip)
        ST32(d, LD32(s));
    unsigned char *p = d + skip;
    const unsigned char *q = s + skip;
    while ((size_t)(end - p) > 128) {
        __m256i a = LD32(q), b = LD32(q + 32), e = LD32(q + 64), f = LD32(q + 96);
        STA32(p, a);
        STA32(p + 32, b);
        STA32(p + 64, e);
        STA32(p + 96, f);
        p += 128;
        q += 128;
    }
    ST32(end - 128, t0);
    ST32(end - 96, t1);
    ST32(end - 64, t2);
    ST32(end - 32, t3);
}

/* ---- AVX-512 (F only): 64-byte moves, 16/32-byte ones below 64 ------------ */

#if DMM_VEC_X86_EMULATE_AVX512
/* Test builds only (tests/vec, dmm_vec_emul512_tests): each 64-byte move is
 * two AVX2 moves, so the AVX-512 routines' control flow (sizes, tails,
 * alignment of the loop) is checked on a CPU without AVX-512.  The aligned
 * store traps unless its address is 64-byte aligned, as vmovdqa64 would
 * fault. */
typedef struct {
    __m256i lo, hi;
} vec64;
#undef AVX512_FN
#define AVX512_FN AVX2_FN
#define AVX512_RUNS() __builtin_cpu_supports("avx2")
static AVX2_FN inline vec64 ld64(const void *p)
{
    vec64 v = {LD32(p), LD32((const unsigned char *)p + 32)};
    return v;
}
static AVX2_FN inline void st64(void *p, vec64 v)
{
    ST32(p, v.lo);
    ST32((unsigned char *)p + 32, v.hi);
}
static AVX2_FN inline void sta64(void *p, vec64 v)
{
    if ((uintptr_t)p & 63)
        __builtin_trap();
    st64(p, v);
}
static AVX2_FN inline vec64 splat64(int c)
{
    vec64 v = {_mm256_set1_epi8((char)c), _mm256_set1_epi8((char)c)};
    return v;
}
#define LD64(p) ld64(p)
#define ST64(p, v) st64((p), (v))
#define STA64(p, v) sta64((p), (v))
#define SPLAT64(c) splat64(c)
#else
typedef __m512i vec64;
#define AVX512_RUNS() __builtin_cpu_supports("avx512f")
#define LD64(p) _mm512_loadu_si512((const void *)(p))
#define ST64(p, v) _mm512_storeu_si512((void *)(p), (v))
#define STA64(p, v) _mm512_store_si512((void *)(p), (v))
#define SPLAT64(c) _mm512_set1_epi32((int)((unsigned)(unsigned char)(c) * 0x01010101u))
#endif

static AVX512_FN void avx512_memset(void *dst, int c, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    unsigned char *end = d + n;
    if (n <= 32) {
        if (n) {
            __m128i x = _mm_set1_epi8((char)c);
            ST16(d, x);
            ST16(end - 16, x);
        }
        return;
    }
    if (n <= 64) {
        __m256i y = _mm256_set1_epi8((char)c);
        ST32(d, y);
        ST32(end - 32, y);
        return;
    }
    vec64 v = SPLAT64(c);
    if (n <= 128) {
        ST64(d, v);
        ST64(end - 64, v);
        return;
    }
    if (n > 256) {
        ST64(d, v);
        unsigned char *p = (unsigned char *)(((uintptr_t)d + 64) & ~(uintptr_t)63);
        while ((size_t)(end - p) > 256) {
            STA64(p, v);
            STA64(p + 64, v);
            STA64(p + 128, v);
            STA64(p + 192, v);
            p += 256;
        }
        ST64(end - 256, v);
        ST64(end - 192, v);
    } else {
        ST64(d, v);
        ST64(d + 64, v);
    }
    ST64(end - 128, v);
    ST64(end - 64, v);
}

static AVX512_FN void avx512_memcpy(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    unsigned char *end = d + n;
    const unsigned char *send = s + n;
    if (n <= 32) {
        if (n) {
            __m128i a = LD16(s), b = LD16(send - 16);
            ST16(d, a);
            ST16(end - 16, b);
        }
        return;
    }
    if (n <= 64) {
        __m256i a = LD32(s), b = LD32(send - 32);
        ST32(d, a);
        ST32(end - 32, b);
        return;
    }
    if (n <= 128) {
        vec64 a = LD64(s), b = LD64(send - 64);
        ST64(d, a);
        ST64(end - 64, b);
        return;
    }
    if (n <= 256) {
        vec64 a = LD64(s), b = LD64(s + 64), e = LD64(send - 128), f = LD64(send - 64);
        ST64(d, a);
        ST64(d + 64, b);
        ST64(end - 128, e);
        ST64(end - 64, f);
        return;
    }
    vec64 t0 = LD64(send - 256), t1 = LD64(send - 192), t2 = LD64(send - 128), t3 = LD64(send - 64);
    ST64(d, LD64(s));
    size_t skip = (size_t)((((uintptr_t)d + 64) & ~(uintptr_t)63) - (uintptr_t)d);
    unsigned char *p = d + skip;
    const unsigned char *q = s + skip;
    while ((size_t)(end - p) > 256) {
        vec64 a = LD64(q), b = LD64(q + 64), e = LD64(q + 128), f = LD64(q + 192);
        STA64(p, a);
        STA64(p + 64, b);
        STA64(p + 128, e);
        STA64(p + 192, f);
        p += 256;
        q += 256;
    }
    ST64(end - 256, t0);
    ST64(end - 192, t1);
    ST64(end - 128, t2);
    ST64(end - 64, t3);
}

static const dmm_vec_impl impl_avx512 = {"avx512", 64, avx512_memset, avx512_memcpy};
static const dmm_vec_impl impl_avx2 = {"avx2", 32, avx2_memset, avx2_memcpy};

unsigned dmm__vec_arch_impls(const dmm_vec_impl **out, unsigned cap)
{
    const dmm_vec_impl *have[2];
    unsigned n = 0;
    __builtin_cpu_init();
    if (AVX512_RUNS())
        have[n++] = &impl_avx512;
    if (__builtin_cpu_supports("avx2"))
        have[n++] = &impl_avx2;
    for (unsigned i = 0; i < n && i < cap; i++)
        out[i] = have[i];
    return n;
}

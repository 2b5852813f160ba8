/*
 * src/port/vec/vec_neon.c - NEON memset/memcpy for AArch64 (hosted builds;
 * see README).  Advanced SIMD is part of the AArch64 baseline, so there is
 * nothing to detect: the implementation is always listed.
 *
 * Same shape as the x86 routines (vec_x86.c) with 16-byte vectors: two
 * moves (one from each end) up to 32 bytes, four up to 64, else a loop of
 * four 16-byte moves and four moves ending exactly at the end, overlapping
 * the loop's last ones when n is not a multiple of 64.  dst and src are
 * 16-byte aligned and n a multiple of 16 (dmm/vec.h).
 */
#include <arm_neon.h>

#include "dmm/vec.h"

unsigned dmm__vec_arch_impls(const dmm_vec_impl **out, unsigned cap);

static void neon_memset(void *dst, int c, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    uint8_t *end = d + n;
    uint8x16_t v = vdupq_n_u8((uint8_t)c);
    if (n <= 32) {
        if (n) {
            vst1q_u8(d, v);
            vst1q_u8(end - 16, v);
        }
        return;
    }
    if (n <= 64) {
        vst1q_u8(d, v);
        vst1q_u8(d + 16, v);
        vst1q_u8(end - 32, v);
        vst1q_u8(end - 16, v);
        return;
    }
    uint8_t *p = d;
    while ((size_t)(end - p) > 64) {
        vst1q_u8(p, v);
        vst1q_u8(p + 16, v);
        vst1q_u8(p + 32, v);
        vst1q_u8(p + 48, v);
        p += 64;
    }
    vst1q_u8(end - 64, v);
    vst1q_u8(end - 48, v);
    vst1q_u8(end - 32, v);
    vst1q_u8(end - 16, v);
}

static void neon_memcpy(void *dst, const void *src, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    uint8_t *end = d + n;
    const uint8_t *send = s + n;
    if (n <= 32) {
        if (n) {
            uint8x16_t a = vld1q_u8(s), b = vld1q_u8(send - 16);
            vst1q_u8(d, a);
            vst1q_u8(end - 16, b);
        }
        return;
    }
    if (n <= 64) {
        uint8x16_t a = vld1q_u8(s), b = vld1q_u8(s + 16), e = vld1q_u8(send - 32), f = vld1q_u8(send - 16);
        vst1q_u8(d, a);
        vst1q_u8(d + 16, b);
        vst1q_u8(end - 32, e);
        vst1q_u8(end - 16, f);
        return;
    }
    uint8x16_t t0 = vld1q_u8(send - 64), t1 = vld1q_u8(send - 48), t2 = vld1q_u8(send - 32),
               t3 = vld1q_u8(send - 16);
    uint8_t *p = d;
    const uint8_t *q = s;
    while ((size_t)(end - p) > 64) {
        uint8x16_t a = vld1q_u8(q), b = vld1q_u8(q + 16), e = vld1q_u8(q + 32), f = vld1q_u8(q + 48);
        vst1q_u8(p, a);
        vst1q_u8(p + 16, b);
        vst1q_u8(p + 32, e);
        vst1q_u8(p + 48, f);
        p += 64;
        q += 64;
    }
    vst1q_u8(end - 64, t0);
    vst1q_u8(end - 48, t1);
    vst1q_u8(end - 32, t2);
    vst1q_u8(end - 16, t3);
}

static const dmm_vec_impl impl_neon = {"neon", 16, neon_memset, neon_memcpy};

unsigned dmm__vec_arch_impls(const dmm_vec_impl **out, unsigned cap)
{
    if (cap > 0)
        out[0] = &impl_neon;
    return 1;
}

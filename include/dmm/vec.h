/*
 * dmm/vec.h - vectorised memset and memcpy for aligned blocks (pool blocks,
 * seed 003): the alignment and the size are known to be multiples of the
 * vector granule, so the routines need no head/tail handling and no size
 * dispatch.
 *
 * Implementations: AVX-512 and AVX2 on x86-64 (chosen at run time from the
 * CPU's features), NEON on AArch64, and a portable word loop everywhere
 * (the only one on a freestanding build).  The first call picks the best one
 * the CPU runs; dmm_vec_select() forces another (tests, benchmarks).
 *
 * Thread-safety: the routines are reentrant.  dmm_vec_select() is not meant
 * to race with calls of the routines (it swaps one pointer atomically, so a
 * concurrent call runs either the old or the new implementation).
 */
#ifndef DMM_VEC_H
#define DMM_VEC_H

#include "dmm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The granule every routine requires: dst and src aligned to it, n a
 * multiple of it.  The widest unit may be wider (32 or 64 bytes): the
 * routines then use unaligned-tolerant wide moves where a block is only
 * granule-aligned, and narrower ones for the last granules. */
#define DMM_VEC_GRANULE 16u

/* Fills n bytes at dst with (unsigned char)c.
 * Requires: dst % DMM_VEC_GRANULE == 0, n % DMM_VEC_GRANULE == 0 (n may be 0).
 * O(n).  Checked by an internal assertion in debug builds. */
void dmm_vec_memset(void *dst, int c, size_t n);

/* Copies n bytes from src to dst; the ranges must not overlap.
 * Requires: dst and src % DMM_VEC_GRANULE == 0, n % DMM_VEC_GRANULE == 0. */
void dmm_vec_memcpy(void *dst, const void *src, size_t n);

/* Width in bytes of the widest vector unit the selected implementation
 * uses: 64 (AVX-512), 32 (AVX2), 16 (NEON, and the portable loop, whose
 * granule it is).  The pool's default block alignment. */
size_t dmm_vec_width(void);

/* Name of the selected implementation: "avx512", "avx2", "neon", "portable". */
const char *dmm_vec_name(void);

/* One implementation. */
typedef struct dmm_vec_impl {
    const char *name;
    size_t width;
    void (*memset)(void *dst, int c, size_t n);
    void (*memcpy)(void *dst, const void *src, size_t n);
} dmm_vec_impl;

/* The implementations this build has AND this CPU can run, best first
 * ("portable" is always last).  Writes up to cap pointers to out (out may be
 * NULL when cap is 0) and returns how many there are. */
unsigned dmm_vec_impls(const dmm_vec_impl **out, unsigned cap);

/* Selects the implementation called name (one dmm_vec_impls lists), or the
 * best one when name is NULL.  DMM_E_UNSUPPORTED when this build or CPU
 * has no such implementation (nothing changes then). */
dmm_status dmm_vec_select(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* DMM_VEC_H */

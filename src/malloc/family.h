/*
 * src/malloc/family.h - the malloc family's argument rules, shared by the
 * two libraries that answer the C library's allocation names: libdmm's
 * preload layer (src/malloc/malloc.c, preload.c) and the recorder
 * (src/recorder/recorder.c).  Static inline, C11, no platform code.
 *
 * The names both interpose:
 *   malloc free calloc realloc reallocarray posix_memalign aligned_alloc
 *   memalign valloc pvalloc malloc_usable_size
 *   cfree (glibc's compatibility free), free_sized, free_aligned_sized (C23)
 *
 * Rules (as POSIX and glibc state them):
 *  - reallocarray / calloc: nmemb * size overflowing size_t fails with
 *    ENOMEM (dmm_family_mul);
 *  - posix_memalign: the alignment must be a power of two and a multiple of
 *    sizeof(void *), else EINVAL is returned, errno untouched
 *    (dmm_family_posix_align_ok);
 *  - memalign (and glibc's aligned_alloc before 2.38): any alignment is
 *    rounded up to the next power of two, 0 meaning 1
 *    (dmm_family_norm_align);
 *  - aligned_alloc (C17): the alignment must be a power of two, else EINVAL
 *    (dmm_family_pow2).
 *  - free_sized / free_aligned_sized: the size hints may be ignored; they
 *    free like free.
 */
#ifndef DMM_MALLOC_FAMILY_H
#define DMM_MALLOC_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* true and *out = a * b, or false when the product overflows size_t. */
static inline bool dmm_family_mul(size_t a, size_t b, size_t *out)
{
    if (b && a > SIZE_MAX / b)
        return false;
    *out = a * b;
    return true;
}

static inline bool dmm_family_pow2(size_t a) { return a != 0 && (a & (a - 1u)) == 0; }

/* posix_memalign's rule: a power of two, a multiple of sizeof(void *). */
static inline bool dmm_family_posix_align_ok(size_t a) { return dmm_family_pow2(a) && a % sizeof(void *) == 0; }

/* memalign's rule: the next power of two at or above a (1 for 0); an
 * alignment above the largest power of two stays that power (the request
 * then fails for want of memory). */
static inline size_t dmm_family_norm_align(size_t a)
{
    size_t p = 1;
    while (p < a && p <= SIZE_MAX / 2u)
        p <<= 1;
    return p;
}

#endif

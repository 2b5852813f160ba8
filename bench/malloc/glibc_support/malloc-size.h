/*
 * bench/malloc/glibc_support/malloc-size.h - dmmkit's stand-in for glibc's
 * internal malloc/malloc-size.h, which tst-mallocalign1 reads: the
 * alignment every malloc result must have (the larger of two size_t and
 * the alignment of long double: 16 on x86_64 and aarch64) and its mask.
 * Not glibc code.
 */
#ifndef DMM_GLIBC_MALLOC_SIZE_H
#define DMM_GLIBC_MALLOC_SIZE_H

#include <stddef.h>

#define DMM_MAX_(a, b) ((a) > (b) ? (a) : (b))
#define MALLOC_ALIGNMENT DMM_MAX_(2 * sizeof(size_t), _Alignof(long double))
#define MALLOC_ALIGN_MASK (MALLOC_ALIGNMENT - 1)

#endif

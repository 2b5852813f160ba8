/*
 * bench/pool/vec_baselines.h - the two baselines the vector routines are
 * measured against, shared by bench/pool/vec_bench.c (time per call) and
 * bench/pool/vec_count.c (instructions per call under qemu-aarch64), so both
 * measure the same code: seed 003's scalar byte loop and glibc's
 * memset/memcpy called through volatile pointers.  Needs <stddef.h> and
 * <string.h>.
 */
#ifndef DMM_BENCH_VEC_BASELINES_H
#define DMM_BENCH_VEC_BASELINES_H

#include <stddef.h>
#include <string.h>

/* The seed's baseline: one byte per iteration, kept scalar and kept a loop
 * (GCC would otherwise vectorise it or replace it by a memset call). */
#if defined(__GNUC__) && !defined(__clang__)
#define SCALAR_FN __attribute__((noinline, optimize("no-tree-loop-distribute-patterns", "no-tree-vectorize")))
#define SCALAR_VOLATILE
#else
#define SCALAR_FN __attribute__((noinline))
#define SCALAR_VOLATILE volatile /* no way to forbid the libcall: volatile stores */
#endif

static SCALAR_FN void scalar_memset(void *dst, int c, size_t n)
{
    SCALAR_VOLATILE unsigned char *d = (SCALAR_VOLATILE unsigned char *)dst;
    for (size_t i = 0; i < n; i++)
        d[i] = (unsigned char)c;
}

static SCALAR_FN void scalar_memcpy(void *dst, const void *src, size_t n)
{
    SCALAR_VOLATILE unsigned char *d = (SCALAR_VOLATILE unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    for (size_t i = 0; i < n; i++)
        d[i] = s[i];
}

/* glibc through volatile pointers: a real call, never inlined or folded. */
static void *(*volatile libc_memset)(void *, int, size_t) = memset;
static void *(*volatile libc_memcpy)(void *, const void *, size_t) = memcpy;
static void glibc_memset(void *d, int c, size_t n)
{
    libc_memset(d, c, n);
}
static void glibc_memcpy(void *d, const void *s, size_t n)
{
    libc_memcpy(d, s, n);
}

#endif

/*
 * tests/replay/broken_malloc.c - a deliberately broken allocator for the
 * replay tests: an LD_PRELOAD library whose realloc, for one "magic" new
 * size (777 bytes, or $DMM_BROKEN_REALLOC_SIZE), returns a block whose first
 * byte differs from the old block's.  Every other call behaves like glibc.
 * dmm-replay --verify must catch it (exit 4, naming the operation).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static size_t magic_size(void)
{
    const char *e = getenv("DMM_BROKEN_REALLOC_SIZE");
    size_t v = e ? (size_t)strtoull(e, NULL, 10) : 0;
    return v ? v : 777u;
}

void *realloc(void *p, size_t n)
{
    unsigned char *q;
    if (!p || n != magic_size())
        return __libc_realloc(p, n);
    q = __libc_realloc(p, n);
    if (q)
        q[0] ^= 0x5a; /* the bug: one byte of the old contents is lost */
    return q;
}

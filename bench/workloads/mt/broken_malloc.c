/*
 * broken_malloc.c - a deliberately wrong malloc for LD_PRELOAD, used only by
 * the tests: it proves that the stress programs notice a broken allocator
 * (README.md here).  It wraps glibc's own functions (__libc_malloc and
 * friends, glibc-only, so CMake builds it only where they exist) and breaks
 * one promise, chosen by MT_BROKEN:
 *
 *   none     nothing (the wrapper alone must not disturb the programs)
 *   overlap  every 61st malloc of a size in [32, 4096] returns the block it
 *            returned last for that size, which the program may still use;
 *            free does nothing, so no block is ever really reused
 *   nozero   calloc returns memory filled with 0xa5
 *   nocopy   realloc returns a new block without copying the old contents
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

enum { MODE_UNSET = -1, MODE_NONE, MODE_OVERLAP, MODE_NOZERO, MODE_NOCOPY };

static atomic_int g_mode = MODE_UNSET;
static atomic_ulong g_calls;
#define OVERLAP_MIN 32
#define OVERLAP_MAX 4096
static _Atomic(void *) g_last[OVERLAP_MAX + 1];

static int mode(void)
{
    int m = atomic_load_explicit(&g_mode, memory_order_relaxed);
    if (m == MODE_UNSET) {
        const char *s = getenv("MT_BROKEN");
        m = MODE_NONE;
        if (s && !strcmp(s, "overlap"))
            m = MODE_OVERLAP;
        else if (s && !strcmp(s, "nozero"))
            m = MODE_NOZERO;
        else if (s && !strcmp(s, "nocopy"))
            m = MODE_NOCOPY;
        atomic_store(&g_mode, m);
    }
    return m;
}

void *malloc(size_t n)
{
    if (mode() == MODE_OVERLAP && n >= OVERLAP_MIN && n <= OVERLAP_MAX) {
        void *last = atomic_load(&g_last[n]);
        if (last && atomic_fetch_add(&g_calls, 1) % 61 == 60)
            return last;
        void *p = __libc_malloc(n);
        atomic_store(&g_last[n], p);
        return p;
    }
    return __libc_malloc(n);
}

void free(void *p)
{
    if (mode() == MODE_OVERLAP)
        return;
    __libc_free(p);
}

void *calloc(size_t n, size_t sz)
{
    if (mode() == MODE_NOZERO) {
        if (sz && n > (size_t)-1 / sz)
            return NULL;
        void *p = __libc_malloc(n * sz);
        if (p)
            memset(p, 0xa5, n * sz);
        return p;
    }
    return __libc_calloc(n, sz);
}

void *realloc(void *q, size_t n)
{
    if (mode() == MODE_NOCOPY && q && n) {
        void *p = __libc_malloc(n);
        if (p) {
            memset(p, 0x5a, n);
            __libc_free(q);
        }
        return p;
    }
    if (mode() == MODE_OVERLAP && q) {
        /* never free: copy into a fresh block, at most what q holds */
        size_t have = malloc_usable_size(q);
        void *p = __libc_malloc(n);
        if (p)
            memcpy(p, q, n < have ? n : have);
        return p;
    }
    return __libc_realloc(q, n);
}

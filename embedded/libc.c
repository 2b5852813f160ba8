/*
 * embedded/libc.c - the three C library functions libdmm_heap.a may call
 * (memcpy, memset, memmove; scripts/size_report.sh checks that it needs no
 * others).  Plain byte loops: the demo links no C library.
 * -fno-tree-loop-distribute-patterns (CMakeLists.txt) keeps GCC from
 * turning these loops back into calls to themselves.
 */
#include <stddef.h>

void *memcpy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--)
        *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d < s) {
        while (n--)
            *d++ = *s++;
    } else {
        while (n--)
            d[n] = s[n];
    }
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    unsigned char *d = dst;
    while (n--)
        *d++ = (unsigned char)c;
    return dst;
}

/* tools/spmcc/tests/hostalloc.h - memory allocated in a header: the pass
 * rewrites only the file it is given, so this malloc stays the C library's
 * and the main file's free of it must stay the C library's too (nested.c). */
#ifndef SPMCC_TEST_HOSTALLOC_H
#define SPMCC_TEST_HOSTALLOC_H
#include <stdlib.h>

static inline unsigned char *host_bytes(size_t n, unsigned seed)
{
    unsigned char *b = malloc(n ? n : 1);
    if (!b)
        exit(2);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed * 31u + i * 7u);
    return b;
}
#endif

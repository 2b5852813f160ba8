/*
 * tests/trace/mtrace_prog.c - a tiny program that logs a known sequence of
 * allocations with glibc's mtrace() (MALLOC_TRACE=<file>; glibc >= 2.34
 * also needs LD_PRELOAD=libc_malloc_debug.so.0).  test_trace_import.cpp
 * runs it, imports the log with dmm_trace_import_mtrace and compares the
 * result with the sequence below.  Built without sanitizers: an ASan
 * runtime would replace malloc and nothing would be logged.
 *
 *   mtrace_prog          the sequence in test_trace_import.cpp (kExpected)
 *   mtrace_prog fail     also a failed realloc and a failed malloc
 *
 * Exit code 0; the program writes nothing to stdout (stdio would allocate
 * its buffer while tracing).
 */
#define _GNU_SOURCE
#include <mcheck.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int fail = argc > 1 && strcmp(argv[1], "fail") == 0;
    void *v[8];
    void *p = NULL, *z;
    void *volatile keep;

    mtrace();
    v[0] = malloc(16);                    /* m 1 16 */
    v[1] = calloc(4, 8);                  /* m 2 32 (mtrace logs calloc as '+') */
    v[0] = realloc(v[0], 100);            /* r 1 100 */
    v[2] = realloc(NULL, 5);              /* m 3 5 */
    v[3] = aligned_alloc(64, 128);        /* m 4 128 */
    if (posix_memalign(&p, 32, 40) != 0)  /* m 5 40 */
        return 2;
    v[4] = p;
    if (fail) {
        size_t huge = SIZE_MAX / 2;
        keep = realloc(v[1], huge);       /* fails: "! old size", v[1] unchanged */
        keep = malloc(huge);              /* fails: "+ (nil) size" */
        (void)keep;
    }
    for (int i = 0; i < 5; i++)
        free(v[i]);                       /* f 1, f 2, f 3, f 4, f 5 */
    for (int i = 0; i < 8; i++)
        v[i] = malloc((size_t)(i + 1) * 24); /* m 6..13 (24, 48, ... 192) */
    z = realloc(v[7], 0);                 /* f 13 (realloc to 0 frees) */
    (void)z;
    for (int i = 6; i >= 0; i--)
        free(v[i]);                       /* f 12 .. f 6 */
    muntrace();
    return 0;
}

/*
 * tests/recorder/rec_known.c - a known sequence of allocation calls, every
 * API of the malloc family, for the recorder test to find in its trace.
 *
 * The sequence sits between two marker allocations (sizes REC_MARK_BEGIN and
 * REC_MARK_END) so that allocations made by the C library itself (stdio
 * buffers, the dynamic loader) can be told apart.  Nothing between the
 * markers uses stdio.  The program checks the results it gets (alignment,
 * errno, usable size) and exits non-zero on any surprise; the expected
 * trace is spelled out in test_recorder.cpp (KnownSequence).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REC_MARK_BEGIN 519889u
#define REC_MARK_END 519890u

/* glibc's own entry points: the recorder does not see these calls. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static int failures;
#define CHECK(c)                                                         \
    do {                                                                 \
        if (!(c)) {                                                      \
            failures++;                                                  \
            fprintf(stderr, "rec_known: line %d: %s\n", __LINE__, #c);   \
        }                                                                \
    } while (0)

static int aligned(const void *p, size_t a) { return ((uintptr_t)p % a) == 0; }

int main(void)
{
    /* volatile sizes keep the compiler from folding or warning about the
     * deliberate overflow cases */
    volatile size_t huge = SIZE_MAX, half = SIZE_MAX / 2;
    void *a, *b, *c = NULL, *d, *e, *f, *g, *h, *i, *u, *w, *x = NULL, *z, *m;
    long page = sysconf(_SC_PAGESIZE);
    int rc;

    m = malloc(REC_MARK_BEGIN);
    free(m);

    a = malloc(100);                       /* m A 100 */
    memset(a, 1, 100);
    b = calloc(10, 24);                    /* c B 240 (nmemb 10) */
    CHECK(b && ((unsigned char *)b)[239] == 0);
    a = realloc(a, 200);                   /* r A 200 */
    CHECK(a && ((unsigned char *)a)[99] == 1);
    a = realloc(a, 5000);                  /* r A 5000 */
    a = realloc(a, 50);                    /* r A 50 */
    CHECK(a && ((unsigned char *)a)[49] == 1);
    rc = posix_memalign(&c, 64, 300);      /* a C 300 align 64 posix_memalign */
    CHECK(rc == 0 && aligned(c, 64));
    d = aligned_alloc(128, 256);           /* a D 256 align 128 aligned_alloc */
    CHECK(d && aligned(d, 128));
    e = memalign(32, 100);                 /* a E 100 align 32 memalign */
    CHECK(e && aligned(e, 32));
    f = valloc(1000);                      /* a F 1000 align page valloc */
    CHECK(f && aligned(f, (size_t)page));
    g = pvalloc(5000);                     /* a G 5000 align page pvalloc */
    CHECK(g && aligned(g, (size_t)page));
    h = reallocarray(NULL, 10, 8);         /* m H 80 */
    h = reallocarray(h, 20, 8);            /* r H 160 */
    CHECK(h != NULL);
    errno = 0;
    /* through a volatile pointer: GCC would warn that h is used after a
     * reallocarray that (failing) leaves it valid */
    {
        void *(*volatile ra)(void *, size_t, size_t) = reallocarray;
        CHECK(ra(h, huge, 2) == NULL && errno == ENOMEM); /* nothing */
    }
    i = realloc(NULL, 64);                 /* m I 64 */
    CHECK(i != NULL);
    CHECK(realloc(i, 0) == NULL);          /* r I 0: the object ends */
    CHECK(malloc_usable_size(b) >= 240);   /* not an operation */
    CHECK(malloc_usable_size(NULL) == 0);
    errno = 0;
    CHECK(calloc(half, 4) == NULL && errno == ENOMEM); /* nothing */
    CHECK(posix_memalign(&x, 3, 10) == EINVAL);        /* nothing */
    CHECK(posix_memalign(&x, 4, 10) == EINVAL);        /* nothing: not a multiple of sizeof(void *) */
    free(NULL);                                        /* nothing */
    u = __libc_malloc(48);                 /* unknown to the recorder */
    CHECK(u != NULL);
    u = realloc(u, 4096);                  /* m U 4096 (fresh object) */
    CHECK(u != NULL);
    free(u);                               /* f U */
    z = malloc(0);                         /* m Z 0 */
    CHECK(z != NULL);
    free(z);                               /* f Z */
    w = memalign(48, 100);                 /* a W 100 align 64 memalign (rounded up) */
    CHECK(w && aligned(w, 64));
    free(w);                               /* f W */
    free(a);                               /* f A */
    free(b);                               /* f B */
    free(c);                               /* f C */
    free(d);                               /* f D */
    free(e);                               /* f E */
    free(f);                               /* f F */
    free(g);                               /* f G */
    free(h);                               /* f H */
    u = __libc_malloc(32);                 /* unknown */
    free(u);                               /* not recorded */

    m = malloc(REC_MARK_END);
    free(m);
    if (failures)
        fprintf(stderr, "rec_known: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}

/*
 * tests/annotate/vg_uaf.c - a small program on a dmm heap built with
 * DMM_ANNOTATE, run under Valgrind's memcheck by ctest:
 *
 *   vg_uaf uaf       reads a block after dmm_heap_free  -> "Invalid read"
 *   vg_uaf overflow  writes one byte past the request   -> "Invalid write"
 *   vg_uaf clean     the same work without the bugs     -> no error at all
 *
 * Without Valgrind every mode exits 0: the bugs stay inside the heap's own
 * buffer, so only the annotations can make them visible.
 */
#include <stdio.h>
#include <string.h>

#include "dmm/heap.h"

static unsigned char arena[256 * 1024];

static int work(dmm_heap *h, unsigned *sum)
{
    void *ps[64];
    unsigned i;
    memset(ps, 0, sizeof ps);
    for (i = 0; i < 64; i++) {
        size_t n = 8 + (i * 37) % 700;
        unsigned char *p = (i % 5 == 0) ? dmm_heap_calloc(h, n, 1)
                         : (i % 7 == 0) ? dmm_heap_aligned_alloc(h, 256, n)
                                        : dmm_heap_malloc(h, n);
        if (!p)
            return 1;
        memset(p, (int)i, n);
        ps[i] = p;
    }
    for (i = 0; i < 64; i += 2) {
        dmm_heap_free(h, ps[i]);
        ps[i] = NULL;
    }
    for (i = 1; i < 64; i += 4) {
        size_t old = 8 + (i * 37) % 700;
        unsigned char *q = dmm_heap_realloc(h, ps[i], old * 2 + 5);
        if (!q)
            return 1;
        *sum += q[old - 1];
        memset(q + old, 0x5A, old + 5);
        ps[i] = q;
    }
    for (i = 0; i < 64; i++) {
        if (ps[i]) {
            *sum += ((unsigned char *)ps[i])[0];
            dmm_heap_free(h, ps[i]);
        }
    }
    return dmm_heap_check(h, NULL) == DMM_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    dmm_heap *h = NULL;
    dmm_heap_config cfg = dmm_heap_default_config();
    unsigned sum = 0;
    volatile unsigned char *v;
    unsigned char *p;

    cfg.quick_max = 64; /* quick-list blocks are annotated too */
    if (dmm_heap_init(&h, arena, sizeof arena, &cfg) != DMM_OK) {
        fprintf(stderr, "vg_uaf: init failed\n");
        return 2;
    }
    if (work(h, &sum) != 0) {
        fprintf(stderr, "vg_uaf: heap work failed\n");
        return 2;
    }

    p = dmm_heap_malloc(h, 13);
    if (!p)
        return 2;
    memset(p, 7, 13);
    v = p;
    if (strcmp(mode, "overflow") == 0)
        v[13] = 1; /* one byte past the request */
    sum += v[12];
    {
        unsigned char *keep = dmm_heap_malloc(h, 100);
        unsigned char *q = dmm_heap_malloc(h, 100);
        if (!keep || !q)
            return 2;
        memset(q, 9, 100);
        memset(keep, 1, 100);
        dmm_heap_free(h, q);
        if (strcmp(mode, "uaf") == 0) {
            v = q;
            sum += v[40]; /* read after free */
        }
        dmm_heap_free(h, keep);
    }
    dmm_heap_free(h, p);
    if (dmm_heap_check(h, NULL) != DMM_OK) {
        fprintf(stderr, "vg_uaf: check failed\n");
        return 2;
    }
    dmm_heap_destroy(h);
    printf("vg_uaf %s: done (%u)\n", mode, sum);
    return 0;
}

/*
 * mt-cache-thrash and mt-cache-scratch - false sharing in the style of the
 * Hoard benchmarks cache-thrash and cache-scratch (README.md here).  One
 * source, built twice (CACHE_SCRATCH selects the second).
 *
 * cache-thrash (active false sharing): every thread repeatedly allocates a
 * small object, writes it many times, checks it and frees it.  The program
 * shares nothing between threads; an allocator that hands threads objects
 * on one cache line makes them fight over it.
 *
 * cache-scratch (passive false sharing): the main thread allocates one
 * small object per thread, back to back, and hands them out; each thread
 * frees the object it was given (a cross-thread free) and then does what
 * cache-thrash does.  An allocator that gives the freed object back to its
 * new owner's next malloc keeps the threads on the main thread's cache
 * lines.
 *
 * Checks: every object holds the value last written when it is freed,
 * calloc'd objects (every fourth) read as zero, the handed-out objects
 * arrive intact, and the counts balance.  The checksum does not depend on
 * the scheduling.
 */
#include "mt_common.h"

#ifdef CACHE_SCRATCH
#define NAME "cache-scratch"
#define ABOUT "Hoard cache-scratch-like passive false sharing: objects made by main, freed by the workers."
#else
#define NAME "cache-thrash"
#define ABOUT "Hoard cache-thrash-like active false sharing: small private objects written many times."
#endif

#define OBJ_SIZE 8 /* as in the originals: many objects per cache line */
#define REPS 500   /* writes to each object per iteration */

typedef struct thr {
    uint64_t id, iters;
    volatile uint64_t *given; /* cache-scratch: the object from main */
    uint64_t given_value;
    uint64_t allocs, frees, cross, sum;
} thr;

static void *run(void *arg)
{
    thr *t = arg;
    if (t->given) {
        if (*t->given != t->given_value)
            mt_fail(NAME ": the object main made for thread %" PRIu64 " holds %016" PRIx64 ", not %016" PRIx64,
                    t->id, *t->given, t->given_value);
        mt_free((void *)t->given);
        t->frees++;
        t->cross++;
    }
    for (uint64_t i = 0; i < t->iters; i++) {
        volatile uint64_t *o = (i & 3) == 0 ? mt_calloc(1, OBJ_SIZE) : mt_malloc(OBJ_SIZE);
        t->allocs++;
        uint64_t v = mt_mix(t->id * 0x100000001u + i);
        for (uint64_t r = 0; r < REPS; r++)
            *o = v + r;
        if (*o != v + REPS - 1)
            mt_fail(NAME ": thread %" PRIu64 " object %p holds %016" PRIx64 ", it wrote %016" PRIx64, t->id,
                    (void *)o, *o, v + REPS - 1);
        t->sum += mt_term(*o);
        mt_free((void *)o);
        t->frees++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    mt_opts o = mt_parse(argc, argv, NAME, ABOUT);
    size_t nt = (size_t)o.threads;
    thr *ts = mt_calloc(nt, sizeof *ts);
    pthread_t *th = mt_calloc(nt, sizeof *th);
    uint64_t allocs = 0, frees = 0, cross = 0, sum = mt_mix(o.seed);
    for (size_t i = 0; i < nt; i++) {
        ts[i].id = mt_mix(o.seed + i) | 1u; /* the seed only changes the values written */
        ts[i].iters = o.scale * 1000;
#ifdef CACHE_SCRATCH
        ts[i].given = mt_calloc(1, OBJ_SIZE);
        ts[i].given_value = mt_mix(ts[i].id);
        *ts[i].given = ts[i].given_value;
        sum += mt_term(ts[i].given_value);
        allocs++;
#endif
    }
    uint64_t wall = mt_run_all(th, nt, run, ts, sizeof ts[0]);
    for (size_t i = 0; i < nt; i++) {
        allocs += ts[i].allocs;
        frees += ts[i].frees;
        cross += ts[i].cross;
        sum += ts[i].sum;
    }
    if (allocs != frees)
        mt_fail(NAME ": %" PRIu64 " allocations but %" PRIu64 " frees", allocs, frees);
#ifdef CACHE_SCRATCH
    if (cross != nt)
        mt_fail(NAME ": %" PRIu64 " of %zu handed-out objects were freed by their thread", cross, nt);
#endif
    char extra[128];
    snprintf(extra, sizeof extra, "allocs=%" PRIu64 " cross_thread_frees=%" PRIu64 " writes=%" PRIu64, allocs, cross,
             (allocs - cross) * REPS);
    mt_report(&o, allocs + frees, wall, sum, extra);
    mt_free(th);
    mt_free(ts);
    return 0;
}

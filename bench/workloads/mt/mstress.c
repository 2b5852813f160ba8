/*
 * mt-mstress - server-like phases in the style of mimalloc-bench's mstress
 * (README.md here).  The run is a series of phases; each phase starts N
 * threads with unequal amounts of work (thread i does 1 + i % 3 shares).  A
 * thread allocates objects of power-of-two sizes (now and then a large one),
 * keeps them in a local set where they live for a while, frees random ones,
 * and swaps objects with a global transfer array shared by all threads: what
 * it takes out of the array was made by another thread, possibly in an
 * earlier phase (the long-lived objects), and it frees it.  After each phase
 * all threads exit and new ones start; the main thread empties the array at
 * the end.
 *
 * Checks: every object's pattern before its free; allocations and frees
 * balance; objects really move between threads (cross-thread frees, counted
 * by the objects' headers).  The checksum, a sum over every object made, does
 * not depend on the scheduling.
 */
#include "mt_common.h"

#define TRANSFER 1000
#define LOCAL 200
#define PHASES 6

typedef struct obj {
    void *p;
    size_t n;
} obj;

/* The transfer array: each entry is a pointer to an obj record (made with
 * malloc too) so that the size travels with the block. */
static _Atomic(obj *) g_transfer[TRANSFER];

typedef struct thr {
    uint64_t id, steps, phase;
    mt_rng rng;
    uint64_t allocs, frees, cross, sum;
} thr;

static obj *make(thr *t)
{
    size_t n;
    uint64_t r = mt_below(&t->rng, 64);
    if (r == 0)
        n = (size_t)8192 << mt_below(&t->rng, 5); /* 8 KiB .. 128 KiB, 1 in 64 */
    else
        n = (size_t)32 << mt_below(&t->rng, 6);   /* 32 .. 1024 B */
    uint64_t key = mt_next(&t->rng);
    obj *o = mt_malloc(sizeof *o);
    o->p = mt_malloc(n);
    o->n = n;
    mt_fill(o->p, n, key, t->id);
    t->sum += mt_term(key ^ n);
    t->allocs += 2;
    return o;
}

static void drop(thr *t, obj *o)
{
    mt_hdr h = mt_check_free(o->p, o->n, "mstress");
    if (h.owner != t->id)
        t->cross++;
    mt_free(o);
    t->frees += 2;
}

static void *run(void *arg)
{
    thr *t = arg;
    obj *local[LOCAL] = {0};
    for (uint64_t i = 0; i < t->steps; i++) {
        /* every draw happens whatever the array holds: the same seed makes the same objects */
        size_t k = (size_t)mt_below(&t->rng, LOCAL);
        int swap = i == 0 || mt_below(&t->rng, 8) == 0;
        size_t x = (size_t)mt_below(&t->rng, TRANSFER);
        if (local[k])
            drop(t, local[k]);
        local[k] = make(t);
        if (swap) {
            obj *got = atomic_exchange(&g_transfer[x], local[k]);
            local[k] = NULL;
            if (got)
                drop(t, got);
        }
    }
    /* half of what is left is freed here; the other half goes to the array */
    for (size_t k = 0; k < LOCAL; k++) {
        if (!local[k])
            continue;
        if (k & 1) {
            obj *got = atomic_exchange(&g_transfer[k * 7 % TRANSFER], local[k]);
            if (got)
                drop(t, got);
        } else {
            drop(t, local[k]);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    mt_opts o = mt_parse(argc, argv, "mstress",
                         "mstress-like phases: power-of-two sizes, objects migrating through a shared array, unequal threads.");
    size_t nt = (size_t)o.threads;
    thr *ts = mt_calloc(nt, sizeof *ts);
    pthread_t *th = mt_calloc(nt, sizeof *th);
    uint64_t allocs = 0, frees = 0, cross = 0, sum = 0, id = 1;
    for (size_t x = 0; x < TRANSFER; x++)
        atomic_init(&g_transfer[x], NULL);
    uint64_t t0 = mt_now_ns();
    for (uint64_t ph = 0; ph < PHASES; ph++) {
        for (size_t i = 0; i < nt; i++) {
            memset(&ts[i], 0, sizeof ts[i]);
            ts[i].id = id++;
            ts[i].phase = ph;
            ts[i].steps = o.scale * 60 * (1 + i % 3);
            ts[i].rng = mt_rng_make(o.seed, ph * 1000 + i);
            mt_spawn(&th[i], run, &ts[i]);
        }
        for (size_t i = 0; i < nt; i++) {
            mt_join(th[i]);
            allocs += ts[i].allocs;
            frees += ts[i].frees;
            cross += ts[i].cross;
            sum += ts[i].sum;
        }
    }
    /* the main thread (owner 0 made nothing) frees what the array still holds */
    thr m = {0};
    for (size_t x = 0; x < TRANSFER; x++) {
        obj *got = atomic_exchange(&g_transfer[x], NULL);
        if (got)
            drop(&m, got);
    }
    uint64_t wall = mt_now_ns() - t0;
    frees += m.frees;
    cross += m.cross;
    if (allocs != frees)
        mt_fail("mstress: %" PRIu64 " allocations but %" PRIu64 " frees", allocs, frees);
    if (m.frees == 0 || cross < m.frees / 2)
        mt_fail("mstress: %" PRIu64 " cross-thread frees (%" PRIu64 " objects left for main): objects did not move",
                cross, m.frees / 2);
    char extra[128];
    snprintf(extra, sizeof extra, "allocs=%" PRIu64 " cross_thread_frees=%" PRIu64, allocs, cross);
    mt_report(&o, allocs + frees, wall, sum, extra);
    mt_free(th);
    mt_free(ts);
    return 0;
}

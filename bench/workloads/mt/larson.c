/*
 * mt-larson - a server-like workload in the style of Larson and Krishnan's
 * benchmark (README.md here).  Each of the N "connections" owns an array of
 * slots holding live blocks.  A worker thread repeatedly picks a random slot,
 * checks and frees its block, and allocates a block of a random size in its
 * place.  After every round the workers exit and new threads take over the
 * arrays, rotated by one, so most blocks are freed by a thread other than
 * the one that allocated them (as in the original, where each thread's
 * successor inherits its objects).
 *
 * Every free checks the block's pattern; at the end the program checks that
 * allocations and frees balance and that the cross-thread frees happened.
 * Each array carries its own PRNG, so the checksum depends on the seed, the
 * scale and the thread count only, never on the scheduling.
 */
#include "mt_common.h"

#define SLOTS 500
#define MIN_SIZE 32
#define MAX_SIZE 512

typedef struct conn {
    mt_rng rng;
    size_t size[SLOTS];
    void *slot[SLOTS];
    uint64_t owner[SLOTS]; /* who allocated slot[k], kept outside the heap */
    uint64_t serial;
    uint64_t sum;
} conn;

typedef struct worker {
    conn *c;
    uint64_t id;        /* unique over all rounds */
    uint64_t ops;
    uint64_t allocs, frees, remote_frees, expect_remote;
} worker;

static uint64_t g_steps;

static void *work(void *arg)
{
    worker *w = arg;
    conn *c = w->c;
    for (uint64_t i = 0; i < g_steps; i++) {
        size_t k = (size_t)mt_below(&c->rng, SLOTS);
        mt_hdr h = mt_check_free(c->slot[k], c->size[k], "larson");
        w->frees++;
        if (h.owner != w->id)
            w->remote_frees++;
        if (c->owner[k] != w->id)
            w->expect_remote++;
        size_t n = mt_range(&c->rng, MIN_SIZE, MAX_SIZE);
        uint64_t key = mt_next(&c->rng) ^ c->serial++;
        void *p;
        /* mostly malloc; every 16th a calloc, every 64th a realloc of a fresh block */
        if ((key & 15) == 0) {
            p = mt_calloc(1, n);
        } else if ((key & 63) == 1) {
            p = mt_malloc(MIN_SIZE);
            mt_fill(p, MIN_SIZE, key, w->id);
            p = mt_realloc(p, n);
            mt_check(p, MIN_SIZE, "larson realloc (contents kept)");
        } else {
            p = mt_malloc(n);
        }
        mt_fill(p, n, key, w->id);
        w->allocs++;
        c->slot[k] = p;
        c->size[k] = n;
        c->owner[k] = w->id;
        c->sum += mt_term(key ^ n);
        w->ops += 2;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    mt_opts o = mt_parse(argc, argv, "larson",
                         "Larson-like server: random slot replacement, objects inherited by the next round's threads.");
    const uint64_t rounds = 8;
    g_steps = o.scale * 250;
    size_t nt = (size_t)o.threads;
    conn *cs = mt_calloc(nt, sizeof *cs);
    worker *ws = mt_calloc(nt, sizeof *ws);
    pthread_t *th = mt_calloc(nt, sizeof *th);
    uint64_t allocs = 0, frees = 0, remote = 0, expect_remote = 0, ops = 0;

    /* the main thread (owner id 0) fills the arrays; workers are 1, 2, ... */
    for (size_t i = 0; i < nt; i++) {
        cs[i].rng = mt_rng_make(o.seed, i);
        for (size_t k = 0; k < SLOTS; k++) {
            size_t n = mt_range(&cs[i].rng, MIN_SIZE, MAX_SIZE);
            uint64_t key = mt_next(&cs[i].rng) ^ cs[i].serial++;
            cs[i].slot[k] = mt_malloc(n);
            cs[i].size[k] = n;
            mt_fill(cs[i].slot[k], n, key, 0);
            cs[i].sum += mt_term(key ^ n);
            allocs++;
        }
    }
    uint64_t t0 = mt_now_ns();
    uint64_t next_id = 1;
    for (uint64_t r = 0; r < rounds; r++) {
        for (size_t i = 0; i < nt; i++) {
            memset(&ws[i], 0, sizeof ws[i]);
            ws[i].c = &cs[(i + r) % nt];
            ws[i].id = next_id++;
            mt_spawn(&th[i], work, &ws[i]);
        }
        for (size_t i = 0; i < nt; i++) {
            mt_join(th[i]);
            allocs += ws[i].allocs;
            frees += ws[i].frees;
            remote += ws[i].remote_frees;
            expect_remote += ws[i].expect_remote;
            ops += ws[i].ops;
        }
    }
    uint64_t wall = mt_now_ns() - t0;
    uint64_t sum = 0;
    for (size_t i = 0; i < nt; i++) {
        for (size_t k = 0; k < SLOTS; k++) {
            mt_hdr h = mt_check_free(cs[i].slot[k], cs[i].size[k], "larson cleanup");
            frees++;
            if (h.owner != 0)
                remote++; /* made by a worker, freed by the main thread */
            if (cs[i].owner[k] != 0)
                expect_remote++;
        }
        sum = mt_sum(sum, cs[i].sum);
    }
    if (allocs != frees)
        mt_fail("larson: %" PRIu64 " allocations but %" PRIu64 " frees", allocs, frees);
    /* The owners recorded in the blocks' headers must agree with the ones
     * the program kept outside the heap, and blocks must have changed hands. */
    if (remote != expect_remote)
        mt_fail("larson: %" PRIu64 " cross-thread frees by the blocks' headers, %" PRIu64 " by the program's records",
                remote, expect_remote);
    if (remote == 0)
        mt_fail("larson: no block was freed by another thread");
    char extra[128];
    snprintf(extra, sizeof extra, "allocs=%" PRIu64 " cross_thread_frees=%" PRIu64, allocs, remote);
    mt_report(&o, ops, wall, sum, extra);
    mt_free(th);
    mt_free(ws);
    mt_free(cs);
    return 0;
}

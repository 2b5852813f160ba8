/*
 * src/heap/engine/alloc.h - allocation: where a block comes from (quick
 * lists, bins, the top, a flush and sweep, growth), the poison check, and
 * handing the block out.  Engine part (see variant.h).
 */
#ifndef DMM_ENGINE_ALLOC_H
#define DMM_ENGINE_ALLOC_H

#include "../../port/annotate.h"
#include "fit.h"
#include "release.h"

/* Hands b (unlinked, state bits clear or used) out for a request of req
 * bytes needing a block of s bytes: splits the tail off, marks it used,
 * writes the tail words.  `fresh` says b came from obtain as it is (a
 * listed block, the top or a quick list), so that the tail cannot merge
 * with anything unless coalesce_max left a free neighbour beside b. */
/* The last step of every allocation: used block b of bs bytes goes out
 * for req bytes (request slot, canary, counters, annotation). */
static DMM_ALWAYS_INLINE void *finish_used(dmm_heap *h, blk *b, size_t bs, size_t req)
{
    void *p = bpayload(b);
    if (P_STATS(h) == DMM_STATS_FULL)
        *req_slot(h, b) = req;
    if (P_HARDEN(h) >= DMM_HARDEN_CANARY)
        *canary_slot(b) = canary_of(h, b);
    st_add_live(h, bs, req);
    dmm_ann_alloc(p, req, (char *)bnext(b) + WORD);
    return p;
}

static DMM_ALWAYS_INLINE void *finish_alloc(dmm_heap *h, blk *b, size_t s, size_t req, bool fresh)
{
    size_t bs = bsize(b);
    bool was_victim = P_VICTIM(h) && b == VICTIM(h);
    if (was_victim)
        VICTIM(h) = NULL;
    if (P_SPLIT(h) && bs - s >= h->split_min) {
        b->head = s | F_USED | (b->head & F_PUSED); /* before the remainder is released: no merge back */
        if (fresh && (P_COALESCE(h) != DMM_COALESCE_IMMEDIATE || h->cfg.coalesce_max == 0)) {
            /* victim=on: the remainder split off the victim, or off a block
             * a small request took from a larger bin, is the next victim */
            release_split(h, bat(b, s), bs - s, P_VICTIM(h) && (was_victim || s < B_LIN_MAX(h)));
        } else {
            blk *rem = bat(b, s);
            rem->head = (bs - s) | F_PUSED;
            release_block(h, rem, (char *)bpayload(rem) + LINKS);
        }
        bs = s;
    } else if (!bused(b)) {
        mark_used(b); /* a carved or quick block is used already */
    }
    return finish_used(h, b, bs, req);
}

/* With poisoning: is the part of b's payload a request of req bytes will
 * see still the pattern?  If not, the write after free is reported, the
 * block is cleaned and given back, and the caller looks again: a damaged
 * block is never handed out. */
static inline bool poison_intact(dmm_heap *h, blk *b, size_t req)
{
    size_t cap = bsize(b) - WORD;
    size_t n = req < cap ? req : cap;
    const unsigned char *q = (const unsigned char *)bpayload(b) + LINKS;
    const unsigned char *e = (const unsigned char *)bnext(b);
    if (n > LINKS && q + dmm_align_up(n - LINKS, WORD) < e)
        e = q + dmm_align_up(n - LINKS, WORD);
    else if (n <= LINKS)
        e = q;
    if ((q = poison_mismatch(q, e)) == NULL)
        return true;
    dmm__heap_report(h, DMM_ERR_POISON, q, "freed memory was written after free (block withheld)");
    if (P_VICTIM(h) && b == VICTIM(h))
        VICTIM(h) = NULL; /* it goes to its bin below */
    b->head &= ~F_STATE;
    poison_fill(h, (char *)bpayload(b) + LINKS, bnext(b));
    release_block(h, b, (char *)bnext(b));
    return false;
}

/* The usual sources of a block of s bytes: an exact quick list, the bins,
 * the top.  NULL if none has one.  quick_ok is false for an aligned request
 * only (it carves its block before finish_alloc). */
/* With no listed block at all (the bitmap's summary word is zero: the
 * checker holds every bit to its bin's emptiness, invariant "bitmap") the
 * search of the bins cannot find one and is skipped: the block comes from
 * the top, as after a failed search.  That is the common case of a program
 * that allocates everything before it frees (seed 001's kernels).  With the
 * designated victim only while there is none (it lies outside the bins, and
 * the full path would carve it before the top); not for org=addrtree (no
 * bitmap), and not at stats=full (its search_steps count the failed
 * look-up). */
#define OBTAIN_NO_LISTED(h)                                                                                   \
    ((!P_VICTIM(h) || !VICTIM(h)) && P_ORG(h) != DMM_ORG_ADDRTREE && P_STATS(h) != DMM_STATS_FULL &&          \
     (h)->summary == 0)

static DMM_ALWAYS_INLINE blk *obtain_fast(dmm_heap *h, size_t s, bool quick_ok)
{
    blk *b = NULL;
    if (P_QUICK(h) && quick_ok)
        b = quick_pop(h, s);
    if (!b && !OBTAIN_NO_LISTED(h))
        b = take_block(h, s, quick_ok);
    if (!b)
        b = carve_top(h, s);
    return b;
}

/* The slow path of obtain: a quick-list flush plus deferred sweep, growth,
 * and the poison check with its retry.  `b` is what the fast path found.
 * OBTAIN_SLOW_HAS_WORK(h, b): is there anything for it to do?  The poison
 * check, or, when the fast path found nothing, one of the sources above
 * (a frozen build without any has no slow path: no call to an empty
 * function; Cortex-M4 -Os, lean tlsf: the tail call and its two-byte
 * body). */
#define OBTAIN_SLOW_HAS_WORK(h, b)                                                                            \
    (P_POISON(h) ||                                                                                          \
     (!(b) && (P_QUICK(h) || P_COALESCE(h) == DMM_COALESCE_DEFERRED || P_GROW(h))))
static DMM_NOINLINE blk *obtain_slow(dmm_heap *h, blk *b, size_t s, size_t req, bool quick_ok)
{
    for (;;) {
        if (!b) {
            bool retry = P_QUICK(h) && quick_flush(h);
            if (P_COALESCE(h) == DMM_COALESCE_DEFERRED) {
                sweep(h);
                retry = true;
            }
            if (retry && !(b = take_block(h, s, quick_ok)))
                b = carve_top(h, s);
        }
        if (!b && P_GROW(h) && dmm__region_grow(h, s) && !(b = take_block(h, s, quick_ok)))
            b = carve_top(h, s);
        if (!b || !P_POISON(h) || poison_intact(h, b, req))
            return b;
        b = obtain_fast(h, s, quick_ok); /* the damaged block was withheld */
    }
}

/* Finds a block of s bytes: the fast path inlined, the rest out of line. */
static DMM_ALWAYS_INLINE blk *obtain(dmm_heap *h, size_t s, size_t req, bool quick_ok)
{
    blk *b = obtain_fast(h, s, quick_ok);
    if (DMM_UNLIKELY(OBTAIN_SLOW_HAS_WORK(h, b)))
        b = obtain_slow(h, b, s, req, quick_ok);
    return b;
}

/* quick_ok false: the request's quick list is known to be empty.  s is
 * req2size(h, req), computed by the caller. */
static DMM_ALWAYS_INLINE void *alloc_locked_s(dmm_heap *h, size_t req, size_t s, bool quick_ok)
{
    blk *b;
    if (DMM_UNLIKELY(!s) || DMM_UNLIKELY(!(b = obtain(h, s, req, quick_ok)))) {
        st_failed(h);
        return NULL;
    }
    COUNT_OP(h, malloc_count);
    return finish_alloc(h, b, s, req, true);
}
static DMM_ALWAYS_INLINE void *alloc_locked(dmm_heap *h, size_t req, bool quick_ok)
{
    return alloc_locked_s(h, req, req2size(h, req), quick_ok);
}

static inline void *aligned_locked(dmm_heap *h, size_t align, size_t req)
{
    size_t s, want;
    blk *b;
    char *p;
    if (!dmm_is_pow2(align) || align > (SIZE_MAX >> 2)) {
        st_failed(h);
        return NULL;
    }
    if (align <= GRAN) {
        void *p0 = alloc_locked(h, req, true);
        if (p0)
            COUNT_OP(h, aligned_count);
        return p0;
    }
    s = req2size(h, req);
    if (!s || s > SIZE_MAX - align - MINB) {
        st_failed(h);
        return NULL;
    }
    want = s + align + MINB;
    if (!(b = obtain(h, want, req, false))) {
        st_failed(h);
        return NULL;
    }
    if (P_VICTIM(h) && b == VICTIM(h))
        VICTIM(h) = NULL; /* carved below like any block: its gap and tail go to the bins */
    p = (char *)bpayload(b);
    if ((uintptr_t)p & (align - 1u)) {
        char *q = (char *)dmm_align_up_ptr((uintptr_t)p + MINB, align);
        blk *nb = bfrom(q);
        size_t gap = (size_t)((char *)nb - (char *)b);
        size_t bs = bsize(b);
        nb->head = (bs - gap) | F_USED; /* keeps the gap from merging forward */
        b->head = gap | (b->head & F_PUSED);
        release_block(h, b, (char *)bpayload(b) + LINKS);
        nb->head = bs - gap; /* free state, F_PUSED clear: the gap before it is free */
        b = nb;
    }
    if (COUNTING(h)) {
        h->st.malloc_count++;
        h->st.aligned_count++;
    }
    return finish_alloc(h, b, s, req, false);
}

#endif

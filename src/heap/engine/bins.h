/*
 * src/heap/engine/bins.h - statistics counters, the bin mapping, the bin
 * bitmap and the free lists (with safe-linking).  Engine part: compiled in
 * every variant translation unit with that variant's policy constants.
 */
#ifndef DMM_ENGINE_BINS_H
#define DMM_ENGINE_BINS_H

#include "../policy.h"

/* ---- counters (nothing is written when stats are off) ---- */

static inline void st_add_live(dmm_heap *h, size_t bs, size_t req)
{
    if (!COUNTING(h))
        return;
    h->st.live_count++;
    h->st.live_block_bytes += bs;
    if (h->st.live_block_bytes > h->st.peak_block_bytes)
        h->st.peak_block_bytes = h->st.live_block_bytes;
    if (P_STATS(h) == DMM_STATS_FULL) {
        unsigned i = req ? dmm_log2_floor(req) + 1u : 0u;
        h->st.live_requested += req;
        if (h->st.live_requested > h->st.peak_requested)
            h->st.peak_requested = h->st.live_requested;
        h->st.size_hist[i < DMM_HEAP_HIST_BUCKETS ? i : DMM_HEAP_HIST_BUCKETS - 1u]++;
    }
}

static inline void st_sub_live(dmm_heap *h, size_t bs, size_t req)
{
    if (!COUNTING(h))
        return;
    h->st.live_count--;
    h->st.live_block_bytes -= bs;
    if (P_STATS(h) == DMM_STATS_FULL)
        h->st.live_requested -= req;
}

static inline void st_failed(dmm_heap *h)
{
    if (COUNTING(h))
        h->st.failed_count++;
}

static inline void st_steps(dmm_heap *h, uint64_t steps)
{
    if (!COUNTING(h))
        return;
    h->st.search_steps += steps;
    if (steps > h->st.search_max)
        h->st.search_max = steps;
}

#define COUNT_OP(h, field)                                                                                   \
    do {                                                                                                     \
        if (COUNTING(h))                                                                                     \
            (h)->st.field++;                                                                                 \
    } while (0)

static inline size_t requested_of(const dmm_heap *h, const blk *b)
{
    return P_STATS(h) == DMM_STATS_FULL ? *req_slot(h, b) : 0;
}

static inline size_t req2size(const dmm_heap *h, size_t req) { return req2size_tail(req, h->tail_bytes); }

/* ---- the bin mapping ---- */

/* Bin index of a block size (clamped to the last bin). */
static inline unsigned bin_of(const dmm_heap *h, size_t s)
{
    unsigned i;
    if (P_ORG(h) == DMM_ORG_SINGLE)
        return 0;
    if (s < B_LIN_MAX(h)) {
        i = (unsigned)(s / GRAN);
    } else {
        unsigned fl = dmm_log2_floor(s);
        unsigned sl = (unsigned)((s >> (fl - B_SUB(h))) & (((size_t)1 << B_SUB(h)) - 1u));
        i = B_LIN_BINS(h) + ((fl - B_LIN_LOG2(h)) << B_SUB(h)) + sl;
    }
    return i < h->nbins ? i : h->nbins - 1u;
}

/* First bin all of whose blocks are >= s (good fit). */
static inline unsigned bin_of_roundup(const dmm_heap *h, size_t s)
{
    if (s >= B_LIN_MAX(h)) {
        unsigned fl = dmm_log2_floor(s);
        size_t w = (size_t)1 << (fl - B_SUB(h));
        if (s <= SIZE_MAX - w)
            s += w - 1u;
    }
    return bin_of(h, s);
}

/* ---- bitmap over bins: one bit per bin, one summary bit per word ---- */

static inline void bm_set(dmm_heap *h, unsigned i)
{
    DMM_ASSERT(i < h->nbins);
    h->bitmap[i / DMM_WORD_BITS] |= (size_t)1 << (i % DMM_WORD_BITS);
    h->summary |= (size_t)1 << (i / DMM_WORD_BITS);
}

static inline void bm_clear(dmm_heap *h, unsigned i)
{
    unsigned w = (unsigned)(i / DMM_WORD_BITS);
    h->bitmap[w] &= ~((size_t)1 << (i % DMM_WORD_BITS));
    if (!h->bitmap[w])
        h->summary &= ~((size_t)1 << w);
}

/* Smallest non-empty bin >= i, or -1. */
static inline int bm_find(const dmm_heap *h, unsigned i)
{
    unsigned w;
    size_t m, s;
    if (i >= h->nbins)
        return -1;
    w = (unsigned)(i / DMM_WORD_BITS);
    m = h->bitmap[w] & (~(size_t)0 << (i % DMM_WORD_BITS));
    if (m)
        return (int)(w * DMM_WORD_BITS + dmm_ctz(m));
    if (w + 1u >= DMM_WORD_BITS)
        return -1;
    s = h->summary & (~(size_t)0 << (w + 1u));
    if (!s)
        return -1;
    w = dmm_ctz(s);
    return (int)(w * DMM_WORD_BITS + dmm_ctz(h->bitmap[w]));
}

/* ---- links: encoded from CHECKED up ----
 * A link slot in block b holding target x (NULL stored as b itself, so no
 * slot ever holds a known constant) keeps rotl(x ^ key2, key) + key: a
 * stored link does not give the keys away (a plain XOR would: a list
 * tail's NULL link is the key), and a forged link decodes to garbage
 * unless its writer knows both keys.  A link naming its own block reads as
 * NULL, so a self-loop cannot hand a block out twice. */
#define LINK_BITS (sizeof(uintptr_t) * 8u)
static inline uintptr_t rotl_w(uintptr_t x, unsigned r)
{
    r &= LINK_BITS - 1u;
    return r ? (x << r) | (x >> (LINK_BITS - r)) : x;
}
static inline uintptr_t rotr_w(uintptr_t x, unsigned r)
{
    r &= LINK_BITS - 1u;
    return r ? (x >> r) | (x << (LINK_BITS - r)) : x;
}
static inline blk *ldecode(const dmm_heap *h, const blk *b, blk *e)
{
    uintptr_t x;
    if (!HARDENED(h))
        return e;
    x = rotr_w((uintptr_t)e - h->link_key, (unsigned)h->link_key) ^ h->link_key2;
    return x == (uintptr_t)b ? NULL : (blk *)x;
}
static inline blk *lencode(const dmm_heap *h, const blk *b, blk *v)
{
    if (!HARDENED(h))
        return v;
    return (blk *)(rotl_w((uintptr_t)(v ? v : b) ^ h->link_key2, (unsigned)h->link_key) + h->link_key);
}
static inline blk *get_next(const dmm_heap *h, const blk *b) { return ldecode(h, b, *lnext(b)); }
static inline blk *get_prev(const dmm_heap *h, const blk *b) { return ldecode(h, b, *lprev(b)); }
static inline void set_next(const dmm_heap *h, blk *b, blk *v) { *lnext(b) = lencode(h, b, v); }
static inline void set_prev(const dmm_heap *h, blk *b, blk *v) { *lprev(b) = lencode(h, b, v); }

/* Is c a plausible node of a list whose blocks have state bits `want`
 * (0: bin list, F_STATE: quick list)?  Reads c's header only after c was
 * found inside a region. */
static inline bool node_ok(dmm_heap *h, const blk *c, size_t want)
{
    const blk *sen;
    size_t hd;
    if (!(sen = block_room(h, c)))
        return false;
    hd = c->head;
    return (hd & F_STATE) == want && (hd & ~F_MASK) >= MINB && (hd & ~F_MASK) <= (size_t)((const char *)sen - (const char *)c);
}

/* Is c safe to read as a block: granule-aligned, inside a region, with
 * room for a header before the region's sentinel?  One compare in the
 * region of the last look-up. */
static inline bool node_in_heap(dmm_heap *h, const blk *c)
{
    return DMM_LIKELY(in_hint(h, c)) || block_room_slow(h, c) != NULL;
}

/* The list successor of c, checked before anyone follows it when the heap
 * is hardened.  A bad link is reported and the list is cut at c (the
 * blocks behind it are lost to the lists, none is handed out).
 *   follow_scan: nx must lie where a block can (node_in_heap): enough to
 *       read it while a search walks on; the block a search finally takes
 *       gets the full check in take_block.
 *   follow: nx must also be a block of the list's kind (node_ok).  Used
 *       where nx becomes a list head, so that a head is always trusted. */
static DMM_ALWAYS_INLINE blk *follow_check(dmm_heap *h, blk *c, size_t want, blk **tail, bool full)
{
    blk *nx = get_next(h, c);
    if (HARDENED(h) && nx && DMM_UNLIKELY(full ? !node_ok(h, nx, want) : !node_in_heap(h, nx))) {
        dmm__heap_report(h, DMM_ERR_FREE_LIST, c, "a free-list link was overwritten (use after free?)");
        set_next(h, c, NULL);
        if (tail)
            *tail = c;
        nx = NULL;
    }
    return nx;
}
static DMM_ALWAYS_INLINE blk *follow(dmm_heap *h, blk *c, size_t want, blk **tail)
{
    return follow_check(h, c, want, tail, true);
}
static DMM_ALWAYS_INLINE blk *follow_scan(dmm_heap *h, blk *c, blk **tail)
{
    return follow_check(h, c, 0, tail, false);
}

/* Most free blocks the heap's regions could hold: no list is longer. */
static inline size_t max_nodes(const dmm_heap *h) { return h->st.footprint / MINB; }

/* A walk that has visited more nodes than the heap can hold free blocks is
 * going round a forged cycle: report it and cut the list at c (hardened
 * heaps only; returns true when it cut). */
static inline bool walk_too_long(dmm_heap *h, uint64_t steps, uint64_t lim, blk *c, blk **tail)
{
    if (!HARDENED(h) || DMM_LIKELY(steps <= lim))
        return false;
    dmm__heap_report(h, DMM_ERR_FREE_LIST, c, "a free list runs in a cycle (link overwritten)");
    set_next(h, c, NULL);
    if (tail)
        *tail = c;
    return true;
}

static inline blk **tail_of(dmm_heap *h, unsigned n)
{
    return P_ORDER(h) == DMM_ORDER_FIFO ? &h->tails[n] : NULL;
}

/* org=addrtree: the free blocks live in two address trees, not in lists */
#include "addrtree.h"

/* ---- lists ---- */

/* Link b after pred (NULL: at the head) in bin n. */
static inline void list_insert_after(dmm_heap *h, unsigned n, blk *pred, blk *b)
{
    DMM_ASSERT(blisted(b) && n < h->nbins);
    DMM_ASSERT_LOCAL(bnext(b)->foot == bsize(b) && !bpused(bnext(b)));
    blk *nx = pred ? follow(h, pred, 0, tail_of(h, n)) : h->heads[n];
    if (DOUBLY(h) && HARDENED(h) && nx && DMM_UNLIKELY(get_prev(h, nx) != pred)) {
        dmm__heap_report(h, DMM_ERR_FREE_LIST, nx, "a free list's back link was overwritten (use after free?)");
        nx = NULL; /* cut: nothing is written through the bad link */
    }
    set_next(h, b, nx);
    if (DOUBLY(h)) {
        set_prev(h, b, pred);
        if (nx)
            set_prev(h, nx, b);
    }
    if (pred)
        set_next(h, pred, b);
    else
        h->heads[n] = b;
    if (P_ORDER(h) == DMM_ORDER_FIFO && !nx)
        h->tails[n] = b;
    bm_set(h, n);
}

/* Insert free block b into its bin, honouring the ordering policy. */
static inline void bin_insert(dmm_heap *h, blk *b)
{
    if (P_ORG(h) == DMM_ORG_ADDRTREE) {
        at_insert(h, b);
        return;
    }
    unsigned n = bin_of(h, bsize(b));
    blk *pred = NULL, *c;
    switch (P_ORDER(h)) {
    case DMM_ORDER_LIFO:
        break;
    case DMM_ORDER_FIFO:
        pred = h->tails[n];
        break;
    case DMM_ORDER_ADDRESS: {
        uint64_t k = 0;
        const uint64_t lim = max_nodes(h);
        for (c = h->heads[n]; c && c < b && !walk_too_long(h, ++k, lim, c, tail_of(h, n));
             c = follow_scan(h, c, tail_of(h, n)))
            pred = c;
        break;
    }
    case DMM_ORDER_SIZE: {
        size_t s = bsize(b);
        uint64_t k = 0;
        const uint64_t lim = max_nodes(h);
        for (c = h->heads[n]; c && bsize(c) <= s && !walk_too_long(h, ++k, lim, c, tail_of(h, n));
             c = follow_scan(h, c, tail_of(h, n)))
            pred = c;
        break;
    }
    }
    list_insert_after(h, n, pred, b);
}

/* Unlink b from bin n given its list predecessor (NULL: b is the head). */
static inline void list_remove(dmm_heap *h, unsigned n, blk *pred, blk *b)
{
    DMM_ASSERT(pred ? get_next(h, pred) == b : h->heads[n] == b);
    blk *nx = follow(h, b, 0, tail_of(h, n));
    if (DOUBLY(h) && HARDENED(h) && nx && get_prev(h, nx) != b) {
        dmm__heap_report(h, DMM_ERR_FREE_LIST, nx, "a free list's back link was overwritten (use after free?)");
        nx = NULL; /* cut: the rest of the list is dropped, not followed */
        if (P_ORDER(h) == DMM_ORDER_FIFO)
            h->tails[n] = b;
    }
    if (pred)
        set_next(h, pred, nx);
    else
        h->heads[n] = nx;
    if (DOUBLY(h) && nx)
        set_prev(h, nx, pred);
    if (P_ORDER(h) == DMM_ORDER_FIFO && h->tails[n] == b)
        h->tails[n] = pred;
    if (!h->heads[n])
        bm_clear(h, n);
    if (P_FIT(h) == DMM_FIT_NEXT && h->rover == b)
        h->rover = nx;
}

/* Unlink an arbitrary free block: O(1) doubly, a walk of its bin singly.
 * Returns false (after a report) when the lists around b do not agree with
 * it; b then stays where it is and the caller must leave it alone. */
static inline bool bin_remove(dmm_heap *h, blk *b)
{
    if (P_ORG(h) == DMM_ORG_ADDRTREE)
        return at_remove(h, b);
    unsigned n = bin_of(h, bsize(b));
    blk *pred;
    if (DOUBLY(h)) {
        pred = get_prev(h, b);
        if (HARDENED(h) && (pred ? !node_ok(h, pred, 0) || get_next(h, pred) != b : h->heads[n] != b)) {
            dmm__heap_report(h, DMM_ERR_FREE_LIST, b, "a free block's list links were overwritten (use after free?)");
            return false;
        }
    } else {
        uint64_t steps = 0;
        const uint64_t lim = max_nodes(h);
        blk *c = h->heads[n];
        pred = NULL;
        while (c != b) {
            if (!c) {
                dmm__heap_report(h, DMM_ERR_FREE_LIST, b, "a free block is missing from its list (link overwritten?)");
                st_steps(h, steps);
                return false;
            }
            pred = c;
            if (walk_too_long(h, ++steps, lim, c, tail_of(h, n))) {
                st_steps(h, steps);
                return false;
            }
            c = follow_scan(h, c, tail_of(h, n));
        }
        st_steps(h, steps);
    }
    list_remove(h, n, pred, b);
    return true;
}

#endif

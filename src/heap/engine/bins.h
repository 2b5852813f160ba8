/*
 * src/heap/engine/bins.h - statistics counters, the bin mapping, the bin
 * bitmap and the free lists (with safe-linking).  Engine part: compiled in
 * every variant translation unit with that variant's policy constants.
 */
#ifndef DMM_ENGINE_BINS_H
#define DMM_ENGINE_BINS_H

#include "../policy.h"

/* ---- counters (nothing is written when stats are off) ----
 * stats=counters keeps, per operation, its count (malloc_count, ...), the
 * live block bytes and their peak: a few adds and one compare.  The live
 * block count is derived when read (mallocs - frees: snapshot in check.c);
 * search steps are counted from stats=full up. */

static DMM_ALWAYS_INLINE void st_add_live(dmm_heap *h, size_t bs, size_t req)
{
    size_t live;
    if (!COUNTING(h))
        return;
    live = h->st.live_block_bytes + bs;
    h->st.live_block_bytes = live;
    if (live > h->st.peak_block_bytes)
        h->st.peak_block_bytes = live;
    if (P_STATS(h) == DMM_STATS_FULL) {
        unsigned i = req ? dmm_log2_floor(req) + 1u : 0u;
        h->st.live_requested += req;
        if (h->st.live_requested > h->st.peak_requested)
            h->st.peak_requested = h->st.live_requested;
        h->st.size_hist[i < DMM_HEAP_HIST_BUCKETS ? i : DMM_HEAP_HIST_BUCKETS - 1u]++;
    }
}

static DMM_ALWAYS_INLINE void st_sub_live(dmm_heap *h, size_t bs, size_t req)
{
    if (!COUNTING(h))
        return;
    h->st.live_block_bytes -= bs;
    if (P_STATS(h) == DMM_STATS_FULL)
        h->st.live_requested -= req;
}

static inline void st_failed(dmm_heap *h)
{
    if (COUNTING(h))
        h->st.failed_count++;
}

static DMM_ALWAYS_INLINE void st_steps(dmm_heap *h, uint64_t steps)
{
    if (P_STATS(h) != DMM_STATS_FULL)
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

/* org=single has one bin: its index is the constant 0 wherever the policy
 * is fixed, so the bit and word arithmetic folds away. */
#define BM_BIN(h, i) (P_ORG(h) == DMM_ORG_SINGLE ? 0u : (i))

static inline void bm_set(dmm_heap *h, unsigned i)
{
    i = BM_BIN(h, i);
    DMM_ASSERT(i < h->nbins);
    h->bitmap[i / DMM_WORD_BITS] |= (size_t)1 << (i % DMM_WORD_BITS);
    h->summary |= (size_t)1 << (i / DMM_WORD_BITS);
}

static inline void bm_clear(dmm_heap *h, unsigned i)
{
    i = BM_BIN(h, i);
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
 * slot ever holds a known constant) keeps (x ^ key2) * key, key odd; it is
 * read back as (stored * kinv) ^ key2, kinv = key^-1 mod 2^bits, and a
 * link naming its own block reads as NULL (end of list), so a self-loop
 * cannot hand a block out twice.  Two instructions each way plus the NULL
 * mapping; the keys are loaded once per list operation (keys_of) and stay
 * in registers.  What a leaked link gives away and what forging one needs:
 * docs/heap.md, "Link encoding". */
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

/* The link keys and the range [lo, lo + span) of the region of the last
 * look-up, read from the heap once per list operation: the stores a list
 * operation makes (size_t headers, links) may alias the heap's own words,
 * so keys read at each link would be reloaded after every store. */
typedef struct lkeys {
    uintptr_t key, key2, kinv;
    uintptr_t lo;
    size_t span_g; /* span / GRAN */
} lkeys;
static DMM_ALWAYS_INLINE lkeys keys_of(const dmm_heap *h)
{
    lkeys k = {0, 0, 0, 0, 0};
    if (HARDENED(h)) {
        k.key = h->link_key;
        k.key2 = h->link_key2;
        k.kinv = h->link_kinv;
        k.lo = h->hint_lo;
        k.span_g = h->hint_span / GRAN;
    }
    return k;
}
#define GRAN_LOG2                                                                                            \
    ((unsigned)((GRAN >= 2u) + (GRAN >= 4u) + (GRAN >= 8u) + (GRAN >= 16u) + (GRAN >= 32u) + (GRAN >= 64u) + \
                (GRAN >= 128u)))
/* Is x a granule-aligned address in [lo, lo + span) (the region of the
 * last look-up)?  One compare: a misaligned x rotates its low bits to the
 * top and fails it too. */
static DMM_ALWAYS_INLINE bool k_in(const lkeys *k, const void *x)
{
    return rotr_w((uintptr_t)x - k->lo, GRAN_LOG2) < k->span_g;
}
static DMM_ALWAYS_INLINE blk *kdec(const dmm_heap *h, const lkeys *k, const blk *b, blk *e)
{
    uintptr_t x;
    if (!HARDENED(h))
        return e;
    x = ((uintptr_t)e * k->kinv) ^ k->key2;
    return x == (uintptr_t)b ? NULL : (blk *)x;
}
static DMM_ALWAYS_INLINE blk *kenc(const dmm_heap *h, const lkeys *k, const blk *b, blk *v)
{
    if (!HARDENED(h))
        return v;
    return (blk *)((((uintptr_t)(v ? v : b)) ^ k->key2) * k->key);
}
static DMM_ALWAYS_INLINE blk *k_next(const dmm_heap *h, const lkeys *k, const blk *b) { return kdec(h, k, b, *lnext(b)); }
static DMM_ALWAYS_INLINE blk *k_prev(const dmm_heap *h, const lkeys *k, const blk *b) { return kdec(h, k, b, *lprev(b)); }
static DMM_ALWAYS_INLINE void k_set_next(const dmm_heap *h, const lkeys *k, blk *b, blk *v) { *lnext(b) = kenc(h, k, b, v); }
static DMM_ALWAYS_INLINE void k_set_prev(const dmm_heap *h, const lkeys *k, blk *b, blk *v) { *lprev(b) = kenc(h, k, b, v); }
/* The back-link checks compare a decoded link with a known block and need
 * no NULL mapping.  k_names: does link word e of block `owner` name t
 * (t not NULL and not owner)?  The same as kdec(owner, e) == t, since a
 * word that decodes to its own block (NULL) never decodes to t.
 * k_names_none: does it name no block?  Only the encoding of NULL that
 * kenc writes (the owner itself) passes; a word that decodes to address 0,
 * which kenc never writes, fails the fast check and goes to the cold path,
 * which judges it as kdec does (NULL).  Hardened heaps only. */
static DMM_ALWAYS_INLINE bool k_names(const lkeys *k, blk *e, const blk *t)
{
    return (((uintptr_t)e * k->kinv) ^ k->key2) == (uintptr_t)t;
}
static DMM_ALWAYS_INLINE bool k_names_none(const lkeys *k, const blk *owner, blk *e)
{
    return k_names(k, e, owner);
}
/* The decoded address of link word e, without the NULL mapping: the owner
 * itself means NULL.  For the LIFO unlinks below, which test "is it the
 * owner" and then range-check anything else: a word decoding to address 0
 * (kenc never writes one) fails the range compare and reaches the cold
 * path, which reads it as NULL as kdec does, so the hot path needs no
 * separate NULL test.  Hardened heaps only. */
static DMM_ALWAYS_INLINE blk *k_raw(const lkeys *k, blk *e)
{
    return (blk *)(((uintptr_t)e * k->kinv) ^ k->key2);
}

/* The same with the keys read from the heap (cold code, the checker). */
static inline blk *ldecode(const dmm_heap *h, const blk *b, blk *e)
{
    lkeys k = keys_of(h);
    return kdec(h, &k, b, e);
}
static inline blk *lencode(const dmm_heap *h, const blk *b, blk *v)
{
    lkeys k = keys_of(h);
    return kenc(h, &k, b, v);
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

/* ---- the cold side of the list operations ----
 * Every check below has a one-compare fast form inline; when it fails,
 * these out-of-line functions redo the full check (a block in another
 * region is no fault) and make the report.  Reports and cuts live only
 * here, so the list operations stay short leaves. */
#if defined(__GNUC__) || defined(__clang__)
#define DMM_COLD __attribute__((cold, noinline))
#else
#define DMM_COLD
#endif

/* Reports msg naming `at`; cuts the list after `cut` (its next link made
 * NULL; under FIFO order *tail = cut) when cut is not NULL. */
static DMM_COLD void list_fault(dmm_heap *h, const void *at, blk *cut, blk **tail, const char *msg)
{
    (void)msg; /* unused when reports carry no text (DMM_HEAP_ERROR_TEXT=0) */
    dmm__heap_report(h, DMM_ERR_FREE_LIST, at, msg);
    if (cut) {
        set_next(h, cut, NULL);
        if (tail)
            *tail = cut;
    }
}

/* nx, c's decoded successor, failed the fast range check: the full check
 * (full: a block of the list's kind, node_ok; else only safe to read,
 * node_in_heap).  Returns nx, or NULL after a report and a cut at c. */
static DMM_COLD blk *follow_slow(dmm_heap *h, blk *c, blk *nx, size_t want, blk **tail, bool full)
{
    if (!nx) /* a word decoding to address 0 (kenc writes none): NULL, as kdec reads it */
        return NULL;
    if (full ? node_ok(h, nx, want) : node_in_heap(h, nx))
        return nx;
    list_fault(h, c, c, tail, "a free-list link was overwritten (use after free?)");
    return NULL;
}

/* The list successor of c, checked before anyone follows it when the heap
 * is hardened.  A bad link is reported and the list is cut at c (the
 * blocks behind it are lost to the lists, none is handed out).
 *   follow_scan: nx must lie where a block can (node_in_heap): enough to
 *       read it while a search walks on; the block a search finally takes
 *       gets the full check in take_block.
 *   follow: nx must also be a block of the list's kind (node_ok). */
static DMM_ALWAYS_INLINE blk *follow_check(dmm_heap *h, const lkeys *k, blk *c, size_t want, blk **tail, bool full)
{
    blk *nx;
    bool ok;
    if (!HARDENED(h))
        return *lnext(c);
    /* Decoded without kdec's NULL mapping: the owner itself is the
     * encoding of NULL; anything else is range-checked, and a word that
     * decodes to address 0 fails that compare and is read as NULL on the
     * cold path: no separate NULL test per node (issue 25). */
    nx = k_raw(k, *lnext(c));
    if (nx == c)
        return NULL;
    ok = k_in(k, nx);
    if (full && ok) {
        size_t hd = nx->head;
        ok = (hd & F_STATE) == want && (hd & ~F_MASK) >= MINB &&
             (hd & ~F_MASK) <= (size_t)(k->lo + k->span_g * GRAN - (uintptr_t)nx);
    }
    if (DMM_UNLIKELY(!ok))
        return follow_slow(h, c, nx, want, tail, full);
    return nx;
}
static DMM_ALWAYS_INLINE blk *follow(dmm_heap *h, blk *c, size_t want, blk **tail)
{
    lkeys k = keys_of(h);
    return follow_check(h, &k, c, want, tail, true);
}
static DMM_ALWAYS_INLINE blk *follow_scan(dmm_heap *h, const lkeys *k, blk *c, blk **tail)
{
    return follow_check(h, k, c, 0, tail, false);
}

/* Most free blocks the heap's regions could hold: no list is longer. */
static inline size_t max_nodes(const dmm_heap *h) { return h->st.footprint / MINB; }

/* A walk that has visited more nodes than the heap can hold free blocks is
 * going round a forged cycle: report it and cut the list at c (hardened
 * heaps only; returns true when it cut). */
static DMM_ALWAYS_INLINE bool walk_too_long(dmm_heap *h, uint64_t steps, uint64_t lim, blk *c, blk **tail)
{
    if (!HARDENED(h) || DMM_LIKELY(steps <= lim))
        return false;
    list_fault(h, c, c, tail, "a free list runs in a cycle (link overwritten)");
    return true;
}

static inline blk **tail_of(dmm_heap *h, unsigned n)
{
    return P_ORDER(h) == DMM_ORDER_FIFO ? &h->tails[n] : NULL;
}

/* nx (in a doubly linked list, the successor of pred, NULL: the head)
 * failed the fast back-link check (k_in(nx) and nx's back link naming
 * pred).  The full check: a successor outside every region is the forward
 * link's fault (reported at pred, cut there); a readable successor whose
 * back link disagrees is the back link's (reported at nx).  Returns NULL:
 * the caller follows neither link. */
static DMM_COLD blk *back_fault(dmm_heap *h, blk *pred, blk *nx, blk **tail)
{
    if (pred && !node_ok(h, nx, 0)) {
        list_fault(h, pred, pred, tail, "a free-list link was overwritten (use after free?)");
        return NULL;
    }
    if (get_prev(h, nx) == pred)
        return nx; /* a block in another region: no fault */
    list_fault(h, nx, NULL, NULL, "a free list's back link was overwritten (use after free?)");
    return NULL;
}

/* org=addrtree: the free blocks live in two address trees, not in lists */
#include "addrtree.h"

/* ---- lists ---- */

/* Link b after pred (NULL: at the head) in bin n. */
static DMM_ALWAYS_INLINE void list_insert_after(dmm_heap *h, const lkeys *k, unsigned n, blk *pred, blk *b)
{
    n = BM_BIN(h, n);
    DMM_ASSERT(blisted(b) && n < h->nbins);
    DMM_ASSERT(!pred || P_ORDER(h) != DMM_ORDER_LIFO); /* LIFO inserts at the head only */
    DMM_ASSERT_LOCAL(bnext(b)->foot == bsize(b) && !bpused(bnext(b)));
    blk *nx;
    if (DOUBLY(h) && HARDENED(h)) {
        /* pred -> nx and nx <- pred agree, and nx is in range: enough to
         * write nx's back link (nx's header is checked when it is taken).
         * A list head needs no range compare: it is read from the control
         * block, and every pointer stored there was a block (pushed) or
         * passed the range and back-link compares (a successor that became
         * the head); only decoded words are range-checked.  LIFO inserts
         * at the head only (pred NULL).  Other orders keep the form they
         * had: there the head is reached only with an empty tail, and the
         * new forms only moved gcc's register allocation (+0.3 to +1.3
         * Ir/op on dlmalloc at -O2, +56 B at -Os). */
        nx = pred ? k_next(h, k, pred) : h->heads[n];
        if (P_ORDER(h) == DMM_ORDER_LIFO ? nx && DMM_UNLIKELY(!k_names_none(k, nx, *lprev(nx)))
                                          : nx && DMM_UNLIKELY(!k_in(k, nx) || k_prev(h, k, nx) != pred))
            nx = back_fault(h, pred, nx, tail_of(h, n)); /* cut: nothing is written through the bad link */
    } else {
        nx = pred ? follow_check(h, k, pred, 0, tail_of(h, n), true) : h->heads[n];
    }
    k_set_next(h, k, b, nx);
    if (DOUBLY(h)) {
        k_set_prev(h, k, b, pred);
        if (nx)
            k_set_prev(h, k, nx, b);
    }
    if (pred)
        k_set_next(h, k, pred, b);
    else
        h->heads[n] = b;
    if (P_ORDER(h) == DMM_ORDER_FIFO && !nx)
        h->tails[n] = b;
    if (!pred && !nx)
        bm_set(h, n); /* the list was empty (or was cut: the bit may be set already) */
}

/* Insert free block b into its bin, honouring the ordering policy. */
static DMM_ALWAYS_INLINE void bin_insert_k(dmm_heap *h, const lkeys *kp, blk *b)
{
    if (P_ORG(h) == DMM_ORG_ADDRTREE) {
        at_insert(h, b);
        return;
    }
    unsigned n = bin_of(h, bsize(b));
    blk *pred = NULL, *c;
    const lkeys k = *kp;
    switch (P_ORDER(h)) {
    case DMM_ORDER_LIFO:
        break;
    case DMM_ORDER_FIFO:
        pred = h->tails[n];
        break;
    case DMM_ORDER_ADDRESS: {
        uint64_t i = 0;
        const uint64_t lim = max_nodes(h);
        for (c = h->heads[n]; c && c < b && !walk_too_long(h, ++i, lim, c, tail_of(h, n));
             c = follow_scan(h, &k, c, tail_of(h, n)))
            pred = c;
        break;
    }
    case DMM_ORDER_SIZE: {
        size_t s = bsize(b);
        uint64_t i = 0;
        const uint64_t lim = max_nodes(h);
        for (c = h->heads[n]; c && bsize(c) <= s && !walk_too_long(h, ++i, lim, c, tail_of(h, n));
             c = follow_scan(h, &k, c, tail_of(h, n)))
            pred = c;
        break;
    }
    }
    list_insert_after(h, &k, n, pred, b);
}
static DMM_ALWAYS_INLINE void bin_insert(dmm_heap *h, blk *b)
{
    lkeys k = keys_of(h);
    bin_insert_k(h, &k, b);
}

/* n for "b's own bin, computed only where it is needed": a doubly linked
 * unlink reads its bin only when b is the head of its list, or (FIFO) its
 * tail, so a merging free does not compute the bin index of each neighbour
 * it takes out of the middle of a list. */
#define BIN_OF_B UINT_MAX
static DMM_ALWAYS_INLINE unsigned bin_or(const dmm_heap *h, unsigned n, const blk *b)
{
    return n != BIN_OF_B ? n : bin_of(h, bsize(b));
}

/* Unlink b from bin n (or BIN_OF_B) given its list predecessor (NULL: b is
 * the head). */
static DMM_ALWAYS_INLINE void list_remove_k(dmm_heap *h, const lkeys *k, unsigned n, blk *pred, blk *b)
{
    n = BM_BIN(h, n);
    DMM_ASSERT(pred ? get_next(h, pred) == b : h->heads[bin_or(h, n, b)] == b);
    blk *nx;
    if (DOUBLY(h) && HARDENED(h) && P_ORDER(h) == DMM_ORDER_LIFO) {
        /* the same checks with the NULL test folded (k_raw) */
        nx = k_raw(k, *lnext(b));
        if (nx == b)
            nx = NULL;
        else if (DMM_UNLIKELY(!k_in(k, nx) || !k_names(k, *lprev(nx), b)))
            nx = nx ? back_fault(h, b, nx, NULL) : NULL; /* address 0: NULL, as kdec reads it */
    } else if (DOUBLY(h) && HARDENED(h)) {
        /* b -> nx and nx <- b agree and nx is in range: the unlink is safe
         * (nx's header is checked when nx is taken) */
        nx = k_next(h, k, b);
        if (nx && DMM_UNLIKELY(!k_in(k, nx) || !k_names(k, *lprev(nx), b)))
            nx = back_fault(h, b, nx, tail_of(h, bin_or(h, n, b))); /* cut: the rest is dropped, not followed */
    } else {
        nx = follow_check(h, k, b, 0, tail_of(h, bin_or(h, n, b)), true);
    }
    if (DOUBLY(h)) {
        if (pred) {
            k_set_next(h, k, pred, nx); /* the list keeps pred: its head and bit stay */
        } else {
            n = bin_or(h, n, b);
            h->heads[n] = nx;
            if (!nx)
                bm_clear(h, n);
        }
        if (nx)
            k_set_prev(h, k, nx, pred);
        if (P_ORDER(h) == DMM_ORDER_FIFO && !nx)
            h->tails[bin_or(h, n, b)] = pred; /* b was the tail (or the list was cut after it) */
    } else {
        /* singly linked: the walk that found pred knew n already (this
         * form keeps gcc's scan loops as they were: the one above made the
         * first-fit scan of org=single one instruction longer per node) */
        if (pred)
            k_set_next(h, k, pred, nx);
        else
            h->heads[n] = nx;
        if (P_ORDER(h) == DMM_ORDER_FIFO && h->tails[n] == b)
            h->tails[n] = pred;
        if (!h->heads[n])
            bm_clear(h, n);
    }
    if (P_FIT(h) == DMM_FIT_NEXT && h->rover == b)
        h->rover = nx;
}
static DMM_ALWAYS_INLINE void list_remove(dmm_heap *h, unsigned n, blk *pred, blk *b)
{
    lkeys k = keys_of(h);
    list_remove_k(h, &k, n, pred, b);
}

/* b's back link failed the fast check in bin_remove (doubly linked). */
static DMM_COLD bool unlink_fault(dmm_heap *h, blk *b, blk *pred, unsigned n)
{
    if (pred ? node_ok(h, pred, 0) && get_next(h, pred) == b : h->heads[n] == b)
        return true; /* a predecessor in another region: no fault */
    dmm__heap_report(h, DMM_ERR_FREE_LIST, b, "a free block's list links were overwritten (use after free?)");
    return false;
}

/* The walk of a singly linked bin did not find b (or went round a cycle). */
static DMM_COLD bool missing_fault(dmm_heap *h, blk *b)
{
    dmm__heap_report(h, DMM_ERR_FREE_LIST, b, "a free block is missing from its list (link overwritten?)");
    return false;
}

/* Unlink an arbitrary free block: O(1) doubly, a walk of its bin singly.
 * Returns false (after a report) when the lists around b do not agree with
 * it; b then stays where it is and the caller must leave it alone. */
static DMM_ALWAYS_INLINE bool bin_remove_k(dmm_heap *h, const lkeys *kp, blk *b)
{
    if (P_ORG(h) == DMM_ORG_ADDRTREE)
        return at_remove(h, b);
    /* doubly linked: b's bin is read only where b heads its list */
    unsigned n = DOUBLY(h) ? BIN_OF_B : bin_of(h, bsize(b));
    blk *pred;
    const lkeys k = *kp;
    if (DOUBLY(h) && HARDENED(h) && P_ORDER(h) == DMM_ORDER_LIFO) {
        /* the checks below with the NULL test folded (k_raw): a word
         * decoding to address 0 fails k_in, and unlink_fault reads it as
         * no predecessor, as kdec does */
        bool bad;
        pred = k_raw(&k, *lprev(b));
        if (pred == b) {
            pred = NULL;
            n = bin_of(h, bsize(b));
            bad = h->heads[n] != b;
        } else {
            bad = !k_in(&k, pred) || !k_names(&k, *lnext(pred), b);
        }
        if (DMM_UNLIKELY(bad) && !unlink_fault(h, b, pred, bin_or(h, n, b)))
            return false;
    } else if (DOUBLY(h)) {
        pred = k_prev(h, &k, b);
        /* pred <- b and pred -> b agree, pred in range (or b is the head):
         * b's links are its own, the unlink writes only into list nodes.
         * (k_names here instead of k_next measured -0.5 to -0.8 Ir/op on
         * tlsf and halffit but +1.2 to +3.7 on dlmalloc's best-fit malloc,
         * through gcc's register allocation of the whole scan: not kept.) */
        if (HARDENED(h) &&
            DMM_UNLIKELY(pred ? !k_in(&k, pred) || k_next(h, &k, pred) != b
                              : h->heads[n = bin_of(h, bsize(b))] != b) &&
            !unlink_fault(h, b, pred, bin_or(h, n, b)))
            return false;
    } else {
        uint64_t steps = 0;
        const uint64_t lim = max_nodes(h);
        blk *c = h->heads[n];
        pred = NULL;
        while (c != b) {
            if (!c) {
                st_steps(h, steps);
                return missing_fault(h, b);
            }
            pred = c;
            if (walk_too_long(h, ++steps, lim, c, tail_of(h, n))) {
                st_steps(h, steps);
                return false;
            }
            c = follow_scan(h, &k, c, tail_of(h, n));
        }
        st_steps(h, steps);
    }
    list_remove_k(h, &k, n, pred, b);
    return true;
}
static DMM_ALWAYS_INLINE bool bin_remove(dmm_heap *h, blk *b)
{
    lkeys k = keys_of(h);
    return bin_remove_k(h, &k, b);
}

#endif

/*
 * src/heap/engine/entry.h - a variant's entry points: lock, run, check
 * (assertion level 3), unlock; and the variant's ops table.
 *
 * Included once by each variant translation unit (through variant.h, or
 * directly by variant_any.c), after the variant has defined
 * DMM_VARIANT_OPS (the table's name), DMM_VARIANT_NAME and the DMM_V_*
 * policy fields it fixes.  In a frozen build only variant_any.c
 * compiles, and it defines the public functions directly instead of a
 * table (no dispatch, and only the called entry points are linked).
 */
#ifndef DMM_ENGINE_ENTRY_H
#define DMM_ENGINE_ENTRY_H

#include "realloc.h"

static inline void enter(dmm_heap *h, dmm_op op)
{
    DMM_ANN_ENTER();
    if (P_LOCK(h) != DMM_LOCK_NONE)
        dmm__heap_lock(h);
    h->op = op;
#if DMM_ASSERT_LEVEL >= 3
    h->errors_at_enter = h->errors_seen;
#endif
}

/* enter() for the bin leaves: h->op is read only by reports, and a leaf
 * makes none (it hands every failed check to a full path), so the leaf
 * stores it only on the way to one (e_free_full, e_free_merge; malloc's
 * full path enters again).  With assertion level 3 leave() checks the
 * heap and may report: the store stays. */
static DMM_ALWAYS_INLINE void enter_leaf(dmm_heap *h, dmm_op op)
{
#if DMM_ASSERT_LEVEL >= 3
    enter(h, op);
#else
    (void)op;
    DMM_ANN_ENTER();
    if (P_LOCK(h) != DMM_LOCK_NONE)
        dmm__heap_lock(h);
#endif
}

static inline void leave(dmm_heap *h)
{
#if DMM_ASSERT_LEVEL >= 3
    dmm__heap_leave_check(h);
#endif
    if (P_LOCK(h) != DMM_LOCK_NONE)
        dmm__heap_unlock(h);
    DMM_ANN_LEAVE();
}

/* The fast paths of malloc and free with quick lists (issue 25, item 3):
 * a pop from, or a push onto, an exact quick list is done in a leaf that
 * only reads until every check has passed; anything else (another size, a
 * check that fails, poisoning) goes to the full path out of line, which
 * starts over and reports.  The leaf saves no callee-saved registers.
 * With the designated victim, a small request that its quick list and its
 * exact bin cannot serve is carved from the victim in a second short
 * function (e_malloc_victim, engine/victim.h's victim_leaf). */
#define E_QUICK_LEAF(h) (P_QUICK(h) && !P_POISON(h))
/* The bin leaves: see e_malloc_bin_leaf.  Not in builds optimised for size
 * (-Os): the leaves repeat part of the full path, and a firmware wants one
 * copy (as DMM_ALWAYS_INLINE, src/core/bits.h). */
#if defined(DMM_V_ORG) && defined(DMM_V_QUICK) && defined(DMM_V_POISON) && defined(DMM_V_LINKS) &&            \
    defined(DMM_V_ORDER) && defined(DMM_V_FIT) && defined(DMM_V_SPLIT) && defined(DMM_V_COALESCE) &&          \
    !defined(__OPTIMIZE_SIZE__)
#define E_BIN_LEAF(h)                                                                                         \
    (!P_QUICK(h) && !P_VICTIM(h) && !P_POISON(h) && DOUBLY(h) && P_ORDER(h) == DMM_ORDER_LIFO &&               \
     P_FIT(h) == DMM_FIT_GOOD && P_SPLIT(h) && P_COALESCE(h) == DMM_COALESCE_IMMEDIATE &&                     \
     (P_ORG(h) == DMM_ORG_SEG_EXACT || P_ORG(h) == DMM_ORG_SEG_GEOMETRIC || P_ORG(h) == DMM_ORG_TLSF))
#else
#define E_BIN_LEAF(h) ((void)(h), 0)
#endif
#define E_VICTIM_LEAF(h) (P_VICTIM(h) && !P_POISON(h))

/* A variant frozen without hardening, poisoning and the designated victim
 * makes no report in malloc or free (every report comes from one of their
 * checks), so those enter without storing h->op, as the leaves do
 * (Cortex-M4 -Os, lean tlsf init+malloc+free: -12 B).  A run-time build
 * stores it: there the test would cost more than the store. */
#if defined(DMM_V_HARDEN) && defined(DMM_V_POISON) && defined(DMM_V_VICTIM)
#define E_SILENT(h) (!HARDENED(h) && !P_POISON(h) && !P_VICTIM(h))
#else
#define E_SILENT(h) ((void)(h), 0)
#endif
static DMM_ALWAYS_INLINE void enter_op(dmm_heap *h, dmm_op op)
{
    if (E_SILENT(h))
        enter_leaf(h, op);
    else
        enter(h, op);
}

static DMM_ALWAYS_INLINE void *e_malloc_body(dmm_heap *h, size_t size, bool quick_ok)
{
    void *p;
    enter_op(h, DMM_OP_MALLOC);
    p = alloc_locked(h, size, quick_ok);
    leave(h);
    return p;
}
static DMM_NOINLINE void *e_malloc_full(dmm_heap *h, size_t size, bool quick_ok)
{
    return e_malloc_body(h, size, quick_ok);
}
/* e_malloc_full for a caller that has the block size s already. */
static DMM_NOINLINE void *e_malloc_full_s(dmm_heap *h, size_t size, size_t s, bool quick_ok)
{
    void *p;
    enter(h, DMM_OP_MALLOC);
    p = alloc_locked_s(h, size, s, quick_ok);
    leave(h);
    return p;
}

static void *e_malloc_bin_leaf(dmm_heap *h, size_t size);
static void e_free_bin_leaf(dmm_heap *h, void *ptr);

/* victim=on: a small request (below the exact range) that its quick list
 * cannot serve.  Out of line, so that the quick leaf stays a leaf; the
 * full path is a tail call when the victim cannot serve it either. */
static DMM_NOINLINE void *e_malloc_victim(dmm_heap *h, size_t size, size_t s, bool quick_ok)
{
    blk *b;
    enter(h, DMM_OP_MALLOC); /* the victim is read under the heap's lock */
    if ((b = victim_leaf(h, s)) != NULL) {
        void *p;
        COUNT_OP(h, malloc_count);
        p = finish_used(h, b, s, size); /* carved to size s: nothing to split */
        leave(h);
        return p;
    }
    leave(h);
    return e_malloc_full(h, size, quick_ok);
}
/* The top leaf: with no listed block at all (OBTAIN_NO_LISTED, the case
 * of a program that allocates before it frees: seed 001's kernels) the
 * block comes from the top, which h->top names in one load; the carve is
 * done in a leaf that saves no register, and anything else (a listed
 * block, a top too small, growth) goes to the full path, which starts
 * over.  With the designated victim while there is none (OBTAIN_NO_LISTED;
 * a small request with a victim took e_malloc_victim before).  Not with
 * the bin leaves (they carve the top themselves) or poisoning (the full
 * path checks the carved payload), nor
 * where OBTAIN_NO_LISTED never holds (org=addrtree, stats=full), nor in
 * builds optimised for size (like the bin leaves, it repeats part of the
 * full path; under -Os the tlsf and halffit shapes, which have no bin
 * leaves there, took it and their Cortex-M4 heap grew by 116 B).  quick_ok:
 * as for e_malloc_full; the caller knows the request's quick list is
 * empty, or that it has none. */
#if !defined(__OPTIMIZE_SIZE__)
#define E_TOP_LEAF(h)                                                                                         \
    (!E_BIN_LEAF(h) && !P_POISON(h) && P_ORG(h) != DMM_ORG_ADDRTREE && P_STATS(h) != DMM_STATS_FULL)
#else
#define E_TOP_LEAF(h) ((void)(h), 0) /* -Os: one copy of the carve, as for the bin leaves */
#endif
static DMM_ALWAYS_INLINE void *e_malloc_top(dmm_heap *h, size_t size, size_t s, bool quick_ok)
{
    if (DMM_LIKELY(s != 0)) {
        blk *t;
        enter_leaf(h, DMM_OP_MALLOC); /* the top is read under the heap's lock */
        t = h->top;
        if (DMM_LIKELY(OBTAIN_NO_LISTED(h) && t && bsize(t) >= s && top_intact(h, t))) {
            void *p;
            blk *b = carve_from(h, t, s); /* used, of at most s + MINB - GRAN bytes: nothing to split */
            COUNT_OP(h, malloc_count);
            p = finish_used(h, b, bsize(b), size);
            leave(h);
            return p;
        }
        leave(h);
    }
    return e_malloc_full_s(h, size, s, quick_ok);
}

/* Without a lock the victim word is read before enter(): no victim, no
 * second call.  With a lock it is read under it (e_malloc_victim). */
#define E_VICTIM_TAKES(h, s)                                                                               \
    (E_VICTIM_LEAF(h) && (s) != 0 && (s) < B_LIN_MAX(h) && (P_LOCK(h) != DMM_LOCK_NONE || VICTIM(h)))

static void *e_malloc(dmm_heap *h, size_t size)
{
    if (E_BIN_LEAF(h))
        return e_malloc_bin_leaf(h, size);
    if (!E_QUICK_LEAF(h) && !E_VICTIM_LEAF(h))
        return E_TOP_LEAF(h) ? e_malloc_top(h, size, req2size(h, size), true) : e_malloc_body(h, size, true);
    size_t s = req2size(h, size);
    if (E_QUICK_LEAF(h) && s && s <= h->quick_bmax) {
        blk *b;
        enter_leaf(h, DMM_OP_MALLOC); /* the quick list is read under the heap's lock; no report here */
        if (!h->quick[quick_index(s)]) {
            leave(h);
            /* its quick list is empty: not looked at again */
            if (E_VICTIM_TAKES(h, s))
                return e_malloc_victim(h, size, s, false);
            return E_TOP_LEAF(h) ? e_malloc_top(h, size, s, false) : e_malloc_full(h, size, false);
        }
        if ((b = quick_pop_x(h, s, true)) != NULL) {
            void *p;
            COUNT_OP(h, malloc_count);
            p = finish_used(h, b, s, size); /* a quick block is used and of size s: nothing to split */
            leave(h);
            return p;
        }
        leave(h); /* a check failed: the full path pops again and reports */
        return e_malloc_full(h, size, true);
    }
    if (E_VICTIM_TAKES(h, s))
        return e_malloc_victim(h, size, s, true);
    /* no quick list for s (s > quick_bmax, or s == 0: to the full path) */
    return E_TOP_LEAF(h) ? e_malloc_top(h, size, s, true) : e_malloc_full(h, size, true);
}

/* free after enter(): b, if not NULL, passed validate() already. */
static DMM_NOINLINE void e_free_full(dmm_heap *h, void *ptr, blk *b)
{
    if (b || (b = validate(h, ptr)) != NULL)
        free_block(h, b);
    leave(h);
}

/* The bin leaves (issue 25, item 3): the segregated-fit presets without
 * quick lists (tlsf, halffit: bins, doubly linked, LIFO, good fit, split,
 * immediate coalescing, no poisoning) run malloc and free as leaves that
 * handle the common case and hand everything else to the full path:
 *   malloc: the head of the first non-empty bin the bitmap names (in
 *       the last bin only when it fits: else the full path scans), its
 *       tail split off and pushed on its own bin (coalesce_max 0: nothing
 *       can merge with it, see release_split);
 *   free: a block with no free neighbour, pushed on its bin (merges, the
 *       top and growth's region release go to the full path).
 * Like the quick leaf, each only reads until every check the full path
 * makes on the same blocks has passed (the fast forms: a block outside the
 * region of the last look-up goes to the full path too), then writes;
 * a failed check goes to the full path, which starts over and reports.
 * Policies that are not fixed at compile time never take the leaves. */

/* The checks of the leaves read the keys and the region bounds from the
 * heap where they use them (nothing is written before the last check, so
 * no store forces a reload) and so keep fewer registers live; the writes
 * after them take the keys once (lkeys). */
static DMM_ALWAYS_INLINE bool h_in(const dmm_heap *h, const void *x)
{
    return rotr_w((uintptr_t)x - h->hint_lo, GRAN_LOG2) < h->hint_span / GRAN;
}

/* k_names (engine/bins.h) with the keys read from the heap: does link
 * word e name t (t not NULL and not the word's own block; or, to ask "no
 * block", t the word's own block)? */
static DMM_ALWAYS_INLINE bool h_names(const dmm_heap *h, blk *e, const blk *t)
{
    return (((uintptr_t)e * h->link_kinv) ^ h->link_key2) == (uintptr_t)t;
}

/* The fast form of taken_ok for a bin head b (a block: see
 * list_insert_after), with head word hd: a listed block of at least s
 * bytes inside the region of the last look-up.  A block is aligned, so
 * one compare tells whether it lies in that region. */
static DMM_ALWAYS_INLINE bool h_taken_ok(const dmm_heap *h, const blk *b, size_t hd, size_t s)
{
    size_t bs = hd & ~F_MASK, off = (size_t)((uintptr_t)b - h->hint_lo);
    return off < h->hint_span && (hd & F_STATE) == 0 && bs >= s && bs <= h->hint_span - off;
}

/* Would a push of a block onto a bin (LIFO) whose head is hd pass
 * list_insert_after's check?  (hd's back link names no predecessor; hd
 * itself is a block: see list_insert_after.) */
static DMM_ALWAYS_INLINE bool h_head_ok(const dmm_heap *h, const blk *hd)
{
    return !HARDENED(h) || !hd || h_names(h, *lprev(hd), hd);
}

/* Pushes free block b (links not yet written) on bin n whose head is hd.
 * `mid`: the head store goes between b's two links (the free leaf): on an
 * empty bin both links hold the same word, and gcc pairs two adjacent
 * equal stores through an SSE register (three instructions for two); in
 * the malloc leaf that order measured worse (register allocation). */
static DMM_ALWAYS_INLINE void k_push(dmm_heap *h, const lkeys *k, unsigned n, blk *b, blk *hd, bool mid)
{
    k_set_next(h, k, b, hd);
    if (mid)
        h->heads[n] = b;
    k_set_prev(h, k, b, NULL);
    if (hd)
        k_set_prev(h, k, hd, b);
    else
        bm_set(h, n);
    if (!mid)
        h->heads[n] = b;
}

#define NO_SPLIT UINT_MAX
static void *e_malloc_bin_leaf(dmm_heap *h, size_t size)
{
    size_t s = req2size(h, size), hd, bs, rs;
    blk *b, *nx, *rh = NULL;
    unsigned r = NO_SPLIT; /* the tail's bin, when there is a tail */
    int j;
    lkeys k;
    void *p;
    if (DMM_UNLIKELY(!s))
        return e_malloc_full(h, size, true);
    enter_leaf(h, DMM_OP_MALLOC); /* the bins are read under the heap's lock */
    j = bm_find(h, bin_of_roundup(h, s));
    if (j < 0) {
        /* no bin has a block: the top of the region of the last carve */
        blk *t = h->top;
        if (!t || bsize(t) < s || !top_intact(h, t))
            goto full;
        st_steps(h, 1); /* the bitmap look-up, as take_block counts it */
        b = carve_from(h, t, s); /* used */
        goto out;
    }
    /* The last bin may hold blocks below s: its head is taken when it
     * fits, as take_block's first-fit scan of that bin would take it (and
     * it counts one more step there: stats=full goes to the full path). */
    if (P_STATS(h) == DMM_STATS_FULL && (unsigned)j == h->nbins - 1u)
        goto full;
    b = h->heads[j];
    hd = b->head;
    bs = hd & ~F_MASK;
    if (HARDENED(h) ? DMM_UNLIKELY(!h_taken_ok(h, b, hd, s)) : bs < s)
        goto full;
    nx = get_next(h, b);
    if (HARDENED(h) && nx && DMM_UNLIKELY(!h_in(h, nx) || !h_names(h, *lprev(nx), b)))
        goto full;
    rs = bs - s;
    if (rs >= h->split_min) {
        if (h->cfg.coalesce_max != 0)
            goto full; /* the tail may merge with a free block after b */
        r = bin_of(h, rs);
        rh = r == (unsigned)j ? nx : h->heads[r];
        if (r != (unsigned)j && DMM_UNLIKELY(!h_head_ok(h, rh)))
            goto full;
    }
    /* every check passed: unlink b, split, push the tail */
    k = keys_of(h);
    st_steps(h, 1);
    h->heads[j] = nx;
    if (nx)
        k_set_prev(h, &k, nx, NULL);
    else
        bm_clear(h, (unsigned)j);
    if (r != NO_SPLIT) {
        blk *rem = bat(b, s);
        b->head = s | F_USED | (hd & F_PUSED);
        rem->head = rs | F_PUSED;
        mark_free(rem, rs, 0);
        k_push(h, &k, r, rem, rh, false);
    } else {
        mark_used(b);
    }
out:
    COUNT_OP(h, malloc_count);
    p = finish_used(h, b, bsize(b), size);
    leave(h);
    return p;
full:
    leave(h);
    return e_malloc_full(h, size, true);
}

/* The free leaf's second half, out of line so that the leaf keeps its few
 * registers: used block b, whose next block nb is not the top, has a free
 * neighbour.  b passed validate_x without its previous-tag check (`prev`
 * false): when b's previous block is free, that check is made here, first,
 * on the header the merge reads anyway (a tag that passes names a listed
 * block of that size: free, not the top, so its own listed test is not
 * needed), and a failure goes to the full path, which validates again and
 * reports, nothing written.  Then free_block and release_block for this
 * case, in their order and with their checks (bin_remove_k,
 * list_insert_after and their cold reports), without the cases these
 * presets cannot reach (victim, poison, quick lists, the top, region
 * release). */
static DMM_NOINLINE void e_free_merge(dmm_heap *h, blk *b, blk *nb)
{
    size_t s = bsize(b), pf = 0;
    h->op = DMM_OP_FREE; /* for the reports (enter_leaf) */
    if (HARDENED(h) && !bpused(b) && DMM_UNLIKELY(!prev_tag_ok(h, b, pf = b->foot))) {
        e_free_full(h, bpayload(b), NULL); /* validates again and reports */
        return;
    }
    const lkeys k = keys_of(h);
    st_sub_live(h, s, requested_of(h, b));
    COUNT_OP(h, free_count);
    dmm_ann_free(bpayload(b), (char *)nb + WORD);
    b->head &= ~F_USED;
    if (blisted(nb) && can_merge(h, s, bsize(nb)) && bin_remove_k(h, &k, nb))
        s += bsize(nb);
    if (!bpused(b)) {
        blk *pv = bprev(b);
        if (!HARDENED(h)) {
            if (blisted(pv) && can_merge(h, s, bsize(pv)) && bin_remove_k(h, &k, pv)) {
                s += bsize(pv);
                b = pv;
            }
        } else if (can_merge(h, s, pf) && bin_remove_k(h, &k, pv)) {
            s += pf;
            b = pv;
        }
    }
    mark_free(b, s, 0);
    bin_insert_k(h, &k, b);
    leave(h);
}

/* The free leaf's top case, out of line (a tail call) so that the
 * extent's note does not cost the leaf a saved register: validated used
 * block b, whose previous block is used, joins top block nb after it
 * (release_block's merge into the top). */
static DMM_NOINLINE void e_free_top(dmm_heap *h, blk *b, blk *nb)
{
    size_t s = bsize(b);
    st_sub_live(h, s, requested_of(h, b));
    COUNT_OP(h, free_count);
    dmm_ann_free(bpayload(b), (char *)nb + WORD);
    top_grew(h, nb, b, s);
    mark_free(b, s + bsize(nb), F_AUX);
    leave(h);
}

static void e_free_bin_leaf(dmm_heap *h, void *ptr)
{
    blk *b, *nb, *hd;
    size_t s;
    unsigned n;
    lkeys k;
    enter_leaf(h, DMM_OP_FREE);
    /* no previous-tag check here: e_free_merge makes it where it reads
     * the previous block (a free block before b always goes there, or to
     * the full path, which validates again) */
    if (DMM_UNLIKELY((b = validate_x(h, ptr, true, false)) == NULL)) {
        h->op = DMM_OP_FREE;
        e_free_full(h, ptr, NULL); /* validates again and reports */
        return;
    }
    s = bsize(b);
    nb = bat(b, s);
    if (P_GROW(h))
        goto full; /* a region to give back */
    if (!bpused(b) && !btop(nb)) {
        e_free_merge(h, b, nb); /* a free block before b to merge with */
        return;
    }
    if (!bpused(b))
        goto full; /* a free block before b joins the top too */
    if (btop(nb)) {
        e_free_top(h, b, nb); /* b joins the top after it */
        return;
    }
    if (!bused(nb)) {
        e_free_merge(h, b, nb); /* a free block after b to merge with */
        return;
    }
    n = bin_of(h, s);
    hd = h->heads[n];
    if (DMM_UNLIKELY(!h_head_ok(h, hd)))
        goto full;
    k = keys_of(h);
    st_sub_live(h, s, requested_of(h, b));
    COUNT_OP(h, free_count);
    dmm_ann_free(bpayload(b), (char *)nb + WORD);
    mark_free(b, s, 0);
    k_push(h, &k, n, b, hd, true);
    leave(h);
    return;
full:
    h->op = DMM_OP_FREE;
    e_free_full(h, ptr, bpused(b) ? b : NULL); /* a free block before b: its tag is not checked yet */
}

static void e_free(dmm_heap *h, void *ptr)
{
    blk *b;
    if (!ptr)
        return;
    if (E_BIN_LEAF(h)) {
        e_free_bin_leaf(h, ptr);
        return;
    }
    if (E_QUICK_LEAF(h)) {
        size_t s;
        enter_leaf(h, DMM_OP_FREE); /* a push reports nothing: h->op is stored on the way to the full path */
        if ((b = validate_x(h, ptr, true, true)) != NULL && quick_takes(h, s = bsize(b))) {
            st_sub_live(h, s, requested_of(h, b));
            COUNT_OP(h, free_count);
            dmm_ann_free(bpayload(b), (char *)bnext(b) + WORD);
            quick_push(h, b);
            leave(h);
            return;
        }
        h->op = DMM_OP_FREE;
        e_free_full(h, ptr, b);
        return;
    }
    enter_op(h, DMM_OP_FREE);
    if ((b = validate(h, ptr)) != NULL)
        free_block(h, b);
    leave(h);
}

static void *e_realloc(dmm_heap *h, void *ptr, size_t align, size_t size)
{
    void *p;
    enter(h, DMM_OP_REALLOC);
    p = realloc_locked(h, ptr, align, size);
    leave(h);
    return p;
}

static void *e_calloc(dmm_heap *h, size_t n, size_t size)
{
    void *p = NULL;
    enter(h, DMM_OP_CALLOC);
    if (size && n > SIZE_MAX / size) {
        st_failed(h);
    } else if ((p = alloc_locked(h, n * size, true)) != NULL) {
        COUNT_OP(h, calloc_count);
        dmm_port_memset(p, 0, n * size);
    }
    leave(h);
    return p;
}

static void *e_aligned(dmm_heap *h, size_t align, size_t size)
{
    void *p;
    enter(h, DMM_OP_ALIGNED);
    p = aligned_locked(h, align, size);
    leave(h);
    return p;
}

static size_t e_usable(dmm_heap *h, const void *ptr)
{
    blk *b;
    size_t n = 0;
    if (!ptr)
        return 0;
    enter(h, DMM_OP_USABLE_SIZE);
    if ((b = validate(h, ptr)) != NULL)
        n = usable_of(h, b);
    leave(h);
    return n;
}

#if DMM_HEAP_FROZEN
/* A frozen build has no ops table: the public functions call the entry
 * points directly, so a firmware links only the ones it calls (a table of
 * pointers would pull in every entry point and what it reaches). */
void *dmm_heap_malloc(dmm_heap *h, size_t size) { return e_malloc(h, size); }
void dmm_heap_free(dmm_heap *h, void *ptr) { e_free(h, ptr); }
void *dmm_heap_calloc(dmm_heap *h, size_t n, size_t size) { return e_calloc(h, n, size); }
void *dmm_heap_realloc(dmm_heap *h, void *ptr, size_t size) { return e_realloc(h, ptr, GRAN, size); }
void *dmm_heap_realloc_aligned(dmm_heap *h, void *ptr, size_t align, size_t size)
{
    return e_realloc(h, ptr, align, size);
}
void *dmm_heap_aligned_alloc(dmm_heap *h, size_t align, size_t size) { return e_aligned(h, align, size); }
size_t dmm_heap_usable_size(dmm_heap *h, const void *ptr) { return e_usable(h, ptr); }
#else
/* Does this variant run cfg?  Every policy field it fixes must match. */
static bool e_accepts(const dmm_heap_config *c)
{
    (void)c; /* unused when the variant fixes no policy field */
#ifdef DMM_V_ORG
    if (c->org != (dmm_heap_org)(DMM_V_ORG))
        return false;
#endif
#ifdef DMM_V_LINKS
    if (c->links != (dmm_heap_links)(DMM_V_LINKS))
        return false;
#endif
#ifdef DMM_V_ORDER
    if (c->order != (dmm_heap_order)(DMM_V_ORDER))
        return false;
#endif
#ifdef DMM_V_FIT
    if (c->fit != (dmm_heap_fit)(DMM_V_FIT))
        return false;
#endif
#ifdef DMM_V_SPLIT
    if (c->split != (bool)(DMM_V_SPLIT))
        return false;
#endif
#ifdef DMM_V_COALESCE
    if (c->coalesce != (dmm_heap_coalesce)(DMM_V_COALESCE))
        return false;
#endif
#ifdef DMM_V_QUICK
    if ((c->quick_max != 0) != (bool)(DMM_V_QUICK))
        return false;
#endif
#ifdef DMM_V_VICTIM
    if (c->victim != (bool)(DMM_V_VICTIM))
        return false;
#endif
#ifdef DMM_V_LOCK
    if (c->lock != (dmm_heap_lock)(DMM_V_LOCK))
        return false;
#endif
#ifdef DMM_V_STATS
    if (c->stats != (dmm_heap_stats_level)(DMM_V_STATS))
        return false;
#endif
#ifdef DMM_V_HARDEN
    if (c->harden != (dmm_heap_harden)(DMM_V_HARDEN))
        return false;
#endif
#ifdef DMM_V_POISON
    if (c->poison != (bool)(DMM_V_POISON))
        return false;
#endif
#ifdef DMM_V_GROW
    if ((c->grow_granularity != 0) != (bool)(DMM_V_GROW))
        return false;
#endif
#ifdef DMM_V_SL_BITS
    if (c->sl_bits != (unsigned)(DMM_V_SL_BITS) ||
        (c->org == DMM_ORG_SEG_EXACT && c->exact_max != (size_t)(DMM_V_EXACT_MAX)))
        return false;
#endif
    return true;
}

const dmm__heap_ops DMM_VARIANT_OPS = {
    DMM_VARIANT_NAME, e_accepts, e_malloc, e_free, e_realloc, e_calloc, e_aligned, e_usable,
};
#endif /* DMM_HEAP_FROZEN */

#endif

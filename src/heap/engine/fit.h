/*
 * src/heap/engine/fit.h - the fit policies: find a free block of at least
 * s bytes in the bins and unlink it.  Engine part (see variant.h).
 */
#ifndef DMM_ENGINE_FIT_H
#define DMM_ENGINE_FIT_H

#include "bins.h"
#include "victim.h"

typedef struct found {
    blk *b;
    blk *pred;
    unsigned bin;
} found;

/* Scan bin n for a block of at least s bytes under fit policy fit; the
 * nodes visited are added to *steps.  The cycle guard counts this walk
 * alone: one list holds at most max_nodes blocks, but a search may walk
 * more than one list (or one list twice, next fit's wrap). */
static inline bool scan_bin(dmm_heap *h, unsigned n, size_t s, dmm_heap_fit fit, found *f, uint64_t *steps)
{
    blk *pred = NULL, *best = NULL, *best_pred = NULL;
    size_t best_s = SIZE_MAX; /* bsize(best), kept in a register */
    const uint64_t lim = max_nodes(h);
    uint64_t left = lim + 1u; /* counts down: one decrement and branch per node */
    lkeys ks = keys_of(h);
    blk *c = h->heads[n];
    /* The loop has no test of c at its top: the successor is followed at
     * its bottom, and a successor that passed the range compare is not
     * NULL, so only the end-of-list encoding and the cold path leave it
     * (follow_check's steps, written out here for that reason). */
    if (c)
        for (;;) {
            blk *nx;
            size_t cs = bsize(c);
            if (DMM_UNLIKELY(--left == 0) && walk_too_long(h, lim + 1u, lim, c, tail_of(h, n)))
                break;
            if (cs >= s) {
                if (cs == s || fit == DMM_FIT_FIRST || fit == DMM_FIT_NEXT || fit == DMM_FIT_GOOD ||
                    (fit == DMM_FIT_BEST && P_ORDER(h) == DMM_ORDER_SIZE)) {
                    best = c;
                    best_pred = pred;
                    break;
                }
                if (fit == DMM_FIT_EXACT) {
                    if (!best) {
                        best = c;
                        best_pred = pred;
                    }
                } else if (cs < best_s) { /* best fit */
                    best = c;
                    best_s = cs;
                    best_pred = pred;
                }
            }
            if (!HARDENED(h)) {
                if (!(nx = *lnext(c)))
                    break;
            } else {
                nx = k_raw(&ks, *lnext(c));
                if (nx == c) /* the encoding of NULL: the end of the list */
                    break;
                if (DMM_UNLIKELY(!k_in(&ks, nx)) && !(nx = follow_slow(h, c, nx, 0, tail_of(h, n), false)))
                    break;
            }
            pred = c;
            c = nx;
        }
    *steps += lim + 1u - left; /* the nodes visited */
    if (!best)
        return false;
    f->b = best;
    f->pred = best_pred;
    f->bin = n;
    return true;
}

/* Next fit over the single list: from the rover to the end, then from the
 * head (first fit over the whole list).  The two walks are bounded apart:
 * a failing search visits up to twice the list, which is no cycle (issue
 * 25: one counter across the wrap read a list of more than max_nodes / 2
 * blocks as a cycle and cut it). */
static inline bool scan_next_fit(dmm_heap *h, size_t s, found *f, uint64_t *steps)
{
    blk *c = h->rover;
    const uint64_t lim = max_nodes(h);
    uint64_t left = lim + 1u; /* counts down, as in scan_bin */
    lkeys ks = keys_of(h);
    if (c && !blisted(c))
        c = NULL; /* defensive: a rover always names a listed block */
    for (; c; c = follow_scan(h, &ks, c, tail_of(h, 0))) {
        if (DMM_UNLIKELY(--left == 0) && walk_too_long(h, lim + 1u, lim, c, tail_of(h, 0)))
            break;
        if (bsize(c) >= s) {
            *steps += lim + 1u - left;
            f->b = c;
            f->pred = NULL;
            f->bin = UINT32_MAX; /* predecessor unknown */
            return true;
        }
    }
    *steps += lim + 1u - left;
    return scan_bin(h, 0, s, DMM_FIT_FIRST, f, steps);
}

/* The head of non-empty bin j: every block of a bin above the request's
 * fits, so good fit (and first fit above the request's bin) takes it. */
static inline bool head_of(const dmm_heap *h, unsigned j, found *f)
{
    f->b = h->heads[j];
    f->pred = NULL;
    f->bin = j;
    return true;
}

/* Is b, a block a search is about to take for s bytes, a listed block of
 * at least s bytes that fits in its region?  The fast form in the region
 * of the last look-up; node_ok (any region) when that fails. */
static DMM_ALWAYS_INLINE bool taken_ok(dmm_heap *h, const blk *b, size_t s)
{
    size_t hd = b->head, bs = hd & ~F_MASK, off = (size_t)((uintptr_t)b - h->hint_lo);
    if (DMM_LIKELY(rotr_w(off, GRAN_LOG2) < h->hint_span / GRAN) && (hd & F_STATE) == 0 && bs >= s &&
        bs <= h->hint_span - off)
        return true;
    return node_ok(h, b, 0) && bs >= s;
}

/* The block a search would take failed taken_ok: a link overwritten with
 * an address inside the heap.  Reported and nothing is handed out: the
 * list is cut before the block (next fit, whose predecessor may be
 * unknown, restarts its rover instead). */
static DMM_COLD blk *take_fault(dmm_heap *h, found *f)
{
    dmm__heap_report(h, DMM_ERR_FREE_LIST, f->b, "a free-list link names something that is not a free block");
    if (P_FIT(h) == DMM_FIT_NEXT) {
        h->rover = h->heads[0];
        return NULL;
    }
    if (f->pred)
        set_next(h, f->pred, NULL);
    else
        h->heads[f->bin] = NULL;
    if (P_ORDER(h) == DMM_ORDER_FIFO)
        h->tails[f->bin] = f->pred;
    if (!h->heads[f->bin])
        bm_clear(h, f->bin);
    return NULL;
}

/* Finds a free block of at least s bytes and unlinks it; NULL if none.
 * `plain`: the block goes to finish_alloc as it is (not an aligned request,
 * which carves it first), so org=addrtree may split it here. */
static DMM_ALWAYS_INLINE blk *take_block(dmm_heap *h, size_t s, bool plain)
{
    uint64_t steps = 0;
    found f;
    bool ok = false;
    dmm_heap_fit fit = P_FIT(h);

    if (P_ORG(h) == DMM_ORG_ADDRTREE)
        return at_take(h, s, plain);
    if (P_VICTIM(h) && VICTIM(h) && s < B_LIN_MAX(h) && !h->heads[bin_of(h, s)]) {
        /* a small request its exact bin cannot serve: the victim first */
        blk *v = victim_fit(h, s);
        if (v)
            return v;
    }
    if (fit == DMM_FIT_NEXT) {
        ok = scan_next_fit(h, s, &f, &steps);
    } else if (fit == DMM_FIT_GOOD) {
        unsigned n = bin_of_roundup(h, s);
        int j = bm_find(h, n);
        steps++;
        if (j >= 0) {
            if ((unsigned)j == h->nbins - 1u && bin_of(h, s) == h->nbins - 1u) {
                ok = scan_bin(h, (unsigned)j, s, DMM_FIT_FIRST, &f, &steps);
            } else {
                ok = head_of(h, (unsigned)j, &f);
            }
        }
    } else {
        unsigned n = bin_of(h, s);
        ok = scan_bin(h, n, s, fit, &f, &steps);
        if (!ok) {
            int j = bm_find(h, n + 1u);
            steps++;
            if (j >= 0) {
                /* A bin of one size (below lin_max, not the clamped last
                 * bin) holds only equal blocks: its head is the best fit. */
                if (fit == DMM_FIT_BEST && P_ORDER(h) != DMM_ORDER_SIZE &&
                    ((unsigned)j >= B_LIN_BINS(h) || (unsigned)j == h->nbins - 1u)) {
                    ok = scan_bin(h, (unsigned)j, s, fit, &f, &steps);
                } else {
                    ok = head_of(h, (unsigned)j, &f);
                }
            }
        }
    }
    st_steps(h, steps);
    if (!ok)
        return P_VICTIM(h) && VICTIM(h) ? victim_fit(h, s) : NULL; /* no bin serves s: the victim, before the top */
    /* The block taken gets the full check, and only it: every link that
     * led here was range-checked when it was followed, and (doubly linked)
     * back-link-checked when its list last changed around it. */
    if (HARDENED(h) && DMM_UNLIKELY(!taken_ok(h, f.b, s)))
        return take_fault(h, &f);
    if (fit == DMM_FIT_NEXT) {
        /* list_remove moves the rover on to the (validated) successor */
        h->rover = f.b;
        if (f.bin == UINT32_MAX) {
            if (!bin_remove(h, f.b)) {
                h->rover = h->heads[0];
                return NULL;
            }
        } else {
            list_remove(h, f.bin, f.pred, f.b);
        }
        if (!h->rover)
            h->rover = h->heads[0];
        return f.b;
    }
    list_remove(h, f.bin, f.pred, f.b);
    return f.b;
}

#endif

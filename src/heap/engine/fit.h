/*
 * src/heap/engine/fit.h - the fit policies: find a free block of at least
 * s bytes in the bins and unlink it.  Engine part (see variant.h).
 */
#ifndef DMM_ENGINE_FIT_H
#define DMM_ENGINE_FIT_H

#include "bins.h"

typedef struct found {
    blk *b;
    blk *pred;
    unsigned bin;
} found;

/* Scan bin n for a block of at least s bytes under fit policy fit. */
static inline bool scan_bin(dmm_heap *h, unsigned n, size_t s, dmm_heap_fit fit, found *f, uint64_t *steps)
{
    blk *pred = NULL, *best = NULL, *best_pred = NULL;
    const uint64_t lim = max_nodes(h);
    for (blk *c = h->heads[n]; c; pred = c, c = follow_scan(h, c, tail_of(h, n))) {
        size_t cs = bsize(c);
        if (++*steps > lim && walk_too_long(h, *steps, lim, c, tail_of(h, n)))
            break;
        if (cs < s)
            continue;
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
            continue;
        }
        if (!best || cs < bsize(best)) { /* best fit */
            best = c;
            best_pred = pred;
        }
    }
    if (!best)
        return false;
    f->b = best;
    f->pred = best_pred;
    f->bin = n;
    return true;
}

/* Next fit over the single list: from the rover to the end, then from the
 * head (first fit over the whole list). */
static inline bool scan_next_fit(dmm_heap *h, size_t s, found *f, uint64_t *steps)
{
    blk *c = h->rover;
    const uint64_t lim = max_nodes(h);
    if (c && !blisted(c))
        c = NULL; /* defensive: a rover always names a listed block */
    for (; c; c = follow_scan(h, c, tail_of(h, 0))) {
        if (++*steps > lim && walk_too_long(h, *steps, lim, c, tail_of(h, 0)))
            break;
        if (bsize(c) >= s) {
            f->b = c;
            f->pred = NULL;
            f->bin = UINT32_MAX; /* predecessor unknown */
            return true;
        }
    }
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
                if (fit == DMM_FIT_BEST && P_ORDER(h) != DMM_ORDER_SIZE) {
                    ok = scan_bin(h, (unsigned)j, s, fit, &f, &steps);
                } else {
                    ok = head_of(h, (unsigned)j, &f);
                }
            }
        }
    }
    st_steps(h, steps);
    if (!ok)
        return NULL;
    /* A bin head is always trusted; a block a scan reached through a link
     * (or the rover) gets the full check.  A link overwritten with an
     * address inside the heap is reported and nothing is handed out: the
     * list is cut before the block (next fit, whose predecessor may be
     * unknown, restarts its rover instead). */
    if (HARDENED(h) && DMM_UNLIKELY(((f.pred || fit == DMM_FIT_NEXT) && !node_ok(h, f.b, 0)) || bsize(f.b) < s)) {
        dmm__heap_report(h, DMM_ERR_FREE_LIST, f.b, "a free-list link names something that is not a free block");
        if (fit == DMM_FIT_NEXT) {
            h->rover = h->heads[0];
            return NULL;
        }
        if (f.pred)
            set_next(h, f.pred, NULL);
        else
            h->heads[f.bin] = NULL;
        if (P_ORDER(h) == DMM_ORDER_FIFO)
            h->tails[f.bin] = f.pred;
        if (!h->heads[f.bin])
            bm_clear(h, f.bin);
        return NULL;
    }
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

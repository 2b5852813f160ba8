/*
 * src/heap/engine/free.h - pointer validation (hardening) and free.
 * Engine part (see variant.h).
 */
#ifndef DMM_ENGINE_FREE_H
#define DMM_ENGINE_FREE_H

#include "../../port/annotate.h"
#include "release.h"

/* The used block whose payload ptr is, or NULL after a report.  From
 * CHECKED up: O(1) (region_of) and nothing is written before the pointer
 * is known good.  PARANOID adds a walk of the region up to the block.
 * The full form: validate() runs it when its fast checks fail, and it
 * makes the report. */
static DMM_COLD blk *validate_slow(dmm_heap *h, const void *ptr)
{
    region *r;
    blk *b, *nx, *sen, *first;
    size_t hd, s;
    b = bfrom(ptr);
    if (in_hint(h, b)) {
        first = (blk *)h->hint_lo;
        sen = (blk *)(h->hint_lo + h->hint_span);
    } else {
        if (!(r = region_of(h, ptr))) {
            dmm__heap_report(h, DMM_ERR_FOREIGN_POINTER, ptr, "pointer is not inside any region of this heap");
            return NULL;
        }
        if ((uintptr_t)ptr & (GRAN - 1u)) {
            dmm__heap_report(h, DMM_ERR_MISALIGNED_POINTER, ptr, "pointer is not aligned like a block payload");
            return NULL;
        }
        first = rfirst(r);
        sen = rsentinel(r);
        if (b < first || b >= sen) {
            dmm__heap_report(h, DMM_ERR_INVALID_POINTER, ptr, "pointer is not the start of a block");
            return NULL;
        }
    }
    hd = b->head;
    s = hd & ~F_MASK;
    if (hd == POISON_WORD) {
        /* the header of a block that was freed and merged into a poisoned
         * free neighbour */
        dmm__heap_report(h, DMM_ERR_DOUBLE_FREE, ptr, "block is already free (merged into a free neighbour)");
        return NULL;
    }
    if (s < MINB || s > (size_t)((char *)sen - (char *)b)) {
        dmm__heap_report(h, DMM_ERR_INVALID_POINTER, ptr,
                         "pointer is not the start of a block (interior pointer or corrupted header)");
        return NULL;
    }
    if ((hd & F_STATE) != F_USED) {
        /* a free or quick-listed block, or the stale header of a block that
         * has since merged with a free neighbour */
        dmm__heap_report(h, DMM_ERR_DOUBLE_FREE, ptr, "block is already free");
        return NULL;
    }
    nx = bat(b, s);
    if (!bpused(nx)) {
        dmm__heap_report(h, DMM_ERR_HEADER, ptr, "the next block does not know this block as used (header overwritten?)");
        return NULL;
    }
    if (btop(nx) && bnext(nx) != sen) {
        /* a merge into the top (free) or a growth into it (realloc) would
         * trust that size (release.h, top_intact) */
        dmm__heap_report(h, DMM_ERR_HEADER, ptr, "the top block after this block has a size past its region (overflow?)");
        return NULL;
    }
    if (P_HARDEN(h) >= DMM_HARDEN_CANARY && *canary_slot(b) != canary_of(h, b)) {
        dmm__heap_report(h, DMM_ERR_CANARY, ptr, "canary behind the block was overwritten (buffer overflow)");
        return NULL;
    }
    if (!(hd & F_PUSED)) {
        size_t pf = b->foot;
        /* the tag is range-checked before the previous block is computed */
        if (pf < MINB || pf > (size_t)((char *)b - (char *)first) || (pf & F_MASK) || bsize(bprev(b)) != pf ||
            bused(bprev(b))) {
            dmm__heap_report(h, DMM_ERR_HEADER, ptr, "the previous block's size tag does not match it (overflow?)");
            return NULL;
        }
    }
    if (P_HARDEN(h) >= DMM_HARDEN_PARANOID) {
        blk *c = first;
        while (c < b && bsize(c))
            c = bnext(c);
        if (c != b) {
            dmm__heap_report(h, DMM_ERR_INVALID_POINTER, ptr, "pointer is not the start of any block of its region");
            return NULL;
        }
    }
    return b;
}

/* The O(1) essentials in the region of the last look-up: the block is in
 * range and aligned, its head says used and a size that stays inside the
 * region, the next block knows it as used (and, when it is the top, its
 * size ends at the region's sentinel), the canary (CANARY), and
 * (`prev`) a free previous block's size tag names a listed block of that
 * size.  Each is a stricter form of a check of validate_slow, which runs
 * (and reports) when any fails, and always under PARANOID.  A caller that
 * passes `prev` false makes the previous-tag check itself, before it
 * writes, where it reads the previous block's header anyway (prev_tag_ok:
 * the bin leaf's merge, e_free_merge), or never reaches a write with a
 * free previous block unchecked. */
static DMM_ALWAYS_INLINE bool prev_tag_ok(const dmm_heap *h, const blk *b, size_t pf)
{
    /* pf is b's size tag; b passed the range check in the region of the
     * last look-up.  The tag is range-checked before the previous block is
     * read, on the integer address b - pf (wraps to above b when pf > b):
     * inside [lo, b - MINB] means MINB <= pf <= b - lo.  A tag without flag
     * bits that matches that block's head (F_PUSED aside) names a free
     * block that is not the top: a listed one. */
    uintptr_t pv = (uintptr_t)b - pf;
    return pv >= h->hint_lo && pv <= (uintptr_t)b - MINB && !(pf & F_MASK) &&
           (((const blk *)pv)->head & ~F_PUSED) == pf;
}
static DMM_ALWAYS_INLINE blk *validate_x(dmm_heap *h, const void *ptr, bool leaf, bool prev)
{
    blk *b = bfrom(ptr);
    uintptr_t lo;
    size_t hd, s, off;
    if (!HARDENED(h))
        return b;
    lo = h->hint_lo;
    off = (size_t)((uintptr_t)b - lo);
    if (P_HARDEN(h) >= DMM_HARDEN_PARANOID || DMM_UNLIKELY(rotr_w(off, GRAN_LOG2) >= h->hint_span / GRAN))
        return leaf ? NULL : validate_slow(h, ptr);
    hd = b->head;
    s = hd & ~F_MASK;
    if (DMM_UNLIKELY((hd & F_STATE) != F_USED || s < MINB || s > h->hint_span - off || !bpused(bat(b, s))))
        return leaf ? NULL : validate_slow(h, ptr);
    if (DMM_UNLIKELY(btop(bat(b, s))) && (uintptr_t)bnext(bat(b, s)) != lo + h->hint_span)
        return leaf ? NULL : validate_slow(h, ptr); /* the top after b: its size must end at the sentinel */
    if (P_HARDEN(h) >= DMM_HARDEN_CANARY && DMM_UNLIKELY(*canary_slot(b) != canary_of(h, b)))
        return leaf ? NULL : validate_slow(h, ptr);
    if (prev && !(hd & F_PUSED)) {
        size_t pf = b->foot;
        if (DMM_UNLIKELY(!prev_tag_ok(h, b, pf)))
            return leaf ? NULL : validate_slow(h, ptr);
    }
    return b;
}
/* validate() reports and runs validate_slow when a fast check fails; the
 * leaf form (the entry's fast path) returns NULL then, having read only. */
static DMM_ALWAYS_INLINE blk *validate(dmm_heap *h, const void *ptr) { return validate_x(h, ptr, false, true); }

/* Frees validated used block b. */
static DMM_ALWAYS_INLINE void free_block(dmm_heap *h, blk *b)
{
    size_t s = bsize(b);
    st_sub_live(h, s, requested_of(h, b));
    COUNT_OP(h, free_count);
    if (P_POISON(h))
        poison_fill(h, (char *)bpayload(b) + LINKS, bnext(b));
    dmm_ann_free(bpayload(b), (char *)bnext(b) + WORD);
    if (quick_takes(h, s)) {
        quick_push(h, b);
        return;
    }
    b->head &= ~F_USED;
    release_block(h, b, (char *)bnext(b));
}

#endif

/*
 * src/heap/engine/victim.h - dlmalloc's "designated victim" (victim=on).
 * Engine part (see variant.h).
 *
 * The victim is one free block kept out of the bins (h->rover holds it;
 * next fit and org=addrtree, the rover's other users, never have a
 * victim).  It is the remainder of the last split made for a small
 * request (below the bins' exact range, B_LIN_MAX) or for a request the
 * victim itself served.  A small request whose exact bin is empty takes
 * its block from the front of the victim before it looks at larger bins,
 * so a run of small requests carves one block in address order without
 * touching a bin or the bitmap, as dlmalloc 2.8 does with its "dv".  A
 * request that the bins cannot serve also tries the victim before the
 * top.  A block freed next to the victim merges with it and the result
 * stays the victim (immediate coalescing).
 *
 * Invariants (dmm_heap_check): the victim is NULL or a free block of a
 * region that is not the top, is in no bin, and has the size its next
 * block's boundary tag says.  From hardening CHECKED up, its header is
 * checked before its size is used (malloc takes it, a free merges with
 * it, it goes back to a bin); a damaged victim is reported and withheld.
 *
 * Hook points (the only places that know about the victim):
 *   entry.h    e_malloc: the leaf carves the victim (victim_leaf)
 *   fit.h      take_block: victim before larger bins (small requests),
 *              and after the bins for every size
 *   alloc.h    finish_alloc: a split's remainder becomes the victim;
 *              aligned_locked and poison_intact drop a victim they carve
 *   release.h  release_block: merges with the victim; sweep: retires it
 *   realloc.h  grow_in_place: absorbs the victim
 */
#ifndef DMM_ENGINE_VICTIM_H
#define DMM_ENGINE_VICTIM_H

#include "bins.h"

#define VICTIM(h) ((h)->rover)

/* Is v (the victim) a free, non-top block in a region whose next block's
 * boundary tag agrees with its size?  The fast form in the region of the
 * last look-up, the full one (any region) out of line. */
static DMM_COLD bool victim_ok_slow(dmm_heap *h, const blk *v)
{
    return node_ok(h, v, 0) && bnext(v)->foot == bsize(v) && !bpused(bnext(v));
}
static DMM_ALWAYS_INLINE bool victim_ok(dmm_heap *h, const blk *v)
{
    size_t hd = v->head, vs = hd & ~F_MASK, off = (size_t)((uintptr_t)v - h->hint_lo);
    if (DMM_LIKELY(rotr_w(off, GRAN_LOG2) < h->hint_span / GRAN) && (hd & F_STATE) == 0 && vs >= MINB &&
        vs <= h->hint_span - off) {
        const blk *nx = bat(v, vs);
        return nx->foot == vs && !bpused(nx);
    }
    return victim_ok_slow(h, v);
}

/* The victim failed victim_ok: reported and dropped (its bytes are lost to
 * the allocator, nothing is handed out or merged through it). */
static DMM_COLD void victim_fault(dmm_heap *h, blk *v)
{
    dmm__heap_report(h, DMM_ERR_HEADER, v, "the designated victim's header was overwritten (block withheld)");
    VICTIM(h) = NULL;
}

/* Is the victim usable (checked when hardened)?  Drops it if not. */
static DMM_ALWAYS_INLINE bool victim_sound(dmm_heap *h, blk *v)
{
    if (HARDENED(h) && DMM_UNLIKELY(!victim_ok(h, v))) {
        victim_fault(h, v);
        return false;
    }
    return true;
}

/* The victim if it holds at least s bytes, else NULL.  It stays the
 * victim: finish_alloc sees the block is the victim and keeps the
 * remainder as the next one. */
static DMM_ALWAYS_INLINE blk *victim_fit(dmm_heap *h, size_t s)
{
    blk *v = VICTIM(h);
    if (!v || bsize(v) < s || !victim_sound(h, v))
        return NULL;
    return v;
}

/* The leaf's carve (engine/entry.h): a small request of s bytes whose
 * exact bin is empty is split from the victim's front when the rest stays
 * a block worth keeping (split_min), as dlmalloc's dv path does.  Only
 * reads until every check has passed; NULL sends the request to the full
 * path (which starts over, and reports a damaged victim). */
static DMM_ALWAYS_INLINE blk *victim_leaf(dmm_heap *h, size_t s)
{
    blk *v = VICTIM(h);
    size_t hd, vs;
    if (!v || h->heads[bin_of(h, s)] || h->cfg.coalesce_max != 0)
        return NULL;
    hd = v->head;
    vs = hd & ~F_MASK;
    if (vs < s || vs - s < h->split_min || (HARDENED(h) && DMM_UNLIKELY(!victim_ok(h, v))))
        return NULL;
    {
        blk *rem = bat(v, s);
        rem->head = (vs - s) | F_PUSED;
        bat(v, vs)->foot = vs - s; /* the next block's tag; its F_PUSED stays clear */
        v->head = s | F_USED | (hd & F_PUSED);
        VICTIM(h) = rem;
    }
    return v;
}

/* Puts the victim back in its bin (the deferred sweep, a new victim).
 * Returns true when there was one to put back. */
static DMM_ALWAYS_INLINE bool victim_retire(dmm_heap *h)
{
    blk *v = VICTIM(h);
    if (!v)
        return false;
    VICTIM(h) = NULL;
    if (!victim_sound(h, v))
        return false;
    bin_insert(h, v);
    return true;
}

/* rem, a free block just split off (mark_free done), becomes the victim;
 * the previous victim goes to its bin. */
static DMM_ALWAYS_INLINE void victim_replace(dmm_heap *h, blk *rem)
{
    victim_retire(h);
    VICTIM(h) = rem;
}

#endif

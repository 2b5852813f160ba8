/*
 * src/heap/engine/release.h - giving memory back: coalescing, the top
 * block, quick lists and the deferred sweep.  Engine part (see variant.h).
 */
#ifndef DMM_ENGINE_RELEASE_H
#define DMM_ENGINE_RELEASE_H

#include "bins.h"
#include "victim.h"

static inline void poison_fill(dmm_heap *h, void *from, const void *to)
{
    if (P_POISON(h) && (const char *)to > (char *)from)
        dmm_port_memset(from, (int)POISON_BYTE, (size_t)((const char *)to - (char *)from));
}

static inline bool can_merge(const dmm_heap *h, size_t a, size_t b)
{
    return h->cfg.coalesce_max == 0 || a + b <= h->cfg.coalesce_max;
}

/* b (not in any list; head = size | F_PUSED as it is, state bits clear)
 * becomes free memory: under immediate coalescing merged with its free
 * neighbours (and into the top block when it borders it), then inserted in
 * its bin, or given back when it now spans a whole grown region.  `fresh`
 * is where the bytes that still need poisoning start. */
static DMM_ALWAYS_INLINE void release_block(dmm_heap *h, blk *b, char *fresh)
{
    size_t s = bsize(b);
    char *end = (char *)b + s;
    char *fill_from = fresh;
    bool top = false, to_victim = false;
    blk *old_top = NULL;
    if (P_ORG(h) == DMM_ORG_ADDRTREE && P_COALESCE(h) == DMM_COALESCE_IMMEDIATE && h->cfg.coalesce_max == 0 &&
        !P_POISON(h) && !(P_GROW(h) && h->cfg.release_empty) && at_release(h, b))
        return; /* merged without restructuring the tree (engine/addrtree.h) */
    const lkeys k = keys_of(h); /* one load of the keys for every list touched */
    if (P_COALESCE(h) == DMM_COALESCE_IMMEDIATE) {
        blk *nx = bat(b, s);
        if (btop(nx)) {
            old_top = nx;
            s += bsize(nx);
            top = true;
            end = (char *)nx + HDR + LINKS; /* the rest of nx is poisoned already */
        } else if (P_VICTIM(h) && nx == VICTIM(h)) {
            /* the victim absorbs b (engine/victim.h) */
            if (can_merge(h, s, bsize(nx)) && victim_sound(h, nx)) {
                VICTIM(h) = NULL;
                s += bsize(nx);
                end = (char *)nx + HDR + LINKS;
                to_victim = true;
            }
        } else if (blisted(nx) && can_merge(h, s, bsize(nx)) && bin_remove_k(h, &k, nx)) {
            s += bsize(nx);
            end = (char *)nx + HDR + LINKS;
        }
        /* coalesce_max bounds merges of listed blocks only; the top absorbs
         * every free block before it, so none is ever left beside it */
        while (!bpused(b)) {
            blk *pv = bprev(b);
            if (P_VICTIM(h) && pv == VICTIM(h)) {
                if (!(top || can_merge(h, s, bsize(pv))) || !victim_sound(h, pv))
                    break;
                VICTIM(h) = NULL;
                to_victim = !top; /* merged into the top, it is the top */
            } else if (!blisted(pv) || !(top || can_merge(h, s, bsize(pv))) || !bin_remove_k(h, &k, pv))
                break;
            s += bsize(pv);
            fill_from = (char *)b;
            b = pv;
            if (!top)
                break;
        }
    }
    if (top)
        top_grew(h, old_top, b, (size_t)((char *)old_top - (char *)b)); /* it grows down to b */
    mark_free(b, s, top ? F_AUX : 0);
    DMM_ASSERT_LOCAL(!top || bsize(bnext(b)) == 0); /* the top is the region's last block */
    if (P_POISON(h)) {
        char *lo = (char *)bpayload(b) + LINKS;
        if (fill_from < lo)
            fill_from = lo;
        poison_fill(h, fill_from, end > (char *)bnext(b) ? (char *)bnext(b) : end);
    }
    if ((P_GROW(h) && h->cfg.release_empty && bpused(b) && dmm__region_release_if_empty(h, b)) || top)
        return;
    if (P_VICTIM(h) && to_victim) {
        VICTIM(h) = b;
        return;
    }
    bin_insert_k(h, &k, b);
}

/* The tail split off a block that malloc took: it becomes a listed free
 * block (or the designated victim, `to_victim`) without the merge checks
 * of release_block.  Nothing can merge with
 * it: its previous block is the one being handed out, and its next block
 * is not free under immediate coalescing (a listed block never has a free
 * neighbour, and one that bordered the top would have joined it), while
 * the other coalescing policies do not merge on release. */
static DMM_ALWAYS_INLINE void release_split(dmm_heap *h, blk *rem, size_t rs, bool to_victim)
{
    rem->head = rs | F_PUSED;
    mark_free(rem, rs, 0);
    if (P_POISON(h))
        poison_fill(h, (char *)bpayload(rem) + LINKS, bat(rem, rs));
    if (P_VICTIM(h) && to_victim)
        victim_replace(h, rem); /* it becomes the victim (engine/victim.h) */
    else
        bin_insert(h, rem);
}

/* Carves a used block of s bytes from the start of the cached top block
 * (h->top, the top of h->top_r), else from the first region whose top is
 * large enough.  The remainder stays the top unless it is below a minimum
 * block, in which case the whole top is taken.  NULL if no top fits. */
static DMM_ALWAYS_INLINE blk *carve_from(dmm_heap *h, blk *t, size_t s);

/* Hardened: does the size in the top block's header lead to its region's
 * sentinel?  An overflow of the block before the top can rewrite that
 * size; a carve trusting it would write the new sentinel tag wherever the
 * size points (and a later carve hand out memory outside the heap: the
 * attack known as "house of force").  The leaf paths leave a top that
 * fails this to carve_top, which reports it. */
static DMM_ALWAYS_INLINE bool top_intact(const dmm_heap *h, const blk *t)
{
    return !HARDENED(h) || DMM_LIKELY(bnext(t) == rsentinel(h->top_r));
}

/* The top failed top_intact: reported, nothing carved from it (its bytes
 * are lost to the allocator while its header stays damaged). */
static DMM_COLD blk *top_fault(dmm_heap *h, blk *t)
{
    dmm__heap_report(h, DMM_ERR_HEADER, t, "the top block's size was overwritten (overflow?): nothing carved from it");
    return NULL;
}

static DMM_ALWAYS_INLINE blk *carve_top(dmm_heap *h, size_t s)
{
    blk *t = h->top;
    if (DMM_UNLIKELY(!t || bsize(t) < s)) {
        if (!dmm__region_with_top(h, s)) /* makes it h->top */
            return NULL;
        t = h->top;
    }
    if (DMM_UNLIKELY(!top_intact(h, t)))
        return top_fault(h, t);
    return carve_from(h, t, s);
}

/* Carves s bytes from the start of top block t == h->top (of at least s
 * bytes) and hands them out used: each header word is written once (the
 * caller does not mark the block used again, see finish_alloc).  No
 * figure is kept: the top bytes and the extent are derived from h->top
 * when read (heap_internal.h, extent_now). */
static DMM_ALWAYS_INLINE blk *carve_from(dmm_heap *h, blk *t, size_t s)
{
    size_t hd = t->head, ts = hd & ~F_MASK;
    DMM_ASSERT(t == h->top && ts >= s);
    if (DMM_LIKELY(ts - s >= MINB)) {
        blk *nt = bat(t, s);
        nt->head = (ts - s) | F_PUSED | F_AUX; /* t is used */
        bat(t, ts)->foot = ts - s;             /* the sentinel: its F_PUSED stays clear */
        t->head = s | F_USED | (hd & F_PUSED);
        h->top = nt;
    } else {
        t->head = ts | F_USED | (hd & F_PUSED);
        bat(t, ts)->head |= F_PUSED;
        h->top = NULL;
    }
    return t;
}

/* ---- quick lists: exact-size LIFO stacks of blocks that stay "used" ---- */

static inline size_t quick_index(size_t s) { return (s - MINB) / GRAN; } /* size_t: no zero-extension per use */

static inline void quick_push(dmm_heap *h, blk *b)
{
    size_t q = quick_index(bsize(b));
    b->head |= F_AUX;
    set_next(h, b, h->quick[q]);
    h->quick[q] = b;
    if (h->cfg.quick_limit)
        h->quick_len[q]++; /* counted only where a limit reads it */
}

/* nx, the successor of popped block b in its quick list, failed the fast
 * check: the full one (a block in another region is no fault), else a
 * report.  Returns nx or NULL (the list ends at b). */
static DMM_COLD blk *quick_fault(dmm_heap *h, blk *b, blk *nx, size_t s)
{
    if (!node_ok(h, nx, F_STATE)) {
        list_fault(h, b, b, NULL, "a free-list link was overwritten (use after free?)");
        return NULL;
    }
    if (bsize(nx) == s)
        return nx;
    dmm__heap_report(h, DMM_ERR_FREE_LIST, nx, "a quick-list link names a block of another size");
    return NULL;
}

/* Pops a block of s bytes from its quick list.  The head is trusted: it
 * was checked when it became the head, as the successor of the block
 * popped before (in range, parked, of the list's size: one compare and
 * one header word). */
static DMM_ALWAYS_INLINE blk *quick_pop_x(dmm_heap *h, size_t s, bool leaf)
{
    size_t q;
    blk *b, *nx;
    if (s > h->quick_bmax)
        return NULL;
    q = quick_index(s);
    b = h->quick[q];
    if (!b)
        return NULL;
    if (HARDENED(h)) {
        lkeys k = keys_of(h);
        nx = k_next(h, &k, b);
        if (nx && DMM_UNLIKELY(!k_in(&k, nx) || (nx->head & ~F_PUSED) != (s | F_STATE) ||
                               (uintptr_t)nx - k.lo > k.span_g * GRAN - s)) {
            if (leaf)
                return NULL; /* nothing changed: the full path pops again and reports */
            nx = quick_fault(h, b, nx, s);
        }
    } else {
        nx = get_next(h, b);
    }
    h->quick[q] = nx;
    if (h->cfg.quick_limit)
        h->quick_len[q] = nx ? h->quick_len[q] - 1u : 0u; /* 0 also after a cut */
    st_steps(h, 1);
    b->head &= ~F_AUX; /* used, as a quick block already is */
    return b;
}
static DMM_ALWAYS_INLINE blk *quick_pop(dmm_heap *h, size_t s) { return quick_pop_x(h, s, false); }

/* May a freed block of s bytes go to its quick list? */
static DMM_ALWAYS_INLINE bool quick_takes(const dmm_heap *h, size_t s)
{
    return P_QUICK(h) && s <= h->quick_bmax &&
           (h->cfg.quick_limit == 0 || h->quick_len[quick_index(s)] < h->cfg.quick_limit);
}

/* Gives every quick-list block back to the bins.  Returns true if any. */
static inline bool quick_flush(dmm_heap *h)
{
    bool any = false;
    for (unsigned q = 0; q < h->nquick; q++) {
        blk *b = h->quick[q];
        h->quick[q] = NULL;
        h->quick_len[q] = 0;
        uint64_t k = 0;
        const uint64_t lim = max_nodes(h);
        while (b && !walk_too_long(h, ++k, lim, b, NULL)) {
            blk *nx = follow(h, b, F_STATE, NULL);
            b->head &= ~F_STATE;
            release_block(h, b, (char *)bnext(b));
            any = true;
            b = nx;
        }
    }
    return any;
}

/* Deferred coalescing: merge every run of adjacent free blocks (a run that
 * reaches the top block joins it). */
static inline void sweep(dmm_heap *h)
{
    region *r = h->regions;
    h->st.sweep_count++;
    if (P_VICTIM(h))
        victim_retire(h); /* the sweep merges listed blocks only */
    while (r) {
        region *rn = r->next; /* r may be released below */
        blk *b = rfirst(r);
        while (bsize(b) != 0) {
            blk *c = bnext(b);
            if (blisted(b) && !bused(c) && (btop(c) || can_merge(h, bsize(b), bsize(c))) && bin_remove(h, b)) {
                size_t s = bsize(b);
                bool top = false;
                while (!bused(c) && (btop(c) || can_merge(h, s, bsize(c)))) {
                    size_t cs = bsize(c);
                    top = btop(c);
                    if (top)
                        top_grew(h, c, b, s); /* the top absorbs the run */
                    else if (!bin_remove(h, c))
                        break;
                    poison_fill(h, c, (char *)c + HDR + LINKS);
                    s += cs;
                    c = bat(c, cs);
                    if (top)
                        break;
                }
                mark_free(b, s, top ? F_AUX : 0);
                if (P_GROW(h) && h->cfg.release_empty && bpused(b) && dmm__region_release_if_empty(h, b))
                    break;
                if (!top)
                    bin_insert(h, b);
            }
            b = c;
        }
        r = rn;
    }
}

#endif

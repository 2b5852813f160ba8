/*
 * src/heap/engine/realloc.h - resizing in place (shrink, absorb the next
 * free block, grow into the top) or by moving.  Engine part (see variant.h).
 */
#ifndef DMM_ENGINE_REALLOC_H
#define DMM_ENGINE_REALLOC_H

#include "alloc.h"
#include "free.h"

/* Shrinks used block b to s bytes in place if the tail is worth splitting. */
static inline void shrink_in_place(dmm_heap *h, blk *b, size_t s)
{
    size_t bs = bsize(b);
    if (P_SPLIT(h) && bs - s >= h->split_min) {
        blk *rem = bat(b, s);
        b->head = s | F_USED | (b->head & F_PUSED);
        rem->head = (bs - s) | F_PUSED;
        release_block(h, rem, (char *)bpayload(rem) + LINKS);
    }
}

/* Grows used block b to at least s bytes without moving it, by absorbing
 * the top or a free neighbour.  Returns false when neither fits. */
static inline bool grow_in_place(dmm_heap *h, blk *b, size_t s)
{
    size_t bs = bsize(b);
    blk *nx = bat(b, bs);
    if (btop(nx) && bs + bsize(nx) >= s) {
        size_t total = bs + bsize(nx), taken;
        blk *nt = NULL;
        if (total - s >= MINB) {
            nt = bat(b, s);
            nt->head = (total - s) | F_PUSED;
            mark_free(nt, total - s, F_AUX);
            bs = s;
        } else {
            bs = total;
        }
        taken = bs - bsize(b); /* bytes the top gave */
        /* the extent rises: nothing to note; the cache follows the top */
        if (nx == h->top)
            h->top = nt;
        else
            h->top_base += taken;
        b->head = bs | F_USED | (b->head & F_PUSED);
        bnext(b)->head |= F_PUSED;
        return true;
    }
    if (P_VICTIM(h) && nx == VICTIM(h)) {
        /* the victim is in no bin: absorbed without an unlink (engine/victim.h) */
        if (P_COALESCE(h) == DMM_COALESCE_OFF || bs + bsize(nx) < s || !can_merge(h, bs, bsize(nx)) ||
            !victim_sound(h, nx))
            return false;
        VICTIM(h) = NULL;
        bs += bsize(nx);
        b->head = bs | F_USED | (b->head & F_PUSED);
        bnext(b)->head |= F_PUSED;
        return true;
    }
    if (P_COALESCE(h) != DMM_COALESCE_OFF && blisted(nx) && bs + bsize(nx) >= s && can_merge(h, bs, bsize(nx)) &&
        bin_remove(h, nx)) {
        bs += bsize(nx);
        b->head = bs | F_USED | (b->head & F_PUSED);
        bnext(b)->head |= F_PUSED;
        return true;
    }
    return false;
}

static inline void *realloc_locked(dmm_heap *h, void *ptr, size_t align, size_t req)
{
    blk *b;
    size_t s, old_bs, old_req, old_usable;
    void *q;
    /* plain realloc passes GRAN; realloc_aligned any value, checked here */
    if (!dmm_is_pow2(align) || align > (SIZE_MAX >> 2)) {
        st_failed(h);
        return NULL;
    }
    if (!ptr)
        return align > GRAN ? aligned_locked(h, align, req) : alloc_locked(h, req, true);
    if (!(b = validate(h, ptr)))
        return NULL;
    COUNT_OP(h, realloc_count);
    if (req == 0) {
        free_block(h, b);
        return NULL;
    }
    s = req2size(h, req);
    if (!s) {
        st_failed(h);
        return NULL;
    }
    old_bs = bsize(b);
    old_req = requested_of(h, b);
    old_usable = usable_of(h, b);
    if ((align <= GRAN || ((uintptr_t)ptr & (align - 1u)) == 0) && (s <= old_bs || grow_in_place(h, b, s))) {
        st_sub_live(h, old_bs, old_req);
        shrink_in_place(h, b, s);
        if (P_STATS(h) == DMM_STATS_FULL)
            *req_slot(h, b) = req;
        if (P_HARDEN(h) >= DMM_HARDEN_CANARY)
            *canary_slot(b) = canary_of(h, b);
        st_add_live(h, bsize(b), req);
        dmm_ann_resize(ptr, req, old_usable, (char *)bnext(b) + WORD);
        return ptr;
    }
    q = align > GRAN ? aligned_locked(h, align, req) : alloc_locked(h, req, true);
    if (!q)
        return NULL;
    if (COUNTING(h))
        h->st.malloc_count--; /* counted as a realloc, not a malloc */
    dmm_port_memcpy(q, ptr, old_usable < req ? old_usable : req);
    free_block(h, b);
    if (COUNTING(h))
        h->st.free_count--;
    return q;
}

#endif

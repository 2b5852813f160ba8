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
#define E_VICTIM_LEAF(h) (P_VICTIM(h) && !P_POISON(h))

static DMM_ALWAYS_INLINE void *e_malloc_body(dmm_heap *h, size_t size, bool quick_ok)
{
    void *p;
    enter(h, DMM_OP_MALLOC);
    p = alloc_locked(h, size, quick_ok);
    leave(h);
    return p;
}
static DMM_NOINLINE void *e_malloc_full(dmm_heap *h, size_t size, bool quick_ok)
{
    return e_malloc_body(h, size, quick_ok);
}

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
/* Without a lock the victim word is read before enter(): no victim, no
 * second call.  With a lock it is read under it (e_malloc_victim). */
#define E_VICTIM_TAKES(h, s)                                                                               \
    (E_VICTIM_LEAF(h) && (s) != 0 && (s) < B_LIN_MAX(h) && (P_LOCK(h) != DMM_LOCK_NONE || VICTIM(h)))

static void *e_malloc(dmm_heap *h, size_t size)
{
    if (!E_QUICK_LEAF(h) && !E_VICTIM_LEAF(h))
        return e_malloc_body(h, size, true);
    size_t s = req2size(h, size);
    if (E_QUICK_LEAF(h) && s && s <= h->quick_bmax) {
        blk *b;
        enter(h, DMM_OP_MALLOC); /* the quick list is read under the heap's lock */
        if (!h->quick[quick_index(s)]) {
            leave(h);
            /* its quick list is empty: not looked at again */
            return E_VICTIM_TAKES(h, s) ? e_malloc_victim(h, size, s, false) : e_malloc_full(h, size, false);
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
    return E_VICTIM_TAKES(h, s) ? e_malloc_victim(h, size, s, true) : e_malloc_full(h, size, true);
}

/* free after enter(): b, if not NULL, passed validate() already. */
static DMM_NOINLINE void e_free_full(dmm_heap *h, void *ptr, blk *b)
{
    if (b || (b = validate(h, ptr)) != NULL)
        free_block(h, b);
    leave(h);
}

static void e_free(dmm_heap *h, void *ptr)
{
    blk *b;
    if (!ptr)
        return;
    enter(h, DMM_OP_FREE);
    if (E_QUICK_LEAF(h)) {
        size_t s;
        if ((b = validate_x(h, ptr, true)) != NULL && quick_takes(h, s = bsize(b))) {
            st_sub_live(h, s, requested_of(h, b));
            COUNT_OP(h, free_count);
            dmm_ann_free(bpayload(b), (char *)bnext(b) + WORD);
            quick_push(h, b);
            leave(h);
            return;
        }
        e_free_full(h, ptr, b);
        return;
    }
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

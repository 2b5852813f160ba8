/*
 * src/heap/check.c - the integrity checker, the block walker and the
 * statistics (snapshot and JSON).  Nothing here writes to the heap.
 */
#include "../core/text.h"
#include "../port/annotate.h"
#include "engine/bins.h"


/* ---- walker ----------------------------------------------------------- */

static bool header_sane(const region *r, const blk *b)
{
    size_t s = bsize(b);
    return s >= MINB && (s & F_MASK) == 0 && s <= (size_t)((const char *)rsentinel(r) - (const char *)b);
}

int dmm__heap_walk_locked(dmm_heap *h, dmm_heap_walk_fn fn, void *ctx)
{
    unsigned idx = 0;
    for (region *r = h->regions; r; r = r->next, idx++) {
        blk *sen = rsentinel(r);
        for (blk *b = rfirst(r); b != sen; b = bnext(b)) {
            dmm_heap_block_info info;
            int rc;
            if (!header_sane(r, b))
                return -1;
            info.block = &b->head; /* a block owns its head word up to the next head */
            info.payload = bpayload(b);
            info.block_size = bsize(b);
            info.region = idx;
            info.usable = 0;
            info.requested = 0;
            if (btop(b)) {
                info.state = DMM_BLOCK_TOP;
            } else if (bquick(b)) {
                info.state = DMM_BLOCK_QUICK;
            } else if (!bused(b)) {
                info.state = DMM_BLOCK_FREE;
            } else {
                info.state = DMM_BLOCK_USED;
                info.usable = usable_of(h, b);
                info.requested = P_STATS(h) == DMM_STATS_FULL ? *req_slot(h, b) : 0;
            }
            if ((rc = fn(ctx, &info)) != 0)
                return rc;
        }
    }
    return 0;
}

int dmm_heap_walk(dmm_heap *h, dmm_heap_walk_fn fn, void *ctx)
{
    int rc;
    if (!h || !fn)
        return -1;
    DMM_ANN_ENTER();
    dmm__heap_lock(h);
    rc = dmm__heap_walk_locked(h, fn, ctx);
    dmm__heap_unlock(h);
    DMM_ANN_LEAVE();
    return rc;
}

/* ---- checker ---------------------------------------------------------- */

typedef struct tally {
    size_t free_blocks, quick_blocks, used_blocks;
    size_t used_bytes, used_requested, region_bytes, top_bytes;
} tally;

static dmm_status fail(dmm_heap_check_report *rep, dmm_heap_invariant inv, const void *where, const char *detail)
{
    if (rep) {
        rep->invariant = inv;
        rep->where = where;
        rep->detail = detail;
    }
    return DMM_E_CORRUPT;
}

/* Is p the address of a plausible block start inside some region? */
static const region *region_holding(const dmm_heap *h, const void *p)
{
    const region *r = dmm__region_lookup(h, p);
    if (!r || (const char *)p < (const char *)rfirst(r) || (const char *)p >= (const char *)rsentinel(r))
        return NULL;
    return ((uintptr_t)p & (GRAN - 1u)) == 0 ? r : NULL;
}

static dmm_status check_regions(dmm_heap *h, tally *t, dmm_heap_check_report *rep)
{
    unsigned n = 0;
    bool immediate = P_COALESCE(h) == DMM_COALESCE_IMMEDIATE;
    for (region *r = h->regions; r; r = r->next) {
        blk *sen, *b, *last = NULL;
        bool last_free = false;
        if (++n > h->nregions)
            return fail(rep, DMM_INV_REGION, r, "region list longer than the region count (cycle?)");
        if (((uintptr_t)r & (GRAN - 1u)) || (r->size & (GRAN - 1u)) || r->size < RHDR + MINB + HDR)
            return fail(rep, DMM_INV_REGION, r, "region descriptor misaligned or too small");
        t->region_bytes += r->size;
        sen = rsentinel(r);
        for (b = rfirst(r); b < sen; b = bnext(b)) {
            size_t s = bsize(b);
            bool prev_used = last ? bused(last) : true;
            if (!header_sane(r, b))
                return fail(rep, DMM_INV_BLOCK_SIZE, b, "block size is not a granule multiple, below the minimum, or past the region end");
            if (bpused(b) != prev_used)
                return fail(rep, DMM_INV_BOUNDARY_TAG, b, "the previous-used flag differs from the previous block's state");
            if (!prev_used && b->foot != bsize(last))
                return fail(rep, DMM_INV_BOUNDARY_TAG, b, "size tag differs from the previous (free) block's size");
            if (btop(b)) {
                if (bnext(b) != sen)
                    return fail(rep, DMM_INV_BLOCK_SIZE, b, "top block is not the region's last block");
                if (immediate && last_free)
                    return fail(rep, DMM_INV_ADJACENT_FREE, b, "free block next to the top under immediate coalescing");
                t->top_bytes += s;
            } else if (blisted(b)) {
                if (immediate && last_free && (h->cfg.coalesce_max == 0 || s + bsize(last) <= h->cfg.coalesce_max))
                    return fail(rep, DMM_INV_ADJACENT_FREE, b, "two adjacent free blocks under immediate coalescing");
                t->free_blocks++;
            } else if (bquick(b)) {
                t->quick_blocks++;
            } else {
                t->used_blocks++;
                t->used_bytes += s;
                if (P_STATS(h) == DMM_STATS_FULL)
                    t->used_requested += *req_slot(h, b);
                if (P_HARDEN(h) >= DMM_HARDEN_CANARY && *canary_slot(b) != canary_of(h, b))
                    return fail(rep, DMM_INV_CANARY, b, "canary behind a used block was overwritten");
            }
            if (P_POISON(h) && (!bused(b) || bquick(b))) {
                const unsigned char *q = poison_mismatch((const unsigned char *)bpayload(b) + LINKS,
                                                         (const unsigned char *)bnext(b));
                if (q)
                    return fail(rep, DMM_INV_POISON, q, "a free block's poison pattern was overwritten (write after free)");
            }
            last_free = blisted(b);
            last = b;
        }
        if (b != sen)
            return fail(rep, DMM_INV_SENTINEL, b, "blocks run past the region's sentinel");
        if ((sen->head & ~F_PUSED) != F_USED || bpused(sen) != (last ? bused(last) : true) ||
            (!bpused(sen) && sen->foot != bsize(last)))
            return fail(rep, DMM_INV_SENTINEL, sen, "region sentinel damaged");
    }
    if (n != h->nregions)
        return fail(rep, DMM_INV_REGION, h, "region count differs from the region list");
    return DMM_OK;
}

static bool bit_of(const dmm_heap *h, unsigned i)
{
    return (h->bitmap[i / DMM_WORD_BITS] >> (i % DMM_WORD_BITS)) & 1u;
}

static dmm_status check_bins(dmm_heap *h, const tally *t, dmm_heap_check_report *rep)
{
    size_t total = 0;
    /* victim=on: the rover is the designated victim, a free block in no
     * bin (engine/victim.h); otherwise next fit's rover, on the list */
    blk *victim = P_VICTIM(h) ? h->rover : NULL;
    bool rover_seen = h->rover == NULL || P_VICTIM(h);
    if (victim) {
        const region *r = region_holding(h, victim);
        if (!r || !header_sane(r, victim) || !blisted(victim) || bnext(victim)->foot != bsize(victim) ||
            bpused(bnext(victim)))
            return fail(rep, DMM_INV_LIST_LINK, victim, "the designated victim is not a free block of this heap");
        total = 1; /* counted with the list nodes */
    }
    for (unsigned i = 0; i < h->nbins; i++) {
        blk *pred = NULL;
        for (blk *c = h->heads[i]; c; pred = c, c = get_next(h, c)) {
            const region *r = region_holding(h, c);
            if (++total > t->free_blocks)
                return fail(rep, DMM_INV_LIST_LINK, c, "more list nodes than free blocks (cycle or stale node)");
            if (!r || !header_sane(r, c) || !blisted(c) || bnext(c)->foot != bsize(c))
                return fail(rep, DMM_INV_LIST_LINK, c, "list node is not a free block of this heap");
            if (DOUBLY(h) && get_prev(h, c) != pred)
                return fail(rep, DMM_INV_LIST_LINK, c, "prev link does not point to the list predecessor");
            if (bin_of(h, bsize(c)) != i)
                return fail(rep, DMM_INV_LIST_BIN, c, "free block is in the wrong bin for its size");
            if (pred && P_ORDER(h) == DMM_ORDER_ADDRESS && pred >= c)
                return fail(rep, DMM_INV_LIST_ORDER, c, "address-ordered list out of order");
            if (pred && P_ORDER(h) == DMM_ORDER_SIZE && bsize(pred) > bsize(c))
                return fail(rep, DMM_INV_LIST_ORDER, c, "size-ordered list out of order");
            if (c == victim)
                return fail(rep, DMM_INV_LIST_LINK, c, "the designated victim is also in a bin");
            if (c == h->rover)
                rover_seen = true;
        }
        if (P_ORDER(h) == DMM_ORDER_FIFO && h->tails[i] != pred)
            return fail(rep, DMM_INV_LIST_LINK, &h->tails[i], "bin tail does not point to the last node");
        if (bit_of(h, i) != (h->heads[i] != NULL))
            return fail(rep, DMM_INV_BITMAP, &h->heads[i], "bitmap bit disagrees with the bin's emptiness");
    }
    for (unsigned w = 0; w < h->nwords; w++)
        if (((h->summary >> w) & 1u) != (h->bitmap[w] != 0))
            return fail(rep, DMM_INV_BITMAP, &h->bitmap[w], "summary bit disagrees with its bitmap word");
    if (h->nwords < DMM_WORD_BITS && (h->summary >> h->nwords))
        return fail(rep, DMM_INV_BITMAP, &h->summary, "summary has bits beyond the bitmap");
    if (total != t->free_blocks)
        return fail(rep, DMM_INV_FREE_COUNT, h, "free blocks in regions differ from nodes in the lists");
    if (!rover_seen)
        return fail(rep, DMM_INV_LIST_LINK, h->rover, "next-fit rover is not on the free list");
    return DMM_OK;
}

static dmm_status check_quick(dmm_heap *h, const tally *t, dmm_heap_check_report *rep)
{
    size_t total = 0;
    for (unsigned q = 0; q < h->nquick; q++) {
        unsigned len = 0;
        for (blk *c = h->quick[q]; c; c = get_next(h, c)) {
            const region *r = region_holding(h, c);
            if (++total > t->quick_blocks)
                return fail(rep, DMM_INV_QUICK, c, "more quick-list nodes than quick blocks (cycle?)");
            if (!r || !header_sane(r, c) || !bquick(c))
                return fail(rep, DMM_INV_QUICK, c, "quick-list node is not a parked block");
            if (bsize(c) != MINB + q * GRAN)
                return fail(rep, DMM_INV_QUICK, c, "quick-list node has the wrong size");
            len++;
        }
        /* the lengths are counted only under a limit (quick_push, quick_pop_x) */
        if (h->cfg.quick_limit && (len != h->quick_len[q] || len > h->cfg.quick_limit))
            return fail(rep, DMM_INV_QUICK, &h->quick[q], "quick-list length differs from its count or limit");
    }
    if (total != t->quick_blocks)
        return fail(rep, DMM_INV_QUICK, h, "quick blocks in regions differ from quick-list nodes");
    return DMM_OK;
}

/* The top and extent figures are derived when read from h->top (the top
 * block of h->top_r) and h->top_base (footprint minus the other regions'
 * top bytes), which carves and frees keep instead of counters: both must
 * agree with the blocks, and the recorded peak of the extent (taken when
 * it falls) with the footprint's. */
static dmm_status check_top(dmm_heap *h, const tally *t, dmm_heap_check_report *rep)
{
    const region *r = h->regions;
    while (r && r != h->top_r)
        r = r->next;
    if (!r)
        return fail(rep, DMM_INV_ACCOUNTING, &h->top_r, "the region of the last carve is not a region of the heap");
    if (h->top != rtop(r))
        return fail(rep, DMM_INV_ACCOUNTING, &h->top, "the cached top block is not its region's top block");
    if (h->top_base != h->st.footprint - (t->top_bytes - (h->top ? bsize(h->top) : 0u)))
        return fail(rep, DMM_INV_ACCOUNTING, &h->top_base, "top bytes differ from the top blocks' sizes");
    if (h->st.peak_footprint < h->st.footprint || h->st.peak_extent > h->st.peak_footprint)
        return fail(rep, DMM_INV_ACCOUNTING, &h->st.peak_extent, "extent or footprint above its recorded peak");
    return DMM_OK;
}

dmm_status dmm__heap_check_locked(dmm_heap *h, dmm_heap_check_report *rep)
{
    tally t = {0, 0, 0, 0, 0, 0, 0};
    dmm_status st;
    if (rep) {
        rep->invariant = DMM_INV_NONE;
        rep->where = NULL;
        rep->detail = "all invariants hold";
    }
    if (h->magic != HEAP_MAGIC || h->nbins == 0 ||
        h->heads != (blk **)(void *)((char *)h + dmm_align_up(sizeof(dmm_heap), sizeof(void *))) ||
        (h->tails != NULL) != (P_ORDER(h) == DMM_ORDER_FIFO))
        return fail(rep, DMM_INV_CONTROL, h, "control block damaged");
    if ((st = check_regions(h, &t, rep)) != DMM_OK)
        return st;
    if ((st = P_ORG(h) == DMM_ORG_ADDRTREE ? dmm__addrtree_check(h, t.free_blocks, rep) : check_bins(h, &t, rep)) !=
        DMM_OK)
        return st;
    if ((st = check_quick(h, &t, rep)) != DMM_OK)
        return st;
    if (t.region_bytes + ctrl_bytes(h) != h->st.footprint)
        return fail(rep, DMM_INV_ACCOUNTING, h, "footprint differs from the regions' sizes");
    if ((st = check_top(h, &t, rep)) != DMM_OK)
        return st;
    if (P_STATS(h) != DMM_STATS_OFF &&
        (h->st.malloc_count - h->st.free_count != t.used_blocks || h->st.live_block_bytes != t.used_bytes))
        return fail(rep, DMM_INV_ACCOUNTING, h, "live block count or bytes differ from the statistics");
    if (P_STATS(h) == DMM_STATS_FULL && h->st.live_requested != t.used_requested)
        return fail(rep, DMM_INV_ACCOUNTING, h, "live requested bytes differ from the statistics");
    return DMM_OK;
}

dmm_status dmm_heap_check(dmm_heap *h, dmm_heap_check_report *rep)
{
    dmm_status st;
    if (!h)
        return DMM_E_NULL;
    DMM_ANN_ENTER();
    dmm__heap_lock(h);
    st = dmm__heap_check_locked(h, rep);
    dmm__heap_unlock(h);
    DMM_ANN_LEAVE();
    return st;
}

/* ---- statistics ------------------------------------------------------- */

typedef struct free_sum {
    size_t bytes, largest;
} free_sum;

static int sum_free(void *ctx, const dmm_heap_block_info *info)
{
    free_sum *f = (free_sum *)ctx;
    if (info->state != DMM_BLOCK_USED) {
        f->bytes += info->block_size;
        if (info->state != DMM_BLOCK_QUICK && info->block_size > f->largest)
            f->largest = info->block_size;
    }
    return 0;
}

/* The statistics as the level promises them: at OFF only the footprint,
 * top and extent figures (kept at every level) survive. */
static dmm_heap_stats snapshot(const dmm_heap *h)
{
    dmm_heap_stats st = h->st;
    if (P_STATS(h) == DMM_STATS_OFF) {
        dmm_heap_stats z = {.malloc_count = 0};
        z.footprint = st.footprint;
        z.peak_footprint = st.peak_footprint;
        z.peak_extent = st.peak_extent;
        st = z;
    }
    st.live_count = (size_t)(st.malloc_count - st.free_count); /* derived: not counted per operation */
    /* derived, not counted per carve (note_extent, heap_internal.h) */
    st.extent = extent_now(h);
    st.top_bytes = st.footprint - st.extent;
    if (st.extent > st.peak_extent)
        st.peak_extent = st.extent;
    st.free_bytes = 0;
    st.largest_free = 0;
    return st;
}

dmm_heap_stats dmm_heap_get_counters(dmm_heap *h)
{
    dmm_heap_stats st;
    dmm__heap_lock(h);
    st = snapshot(h);
    dmm__heap_unlock(h);
    return st;
}

dmm_heap_stats dmm_heap_get_stats(dmm_heap *h)
{
    dmm_heap_stats st;
    free_sum f = {0, 0};
    DMM_ANN_ENTER();
    dmm__heap_lock(h);
    st = snapshot(h);
    (void)dmm__heap_walk_locked(h, sum_free, &f);
    dmm__heap_unlock(h);
    DMM_ANN_LEAVE();
    st.free_bytes = f.bytes;
    st.largest_free = f.largest;
    return st;
}


/* ---- for tests ------------------------------------------------------------ */

/* The word h would store in a link slot of the block whose payload is
 * `slot_payload` to name the block whose payload is `target_payload` (NULL:
 * the end of the list).  Internal: tests use it to forge links the way an
 * attacker who knows the keys would.  Not in the public header. */
uintptr_t dmm__heap_link_encode(dmm_heap *h, const void *slot_payload, const void *target_payload);
uintptr_t dmm__heap_link_encode(dmm_heap *h, const void *slot_payload, const void *target_payload)
{
    return (uintptr_t)lencode(h, bfrom(slot_payload), target_payload ? bfrom(target_payload) : NULL);
}

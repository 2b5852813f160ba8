/*
 * src/heap/region.c - regions: formatting, finding the region of an
 * address, the top-block cache, growth from OS pages and giving grown
 * regions back.  Compiled once (no policy is fixed here).
 */
#include "../port/annotate.h"
#include "policy.h" /* LINKS reads the organisation */

const region *dmm__region_lookup(const dmm_heap *h, const void *p)
{
    for (const region *r = h->regions; r; r = r->next)
        if ((uintptr_t)p - (uintptr_t)r < r->size)
            return r;
    return NULL;
}

region *dmm__region_find(dmm_heap *h, const void *p)
{
    region *r = (region *)(uintptr_t)dmm__region_lookup(h, p);
    if (r)
        set_hint(h, r);
    return r;
}

void dmm__top_sync(dmm_heap *h)
{
    size_t other = 0;
    for (const region *r = h->regions; r; r = r->next) {
        const blk *t = rtop(r);
        if (t && r != h->top_r)
            other += bsize(t);
    }
    h->top = rtop(h->top_r);
    h->top_base = h->st.footprint - other;
}

region *dmm__region_with_top(dmm_heap *h, size_t s)
{
    for (region *r = h->regions; r; r = r->next) {
        blk *t = rtop(r);
        if (t && bsize(t) >= s) {
            h->top_r = r;
            dmm__top_sync(h);
            return r;
        }
    }
    return NULL;
}

/* Formats [p, p+size) (GRAN-aligned, size a multiple of GRAN) as a region
 * holding one top block, and links it. */
void dmm__region_format(dmm_heap *h, void *p, size_t size, uintptr_t flags)
{
    region *r = (region *)p;
    blk *b, *sen;
    size_t bs = size - RHDR - HDR;
    dmm_ann_region(p, size);
    r->size = size;
    r->flags = flags;
    r->spare = 0;
    r->next = h->regions;
    h->regions = r;
    h->nregions++;
    h->top_r = r;
    b = rfirst(r);
    b->foot = 0;
    b->head = bs | F_PUSED | F_AUX;
    sen = rsentinel(r);
    sen->foot = bs;
    sen->head = F_USED;
    set_hint(h, r);
    /* poisoned from after the node words (a constant test in a frozen
     * build); under org=addrtree the three node words exceed a minimum
     * block's payload, so a top block of that size has nothing to poison */
    if (P_POISON(h) && (char *)sen > (char *)bpayload(b) + LINKS)
        dmm_port_memset((char *)bpayload(b) + LINKS, (int)POISON_BYTE,
                        (size_t)((char *)sen - ((char *)bpayload(b) + LINKS)));
    h->st.footprint += size;
    if (h->st.footprint > h->st.peak_footprint)
        h->st.peak_footprint = h->st.footprint;
    dmm__top_sync(h); /* the extent rises: its peak is taken when it falls or is read */
}

bool dmm__region_grow(dmm_heap *h, size_t s)
{
    size_t gran = h->cfg.grow_granularity, page = dmm_port_page_size();
    size_t need, chunk;
    void *p;
    if (s > (SIZE_MAX >> 2))
        return false;
    if (h->cfg.fit == DMM_FIT_GOOD && s >= h->lin_max)
        s += (size_t)1 << (dmm_log2_floor(s) - h->sub); /* reach the good-fit bin */
    if (s > SIZE_MAX - RHDR - HDR - gran - page)
        return false;
    need = s + RHDR + HDR;
    chunk = ((need + gran - 1u) / gran) * gran;
    chunk = dmm_align_up(chunk, page);
    p = dmm_port_pages_map(chunk);
    if (!p)
        return false;
    h->st.grow_count++;
    dmm__region_format(h, p, chunk, REGION_GROWN);
    return true;
}

/* Gives b's region back to the OS if it is a grown region that b (free,
 * first block of its region) now spans entirely.  Returns true if it did. */
bool dmm__region_release_if_empty(dmm_heap *h, blk *b)
{
    region *r = (region *)(void *)((char *)b - RHDR), **pp;
    if (region_of(h, b) != r || !(r->flags & REGION_GROWN) || bnext(b) != rsentinel(r))
        return false;
    note_extent(h); /* the extent falls by the region's own words */
    for (pp = &h->regions; *pp != r; pp = &(*pp)->next)
        ;
    *pp = r->next;
    h->nregions--;
    h->st.footprint -= r->size;
    h->st.release_count++;
    /* the caches never name a released region; the first buffer's region
     * is never released, so h->regions is not empty */
    set_hint(h, h->regions);
    if (h->top_r == r)
        h->top_r = h->regions;
    dmm__top_sync(h);
    dmm_port_pages_unmap(r, r->size);
    return true;
}

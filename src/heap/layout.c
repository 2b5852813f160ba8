/*
 * src/heap/layout.c - the sizes derived from a configuration: block sizes,
 * the bin range and count, the control block, and the overhead queries the
 * tools read (so that nobody outside the heap infers its block layout).
 */
#include "heap_internal.h"

/* The policy fields the layout depends on.  Every caller validated c first
 * (dmm__config_verdict), so in a frozen build they equal the header's
 * constants, and the compiler drops what other policies would need. */
#if DMM_HEAP_FROZEN
#define L_ORG(c) ((void)(c), (dmm_heap_org)(DMM_FROZEN_ORG))
#define L_ORDER(c) ((void)(c), (dmm_heap_order)(DMM_FROZEN_ORDER))
#define L_QUICK(c) (DMM_FROZEN_QUICK_MAX != 0 && (c)->quick_max != 0)
#define L_GROW(c) (DMM_FROZEN_GROW_GRANULARITY != 0 && (c)->grow_granularity != 0)
#define L_TAIL(c)                                                                                            \
    ((void)(c), (((DMM_FROZEN_STATS) == DMM_STATS_FULL) ? WORD : 0u) +                                      \
                    (((DMM_FROZEN_HARDEN) >= DMM_HARDEN_CANARY) ? WORD : 0u))
#else
#define L_ORG(c) ((c)->org)
#define L_ORDER(c) ((c)->order)
#define L_QUICK(c) ((c)->quick_max != 0)
#define L_GROW(c) ((c)->grow_granularity != 0)
#define L_TAIL(c) TAIL_BYTES_OF(c)
#endif

static unsigned bins_for(const dmm_heap_config *c, unsigned range)
{
    size_t lin_max = LIN_MAX_OF(L_ORG(c), c->sl_bits, c->exact_max);
    unsigned lin_log2 = dmm_log2_floor(lin_max);
    if (L_ORG(c) == DMM_ORG_SINGLE || L_ORG(c) == DMM_ORG_ADDRTREE)
        return 1; /* addrtree: one root here, the other in `rover` (engine/addrtree.h) */
    if (range <= lin_log2)
        return (unsigned)(((size_t)1 << range) / GRAN);
    return (unsigned)(lin_max / GRAN) + ((range - lin_log2) << c->sl_bits);
}

static unsigned quick_count(const dmm_heap_config *c)
{
    size_t s;
    if (!L_QUICK(c))
        return 0;
    s = dmm__req2size(c, c->quick_max);
    return (unsigned)((s - MINB) / GRAN + 1u);
}

size_t dmm__req2size(const dmm_heap_config *c, size_t req)
{
    return req2size_tail(req, L_TAIL(c));
}

static unsigned range_for(const dmm_heap_config *c, size_t bytes)
{
    unsigned r;
    unsigned maxr = (unsigned)DMM_WORD_BITS - 1u;
    if (c->max_block_log2)
        r = c->max_block_log2;
    else {
        size_t m = L_GROW(c) && c->grow_granularity > bytes ? c->grow_granularity : bytes;
        r = dmm_log2_ceil(m);
        if (r < dmm_log2_floor(MINB) + 1u)
            r = dmm_log2_floor(MINB) + 1u;
    }
    if (r > maxr)
        r = maxr;
    /* the two-level bitmap holds at most WORD_BITS^2 bins */
    while (r > 1 && bins_for(c, r) > DMM_WORD_BITS * DMM_WORD_BITS)
        r--;
    return r;
}

static size_t ctrl_size(const dmm_heap_config *c, unsigned range, unsigned *nbins_out)
{
    unsigned nb = bins_for(c, range);
    unsigned nw = (unsigned)((nb + DMM_WORD_BITS - 1u) / DMM_WORD_BITS);
    unsigned nq = quick_count(c);
    size_t s = dmm_align_up(sizeof(dmm_heap), sizeof(void *));
    s += nb * sizeof(blk *) * (L_ORDER(c) == DMM_ORDER_FIFO ? 2u : 1u); /* heads (+ tails) */
    s += nw * sizeof(size_t);
    s += nq * sizeof(blk *);
    s += nq * sizeof(unsigned);
    if (nbins_out)
        *nbins_out = nb;
    return dmm_align_up(s, GRAN);
}

/* The bin range and control block for a buffer of `bytes` (aligned): the
 * range follows the buffer size; when the larger control block of a larger
 * range would not leave room for a block, a smaller range is taken, so that
 * a larger buffer is never refused where a smaller one is accepted.  0 if
 * no range leaves room.  One call from init (the steps inline here). */
size_t dmm__heap_layout_for(const dmm_heap_config *c, size_t bytes, unsigned *range_out)
{
    unsigned range = range_for(c, bytes);
    size_t need = RHDR + dmm__req2size(c, 1) + HDR;
    for (;;) {
        size_t ctrl = ctrl_size(c, range, NULL);
        if (bytes >= ctrl && bytes - ctrl >= need) {
            *range_out = range;
            return ctrl;
        }
        if (c->max_block_log2 || range <= range_for(c, 1))
            return 0;
        range--;
    }
}

void dmm__heap_derive(dmm_heap *h, const dmm_heap_config *c, unsigned range)
{
    char *p = (char *)h + dmm_align_up(sizeof(dmm_heap), sizeof(void *));
    h->cfg = *c;
    h->tail_bytes = L_TAIL(c);
    h->split_min = c->split_min > MINB ? dmm_align_up(c->split_min, GRAN) : MINB;
    h->lin_max = LIN_MAX_OF(L_ORG(c), c->sl_bits, c->exact_max);
    h->lin_bins = (unsigned)(h->lin_max / GRAN);
    h->lin_log2 = dmm_log2_floor(h->lin_max);
    h->sub = c->sl_bits;
    h->range_log2 = range;
    h->nbins = bins_for(c, range);
    h->nwords = (unsigned)((h->nbins + DMM_WORD_BITS - 1u) / DMM_WORD_BITS);
    h->nquick = quick_count(c);
    h->quick_bmax = h->nquick ? MINB + (h->nquick - 1u) * GRAN : 0;
    h->heads = (blk **)(void *)p;
    p += h->nbins * sizeof(blk *);
    h->tails = NULL;
    if (L_ORDER(c) == DMM_ORDER_FIFO) {
        h->tails = (blk **)(void *)p;
        p += h->nbins * sizeof(blk *);
    }
    h->bitmap = (size_t *)(void *)p;
    p += h->nwords * sizeof(size_t);
    h->quick = (blk **)(void *)p;
    p += h->nquick * sizeof(blk *);
    h->quick_len = (unsigned *)(void *)p;
}

/* ---- overhead queries ---------------------------------------------------- */

size_t dmm_heap_block_overhead(const dmm_heap_config *c)
{
    if (dmm__config_verdict(c) != DMM_OK)
        return 0;
    return WORD + L_TAIL(c);
}

size_t dmm_heap_block_size(const dmm_heap_config *c, size_t request)
{
    if (dmm__config_verdict(c) != DMM_OK)
        return 0;
    return dmm__req2size(c, request);
}

size_t dmm_heap_control_overhead(const dmm_heap *h) { return h ? ctrl_bytes(h) : 0; }

size_t dmm_heap_region_overhead(void) { return RHDR + HDR; }

size_t dmm_heap_min_buffer(const dmm_heap_config *c)
{
    if (dmm__config_verdict(c) != DMM_OK)
        return 0;
    /* init uses the range range_for gives: max_block_log2 clamped to what
     * the bitmap holds, and with no max_block_log2 it falls back to smaller
     * ranges down to the smallest one (dmm__heap_layout_for) */
    return ctrl_size(c, range_for(c, 1), NULL) + RHDR + dmm__req2size(c, 1) + HDR;
}

/*
 * src/heap/heap_internal.h - what the heap's translation units share: the
 * control block, the block layout and the policy accessors.
 *
 * Block layout (all sizes multiples of GRAN = DMM_HEAP_ALIGN):
 *
 *   block:  [ prev  | head ] [ payload ........................ | tail ]
 *            size_t   size_t  ^ returned pointer (GRAN-aligned)
 *   prev  = size of the physically previous block, 0 for the first block of
 *           a region (boundary tag kept in the header, no footers);
 *   head  = size | F_USED | F_QUICK | F_TOP;
 *   tail  = words at the end of a used block: the requested size (stats
 *           FULL) then the canary (hardening >= CANARY), canary last.
 *   A free block keeps its list links in the first two payload words.
 *
 * Region: [ descriptor | block | block | ... | top | sentinel ]; the
 * sentinel is a header whose size is 0 and whose F_USED bit is set, so no
 * merge crosses it; its prev field tags the last block.  The top block
 * (F_TOP, at most one per region, always last) is memory never handed out
 * or given back since the region was formatted: allocation carves new
 * blocks from its start when no listed block fits, whatever the split
 * policy (the seed's P2012 allocator and dlmalloc both keep such a
 * "wilderness"); immediate and deferred coalescing merge into it.
 *
 * Invariants (checked by dmm_heap_check):
 *   next(b)->prev == size(b) for every block b of a region;
 *   every block with F_USED and F_TOP clear is in exactly one bin list, the one
 *   bin_of(size) names, and the bin's bitmap bit is set iff the list is
 *   non-empty; every F_QUICK block is in the quick list of its size;
 *   under immediate coalescing no two neighbours are free (unless the merge
 *   would pass coalesce_max);
 *   stats.live_block_bytes == sum of sizes of used, non-quick blocks.
 */
#ifndef DMM_HEAP_INTERNAL_H
#define DMM_HEAP_INTERNAL_H

#include <stdatomic.h>

#include "../core/bits.h"
#include "../port/port.h"
#include "dmm/heap.h"

#ifndef DMM_ASSERT_LEVEL
#define DMM_ASSERT_LEVEL 0
#endif

/* Level 1: cheap internal assertions; level 3: the full checker after every
 * public operation (debug builds). */
#define DMM_ASSERT(c)                                                                                        \
    do {                                                                                                     \
        if (DMM_ASSERT_LEVEL >= 1 && !(c))                                                                   \
            dmm_port_abort();                                                                                \
    } while (0)

#define GRAN ((size_t)DMM_HEAP_ALIGN)
#define WORD (sizeof(size_t))
#define HDR (2u * WORD)           /* block header */
#define MINB (2u * GRAN)          /* smallest block: header + two links */
#define LINKS (2u * WORD)         /* link words at the start of a free payload */
#define F_USED ((size_t)1)
#define F_QUICK ((size_t)2)
#define F_TOP ((size_t)4) /* the untouched end of a region (not in any list) */
#define F_MASK ((size_t)(GRAN - 1))
#define HEAP_MAGIC ((uintptr_t)0x646d6d68u) /* "dmmh" */
#define POISON_BYTE 0xDBu
#define REGION_GROWN ((uintptr_t)1)

typedef struct blk {
    size_t prev;
    size_t head;
} blk;

typedef struct region {
    struct region *next;
    size_t size;     /* bytes from descriptor to sentinel end */
    uintptr_t flags; /* REGION_GROWN */
    uintptr_t spare;
} region;

#define RHDR (dmm_align_up(sizeof(region), GRAN))

typedef struct bin {
    blk *head;
    blk *tail;
} bin;

struct dmm_heap {
    uintptr_t magic;
    dmm_heap_config cfg;
    size_t tail_bytes;   /* tail words of a used block */
    size_t split_min;    /* effective split threshold (>= MINB) */
    size_t lin_max;      /* sizes below: one bin per granule */
    unsigned lin_bins;   /* lin_max / GRAN */
    unsigned lin_log2;   /* log2(lin_max) */
    unsigned sub;        /* sl_bits */
    unsigned nbins;
    unsigned nwords;     /* bitmap words */
    unsigned nquick;
    unsigned range_log2; /* bins cover sizes below 2^range_log2 */
    size_t quick_bmax;   /* largest block size served by quick lists */
    bin *bins;
    size_t *bitmap;
    size_t summary;
    blk **quick;
    unsigned *quick_len;
    region *regions;
    unsigned nregions;
    blk *rover;          /* next fit: where the last search stopped */
    uintptr_t cookie;
    size_t ctrl_size;    /* bytes from the buffer start to the first region */
    void *buf;           /* the caller's first buffer, as given */
    size_t buf_size;
    size_t free_nodes;   /* blocks in bin lists */
    size_t quick_nodes;  /* blocks in quick lists */
    dmm_heap_stats st;
    uint64_t errors_seen;     /* misuse reports, kept at every stats level */
    uint64_t errors_at_enter; /* errors_seen when the current call began */
    atomic_flag spin;
    dmm_port_mutex mutex;
};

/* ---- policy accessors: runtime fields, or constants in frozen builds ---- */
#ifdef DMM_HEAP_CONFIG_HEADER
#include DMM_HEAP_CONFIG_HEADER
#define DMM_HEAP_FROZEN 1
#define P_ORG(h) ((void)(h), (dmm_heap_org)DMM_FROZEN_ORG)
#define P_LINKS(h) ((void)(h), (dmm_heap_links)DMM_FROZEN_LINKS)
#define P_ORDER(h) ((void)(h), (dmm_heap_order)DMM_FROZEN_ORDER)
#define P_FIT(h) ((void)(h), (dmm_heap_fit)DMM_FROZEN_FIT)
#define P_SPLIT(h) ((void)(h), (bool)DMM_FROZEN_SPLIT)
#define P_COALESCE(h) ((void)(h), (dmm_heap_coalesce)DMM_FROZEN_COALESCE)
#define P_QUICK(h) ((void)(h), DMM_FROZEN_QUICK_MAX != 0)
#define P_LOCK(h) ((void)(h), (dmm_heap_lock)DMM_FROZEN_LOCK)
#define P_STATS(h) ((void)(h), (dmm_heap_stats_level)DMM_FROZEN_STATS)
#define P_HARDEN(h) ((void)(h), (dmm_heap_harden)DMM_FROZEN_HARDEN)
#define P_POISON(h) ((void)(h), (bool)DMM_FROZEN_POISON)
#define P_GROW(h) ((void)(h), DMM_FROZEN_GROW_GRANULARITY != 0)
#else
#define DMM_HEAP_FROZEN 0
#define P_ORG(h) ((h)->cfg.org)
#define P_LINKS(h) ((h)->cfg.links)
#define P_ORDER(h) ((h)->cfg.order)
#define P_FIT(h) ((h)->cfg.fit)
#define P_SPLIT(h) ((h)->cfg.split)
#define P_COALESCE(h) ((h)->cfg.coalesce)
#define P_QUICK(h) ((h)->cfg.quick_max != 0)
#define P_LOCK(h) ((h)->cfg.lock)
#define P_STATS(h) ((h)->cfg.stats)
#define P_HARDEN(h) ((h)->cfg.harden)
#define P_POISON(h) ((h)->cfg.poison)
#define P_GROW(h) ((h)->cfg.grow_granularity != 0)
#endif

#define DOUBLY(h) (P_LINKS(h) == DMM_LINKS_DOUBLY)

/* ---- block helpers ---- */
static inline size_t bsize(const blk *b) { return b->head & ~F_MASK; }
static inline bool bused(const blk *b) { return (b->head & F_USED) != 0; }
static inline bool btop(const blk *b) { return (b->head & F_TOP) != 0; }
/* A free block that lives in a bin list (not used, not the top). */
static inline bool blisted(const blk *b) { return (b->head & (F_USED | F_TOP)) == 0; }
static inline blk *bnext(const blk *b) { return (blk *)(void *)((char *)(uintptr_t)b + bsize(b)); }
static inline blk *bprev(const blk *b) { return (blk *)(void *)((char *)(uintptr_t)b - b->prev); }
static inline void *bpayload(const blk *b) { return (char *)(uintptr_t)b + HDR; }
static inline blk *bfrom(const void *p) { return (blk *)(void *)((char *)(uintptr_t)p - HDR); }
static inline blk **lnext(const blk *b) { return (blk **)bpayload(b); }
static inline blk **lprev(const blk *b) { return (blk **)bpayload(b) + 1; }
static inline blk *rfirst(const region *r) { return (blk *)(void *)((char *)(uintptr_t)r + RHDR); }
static inline blk *rsentinel(const region *r) { return (blk *)(void *)((char *)(uintptr_t)r + r->size - HDR); }

/* Bytes of the control block as counted in the footprint (from h on;
 * ctrl_size also covers the alignment gap before h in the first buffer). */
static inline size_t ctrl_bytes(const dmm_heap *h) { return h->ctrl_size - (size_t)((const char *)h - (const char *)h->buf); }

static inline size_t usable_of(const dmm_heap *h, const blk *b) { return bsize(b) - HDR - h->tail_bytes; }
static inline uintptr_t canary_of(const dmm_heap *h, const blk *b) { return h->cookie ^ (uintptr_t)b; }
static inline size_t *canary_slot(const blk *b) { return (size_t *)(void *)((char *)bnext(b) - WORD); }
static inline size_t *req_slot(const dmm_heap *h, const blk *b)
{
    return (size_t *)(void *)((char *)bnext(b) - (P_HARDEN(h) >= DMM_HARDEN_CANARY ? 2u : 1u) * WORD);
}

/* First byte in [q, end) that is not the poison pattern, or NULL.  Word at a
 * time (both bounds are granule-aligned), bytes only to name the culprit. */
static inline const unsigned char *poison_mismatch(const unsigned char *q, const unsigned char *end)
{
    size_t pat = ~(size_t)0 / 0xFFu * POISON_BYTE;
    for (; q < end; q += WORD)
        if (*(const size_t *)(const void *)q != pat) {
            for (size_t i = 0; i < WORD; i++)
                if (q[i] != POISON_BYTE)
                    return q + i;
        }
    return NULL;
}

/* Block size for a request of req bytes on heap h; 0 if it would overflow.
 * (dmm__req2size computes the same from a config, before a heap exists.) */
static inline size_t req2size(const dmm_heap *h, size_t req)
{
    size_t s;
    if (req > SIZE_MAX - (HDR + 2u * WORD + GRAN))
        return 0;
    s = (req + HDR + h->tail_bytes + GRAN - 1u) & ~(GRAN - 1u);
    return s < MINB ? MINB : s;
}

/* Bin index of a block size (clamped to the last bin). */
static inline unsigned bin_of(const dmm_heap *h, size_t s)
{
    unsigned i;
    if (P_ORG(h) == DMM_ORG_SINGLE)
        return 0;
    if (s < h->lin_max) {
        i = (unsigned)(s / GRAN);
    } else {
        unsigned fl = dmm_log2_floor(s);
        unsigned sl = (unsigned)((s >> (fl - h->sub)) & (((size_t)1 << h->sub) - 1u));
        i = h->lin_bins + ((fl - h->lin_log2) << h->sub) + sl;
    }
    return i < h->nbins ? i : h->nbins - 1u;
}

/* First bin all of whose blocks are >= s (good fit). */
static inline unsigned bin_of_roundup(const dmm_heap *h, size_t s)
{
    if (s >= h->lin_max) {
        unsigned fl = dmm_log2_floor(s);
        size_t w = (size_t)1 << (fl - h->sub);
        if (s <= SIZE_MAX - w)
            s += w - 1u;
    }
    return bin_of(h, s);
}

/* Shared between translation units (config.c, check.c, heap.c). */
void dmm__heap_derive(dmm_heap *h, const dmm_heap_config *cfg, unsigned range_log2);
size_t dmm__heap_ctrl_size(const dmm_heap_config *cfg, unsigned range_log2, unsigned *nbins_out);
unsigned dmm__heap_range_for(const dmm_heap_config *cfg, size_t bytes);
void dmm__heap_lock(dmm_heap *h);
void dmm__heap_unlock(dmm_heap *h);
int dmm__heap_walk_locked(dmm_heap *h, dmm_heap_walk_fn fn, void *ctx);
dmm_status dmm__heap_check_locked(dmm_heap *h, dmm_heap_check_report *rep);
size_t dmm__req2size(const dmm_heap_config *cfg, size_t req);
/* dmm_heap_config_check without the sentence (links no reason text). */
dmm_status dmm__config_verdict(const dmm_heap_config *cfg);

#endif

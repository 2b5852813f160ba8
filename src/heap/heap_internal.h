/*
 * src/heap/heap_internal.h - what every translation unit of the heap shares:
 * the block layout, the region and control-block structures, the assertion
 * levels, and the functions compiled once (region.c, lock.c, check.c, ...).
 * The hot paths live in src/heap/engine/ and are compiled once per variant
 * (see variant.h); the policy accessors they use live in policy.h.
 *
 * Block layout (sizes are multiples of GRAN = DMM_HEAP_ALIGN; W = one word):
 *
 *            b                  b+W     b+2W = payload          b+size
 *   used:    [ foot (prev's) ][ head ][ payload ................][ foot' ]
 *   free:    [ foot (prev's) ][ head ][ next | prev | (poison) ][ size  ]
 *
 *   head = size | F_USED | F_PUSED | F_AUX
 *   foot = the word at the start of a block's span.  It holds the size of the
 *          physically previous block while that block is free (a boundary
 *          tag) and F_PUSED is then clear in head; while the previous block
 *          is used, the word belongs to that block's payload.  So a used
 *          block costs one header word: a 24-byte request needs a 32-byte
 *          block on 64-bit targets (16 on 32-bit for requests up to 12 B).
 *   F_AUX  on a used block: parked in a quick list; on a free block: the
 *          region's top (never carved since the region was formatted).
 *   tail   words at the end of a used block's usable span: the requested
 *          size (stats FULL) then the canary (hardening >= CANARY), the
 *          canary last (it sits in the next block's foot word).
 *   A free block keeps its list links in its first two payload words; from
 *   hardening CHECKED up they are stored encoded with per-heap keys
 *   (engine/bins.h) and every link is validated before it is followed.
 *
 * Region: [ descriptor | block | block | ... | top | sentinel ]; the
 * sentinel is a two-word block (foot, head) whose size is 0 and whose F_USED
 * bit is set, so no merge crosses it.  The first block of a region has
 * F_PUSED set (nothing before it to merge with).  The top block (free +
 * F_AUX, at most one per region, always last) is carved from its start when
 * no listed block fits, whatever the split policy; immediate and deferred
 * coalescing merge into it.
 *
 * Invariants (checked by dmm_heap_check):
 *   for every block b of a region: F_PUSED of next(b) == (b is used or
 *   quick); when F_PUSED of b is clear, foot(b) == size(prev(b));
 *   every free block that is not the top is in exactly one bin list, the
 *   one bin_of(size) names, and the bin's bitmap bit is set iff the list is
 *   non-empty; every quick block is in the quick list of its size;
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

/* ---- assertion levels ----------------------------------------------------
 * 0: none.  1: DMM_ASSERT, cheap checks that report the expression, file and
 * line through the port.  2: + DMM_ASSERT_LOCAL, local structural checks
 * (a block's neighbours agree with it).  3: + the full checker after every
 * public operation (debug builds). */
#ifndef DMM_ASSERT_LEVEL
#define DMM_ASSERT_LEVEL 0
#endif

#define DMM_ASSERT(c)                                                                                        \
    do {                                                                                                     \
        if (DMM_ASSERT_LEVEL >= 1 && !(c))                                                                   \
            dmm_port_assert_fail(#c, __FILE__, __LINE__);                                                    \
    } while (0)
#define DMM_ASSERT_LOCAL(c)                                                                                  \
    do {                                                                                                     \
        if (DMM_ASSERT_LEVEL >= 2 && !(c))                                                                   \
            dmm_port_assert_fail(#c, __FILE__, __LINE__);                                                    \
    } while (0)

#define GRAN ((size_t)DMM_HEAP_ALIGN)
#define WORD (sizeof(size_t))
#define HDR (2u * WORD)           /* block start to payload: foot + head */
#define MINB (2u * GRAN)          /* smallest block: head + two links + foot */
/* Bytes of node words at the start of a free payload (poisoning starts
 * after them): two links, plus the subtree maximum under org=addrtree.
 * LINKS reads the policy of the heap `h` in scope. */
#define LINKS_OF(org) ((org) == DMM_ORG_ADDRTREE ? 3u * WORD : 2u * WORD)
#define LINKS LINKS_OF(P_ORG(h))
#define F_USED ((size_t)1)
#define F_PUSED ((size_t)2)       /* the previous block is used: no foot */
#define F_AUX ((size_t)4)         /* used: quick-listed; free: the top */
#define F_MASK (GRAN - 1u)
#define F_STATE (F_USED | F_AUX)
#define HEAP_MAGIC ((uintptr_t)0x646d6d32u) /* "dmm2" */
#define POISON_BYTE 0xDBu
#define POISON_WORD (~(size_t)0 / 0xFFu * POISON_BYTE)
#define REGION_GROWN ((uintptr_t)1)

_Static_assert(DMM_HEAP_ALIGN >= 8, "three flag bits need a granule of at least 8 bytes");

typedef struct blk {
    size_t foot;
    size_t head;
} blk;

typedef struct region {
    struct region *next;
    size_t size;     /* bytes from descriptor to sentinel end */
    uintptr_t flags; /* REGION_GROWN */
    uintptr_t spare;
} region;

#define RHDR (dmm_align_up(sizeof(region), GRAN))

struct dmm_heap;
/* One compiled variant of the hot paths (src/heap/variant_*.c). */
typedef struct dmm__heap_ops {
    const char *name;
    bool (*accepts)(const dmm_heap_config *c);
    void *(*malloc)(struct dmm_heap *h, size_t n);
    void (*free)(struct dmm_heap *h, void *p);
    void *(*realloc)(struct dmm_heap *h, void *p, size_t align, size_t n);
    void *(*calloc)(struct dmm_heap *h, size_t n, size_t size);
    void *(*aligned)(struct dmm_heap *h, size_t align, size_t n);
    size_t (*usable)(struct dmm_heap *h, const void *p);
} dmm__heap_ops;

struct dmm_heap {
    uintptr_t magic;
    const dmm__heap_ops *ops; /* the variant chosen at init */
    uintptr_t link_key;       /* link secrets (hardening >= CHECKED), see */
    uintptr_t link_key2;      /* engine/bins.h: link = (target ^ key2) * key, */
    uintptr_t link_kinv;      /* key odd, kinv its inverse mod 2^bits */
    uintptr_t hint_lo;        /* the first block of the region of the last
                                 pointer looked up (the region: hint_r) ... */
    size_t hint_span;         /* ... and the bytes from there to its sentinel */
    region *top_r;            /* region the last carve came from */
    blk *top;                 /* top_r's top block, NULL if it has none: a
                                 carve finds its block in one load */
    size_t top_base;          /* footprint - top bytes outside `top`: the
                                 extent is top_base - bsize(top), derived
                                 when read (stats, checker), not kept per
                                 carve */
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
    unsigned nregions;
    size_t quick_bmax;   /* largest block size served by quick lists */
    blk **heads;         /* per bin: the list head */
    blk **tails;         /* per bin: the list tail, under FIFO order only
                            (NULL otherwise: no bytes, no writes) */
    size_t *bitmap;
    size_t summary;
    blk **quick;
    unsigned *quick_len;
    region *regions;
    blk *rover;          /* next fit: where the last search stopped;
                            org=addrtree: the small tree's root;
                            victim=on: the designated victim (NULL: none;
                            engine/victim.h).  The three never meet: next
                            fit needs org=single, the victim segregated
                            bins. */
    uintptr_t cookie;
    size_t ctrl_size;    /* bytes from the buffer start to the first region */
    void *buf;           /* the caller's first buffer, as given */
    dmm_heap_stats st;
    uint64_t errors_seen;     /* misuse reports, kept at every stats level */
#if DMM_ASSERT_LEVEL >= 3
    uint64_t errors_at_enter; /* errors_seen when the current call began (the
                                 checker after every call: level 3 only) */
#endif
    dmm_op op;           /* the public operation in progress (for reports);
                            here, beside the flags: no padding */
    bool damaged;        /* a corruption was detected and reported */
    atomic_flag spin;
    dmm_port_mutex mutex;
};

#ifdef DMM_HEAP_CONFIG_HEADER
#include DMM_HEAP_CONFIG_HEADER
#define DMM_HEAP_FROZEN 1
/* Headers written before the victim knob existed freeze it off. */
#ifndef DMM_FROZEN_VICTIM
#define DMM_FROZEN_VICTIM 0
#endif
#else
#define DMM_HEAP_FROZEN 0
#endif
/* 1: compile the preset variants (variant.h); 0: only the generic one. */
#ifndef DMM_HEAP_VARIANTS
#define DMM_HEAP_VARIANTS 1
#endif

/* ---- block helpers (layout only: no policy) ---- */
static inline size_t bsize(const blk *b) { return b->head & ~F_MASK; }
static inline bool bused(const blk *b) { return (b->head & F_USED) != 0; }
static inline bool bpused(const blk *b) { return (b->head & F_PUSED) != 0; }
static inline bool btop(const blk *b) { return (b->head & F_STATE) == F_AUX; }
static inline bool bquick(const blk *b) { return (b->head & F_STATE) == F_STATE; }
/* A free block that lives in a bin list (not used, not the top). */
static inline bool blisted(const blk *b) { return (b->head & F_STATE) == 0; }
static inline blk *bat(const void *p, size_t off) { return (blk *)(void *)((char *)(uintptr_t)p + off); }
static inline blk *bnext(const blk *b) { return bat(b, bsize(b)); }
static inline blk *bprev(const blk *b) { return (blk *)(void *)((char *)(uintptr_t)b - b->foot); }
static inline void *bpayload(const blk *b) { return (char *)(uintptr_t)b + HDR; }
static inline blk *bfrom(const void *p) { return (blk *)(void *)((char *)(uintptr_t)p - HDR); }
static inline blk **lnext(const blk *b) { return (blk **)bpayload(b); }
static inline blk **lprev(const blk *b) { return (blk **)bpayload(b) + 1; }
static inline blk *rfirst(const region *r) { return bat(r, RHDR); }
static inline blk *rsentinel(const region *r) { return bat(r, r->size - HDR); }

/* The top block of region r, or NULL when it has none. */
static inline blk *rtop(const region *r)
{
    blk *sen = rsentinel(r), *t;
    if (bpused(sen))
        return NULL;
    t = bprev(sen);
    return btop(t) ? t : NULL;
}

/* b becomes a free block of s bytes with state bits `aux` (0 or F_AUX):
 * writes its head (keeping F_PUSED), the next block's foot, and clears the
 * next block's F_PUSED. */
static inline void mark_free(blk *b, size_t s, size_t aux)
{
    blk *nx = bat(b, s);
    DMM_ASSERT(s >= MINB && (s & F_MASK) == 0);
    DMM_ASSERT_LOCAL(bpused(b) || bsize(bprev(b)) == b->foot);
    b->head = s | (b->head & F_PUSED) | aux;
    nx->foot = s;
    nx->head &= ~F_PUSED;
}

/* b (head = size | F_PUSED as it is) becomes used. */
static inline void mark_used(blk *b)
{
    DMM_ASSERT(bsize(b) >= MINB);
    DMM_ASSERT_LOCAL(bsize(bnext(b)) != 0 || bused(bnext(b))); /* the next block or the sentinel */
    b->head = (b->head & ~F_STATE) | F_USED;
    bnext(b)->head |= F_PUSED;
}

/* The extent (footprint - top bytes), derived from the cached top. */
static inline size_t extent_now(const dmm_heap *h) { return h->top_base - (h->top ? bsize(h->top) : 0u); }

/* The extent is about to go down (a block joins a top, a region goes
 * back): keep its high-water mark.  It rises only on carves and new
 * regions, so a mark taken before every fall, with the extent of the
 * moment at every read, is its exact peak; nothing is paid per carve. */
static inline void note_extent(dmm_heap *h)
{
    size_t ext = extent_now(h);
    if (ext > h->st.peak_extent)
        h->st.peak_extent = ext;
}

/* Top block t (the last block of its region) grows down by `add` bytes
 * to start at b: note the extent, update the cache.  Before t's or b's
 * head is rewritten. */
static inline void top_grew(dmm_heap *h, const blk *t, blk *b, size_t add)
{
    note_extent(h);
    if (t == h->top)
        h->top = b;
    else
        h->top_base -= add;
}

/* top_r or the regions changed: h->top and h->top_base recomputed. */
void dmm__top_sync(dmm_heap *h);

/* Bytes of the control block as counted in the footprint (from h on;
 * ctrl_size also covers the alignment gap before h in the first buffer). */
static inline size_t ctrl_bytes(const dmm_heap *h) { return h->ctrl_size - (size_t)((const char *)h - (const char *)h->buf); }

static inline size_t usable_of(const dmm_heap *h, const blk *b) { return bsize(b) - WORD - h->tail_bytes; }
static inline uintptr_t canary_of(const dmm_heap *h, const blk *b) { return h->cookie ^ (uintptr_t)b; }
static inline size_t *canary_slot(const blk *b) { return (size_t *)(void *)bnext(b); }
static inline size_t *req_slot(const dmm_heap *h, const blk *b)
{
    return (size_t *)(void *)((char *)bnext(b) - (h->cfg.harden >= DMM_HARDEN_CANARY ? WORD : 0u));
}

/* The region of the last look-up (derived: no word of its own). */
static inline region *hint_r(const dmm_heap *h) { return (region *)(h->hint_lo - RHDR); }

static inline void set_hint(dmm_heap *h, region *r)
{
    h->hint_lo = (uintptr_t)rfirst(r);
    h->hint_span = (size_t)((uintptr_t)rsentinel(r) - h->hint_lo);
}

/* The region holding p, or NULL: a walk that writes nothing (the checker
 * uses it); dmm__region_find also makes it the hint. */
const region *dmm__region_lookup(const dmm_heap *h, const void *p);
/* The region holding p, or NULL: O(1) when p is in the region of the last
 * look-up (always, for a heap of one region), else a walk of the regions. */
region *dmm__region_find(dmm_heap *h, const void *p);
static inline region *region_of(dmm_heap *h, const void *p)
{
    region *r = hint_r(h);
    if ((uintptr_t)p - (uintptr_t)r < r->size)
        return r;
    return dmm__region_find(h, p);
}

/* Is b a granule-aligned address from which a block could start in the
 * region of the last look-up ([first block, sentinel))?  One compare: the
 * fast path of every validation. */
static inline bool in_hint(const dmm_heap *h, const void *b)
{
    return (uintptr_t)b - h->hint_lo < h->hint_span && ((uintptr_t)b & (GRAN - 1u)) == 0;
}

/* If b is a granule-aligned address from which a block could start in some
 * region ([first block, sentinel)), that region's sentinel (how far a block
 * at b may reach), else NULL.  O(1) in the region of the last look-up. */
static inline const blk *block_room_slow(dmm_heap *h, const blk *b)
{
    region *r;
    if (((uintptr_t)b & (GRAN - 1u)) || !(r = region_of(h, b)) || b < rfirst(r) || b >= rsentinel(r))
        return NULL;
    return rsentinel(r);
}
static inline const blk *block_room(dmm_heap *h, const blk *b)
{
    if (DMM_LIKELY(in_hint(h, b)))
        return (const blk *)(h->hint_lo + h->hint_span);
    return block_room_slow(h, b);
}

/* First byte in [q, end) that is not the poison pattern, or NULL.  Word at a
 * time (both bounds are word-aligned), bytes only to name the culprit. */
static inline const unsigned char *poison_mismatch(const unsigned char *q, const unsigned char *end)
{
    for (; q < end; q += WORD)
        if (*(const size_t *)(const void *)q != POISON_WORD) {
            for (size_t i = 0; i < WORD; i++)
                if (q[i] != POISON_BYTE)
                    return q + i;
        }
    return NULL;
}

/* Tail words a used block carries under config c: the requested size
 * (stats FULL), then the canary (hardening >= CANARY). */
#define TAIL_BYTES_OF(c)                                                                                     \
    ((((c)->stats == DMM_STATS_FULL) ? WORD : 0u) + (((c)->harden >= DMM_HARDEN_CANARY) ? WORD : 0u))

/* The bin mapping's linear range: sizes below it get one bin per granule.
 * A macro so that variants and frozen builds fold it to a constant. */
#define LIN0_OF(sl_bits) ((size_t)GRAN << (sl_bits) < MINB ? MINB : (size_t)GRAN << (sl_bits))
#define LIN_MAX_OF(org, sl_bits, exact_max)                                                                 \
    (((org) == DMM_ORG_SEG_EXACT && (size_t)(exact_max) > LIN0_OF(sl_bits)) ? (size_t)(exact_max)          \
                                                                           : LIN0_OF(sl_bits))

/* Block size for a request of req bytes with tail bytes tail; 0 if it
 * would overflow. */
static inline size_t req2size_tail(size_t req, size_t tail)
{
    size_t s;
    if (req > SIZE_MAX - (HDR + 2u * WORD + GRAN))
        return 0;
    s = (req + WORD + tail + GRAN - 1u) & ~(GRAN - 1u);
    return s < MINB ? MINB : s;
}

/* ---- compiled once, shared by the variants ---- */
void dmm__heap_derive(dmm_heap *h, const dmm_heap_config *cfg, unsigned range_log2);
size_t dmm__heap_layout_for(const dmm_heap_config *cfg, size_t bytes, unsigned *range_out);
size_t dmm__req2size(const dmm_heap_config *cfg, size_t req);
/* dmm_heap_config_check without the sentence (links no reason text). */
dmm_status dmm__config_verdict(const dmm_heap_config *cfg);

void dmm__heap_lock(dmm_heap *h);
void dmm__heap_unlock(dmm_heap *h);
void dmm__heap_report(dmm_heap *h, dmm_error_kind kind, const void *ptr, const char *msg);
/* DMM_HEAP_ERROR_TEXT=0 (a compile definition): reports carry an empty
 * message, so that a firmware links none of the sentences (the error kind
 * still says what happened).  The parentheses in the definition (lock.c)
 * keep this macro from renaming it. */
#ifndef DMM_HEAP_ERROR_TEXT
#define DMM_HEAP_ERROR_TEXT 1
#endif
#if !DMM_HEAP_ERROR_TEXT
#define dmm__heap_report(h, kind, ptr, msg) (dmm__heap_report)((h), (kind), (ptr), "")
#endif
#if DMM_ASSERT_LEVEL >= 3
void dmm__heap_leave_check(dmm_heap *h);
#endif
int dmm__heap_walk_locked(dmm_heap *h, dmm_heap_walk_fn fn, void *ctx);
dmm_status dmm__heap_check_locked(dmm_heap *h, dmm_heap_check_report *rep);

void dmm__region_format(dmm_heap *h, void *p, size_t size, uintptr_t flags);
bool dmm__region_grow(dmm_heap *h, size_t s);
bool dmm__region_release_if_empty(dmm_heap *h, blk *b);
region *dmm__region_with_top(dmm_heap *h, size_t s);

/* The variants compiled into this library, most specific first; the last
 * accepts every valid config.  A frozen build has exactly one. */
extern const dmm__heap_ops *const dmm__heap_variants[];
extern const unsigned dmm__heap_variant_count;

#endif

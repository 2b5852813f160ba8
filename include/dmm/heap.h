/*
 * dmm/heap.h - the policy-configurable heap.
 *
 * A dmm_heap lives entirely in memory the caller provides: the control
 * block sits at the start of the first buffer, blocks fill the rest.  The
 * heap never allocates behind the caller's back; it only asks the port layer
 * for OS pages when growth is enabled (config.grow_granularity > 0).
 *
 * Every policy (free-list organisation, links, ordering, fit, splitting,
 * coalescing, quick lists, lock, statistics, hardening) is chosen per
 * instance through dmm_heap_config at run time.  The same source can be
 * frozen to one configuration at build time (see docs/heap.md, "Freezing a
 * configuration"): the policy reads become constants and the compiler drops
 * the branches of every other policy.
 *
 * Block layout: a used block costs one header word (size + flags) before
 * its payload; the previous block's size is kept in the word before that
 * only while the previous block is free (docs/heap.md, "Memory layout").
 * Block sizes are multiples of DMM_HEAP_ALIGN and payloads are aligned to
 * it (2 * sizeof(size_t): 16 bytes on 64-bit, 8 on 32-bit).  Used blocks
 * may carry tail words (a canary at hardening >= CANARY, the requested size
 * at statistics level FULL).
 *
 * Thread-safety: with lock kind NONE a heap must only be used by one thread
 * at a time.  With SPIN, MUTEX or USER every function below that takes a
 * dmm_heap* is safe to call concurrently on the same heap, except init,
 * reset and destroy, which need exclusive access.  Different heaps are
 * always independent.
 *
 * Notation for complexities: n = free blocks in the list(s) searched,
 * r = regions, B = bins.  "O(1)" means bounded by a constant independent of
 * the heap's contents.
 */
#ifndef DMM_HEAP_H
#define DMM_HEAP_H

#include "dmm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Payload alignment of every block and granule of every block size. */
#define DMM_HEAP_ALIGN (2u * sizeof(size_t))

/* Opaque heap handle.  It points into the caller's first buffer. */
typedef struct dmm_heap dmm_heap;

typedef enum dmm_heap_org {
    DMM_ORG_SINGLE = 0,    /* one free list for all sizes */
    DMM_ORG_SEG_EXACT,     /* one bin per granule up to exact_max, then
                              sl_bits sub-bins per power of two */
    DMM_ORG_SEG_GEOMETRIC, /* one bin per power of two (sl_bits sub-bins) */
    DMM_ORG_TLSF,          /* two-level segregated fit: 2^sl_bits sub-bins per
                              power of two, bitmaps on both levels */
    DMM_ORG_ADDRTREE       /* address-ordered first fit through balanced trees
                              keyed by address, each node holding its subtree's
                              largest block: O(log n) (needs fit=first and
                              order=address; links does not apply) */
} dmm_heap_org;

typedef enum dmm_heap_links {
    DMM_LINKS_SINGLY = 0, /* next pointer only: removing a block found by a
                             search is O(1), removing an arbitrary block (for
                             coalescing or in-place realloc) walks its list */
    DMM_LINKS_DOUBLY      /* next and prev: every removal is O(1) */
} dmm_heap_links;

typedef enum dmm_heap_order {
    DMM_ORDER_LIFO = 0, /* freed blocks go to the head: O(1) insert */
    DMM_ORDER_FIFO,     /* freed blocks go to the tail: O(1) insert */
    DMM_ORDER_ADDRESS,  /* sorted by address: O(n) insert */
    DMM_ORDER_SIZE      /* sorted by size, ascending: O(n) insert; first fit
                           in such a list is best fit */
} dmm_heap_order;

typedef enum dmm_heap_fit {
    DMM_FIT_FIRST = 0, /* first block that is large enough */
    DMM_FIT_NEXT,      /* first fit starting where the last search stopped
                          (needs DMM_ORG_SINGLE) */
    DMM_FIT_BEST,      /* smallest block that is large enough */
    DMM_FIT_EXACT,     /* a block of exactly the needed size if the size's
                          bin has one, else first fit */
    DMM_FIT_GOOD       /* round the request up to the next bin boundary and
                          take the head of the first non-empty bin: O(1)
                          (needs a segregated organisation) */
} dmm_heap_fit;

typedef enum dmm_heap_coalesce {
    DMM_COALESCE_OFF = 0,  /* free blocks never merge */
    DMM_COALESCE_IMMEDIATE,/* merge with free neighbours on every free */
    DMM_COALESCE_DEFERRED  /* merge all adjacent free blocks in one sweep when
                              an allocation would otherwise fail */
} dmm_heap_coalesce;

typedef enum dmm_heap_lock {
    DMM_LOCK_NONE = 0,
    DMM_LOCK_SPIN,  /* C11 atomic_flag test-and-set spinlock */
    DMM_LOCK_MUTEX, /* the port layer's mutex (refused when the port has none) */
    DMM_LOCK_USER   /* config.lock_hooks */
} dmm_heap_lock;

typedef enum dmm_heap_stats_level {
    DMM_STATS_OFF = 0,  /* nothing counted (footprint is still known) */
    DMM_STATS_COUNTERS, /* operation counts, failures, live/peak block bytes,
                           footprint */
    DMM_STATS_FULL      /* + requested-size histogram, live/peak requested
                           bytes (costs one tail word per used block) and
                           free-list search steps */
} dmm_heap_stats_level;

typedef enum dmm_heap_harden {
    DMM_HARDEN_OFF = 0, /* pointers handed back are trusted */
    DMM_HARDEN_CHECKED, /* every pointer handed back is validated before
                           anything is written (O(1) in the region used
                           last, else O(r)): foreign, misaligned, invalid
                           (interior) pointers, double frees and broken
                           size tags are reported through the error
                           callback; free-list links are stored XOR-ed with
                           a per-heap key and validated before they are
                           followed (a bad one is reported, never used) */
    DMM_HARDEN_CANARY,  /* + a canary word behind every used block, checked
                           on free/realloc and by the checker (overflow into
                           the next block is caught) */
    DMM_HARDEN_PARANOID /* + exact validation: the pointer must be found by
                           walking its region (O(blocks in region)) */
} dmm_heap_harden;

typedef struct dmm_heap_config {
    dmm_heap_org org;
    unsigned sl_bits;   /* sub-bins per power of two = 2^sl_bits (0..5); for
                           SEG_GEOMETRIC, SEG_EXACT and TLSF */
    size_t exact_max;   /* SEG_EXACT: block sizes below this each have their
                           own bin (power of two, 4*DMM_HEAP_ALIGN..65536) */
    dmm_heap_links links;
    dmm_heap_order order;
    dmm_heap_fit fit;

    bool split;          /* split a larger block on allocation */
    bool victim;         /* dlmalloc's designated victim: the remainder of
                            the last split stays out of the bins and serves
                            the next small requests its exact bin cannot
                            (needs segregated bins and split).  Next to
                            split: it fills padding, the struct (and every
                            control block) keeps its size */
    size_t split_min;    /* smallest remainder worth splitting off, bytes
                            (raised to the minimum block size) */

    dmm_heap_coalesce coalesce;
    size_t coalesce_max; /* largest block a merge may create (0 = no limit) */

    size_t quick_max;    /* requests up to this many bytes are served from
                            exact-size quick lists (0 = no quick lists) */
    unsigned quick_limit;/* most blocks one quick list holds (0 = no limit) */

    dmm_heap_lock lock;
    dmm_lock_hooks lock_hooks; /* for DMM_LOCK_USER */

    dmm_heap_stats_level stats;
    dmm_heap_harden harden;
    bool poison;         /* fill freed payloads with a pattern; the checker
                            and the allocation path verify it */
    dmm_error_policy on_error;
    dmm_error_fn error_fn;  /* may be NULL */
    void *error_ctx;

    size_t grow_granularity; /* > 0: when no block fits, map OS pages in
                                multiples of this size as a new region */
    bool release_empty;      /* give a grown region back when it becomes
                                entirely free */
    unsigned max_block_log2; /* bins cover block sizes below 2^max_block_log2;
                                larger blocks share the last bin.  0 = derive
                                from the first buffer and grow_granularity */
    uintptr_t cookie;        /* secret mixed into canaries (0 = derived from
                                the heap's address) */
} dmm_heap_config;

/* The classic algorithms, expressed as points of the same design space. */
typedef enum dmm_heap_preset {
    DMM_PRESET_DLMALLOC = 0, /* exact small bins + sorted large bins, best fit,
                                immediate coalescing, splitting, quick lists */
    DMM_PRESET_TLSF,         /* two-level segregated good fit, O(1) */
    DMM_PRESET_HALFFIT,      /* power-of-two bins, good fit, O(1) */
    DMM_PRESET_FIRSTFIT,     /* one address-ordered doubly-linked list,
                                first fit, splitting, immediate coalescing */
    DMM_PRESET_P2012,        /* the seed's custom allocator: one singly-linked
                                LIFO list, first fit, no splitting, no
                                coalescing */
    DMM_PRESET_COUNT
} dmm_heap_preset;

/* A plain, valid default: TLSF-like, no lock, counters, checked hardening. */
dmm_heap_config dmm_heap_default_config(void);

/* The configuration of a preset.  An out-of-range preset gives the default. */
dmm_heap_config dmm_heap_preset_config(dmm_heap_preset p);

/* "dlmalloc", "tlsf", "halffit", "firstfit", "p2012"; NULL if out of range. */
const char *dmm_heap_preset_name(dmm_heap_preset p);

/* Preset by name; DMM_E_RANGE if unknown. */
dmm_status dmm_heap_preset_from_name(const char *name, dmm_heap_preset *out);

/* Validates a configuration.  Returns DMM_OK, or DMM_E_CONFIG /
 * DMM_E_UNSUPPORTED with *reason (if non-NULL) set to a static sentence that
 * says what is wrong.  Pure function, O(1). */
dmm_status dmm_heap_config_check(const dmm_heap_config *cfg, const char **reason);

/* Parses "key=value,key=value" into *cfg (keys as in docs/heap.md, e.g.
 * "preset=tlsf,fit=best,split_min=64"; "preset=" resets to that preset
 * first; whitespace around tokens is ignored).  Fields not named keep their
 * value.  On error returns DMM_E_CONFIG, leaves *cfg unchanged and sets
 * *err to a static message.  The result is not validated: call
 * dmm_heap_config_check. */
dmm_status dmm_heap_config_parse(const char *text, dmm_heap_config *cfg, const char **err);

/* Writes cfg in the form dmm_heap_config_parse reads, NUL-terminated,
 * truncated to cap bytes.  Returns the length the full text needs (without
 * the NUL), like snprintf. */
size_t dmm_heap_config_format(const dmm_heap_config *cfg, char *buf, size_t cap);

/* Writes a header that freezes cfg at build time (docs/heap.md, "Freezing a
 * configuration"): a comment with `name` (may be NULL) and cfg's text form,
 * then one "#define DMM_FROZEN_<FIELD> VALUE" per frozen field (ORG, SL_BITS,
 * EXACT_MAX, LINKS, ORDER, FIT, SPLIT, COALESCE, QUICK_MAX, LOCK, STATS,
 * HARDEN, POISON, GROW_GRANULARITY), enum values as their constant names.
 * NUL-terminated, truncated to cap bytes; returns the length the full text
 * needs, like snprintf.  Writes "" and returns 0 when cfg is NULL or a field
 * is out of range; the cross-field rules are not checked (call
 * dmm_heap_config_check first).  The configs/frozen/ headers are its output
 * (tools: dmm-config header). */
size_t dmm_heap_config_header(const dmm_heap_config *cfg, const char *name, char *buf, size_t cap);

/* Writes the configuration's field list as JSON, NUL-terminated, truncated
 * to cap bytes, returning the length the full text needs:
 *   {"component":"heap","fields":[{"name":"org","kind":"enum",
 *    "values":["single",...],"default":"tlsf","frozen":"fixed",
 *    "macro":"DMM_FROZEN_ORG","help":"..."},...],"presets":[...]}
 * Numbers have "max" (largest valid) and "parse_max" (largest the text
 * form reads) instead of "values"; "frozen" is runtime, value, fixed or
 * onoff.  Front ends read it instead of keeping their own tables. */
size_t dmm_heap_config_fields_json(char *buf, size_t cap);

/* Smallest buffer dmm_heap_init accepts for cfg and bin range max_block_log2
 * (0 = the smallest range), with room for one smallest block; 0 if cfg is
 * invalid.  Misaligned buffers need up to DMM_HEAP_ALIGN - 1 bytes more. */
size_t dmm_heap_min_buffer(const dmm_heap_config *cfg);

/* Bytes a used block costs beyond its payload alignment rounding: the one
 * header word plus the tail words under cfg.  0 if cfg is invalid. */
size_t dmm_heap_block_overhead(const dmm_heap_config *cfg);

/* Block size, in bytes, that a request of `request` bytes takes under cfg
 * (header word, payload rounded to DMM_HEAP_ALIGN, tail words; at least the
 * minimum block).  0 if cfg is invalid or the size would overflow.  The
 * heap hands out exactly this size unless the remainder of the block it
 * found is too small to split off.  O(1). */
size_t dmm_heap_block_size(const dmm_heap_config *cfg, size_t request);

/* Per-region overhead: region descriptor plus end sentinel, in bytes. */
size_t dmm_heap_region_overhead(void);

/* Bytes of h's control block as counted in its footprint: footprint =
 * control overhead + the regions' sizes (an alignment gap before the
 * control block in a misaligned first buffer is in neither).  O(1). */
size_t dmm_heap_control_overhead(const dmm_heap *h);

/* Creates a heap in buf[0, size).  buf need not be aligned.  The control
 * block is placed at the start and the rest becomes the first region.
 * Fails with DMM_E_NULL (out or buf NULL), DMM_E_CONFIG / DMM_E_UNSUPPORTED
 * (see dmm_heap_config_check; also when this build was frozen to another
 * config), DMM_E_TOO_SMALL (size below dmm_heap_min_buffer).  On failure
 * *out is NULL and buf is not written.  cfg NULL means the default config
 * (or, in a frozen build, the frozen one).  O(B). */
dmm_status dmm_heap_init(dmm_heap **out, void *buf, size_t size, const dmm_heap_config *cfg);

/* Adds buf[0, size) as a further region.  Fails with DMM_E_NULL,
 * DMM_E_TOO_SMALL (cannot hold a region descriptor, one block and the
 * sentinel), DMM_E_OVERLAP (overlaps a region of this heap).  O(r). */
dmm_status dmm_heap_add_region(dmm_heap *h, void *buf, size_t size);

/* Forgets every allocation: caller regions become one free block each,
 * grown regions are released to the OS, statistics restart.  O(B + r). */
void dmm_heap_reset(dmm_heap *h);

/* Releases grown regions and the lock.  The caller's buffers may be reused
 * afterwards; h must not be used again.  O(r). */
void dmm_heap_destroy(dmm_heap *h);

/* Allocates size bytes aligned to DMM_HEAP_ALIGN.  size 0 allocates a
 * minimum block (a unique pointer).  Returns NULL when no block fits (after
 * flushing quick lists, a deferred-coalescing sweep and growth, where those
 * are enabled) or when size is so large that the block size would overflow.
 * Time: O(1) for GOOD fit, else O(n) (O(n) + O(blocks) when a deferred sweep
 * runs). */
void *dmm_heap_malloc(dmm_heap *h, size_t size);

/* n * size zeroed bytes; NULL when n * size overflows or malloc fails. */
void *dmm_heap_calloc(dmm_heap *h, size_t n, size_t size);

/* Resizes: ptr NULL behaves as malloc; size 0 frees ptr and returns NULL.
 * Shrinks in place (splitting the tail off when splitting allows); grows in
 * place when the next block is free and large enough (needs coalescing not
 * OFF); otherwise allocates, copies min(old usable, size) bytes and frees.
 * Returns NULL on failure, leaving ptr valid and untouched.  The result is
 * DMM_HEAP_ALIGN-aligned only: use dmm_heap_realloc_aligned to keep a
 * larger alignment. */
void *dmm_heap_realloc(dmm_heap *h, void *ptr, size_t size);

/* Allocates size bytes at an address that is a multiple of align.  align
 * must be a power of two, at most half of SIZE_MAX's range; otherwise NULL.
 * The leading gap is always split off as a free block, even when splitting
 * is off. */
void *dmm_heap_aligned_alloc(dmm_heap *h, size_t align, size_t size);

/* realloc whose result is aligned to align (a power of two): resized in
 * place when ptr already has that alignment and the block allows, else
 * moved to a block with it.  Same failure rules as realloc + aligned_alloc. */
void *dmm_heap_realloc_aligned(dmm_heap *h, void *ptr, size_t align, size_t size);

/* Returns a block to the heap; NULL is ignored.  With hardening on, a
 * pointer this heap did not hand out or a double free is reported and
 * nothing is written.  O(1) with LIFO/FIFO and doubly links (validation is
 * O(1) in the region used last, else O(r)); O(n) with sorted ordering or
 * singly links + coalescing. */
void dmm_heap_free(dmm_heap *h, void *ptr);

/* Bytes the caller may use at ptr (>= the size requested); 0 for NULL or an
 * invalid pointer under hardening. */
size_t dmm_heap_usable_size(dmm_heap *h, const void *ptr);

/* The same for ptr, a live block of h that the caller holds, read from the
 * block's own header alone: no lock is taken and nothing is checked or
 * written, so another thread may use h meanwhile (a heap with lock=none
 * included; dmm_heap_usable_size validates the block against its
 * neighbours, which that thread may be changing).  For a pointer that is
 * not a live block of h the result is meaningless. */
size_t dmm_heap_block_usable_size(const dmm_heap *h, const void *ptr);

/* ---- statistics ---------------------------------------------------- */

#define DMM_HEAP_HIST_BUCKETS 32 /* bucket i: requests in [2^(i-1), 2^i); 0: size 0 */

typedef struct dmm_heap_stats {
    uint64_t malloc_count;   /* successful malloc (and calloc/aligned) calls */
    uint64_t calloc_count;
    uint64_t realloc_count;
    uint64_t aligned_count;
    uint64_t free_count;     /* frees of non-NULL pointers */
    uint64_t failed_count;   /* allocation requests that returned NULL */
    uint64_t error_count;    /* misuse reports (hardening) */
    uint64_t search_steps;   /* FULL only: free-list nodes visited (the
                                seed's "memory accesses" of the allocator) */
    uint64_t search_max;     /* FULL only: most nodes visited by one request */
    uint64_t sweep_count;    /* deferred-coalescing sweeps */
    uint64_t grow_count;     /* regions mapped from the OS */
    uint64_t release_count;  /* grown regions given back */
    size_t live_count;       /* used blocks (quick-list blocks excluded);
                                malloc_count - free_count, derived on read */
    size_t live_block_bytes; /* bytes in used blocks, headers included */
    size_t peak_block_bytes;
    size_t live_requested;   /* FULL only: bytes requested by live blocks */
    size_t peak_requested;   /* FULL only */
    size_t footprint;        /* bytes of all regions (control block included) */
    size_t peak_footprint;
    size_t top_bytes;        /* bytes in top blocks: never carved since
                                their region was formatted (every level) */
    size_t extent;           /* footprint - top_bytes: what the heap has
                                actually used of its regions (every level) */
    size_t peak_extent;      /* high-water mark of extent (every level) */
    size_t free_bytes;       /* bytes in free, quick-list and top blocks
                                (dmm_heap_get_stats only) */
    size_t largest_free;     /* largest free or top block (get_stats only) */
    uint64_t size_hist[DMM_HEAP_HIST_BUCKETS]; /* FULL only */
} dmm_heap_stats;

/* Snapshot of the statistics (takes the lock).  Counters not kept at the
 * heap's statistics level read 0.  O(blocks) (free_bytes, largest_free). */
dmm_heap_stats dmm_heap_get_stats(dmm_heap *h);

/* The same snapshot without the walk: free_bytes and largest_free read 0.
 * O(1); cheap enough to sample at every new live peak. */
dmm_heap_stats dmm_heap_get_counters(dmm_heap *h);

/* Writes st as one JSON object, NUL-terminated, truncated to cap bytes.
 * Returns the length the full text needs (without the NUL). */
size_t dmm_heap_stats_json(const dmm_heap_stats *st, char *buf, size_t cap);

/* ---- checker and walker -------------------------------------------- */

typedef enum dmm_heap_invariant {
    DMM_INV_NONE = 0,
    DMM_INV_CONTROL,       /* control block damaged */
    DMM_INV_REGION,        /* region list or descriptor damaged */
    DMM_INV_BLOCK_SIZE,    /* block size not a multiple of the granule, too
                              small, or past the region end */
    DMM_INV_BOUNDARY_TAG,  /* next block's prev_size differs from the size */
    DMM_INV_SENTINEL,      /* region does not end in its sentinel */
    DMM_INV_CANARY,        /* a used block's canary was overwritten */
    DMM_INV_POISON,        /* a free block's poison pattern was overwritten */
    DMM_INV_ADJACENT_FREE, /* two free neighbours under immediate coalescing */
    DMM_INV_LIST_LINK,     /* free list broken: bad node, cycle, prev link,
                              tail, or a node that is not a free block */
    DMM_INV_LIST_BIN,      /* free block in the wrong bin */
    DMM_INV_LIST_ORDER,    /* list order violates the ordering policy */
    DMM_INV_BITMAP,        /* bitmap bit disagrees with bin emptiness */
    DMM_INV_FREE_COUNT,    /* free blocks in regions != nodes in the lists */
    DMM_INV_QUICK,         /* quick list: wrong size, state or length */
    DMM_INV_ACCOUNTING     /* live bytes / counts / footprint / top bytes
                              differ from the statistics */
} dmm_heap_invariant;

typedef struct dmm_heap_check_report {
    dmm_heap_invariant invariant; /* DMM_INV_NONE if all hold */
    const void *where;            /* address of the offending block or node */
    const char *detail;           /* static sentence */
} dmm_heap_check_report;

/* Verifies every invariant (see dmm_heap_invariant).  Returns DMM_OK or
 * DMM_E_CORRUPT with *rep (if non-NULL) saying which invariant broke and
 * where.  Writes nothing to the heap.  Takes the lock.  O(blocks + B). */
dmm_status dmm_heap_check(dmm_heap *h, dmm_heap_check_report *rep);

typedef enum dmm_block_state {
    DMM_BLOCK_USED = 0,
    DMM_BLOCK_FREE,
    DMM_BLOCK_QUICK, /* freed, parked in a quick list */
    DMM_BLOCK_TOP    /* the untouched end of a region, carved on demand */
} dmm_block_state;

typedef struct dmm_heap_block_info {
    const void *block;   /* block start (header) */
    void *payload;       /* what malloc returned / would return */
    size_t block_size;   /* bytes, header included */
    size_t usable;       /* payload bytes usable by the caller */
    size_t requested;    /* FULL stats and used blocks only, else 0 */
    dmm_block_state state;
    unsigned region;     /* index of the region, in walk order */
} dmm_heap_block_info;

/* Called once per block in address order within each region.  Return
 * non-zero to stop the walk. */
typedef int (*dmm_heap_walk_fn)(void *ctx, const dmm_heap_block_info *info);

/* Walks all blocks of all regions.  Returns the callback's non-zero value
 * if it stopped the walk, -1 if a block header is too damaged to go on, else
 * 0.  Takes the lock; the callback must not call back into the heap. */
int dmm_heap_walk(dmm_heap *h, dmm_heap_walk_fn fn, void *ctx);

/* The configuration this heap runs with. */
dmm_heap_config dmm_heap_get_config(const dmm_heap *h);

/* Fills *a so that generic code drives h through the allocator interface. */
void dmm_heap_as_allocator(dmm_heap *h, dmm_allocator *a);

/* Name of the compiled code path h runs, chosen at init (docs/heap.md,
 * "Fast paths"): "<preset>/ship" or "<preset>/lean" (the preset's exact
 * fast path), "<preset>/shape" (its structure fixed, the rest read at run
 * time), "any" (every field read at run time), or "frozen" in a library
 * frozen at build time.  NULL for NULL.  O(1). */
const char *dmm_heap_variant(const dmm_heap *h);

/* Non-zero when this library was built with a frozen configuration. */
int dmm_heap_is_frozen(void);

#ifdef __cplusplus
}
#endif
#endif /* DMM_HEAP_H */

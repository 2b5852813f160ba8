/*
 * dmm/pool.h - fixed-size block pools whose blocks carry no header (seed
 * 003's vector memory pool, with O(1) free):
 *
 *   dmm_pool        one pool of equal blocks on a caller buffer; every block
 *                   sits at base + i * stride, aligned to the configured
 *                   alignment; the free list and the allocation bitmap live
 *                   in front of the blocks, never inside them.
 *   dmm_pool_set    several pools keyed by block size (the seed's table of
 *                   pools by vector size): the smallest fitting pool serves
 *                   a request, a free goes back to the pool that owns it.
 *   dmm_pool_front  a pool set in front of a dmm heap: small requests from
 *                   the pools, the rest (and what the pools cannot take)
 *                   from the heap, as RT-Thread's mempool beside its heap.
 *
 * The design, the guarantees and the measurements: docs/pool.md.
 *
 * Complexity: alloc, free, calloc (plus the block fill), the owner lookup
 * and the front's routing are O(1) (the set: O(log k) for k <= 16 pools).
 * Init is O(blocks).  The checker and the walker are O(blocks).
 *
 * Thread-safety: as configured by `lock` (none, spin, the port's mutex, or
 * user hooks).  With lock=user and hooks that mask interrupts, dmm_pool_alloc,
 * dmm_pool_calloc and dmm_pool_free are safe to call from an interrupt
 * handler: they never sleep, never wait and never call the clock.
 */
#ifndef DMM_POOL_H
#define DMM_POOL_H

#include "dmm/common.h"
#include "dmm/heap.h" /* the lock, statistics and hardening enums the pool shares */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dmm_pool dmm_pool;
typedef struct dmm_pool_set dmm_pool_set;
typedef struct dmm_pool_front dmm_pool_front;

#define DMM_POOL_MAX_ALIGN 65536u   /* largest block alignment (a power of two) */
#define DMM_POOL_MAX_BLOCKS 0xFFFFFFFFu
#define DMM_POOL_SET_MAX 16u        /* most pools in one set */

/* ---- configuration ------------------------------------------------------ */

typedef struct dmm_pool_config {
    size_t block_size;      /* bytes a block holds (>= 1) */
    size_t align;           /* block alignment: a power of two, 1..65536;
                               0 = dmm_vec_width() at init (the widest vector
                               unit of this CPU).  The stride between blocks
                               is block_size rounded up to it. */
    dmm_heap_lock lock;
    dmm_lock_hooks lock_hooks; /* for DMM_LOCK_USER (critical-section hooks) */
    dmm_heap_stats_level stats; /* OFF: capacity and live blocks only;
                                   COUNTERS (FULL is the same): operation,
                                   failure, wait and hand-over counts, peak */
    dmm_heap_harden harden; /* OFF: pointers handed back are trusted (no
                               bitmap is kept, the walker is unavailable);
                               CHECKED: free validates the pointer (inside the
                               blocks, on a block boundary, not already free)
                               in O(1) before writing anything, and reports a
                               bad one through the error callback;
                               CANARY: + a guard of max(align, 8) bytes behind
                               each block (the stride grows by it), filled
                               with a keyed pattern and checked on free and by
                               the checker;
                               PARANOID: + poisoning forced on */
    bool poison;            /* fill freed blocks with a pattern and verify it
                               when the block is handed out again (write
                               after free is reported; O(block size)) */
    dmm_error_policy on_error;
    dmm_error_fn error_fn;  /* may be NULL */
    void *error_ctx;
} dmm_pool_config;

/* block_size 64, align 0 (vector width), lock none, stats counters,
 * harden checked, poison off, report errors. */
dmm_pool_config dmm_pool_default_config(void);

/* DMM_OK, or DMM_E_CONFIG with *reason (static) saying what is wrong. */
dmm_status dmm_pool_config_check(const dmm_pool_config *cfg, const char **reason);

/* The text form, the same grammar as the heap's (docs/heap.md):
 *   "block=64,align=32,lock=spin,stats=counters,harden=checked,poison=off,
 *    on_error=report"
 * parse starts from *cfg (so unspecified keys keep their value) and
 * writes cfg only when the whole text is valid; *err (static) says why not.
 * format writes every key; snprintf-like. */
dmm_status dmm_pool_config_parse(const char *text, dmm_pool_config *cfg, const char **err);
size_t dmm_pool_config_format(const dmm_pool_config *cfg, char *buf, size_t cap);

/* A frozen pool config header (DMM_POOL_FROZEN_* macros; the library is
 * built with DMM_POOL_CONFIG_HEADER naming it): lock, stats, harden and
 * poison become constants, so the hot paths drop every other branch. */
size_t dmm_pool_config_header(const dmm_pool_config *cfg, const char *name, char *buf, size_t cap);

/* The pool's field table as JSON ({"fields":[...]}, src/core/fields.h). */
size_t dmm_pool_config_fields_json(char *buf, size_t cap);

/* ---- sizing ------------------------------------------------------------- */

/* How a buffer is used (all in bytes). */
typedef struct dmm_pool_layout {
    size_t blocks;        /* how many blocks it yields */
    size_t block_size;    /* as configured */
    size_t align;         /* resolved (never 0) */
    size_t stride;        /* distance between block starts */
    size_t control_bytes; /* the control block */
    size_t meta_bytes;    /* free list + bitmap (outside the blocks) */
    size_t pad_bytes;     /* between the metadata and the first block, to align it */
    size_t guard_bytes;   /* per block: the canary guard (harden >= canary) */
    size_t align_waste;   /* per block: stride - block_size - guard_bytes, the
                             bytes lost to aligning a block */
    size_t tail_bytes;    /* left over at the end of the buffer */
} dmm_pool_layout;

/* The layout a pool with cfg would have on [buf, buf+size): the address
 * matters (padding).  DMM_E_CONFIG (bad cfg), DMM_E_TOO_SMALL (no block
 * fits), DMM_E_NULL. */
dmm_status dmm_pool_layout_of(const dmm_pool_config *cfg, const void *buf, size_t size, dmm_pool_layout *out);

/* The smallest buffer that yields at least `blocks` blocks wherever it
 * starts (worst-case padding counted); 0 when cfg is invalid or the size
 * overflows. */
size_t dmm_pool_buffer_size(const dmm_pool_config *cfg, size_t blocks);

/* ---- one pool ------------------------------------------------------------ */

/* Formats a pool on [buf, buf+size); *out points into buf.  O(blocks). */
dmm_status dmm_pool_init(dmm_pool **out, void *buf, size_t size, const dmm_pool_config *cfg);

/* Makes every block free again.  DMM_E_RANGE (nothing changed) while a
 * thread waits in dmm_pool_alloc_wait. */
dmm_status dmm_pool_reset(dmm_pool *p);

/* Ends the pool (destroys the port mutex); the buffer is the caller's again.
 * Must not be called while threads wait. */
void dmm_pool_destroy(dmm_pool *p);

/* A free block, or NULL when none is free.  O(1); never waits. */
void *dmm_pool_alloc(dmm_pool *p);

/* A zeroed free block (dmm_vec_memset when the alignment and stride allow
 * it), or NULL. */
void *dmm_pool_calloc(dmm_pool *p);

/* A free block, waiting for one when none is free:
 *   timeout_ns == 0  return at once (dmm_pool_alloc);
 *   timeout_ns <  0  wait until a block is freed;
 *   timeout_ns >  0  wait up to that many nanoseconds, then NULL.
 * Waiters are served in FIFO order, and a free hands its block straight to
 * the first waiter, so a thread arriving later cannot take it.  Waiting
 * needs a lock other than none and a port that can wait (posix); otherwise
 * every timeout behaves as 0.  Never call it from an interrupt handler. */
void *dmm_pool_alloc_wait(dmm_pool *p, int64_t timeout_ns);

/* Gives a block back (NULL is ignored).  O(1).  With harden >= checked the
 * pointer is validated first; a foreign pointer, one not on a block
 * boundary, or a block already free is reported (DMM_ERR_FOREIGN_POINTER,
 * DMM_ERR_MISALIGNED_POINTER, DMM_ERR_DOUBLE_FREE) and nothing is written. */
void dmm_pool_free(dmm_pool *p, void *block);

/* true when ptr is inside the pool's blocks (any byte of any block). */
bool dmm_pool_owns(const dmm_pool *p, const void *ptr);

/* Fills / copies whole blocks with the vector routines (dmm/vec.h) when
 * the alignment and the stride are multiples of DMM_VEC_GRANULE, with the
 * port's memset/memcpy otherwise.  No validation of the pointers. */
void dmm_pool_memset(const dmm_pool *p, void *block, int c);
void dmm_pool_memcpy(const dmm_pool *p, void *dst_block, const void *src_block);

/* The pool's layout (as dmm_pool_layout_of gave at init) and config. */
dmm_pool_layout dmm_pool_get_layout(const dmm_pool *p);
dmm_pool_config dmm_pool_get_config(const dmm_pool *p);

/* ---- statistics, checker, walker ------------------------------------------ */

typedef struct dmm_pool_stats {
    uint64_t alloc_count;   /* blocks handed out (hand-overs included) */
    uint64_t free_count;    /* blocks given back */
    uint64_t failed_count;  /* requests that returned NULL */
    uint64_t error_count;   /* misuse reports */
    uint64_t wait_count;    /* requests that had to wait */
    uint64_t timeout_count; /* waits that ended without a block */
    uint64_t handoff_count; /* frees that handed the block to a waiter */
    size_t capacity;        /* blocks (every level) */
    size_t live_blocks;     /* blocks handed out (every level) */
    size_t peak_blocks;
    size_t waiting;         /* threads waiting now (every level) */
    size_t block_size;      /* (every level, as are the fields below) */
    size_t stride;
    size_t footprint;       /* bytes of the buffer in use: control, metadata,
                               padding and blocks */
    size_t meta_bytes;      /* control + metadata */
    size_t align_waste;     /* bytes of all blocks lost to alignment */
} dmm_pool_stats;

/* A snapshot (takes the lock).  O(1). */
dmm_pool_stats dmm_pool_get_stats(dmm_pool *p);
size_t dmm_pool_stats_json(const dmm_pool_stats *st, char *buf, size_t cap);

typedef enum dmm_pool_invariant {
    DMM_POOL_INV_NONE = 0,
    DMM_POOL_INV_CONTROL,    /* control block damaged (magic, geometry) */
    DMM_POOL_INV_FREE_LIST,  /* a free-list entry out of range, naming a used
                                block, or listed twice */
    DMM_POOL_INV_BITMAP,     /* used bits != live blocks */
    DMM_POOL_INV_CANARY,     /* a used block's guard was overwritten */
    DMM_POOL_INV_POISON,     /* a free block's pattern was overwritten */
    DMM_POOL_INV_WAITERS,    /* threads wait while blocks are free, or the
                                waiter queue is broken */
    DMM_POOL_INV_ACCOUNTING  /* counts disagree (live + free != capacity) */
} dmm_pool_invariant;

typedef struct dmm_pool_check_report {
    dmm_pool_invariant invariant;
    const void *where;
    const char *detail; /* static sentence */
} dmm_pool_check_report;

/* Verifies every invariant; writes nothing.  DMM_OK or DMM_E_CORRUPT. */
dmm_status dmm_pool_check(dmm_pool *p, dmm_pool_check_report *rep);

/* Calls fn for every block in address order (used = handed out) until it
 * returns non-zero.  DMM_E_UNSUPPORTED at harden=off (no bitmap). */
typedef int (*dmm_pool_walk_fn)(void *ctx, void *block, bool used);
dmm_status dmm_pool_walk(dmm_pool *p, dmm_pool_walk_fn fn, void *ctx);

/* The pool as a dmm_allocator: malloc(size <= block_size) takes a block,
 * larger requests fail; realloc within the block size keeps the block;
 * aligned_alloc(align <= the pool's alignment) takes a block. */
void dmm_pool_as_allocator(dmm_pool *p, dmm_allocator *a);

/* ---- pool sets ----------------------------------------------------------- */

typedef struct dmm_pool_class {
    size_t block_size;
    size_t blocks;
} dmm_pool_class;

/* Buffer bytes for a set of n classes (the base config gives everything but
 * the block size), worst-case padding counted; 0 on bad input. */
size_t dmm_pool_set_buffer_size(const dmm_pool_config *base, const dmm_pool_class *classes, unsigned n);

/* Formats n (1..DMM_POOL_SET_MAX) pools on one buffer, one per class
 * (block sizes distinct; any order), each with at least its number of
 * blocks.  DMM_E_TOO_SMALL when the buffer cannot hold them. */
dmm_status dmm_pool_set_init(dmm_pool_set **out, void *buf, size_t size, const dmm_pool_config *base,
                             const dmm_pool_class *classes, unsigned n);
void dmm_pool_set_destroy(dmm_pool_set *s);

/* From the smallest pool whose blocks fit size; when it is empty, the next
 * larger ones in turn.  NULL when size is larger than every block or all
 * fitting pools are empty. */
void *dmm_pool_set_alloc(dmm_pool_set *s, size_t size);
/* Waits (as dmm_pool_alloc_wait) on the smallest fitting pool after the
 * larger ones were found empty too. */
void *dmm_pool_set_alloc_wait(dmm_pool_set *s, size_t size, int64_t timeout_ns);
/* To the owner pool; a pointer no pool owns is reported
 * (DMM_ERR_FOREIGN_POINTER, through the base config's callback). */
void dmm_pool_set_free(dmm_pool_set *s, void *block);

/* The pool that owns ptr, or NULL. */
dmm_pool *dmm_pool_set_owner(const dmm_pool_set *s, const void *ptr);
unsigned dmm_pool_set_count(const dmm_pool_set *s);
dmm_pool *dmm_pool_set_pool(const dmm_pool_set *s, unsigned i); /* by block size, ascending */
dmm_status dmm_pool_set_check(dmm_pool_set *s, dmm_pool_check_report *rep);
void dmm_pool_set_as_allocator(dmm_pool_set *s, dmm_allocator *a);

/* ---- a pool set in front of a heap ---------------------------------------- */

typedef struct dmm_pool_front_config {
    dmm_pool_config pool;   /* for every pool (block_size is ignored) */
    dmm_pool_class classes[DMM_POOL_SET_MAX];
    unsigned nclasses;      /* 0: no pools, everything from the heap */
    dmm_heap_config heap;   /* the heap behind the pools */
} dmm_pool_front_config;

typedef struct dmm_pool_front_stats {
    uint64_t pool_allocs;  /* requests the pools served */
    uint64_t heap_allocs;  /* requests the heap served */
    uint64_t pool_full;    /* of those, requests a pool would take but all
                              fitting pools were empty */
} dmm_pool_front_stats;

/* Formats the pools at the start of the buffer and a dmm heap on the rest. */
dmm_status dmm_pool_front_init(dmm_pool_front **out, void *buf, size_t size, const dmm_pool_front_config *cfg);
void dmm_pool_front_destroy(dmm_pool_front *f);

void *dmm_pool_front_malloc(dmm_pool_front *f, size_t size);
void dmm_pool_front_free(dmm_pool_front *f, void *ptr);
void *dmm_pool_front_realloc(dmm_pool_front *f, void *ptr, size_t size);
void *dmm_pool_front_calloc(dmm_pool_front *f, size_t n, size_t size);
void *dmm_pool_front_aligned_alloc(dmm_pool_front *f, size_t align, size_t size);
size_t dmm_pool_front_usable_size(dmm_pool_front *f, const void *ptr);

dmm_pool_front_stats dmm_pool_front_get_stats(dmm_pool_front *f);
dmm_pool_set *dmm_pool_front_set(dmm_pool_front *f);   /* NULL when nclasses is 0 */
dmm_heap *dmm_pool_front_heap(dmm_pool_front *f);
dmm_status dmm_pool_front_check(dmm_pool_front *f, const char **detail);
void dmm_pool_front_as_allocator(dmm_pool_front *f, dmm_allocator *a);

#ifdef __cplusplus
}
#endif
#endif /* DMM_POOL_H */

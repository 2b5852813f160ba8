/*
 * src/pool/pool_internal.h - the pool's control block and what the pool's
 * files share.
 *
 * Layout of a pool on its buffer (docs/pool.md, "Layout"):
 *
 *   [pad][struct dmm_pool][free list: uint32 x capacity][bitmap: uint64 x
 *   ceil(capacity/64), harden >= checked][pad to align][block 0][block 1]...
 *
 * Block i starts at base + i * stride; nothing of the allocator is ever
 * stored inside a block (with harden >= canary, the guard word sits in the
 * stride right behind the block's block_size bytes).  The free list is a
 * stack of the free blocks' byte offsets from base (32 bits: a pool's
 * blocks span at most 4 GiB): free[0..nfree) are free; alloc pops and adds
 * base, free subtracts base and pushes, so neither multiplies nor divides.
 * Bit i of the bitmap is 1 while block i is handed out.
 *
 * Invariants (dmm_pool_check):
 *   nfree <= capacity; every free[k] a block's offset, with its bit clear,
 *   and no block twice; the bitmap has capacity - nfree bits set; waiters only
 *   while nfree == 0, and the waiter list holds nwait entries.
 */
#ifndef DMM_POOL_INTERNAL_H
#define DMM_POOL_INTERNAL_H

#include <stdatomic.h>

#include "../core/bits.h"
#include "../port/port.h"
#include "dmm/pool.h"

/* A frozen build fixes the policy fields (dmm_pool_config_header writes
 * the header): the hot paths then test constants. */
#ifdef DMM_POOL_CONFIG_HEADER
#include DMM_POOL_CONFIG_HEADER
#define DMM_POOL_FROZEN 1
#define PL_LOCK(p) ((void)(p), (dmm_heap_lock)(DMM_POOL_FROZEN_LOCK))
#define PL_STATS(p) ((void)(p), (dmm_heap_stats_level)(DMM_POOL_FROZEN_STATS))
#define PL_HARDEN(p) ((void)(p), (dmm_heap_harden)(DMM_POOL_FROZEN_HARDEN))
#define PL_POISON(p) ((void)(p), (bool)(DMM_POOL_FROZEN_POISON || DMM_POOL_FROZEN_HARDEN >= DMM_HARDEN_PARANOID))
#else
#define DMM_POOL_FROZEN 0
#define PL_LOCK(p) ((p)->cfg.lock)
#define PL_STATS(p) ((p)->cfg.stats)
#define PL_HARDEN(p) ((p)->cfg.harden)
#define PL_POISON(p) ((p)->poison)
#endif

#define DMM_POOL_MAGIC 0x6c6f6f704d4d44ull /* "DMMpool" */
#define DMM_POOL_POISON_BYTE 0xDBu
#define DMM_POOL_GUARD 8u /* bytes of the canary word behind a block */

/* One thread waiting in dmm_pool_alloc_wait: on its own stack, linked
 * into the pool's FIFO under the pool's lock. */
typedef struct pool_waiter {
    struct pool_waiter *next;
    void *block; /* set by the freeing thread: the block handed over */
    dmm_port_event ev;
} pool_waiter;

struct dmm_pool {
    /* hot: what alloc and free touch */
    uint32_t nfree;
    uint32_t capacity;
    size_t stride;
    unsigned char *base; /* block 0 */
    size_t span;         /* capacity * stride */
    unsigned shift;      /* log2(stride) when stride is a power of two, else 0xFF */
    uint32_t *free_list; /* byte offsets of the free blocks */
    uint64_t *bitmap;    /* NULL at harden=off */
    pool_waiter *whead, *wtail;
    size_t nwait;
    bool poison;         /* cfg.poison, or forced by paranoid */

    /* lock */
    atomic_flag spin;
    dmm_port_mutex mutex;

    /* counters (stats >= counters) */
    uint64_t alloc_count, free_count, failed_count, error_count, wait_count, timeout_count, handoff_count;
    size_t peak_blocks;

    uintptr_t key; /* canary secret */
    dmm_pool_config cfg;
    dmm_pool_layout layout;
    size_t footprint;
    uint64_t magic;
};

/* Shared by the pool's files.  The lock: an unlocked pool (the common
 * single-threaded and frozen case) pays one test, inline. */
void dmm__pool_lock_slow(dmm_pool *p);
void dmm__pool_unlock_slow(dmm_pool *p);
static inline void dmm__pool_lock(dmm_pool *p)
{
    if (PL_LOCK(p) != DMM_LOCK_NONE)
        dmm__pool_lock_slow(p);
}
static inline void dmm__pool_unlock(dmm_pool *p)
{
    if (PL_LOCK(p) != DMM_LOCK_NONE)
        dmm__pool_unlock_slow(p);
}
void dmm__pool_report(const dmm_pool_config *cfg, uint64_t *count, dmm_error_kind kind, dmm_op op, const void *ptr,
                      const char *msg);
/* The pool's config with align resolved and the frozen fields applied;
 * the layout on [buf, buf+size).  false when nothing fits. */
bool dmm__pool_plan(const dmm_pool_config *cfg, uintptr_t buf, size_t size, dmm_pool_layout *out);

#endif

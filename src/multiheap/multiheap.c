/*
 * src/multiheap/multiheap.c - the distributed multi-heap (docs/multiheap.md).
 *
 * Layout of the caller's buffer:
 *   [pad][struct dmm_mh][mh_node x n][try order: uint16 x n x n][pad to 64]
 *   [node 0's range][node 1's range] ... [node n-1's range][tail]
 * Every range is node_bytes long (a multiple of 64) and holds one dmm heap
 * (CENTRAL: one heap over all ranges).  The owner of a pointer is
 * (p - base) / node_bytes.
 *
 * Locks: one per node heap, through cfg.lock_ops (default: a spin lock in
 * the node's record).  The node heaps themselves run with lock=none.
 * Counters are relaxed atomics (several threads may share a home node).
 *
 * Queued remote frees: a block freed by a non-owner is pushed on the
 * owner's lock-free stack (its first word is the link); whoever next holds
 * the owner's lock drains the stack into the heap.  A drain walks at most
 * as many blocks as the heap has in use, so a corrupted or cyclic queue
 * cannot make it loop.
 */
#include <stdatomic.h>

#include "../core/bits.h"
#include "../core/report.h"
#include "../port/port.h"
#include "dmm/multiheap.h"

#define MH_MAGIC 0x7061656869746c75ull /* "ultiheap" */
#define RANGE_ALIGN 64u

typedef struct mh_node {
    _Alignas(64) dmm_heap *heap; /* one cache line per node record at least */
    dmm_port_spinlock spin;
    _Atomic(void *) queue;
    atomic_bool offline;
    atomic_size_t local_allocs, remote_allocs, served_remote, skipped_busy, remote_frees, queued_frees, failures,
        offline_frees;
} mh_node;

/* A home node's cache of its own freed blocks (cfg.home_cache > 0).  pend:
 * frees not yet validated (nothing written to them); bin[k]: blocks whose
 * usable size is in [16k, 16k+16), linked through their first word, n[k] of
 * them.
 *
 * Who may touch the fields ("being in the cache"): the holder of `busy`, or
 * the cache's owner thread without it.  The first thread that takes `busy`
 * for a malloc or free claims the cache (owner = its port token) when the
 * port has remote fences; from then on that thread enters by a store and a
 * load (owner_in = 1, then revoke must read 0: no atomic read-modify-write),
 * and leaves by a release store.  Any other thread takes `busy`, sets revoke,
 * calls dmm_port_remote_fence() and waits until owner_in is 0 (Dekker's
 * protocol with an asymmetric fence: the owner's store and load need only a
 * compiler barrier).  Such a malloc or free from another thread marks the
 * cache CACHE_SHARED for good, revoke staying set (a shared home is locked
 * every time); the checker, statistics and flushes keep the owner and clear
 * revoke when they leave. */
#define CACHE_GRAN 16u
#define CACHE_CLASSES (DMM_MH_CACHE_MAX_SIZE / CACHE_GRAN + 1u)
#define CACHE_SHARED ((uintptr_t)1) /* port tokens are even */
typedef struct mh_cache {
    _Alignas(64) dmm_port_spinlock busy;
    _Atomic(uintptr_t) owner; /* 0 (unclaimed), CACHE_SHARED or the owner's token */
    atomic_bool owner_in;     /* the owner is in the cache without busy */
    atomic_bool revoke;       /* a holder of busy that is not the owner is in */
    unsigned npend;
    size_t count; /* blocks in the bins */
    uint64_t hits;
    void *pend[DMM_MH_CACHE_PENDING];
    void *bin[CACHE_CLASSES];
    uint16_t n[CACHE_CLASSES];
} mh_cache;

struct dmm_mh {
    uint64_t magic;
    dmm_mh_config cfg;
    unsigned n, width;
    unsigned char *base;
    size_t node_bytes;
    unsigned node_shift; /* log2(node_bytes) when that is a power of two, else 0 */
    uint64_t node_recip; /* ceil(2^32 / (node_bytes / 64)): the owner by a multiply (see owner_of) */
    mh_node *nodes;
    uint16_t *order; /* n x n */
    mh_cache *caches; /* n of them, or NULL (no home cache) */
};

static const char *const policy_names[] = {"lazy", "central", "private", "priority"};

const char *dmm_mh_policy_name(dmm_mh_policy p)
{
    return (unsigned)p < 4u ? policy_names[p] : NULL;
}

static bool streq(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

dmm_status dmm_mh_policy_from_name(const char *name, dmm_mh_policy *out)
{
    if (!name || !out)
        return DMM_E_NULL;
    for (unsigned i = 0; i < 4; i++)
        if (streq(name, policy_names[i])) {
            *out = (dmm_mh_policy)i;
            return DMM_OK;
        }
    return DMM_E_CONFIG;
}

dmm_mh_config dmm_mh_default_config(unsigned nodes)
{
    dmm_mh_config c;
    dmm_port_memset(&c, 0, sizeof c);
    c.nodes = nodes;
    c.policy = DMM_MH_LAZY;
    c.remote_free = DMM_MH_FREE_QUEUE;
    c.heap = dmm_heap_preset_config(DMM_PRESET_TLSF);
    c.on_error = DMM_ON_ERROR_REPORT;
    c.home_cache = DMM_MH_DEFAULT_HOME_CACHE;
    return c;
}

static unsigned width_of(const dmm_mh_config *cfg)
{
    if (cfg->mesh_width)
        return cfg->mesh_width;
    unsigned w = 1;
    while (w * w < cfg->nodes)
        w++;
    return w;
}

dmm_status dmm_mh_config_check(const dmm_mh_config *cfg, const char **reason)
{
    const char *why = NULL;
    if (!cfg)
        why = "no config";
    else if (cfg->nodes == 0 || cfg->nodes > DMM_MH_MAX_NODES)
        why = "nodes must be 1..256";
    else if ((unsigned)cfg->policy > DMM_MH_PRIORITY)
        why = "unknown policy";
    else if ((unsigned)cfg->remote_free > DMM_MH_FREE_QUEUE)
        why = "unknown remote_free";
    else if (cfg->home_cache > DMM_MH_CACHE_MAX_BLOCKS)
        why = "home_cache is more than DMM_MH_CACHE_MAX_BLOCKS";
    else if (cfg->mesh_width > cfg->nodes)
        why = "mesh_width is larger than the node count";
    else if ((cfg->lock_ops.try_lock || cfg->lock_ops.lock || cfg->lock_ops.unlock) &&
             !(cfg->lock_ops.try_lock && cfg->lock_ops.lock && cfg->lock_ops.unlock))
        why = "lock_ops needs try_lock, lock and unlock together";
    else {
        dmm_heap_config h = cfg->heap;
        h.lock = DMM_LOCK_NONE;
        const char *hw = NULL;
        if (dmm_heap_config_check(&h, &hw) != DMM_OK)
            why = hw ? hw : "the node heap's config is invalid";
        else if (cfg->order) {
            /* every row: a permutation of the nodes, starting with its home */
            for (unsigned h2 = 0; h2 < cfg->nodes && !why; h2++) {
                const uint16_t *row = cfg->order + (size_t)h2 * cfg->nodes;
                if (row[0] != h2)
                    why = "order: each row must start with its home node";
                for (unsigned k = 0; k < cfg->nodes && !why; k++) {
                    if (row[k] >= cfg->nodes)
                        why = "order: a node id out of range";
                    for (unsigned j = 0; j < k && !why; j++)
                        if (row[j] == row[k])
                            why = "order: a node listed twice in one row";
                }
            }
        }
    }
    if (reason)
        *reason = why;
    return why ? (cfg ? DMM_E_CONFIG : DMM_E_NULL) : DMM_OK;
}

/* Does cfg give every home a cache?  central ignores home_cache (one heap,
 * one lock: no home owns a range). */
static bool has_cache(const dmm_mh_config *cfg)
{
    return cfg->home_cache && cfg->policy != DMM_MH_CENTRAL;
}

static size_t control_bytes(const dmm_mh_config *cfg)
{
    size_t n = cfg->nodes;
    size_t b = dmm_align_up(sizeof(struct dmm_mh), 64) + dmm_align_up(n * sizeof(mh_node), 64) +
               dmm_align_up(n * n * sizeof(uint16_t), 64);
    if (has_cache(cfg))
        b += n * sizeof(mh_cache);
    return b;
}

size_t dmm_mh_buffer_size(const dmm_mh_config *cfg, size_t per_node)
{
    if (dmm_mh_config_check(cfg, NULL) != DMM_OK)
        return 0;
    per_node = dmm_align_up(per_node, RANGE_ALIGN);
    if (per_node > (SIZE_MAX / 2) / cfg->nodes)
        return 0;
    return 63 + control_bytes(cfg) + RANGE_ALIGN + (size_t)cfg->nodes * per_node;
}

unsigned dmm_mh_distance(const dmm_mh *mh, unsigned a, unsigned b)
{
    unsigned w = mh->width;
    unsigned ax = a % w, ay = a / w, bx = b % w, by = b / w;
    return (ax > bx ? ax - bx : bx - ax) + (ay > by ? ay - by : by - ay);
}

static void default_order(dmm_mh *mh)
{
    unsigned n = mh->n;
    for (unsigned h = 0; h < n; h++) {
        uint16_t *row = mh->order + (size_t)h * n;
        unsigned k = 0;
        row[k++] = (uint16_t)h;
        /* nearest first, ties by id: insertion by (distance, id) */
        for (unsigned v = 0; v < n; v++) {
            if (v == h)
                continue;
            unsigned d = dmm_mh_distance(mh, h, v);
            unsigned j = k;
            while (j > 1 && dmm_mh_distance(mh, h, row[j - 1]) > d) {
                row[j] = row[j - 1];
                j--;
            }
            row[j] = (uint16_t)v;
            k++;
        }
    }
}

dmm_status dmm_mh_init(dmm_mh **out, void *buf, size_t size, const dmm_mh_config *cfg)
{
    if (!out || !buf || !cfg)
        return DMM_E_NULL;
    *out = NULL;
    if (dmm_mh_config_check(cfg, NULL) != DMM_OK)
        return DMM_E_CONFIG;
    unsigned n = cfg->nodes;
    uintptr_t at = dmm_align_up_ptr((uintptr_t)buf, 64), end = (uintptr_t)buf + size;
    size_t ctrl = control_bytes(cfg);
    if (at >= end || end - at <= ctrl + RANGE_ALIGN)
        return DMM_E_TOO_SMALL;
    dmm_mh *mh = (dmm_mh *)at;
    dmm_port_memset(mh, 0, ctrl);
    mh->cfg = *cfg;
    mh->n = n;
    mh->width = width_of(cfg);
    mh->nodes = (mh_node *)(at + dmm_align_up(sizeof(struct dmm_mh), 64));
    mh->order = (uint16_t *)((uintptr_t)mh->nodes + dmm_align_up((size_t)n * sizeof(mh_node), 64));
    if (has_cache(cfg)) {
        mh->caches = (mh_cache *)((uintptr_t)mh->order + dmm_align_up((size_t)n * n * sizeof(uint16_t), 64));
        for (unsigned i = 0; i < n; i++) {
            dmm_port_spin_init(&mh->caches[i].busy);
            atomic_init(&mh->caches[i].owner, (uintptr_t)0);
            atomic_init(&mh->caches[i].owner_in, false);
            atomic_init(&mh->caches[i].revoke, false);
        }
    }
    if (cfg->order)
        dmm_port_memcpy(mh->order, cfg->order, (size_t)n * n * sizeof(uint16_t));
    else
        default_order(mh);
    mh->cfg.order = mh->order;
    uintptr_t base = dmm_align_up_ptr(at + ctrl, RANGE_ALIGN);
    size_t node_bytes = dmm_align_down((size_t)(end - base) / n, RANGE_ALIGN);
    if (node_bytes == 0)
        return DMM_E_TOO_SMALL;
    mh->base = (unsigned char *)base;
    mh->node_bytes = node_bytes;
    if ((node_bytes & (node_bytes - 1)) == 0)
        while (((size_t)1 << mh->node_shift) < node_bytes)
            mh->node_shift++;
    /* ceil(2^32 / units) = floor((2^32 - 1) / units) + 1, in size_t: no
     * 64-bit division (a libgcc call on 32-bit targets); units beyond 32
     * bits give 1, and q = 0 for every offset the multiply path takes */
    size_t units = node_bytes / RANGE_ALIGN;
    mh->node_recip = (uint64_t)((size_t)0xFFFFFFFFu / units) + 1u;
    dmm_heap_config hc = cfg->heap;
    hc.lock = DMM_LOCK_NONE;
    hc.error_fn = cfg->error_fn;
    hc.error_ctx = cfg->error_ctx;
    hc.on_error = cfg->on_error;
    for (unsigned i = 0; i < n; i++) {
        mh_node *nd = &mh->nodes[i];
        dmm_port_spin_init(&nd->spin);
        atomic_init(&nd->queue, NULL);
        atomic_init(&nd->offline, false);
        if (cfg->policy == DMM_MH_CENTRAL && i > 0)
            continue;
        size_t bytes = cfg->policy == DMM_MH_CENTRAL ? node_bytes * n : node_bytes;
        dmm_status st = dmm_heap_init(&nd->heap, (void *)(base + (size_t)i * node_bytes), bytes, &hc);
        if (st != DMM_OK)
            return st;
    }
    mh->magic = MH_MAGIC;
    *out = mh;
    return DMM_OK;
}

void dmm_mh_destroy(dmm_mh *mh)
{
    if (!mh)
        return;
    for (unsigned i = 0; i < mh->n; i++)
        if (mh->nodes[i].heap)
            dmm_heap_destroy(mh->nodes[i].heap);
    mh->magic = 0;
}

unsigned dmm_mh_nodes(const dmm_mh *mh) { return mh->n; }

const uint16_t *dmm_mh_try_order(const dmm_mh *mh, unsigned home)
{
    return home < mh->n ? mh->order + (size_t)home * mh->n : NULL;
}

/* The owner without a divide (every free asks; a 64-bit divide costs tens
 * of cycles): node_bytes is a multiple of 64, so the owner is x / d with
 * x = off / 64 and d = node_bytes / 64.  For x < 2^32, q = x * ceil(2^32/d)
 * >> 32 is x / d or one more (the error is below x / 2^32 < 1); one
 * multiply-back corrects it.  Larger offsets (256 GiB and up) divide. */
static DMM_ALWAYS_INLINE unsigned owner_of(const dmm_mh *mh, const void *ptr)
{
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)mh->base;
    if ((uintptr_t)ptr < (uintptr_t)mh->base)
        return DMM_MH_NO_NODE;
    size_t i;
    if (mh->node_shift)
        i = off >> mh->node_shift;
    else if ((uint64_t)(off / RANGE_ALIGN) >> 32 == 0) {
        uint64_t x = (uint64_t)(off / RANGE_ALIGN), q = (x * mh->node_recip) >> 32;
        i = (size_t)(q * (uint64_t)(mh->node_bytes / RANGE_ALIGN) > x ? q - 1 : q);
    } else
        i = off / mh->node_bytes;
    return i < mh->n ? (unsigned)i : DMM_MH_NO_NODE;
}

unsigned dmm_mh_owner(const dmm_mh *mh, const void *ptr) { return owner_of(mh, ptr); }

/* ---- locks, events, reports ----------------------------------------------- */

static bool try_lock(dmm_mh *mh, unsigned i)
{
    if (mh->cfg.lock_ops.try_lock)
        return mh->cfg.lock_ops.try_lock(mh->cfg.lock_ops.ctx, i);
    return !atomic_flag_test_and_set_explicit(&mh->nodes[i].spin.f, memory_order_acquire);
}

static void lock(dmm_mh *mh, unsigned i)
{
    if (mh->cfg.lock_ops.lock) {
        mh->cfg.lock_ops.lock(mh->cfg.lock_ops.ctx, i);
        return;
    }
    dmm_port_spin_lock(&mh->nodes[i].spin);
}

static void unlock(dmm_mh *mh, unsigned i)
{
    if (mh->cfg.lock_ops.unlock)
        mh->cfg.lock_ops.unlock(mh->cfg.lock_ops.ctx, i);
    else
        dmm_port_spin_unlock(&mh->nodes[i].spin);
}

static void event(dmm_mh *mh, unsigned home, unsigned node, dmm_mh_event ev, size_t ok)
{
    if (mh->cfg.observer.event)
        mh->cfg.observer.event(mh->cfg.observer.ctx, home, node, ev, ok);
}

static void count(atomic_size_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

static void report(dmm_mh *mh, dmm_error_kind kind, dmm_op op, const void *ptr, const char *msg)
{
    dmm__report_error(mh->cfg.error_fn, mh->cfg.error_ctx, mh->cfg.on_error, kind, op, ptr, msg);
}

/* The heap that serves node i's range. */
static unsigned heap_index(const dmm_mh *mh, unsigned i)
{
    return mh->cfg.policy == DMM_MH_CENTRAL ? 0u : i;
}

/* Most blocks heap i can hold: its bytes over the smallest block.  A bound
 * on any list of its blocks that holds without the heap's counters (a node
 * heap may run with stats off). */
static size_t max_blocks(const dmm_mh *mh, unsigned i)
{
    size_t bytes = mh->cfg.policy == DMM_MH_CENTRAL ? mh->node_bytes * mh->n : mh->node_bytes;
    (void)i;
    return bytes / DMM_HEAP_ALIGN + 1;
}

/* Frees the blocks queued for heap i into it (its lock held).  At most as
 * many as the heap can hold: a broken queue cannot loop. */
static void drain(dmm_mh *mh, unsigned home, unsigned i)
{
    mh_node *nd = &mh->nodes[i];
    if (!atomic_load_explicit(&nd->queue, memory_order_relaxed))
        return;
    void *p = atomic_exchange_explicit(&nd->queue, NULL, memory_order_acquire);
    size_t limit = max_blocks(mh, i), done = 0;
    while (p && done < limit) {
        void *next = *(void **)p; /* read before the heap reuses the block */
        dmm_heap_free(nd->heap, p);
        done++;
        p = next;
        if (p && heap_index(mh, dmm_mh_owner(mh, p)) != i) {
            report(mh, DMM_ERR_FREE_LIST, DMM_OP_FREE, p, "a remote-free queue link points outside its node");
            break;
        }
    }
    event(mh, home, i, DMM_MH_EV_DRAIN, done);
}

/* ---- the home cache (docs/multiheap.md, "Home cache") ------------------------------ */

/* A hardened cache marks every block it bins (class 1 and up: at least two
 * words) in its second word, and clears the mark when the block leaves.  A
 * parked free without the mark cannot be in a bin, so the bin is walked
 * (the double-free look-up) only for a free that carries it: O(1) per free
 * instead of O(home_cache).  The checker expects the mark on every binned
 * block, which catches writes to a cached block after its free. */
_Static_assert(2 * sizeof(void *) <= CACHE_GRAN, "a class-1 block holds the link and the mark");
static uintptr_t cache_mark(const mh_cache *c, const void *p)
{
    return ((uintptr_t)p ^ (uintptr_t)c) * (uintptr_t)0x9E3779B97F4A7C15ull | 1u;
}

static bool hardened(const dmm_mh *mh) { return mh->cfg.heap.harden != DMM_HARDEN_OFF; }

static bool offline_node(dmm_mh *mh, unsigned i)
{
    return atomic_load_explicit(&mh->nodes[i].offline, memory_order_acquire);
}

/* Being in a cache (see mh_cache).  After taking busy: claims an unclaimed
 * cache for a malloc or free (`op`), or keeps its owner out (revoke, the
 * remote fence, a wait for owner_in to clear); a foreign malloc or free
 * also marks the cache shared. */
static DMM_NOINLINE void cache_locked(mh_cache *c, uintptr_t me, bool op)
{
    uintptr_t o = atomic_load_explicit(&c->owner, memory_order_relaxed);
    if (o == me || o == CACHE_SHARED)
        return;
    if (o == 0) {
        if (op && dmm_port_has_remote_fence())
            atomic_store_explicit(&c->owner, me, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&c->revoke, true, memory_order_relaxed);
    dmm_port_remote_fence();
    while (atomic_load_explicit(&c->owner_in, memory_order_acquire))
        dmm_port_cpu_relax();
    if (op)
        atomic_store_explicit(&c->owner, CACHE_SHARED, memory_order_relaxed);
}

/* Enters c without waiting; false: busy (or being revoked).  *fast: entered
 * as its owner (leave with cache_leave either way). */
static DMM_ALWAYS_INLINE bool cache_owner_enter(mh_cache *c)
{
    atomic_store_explicit(&c->owner_in, true, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst); /* the remote fence orders the rest */
    if (DMM_LIKELY(!atomic_load_explicit(&c->revoke, memory_order_acquire)))
        return true;
    atomic_store_explicit(&c->owner_in, false, memory_order_release);
    return false;
}

static DMM_ALWAYS_INLINE bool cache_try_enter(mh_cache *c, uintptr_t me, bool *fast)
{
    if (atomic_load_explicit(&c->owner, memory_order_relaxed) == me) {
        *fast = true;
        return cache_owner_enter(c);
    }
    if (atomic_flag_test_and_set_explicit(&c->busy.f, memory_order_acquire))
        return false;
    *fast = false;
    cache_locked(c, me, true);
    return true;
}

/* Enters c, waiting for it (flush, statistics, checker: the owner stays). */
static void cache_enter(mh_cache *c)
{
    dmm_port_spin_lock(&c->busy);
    cache_locked(c, dmm_port_thread_token(), false);
}

static DMM_ALWAYS_INLINE void cache_leave(mh_cache *c, bool fast)
{
    if (fast) {
        atomic_store_explicit(&c->owner_in, false, memory_order_release);
        return;
    }
    /* a shared cache keeps revoke set: its old owner's fast path stays shut */
    if (DMM_UNLIKELY(atomic_load_explicit(&c->revoke, memory_order_relaxed)) &&
        atomic_load_explicit(&c->owner, memory_order_relaxed) != CACHE_SHARED)
        atomic_store_explicit(&c->revoke, false, memory_order_release);
    dmm_port_spin_unlock(&c->busy);
}

/* Sorts home's parked frees into the bins (the cache and the node lock
 * held).  The heap validates each one first (usable size 0 under hardening:
 * not a used block, so the heap's free reports it); a block already in its
 * bin is a double free; a full bin or a block too large for the classes
 * sends the block back to the heap. */
static void cache_sort(dmm_mh *mh, unsigned home, mh_cache *c)
{
    dmm_heap *heap = mh->nodes[home].heap;
    const bool hard = hardened(mh);
    const unsigned cap = mh->cfg.home_cache;
    for (unsigned k = 0; k < c->npend; k++) {
        void *p = c->pend[k];
        size_t u = dmm_heap_usable_size(heap, p);
        if (u == 0 || u >= CACHE_CLASSES * CACHE_GRAN) {
            dmm_heap_free(heap, p);
            continue;
        }
        unsigned b = (unsigned)(u / CACHE_GRAN);
        uintptr_t mark = cache_mark(c, p);
        bool dup = false; /* looked for only when the node heap is hardened */
        bool look = hard && (b == 0 || ((uintptr_t *)p)[1] == mark);
        for (void *q = look ? c->bin[b] : NULL; q && !dup; q = *(void **)q)
            dup = q == p;
        if (dup) {
            report(mh, DMM_ERR_DOUBLE_FREE, DMM_OP_FREE, p, "double free of a block in the home cache");
            continue;
        }
        if (c->n[b] >= cap) {
            dmm_heap_free(heap, p);
            continue;
        }
        *(void **)p = c->bin[b];
        if (b > 0 && hard)
            ((uintptr_t *)p)[1] = mark;
        c->bin[b] = p;
        c->n[b]++;
        c->count++;
    }
    c->npend = 0;
}

/* Gives every block in the bins back to the heap (both locks held). */
static void cache_empty_bins(dmm_mh *mh, unsigned home, mh_cache *c)
{
    for (unsigned b = 0; b < CACHE_CLASSES; b++) {
        void *p = c->bin[b];
        for (unsigned k = 0; p && k < c->n[b]; k++) {
            void *next = *(void **)p;
            if (b > 0)
                ((uintptr_t *)p)[1] = 0; /* the block leaves the cache: no mark */
            dmm_heap_free(mh->nodes[home].heap, p);
            p = next;
        }
        c->bin[b] = NULL;
        c->n[b] = 0;
    }
    c->count = 0;
}

/* A block of class need or the next one up, or NULL (the cache lock held). */
static void *cache_pop(mh_cache *c, unsigned need)
{
    for (unsigned b = need; b < CACHE_CLASSES && b <= need + 1; b++) {
        void *p = c->bin[b];
        if (p) {
            c->bin[b] = *(void **)p;
            if (b > 0)
                ((uintptr_t *)p)[1] = 0; /* the block leaves the cache: no mark */
            c->n[b]--;
            c->count--;
            return p;
        }
    }
    return NULL;
}

static void *cache_refill(dmm_mh *mh, unsigned home, mh_cache *c, unsigned need, bool fast);

/* malloc through home's cache: a block, or NULL to take the policy's path
 * (the cache is busy, the node offline, the size too large or the home
 * heap full). */
static void *cache_alloc(dmm_mh *mh, unsigned home, size_t size)
{
    mh_cache *c = &mh->caches[home];
    if (size > DMM_MH_CACHE_MAX_SIZE || offline_node(mh, home))
        return NULL;
    bool fast;
    if (!cache_try_enter(c, dmm_port_thread_token(), &fast))
        return NULL; /* another thread of this home is in the cache */
    unsigned need = (unsigned)((size + CACHE_GRAN - 1) / CACHE_GRAN);
    void *p = cache_pop(c, need);
    if (DMM_LIKELY(p != NULL)) {
        c->hits++;
        cache_leave(c, fast);
        return p;
    }
    return cache_refill(mh, home, c, need, fast);
}

/* A cache miss (in the cache; left here): the node lock, the
 * parked frees sorted, another look, then the heap. */
static DMM_NOINLINE void *cache_refill(dmm_mh *mh, unsigned home, mh_cache *c, unsigned need, bool fast)
{
    void *p;
    lock(mh, home);
    drain(mh, home, home);
    cache_sort(mh, home, c);
    p = cache_pop(c, need);
    bool hit = p != NULL;
    if (hit)
        c->hits++;
    else {
        size_t want = need ? need * CACHE_GRAN : 1;
        p = dmm_heap_malloc(mh->nodes[home].heap, want);
        if (!p && c->count) { /* the heap is full: what the cache holds first */
            cache_empty_bins(mh, home, c);
            p = dmm_heap_malloc(mh->nodes[home].heap, want);
        }
    }
    unlock(mh, home);
    cache_leave(c, fast);
    event(mh, home, home, DMM_MH_EV_ALLOC, p != NULL);
    if (p && !hit)
        count(&mh->nodes[home].local_allocs);
    return p;
}

/* The parked frees are full: sorts them (in the cache); false when
 * the node went offline meanwhile. */
static DMM_NOINLINE bool cache_make_room(dmm_mh *mh, unsigned home, mh_cache *c)
{
    if (offline_node(mh, home))
        return false;
    lock(mh, home);
    drain(mh, home, home);
    cache_sort(mh, home, c);
    unlock(mh, home);
    return true;
}

/* Parks a free of home's own block in its cache; false: not parked (the
 * cache is busy, or it is full and the node went offline). */
static DMM_ALWAYS_INLINE bool cache_park(dmm_mh *mh, unsigned home, void *ptr)
{
    mh_cache *c = &mh->caches[home];
    bool fast;
    if (!cache_try_enter(c, dmm_port_thread_token(), &fast))
        return false;
    if (DMM_UNLIKELY(c->npend == DMM_MH_CACHE_PENDING) && !cache_make_room(mh, home, c)) {
        cache_leave(c, fast);
        return false;
    }
    c->pend[c->npend++] = ptr;
    cache_leave(c, fast);
    return true;
}

void dmm_mh_cache_flush(dmm_mh *mh, unsigned home)
{
    if (!mh || !mh->caches || home >= mh->n)
        return;
    mh_cache *c = &mh->caches[home];
    cache_enter(c);
    if (!offline_node(mh, home)) {
        lock(mh, home);
        drain(mh, home, home);
        cache_empty_bins(mh, home, c);
        for (unsigned k = 0; k < c->npend; k++) /* the heap validates them */
            dmm_heap_free(mh->nodes[home].heap, c->pend[k]);
        c->npend = 0;
        unlock(mh, home);
        event(mh, home, home, DMM_MH_EV_FREE, 1);
    }
    cache_leave(c, false);
}

/* ---- allocation ----------------------------------------------------------------- */

/* One attempt at heap i for home (the lock taken by the caller's choice);
 * align 0: plain malloc. */
static void *alloc_at(dmm_mh *mh, unsigned home, unsigned i, size_t size, size_t align)
{
    drain(mh, home, i);
    void *p = align ? dmm_heap_aligned_alloc(mh->nodes[i].heap, align, size) : dmm_heap_malloc(mh->nodes[i].heap, size);
    unlock(mh, i);
    event(mh, home, i, DMM_MH_EV_ALLOC, p != NULL);
    if (p) {
        if (i == home)
            count(&mh->nodes[home].local_allocs);
        else {
            count(&mh->nodes[i].remote_allocs);
            count(&mh->nodes[home].served_remote);
        }
    }
    return p;
}

/* The policy's allocation; a NULL is counted as a failure when `last`. */
static void *select_alloc_try(dmm_mh *mh, unsigned home, size_t size, size_t align, bool last)
{
    if (home >= mh->n)
        return NULL;
    if (mh->cfg.policy == DMM_MH_CENTRAL) {
        lock(mh, 0);
        void *p = alloc_at(mh, home, 0, size, align);
        if (!p && last)
            count(&mh->nodes[home].failures);
        return p;
    }
    const uint16_t *row = mh->order + (size_t)home * mh->n;
    unsigned tries = mh->cfg.policy == DMM_MH_PRIVATE ? 1u : mh->n;
    uint16_t skipped[DMM_MH_MAX_NODES];
    unsigned nskipped = 0;
    for (unsigned k = 0; k < tries; k++) {
        unsigned i = row[k];
        if (atomic_load_explicit(&mh->nodes[i].offline, memory_order_acquire))
            continue;
        if (k == 0 || mh->cfg.policy == DMM_MH_PRIORITY) {
            lock(mh, i); /* the home heap, or the next priority: wait for it */
        } else if (!try_lock(mh, i)) {
            count(&mh->nodes[home].skipped_busy);
            event(mh, home, i, DMM_MH_EV_BUSY, 0);
            skipped[nskipped++] = (uint16_t)i;
            continue;
        }
        void *p = alloc_at(mh, home, i, size, align);
        if (p)
            return p;
    }
    if (mh->cfg.policy == DMM_MH_LAZY && mh->cfg.final_blocking_pass) {
        for (unsigned k = 0; k < nskipped; k++) {
            unsigned i = skipped[k];
            if (atomic_load_explicit(&mh->nodes[i].offline, memory_order_acquire))
                continue;
            lock(mh, i);
            void *p = alloc_at(mh, home, i, size, align);
            if (p)
                return p;
        }
    }
    if (last)
        count(&mh->nodes[home].failures);
    return NULL;
}

static void *select_alloc(dmm_mh *mh, unsigned home, size_t size, size_t align)
{
    return select_alloc_try(mh, home, size, align, true);
}

/* Every malloc but the owner's cache hit. */
static DMM_NOINLINE void *malloc_general(dmm_mh *mh, unsigned home, size_t size)
{
    if (mh->caches && home < mh->n) {
        void *p = cache_alloc(mh, home, size);
        if (p)
            return p;
        p = select_alloc_try(mh, home, size, 0, false);
        if (p)
            return p;
        /* Nothing anywhere: the blocks the home's cache holds (parked frees
         * of any size among them) go back to its heap, and one more try. */
        dmm_mh_cache_flush(mh, home);
    }
    return select_alloc(mh, home, size, 0);
}

/* The leaf fast paths below repeat the owner's way through the cache for
 * speed; a build for size (-Os: firmware) leaves them out and runs the
 * general paths only (the same behaviour). */
#if defined(__OPTIMIZE_SIZE__)
#define MH_LEAF_PATHS 0
#else
#define MH_LEAF_PATHS 1
#endif

/* The owner's cache hit is the whole fast path: loads and stores, no call
 * (so no registers saved); anything else is malloc_general, a tail call. */
void *dmm_mh_malloc(dmm_mh *mh, unsigned home, size_t size)
{
    if (MH_LEAF_PATHS && DMM_LIKELY(mh->caches != NULL) && home < mh->n && size <= DMM_MH_CACHE_MAX_SIZE &&
        !offline_node(mh, home)) {
        mh_cache *c = &mh->caches[home];
        if (atomic_load_explicit(&c->owner, memory_order_relaxed) == dmm_port_thread_token() &&
            cache_owner_enter(c)) {
            void *p = cache_pop(c, (unsigned)((size + CACHE_GRAN - 1) / CACHE_GRAN));
            if (DMM_LIKELY(p != NULL))
                c->hits++;
            cache_leave(c, true);
            if (DMM_LIKELY(p != NULL))
                return p;
        }
    }
    return malloc_general(mh, home, size);
}

void *dmm_mh_aligned_alloc(dmm_mh *mh, unsigned home, size_t align, size_t size)
{
    if (align == 0 || (align & (align - 1)) != 0)
        return NULL;
    return select_alloc(mh, home, size, align);
}

void *dmm_mh_calloc(dmm_mh *mh, unsigned home, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = dmm_mh_malloc(mh, home, n * size);
    if (p)
        dmm_port_memset(p, 0, n * size);
    return p;
}

/* ---- free ------------------------------------------------------------------------- */

/* The owner of ptr, or DMM_MH_NO_NODE after a report (foreign, offline). */
static unsigned owner_for_free(dmm_mh *mh, const void *ptr, dmm_op op)
{
    unsigned o = owner_of(mh, ptr);
    if (o == DMM_MH_NO_NODE) {
        report(mh, DMM_ERR_FOREIGN_POINTER, op, ptr, "pointer is not inside the multi-heap");
        return DMM_MH_NO_NODE;
    }
    if (atomic_load_explicit(&mh->nodes[o].offline, memory_order_acquire)) {
        count(&mh->nodes[o].offline_frees);
        report(mh, DMM_ERR_INVALID_POINTER, op, ptr,
               "the block's node is out of service: the block is kept, not freed");
        return DMM_MH_NO_NODE;
    }
    return o;
}

static DMM_NOINLINE void free_slow(dmm_mh *mh, unsigned home, void *ptr);

/* Every free but the owner's park with room: a home's own block parked in
 * its cache (any thread), else to the owner. */
static DMM_NOINLINE void free_general(dmm_mh *mh, unsigned home, void *ptr)
{
    if (mh->caches && owner_of(mh, ptr) == home && !offline_node(mh, home) && cache_park(mh, home, ptr))
        return;
    free_slow(mh, home, ptr);
}

/* The fast path: the cache's owner parks a free of its home's own block
 * while there is room; loads and stores, no call (see dmm_mh_malloc). */
void dmm_mh_free(dmm_mh *mh, unsigned home, void *ptr)
{
    if (!ptr)
        return;
    if (MH_LEAF_PATHS && DMM_LIKELY(mh->caches != NULL) && owner_of(mh, ptr) == home && !offline_node(mh, home)) {
        mh_cache *c = &mh->caches[home];
        if (atomic_load_explicit(&c->owner, memory_order_relaxed) == dmm_port_thread_token() &&
            cache_owner_enter(c)) {
            bool room = c->npend < DMM_MH_CACHE_PENDING;
            if (room)
                c->pend[c->npend++] = ptr;
            cache_leave(c, true);
            if (room)
                return;
        }
    }
    free_general(mh, home, ptr);
}

/* Every other free: to the owner, locked or queued (or refused: foreign,
 * offline).  A home's own block whose cache was busy goes to its heap. */
static DMM_NOINLINE void free_slow(dmm_mh *mh, unsigned home, void *ptr)
{
    unsigned o = owner_for_free(mh, ptr, DMM_OP_FREE);
    if (o == DMM_MH_NO_NODE)
        return;
    unsigned h = heap_index(mh, o);
    if (o != home)
        count(&mh->nodes[o].remote_frees);
    if (o != home && mh->cfg.remote_free == DMM_MH_FREE_QUEUE && mh->cfg.policy != DMM_MH_CENTRAL) {
        mh_node *nd = &mh->nodes[h];
        void *head = atomic_load_explicit(&nd->queue, memory_order_relaxed);
        do {
            *(void **)ptr = head;
        } while (!atomic_compare_exchange_weak_explicit(&nd->queue, &head, ptr, memory_order_release,
                                                        memory_order_relaxed));
        count(&nd->queued_frees);
        event(mh, home, h, DMM_MH_EV_QUEUE, 1);
        return;
    }
    lock(mh, h);
    drain(mh, home, h);
    dmm_heap_free(mh->nodes[h].heap, ptr);
    unlock(mh, h);
    event(mh, home, h, DMM_MH_EV_FREE, 1);
}

void *dmm_mh_realloc(dmm_mh *mh, unsigned home, void *ptr, size_t size)
{
    if (!ptr)
        return dmm_mh_malloc(mh, home, size);
    if (size == 0) {
        dmm_mh_free(mh, home, ptr);
        return NULL;
    }
    unsigned o = owner_for_free(mh, ptr, DMM_OP_REALLOC);
    if (o == DMM_MH_NO_NODE)
        return NULL;
    unsigned h = heap_index(mh, o);
    lock(mh, h);
    drain(mh, home, h);
    size_t have = dmm_heap_usable_size(mh->nodes[h].heap, ptr);
    void *q = dmm_heap_realloc(mh->nodes[h].heap, ptr, size);
    unlock(mh, h);
    event(mh, home, h, DMM_MH_EV_ALLOC, q != NULL);
    if (q || have == 0)
        return q; /* resized in the owner heap, or a bad pointer (reported) */
    /* The owner heap is full: elsewhere, by the policy, then copy. */
    q = dmm_mh_malloc(mh, home, size);
    if (q) {
        dmm_port_memcpy(q, ptr, have < size ? have : size);
        dmm_mh_free(mh, home, ptr);
    }
    return q;
}

size_t dmm_mh_usable_size(dmm_mh *mh, const void *ptr)
{
    unsigned o = ptr ? dmm_mh_owner(mh, ptr) : DMM_MH_NO_NODE;
    if (o == DMM_MH_NO_NODE)
        return 0;
    unsigned h = heap_index(mh, o);
    lock(mh, h);
    size_t n = dmm_heap_usable_size(mh->nodes[h].heap, ptr);
    unlock(mh, h);
    return n;
}

/* ---- service, statistics, checker ------------------------------------------------------ */

dmm_status dmm_mh_set_offline(dmm_mh *mh, unsigned node, bool offline)
{
    if (!mh)
        return DMM_E_NULL;
    if (node >= mh->n)
        return DMM_E_RANGE;
    if (mh->cfg.policy == DMM_MH_CENTRAL)
        return DMM_E_UNSUPPORTED;
    atomic_store_explicit(&mh->nodes[node].offline, offline, memory_order_release);
    return DMM_OK;
}

static uint64_t load(atomic_size_t *c) { return atomic_load_explicit(c, memory_order_relaxed); }

dmm_mh_node_stats dmm_mh_get_node_stats(dmm_mh *mh, unsigned node)
{
    dmm_mh_node_stats s;
    dmm_port_memset(&s, 0, sizeof s);
    if (!mh || node >= mh->n)
        return s;
    mh_node *nd = &mh->nodes[node];
    s.local_allocs = load(&nd->local_allocs);
    s.remote_allocs = load(&nd->remote_allocs);
    s.served_remote = load(&nd->served_remote);
    s.skipped_busy = load(&nd->skipped_busy);
    s.remote_frees = load(&nd->remote_frees);
    s.queued_frees = load(&nd->queued_frees);
    s.failures = load(&nd->failures);
    s.offline_frees = load(&nd->offline_frees);
    s.offline = atomic_load_explicit(&nd->offline, memory_order_acquire);
    if (mh->caches) {
        mh_cache *c = &mh->caches[node];
        cache_enter(c);
        s.cache_hits = c->hits;
        s.cached = c->count + c->npend;
        cache_leave(c, false);
        s.local_allocs += s.cache_hits;
    }
    if (nd->heap) {
        lock(mh, node);
        s.heap = dmm_heap_get_counters(nd->heap);
        unlock(mh, node);
    }
    return s;
}

/* Home i's cache (both locks held): NULL or what is wrong. */
static const char *check_cache(dmm_mh *mh, unsigned i, mh_cache *c)
{
    if (c->npend > DMM_MH_CACHE_PENDING)
        return "a home cache holds more parked frees than it can";
    for (unsigned k = 0; k < c->npend; k++)
        if (dmm_mh_owner(mh, c->pend[k]) != i)
            return "a home cache holds a parked free of another node";
    size_t total = 0;
    for (unsigned b = 0; b < CACHE_CLASSES; b++) {
        if (c->n[b] > mh->cfg.home_cache)
            return "a home cache class holds more blocks than home_cache";
        unsigned k = 0;
        for (void *p = c->bin[b]; p; p = *(void **)p) {
            if (++k > c->n[b])
                return "a home cache class is longer than its count (a cycle or an overwritten link?)";
            if (dmm_mh_owner(mh, p) != i)
                return "a home cache holds a block of another node";
            size_t u = dmm_heap_usable_size(mh->nodes[i].heap, p);
            if (u / CACHE_GRAN != b)
                return "a block in a home cache is not a used block of its class";
            if (b > 0 && hardened(mh) && ((uintptr_t *)p)[1] != cache_mark(c, p))
                return "a block in a home cache was written after its free (its mark is gone)";
        }
        if (k != c->n[b])
            return "a home cache class is shorter than its count";
        total += k;
    }
    return total == c->count ? NULL : "a home cache's block count is wrong";
}

dmm_status dmm_mh_check(dmm_mh *mh, const char **detail)
{
    const char *why = NULL;
    if (!mh)
        return DMM_E_NULL;
    if (mh->magic != MH_MAGIC)
        why = "the multi-heap's control block is damaged";
    for (unsigned i = 0; i < mh->n && !why; i++) {
        mh_node *nd = &mh->nodes[i];
        if (!nd->heap)
            continue;
        mh_cache *c = mh->caches ? &mh->caches[i] : NULL;
        if (c)
            cache_enter(c);
        lock(mh, i);
        dmm_heap_check_report r;
        if (dmm_heap_check(nd->heap, &r) != DMM_OK)
            why = r.detail;
        /* the queue: every entry in this node's heap, no more than it can hold */
        size_t limit = max_blocks(mh, i), k = 0;
        for (void *p = atomic_load_explicit(&nd->queue, memory_order_acquire); p && !why; p = *(void **)p) {
            if (heap_index(mh, dmm_mh_owner(mh, p)) != i)
                why = "a remote-free queue holds a block of another node";
            else if (++k > limit)
                why = "a remote-free queue is longer than its heap can hold (a cycle?)";
        }
        if (c && !why)
            why = check_cache(mh, i, c);
        unlock(mh, i);
        if (c)
            cache_leave(c, false);
    }
    for (unsigned h = 0; h < mh->n && !why; h++) {
        const uint16_t *row = mh->order + (size_t)h * mh->n;
        if (row[0] != h)
            why = "a try order does not start at its home node";
    }
    if (detail)
        *detail = why ? why : "all invariants hold";
    return why ? DMM_E_CORRUPT : DMM_OK;
}

/* ---- the allocator view ---------------------------------------------------------- */

static void *ma_malloc(void *ctx, size_t size)
{
    dmm_mh_handle *h = ctx;
    return dmm_mh_malloc(h->mh, h->home, size);
}
static void ma_free(void *ctx, void *p)
{
    dmm_mh_handle *h = ctx;
    dmm_mh_free(h->mh, h->home, p);
}
static void *ma_realloc(void *ctx, void *p, size_t size)
{
    dmm_mh_handle *h = ctx;
    return dmm_mh_realloc(h->mh, h->home, p, size);
}
static void *ma_calloc(void *ctx, size_t n, size_t size)
{
    dmm_mh_handle *h = ctx;
    return dmm_mh_calloc(h->mh, h->home, n, size);
}
static void *ma_aligned(void *ctx, size_t align, size_t size)
{
    dmm_mh_handle *h = ctx;
    return dmm_mh_aligned_alloc(h->mh, h->home, align, size);
}
static size_t ma_usable(void *ctx, const void *p)
{
    dmm_mh_handle *h = ctx;
    return dmm_mh_usable_size(h->mh, p);
}

void dmm_mh_as_allocator(dmm_mh_handle *h, dmm_allocator *a)
{
    a->name = "multiheap";
    a->ctx = h;
    a->malloc = ma_malloc;
    a->free = ma_free;
    a->realloc = ma_realloc;
    a->calloc = ma_calloc;
    a->aligned_alloc = ma_aligned;
    a->usable_size = ma_usable;
}

/*
 * src/pool/pool.c - one fixed-size block pool: layout, init, O(1)
 * allocation and free with validation, blocking allocation with FIFO
 * hand-over, block fills, statistics, the checker and the walker.
 */
#include "../core/report.h"
#include "../port/annotate.h"
#include "dmm/vec.h"
#include "pool_internal.h"

/* ---- lock and reports ------------------------------------------------------ */

void dmm__pool_lock_slow(dmm_pool *p)
{
    switch (PL_LOCK(p)) {
    case DMM_LOCK_NONE:
        break;
    case DMM_LOCK_SPIN:
        while (atomic_flag_test_and_set_explicit(&p->spin, memory_order_acquire))
            dmm_port_cpu_relax();
        break;
    case DMM_LOCK_MUTEX:
        dmm_port_mutex_lock(&p->mutex);
        break;
    case DMM_LOCK_USER:
        p->cfg.lock_hooks.lock(p->cfg.lock_hooks.ctx);
        break;
    }
}

void dmm__pool_unlock_slow(dmm_pool *p)
{
    switch (PL_LOCK(p)) {
    case DMM_LOCK_NONE:
        break;
    case DMM_LOCK_SPIN:
        atomic_flag_clear_explicit(&p->spin, memory_order_release);
        break;
    case DMM_LOCK_MUTEX:
        dmm_port_mutex_unlock(&p->mutex);
        break;
    case DMM_LOCK_USER:
        p->cfg.lock_hooks.unlock(p->cfg.lock_hooks.ctx);
        break;
    }
}

void dmm__pool_report(const dmm_pool_config *cfg, uint64_t *count, dmm_error_kind kind, dmm_op op, const void *ptr,
                      const char *msg)
{
    if (count)
        (*count)++;
    dmm__report_error(cfg->error_fn, cfg->error_ctx, cfg->on_error, kind, op, ptr, msg);
}

static void report(dmm_pool *p, dmm_error_kind kind, dmm_op op, const void *ptr, const char *msg)
{
    dmm__pool_report(&p->cfg, &p->error_count, kind, op, ptr, msg);
}

/* ---- layout ------------------------------------------------------------------ */

#define CTRL_ALIGN 16u

static size_t meta_bytes_for(size_t n, bool bitmap)
{
    size_t fl = dmm_align_up(n * sizeof(uint32_t), 8);
    return fl + (bitmap ? ((n + 63) / 64) * sizeof(uint64_t) : 0);
}

static bool wants_bitmap(const dmm_pool_config *cfg)
{
    (void)cfg;
#if DMM_POOL_FROZEN
    return DMM_POOL_FROZEN_HARDEN >= DMM_HARDEN_CHECKED;
#else
    return cfg->harden >= DMM_HARDEN_CHECKED;
#endif
}

static bool wants_guard(const dmm_pool_config *cfg)
{
    (void)cfg;
#if DMM_POOL_FROZEN
    return DMM_POOL_FROZEN_HARDEN >= DMM_HARDEN_CANARY;
#else
    return cfg->harden >= DMM_HARDEN_CANARY;
#endif
}

/* Bytes [buf, buf+size) need for n blocks, or SIZE_MAX when they do not fit. */
static size_t used_for(uintptr_t buf, size_t n, size_t stride, size_t align, bool bitmap, size_t *first_block)
{
    uintptr_t ctrl = dmm_align_up_ptr(buf, CTRL_ALIGN);
    uintptr_t meta = ctrl + dmm_align_up(sizeof(struct dmm_pool), CTRL_ALIGN);
    uintptr_t blocks = dmm_align_up_ptr(meta + meta_bytes_for(n, bitmap), align);
    if (blocks < buf || (n && stride > (UINTPTR_MAX - blocks) / n))
        return SIZE_MAX;
    if (first_block)
        *first_block = (size_t)(blocks - buf);
    return (size_t)(blocks - buf) + n * stride;
}

bool dmm__pool_plan(const dmm_pool_config *cfg, uintptr_t buf, size_t size, dmm_pool_layout *out)
{
    size_t align = cfg->align ? cfg->align : dmm_vec_width();
    bool bitmap = wants_bitmap(cfg);
    size_t guard = wants_guard(cfg) ? DMM_POOL_GUARD : 0;
    size_t body = dmm_align_up(cfg->block_size, align);
    size_t stride = dmm_align_up(cfg->block_size + guard, align);
    /* The largest n that fits: binary search (used_for grows with n). */
    size_t lo = 0, hi = size / stride;
    /* The free list holds 32-bit byte offsets: the last block must start
     * below 4 GiB from the first.  (hi - 1 is compared: with a 32-bit
     * size_t, UINT32_MAX / stride + 1 wraps to 0 for stride 1.) */
    if (hi > 0 && hi - 1 > (size_t)(UINT32_MAX / stride))
        hi = (size_t)(UINT32_MAX / stride) + 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (used_for(buf, mid, stride, align, bitmap, NULL) <= size)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo == 0)
        return false;
    size_t first = 0;
    size_t used = used_for(buf, lo, stride, align, bitmap, &first);
    uintptr_t ctrl = dmm_align_up_ptr(buf, CTRL_ALIGN);
    out->blocks = lo;
    out->block_size = cfg->block_size;
    out->align = align;
    out->stride = stride;
    out->control_bytes = (size_t)(ctrl - buf) + dmm_align_up(sizeof(struct dmm_pool), CTRL_ALIGN);
    out->meta_bytes = meta_bytes_for(lo, bitmap);
    out->pad_bytes = first - out->control_bytes - out->meta_bytes;
    out->guard_bytes = stride - body;
    out->align_waste = body - cfg->block_size;
    out->tail_bytes = size - used;
    return true;
}

dmm_status dmm_pool_layout_of(const dmm_pool_config *cfg, const void *buf, size_t size, dmm_pool_layout *out)
{
    if (!cfg || !buf || !out)
        return DMM_E_NULL;
    if (dmm_pool_config_check(cfg, NULL) != DMM_OK)
        return DMM_E_CONFIG;
    return dmm__pool_plan(cfg, (uintptr_t)buf, size, out) ? DMM_OK : DMM_E_TOO_SMALL;
}

size_t dmm_pool_buffer_size(const dmm_pool_config *cfg, size_t blocks)
{
    if (!cfg || dmm_pool_config_check(cfg, NULL) != DMM_OK || blocks == 0 || blocks > DMM_POOL_MAX_BLOCKS)
        return 0;
    size_t align = cfg->align ? cfg->align : dmm_vec_width();
    size_t guard = wants_guard(cfg) ? DMM_POOL_GUARD : 0;
    size_t stride = dmm_align_up(cfg->block_size + guard, align);
    if (stride > (SIZE_MAX / 2) / blocks)
        return 0;
    /* Worst case: the buffer starts one byte past a control alignment, and
     * the blocks need a whole alignment of padding. */
    return (CTRL_ALIGN - 1) + dmm_align_up(sizeof(struct dmm_pool), CTRL_ALIGN) + meta_bytes_for(blocks, wants_bitmap(cfg)) +
           (align - 1) + blocks * stride;
}

/* ---- init -------------------------------------------------------------------- */

static void fill_free_list(dmm_pool *p)
{
    /* Stack order: index 0 on top, so blocks are handed out in address
     * order from a fresh pool. */
    uint32_t n = p->capacity;
    for (uint32_t k = 0; k < n; k++)
        p->free_list[k] = (uint32_t)((size_t)(n - 1 - k) * p->stride);
    p->nfree = n;
    if (p->bitmap)
        dmm_port_memset(p->bitmap, 0, ((size_t)n + 63) / 64 * sizeof(uint64_t));
}

static void fill_block(const dmm_pool *p, void *b, int c, size_t n);

dmm_status dmm_pool_init(dmm_pool **out, void *buf, size_t size, const dmm_pool_config *cfg)
{
    if (!out || !buf || !cfg)
        return DMM_E_NULL;
    *out = NULL;
    if (dmm_pool_config_check(cfg, NULL) != DMM_OK)
        return DMM_E_CONFIG;
    dmm_pool_layout lay;
    if (!dmm__pool_plan(cfg, (uintptr_t)buf, size, &lay))
        return DMM_E_TOO_SMALL;
    uintptr_t ctrl = dmm_align_up_ptr((uintptr_t)buf, CTRL_ALIGN);
    dmm_pool *p = (dmm_pool *)ctrl;
    dmm_port_memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    p->cfg.align = lay.align;
    p->layout = lay;
    p->capacity = (uint32_t)lay.blocks;
    p->stride = lay.stride;
    p->shift = dmm_is_pow2(lay.stride) ? dmm_log2_floor(lay.stride) : 0xFFu;
    unsigned char *meta = (unsigned char *)ctrl + dmm_align_up(sizeof(struct dmm_pool), CTRL_ALIGN);
    p->free_list = (uint32_t *)(void *)meta;
    p->bitmap = wants_bitmap(cfg) ? (uint64_t *)(void *)(meta + dmm_align_up(lay.blocks * sizeof(uint32_t), 8)) : NULL;
    p->base = meta + lay.meta_bytes + lay.pad_bytes;
    p->span = lay.blocks * lay.stride;
    p->footprint = size - lay.tail_bytes;
    p->poison = cfg->poison || cfg->harden >= DMM_HARDEN_PARANOID;
    p->key = (uintptr_t)0x9E3779B97F4A7C15ull ^ (uintptr_t)p;
    atomic_flag_clear(&p->spin);
    if (cfg->lock == DMM_LOCK_MUTEX && !dmm_port_mutex_init(&p->mutex))
        return DMM_E_UNSUPPORTED;
    fill_free_list(p);
    if (PL_POISON(p))
        for (uint32_t i = 0; i < p->capacity; i++)
            fill_block(p, p->base + (size_t)i * p->stride, DMM_POOL_POISON_BYTE, p->cfg.block_size);
    dmm_ann_region(p->base, p->span); /* ASan/Valgrind: no block is the program's yet */
    p->magic = DMM_POOL_MAGIC;
    *out = p;
    return DMM_OK;
}

dmm_status dmm_pool_reset(dmm_pool *p)
{
    if (!p)
        return DMM_E_NULL;
    dmm__pool_lock(p);
    if (p->nwait) {
        dmm__pool_unlock(p);
        return DMM_E_RANGE;
    }
    fill_free_list(p);
    if (PL_POISON(p))
        for (uint32_t i = 0; i < p->capacity; i++)
            fill_block(p, p->base + (size_t)i * p->stride, DMM_POOL_POISON_BYTE, p->cfg.block_size);
    p->peak_blocks = 0;
    dmm_ann_region(p->base, p->span);
    dmm__pool_unlock(p);
    return DMM_OK;
}

void dmm_pool_destroy(dmm_pool *p)
{
    if (!p)
        return;
    if (PL_LOCK(p) == DMM_LOCK_MUTEX)
        dmm_port_mutex_destroy(&p->mutex);
    p->magic = 0;
}

/* ---- block fills --------------------------------------------------------------- */

static bool vec_ok(const void *a, size_t n)
{
    return ((uintptr_t)a % DMM_VEC_GRANULE) == 0 && n % DMM_VEC_GRANULE == 0;
}

static void fill_block(const dmm_pool *p, void *b, int c, size_t n)
{
    (void)p;
    if (vec_ok(b, n))
        dmm_vec_memset(b, c, n);
    else
        dmm_port_memset(b, c, n);
}

/* The bytes of a block the fills cover: the block rounded up to the
 * alignment (its padding is the block's too), so that the length is a
 * multiple of the vector granule whenever the alignment is; only the
 * block itself when a guard word may sit in that padding. */
static size_t fill_len(const dmm_pool *p)
{
    if (PL_HARDEN(p) >= DMM_HARDEN_CANARY)
        return p->cfg.block_size;
    return dmm_align_up(p->cfg.block_size, p->cfg.align);
}

void dmm_pool_memset(const dmm_pool *p, void *block, int c)
{
    fill_block(p, block, c, fill_len(p));
}

void dmm_pool_memcpy(const dmm_pool *p, void *dst, const void *src)
{
    size_t n = fill_len(p);
    if (vec_ok(dst, n) && ((uintptr_t)src % DMM_VEC_GRANULE) == 0)
        dmm_vec_memcpy(dst, src, n);
    else
        dmm_port_memcpy(dst, src, n);
}

/* ---- guards and poison ----------------------------------------------------------- */

static uint64_t guard_value(const dmm_pool *p, const void *b)
{
    uint64_t v = (uint64_t)(p->key ^ (uintptr_t)b);
    v ^= v >> 29;
    return v * 0xBF58476D1CE4E5B9ull;
}

static void guard_write(const dmm_pool *p, unsigned char *b)
{
    uint64_t v = guard_value(p, b);
    unsigned char *g = b + p->cfg.block_size;
    for (unsigned k = 0; k < DMM_POOL_GUARD; k++)
        g[k] = (unsigned char)(v >> (8 * k));
}

static bool guard_intact(const dmm_pool *p, const unsigned char *b)
{
    uint64_t v = guard_value(p, b);
    const unsigned char *g = b + p->cfg.block_size;
    for (unsigned k = 0; k < DMM_POOL_GUARD; k++)
        if (g[k] != (unsigned char)(v >> (8 * k)))
            return false;
    return true;
}

static bool poison_intact(const dmm_pool *p, const unsigned char *b)
{
    for (size_t k = 0; k < p->cfg.block_size; k++)
        if (b[k] != DMM_POOL_POISON_BYTE)
            return false;
    return true;
}

/* ---- allocation and free ---------------------------------------------------------- */

static DMM_ALWAYS_INLINE void bit_set(uint64_t *bm, uint32_t i) { bm[i >> 6] |= (uint64_t)1 << (i & 63); }
static DMM_ALWAYS_INLINE void bit_clear(uint64_t *bm, uint32_t i) { bm[i >> 6] &= ~((uint64_t)1 << (i & 63)); }
static DMM_ALWAYS_INLINE bool bit_get(const uint64_t *bm, uint32_t i) { return (bm[i >> 6] >> (i & 63)) & 1u; }

/* Block index of a block's byte offset. */
static DMM_ALWAYS_INLINE uint32_t index_at(const dmm_pool *p, size_t off)
{
    return (uint32_t)(p->shift != 0xFFu ? off >> p->shift : off / p->stride);
}

/* Poison verified, guard written: out of line, so the plain path stays
 * small where they are run-time options. */
static DMM_NOINLINE void hand_out_checks(dmm_pool *p, unsigned char *b)
{
    if (PL_POISON(p) && !poison_intact(p, b))
        report(p, DMM_ERR_POISON, DMM_OP_MALLOC, b, "a free pool block was written after it was freed");
    if (PL_HARDEN(p) >= DMM_HARDEN_CANARY)
        guard_write(p, b);
}

/* Marks the block at byte offset off handed out (lock held); its address. */
static DMM_ALWAYS_INLINE unsigned char *hand_out(dmm_pool *p, uint32_t off)
{
    unsigned char *b = p->base + off;
    if (PL_HARDEN(p) >= DMM_HARDEN_CHECKED)
        bit_set(p->bitmap, index_at(p, off));
    if (PL_POISON(p) || PL_HARDEN(p) >= DMM_HARDEN_CANARY)
        hand_out_checks(p, b);
    dmm_ann_alloc(b, p->cfg.block_size, b + p->stride);
    if (PL_STATS(p) >= DMM_STATS_COUNTERS) {
        p->alloc_count++;
        size_t live = (size_t)p->capacity - p->nfree;
        if (live > p->peak_blocks)
            p->peak_blocks = live;
    }
    return b;
}

/* A block or NULL (lock held). */
static DMM_ALWAYS_INLINE void *take(dmm_pool *p)
{
    if (p->nfree == 0)
        return NULL;
    return hand_out(p, p->free_list[--p->nfree]);
}

void *dmm_pool_alloc(dmm_pool *p)
{
    DMM_ANN_ENTER();
    dmm__pool_lock(p);
    void *b = take(p);
    if (!b && PL_STATS(p) >= DMM_STATS_COUNTERS)
        p->failed_count++;
    dmm__pool_unlock(p);
    DMM_ANN_LEAVE();
    return b;
}

void *dmm_pool_calloc(dmm_pool *p)
{
    void *b = dmm_pool_alloc(p);
    DMM_ANN_ENTER(); /* the fill covers the block's alignment padding too */
    if (b)
        fill_block(p, b, 0, fill_len(p));
    DMM_ANN_LEAVE();
    return b;
}

void *dmm_pool_alloc_wait(dmm_pool *p, int64_t timeout_ns)
{
    dmm__pool_lock(p);
    void *b = take(p);
    if (b || timeout_ns == 0 || PL_LOCK(p) == DMM_LOCK_NONE || !dmm_port_has_wait()) {
        if (!b && PL_STATS(p) >= DMM_STATS_COUNTERS)
            p->failed_count++;
        dmm__pool_unlock(p);
        return b;
    }
    pool_waiter w;
    w.next = NULL;
    w.block = NULL;
    if (!dmm_port_event_init(&w.ev)) {
        if (PL_STATS(p) >= DMM_STATS_COUNTERS)
            p->failed_count++;
        dmm__pool_unlock(p);
        return NULL;
    }
    if (p->wtail)
        p->wtail->next = &w;
    else
        p->whead = &w;
    p->wtail = &w;
    p->nwait++;
    if (PL_STATS(p) >= DMM_STATS_COUNTERS)
        p->wait_count++;
    dmm__pool_unlock(p);

    dmm_port_event_wait(&w.ev, timeout_ns);

    dmm__pool_lock(p);
    b = w.block;
    if (!b) {
        /* Timed out before a free reached it: leave the queue. */
        pool_waiter **pp = &p->whead, *prev = NULL;
        while (*pp && *pp != &w) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        if (*pp) {
            *pp = w.next;
            if (p->wtail == &w)
                p->wtail = prev;
            p->nwait--;
        }
        if (PL_STATS(p) >= DMM_STATS_COUNTERS) {
            p->timeout_count++;
            p->failed_count++;
        }
    }
    dmm__pool_unlock(p);
    /* A hand-over signals under the lock, so once we held it the freeing
     * thread was done with w. */
    dmm_port_event_destroy(&w.ev);
    return b;
}

/* A rejected free: reported, nothing written; kept out of line so the
 * fast path needs no stack frame. */
static DMM_NOINLINE void reject(dmm_pool *p, dmm_error_kind kind, const void *ptr, const char *msg)
{
    report(p, kind, DMM_OP_FREE, ptr, msg);
    dmm__pool_unlock(p);
    DMM_ANN_LEAVE();
}

void dmm_pool_free(dmm_pool *p, void *ptr)
{
    if (!ptr)
        return;
    DMM_ANN_ENTER();
    dmm__pool_lock(p);
    /* A pointer below base wraps to a huge offset: one comparison covers
     * both ends. */
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)p->base;
    uint64_t *word = NULL, bit = 0;
    if (PL_HARDEN(p) >= DMM_HARDEN_CHECKED) {
        if (DMM_UNLIKELY(off >= p->span)) {
            reject(p, DMM_ERR_FOREIGN_POINTER, ptr, "pointer is not inside this pool's blocks");
            return;
        }
        uint32_t i = index_at(p, off);
        if (DMM_UNLIKELY(off != (size_t)i * p->stride)) {
            reject(p, DMM_ERR_MISALIGNED_POINTER, ptr, "pointer is inside a pool block, not at its start");
            return;
        }
        word = &p->bitmap[i >> 6];
        bit = (uint64_t)1 << (i & 63);
        if (DMM_UNLIKELY(!(*word & bit))) {
            reject(p, DMM_ERR_DOUBLE_FREE, ptr, "pool block is already free");
            return;
        }
        if (PL_HARDEN(p) >= DMM_HARDEN_CANARY && DMM_UNLIKELY(!guard_intact(p, (const unsigned char *)ptr))) {
            reject(p, DMM_ERR_CANARY, ptr, "the guard behind a pool block was overwritten (overflow)");
            return;
        }
    }
    if (PL_STATS(p) >= DMM_STATS_COUNTERS)
        p->free_count++;
    pool_waiter *w = PL_LOCK(p) != DMM_LOCK_NONE ? p->whead : NULL; /* no lock, no waiters */
    if (DMM_UNLIKELY(w != NULL)) {
        /* Straight to the first waiter: the block stays handed out. */
        p->whead = w->next;
        if (!p->whead)
            p->wtail = NULL;
        p->nwait--;
        if (PL_HARDEN(p) >= DMM_HARDEN_CANARY)
            guard_write(p, (unsigned char *)ptr);
        if (PL_STATS(p) >= DMM_STATS_COUNTERS) {
            p->handoff_count++;
            p->alloc_count++;
        }
        w->block = ptr;
        dmm_port_event_signal(&w->ev);
        dmm__pool_unlock(p);
        DMM_ANN_LEAVE();
        return;
    }
    if (PL_HARDEN(p) >= DMM_HARDEN_CHECKED)
        *word &= ~bit;
    if (PL_POISON(p))
        fill_block(p, ptr, DMM_POOL_POISON_BYTE, p->cfg.block_size);
    dmm_ann_free(ptr, (unsigned char *)ptr + p->stride);
    p->free_list[p->nfree++] = (uint32_t)off;
    dmm__pool_unlock(p);
    DMM_ANN_LEAVE();
}

bool dmm_pool_owns(const dmm_pool *p, const void *ptr)
{
    return p && (uintptr_t)ptr >= (uintptr_t)p->base && (uintptr_t)ptr - (uintptr_t)p->base < p->span;
}

dmm_pool_layout dmm_pool_get_layout(const dmm_pool *p) { return p->layout; }
dmm_pool_config dmm_pool_get_config(const dmm_pool *p) { return p->cfg; }

/* ---- statistics, checker, walker ----------------------------------------------------- */

dmm_pool_stats dmm_pool_get_stats(dmm_pool *p)
{
    dmm_pool_stats s = {0};
    dmm__pool_lock(p);
    s.alloc_count = p->alloc_count;
    s.free_count = p->free_count;
    s.failed_count = p->failed_count;
    s.error_count = p->error_count;
    s.wait_count = p->wait_count;
    s.timeout_count = p->timeout_count;
    s.handoff_count = p->handoff_count;
    s.capacity = p->capacity;
    s.live_blocks = (size_t)p->capacity - p->nfree;
    s.peak_blocks = p->peak_blocks;
    s.waiting = p->nwait;
    dmm__pool_unlock(p);
    s.block_size = p->cfg.block_size;
    s.stride = p->stride;
    s.footprint = p->footprint;
    s.meta_bytes = p->layout.control_bytes + p->layout.meta_bytes;
    s.align_waste = p->layout.pad_bytes + p->layout.align_waste * p->capacity;
    return s;
}

/* A mixing function for the multiset comparison of the checker. */
static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static dmm_status broken(dmm_pool_check_report *rep, dmm_pool_invariant inv, const void *where, const char *detail)
{
    if (rep) {
        rep->invariant = inv;
        rep->where = where;
        rep->detail = detail;
    }
    return DMM_E_CORRUPT;
}

static dmm_status check_locked(dmm_pool *p, dmm_pool_check_report *rep)
{
    if (p->magic != DMM_POOL_MAGIC || p->stride < p->cfg.block_size || p->span != (size_t)p->capacity * p->stride ||
        ((uintptr_t)p->base & (p->cfg.align - 1)) != 0)
        return broken(rep, DMM_POOL_INV_CONTROL, p, "the pool's control block is damaged");
    if (p->nfree > p->capacity)
        return broken(rep, DMM_POOL_INV_ACCOUNTING, p, "more free blocks than the pool has");
    uint64_t sum_list = 0, sum_bits = 0;
    for (uint32_t k = 0; k < p->nfree; k++) {
        uint32_t off = p->free_list[k];
        uint32_t i = index_at(p, off);
        if (off >= p->span || off != (size_t)i * p->stride)
            return broken(rep, DMM_POOL_INV_FREE_LIST, &p->free_list[k],
                          "a free-list entry is out of range or not on a block boundary");
        if (p->bitmap && bit_get(p->bitmap, i))
            return broken(rep, DMM_POOL_INV_FREE_LIST, p->base + (size_t)i * p->stride,
                          "the free list names a block that is handed out");
        if (PL_POISON(p) && !poison_intact(p, p->base + (size_t)i * p->stride))
            return broken(rep, DMM_POOL_INV_POISON, p->base + (size_t)i * p->stride,
                          "a free block's poison pattern was overwritten");
        sum_list += mix(i);
    }
    if (p->bitmap) {
        size_t used = 0;
        for (uint32_t i = 0; i < p->capacity; i++) {
            if (bit_get(p->bitmap, i)) {
                used++;
                if (PL_HARDEN(p) >= DMM_HARDEN_CANARY && !guard_intact(p, p->base + (size_t)i * p->stride))
                    return broken(rep, DMM_POOL_INV_CANARY, p->base + (size_t)i * p->stride,
                                  "a used block's guard was overwritten");
            } else {
                sum_bits += mix(i);
            }
        }
        if (used != (size_t)p->capacity - p->nfree)
            return broken(rep, DMM_POOL_INV_BITMAP, p->bitmap, "the bitmap's used blocks differ from the free list");
        if (sum_bits != sum_list)
            return broken(rep, DMM_POOL_INV_FREE_LIST, p->free_list,
                          "the free list holds a block twice (and misses another)");
    }
    size_t n = 0;
    for (const pool_waiter *w = p->whead; w && n <= p->nwait; w = w->next)
        n++;
    if (n != p->nwait || (p->nwait && p->nfree))
        return broken(rep, DMM_POOL_INV_WAITERS, p->whead, "the waiter queue is broken, or threads wait beside free blocks");
    if (PL_STATS(p) >= DMM_STATS_COUNTERS && p->peak_blocks < (size_t)p->capacity - p->nfree)
        return broken(rep, DMM_POOL_INV_ACCOUNTING, p, "the peak is below the live blocks");
    if (rep) {
        rep->invariant = DMM_POOL_INV_NONE;
        rep->where = NULL;
        rep->detail = "all invariants hold";
    }
    return DMM_OK;
}

dmm_status dmm_pool_check(dmm_pool *p, dmm_pool_check_report *rep)
{
    if (!p)
        return DMM_E_NULL;
    if (p->magic != DMM_POOL_MAGIC)
        return broken(rep, DMM_POOL_INV_CONTROL, p, "not a pool (bad magic)");
    dmm__pool_lock(p);
    dmm_status st = check_locked(p, rep);
    dmm__pool_unlock(p);
    return st;
}

dmm_status dmm_pool_walk(dmm_pool *p, dmm_pool_walk_fn fn, void *ctx)
{
    if (!p || !fn)
        return DMM_E_NULL;
    if (!p->bitmap)
        return DMM_E_UNSUPPORTED;
    dmm__pool_lock(p);
    for (uint32_t i = 0; i < p->capacity; i++)
        if (fn(ctx, p->base + (size_t)i * p->stride, bit_get(p->bitmap, i)))
            break;
    dmm__pool_unlock(p);
    return DMM_OK;
}

/* ---- the allocator view ------------------------------------------------------------------ */

static void *pa_malloc(void *ctx, size_t size)
{
    dmm_pool *p = ctx;
    return size <= p->cfg.block_size ? dmm_pool_alloc(p) : NULL;
}

static void pa_free(void *ctx, void *ptr) { dmm_pool_free(ctx, ptr); }

static void *pa_realloc(void *ctx, void *ptr, size_t size)
{
    dmm_pool *p = ctx;
    if (!ptr)
        return pa_malloc(ctx, size);
    return size <= p->cfg.block_size ? ptr : NULL;
}

static void *pa_calloc(void *ctx, size_t n, size_t size)
{
    dmm_pool *p = ctx;
    if (size && n > p->cfg.block_size / size)
        return NULL;
    return dmm_pool_calloc(p);
}

static void *pa_aligned(void *ctx, size_t align, size_t size)
{
    dmm_pool *p = ctx;
    return align <= p->cfg.align && size <= p->cfg.block_size ? dmm_pool_alloc(p) : NULL;
}

static size_t pa_usable(void *ctx, const void *ptr)
{
    dmm_pool *p = ctx;
    return dmm_pool_owns(p, ptr) ? p->cfg.block_size : 0;
}

void dmm_pool_as_allocator(dmm_pool *p, dmm_allocator *a)
{
    a->name = "pool";
    a->ctx = p;
    a->malloc = pa_malloc;
    a->free = pa_free;
    a->realloc = pa_realloc;
    a->calloc = pa_calloc;
    a->aligned_alloc = pa_aligned;
    a->usable_size = pa_usable;
}

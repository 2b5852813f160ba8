/*
 * src/pool/set.c - pool sets (several pools keyed by block size on one
 * buffer) and a pool set in front of a dmm heap.
 *
 * A set formats its pools one after the other in ascending block size, so
 * address order is size order: the owner of a pointer is found by a binary
 * search over the pools' block ranges (O(log k), k <= 16).
 */
#include "pool_internal.h"

#define SET_MAGIC 0x7465536c6f6f50ull  /* "PoolSet" */
#define FRONT_MAGIC 0x746e6f72466c50ull /* "PlFront" */

struct dmm_pool_set {
    uint64_t magic;
    unsigned n;
    dmm_pool *pools[DMM_POOL_SET_MAX]; /* ascending block size = ascending address */
    size_t sizes[DMM_POOL_SET_MAX];    /* their block sizes */
    dmm_pool_config base;
    uint64_t error_count;
};

static size_t set_header(void) { return dmm_align_up(sizeof(struct dmm_pool_set), 16); }

/* classes sorted by block size into order[]; false on bad input. */
static bool sort_classes(const dmm_pool_class *classes, unsigned n, unsigned *order)
{
    if (!classes || n == 0 || n > DMM_POOL_SET_MAX)
        return false;
    for (unsigned i = 0; i < n; i++) {
        if (classes[i].block_size == 0 || classes[i].blocks == 0)
            return false;
        unsigned j = i;
        while (j > 0 && classes[order[j - 1]].block_size > classes[i].block_size) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (unsigned i = 1; i < n; i++)
        if (classes[order[i]].block_size == classes[order[i - 1]].block_size)
            return false;
    return true;
}

size_t dmm_pool_set_buffer_size(const dmm_pool_config *base, const dmm_pool_class *classes, unsigned n)
{
    unsigned order[DMM_POOL_SET_MAX];
    if (!base || !sort_classes(classes, n, order))
        return 0;
    size_t total = 15 + set_header();
    for (unsigned i = 0; i < n; i++) {
        dmm_pool_config c = *base;
        c.block_size = classes[i].block_size;
        size_t b = dmm_pool_buffer_size(&c, classes[i].blocks);
        if (b == 0 || b > SIZE_MAX / 2 - total)
            return 0;
        total += b;
    }
    return total;
}

dmm_status dmm_pool_set_init(dmm_pool_set **out, void *buf, size_t size, const dmm_pool_config *base,
                             const dmm_pool_class *classes, unsigned n)
{
    if (!out || !buf || !base || !classes)
        return DMM_E_NULL;
    *out = NULL;
    unsigned order[DMM_POOL_SET_MAX];
    if (!sort_classes(classes, n, order))
        return DMM_E_CONFIG;
    uintptr_t at = dmm_align_up_ptr((uintptr_t)buf, 16);
    uintptr_t end = (uintptr_t)buf + size;
    if (at + set_header() > end || at + set_header() < at)
        return DMM_E_TOO_SMALL;
    dmm_pool_set *s = (dmm_pool_set *)at;
    dmm_port_memset(s, 0, sizeof *s);
    s->base = *base;
    s->n = n;
    at += set_header();
    for (unsigned k = 0; k < n; k++) {
        const dmm_pool_class *cl = &classes[order[k]];
        dmm_pool_config c = *base;
        c.block_size = cl->block_size;
        size_t want = dmm_pool_buffer_size(&c, cl->blocks);
        if (want == 0)
            return DMM_E_CONFIG;
        if (want > end - at)
            return DMM_E_TOO_SMALL;
        /* The last pool takes whatever is left, the others just what their
         * count needs (the worst-case padding may give one more block). */
        size_t give = k + 1 == n ? (size_t)(end - at) : want;
        dmm_status st = dmm_pool_init(&s->pools[k], (void *)at, give, &c);
        if (st != DMM_OK)
            return st;
        s->sizes[k] = cl->block_size;
        at += give;
    }
    s->magic = SET_MAGIC;
    *out = s;
    return DMM_OK;
}

void dmm_pool_set_destroy(dmm_pool_set *s)
{
    if (!s)
        return;
    for (unsigned k = 0; k < s->n; k++)
        dmm_pool_destroy(s->pools[k]);
    s->magic = 0;
}

/* Index of the smallest pool whose blocks hold size, or n. */
static unsigned first_fit(const dmm_pool_set *s, size_t size)
{
    unsigned lo = 0, hi = s->n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (s->sizes[mid] >= size)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void *dmm_pool_set_alloc(dmm_pool_set *s, size_t size)
{
    for (unsigned k = first_fit(s, size); k < s->n; k++) {
        void *b = dmm_pool_alloc(s->pools[k]);
        if (b)
            return b;
    }
    return NULL;
}

void *dmm_pool_set_alloc_wait(dmm_pool_set *s, size_t size, int64_t timeout_ns)
{
    unsigned k = first_fit(s, size);
    if (k == s->n)
        return NULL;
    void *b = dmm_pool_set_alloc(s, size);
    return b ? b : dmm_pool_alloc_wait(s->pools[k], timeout_ns);
}

dmm_pool *dmm_pool_set_owner(const dmm_pool_set *s, const void *ptr)
{
    unsigned lo = 0, hi = s->n;
    uintptr_t a = (uintptr_t)ptr;
    while (lo < hi) { /* the last pool whose blocks start at or below a */
        unsigned mid = (lo + hi) / 2;
        if ((uintptr_t)s->pools[mid]->base <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    dmm_pool *p = s->pools[lo - 1];
    return dmm_pool_owns(p, ptr) ? p : NULL;
}

void dmm_pool_set_free(dmm_pool_set *s, void *block)
{
    if (!block)
        return;
    dmm_pool *p = dmm_pool_set_owner(s, block);
    if (!p) {
        dmm__pool_report(&s->base, &s->error_count, DMM_ERR_FOREIGN_POINTER, DMM_OP_FREE, block,
                         "pointer is not inside any pool of this set");
        return;
    }
    dmm_pool_free(p, block);
}

unsigned dmm_pool_set_count(const dmm_pool_set *s) { return s->n; }

dmm_pool *dmm_pool_set_pool(const dmm_pool_set *s, unsigned i) { return i < s->n ? s->pools[i] : NULL; }

dmm_status dmm_pool_set_check(dmm_pool_set *s, dmm_pool_check_report *rep)
{
    if (!s)
        return DMM_E_NULL;
    if (s->magic != SET_MAGIC || s->n == 0 || s->n > DMM_POOL_SET_MAX) {
        if (rep) {
            rep->invariant = DMM_POOL_INV_CONTROL;
            rep->where = s;
            rep->detail = "the pool set's control block is damaged";
        }
        return DMM_E_CORRUPT;
    }
    for (unsigned k = 0; k < s->n; k++) {
        dmm_status st = dmm_pool_check(s->pools[k], rep);
        if (st != DMM_OK)
            return st;
        if (k && (s->sizes[k] <= s->sizes[k - 1] || s->pools[k]->base <= s->pools[k - 1]->base)) {
            if (rep) {
                rep->invariant = DMM_POOL_INV_CONTROL;
                rep->where = s->pools[k];
                rep->detail = "the set's pools are out of order";
            }
            return DMM_E_CORRUPT;
        }
    }
    return DMM_OK;
}

static void *sa_malloc(void *ctx, size_t size) { return dmm_pool_set_alloc(ctx, size); }
static void sa_free(void *ctx, void *ptr) { dmm_pool_set_free(ctx, ptr); }

static size_t sa_usable(void *ctx, const void *ptr)
{
    dmm_pool *p = dmm_pool_set_owner(ctx, ptr);
    return p ? p->cfg.block_size : 0;
}

static void *sa_realloc(void *ctx, void *ptr, size_t size)
{
    if (!ptr)
        return sa_malloc(ctx, size);
    size_t have = sa_usable(ctx, ptr);
    if (have == 0)
        return NULL;
    if (size <= have)
        return ptr;
    void *n = sa_malloc(ctx, size);
    if (n) {
        dmm_port_memcpy(n, ptr, have);
        sa_free(ctx, ptr);
    }
    return n;
}

static void *sa_calloc(void *ctx, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *b = sa_malloc(ctx, n * size);
    if (b)
        dmm_pool_memset(dmm_pool_set_owner(ctx, b), b, 0);
    return b;
}

void dmm_pool_set_as_allocator(dmm_pool_set *s, dmm_allocator *a)
{
    a->name = "pool_set";
    a->ctx = s;
    a->malloc = sa_malloc;
    a->free = sa_free;
    a->realloc = sa_realloc;
    a->calloc = sa_calloc;
    a->aligned_alloc = NULL;
    a->usable_size = sa_usable;
}

/* ---- a pool set in front of a heap ------------------------------------------------- */

struct dmm_pool_front {
    uint64_t magic;
    dmm_pool_set *set; /* NULL: no pools */
    dmm_heap *heap;
    size_t pool_max;   /* largest block size of the set (0: none) */
    size_t pool_align; /* the pools' alignment */
    atomic_size_t pool_allocs, heap_allocs, pool_full;
};

dmm_status dmm_pool_front_init(dmm_pool_front **out, void *buf, size_t size, const dmm_pool_front_config *cfg)
{
    if (!out || !buf || !cfg)
        return DMM_E_NULL;
    *out = NULL;
    uintptr_t at = dmm_align_up_ptr((uintptr_t)buf, 16);
    uintptr_t end = (uintptr_t)buf + size;
    size_t head = dmm_align_up(sizeof(struct dmm_pool_front), 16);
    if (at + head > end || at + head < at)
        return DMM_E_TOO_SMALL;
    dmm_pool_front *f = (dmm_pool_front *)at;
    dmm_port_memset(f, 0, sizeof *f);
    at += head;
    if (cfg->nclasses > DMM_POOL_SET_MAX)
        return DMM_E_CONFIG;
    if (cfg->nclasses) {
        size_t need = dmm_pool_set_buffer_size(&cfg->pool, cfg->classes, cfg->nclasses);
        if (need == 0)
            return DMM_E_CONFIG;
        if (need > end - at)
            return DMM_E_TOO_SMALL;
        /* The set takes what its counts need; the sizing's worst-case
         * padding is rounded off so the heap starts aligned. */
        need = dmm_align_up(need, 16);
        if (need > end - at)
            need = (size_t)(end - at);
        /* Pools must not take the slack the last pool would absorb: give
         * the set exactly its computed size. */
        dmm_status st = dmm_pool_set_init(&f->set, (void *)at, need, &cfg->pool, cfg->classes, cfg->nclasses);
        if (st != DMM_OK)
            return st;
        at += need;
        unsigned k = dmm_pool_set_count(f->set);
        dmm_pool *last = dmm_pool_set_pool(f->set, k - 1);
        f->pool_max = last->cfg.block_size;
        f->pool_align = last->cfg.align;
    }
    if (at >= end)
        return DMM_E_TOO_SMALL;
    dmm_status st = dmm_heap_init(&f->heap, (void *)at, (size_t)(end - at), &cfg->heap);
    if (st != DMM_OK)
        return st;
    f->magic = FRONT_MAGIC;
    *out = f;
    return DMM_OK;
}

void dmm_pool_front_destroy(dmm_pool_front *f)
{
    if (!f)
        return;
    if (f->set)
        dmm_pool_set_destroy(f->set);
    dmm_heap_destroy(f->heap);
    f->magic = 0;
}

static void count(atomic_size_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

void *dmm_pool_front_malloc(dmm_pool_front *f, size_t size)
{
    if (f->set && size <= f->pool_max) {
        void *b = dmm_pool_set_alloc(f->set, size);
        if (b) {
            count(&f->pool_allocs);
            return b;
        }
        count(&f->pool_full);
    }
    void *b = dmm_heap_malloc(f->heap, size);
    if (b)
        count(&f->heap_allocs);
    return b;
}

static dmm_pool *front_owner(const dmm_pool_front *f, const void *ptr)
{
    return f->set ? dmm_pool_set_owner(f->set, ptr) : NULL;
}

void dmm_pool_front_free(dmm_pool_front *f, void *ptr)
{
    if (!ptr)
        return;
    dmm_pool *p = front_owner(f, ptr);
    if (p)
        dmm_pool_free(p, ptr);
    else
        dmm_heap_free(f->heap, ptr);
}

void *dmm_pool_front_realloc(dmm_pool_front *f, void *ptr, size_t size)
{
    if (!ptr)
        return dmm_pool_front_malloc(f, size);
    dmm_pool *p = front_owner(f, ptr);
    if (!p)
        return dmm_heap_realloc(f->heap, ptr, size);
    if (size <= p->cfg.block_size && size != 0)
        return ptr;
    if (size == 0) {
        dmm_pool_free(p, ptr);
        return NULL;
    }
    void *n = dmm_pool_front_malloc(f, size);
    if (n) {
        dmm_port_memcpy(n, ptr, p->cfg.block_size);
        dmm_pool_free(p, ptr);
    }
    return n;
}

void *dmm_pool_front_calloc(dmm_pool_front *f, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    if (f->set && bytes <= f->pool_max) {
        void *b = dmm_pool_set_alloc(f->set, bytes);
        if (b) {
            count(&f->pool_allocs);
            dmm_pool_memset(dmm_pool_set_owner(f->set, b), b, 0);
            return b;
        }
        count(&f->pool_full);
    }
    void *b = dmm_heap_calloc(f->heap, n, size);
    if (b)
        count(&f->heap_allocs);
    return b;
}

void *dmm_pool_front_aligned_alloc(dmm_pool_front *f, size_t align, size_t size)
{
    if (f->set && size <= f->pool_max && align <= f->pool_align) {
        void *b = dmm_pool_set_alloc(f->set, size);
        if (b) {
            count(&f->pool_allocs);
            return b;
        }
        count(&f->pool_full);
    }
    void *b = dmm_heap_aligned_alloc(f->heap, align, size);
    if (b)
        count(&f->heap_allocs);
    return b;
}

size_t dmm_pool_front_usable_size(dmm_pool_front *f, const void *ptr)
{
    if (!ptr)
        return 0;
    dmm_pool *p = front_owner(f, ptr);
    return p ? p->cfg.block_size : dmm_heap_usable_size(f->heap, ptr);
}

dmm_pool_front_stats dmm_pool_front_get_stats(dmm_pool_front *f)
{
    dmm_pool_front_stats s;
    s.pool_allocs = atomic_load_explicit(&f->pool_allocs, memory_order_relaxed);
    s.heap_allocs = atomic_load_explicit(&f->heap_allocs, memory_order_relaxed);
    s.pool_full = atomic_load_explicit(&f->pool_full, memory_order_relaxed);
    return s;
}

dmm_pool_set *dmm_pool_front_set(dmm_pool_front *f) { return f->set; }
dmm_heap *dmm_pool_front_heap(dmm_pool_front *f) { return f->heap; }

dmm_status dmm_pool_front_check(dmm_pool_front *f, const char **detail)
{
    if (!f)
        return DMM_E_NULL;
    if (f->magic != FRONT_MAGIC) {
        if (detail)
            *detail = "the pool front's control block is damaged";
        return DMM_E_CORRUPT;
    }
    if (f->set) {
        dmm_pool_check_report pr;
        if (dmm_pool_set_check(f->set, &pr) != DMM_OK) {
            if (detail)
                *detail = pr.detail;
            return DMM_E_CORRUPT;
        }
    }
    dmm_heap_check_report hr;
    if (dmm_heap_check(f->heap, &hr) != DMM_OK) {
        if (detail)
            *detail = hr.detail;
        return DMM_E_CORRUPT;
    }
    if (detail)
        *detail = "all invariants hold";
    return DMM_OK;
}

static void *fa_malloc(void *ctx, size_t size) { return dmm_pool_front_malloc(ctx, size); }
static void fa_free(void *ctx, void *ptr) { dmm_pool_front_free(ctx, ptr); }
static void *fa_realloc(void *ctx, void *ptr, size_t size) { return dmm_pool_front_realloc(ctx, ptr, size); }
static void *fa_calloc(void *ctx, size_t n, size_t size) { return dmm_pool_front_calloc(ctx, n, size); }
static void *fa_aligned(void *ctx, size_t align, size_t size) { return dmm_pool_front_aligned_alloc(ctx, align, size); }
static size_t fa_usable(void *ctx, const void *ptr) { return dmm_pool_front_usable_size(ctx, ptr); }

void dmm_pool_front_as_allocator(dmm_pool_front *f, dmm_allocator *a)
{
    a->name = "pool_front";
    a->ctx = f;
    a->malloc = fa_malloc;
    a->free = fa_free;
    a->realloc = fa_realloc;
    a->calloc = fa_calloc;
    a->aligned_alloc = fa_aligned;
    a->usable_size = fa_usable;
}

/*
 * src/heap/heap.c - the heap's public entry points: init (and the choice of
 * variant), extra regions, reset, destroy, and the dispatch of the
 * allocation calls to the variant chosen at init.  The hot paths are in
 * src/heap/engine/ (compiled per variant by variant_*.c), regions in
 * region.c, locks and reports in lock.c, the checker and walker in
 * check.c, the configuration space in config.c and layout.c.
 */
#include "../port/annotate.h"
#include "heap_internal.h"
#include "heap_fields.h"

static bool overlaps(const dmm_heap *h, uintptr_t lo, uintptr_t hi)
{
    uintptr_t clo = (uintptr_t)h->buf, chi = (uintptr_t)h->buf + h->ctrl_size;
    if (lo < chi && clo < hi)
        return true;
    for (const region *r = h->regions; r; r = r->next) {
        uintptr_t rlo = (uintptr_t)r, rhi = rlo + r->size;
        if (lo < rhi && rlo < hi)
            return true;
    }
    return false;
}

#if !DMM_HEAP_FROZEN
/* The first variant compiled into this library that runs cfg. */
static const dmm__heap_ops *variant_for(const dmm_heap_config *cfg)
{
    for (unsigned i = 0; i + 1u < dmm__heap_variant_count; i++)
        if (dmm__heap_variants[i]->accepts(cfg))
            return dmm__heap_variants[i];
    return dmm__heap_variants[dmm__heap_variant_count - 1u];
}
#endif

/* A well-mixed word.  64-bit targets: splitmix64's finaliser.  32-bit
 * targets: a 32-bit finaliser of the same xor-shift-multiply form, so that
 * init needs no 64-bit multiplications (a library call on many MCUs). */
static uintptr_t mixw(uintptr_t x)
{
    if (sizeof x > 4u) {
        uint64_t y = (uint64_t)x;
        y ^= y >> 30;
        y *= 0xBF58476D1CE4E5B9ull;
        y ^= y >> 27;
        y *= 0x94D049BB133111EBull;
        return (uintptr_t)(y ^ (y >> 31));
    }
    x ^= x >> 16;
    x *= (uintptr_t)0x7FEB352Du;
    x ^= x >> 15;
    x *= (uintptr_t)0x846CA68Bu;
    return x ^ (x >> 16);
}

/* What init must prepare: in a frozen build only what its policies use
 * (keys from hardening CHECKED up, a mutex under lock=mutex, the spin flag
 * under lock=spin: nothing else touches h->spin). */
#if DMM_HEAP_FROZEN
#define INIT_KEYS ((DMM_FROZEN_HARDEN) >= DMM_HARDEN_CHECKED)
#define INIT_MUTEX ((DMM_FROZEN_LOCK) == DMM_LOCK_MUTEX)
#define INIT_SPIN ((DMM_FROZEN_LOCK) == DMM_LOCK_SPIN)
#else
#define INIT_KEYS 1
#define INIT_MUTEX 1
#define INIT_SPIN 1
#endif

static void enter_plain(dmm_heap *h)
{
    DMM_ANN_ENTER();
    dmm__heap_lock(h);
}

static void leave_plain(dmm_heap *h)
{
    dmm__heap_unlock(h);
    DMM_ANN_LEAVE();
}

dmm_status dmm_heap_init(dmm_heap **out, void *buf, size_t size, const dmm_heap_config *cfg_in)
{
    dmm_heap_config cfg;
    uintptr_t start, end;
    unsigned range;
    size_t ctrl, rest;
    dmm_heap *h;
    dmm_status st;
    if (out)
        *out = NULL;
    if (!out || !buf)
        return DMM_E_NULL;
#if DMM_HEAP_FROZEN
    cfg = cfg_in ? *cfg_in : dmm__heap_frozen_cfg; /* the frozen build's own config (heap_fields.h) */
#else
    cfg = cfg_in ? *cfg_in : dmm_heap_default_config();
#endif
    if ((st = dmm__config_verdict(&cfg)) != DMM_OK)
        return st;
    start = dmm_align_up_ptr((uintptr_t)buf, GRAN);
    if ((uintptr_t)buf + size < (uintptr_t)buf) /* wraps the address space */
        return DMM_E_RANGE;
    end = dmm_align_down((uintptr_t)buf + size, GRAN);
    if (end <= start)
        return DMM_E_TOO_SMALL;
    /* the bin range and control block (layout.c) */
    if ((ctrl = dmm__heap_layout_for(&cfg, (size_t)(end - start), &range)) == 0)
        return DMM_E_TOO_SMALL;
    rest = (size_t)(end - start) - ctrl;
    if (INIT_MUTEX && cfg.lock == DMM_LOCK_MUTEX) {
        dmm_port_mutex m;
        if (!dmm_port_mutex_init(&m))
            return DMM_E_UNSUPPORTED;
        dmm_port_mutex_destroy(&m);
    }

    h = (dmm_heap *)(void *)start;
    dmm_port_memset(h, 0, ctrl);
    h->magic = HEAP_MAGIC;
    dmm__heap_derive(h, &cfg, range);
    h->buf = buf;
    h->ctrl_size = ctrl + (size_t)(start - (uintptr_t)buf);
    h->cookie = cfg.cookie;
    if (INIT_KEYS) {
        if (!h->cookie)
            h->cookie = mixw((uintptr_t)h ^ (uintptr_t)0xA5A5F00Du);
        /* the link key must differ from the canary cookie and keep the low
         * bits of a link non-zero, so that a zeroed link decodes to garbage */
        h->link_key = mixw(h->cookie + (uintptr_t)0x9E3779B97F4A7C15ull) | 1u; /* odd: invertible */
        h->link_key2 = mixw(h->link_key ^ (uintptr_t)0xD1B54A32D192ED03ull);
        /* the multiplicative inverse of link_key modulo 2^bits (Newton:
         * each step doubles the correct low bits, 3 to start) */
        h->link_kinv = h->link_key;
        for (unsigned i = 0; i < 6u; i++)
            h->link_kinv *= (uintptr_t)2u - h->link_key * h->link_kinv;
    }
#if !DMM_HEAP_FROZEN
    h->ops = variant_for(&cfg); /* a frozen build has no table (NULL) */
#endif
    if (INIT_SPIN)
        atomic_flag_clear(&h->spin);
    if (INIT_MUTEX && cfg.lock == DMM_LOCK_MUTEX)
        dmm_port_mutex_init(&h->mutex);
    h->st.footprint = ctrl;
    DMM_ANN_ENTER();
    dmm__region_format(h, (char *)h + ctrl, rest, 0);
    DMM_ANN_LEAVE();
    *out = h;
    return DMM_OK;
}

dmm_status dmm_heap_add_region(dmm_heap *h, void *buf, size_t size)
{
    uintptr_t start, end;
    dmm_status st = DMM_OK;
    if (!h || !buf)
        return DMM_E_NULL;
    if ((uintptr_t)buf + size < (uintptr_t)buf)
        return DMM_E_RANGE;
    start = dmm_align_up_ptr((uintptr_t)buf, GRAN);
    end = dmm_align_down((uintptr_t)buf + size, GRAN);
    if (end <= start || (size_t)(end - start) < RHDR + dmm__req2size(&h->cfg, 1) + HDR)
        return DMM_E_TOO_SMALL;
    enter_plain(h);
    if (overlaps(h, (uintptr_t)buf, (uintptr_t)buf + size))
        st = DMM_E_OVERLAP;
    else
        dmm__region_format(h, (void *)start, (size_t)(end - start), 0);
    leave_plain(h);
    return st;
}

void dmm_heap_reset(dmm_heap *h)
{
    region *r, *keep = NULL;
    if (!h)
        return;
    enter_plain(h);
    r = h->regions;
    while (r) {
        region *n = r->next;
        if (r->flags & REGION_GROWN) {
            dmm_port_pages_unmap(r, r->size);
        } else {
            r->next = keep;
            keep = r;
        }
        r = n;
    }
    for (unsigned i = 0; i < h->nbins; i++)
        h->heads[i] = NULL;
    if (h->tails)
        for (unsigned i = 0; i < h->nbins; i++)
            h->tails[i] = NULL;
    for (unsigned i = 0; i < h->nwords; i++)
        h->bitmap[i] = 0;
    for (unsigned i = 0; i < h->nquick; i++) {
        h->quick[i] = NULL;
        h->quick_len[i] = 0;
    }
    h->summary = 0;
    h->rover = NULL;
    h->damaged = false;
    h->regions = NULL;
    h->nregions = 0;
    dmm_port_memset(&h->st, 0, sizeof h->st);
    h->st.footprint = ctrl_bytes(h);
    while (keep) {
        region *n = keep->next;
        dmm__region_format(h, keep, keep->size, 0);
        keep = n;
    }
    leave_plain(h);
}

void dmm_heap_destroy(dmm_heap *h)
{
    region *r;
    if (!h)
        return;
    DMM_ANN_ENTER();
    dmm__heap_lock(h);
    r = h->regions;
    while (r) {
        region *n = r->next;
        if (r->flags & REGION_GROWN)
            dmm_port_pages_unmap(r, r->size);
        r = n;
    }
    h->regions = NULL;
    h->magic = 0;
    dmm__heap_unlock(h);
    DMM_ANN_LEAVE();
    if (h->cfg.lock == DMM_LOCK_MUTEX)
        dmm_port_mutex_destroy(&h->mutex);
}

#if !DMM_HEAP_FROZEN
/* A frozen build defines these in variant_any.c, without the dispatch. */
void *dmm_heap_malloc(dmm_heap *h, size_t size) { return h->ops->malloc(h, size); }
void dmm_heap_free(dmm_heap *h, void *ptr) { h->ops->free(h, ptr); }
void *dmm_heap_calloc(dmm_heap *h, size_t n, size_t size) { return h->ops->calloc(h, n, size); }
void *dmm_heap_realloc(dmm_heap *h, void *ptr, size_t size) { return h->ops->realloc(h, ptr, GRAN, size); }
void *dmm_heap_aligned_alloc(dmm_heap *h, size_t align, size_t size) { return h->ops->aligned(h, align, size); }
size_t dmm_heap_usable_size(dmm_heap *h, const void *ptr) { return h->ops->usable(h, ptr); }
void *dmm_heap_realloc_aligned(dmm_heap *h, void *ptr, size_t align, size_t size)
{
    return h->ops->realloc(h, ptr, align, size);
}

const char *dmm_heap_variant(const dmm_heap *h) { return h ? h->ops->name : NULL; }
#else
const char *dmm_heap_variant(const dmm_heap *h) { return h ? "frozen" : NULL; }
#endif

dmm_heap_config dmm_heap_get_config(const dmm_heap *h) { return h->cfg; }

/* Reads the block's head word and the heap's tail size, both fixed while
 * the block is live (a neighbour's merge rewrites only the head's
 * previous-used bit). */
size_t dmm_heap_block_usable_size(const dmm_heap *h, const void *ptr)
{
    return ptr ? usable_of(h, bfrom(ptr)) : 0;
}

/* ---- the allocator interface ---- */

static void *a_malloc(void *c, size_t n) { return dmm_heap_malloc((dmm_heap *)c, n); }
static void a_free(void *c, void *p) { dmm_heap_free((dmm_heap *)c, p); }
static void *a_realloc(void *c, void *p, size_t n) { return dmm_heap_realloc((dmm_heap *)c, p, n); }
static void *a_calloc(void *c, size_t n, size_t s) { return dmm_heap_calloc((dmm_heap *)c, n, s); }
static void *a_aligned(void *c, size_t a, size_t n) { return dmm_heap_aligned_alloc((dmm_heap *)c, a, n); }
static size_t a_usable(void *c, const void *p) { return dmm_heap_usable_size((dmm_heap *)c, p); }

void dmm_heap_as_allocator(dmm_heap *h, dmm_allocator *a)
{
    a->name = "dmm_heap";
    a->ctx = h;
    a->malloc = a_malloc;
    a->free = a_free;
    a->realloc = a_realloc;
    a->calloc = a_calloc;
    a->aligned_alloc = a_aligned;
    a->usable_size = a_usable;
}

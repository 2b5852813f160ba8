/*
 * tests/fuzz/heap_fuzz.c - libFuzzer harness for the heap.
 *
 * Input layout:
 *   bytes 0..7   the configuration (policies and knobs, see make_config);
 *                configurations dmm_heap_config_check refuses are skipped
 *   bytes 8..    operations, 3 bytes each: opcode, size low, size high
 *
 * Every operation runs on a heap of 1..17 KiB (optionally misaligned,
 * optionally growing) with a shadow model of up to 32 live blocks, each
 * filled with a pattern derived from its id.  After every step the harness
 * runs dmm_heap_check and verifies all live patterns, alignment, usable size
 * and non-overlap; any failure, and any error callback (the harness never
 * misuses the heap), ends in __builtin_trap().
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dmm/heap.h"

#define MAX_LIVE 32
#define ARENA 20480

typedef struct live {
    unsigned char *p;
    size_t n;       /* bytes requested and filled */
    size_t usable;
    uint32_t id;
} live;

static _Alignas(64) unsigned char arena[ARENA + 64];
static live blocks[MAX_LIVE];
static size_t nlive;
static uint32_t next_id;
static unsigned char *heap_lo, *heap_hi;
static int growth;

static unsigned char pat(uint32_t id, size_t i)
{
    uint32_t x = id * 2654435761u + (uint32_t)i * 40503u;
    return (unsigned char)(x ^ (x >> 13) ^ (uint32_t)(i >> 8));
}

static void fill(const live *b, size_t from)
{
    for (size_t i = from; i < b->n; i++)
        b->p[i] = pat(b->id, i);
}

static void verify(const live *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->p[i] != pat(b->id, i))
            __builtin_trap();
}

static void on_error(void *ctx, const dmm_error *e)
{
    (void)ctx;
    (void)e;
    __builtin_trap(); /* the harness never misuses the heap */
}

static void check(dmm_heap *h)
{
    dmm_heap_check_report rep;
    if (dmm_heap_check(h, &rep) != DMM_OK)
        __builtin_trap();
    for (size_t i = 0; i < nlive; i++)
        verify(&blocks[i]);
}

/* A new block: aligned, big enough, inside the arena (or a grown region),
 * overlapping no live block. */
static void accept(dmm_heap *h, unsigned char *p, size_t n, size_t align, uint32_t id, size_t keep)
{
    live b;
    size_t ext;
    if (((uintptr_t)p % DMM_HEAP_ALIGN) != 0 || (align > 1 && ((uintptr_t)p % align) != 0))
        __builtin_trap();
    b.p = p;
    b.n = n;
    b.usable = dmm_heap_usable_size(h, p);
    b.id = id;
    if (b.usable < n)
        __builtin_trap();
    ext = b.usable ? b.usable : 1;
    if (p < heap_lo || p + ext > heap_hi) {
        /* outside the arena: only grown regions may be, and never partly */
        if (!growth || (p < heap_hi && p + ext > heap_lo))
            __builtin_trap();
    }
    for (size_t i = 0; i < nlive; i++) {
        const live *o = &blocks[i];
        size_t oext = o->usable ? o->usable : 1;
        if (p < o->p + oext && o->p < p + ext)
            __builtin_trap();
    }
    if (keep > n)
        keep = n;
    fill(&b, keep);
    blocks[nlive++] = b;
}

static void drop(size_t i)
{
    blocks[i] = blocks[--nlive];
}

static void make_config(const uint8_t *d, dmm_heap_config *c, size_t *size, size_t *mis)
{
    static const unsigned qlimits[4] = {0, 1, 4, 16};
    *c = dmm_heap_default_config();
    c->org = (dmm_heap_org)(d[0] & 3);
    c->links = (dmm_heap_links)((d[0] >> 2) & 1);
    c->order = (dmm_heap_order)((d[0] >> 3) & 3);
    c->fit = (dmm_heap_fit)(((d[0] >> 5) & 7) % 5);
    c->split = (d[1] & 1) != 0;
    c->coalesce = (dmm_heap_coalesce)(((d[1] >> 1) & 3) % 3);
    c->stats = (dmm_heap_stats_level)(((d[1] >> 3) & 3) % 3);
    c->harden = (dmm_heap_harden)((d[1] >> 5) & 3);
    c->poison = (d[1] >> 7) != 0;
    c->sl_bits = d[2] % 6u;
    c->exact_max = (size_t)64 << ((d[2] >> 3) & 3);
    c->quick_max = (size_t)(d[3] & 7) * 16u;
    c->quick_limit = c->quick_max ? qlimits[(d[3] >> 3) & 3] : 0;
    c->split_min = (size_t)d[4] * 4u;
    c->coalesce_max = (c->coalesce != DMM_COALESCE_OFF && d[5]) ? 64u + (size_t)d[5] * 32u : 0;
    *size = 1024u + (size_t)d[6] * 64u;
    *mis = d[7] & 15u;
    if (((d[7] >> 4) & 3) == 3) {
        c->grow_granularity = 4096;
        c->release_empty = (d[7] >> 6) & 1;
    }
    c->lock = DMM_LOCK_NONE;
    c->on_error = DMM_ON_ERROR_REPORT;
    c->error_fn = on_error;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dmm_heap_config cfg;
    dmm_heap *h = NULL;
    size_t hsize, mis;
    if (size < 8)
        return 0;
    make_config(data, &cfg, &hsize, &mis);
    if (dmm_heap_config_check(&cfg, NULL) != DMM_OK)
        return 0;
    if (dmm_heap_init(&h, arena + mis, hsize, &cfg) != DMM_OK) {
        /* a valid config must init whenever the buffer is large enough */
        if (hsize >= dmm_heap_min_buffer(&cfg) + DMM_HEAP_ALIGN)
            __builtin_trap();
        return 0;
    }
    heap_lo = arena + mis;
    heap_hi = arena + mis + hsize;
    growth = cfg.grow_granularity != 0;
    nlive = 0;
    next_id = 1;
    check(h);

    for (size_t i = 8; i + 3 <= size; i += 3) {
        unsigned op = data[i] & 15u;
        size_t n = (size_t)data[i + 1] | ((size_t)(data[i + 2] & 0x1F) << 8); /* 0..8191 */
        size_t pick = nlive ? (size_t)data[i + 2] % nlive : 0;
        unsigned char *p;
        if (nlive == MAX_LIVE && op < 8)
            op = 8 + (op & 7); /* full shadow: free or resize instead */
        switch (op) {
        case 0: case 1: case 2: case 3:
            if ((p = dmm_heap_malloc(h, n)) != NULL)
                accept(h, p, n, 1, next_id++, 0);
            break;
        case 4:
            if ((p = dmm_heap_calloc(h, (n & 15) + 1, n >> 4)) != NULL) {
                size_t total = ((n & 15) + 1) * (n >> 4);
                for (size_t k = 0; k < total; k++)
                    if (p[k])
                        __builtin_trap();
                accept(h, p, total, 1, next_id++, 0);
            }
            break;
        case 5: case 6: {
            size_t align = (size_t)1 << (data[i + 2] >> 5 << 1); /* 1..4096 */
            if ((p = dmm_heap_aligned_alloc(h, align, n & 0x3FF)) != NULL)
                accept(h, p, n & 0x3FF, align, next_id++, 0);
            break;
        }
        case 7:
            if ((p = dmm_heap_malloc(h, 0)) != NULL)
                accept(h, p, 0, 1, next_id++, 0);
            break;
        case 8: case 9: case 10: case 11:
            if (nlive) {
                verify(&blocks[pick]);
                dmm_heap_free(h, blocks[pick].p);
                drop(pick);
            }
            break;
        case 12: case 13:
            if (nlive) {
                live old = blocks[pick];
                verify(&old);
                p = dmm_heap_realloc(h, old.p, n);
                if (n == 0) {
                    if (p)
                        __builtin_trap();
                    drop(pick);
                } else if (p) {
                    size_t keep = old.n < n ? old.n : n;
                    for (size_t k = 0; k < keep; k++)
                        if (p[k] != pat(old.id, k))
                            __builtin_trap();
                    drop(pick);
                    accept(h, p, n, 1, old.id, keep);
                }
            }
            break;
        case 14:
            if (nlive) {
                live old = blocks[pick];
                size_t align = DMM_HEAP_ALIGN;
                while (align < 4096 && ((uintptr_t)old.p % (align * 2)) == 0)
                    align *= 2;
                verify(&old);
                p = dmm_heap_realloc_aligned(h, old.p, align, n | 1);
                if (p) {
                    size_t keep = old.n < (n | 1) ? old.n : (n | 1);
                    for (size_t k = 0; k < keep; k++)
                        if (p[k] != pat(old.id, k))
                            __builtin_trap();
                    drop(pick);
                    accept(h, p, n | 1, align, old.id, keep);
                }
            }
            break;
        default: {
            dmm_heap_stats st = dmm_heap_get_stats(h);
            if (cfg.stats != DMM_STATS_OFF && st.live_count != nlive)
                __builtin_trap();
            if (cfg.stats == DMM_STATS_FULL) {
                size_t req = 0;
                for (size_t k = 0; k < nlive; k++)
                    req += blocks[k].n;
                if (st.live_requested != req)
                    __builtin_trap();
            }
            break;
        }
        }
        check(h);
    }
    while (nlive) {
        verify(&blocks[0]);
        dmm_heap_free(h, blocks[0].p);
        drop(0);
        check(h);
    }
    dmm_heap_reset(h);
    check(h);
    dmm_heap_destroy(h);
    return 0;
}

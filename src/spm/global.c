/*
 * src/spm/global.c - the scratchpad heap's global memory and the main
 * core's service (include/dmm/spm.h, docs/spm.md "Global memory and the
 * manager").
 *
 * Everything lives in the caller's buffer: the control block (this file's
 * struct, the per-core mailbox state and the inbound rings) at its start,
 * then the heap(s).  Global address a is buf + a; the control block covers
 * address 0, so 0 is never an object.
 *
 * Dynamic mode: one dmm heap used only by the manager.  Each core has an
 * inbound ring of `depth` 32-bit words (core -> manager) and a one-word
 * outbound box (manager -> core); both sides block (a writer when full, a
 * reader when empty), as the Cell's mailboxes do.  One port mutex guards
 * every box; the manager sleeps on one condition (the doorbell) that
 * every core's write and read rings, each core on its own condition.
 *
 * Messages (word 0 carries the opcode in bits 0-7):
 *   alloc  in: op | log2(align) << 8, size low, size high
 *          out: address low, address high              (5 words)
 *   free   in: op, address low, address high            (3 words)
 *
 * Static mode: `cores` equal slices past the control block, one dmm heap
 * each, used by its core's own thread; no words.
 *
 * The statistics are relaxed atomic counters of the native width
 * (atomic_size_t: lock-free on 32-bit targets without libatomic, so they
 * wrap after 2^32 events there).
 */
#include "dmm/spm.h"

#include <stdatomic.h>

#include "../port/port.h"

#define SPMG_MAGIC 0x474d5053u /* "SPMG" */
#define SPMG_MAX_DEPTH 1024u
#define SPMG_GRAIN 16u         /* DMA granule: addresses and sizes */

enum { OP_ALLOC = 1, OP_FREE = 2 };

typedef struct spmg_core {
    dmm_port_cond cv;      /* the core sleeps here: ring space, reply word */
    uint32_t *ring;        /* inbound words, `depth` of them */
    unsigned head, count;  /* ring occupancy */
    uint32_t out;          /* the outbound box */
    bool out_full;
    dmm_heap *heap;        /* static mode: this core's slice */
    size_t lo, hi;         /* static mode: the slice's address range */
    atomic_size_t errors; /* static mode: refused frees of this slice */
    atomic_uint attached; /* a per-core heap (dmm_spm_create) uses this core */
} spmg_core;

struct dmm_spm_global {
    uint32_t magic;
    dmm_spm_mode mode;
    unsigned cores, depth;
    unsigned char *buf;
    size_t size;
    size_t data_off;       /* first address past the control block */
    dmm_heap *heap;        /* dynamic mode */
    dmm_heap_config hcfg;  /* the configuration of every heap here */
    atomic_size_t heap_errors; /* refused frees of the dynamic heap */

    bool sync;             /* mu and the conditions are initialised */
    bool thread_on;        /* the library's manager thread runs */
    dmm_port_mutex mu;
    dmm_port_cond doorbell; /* the manager (and stats waiters) sleep here */
    dmm_port_thread thread;
    unsigned pending;      /* words in every ring */
    bool in_message;       /* the manager is inside one message */
    bool serving;          /* a serve loop runs */
    bool stop;
    unsigned next;         /* round-robin start */

    atomic_size_t allocs, frees, failures, words_in, words_out, full_waits, errors;
    atomic_size_t in_use, peak;

    spmg_core core[];
};

static size_t round_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }
static void granule_prime(const dmm_spm_global *g, dmm_heap *h);

static bool is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

static void heap_error(void *ctx, const dmm_error *err)
{
    (void)err;
    atomic_size_t *count = ctx;
    atomic_fetch_add_explicit(count, 1, memory_order_relaxed);
}

dmm_spm_global_config dmm_spm_global_default_config(void)
{
    dmm_spm_global_config c;
    c.mode = DMM_SPM_DYNAMIC;
    c.cores = 1;
    c.heap = NULL;
    c.mailbox_depth = 4;
    c.manager_thread = true;
    return c;
}

/* Bytes of the control block for this shape (a multiple of 64). */
static size_t control_bytes(unsigned cores, unsigned depth, dmm_spm_mode mode)
{
    size_t n = sizeof(struct dmm_spm_global) + (size_t)cores * sizeof(spmg_core);
    n = round_up(n, sizeof(uint32_t));
    if (mode == DMM_SPM_DYNAMIC)
        n += (size_t)cores * depth * sizeof(uint32_t);
    return round_up(n, 64);
}

static void manager_main(void *arg) { dmm_spm_global_serve(arg); }

dmm_status dmm_spm_global_create(dmm_spm_global **out, void *buf, size_t size,
                                 const dmm_spm_global_config *cfg)
{
    if (out)
        *out = NULL;
    if (!out || !buf)
        return DMM_E_NULL;
    dmm_spm_global_config c = cfg ? *cfg : dmm_spm_global_default_config();
    if (c.mode != DMM_SPM_DYNAMIC && c.mode != DMM_SPM_STATIC)
        return DMM_E_CONFIG;
    if (c.cores == 0 || c.cores > DMM_SPM_MAX_CORES)
        return DMM_E_CONFIG;
    /* Global addresses are offsets: they keep the heap's alignment only
     * when the buffer starts on the DMA granule. */
    if (((uintptr_t)buf & (SPMG_GRAIN - 1)) != 0)
        return DMM_E_CONFIG;
    if (c.mode == DMM_SPM_DYNAMIC) {
        if (c.mailbox_depth == 0 || c.mailbox_depth > SPMG_MAX_DEPTH)
            return DMM_E_CONFIG;
        if (!dmm_port_has_mutex())
            return DMM_E_UNSUPPORTED;
        if (c.manager_thread && !dmm_port_has_threads())
            return DMM_E_UNSUPPORTED;
    } else {
        c.mailbox_depth = 0;
    }

    dmm_heap_config hc = dmm_heap_default_config();
    if (c.heap) {
        const char *why = NULL;
        if (dmm_heap_config_parse(c.heap, &hc, &why) != DMM_OK)
            return DMM_E_CONFIG;
    }
    /* Global memory is exactly the buffer: no OS growth (its addresses
     * would not be offsets into buf); addresses handed back are always
     * validated (a bad free is reported and ignored, never followed). */
    hc.grow_granularity = 0;
    hc.release_empty = false;
    if (hc.harden == DMM_HARDEN_OFF)
        hc.harden = DMM_HARDEN_CHECKED;
    hc.error_fn = heap_error;
    hc.error_ctx = NULL; /* set below, once g exists */
    dmm_status st = dmm_heap_config_check(&hc, NULL);
    if (st != DMM_OK)
        return st;

    size_t ctrl = control_bytes(c.cores, c.mailbox_depth, c.mode);
    if (size <= ctrl)
        return DMM_E_TOO_SMALL;
    size_t rest = size - ctrl;
    size_t slice = c.mode == DMM_SPM_STATIC ? (rest / c.cores) & ~(size_t)(SPMG_GRAIN - 1) : rest;
    size_t minb = dmm_heap_min_buffer(&hc);
    if (minb == 0)
        return DMM_E_CONFIG;
    if (slice < minb)
        return DMM_E_TOO_SMALL;

    /* Every check passed: from here on the buffer is written. */
    dmm_spm_global *g = buf;
    dmm_port_memset(g, 0, ctrl);
    g->mode = c.mode;
    g->cores = c.cores;
    g->hcfg = hc;
    g->depth = c.mailbox_depth;
    g->buf = buf;
    g->size = size;
    g->data_off = ctrl;
    atomic_init(&g->allocs, 0);
    atomic_init(&g->frees, 0);
    atomic_init(&g->failures, 0);
    atomic_init(&g->words_in, 0);
    atomic_init(&g->words_out, 0);
    atomic_init(&g->full_waits, 0);
    atomic_init(&g->errors, 0);
    atomic_init(&g->in_use, 0);
    atomic_init(&g->peak, 0);
    for (unsigned i = 0; i < c.cores; i++)
        atomic_init(&g->core[i].attached, 0u);

    if (c.mode == DMM_SPM_STATIC) {
        for (unsigned i = 0; i < c.cores; i++) {
            spmg_core *k = &g->core[i];
            k->lo = ctrl + (size_t)i * slice;
            k->hi = k->lo + slice;
            atomic_init(&k->errors, 0);
            hc.error_ctx = &k->errors;
            st = dmm_heap_init(&k->heap, g->buf + k->lo, slice, &hc);
            if (st != DMM_OK) {
                for (unsigned j = 0; j < i; j++)
                    dmm_heap_destroy(g->core[j].heap);
                return st;
            }
            granule_prime(g, k->heap);
        }
        g->magic = SPMG_MAGIC;
        *out = g;
        return DMM_OK;
    }

    uint32_t *rings = (uint32_t *)(void *)((unsigned char *)g + round_up(sizeof(struct dmm_spm_global) +
                                                                          (size_t)c.cores * sizeof(spmg_core),
                                                                          sizeof(uint32_t)));
    for (unsigned i = 0; i < c.cores; i++)
        g->core[i].ring = rings + (size_t)i * c.mailbox_depth;

    atomic_init(&g->heap_errors, 0);
    hc.error_ctx = &g->heap_errors;
    st = dmm_heap_init(&g->heap, g->buf + ctrl, rest, &hc);
    if (st != DMM_OK)
        return st;
    granule_prime(g, g->heap);
    unsigned cv_done = 0;
    bool ok = dmm_port_mutex_init(&g->mu);
    bool mu_ok = ok;
    if (ok)
        ok = dmm_port_cond_init(&g->doorbell);
    bool bell_ok = ok;
    for (; ok && cv_done < c.cores; cv_done++)
        if (!dmm_port_cond_init(&g->core[cv_done].cv))
            ok = false;
    if (ok) {
        g->sync = true;
        g->magic = SPMG_MAGIC;
        if (c.manager_thread) {
            g->thread_on = true;
            if (!dmm_port_thread_start(&g->thread, manager_main, g)) {
                g->thread_on = false;
                ok = false;
            }
        }
    }
    if (!ok) {
        unsigned made = cv_done;
        if (g->sync)
            made = c.cores;
        else if (made > 0)
            made--; /* the last one failed */
        for (unsigned i = 0; i < made; i++)
            dmm_port_cond_destroy(&g->core[i].cv);
        if (bell_ok)
            dmm_port_cond_destroy(&g->doorbell);
        if (mu_ok)
            dmm_port_mutex_destroy(&g->mu);
        dmm_heap_destroy(g->heap);
        g->magic = 0;
        return DMM_E_UNSUPPORTED;
    }
    *out = g;
    return DMM_OK;
}

void dmm_spm_global_destroy(dmm_spm_global *g)
{
    if (!g || g->magic != SPMG_MAGIC)
        return;
    if (g->mode == DMM_SPM_STATIC) {
        for (unsigned i = 0; i < g->cores; i++)
            dmm_heap_destroy(g->core[i].heap);
        g->magic = 0;
        return;
    }
    if (g->thread_on) {
        dmm_spm_global_stop(g);
        dmm_port_thread_join(&g->thread);
        g->thread_on = false;
    }
    for (unsigned i = 0; i < g->cores; i++)
        dmm_port_cond_destroy(&g->core[i].cv);
    dmm_port_cond_destroy(&g->doorbell);
    dmm_port_mutex_destroy(&g->mu);
    dmm_heap_destroy(g->heap);
    g->magic = 0;
}

void *dmm_spm_global_host(dmm_spm_global *g, dmm_gaddr a, size_t n)
{
    if (!g || a < g->data_off || a > g->size || n > g->size - a)
        return NULL;
    return g->buf + a;
}

size_t dmm_spm_global_size(const dmm_spm_global *g) { return g ? g->size : 0; }

dmm_status dmm_spm_global_attach_(dmm_spm_global *g, unsigned core)
{
    if (!g || g->magic != SPMG_MAGIC)
        return DMM_E_NULL;
    if (core >= g->cores)
        return DMM_E_RANGE;
    unsigned no = 0; /* a word, not a bool: RV32 has no byte-wide compare-and-swap */
    return atomic_compare_exchange_strong(&g->core[core].attached, &no, 1u) ? DMM_OK : DMM_E_OVERLAP;
}

void dmm_spm_global_detach_(dmm_spm_global *g, unsigned core)
{
    if (g && g->magic == SPMG_MAGIC && core < g->cores)
        atomic_store(&g->core[core].attached, 0u);
}

dmm_spm_mode dmm_spm_global_mode(const dmm_spm_global *g) { return g ? g->mode : DMM_SPM_DYNAMIC; }

/* ---- the allocation itself (manager in dynamic mode, the core in static) -- */

static void note_peak(dmm_spm_global *g, size_t now)
{
    size_t p = atomic_load_explicit(&g->peak, memory_order_relaxed);
    while (now > p && !atomic_compare_exchange_weak_explicit(&g->peak, &p, now, memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
}

/* An alignment the buffer itself does not have (the heap aligns host
 * addresses, global addresses are offsets from buf): the object is placed
 * inside a larger block at the first offset with that alignment at least
 * 16 bytes past the block's start, and a two-word tag just below it names
 * the block.  The tag's upper word, where a block's header word would be,
 * holds ~a: a heap header there (size + flags, below the buffer's size)
 * never equals it, so a free reads only that word (the heap's own, never
 * a neighbour's payload) to tell the two apart.  It costs up to align + 16
 * bytes; a buffer aligned to the largest alignment asked for (e.g. the
 * segment size) avoids it. */
typedef struct shift_tag {
    size_t block; /* global address of the heap block */
    size_t check; /* ~a */
} shift_tag;

/* The request, at least n, whose heap block is a multiple of the DMA
 * granule.  Blocks laid end to end then keep their payloads on the granule
 * (on 64-bit targets every block is one already; on 32-bit ones the heap's
 * granule is 8 bytes and a 4-byte header would shift every other block). */
static size_t granule_request(const dmm_spm_global *g, size_t n)
{
    size_t r = n;
    for (unsigned i = 0; i < SPMG_GRAIN / DMM_HEAP_ALIGN; i++, r += DMM_HEAP_ALIGN)
        if (dmm_heap_block_size(&g->hcfg, r) % SPMG_GRAIN == 0)
            return r;
    return n;
}

/* Puts a fresh heap's first free payload on the DMA granule (32-bit
 * targets): when it is not, a block of an odd number of heap granules is
 * kept for good, which shifts everything after it by one. */
static void granule_prime(const dmm_spm_global *g, dmm_heap *h)
{
    if (DMM_HEAP_ALIGN >= SPMG_GRAIN)
        return;
    void *p = dmm_heap_malloc(h, granule_request(g, 1));
    if (!p)
        return;
    bool on = ((uintptr_t)p & (SPMG_GRAIN - 1)) == 0;
    dmm_heap_free(h, p);
    for (size_t r = 1; !on && r <= 2 * SPMG_GRAIN; r++)
        if (dmm_heap_block_size(&g->hcfg, r) % SPMG_GRAIN == DMM_HEAP_ALIGN % SPMG_GRAIN) {
            (void)dmm_heap_malloc(h, r);
            break;
        }
}

static void *heap_get(const dmm_spm_global *g, dmm_heap *h, size_t n, size_t align)
{
    if (align <= DMM_HEAP_ALIGN)
        return dmm_heap_malloc(h, n);
    if (align <= SPMG_GRAIN) {
        /* The DMA granule above the heap's (32-bit targets): aligned_alloc
         * needs room to split off a misaligned front, which a hole an
         * object left does not have; with granule-sized blocks a plain
         * block is aligned almost always. */
        void *p = dmm_heap_malloc(h, granule_request(g, n));
        if (p && ((uintptr_t)p & (align - 1)) == 0)
            return p;
        if (p)
            dmm_heap_free(h, p);
    }
    return dmm_heap_aligned_alloc(h, align, n);
}

static dmm_gaddr do_alloc(dmm_spm_global *g, dmm_heap *h, uint64_t bytes, size_t align)
{
    void *p = NULL;
    dmm_gaddr a = DMM_GNULL;
    /* The DMA rules: the whole [a, a + round16(bytes)) belongs to the
     * object. */
    if (bytes > 0 && bytes <= (uint64_t)(SIZE_MAX / 4) && align <= SIZE_MAX / 4) {
        size_t n = round_up((size_t)bytes, SPMG_GRAIN);
        if (((uintptr_t)g->buf & (align - 1)) == 0) {
            p = heap_get(g, h, n, align);
            if (p)
                a = (dmm_gaddr)((unsigned char *)p - g->buf);
        } else {
            p = heap_get(g, h, n + align + SPMG_GRAIN, SPMG_GRAIN);
            if (p) {
                dmm_gaddr block = (dmm_gaddr)((unsigned char *)p - g->buf);
                a = (block + SPMG_GRAIN + align - 1) & ~(dmm_gaddr)(align - 1);
                shift_tag t = {(size_t)block, ~(size_t)a};
                dmm_port_memcpy(g->buf + a - sizeof t, &t, sizeof t);
            }
        }
    }
    if (!p) {
        atomic_fetch_add_explicit(&g->failures, 1, memory_order_relaxed);
        return DMM_GNULL;
    }
    size_t us = dmm_heap_usable_size(h, p);
    note_peak(g, atomic_fetch_add_explicit(&g->in_use, us, memory_order_relaxed) + us);
    atomic_fetch_add_explicit(&g->allocs, 1, memory_order_relaxed);
    return a;
}

/* The heap block of a shifted object at a, or NULL when a is none. */
static void *shifted_block(dmm_spm_global *g, dmm_heap *h, size_t lo, dmm_gaddr a)
{
    shift_tag t;
    if (a < lo + sizeof t || (a & (SPMG_GRAIN - 1)) != 0)
        return NULL;
    size_t check;
    dmm_port_memcpy(&check, g->buf + a - sizeof check, sizeof check);
    if (check != ~(size_t)a)
        return NULL;
    dmm_port_memcpy(&t, g->buf + a - sizeof t, sizeof t);
    if (t.block < lo || t.block + SPMG_GRAIN > a)
        return NULL;
    void *p = g->buf + t.block;
    size_t us = dmm_heap_usable_size(h, p);
    if (us == 0 || a >= t.block + us)
        return NULL;
    return p;
}

/* errs: the error counter of heap h (its error callback's context); only
 * this heap's single user changes it, so a change during the call is this
 * call's report. */
static void do_free(dmm_spm_global *g, dmm_heap *h, atomic_size_t *errs, size_t lo, size_t hi,
                    dmm_gaddr a)
{
    if (a == DMM_GNULL)
        return;
    if (a < lo || a >= hi) {
        /* Not inside this heap at all: nothing to ask the heap. */
        atomic_fetch_add_explicit(errs, 1, memory_order_relaxed);
        return;
    }
    void *p = shifted_block(g, h, lo, a);
    if (p) {
        shift_tag none = {0, 0}; /* a second free of a is refused by the heap */
        dmm_port_memcpy(g->buf + a - sizeof none, &none, sizeof none);
    } else {
        p = g->buf + a;
    }
    size_t before = atomic_load_explicit(errs, memory_order_relaxed);
    size_t us = dmm_heap_usable_size(h, p);
    if (us == 0) {
        /* The heap's hardening refuses it; let free report it once (the
         * error callback counts it) and change nothing. */
        if (atomic_load_explicit(errs, memory_order_relaxed) == before)
            dmm_heap_free(h, p);
        if (atomic_load_explicit(errs, memory_order_relaxed) == before)
            atomic_fetch_add_explicit(errs, 1, memory_order_relaxed);
        return;
    }
    dmm_heap_free(h, p);
    if (atomic_load_explicit(errs, memory_order_relaxed) != before)
        return; /* reported (e.g. a canary) and kept */
    atomic_fetch_sub_explicit(&g->in_use, us, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->frees, 1, memory_order_relaxed);
}

/* ---- mailboxes (g->mu held) ------------------------------------------------ */

static void core_send(dmm_spm_global *g, spmg_core *k, uint32_t w)
{
    if (k->count == g->depth) {
        atomic_fetch_add_explicit(&g->full_waits, 1, memory_order_relaxed);
        while (k->count == g->depth)
            dmm_port_cond_wait(&k->cv, &g->mu);
    }
    k->ring[(k->head + k->count) % g->depth] = w;
    k->count++;
    g->pending++;
    atomic_fetch_add_explicit(&g->words_in, 1, memory_order_relaxed);
    dmm_port_cond_broadcast(&g->doorbell);
}

static uint32_t core_receive(dmm_spm_global *g, spmg_core *k)
{
    while (!k->out_full)
        dmm_port_cond_wait(&k->cv, &g->mu);
    uint32_t w = k->out;
    k->out_full = false;
    dmm_port_cond_broadcast(&g->doorbell);
    return w;
}

static uint32_t mgr_receive(dmm_spm_global *g, spmg_core *k)
{
    while (k->count == 0)
        dmm_port_cond_wait(&g->doorbell, &g->mu);
    uint32_t w = k->ring[k->head];
    k->head = (k->head + 1) % g->depth;
    k->count--;
    g->pending--;
    dmm_port_cond_broadcast(&k->cv);
    return w;
}

static void mgr_send(dmm_spm_global *g, spmg_core *k, uint32_t w)
{
    while (k->out_full)
        dmm_port_cond_wait(&g->doorbell, &g->mu);
    k->out = w;
    k->out_full = true;
    atomic_fetch_add_explicit(&g->words_out, 1, memory_order_relaxed);
    dmm_port_cond_broadcast(&k->cv);
}

/* One whole message from core k (its first word is waiting). */
static void serve_one(dmm_spm_global *g, spmg_core *k)
{
    uint32_t w0 = mgr_receive(g, k);
    uint64_t lo = mgr_receive(g, k);
    uint64_t hi = mgr_receive(g, k);
    uint64_t v = lo | hi << 32;
    if ((w0 & 0xffu) == OP_ALLOC) {
        unsigned lg = (w0 >> 8) & 0xffu;
        size_t align = lg < sizeof(size_t) * 8 ? (size_t)1 << lg : 0;
        dmm_gaddr a = align ? do_alloc(g, g->heap, v, align) : DMM_GNULL;
        if (!align)
            atomic_fetch_add_explicit(&g->failures, 1, memory_order_relaxed);
        mgr_send(g, k, (uint32_t)a);
        mgr_send(g, k, (uint32_t)(a >> 32));
    } else {
        do_free(g, g->heap, &g->heap_errors, g->data_off, g->size, v);
    }
}

void dmm_spm_global_serve(dmm_spm_global *g)
{
    if (!g || g->magic != SPMG_MAGIC || g->mode != DMM_SPM_DYNAMIC)
        return;
    dmm_port_mutex_lock(&g->mu);
    if (g->serving) { /* one manager at a time */
        dmm_port_mutex_unlock(&g->mu);
        return;
    }
    g->serving = true;
    for (;;) {
        if (g->pending == 0) {
            if (g->stop)
                break;
            dmm_port_cond_wait(&g->doorbell, &g->mu);
            continue;
        }
        unsigned i = g->next;
        while (g->core[i].count == 0)
            i = (i + 1) % g->cores;
        g->next = (i + 1) % g->cores;
        g->in_message = true;
        serve_one(g, &g->core[i]);
        g->in_message = false;
        if (g->pending == 0)
            dmm_port_cond_broadcast(&g->doorbell); /* stats waiters */
    }
    g->serving = false;
    g->stop = false;
    dmm_port_cond_broadcast(&g->doorbell);
    dmm_port_mutex_unlock(&g->mu);
}

void dmm_spm_global_stop(dmm_spm_global *g)
{
    if (!g || g->magic != SPMG_MAGIC || g->mode != DMM_SPM_DYNAMIC)
        return;
    dmm_port_mutex_lock(&g->mu);
    g->stop = true;
    dmm_port_cond_broadcast(&g->doorbell);
    dmm_port_mutex_unlock(&g->mu);
}

/* ---- the core's side --------------------------------------------------------- */

static unsigned log2_of(size_t x)
{
    unsigned n = 0;
    while (x > 1) {
        x >>= 1;
        n++;
    }
    return n;
}

dmm_gaddr dmm_spm_global_alloc(dmm_spm_global *g, unsigned core, size_t bytes, size_t align,
                               unsigned *words)
{
    if (words)
        *words = 0;
    if (!g || g->magic != SPMG_MAGIC)
        return DMM_GNULL;
    if (align < SPMG_GRAIN)
        align = SPMG_GRAIN;
    if (core >= g->cores || bytes == 0 || !is_pow2(align)) {
        atomic_fetch_add_explicit(&g->failures, 1, memory_order_relaxed);
        return DMM_GNULL;
    }
    spmg_core *k = &g->core[core];
    if (g->mode == DMM_SPM_STATIC) {
        dmm_gaddr a = do_alloc(g, k->heap, bytes, align);
        return a;
    }
    uint64_t b = bytes;
    dmm_port_mutex_lock(&g->mu);
    core_send(g, k, (uint32_t)OP_ALLOC | (uint32_t)log2_of(align) << 8);
    core_send(g, k, (uint32_t)b);
    core_send(g, k, (uint32_t)(b >> 32));
    uint64_t lo = core_receive(g, k);
    uint64_t hi = core_receive(g, k);
    dmm_port_mutex_unlock(&g->mu);
    if (words)
        *words = 5;
    return (dmm_gaddr)(lo | hi << 32);
}

void dmm_spm_global_free(dmm_spm_global *g, unsigned core, dmm_gaddr a, unsigned *words)
{
    if (words)
        *words = 0;
    if (!g || g->magic != SPMG_MAGIC || a == DMM_GNULL)
        return;
    if (core >= g->cores) {
        atomic_fetch_add_explicit(&g->errors, 1, memory_order_relaxed);
        return;
    }
    spmg_core *k = &g->core[core];
    if (g->mode == DMM_SPM_STATIC) {
        do_free(g, k->heap, &k->errors, k->lo, k->hi, a);
        return;
    }
    uint64_t v = a;
    dmm_port_mutex_lock(&g->mu);
    core_send(g, k, OP_FREE);
    core_send(g, k, (uint32_t)v);
    core_send(g, k, (uint32_t)(v >> 32));
    dmm_port_mutex_unlock(&g->mu);
    if (words)
        *words = 3;
}

dmm_spm_global_stats dmm_spm_global_get_stats(dmm_spm_global *g)
{
    dmm_spm_global_stats s;
    dmm_port_memset(&s, 0, sizeof s);
    if (!g || g->magic != SPMG_MAGIC)
        return s;
    if (g->mode == DMM_SPM_DYNAMIC) {
        /* While a manager runs, wait until every message already sent has
         * been served, so one-way frees are counted. */
        dmm_port_mutex_lock(&g->mu);
        while ((g->serving || g->thread_on) && (g->pending > 0 || g->in_message))
            dmm_port_cond_wait(&g->doorbell, &g->mu);
        dmm_port_mutex_unlock(&g->mu);
    }
    s.allocs = atomic_load(&g->allocs);
    s.frees = atomic_load(&g->frees);
    s.failures = atomic_load(&g->failures);
    s.words_in = atomic_load(&g->words_in);
    s.words_out = atomic_load(&g->words_out);
    s.mailbox_full_waits = atomic_load(&g->full_waits);
    s.bytes_in_use = atomic_load(&g->in_use);
    s.peak_bytes = atomic_load(&g->peak);
    s.errors = atomic_load(&g->errors);
    if (g->mode == DMM_SPM_DYNAMIC)
        s.errors += atomic_load(&g->heap_errors);
    else
        for (unsigned i = 0; i < g->cores; i++)
            s.errors += atomic_load(&g->core[i].errors);
    return s;
}

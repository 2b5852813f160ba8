/*
 * tools/replay/backend_pool.c - the `pool:SPEC` backend of dmm-replay: a set
 * of size-class pools in front of a dmm heap (dmm_pool_front, include/dmm/
 * pool.h) on an mmap'd, prefaulted arena, as the `dmm:` backend runs a heap.
 *
 *   SPEC = CLASSES[;POOLKEYS...][;heap=HEAPCONFIG]
 *   CLASSES   auto | autoN   power-of-two classes 16 B .. 256 B (.. N B),
 *                            each with as many blocks as the trace has
 *                            objects of that class live at its peak (counted
 *                            in trace order while planning: a pool sized
 *                            from a profile); classes the trace never uses
 *                            are left out
 *             SIZExCOUNT/... explicit classes (distinct sizes, at most
 *                            DMM_POOL_SET_MAX)
 *   POOLKEYS  the pool's text form (dmm_pool_config_parse: lock, stats,
 *             harden, poison, align, on_error); `block` is not allowed (the
 *             classes give the block sizes)
 *   heap=     what `dmm:` takes (a preset name or key=value pairs); the
 *             default is the tlsf preset
 *
 * The arena holds the pools first and the heap after them.  Memory figures:
 * footprint = the pools' bytes (reserved whole: a pool is static memory) +
 * the heap's extent; used = the pools' blocks in use (stride each) + the
 * heap's used blocks; meta = the pools' control and metadata + the heap's
 * control block and region overheads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "dmm/pool.h"

#define POOL_AUTO_DEFAULT 256u
#define POOL_AUTO_LIMIT ((uint64_t)16 << (DMM_POOL_SET_MAX - 1u)) /* 16 classes from 16 B */

typedef struct pool_backend {
    dmm_backend hb;          /* the heap's config (checked, forced), the arena; must stay first */
    char spec[512];          /* what the user gave after "pool:" */
    char classes_text[400];  /* the classes as run: "16x12/32x40" */
    char pooltext[512];      /* the pool config as run (dmm_pool_config_format) */
    int auto_classes;        /* classes from the trace's profile */
    uint64_t auto_max;       /* largest auto class */
    int pool_stats_forced, pool_lock_forced;
    dmm_pool_front_config fcfg;
    uint64_t pool_bytes;     /* the arena's bytes before the heap: the front's control block and the pools */
    dmm_pool_front *f;
    dmm_pool_front_stats fst;   /* after the first pass */
    dmm_pool_stats pst[DMM_POOL_SET_MAX];
    unsigned npst;
    atomic_uint_fast64_t pool_errors;
    char last_pool_error[160];
} pool_backend;

/* ---- spec ---- */

static int parse_u64(const char *s, size_t len, uint64_t *v)
{
    uint64_t x = 0;
    if (!len)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || x > (UINT64_MAX - 9u) / 10u)
            return -1;
        x = x * 10u + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return 0;
}

/* "auto", "autoN" or "SIZExCOUNT/...".  Returns 0 or -1 with err. */
static int parse_classes(pool_backend *b, const char *tok, size_t len, char *err, size_t cap)
{
    dmm_pool_front_config *fc = &b->fcfg;
    if (len >= 4 && !strncmp(tok, "auto", 4)) {
        uint64_t m = POOL_AUTO_DEFAULT;
        if (len > 4 && (parse_u64(tok + 4, len - 4, &m) || m < 16u || (m & (m - 1u)) || m > POOL_AUTO_LIMIT)) {
            snprintf(err, cap,
                     "pool: bad classes '%.*s': autoN takes a power of two N from 16 to %" PRIu64
                     " (the largest class)", (int)len, tok, POOL_AUTO_LIMIT);
            return -1;
        }
        b->auto_classes = 1;
        b->auto_max = m;
        return 0;
    }
    fc->nclasses = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i, x;
        uint64_t size, count;
        while (j < len && tok[j] != '/')
            j++;
        for (x = i; x < j && tok[x] != 'x'; x++)
            ;
        if (x == j || parse_u64(tok + i, x - i, &size) || parse_u64(tok + x + 1, j - x - 1, &count) || size == 0 ||
            count == 0 || count > DMM_POOL_MAX_BLOCKS) {
            snprintf(err, cap,
                     "pool: bad class '%.*s' (want SIZExCOUNT, both positive integers, e.g. 32x100; or auto)",
                     (int)(j - i), tok + i);
            return -1;
        }
        if (fc->nclasses == DMM_POOL_SET_MAX) {
            snprintf(err, cap, "pool: more than %u classes in '%.*s'", DMM_POOL_SET_MAX, (int)len, tok);
            return -1;
        }
        for (unsigned k = 0; k < fc->nclasses; k++)
            if (fc->classes[k].block_size == size) {
                snprintf(err, cap, "pool: class size %" PRIu64 " given twice in '%.*s'", size, (int)len, tok);
                return -1;
            }
        fc->classes[fc->nclasses].block_size = (size_t)size;
        fc->classes[fc->nclasses].blocks = (size_t)count;
        fc->nclasses++;
        i = j + 1;
        if (j + 1 == len) {
            snprintf(err, cap, "pool: empty class at the end of '%.*s'", (int)len, tok);
            return -1;
        }
    }
    if (!fc->nclasses) {
        snprintf(err, cap, "pool: no classes given (auto, autoN or SIZExCOUNT/...)");
        return -1;
    }
    return 0;
}

/* The whole spec: classes, pool keys, heap.  Returns 0 or -1 with err. */
static int parse_spec(pool_backend *b, const char *spec, dmm_heap_config *hcfg, char *err, size_t cap)
{
    const char *heap = "tlsf", *p, *semi;
    char heapbuf[1024];
    int have_heap = 0;
    b->fcfg.pool = dmm_pool_default_config();
    if (!spec || !*spec) {
        snprintf(err, cap, "pool: empty specification (e.g. pool:auto;heap=tlsf or pool:16x100/64x50)");
        return -1;
    }
    semi = strchr(spec, ';');
    if (parse_classes(b, spec, semi ? (size_t)(semi - spec) : strlen(spec), err, cap))
        return -1;
    for (p = semi; p; p = semi) {
        const char *tok = p + 1, *why = NULL;
        size_t len;
        char buf[512];
        semi = strchr(tok, ';');
        len = semi ? (size_t)(semi - tok) : strlen(tok);
        if (!len) {
            snprintf(err, cap, "pool: empty part between ';' in '%s'", spec);
            return -1;
        }
        if (len > 5 && !strncmp(tok, "heap=", 5)) {
            if (have_heap) {
                snprintf(err, cap, "pool: heap= given twice in '%s'", spec);
                return -1;
            }
            if (len - 5 >= sizeof heapbuf) {
                snprintf(err, cap, "pool: heap configuration too long");
                return -1;
            }
            memcpy(heapbuf, tok + 5, len - 5);
            heapbuf[len - 5] = 0;
            heap = heapbuf;
            have_heap = 1;
            continue;
        }
        if (len >= sizeof buf) {
            snprintf(err, cap, "pool: pool keys '%.40s...' too long", tok);
            return -1;
        }
        memcpy(buf, tok, len);
        buf[len] = 0;
        if (!strchr(buf, '=')) {
            snprintf(err, cap, "pool: bad part '%s' (want pool keys key=value, or heap=CONFIG)", buf);
            return -1;
        }
        if (!strncmp(buf, "block=", 6) || strstr(buf, ",block=")) {
            snprintf(err, cap, "pool: bad pool keys '%s': the block size comes from the classes", buf);
            return -1;
        }
        if (dmm_pool_config_parse(buf, &b->fcfg.pool, &why) != DMM_OK) {
            snprintf(err, cap, "pool: bad pool keys '%s': %s", buf, why ? why : "parse error");
            return -1;
        }
    }
    if (dmmb_parse(heap, hcfg, err, cap)) {
        char inner[600];
        snprintf(inner, sizeof inner, "%s", err);
        snprintf(err, cap, "pool: heap=: %s", inner);
        return -1;
    }
    return 0;
}

/* Classes 16, 32, .. auto_max with the trace's per-class peak counts. */
static int auto_size(pool_backend *b, rp_plan *plan, char *err, size_t cap)
{
    uint64_t bound[DMM_POOL_SET_MAX], peak[DMM_POOL_SET_MAX];
    unsigned n = 0;
    for (uint64_t s = 16; s <= b->auto_max && n < DMM_POOL_SET_MAX; s *= 2)
        bound[n++] = s;
    if (!plan || rp_plan_class_peaks(plan, bound, n, peak)) {
        snprintf(err, cap, "pool: out of memory profiling the trace for auto classes");
        return -1;
    }
    b->fcfg.nclasses = 0;
    for (unsigned i = 0; i < n; i++)
        if (peak[i]) {
            if (peak[i] > DMM_POOL_MAX_BLOCKS)
                peak[i] = DMM_POOL_MAX_BLOCKS;
            b->fcfg.classes[b->fcfg.nclasses].block_size = (size_t)bound[i];
            b->fcfg.classes[b->fcfg.nclasses].blocks = (size_t)peak[i];
            b->fcfg.nclasses++;
        }
    return 0;
}

int rp_pool_check_spec(const char *spec, char *err, size_t cap)
{
    dmm_heap_config hcfg;
    const char *why = NULL;
    pool_backend *b = calloc(1, sizeof *b);
    int rc = -1;
    if (!b) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    if (parse_spec(b, spec, &hcfg, err, cap))
        goto out;
    if (dmm_heap_config_check(&hcfg, &why) != DMM_OK) {
        snprintf(err, cap, "pool: heap=: invalid dmm configuration: %s", why ? why : "rejected");
        goto out;
    }
    if (dmm_pool_config_check(&b->fcfg.pool, &why) != DMM_OK) {
        snprintf(err, cap, "pool: invalid pool configuration: %s", why ? why : "rejected");
        goto out;
    }
    rc = 0;
out:
    free(b);
    return rc;
}

/* ---- the allocator ---- */

static void on_pool_error(void *ctx, const dmm_error *e)
{
    pool_backend *b = ctx;
    if (atomic_fetch_add(&b->pool_errors, 1) == 0)
        snprintf(b->last_pool_error, sizeof b->last_pool_error, "%s", e->message ? e->message : "pool error");
}

/* The allocator the replay calls.  dmmkit explore counts instructions with
 * callgrind between the entry points named a_malloc, a_free, ... (as the
 * heap's own vtable is named, src/heap/heap.c), so the front is entered
 * through functions of those names here; the front calls the heap directly
 * (dmm_heap_malloc, ...), never through a function of the same names. */
static void *a_malloc(void *c, size_t n) { return dmm_pool_front_malloc(c, n); }
static void a_free(void *c, void *p) { dmm_pool_front_free(c, p); }
static void *a_realloc(void *c, void *p, size_t n) { return dmm_pool_front_realloc(c, p, n); }
static void *a_calloc(void *c, size_t n, size_t s) { return dmm_pool_front_calloc(c, n, s); }
static void *a_aligned(void *c, size_t al, size_t n) { return dmm_pool_front_aligned_alloc(c, al, n); }
static size_t a_usable(void *c, const void *p) { return dmm_pool_front_usable_size(c, p); }

static int pool_init(rp_backend *rb, size_t size)
{
    pool_backend *b = (pool_backend *)rb;
    dmm_status st;
    if (size > b->hb.map_size)
        return DMM_E_RANGE;
    b->hb.arena_size = size;
    b->f = NULL;
    st = dmm_pool_front_init(&b->f, b->hb.arena, size, &b->fcfg);
    if (st != DMM_OK) {
        b->f = NULL;
        return st;
    }
    dmm_pool_front_as_allocator(b->f, &b->hb.rb.a); /* name and any member the vtable grows */
    b->hb.rb.a.malloc = a_malloc;
    b->hb.rb.a.free = a_free;
    b->hb.rb.a.realloc = a_realloc;
    b->hb.rb.a.calloc = a_calloc;
    b->hb.rb.a.aligned_alloc = a_aligned;
    b->hb.rb.a.usable_size = a_usable;
    b->hb.h = dmm_pool_front_heap(b->f);
    b->hb.ctrl_bytes = b->hb.h ? dmm_heap_control_overhead(b->hb.h) : 0;
    b->hb.variant = b->hb.h ? dmm_heap_variant(b->hb.h) : NULL;
    return DMM_OK;
}

static void pool_fini(rp_backend *rb)
{
    pool_backend *b = (pool_backend *)rb;
    if (b->f)
        dmm_pool_front_destroy(b->f);
    b->f = NULL;
    b->hb.h = NULL; /* the front's: destroyed with it */
}

/* O(classes): the heap keeps its counts, each pool its own. */
static int pool_sample(rp_backend *rb, rp_mem *m)
{
    pool_backend *b = (pool_backend *)rb;
    dmm_pool_set *set;
    uint64_t used = 0, meta = 0;
    if (!b->f)
        return -1;
    if ((set = dmm_pool_front_set(b->f)))
        for (unsigned i = 0; i < dmm_pool_set_count(set); i++) {
            dmm_pool_stats ps = dmm_pool_get_stats(dmm_pool_set_pool(set, i));
            used += (uint64_t)ps.live_blocks * ps.stride;
            meta += ps.meta_bytes;
        }
    m->footprint = b->pool_bytes;
    m->regions = b->pool_bytes;
    if (b->hb.h) {
        dmm_heap_stats st = dmm_heap_get_counters(b->hb.h);
        size_t regions = 1u + (size_t)(st.grow_count - st.release_count);
        m->footprint += st.extent;
        m->regions += st.footprint;
        used += st.live_block_bytes;
        meta += b->hb.ctrl_bytes + regions * dmm_heap_region_overhead();
    }
    m->used = used;
    m->used_known = 1;
    m->meta = meta;
    m->meta_known = 1;
    m->rss = rp_rss_bytes();
    return 0;
}

/* The bytes the front puts before its heap (its control block and the
 * pools, each rounded as dmm_pool_front_init does): measured once on a
 * scratch arena, as the arena size minus the heap's region bytes, so the
 * figures and the min-arena search use the exact split.  Returns 0 or -1. */
static int measure_pool_bytes(pool_backend *b, char *err, size_t cap)
{
    size_t est = (size_t)b->pool_bytes + 4096u, heap = dmm_heap_min_buffer(&b->hb.cfg) + 65536u, size = est + heap;
    dmm_heap_stats st;
    int rc;
    if (dmmb_map(&b->hb, size, 0, err, cap))
        return -1;
    if ((rc = pool_init(&b->hb.rb, size)) != DMM_OK) {
        snprintf(err, cap, "pool: cannot create the pools %s and heap: %s", b->classes_text,
                 dmm_status_str((dmm_status)rc));
        dmmb_unmap(&b->hb);
        return -1;
    }
    st = dmm_heap_get_counters(b->hb.h);
    b->pool_bytes = size - st.footprint;
    pool_fini(&b->hb.rb);
    dmmb_unmap(&b->hb);
    return 0;
}

static rp_backend *pool_create(const char *spec, const rp_setup *s, char *err, size_t cap)
{
    dmm_heap_config hcfg;
    const char *why = NULL;
    pool_backend *b = calloc(1, sizeof *b);
    uint64_t heap_min;
    size_t n;
    if (!b) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    if (parse_spec(b, spec, &hcfg, err, cap) || dmmb_setup(&b->hb, "", &hcfg, s->threads, err, cap))
        goto fail;
    snprintf(b->spec, sizeof b->spec, "%s", spec);
    snprintf(b->hb.spec, sizeof b->hb.spec, "%s", spec);
    b->fcfg.heap = b->hb.cfg;
    (void)dmm_heap_config_format(&b->hb.cfg, b->hb.cfgtext, sizeof b->hb.cfgtext);
    if (b->auto_classes && auto_size(b, s->plan, err, cap))
        goto fail;
    /* the pools' statistics are the report's; a lock when threads share them */
    if (b->fcfg.pool.stats == DMM_STATS_OFF) {
        b->fcfg.pool.stats = DMM_STATS_COUNTERS;
        b->pool_stats_forced = 1;
    }
    if (s->threads > 1 && b->fcfg.pool.lock == DMM_LOCK_NONE) {
        b->fcfg.pool.lock = DMM_LOCK_MUTEX;
        b->pool_lock_forced = 1;
    }
    b->fcfg.pool.error_fn = on_pool_error;
    b->fcfg.pool.error_ctx = b;
    atomic_init(&b->pool_errors, 0);
    if (dmm_pool_config_check(&b->fcfg.pool, &why) != DMM_OK) {
        snprintf(err, cap, "pool: invalid pool configuration in '%s': %s", spec, why ? why : "rejected");
        goto fail;
    }
    (void)dmm_pool_config_format(&b->fcfg.pool, b->pooltext, sizeof b->pooltext);
    if (!strncmp(b->pooltext, "block=", 6)) { /* the classes give the sizes: drop the key */
        const char *comma = strchr(b->pooltext, ',');
        memmove(b->pooltext, comma ? comma + 1 : "", strlen(comma ? comma + 1 : "") + 1);
    }
    n = 0;
    b->classes_text[0] = 0;
    for (unsigned i = 0; i < b->fcfg.nclasses && n < sizeof b->classes_text; i++)
        n += (size_t)snprintf(b->classes_text + n, sizeof b->classes_text - n, "%s%zux%zu", i ? "/" : "",
                              b->fcfg.classes[i].block_size, b->fcfg.classes[i].blocks);
    b->pool_bytes = b->fcfg.nclasses ? dmm_pool_set_buffer_size(&b->fcfg.pool, b->fcfg.classes, b->fcfg.nclasses)
                                     : 0;
    if (b->fcfg.nclasses && !b->pool_bytes) {
        snprintf(err, cap, "pool: the classes %s do not fit in memory (%s)", b->classes_text, spec);
        goto fail;
    }
    if (measure_pool_bytes(b, err, cap))
        goto fail;
    heap_min = dmm_heap_min_buffer(&b->hb.cfg);
    if (s->arena) {
        if (s->arena < b->pool_bytes + heap_min) {
            snprintf(err, cap,
                     "--arena %" PRIu64 " is below the minimum %" PRIu64 " bytes for these pools (%" PRIu64
                     ") and heap (%" PRIu64 ")", s->arena, b->pool_bytes + heap_min, b->pool_bytes, heap_min);
            goto fail;
        }
        b->hb.want = s->arena;
    } else {
        /* the pools, then the dmm: backend's default for the heap: 4 x peak
         * live, at least 1 MiB, at most half the machine's memory */
        uint64_t a = rpb_default_arena(s->peak_live, 4, 0, &b->hb.arena_clamped);
        a += b->pool_bytes;
        b->hb.want = (a + 4095u) & ~(uint64_t)4095u;
    }
    b->hb.rb.sample = pool_sample;
    b->hb.rb.detected = "pool";
    b->hb.rb.mem.kind = "allocator";
    b->hb.rb.mem.exact = 1;
    b->hb.rb.mem.footprint_source =
        "pool bytes (every pool's buffer, reserved whole) + dmm heap extent (regions minus untouched top blocks, "
        "control block included)";
    b->hb.rb.mem.used_source = "pool blocks in use (stride each) + dmm used blocks (headers and tail words included)";
    b->hb.rb.mem.meta_source = "pool control and metadata + dmm control block, region descriptors and sentinels";
    b->hb.rb.mem.meta_in_footprint = 1;
    return &b->hb.rb;
fail:
    free(b);
    return NULL;
}

static int pool_prepare(rp_backend *rb, char *err, size_t cap)
{
    pool_backend *b = (pool_backend *)rb;
    int st;
    if (dmmb_map(&b->hb, (size_t)b->hb.want, !b->hb.arena_clamped, err, cap))
        return -1;
    if ((st = pool_init(rb, (size_t)b->hb.want)) != DMM_OK) {
        snprintf(err, cap, "cannot create the pools and heap on a %" PRIu64 "-byte arena: %s", b->hb.want,
                 dmm_status_str((dmm_status)st));
        return -1;
    }
    pool_fini(rb);
    return 0;
}

static int pool_begin_pass(rp_backend *rb, int cold, char *err, size_t cap)
{
    /* no reset for a front: a warm pass starts on a fresh one too */
    (void)cold;
    pool_fini(rb);
    if (pool_init(rb, (size_t)((pool_backend *)rb)->hb.want) != DMM_OK) {
        snprintf(err, cap, "pool front init failed");
        return -1;
    }
    return 0;
}

static int pool_check(rp_backend *rb, char *msg, size_t cap)
{
    pool_backend *b = (pool_backend *)rb;
    const char *detail = NULL;
    if (!b->f || dmm_pool_front_check(b->f, &detail) == DMM_OK)
        return 0;
    snprintf(msg, cap, "%s", detail ? detail : "corrupt");
    return -1;
}

static void pool_after_first(rp_backend *rb)
{
    pool_backend *b = (pool_backend *)rb;
    dmm_pool_set *set;
    if (!b->f)
        return;
    b->fst = dmm_pool_front_get_stats(b->f);
    b->npst = 0;
    if ((set = dmm_pool_front_set(b->f)))
        for (unsigned i = 0; i < dmm_pool_set_count(set) && i < DMM_POOL_SET_MAX; i++)
            b->pst[b->npst++] = dmm_pool_get_stats(dmm_pool_set_pool(set, i));
    if (b->hb.h) {
        b->hb.stats = dmm_heap_get_stats(b->hb.h);
        b->hb.have_stats = 1;
    }
}

static int pool_peak_footprint(rp_backend *rb, uint64_t *v, const char **method)
{
    pool_backend *b = (pool_backend *)rb;
    if (!b->hb.have_stats)
        return 0;
    *v = b->pool_bytes + b->hb.stats.peak_extent;
    *method = "exact (pool bytes + heap statistics peak_extent)";
    return 1;
}

static void pool_json(rp_backend *rb, tj *j)
{
    pool_backend *b = (pool_backend *)rb;
    tj_str(j, "kind", "pool");
    tj_str(j, "name", b->spec);
    tj_str(j, "config", b->hb.cfgtext); /* the heap's, as for dmm: */
    tj_str(j, "detected", "pool");
    tj_str(j, "stats", rpb_stats_name(b->hb.cfg.stats));
    tj_bool(j, "stats_forced", b->hb.stats_forced);
    tj_bool(j, "lock_forced", b->hb.lock_forced);
    tj_str(j, "variant", b->hb.variant ? b->hb.variant : "");
    tj_u64(j, "arena", b->hb.want);
    tj_bool(j, "arena_clamped", b->hb.arena_clamped);
    tj_u64(j, "heap_errors", atomic_load(&b->hb.heap_errors));
    tj_obj(j, "pool");
    tj_str(j, "classes", b->classes_text);
    tj_str(j, "sizing", b->auto_classes ? "auto: per-class peak live objects of the trace (trace order)" : "explicit");
    if (b->auto_classes)
        tj_u64(j, "auto_max", b->auto_max);
    tj_str(j, "config", b->pooltext);
    tj_bool(j, "stats_forced", b->pool_stats_forced);
    tj_bool(j, "lock_forced", b->pool_lock_forced);
    tj_u64(j, "pool_bytes", b->pool_bytes);
    tj_u64(j, "pool_errors", atomic_load(&b->pool_errors));
    tj_str(j, "last_pool_error", b->last_pool_error[0] ? b->last_pool_error : NULL);
    tj_obj_end(j);
}

static void pool_memory_json(rp_backend *rb, tj *j)
{
    pool_backend *b = (pool_backend *)rb;
    tj_u64(j, "arena", b->hb.want);
    tj_u64(j, "pool_bytes", b->pool_bytes);
    tj_u64(j, "regions_peak", b->hb.have_stats ? b->pool_bytes + b->hb.stats.peak_footprint : 0);
    tj_u64(j, "peak_block_bytes", b->hb.have_stats ? b->hb.stats.peak_block_bytes : 0);
    tj_obj(j, "front");
    tj_str(j, "meaning", "requests the first pass sent to the pools and to the heap; pool_full: requests a pool "
                         "would take but every fitting pool was empty (served by the heap)");
    tj_u64(j, "pool_allocs", b->fst.pool_allocs);
    tj_u64(j, "heap_allocs", b->fst.heap_allocs);
    tj_u64(j, "pool_full", b->fst.pool_full);
    tj_obj_end(j);
    tj_arr(j, "pools");
    for (unsigned i = 0; i < b->npst; i++) {
        char buf[2048];
        size_t n = dmm_pool_stats_json(&b->pst[i], buf, sizeof buf);
        if (n < sizeof buf)
            tj_raw(j, NULL, buf);
    }
    tj_arr_end(j);
    if (b->hb.have_stats) {
        char buf[4096];
        size_t n = dmm_heap_stats_json(&b->hb.stats, buf, sizeof buf);
        if (n < sizeof buf)
            tj_raw(j, "heap_stats", buf);
    }
}

static void pool_text(rp_backend *rb, FILE *f)
{
    pool_backend *b = (pool_backend *)rb;
    fprintf(f, "allocator  pool:%s\n           pools %s (%" PRIu64 " B%s)  %s\n           heap %s%s%s\n",
            b->spec, b->classes_text[0] ? b->classes_text : "(none)", b->pool_bytes,
            b->auto_classes ? ", sized from the trace" : "", b->pooltext, b->hb.cfgtext,
            b->hb.stats_forced ? "  [stats raised to counters]" : "",
            b->hb.lock_forced ? "  [lock=mutex for threads]" : "");
    if (b->fst.pool_allocs || b->fst.heap_allocs)
        fprintf(f, "           first pass: %" PRIu64 " from the pools, %" PRIu64 " from the heap (%" PRIu64
                   " because a pool was full)\n", b->fst.pool_allocs, b->fst.heap_allocs, b->fst.pool_full);
}

static void pool_destroy(rp_backend *rb)
{
    pool_backend *b = (pool_backend *)rb;
    pool_fini(rb);
    dmmb_unmap(&b->hb);
    free(b);
}

static int pool_min_arena(rp_backend *rb, rp_plan *p, int verify, rp_min_result *mr)
{
    pool_backend *b = (pool_backend *)rb;
    rpb_arena_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.rb = rb;
    ops.map = &b->hb;
    ops.init = pool_init;
    ops.fini = pool_fini;
    ops.base = b->pool_bytes;
    ops.heap_min = dmm_heap_min_buffer(&b->hb.cfg);
    ops.pow2_steps = b->hb.cfg.max_block_log2 == 0;
    ops.want = b->hb.want;
    return rpb_min_arena(&ops, p, verify, mr);
}

const rp_backend_class rp_pool_class = {
    .prefix = "pool:",
    .usage = "  --alloc pool:SPEC   size-class pools in front of a dmm heap: SPEC = CLASSES[;POOLKEYS][;heap=CONFIG]\n"
             "                      CLASSES auto (16..256 B, counts from the trace's peak), autoN, or\n"
             "                      SIZExCOUNT/...; e.g. pool:auto;heap=tlsf, pool:16x1000/64x200;harden=off\n",
    .caps = RPB_ARENA | RPB_MIN_ARENA | RPB_FRESH,
    .create = pool_create,
    .prepare = pool_prepare,
    .begin_pass = pool_begin_pass,
    .check = pool_check,
    .after_first = pool_after_first,
    .peak_footprint = pool_peak_footprint,
    .json = pool_json,
    .memory_json = pool_memory_json,
    .text = pool_text,
    .destroy = pool_destroy,
    .min_arena = pool_min_arena,
};

/*
 * tools/replay/backend_multiheap.c - the `multiheap:SPEC` backend of
 * dmm-replay: one distributed multi-heap (dmm_mh, include/dmm/multiheap.h)
 * on an mmap'd, prefaulted arena, as the `dmm:` backend runs one heap.
 *
 *   SPEC = NODES[;policy=lazy|central|private|priority][;free=locked|queue]
 *                [;cache=N][;final=on|off][;heap=HEAPCONFIG]
 *   NODES     1..256 node heaps; the arena (after the multi-heap's control
 *             block) is split evenly between them
 *   Defaults are dmm_mh_default_config's (the configuration measured best on
 *   real threads):
 *   policy=   heap selection (dmm_mh_policy), default lazy
 *   free=     remote frees under the owner's lock, or queued (lock-free,
 *             the default)
 *   cache=    blocks per size class in each home's cache (0 = none; default
 *             DMM_MH_DEFAULT_HOME_CACHE); cached blocks count as used
 *   final=on  lazy: a last pass that waits on every skipped heap's lock
 *   heap=     every node heap's configuration, what `dmm:` takes (a preset
 *             name or key=value pairs); default the tlsf preset
 *
 * Home nodes: trace thread t allocates and frees as node t % NODES.  The
 * engine names the trace thread through rp_backend.set_thread (once per
 * replay thread, or per change of thread in a sequential replay), kept in
 * a thread-local variable the allocator calls read.  The frees of blocks
 * still live at the end of a pass are made by the engine's own thread and
 * count as node 0's.
 *
 * Memory figures: footprint (peak) = the sum over nodes of each node heap's
 * peak extent (per-node peaks, which need not coincide: an upper bound of
 * the peak of the sum); a sample's footprint is the sum of the node heaps'
 * current extents.  The multi-heap's own control block (node table and try
 * order) is reported apart (memory.mh_control_bytes).  Aligned requests go
 * through dmm_mh_aligned_alloc (the same selection as malloc).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "dmm/multiheap.h"

typedef struct mh_backend {
    dmm_backend hb;          /* the node heaps' config (checked, stats forced), the arena; must stay first */
    char spec[512];          /* what the user gave after "multiheap:" */
    dmm_mh_config mcfg;
    uint64_t mh_ctrl;        /* bytes before the node ranges (control block, alignment) */
    dmm_mh *mh;
    dmm_mh_node_stats *st;   /* nodes entries, after the first pass */
    int have_stats;
    atomic_uint_fast64_t mh_errors;
    char last_mh_error[160];
} mh_backend;

/* The trace thread's home node, read by the allocator calls. */
static _Thread_local unsigned mh_home;

/* ---- spec ---- */

/* Parses spec into b->mcfg (the heap config in *hcfg).  Returns 0, or -1
 * with one line naming the bad part in err. */
static int parse_spec(mh_backend *b, const char *spec, dmm_heap_config *hcfg, char *err, size_t cap)
{
    const char *p, *semi;
    unsigned long nodes = 0;
    size_t len;
    char heapbuf[1024];
    if (!spec || !*spec) {
        snprintf(err, cap, "multiheap: empty specification (e.g. multiheap:4;policy=lazy;heap=tlsf)");
        return -1;
    }
    semi = strchr(spec, ';');
    len = semi ? (size_t)(semi - spec) : strlen(spec);
    for (size_t i = 0; i < len; i++)
        if (spec[i] < '0' || spec[i] > '9' || nodes > DMM_MH_MAX_NODES) {
            nodes = 0;
            break;
        } else {
            nodes = nodes * 10u + (unsigned long)(spec[i] - '0');
        }
    if (!len || nodes == 0 || nodes > DMM_MH_MAX_NODES) {
        snprintf(err, cap, "multiheap: bad node count '%.*s' (want 1 to %u)", (int)len, spec, DMM_MH_MAX_NODES);
        return -1;
    }
    b->mcfg = dmm_mh_default_config((unsigned)nodes);
    *hcfg = dmm_heap_preset_config(DMM_PRESET_TLSF);
    for (p = semi; p; p = semi) {
        const char *tok = p + 1, *eq;
        semi = strchr(tok, ';');
        len = semi ? (size_t)(semi - tok) : strlen(tok);
        eq = memchr(tok, '=', len);
        if (!len) {
            snprintf(err, cap, "multiheap: empty part between ';' in '%s'", spec);
            return -1;
        }
        if (eq && (size_t)(eq - tok) == 4 && !strncmp(tok, "heap", 4)) {
            char herr[600];
            if (len - 5 >= sizeof heapbuf) {
                snprintf(err, cap, "multiheap: heap configuration too long in '%.*s'", (int)len, tok);
                return -1;
            }
            memcpy(heapbuf, tok + 5, len - 5);
            heapbuf[len - 5] = 0;
            if (dmmb_parse(heapbuf, hcfg, herr, sizeof herr)) {
                snprintf(err, cap, "multiheap: bad heap configuration '%.*s': %s", (int)len, tok, herr);
                return -1;
            }
            continue;
        }
        if (eq && (size_t)(eq - tok) == 6 && !strncmp(tok, "policy", 6)) {
            char name[32];
            size_t n = len - 7;
            if (n < sizeof name) {
                memcpy(name, tok + 7, n);
                name[n] = 0;
            }
            if (n >= sizeof name || dmm_mh_policy_from_name(name, &b->mcfg.policy) != DMM_OK) {
                snprintf(err, cap, "multiheap: unknown policy in '%.*s' (lazy, central, private or priority)",
                         (int)len, tok);
                return -1;
            }
            continue;
        }
        if (eq && (size_t)(eq - tok) == 4 && !strncmp(tok, "free", 4)) {
            if (len == 11 && !strncmp(tok + 5, "locked", 6))
                b->mcfg.remote_free = DMM_MH_FREE_LOCKED;
            else if (len == 10 && !strncmp(tok + 5, "queue", 5))
                b->mcfg.remote_free = DMM_MH_FREE_QUEUE;
            else {
                snprintf(err, cap, "multiheap: bad remote-free mode in '%.*s' (locked or queue)", (int)len, tok);
                return -1;
            }
            continue;
        }
        if (eq && (size_t)(eq - tok) == 5 && !strncmp(tok, "cache", 5)) {
            unsigned long v = 0;
            size_t k = 6;
            for (; k < len && tok[k] >= '0' && tok[k] <= '9' && v <= DMM_MH_CACHE_MAX_BLOCKS; k++)
                v = v * 10u + (unsigned long)(tok[k] - '0');
            if (k == 6 || k < len || v > DMM_MH_CACHE_MAX_BLOCKS) {
                snprintf(err, cap, "multiheap: bad home cache in '%.*s' (0 to %u blocks per class)", (int)len, tok,
                         DMM_MH_CACHE_MAX_BLOCKS);
                return -1;
            }
            b->mcfg.home_cache = (unsigned)v;
            continue;
        }
        if (eq && (size_t)(eq - tok) == 5 && !strncmp(tok, "final", 5)) {
            if (len == 8 && !strncmp(tok + 6, "on", 2))
                b->mcfg.final_blocking_pass = true;
            else if (len == 9 && !strncmp(tok + 6, "off", 3))
                b->mcfg.final_blocking_pass = false;
            else {
                snprintf(err, cap, "multiheap: bad value in '%.*s' (final=on or final=off)", (int)len, tok);
                return -1;
            }
            continue;
        }
        snprintf(err, cap, "multiheap: unknown part '%.*s' (policy=, free=, cache=, final= or heap=)", (int)len, tok);
        return -1;
    }
    return 0;
}

int rp_multiheap_check_spec(const char *spec, char *err, size_t cap)
{
    mh_backend *b = calloc(1, sizeof *b);
    dmm_heap_config hcfg;
    const char *why = NULL;
    int rc = -1;
    if (!b) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    if (parse_spec(b, spec, &hcfg, err, cap) == 0) {
        b->mcfg.heap = hcfg;
        if (dmm_mh_config_check(&b->mcfg, &why) != DMM_OK)
            snprintf(err, cap, "multiheap: invalid configuration '%s': %s", spec, why ? why : "rejected");
        else
            rc = 0;
    }
    free(b);
    return rc;
}

/* ---- the allocator ---- */

static void on_mh_error(void *ctx, const dmm_error *e)
{
    mh_backend *b = ctx;
    if (atomic_fetch_add(&b->mh_errors, 1) == 0)
        snprintf(b->last_mh_error, sizeof b->last_mh_error, "%s", e->message ? e->message : "multi-heap error");
}

/* Named a_malloc, ... as the other backends' entry points (dmmkit explore
 * counts instructions between functions of these names). */
static void *a_malloc(void *c, size_t n) { return dmm_mh_malloc(c, mh_home, n); }
static void a_free(void *c, void *p) { dmm_mh_free(c, mh_home, p); }
static void *a_realloc(void *c, void *p, size_t n) { return dmm_mh_realloc(c, mh_home, p, n); }
static void *a_calloc(void *c, size_t n, size_t s) { return dmm_mh_calloc(c, mh_home, n, s); }
static void *a_aligned(void *c, size_t al, size_t s) { return dmm_mh_aligned_alloc(c, mh_home, al, s); }
static size_t a_usable(void *c, const void *p) { return dmm_mh_usable_size(c, p); }

static void mhb_set_thread(rp_backend *rb, uint32_t thread)
{
    mh_home = thread % ((mh_backend *)rb)->mcfg.nodes;
}

static int mhb_init(rp_backend *rb, size_t size)
{
    mh_backend *b = (mh_backend *)rb;
    dmm_status st;
    if (size > b->hb.map_size)
        return DMM_E_RANGE;
    b->hb.arena_size = size;
    b->mh = NULL;
    st = dmm_mh_init(&b->mh, b->hb.arena, size, &b->mcfg);
    if (st != DMM_OK) {
        b->mh = NULL;
        return st;
    }
    b->hb.rb.a.name = "multiheap";
    b->hb.rb.a.ctx = b->mh;
    b->hb.rb.a.malloc = a_malloc;
    b->hb.rb.a.free = a_free;
    b->hb.rb.a.realloc = a_realloc;
    b->hb.rb.a.calloc = a_calloc;
    b->hb.rb.a.aligned_alloc = a_aligned;
    b->hb.rb.a.usable_size = a_usable;
    mh_home = 0;
    return DMM_OK;
}

static void mhb_fini(rp_backend *rb)
{
    mh_backend *b = (mh_backend *)rb;
    if (b->mh)
        dmm_mh_destroy(b->mh);
    b->mh = NULL;
}

/* O(nodes); takes each node's lock for its heap counters. */
static int mhb_sample(rp_backend *rb, rp_mem *m)
{
    mh_backend *b = (mh_backend *)rb;
    uint64_t ext = 0, regions = 0, used = 0;
    if (!b->mh)
        return -1;
    for (unsigned i = 0; i < b->mcfg.nodes; i++) {
        dmm_mh_node_stats s = dmm_mh_get_node_stats(b->mh, i);
        ext += s.heap.extent;
        regions += s.heap.footprint;
        used += s.heap.live_block_bytes;
    }
    m->footprint = ext;
    m->regions = regions;
    m->used = used;
    m->used_known = 1;
    m->meta_known = 0;
    m->rss = rp_rss_bytes();
    return 0;
}

static rp_backend *mhb_create(const char *spec, const rp_setup *s, char *err, size_t cap)
{
    dmm_heap_config hcfg;
    const char *why = NULL;
    mh_backend *b = calloc(1, sizeof *b);
    uint64_t min;
    if (!b) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    /* threads = 1: the multi-heap locks its node heaps itself */
    if (parse_spec(b, spec, &hcfg, err, cap) || dmmb_setup(&b->hb, "", &hcfg, 1, err, cap))
        goto fail;
    snprintf(b->spec, sizeof b->spec, "%s", spec);
    snprintf(b->hb.spec, sizeof b->hb.spec, "%s", spec);
    (void)dmm_heap_config_format(&b->hb.cfg, b->hb.cfgtext, sizeof b->hb.cfgtext);
    b->mcfg.heap = b->hb.cfg;
    b->mcfg.error_fn = on_mh_error;
    b->mcfg.error_ctx = b;
    atomic_init(&b->mh_errors, 0);
    if (dmm_mh_config_check(&b->mcfg, &why) != DMM_OK) {
        snprintf(err, cap, "multiheap: invalid configuration '%s': %s", spec, why ? why : "rejected");
        goto fail;
    }
    if (!(b->st = calloc(b->mcfg.nodes, sizeof *b->st))) {
        snprintf(err, cap, "out of memory");
        goto fail;
    }
    b->mh_ctrl = dmm_mh_buffer_size(&b->mcfg, 64) - (uint64_t)b->mcfg.nodes * 64u;
    /* the smallest arena init takes: every node range a minimal heap (the
     * central heap spans them all, so the same bound serves it) */
    min = dmm_mh_buffer_size(&b->mcfg, dmm_heap_min_buffer(&b->hb.cfg));
    if (!min) {
        snprintf(err, cap, "multiheap: %u node heaps do not fit in memory", b->mcfg.nodes);
        goto fail;
    }
    if (s->arena) {
        if (s->arena < min) {
            snprintf(err, cap, "--arena %" PRIu64 " is below the minimum %" PRIu64 " bytes for %u node heaps",
                     s->arena, min, b->mcfg.nodes);
            goto fail;
        }
        b->hb.want = s->arena;
    } else {
        /* the dmm: default per node share: 4 x peak live in every node
         * (a private node may have to hold a whole thread's peak), at least
         * 1 MiB in all, at most half the machine's memory */
        uint64_t a = rpb_default_arena(s->peak_live, 4 * (uint64_t)b->mcfg.nodes, min, &b->hb.arena_clamped);
        b->hb.want = (a + 4095u) & ~(uint64_t)4095u;
    }
    b->hb.rb.sample = mhb_sample;
    b->hb.rb.set_thread = mhb_set_thread;
    b->hb.rb.detected = "multiheap";
    b->hb.rb.mem.kind = "allocator";
    b->hb.rb.mem.exact = 1;
    b->hb.rb.mem.footprint_source =
        "sum over the node heaps of their extents (regions minus untouched top blocks, control blocks included)";
    b->hb.rb.mem.used_source = "sum over the node heaps of their used blocks (headers and tail words included)";
    b->hb.rb.mem.meta_source = NULL;
    b->hb.rb.mem.meta_in_footprint = 1;
    return &b->hb.rb;
fail:
    free(b->st);
    free(b);
    return NULL;
}

static int mhb_prepare(rp_backend *rb, char *err, size_t cap)
{
    mh_backend *b = (mh_backend *)rb;
    int st;
    if (dmmb_map(&b->hb, (size_t)b->hb.want, !b->hb.arena_clamped, err, cap))
        return -1;
    if ((st = mhb_init(rb, (size_t)b->hb.want)) != DMM_OK) {
        snprintf(err, cap, "cannot create %u node heaps on a %" PRIu64 "-byte arena: %s", b->mcfg.nodes, b->hb.want,
                 dmm_status_str((dmm_status)st));
        return -1;
    }
    mhb_fini(rb);
    return 0;
}

static int mhb_begin_pass(rp_backend *rb, int cold, char *err, size_t cap)
{
    /* no reset for a multi-heap: a warm pass starts on a fresh one too */
    (void)cold;
    mhb_fini(rb);
    if (mhb_init(rb, (size_t)((mh_backend *)rb)->hb.want) != DMM_OK) {
        snprintf(err, cap, "multi-heap init failed");
        return -1;
    }
    return 0;
}

static int mhb_check(rp_backend *rb, char *msg, size_t cap)
{
    mh_backend *b = (mh_backend *)rb;
    const char *detail = NULL;
    if (!b->mh || dmm_mh_check(b->mh, &detail) == DMM_OK)
        return 0;
    snprintf(msg, cap, "%s", detail ? detail : "corrupt");
    return -1;
}

static void mhb_after_first(rp_backend *rb)
{
    mh_backend *b = (mh_backend *)rb;
    if (!b->mh)
        return;
    for (unsigned i = 0; i < b->mcfg.nodes; i++)
        b->st[i] = dmm_mh_get_node_stats(b->mh, i);
    b->have_stats = 1;
}

static int mhb_peak_footprint(rp_backend *rb, uint64_t *v, const char **method)
{
    mh_backend *b = (mh_backend *)rb;
    uint64_t sum = 0;
    if (!b->have_stats)
        return 0;
    for (unsigned i = 0; i < b->mcfg.nodes; i++)
        sum += b->st[i].heap.peak_extent;
    *v = sum;
    *method = "exact (sum over the node heaps of their statistics peak_extent)";
    return 1;
}

static void mhb_json(rp_backend *rb, tj *j)
{
    mh_backend *b = (mh_backend *)rb;
    tj_str(j, "kind", "multiheap");
    tj_str(j, "name", b->spec);
    tj_str(j, "config", b->hb.cfgtext); /* every node heap's */
    tj_str(j, "detected", "multiheap");
    tj_str(j, "stats", rpb_stats_name(b->hb.cfg.stats));
    tj_bool(j, "stats_forced", b->hb.stats_forced);
    tj_bool(j, "lock_forced", 0);
    tj_str(j, "variant", "");
    tj_u64(j, "arena", b->hb.want);
    tj_bool(j, "arena_clamped", b->hb.arena_clamped);
    tj_u64(j, "heap_errors", atomic_load(&b->mh_errors));
    tj_obj(j, "multiheap");
    tj_u64(j, "nodes", b->mcfg.nodes);
    tj_str(j, "policy", dmm_mh_policy_name(b->mcfg.policy));
    tj_str(j, "remote_free", b->mcfg.remote_free == DMM_MH_FREE_QUEUE ? "queue" : "locked");
    tj_u64(j, "home_cache", b->mcfg.policy == DMM_MH_CENTRAL ? 0 : b->mcfg.home_cache);
    tj_bool(j, "final_blocking_pass", b->mcfg.final_blocking_pass);
    tj_str(j, "homes", "trace thread t allocates as node t % nodes; frees at the end of a pass as node 0");
    tj_str(j, "last_error", b->last_mh_error[0] ? b->last_mh_error : NULL);
    tj_obj_end(j);
}

static void mhb_memory_json(rp_backend *rb, tj *j)
{
    mh_backend *b = (mh_backend *)rb;
    uint64_t regions = 0, blocks = 0;
    tj_u64(j, "arena", b->hb.want);
    tj_u64(j, "mh_control_bytes", b->mh_ctrl);
    for (unsigned i = 0; b->have_stats && i < b->mcfg.nodes; i++) {
        regions += b->st[i].heap.peak_footprint;
        blocks += b->st[i].heap.peak_block_bytes;
    }
    tj_u64(j, "regions_peak", regions);
    tj_u64(j, "peak_block_bytes", blocks);
    tj_arr(j, "nodes");
    for (unsigned i = 0; b->have_stats && i < b->mcfg.nodes; i++) {
        const dmm_mh_node_stats *s = &b->st[i];
        tj_obj(j, NULL);
        tj_u64(j, "node", i);
        tj_u64(j, "local_allocs", s->local_allocs);
        tj_u64(j, "remote_allocs", s->remote_allocs);
        tj_u64(j, "served_remote", s->served_remote);
        tj_u64(j, "skipped_busy", s->skipped_busy);
        tj_u64(j, "remote_frees", s->remote_frees);
        tj_u64(j, "queued_frees", s->queued_frees);
        tj_u64(j, "failures", s->failures);
        tj_u64(j, "offline_frees", s->offline_frees);
        tj_u64(j, "cache_hits", s->cache_hits);
        tj_u64(j, "peak_extent", s->heap.peak_extent);
        tj_u64(j, "live_block_bytes", s->heap.live_block_bytes);
        tj_obj_end(j);
    }
    tj_arr_end(j);
}

static void mhb_text(rp_backend *rb, FILE *f)
{
    mh_backend *b = (mh_backend *)rb;
    uint64_t loc = 0, rem = 0, busy = 0, rfree = 0, fail = 0;
    fprintf(f, "allocator  multiheap:%s\n           %u nodes, %s, remote frees %s, home cache %u%s; node heap %s%s\n",
            b->spec, b->mcfg.nodes, dmm_mh_policy_name(b->mcfg.policy),
            b->mcfg.remote_free == DMM_MH_FREE_QUEUE ? "queued" : "locked",
            b->mcfg.policy == DMM_MH_CENTRAL ? 0u : b->mcfg.home_cache,
            b->mcfg.final_blocking_pass ? ", final blocking pass" : "", b->hb.cfgtext,
            b->hb.stats_forced ? "  [stats raised to counters]" : "");
    if (!b->have_stats)
        return;
    for (unsigned i = 0; i < b->mcfg.nodes; i++) {
        loc += b->st[i].local_allocs;
        rem += b->st[i].served_remote;
        busy += b->st[i].skipped_busy;
        rfree += b->st[i].remote_frees;
        fail += b->st[i].failures;
    }
    fprintf(f, "           first pass: %" PRIu64 " local, %" PRIu64 " remote allocations, %" PRIu64
               " busy heaps skipped, %" PRIu64 " remote frees, %" PRIu64 " failed\n", loc, rem, busy, rfree, fail);
}

static void mhb_destroy(rp_backend *rb)
{
    mh_backend *b = (mh_backend *)rb;
    mhb_fini(rb);
    dmmb_unmap(&b->hb);
    free(b->st);
    free(b);
}

static int mhb_min_arena(rp_backend *rb, rp_plan *p, int verify, rp_min_result *mr)
{
    mh_backend *b = (mh_backend *)rb;
    rpb_arena_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.rb = rb;
    ops.map = &b->hb;
    ops.init = mhb_init;
    ops.fini = mhb_fini;
    ops.base = 0;
    ops.heap_min = dmm_mh_buffer_size(&b->mcfg, dmm_heap_min_buffer(&b->hb.cfg));
    /* the node heaps' control blocks step at powers of two of the node
     * share, not of the arena: plain bisection */
    ops.pow2_steps = 0;
    ops.want = b->hb.want;
    return rpb_min_arena(&ops, p, verify, mr);
}

const rp_backend_class rp_multiheap_class = {
    .prefix = "multiheap:",
    .usage = "  --alloc multiheap:SPEC  per-node dmm heaps on one range (dmm_mh), trace thread t on node t % N:\n"
             "                      SPEC = N[;policy=lazy|central|private|priority][;free=locked|queue]\n"
             "                      [;final=on][;heap=CONFIG]; e.g. multiheap:4;policy=lazy;free=queue;heap=tlsf\n",
    .caps = RPB_ARENA | RPB_MIN_ARENA | RPB_FRESH,
    .create = mhb_create,
    .prepare = mhb_prepare,
    .begin_pass = mhb_begin_pass,
    .check = mhb_check,
    .after_first = mhb_after_first,
    .peak_footprint = mhb_peak_footprint,
    .json = mhb_json,
    .memory_json = mhb_memory_json,
    .text = mhb_text,
    .destroy = mhb_destroy,
    .min_arena = mhb_min_arena,
};

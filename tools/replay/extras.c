/*
 * tools/replay/extras.c - see extras.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "extras.h"

#include "../common/schemas.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================
 * --check-configs
 * ====================================================================== */

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
        *--e = '\0';
    return s;
}

int rpx_check_configs(const char *prog, const char *file)
{
    FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
    char *line = NULL;
    size_t cap = 0;
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", prog, file, strerror(errno));
        return 2;
    }
    while (getline(&line, &cap, f) >= 0) {
        char *spec = trim(line);
        dmm_heap_config cfg;
        char err[512], text[1024];
        const char *why = NULL;
        if (!strncmp(spec, "pool:", 5)) {
            /* pools in front of a heap: the spec is checked, not sized */
            if (rp_pool_check_spec(spec + 5, err, sizeof err))
                printf("error %s\n", err);
            else
                printf("ok %s\n", spec);
            continue;
        }
        if (!strncmp(spec, "multiheap:", 10)) {
            if (rp_multiheap_check_spec(spec + 10, err, sizeof err))
                printf("error %s\n", err);
            else
                printf("ok %s\n", spec);
            continue;
        }
        if (!strncmp(spec, "dmm:", 4))
            spec += 4;
        if (dmmb_parse(spec, &cfg, err, sizeof err)) {
            printf("error %s\n", err);
            continue;
        }
        if (dmm_heap_config_check(&cfg, &why) != DMM_OK) {
            printf("error %s\n", why ? why : "configuration refused");
            continue;
        }
        (void)dmm_heap_config_format(&cfg, text, sizeof text);
        printf("ok %s\n", text);
    }
    free(line);
    if (f != stdin)
        fclose(f);
    fflush(stdout);
    return 0;
}

/* ======================================================================
 * --count-sweep
 * ====================================================================== */

__attribute__((noinline)) void rpx_sweep_mark(unsigned long idx) { __asm__ __volatile__("" : : "r"(idx) : "memory"); }

/* One --count-sweep line for pool:SPEC, through the backend's hooks (a
 * fresh front on a prefaulted arena, as for a dmm heap). */
static void count_pool(rp_plan *plan, const char *spec, unsigned long long arena, unsigned long idx)
{
    rp_setup s;
    rp_backend *b;
    rp_pass_opts po;
    rp_pass_result r;
    char err[600];
    memset(&s, 0, sizeof s);
    s.threads = 1;
    s.arena = arena;
    s.peak_live = plan->peak_live;
    s.plan = plan;
    if (!(b = rp_pool_class.create(spec, &s, err, sizeof err))) {
        printf("error %lu %s\n", idx, err);
        rpx_sweep_mark(idx);
        return;
    }
    b->cls = &rp_pool_class;
    if (rp_pool_class.prepare(b, err, sizeof err) || rp_pool_class.begin_pass(b, 1, err, sizeof err)) {
        printf("error %lu %s\n", idx, err);
    } else {
        memset(&po, 0, sizeof po);
        po.sequential = 1;
        if (rp_run_pass(plan, b, &po, &r))
            printf("error %lu replay engine failure\n", idx);
        else
            printf("ok %lu %llu\n", idx, (unsigned long long)r.failed);
        rp_pass_result_free(&r);
    }
    rp_pool_class.destroy(b);
    fflush(stdout);
    rpx_sweep_mark(idx);
}

int rpx_count_sweep(const char *prog, rp_plan *plan, const char *file)
{
    FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
    char *line = NULL;
    size_t cap = 0;
    unsigned long idx = 0;
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", prog, file, strerror(errno));
        return 2;
    }
    if (plan->threads > 1 && rp_plan_flatten(plan)) {
        fprintf(stderr, "%s: out of memory\n", prog);
        if (f != stdin)
            fclose(f);
        return 1;
    }
    while (getline(&line, &cap, f) >= 0) {
        char *s = trim(line), *spec, err[512];
        unsigned long long arena;
        dmm_heap_config cfg;
        dmm_backend b;
        rp_pass_opts po;
        rp_pass_result r;
        int st;
        idx++;
        arena = strtoull(s, &spec, 10);
        spec = trim(spec);
        if (!strncmp(spec, "dmm:", 4))
            spec += 4;
        if (arena == 0 || !*spec) {
            printf("error %lu expected 'ARENA CONFIG'\n", idx);
            rpx_sweep_mark(idx);
            continue;
        }
        if (!strncmp(spec, "pool:", 5)) {
            count_pool(plan, spec + 5, arena, idx);
            continue;
        }
        if (dmmb_parse(spec, &cfg, err, sizeof err) || dmmb_setup(&b, spec, &cfg, 1, err, sizeof err)) {
            printf("error %lu %s\n", idx, err);
            rpx_sweep_mark(idx);
            continue;
        }
        if (dmmb_map(&b, (size_t)arena, 1, err, sizeof err)) {
            printf("error %lu %s\n", idx, err);
            rpx_sweep_mark(idx);
            continue;
        }
        if ((st = dmmb_init(&b, (size_t)arena)) != DMM_OK) {
            printf("error %lu cannot create the heap on a %llu-byte arena: %s\n", idx, arena,
                   dmm_status_str((dmm_status)st));
            dmmb_unmap(&b);
            rpx_sweep_mark(idx);
            continue;
        }
        memset(&po, 0, sizeof po);
        po.sequential = 1;
        if (rp_run_pass(plan, &b.rb, &po, &r)) {
            printf("error %lu replay engine failure\n", idx);
        } else {
            printf("ok %lu %llu\n", idx, (unsigned long long)r.failed);
        }
        rp_pass_result_free(&r);
        dmmb_unmap(&b);
        fflush(stdout);
        rpx_sweep_mark(idx);
    }
    free(line);
    if (f != stdin)
        fclose(f);
    return 0;
}

/* ======================================================================
 * heap map
 * ====================================================================== */

static int hm_walk(void *ctx, const dmm_heap_block_info *bi)
{
    rpx_heapmap *hm = ctx;
    uint64_t addr = (uint64_t)(uintptr_t)bi->block;
    if (bi->region >= hm->nregions) {
        size_t nr = (size_t)bi->region + 1u;
        uint64_t *r = realloc(hm->region_base, nr * sizeof *r);
        if (!r)
            return 1;
        for (size_t k = hm->nregions; k < nr; k++)
            r[k] = addr;
        hm->region_base = r;
        hm->nregions = nr;
    }
    if (hm->n == hm->cap) {
        size_t nc = hm->cap ? hm->cap * 2u : 1024u;
        rpx_block *b = realloc(hm->b, nc * sizeof *b);
        if (!b)
            return 1;
        hm->b = b;
        hm->cap = nc;
    }
    hm->b[hm->n].offset = addr - hm->region_base[bi->region];
    hm->b[hm->n].size = bi->block_size;
    hm->b[hm->n].requested = bi->requested;
    hm->b[hm->n].region = bi->region;
    hm->b[hm->n].state = (uint8_t)bi->state;
    hm->n++;
    return 0;
}

/* The measured allocator is the dmm heap here, so malloc is free to use. */
void rpx_heapmap_at_peak(void *ctx, uint64_t live)
{
    rpx_heapmap *hm = ctx;
    if (hm->taken || !hm->db || !hm->db->h)
        return;
    hm->taken = 1;
    hm->live = live;
    hm->n = 0;
    if (dmm_heap_walk(hm->db->h, hm_walk, hm) != 0)
        hm->failed = 1;
    hm->stats = dmm_heap_get_counters(hm->db->h);
}

/* ---- --heapmap-at worst-frag --------------------------------------------
 * The moment of worst fragmentation: among the operations after which live
 * requested bytes are at least half the trace's peak, the first one after
 * which the heap's extent (footprint minus the never-carved top) holds the
 * most bytes that are not in used blocks (free and quick-list blocks, block
 * headers of free space, metadata).  A sequential replay is deterministic,
 * so the second replay reaches the very same heap state. */

typedef struct worst_scan {
    dmm_backend *db;
    rpx_heapmap *hm;
    uint64_t peak_live;
    uint64_t best_op, best_free;
    int found;
} worst_scan;

static uint64_t free_in_extent(dmm_heap *h)
{
    dmm_heap_stats st = dmm_heap_get_counters(h);
    return st.extent > st.live_block_bytes ? (uint64_t)(st.extent - st.live_block_bytes) : 0;
}

static void worst_find(void *ctx, uint64_t op, uint64_t live)
{
    worst_scan *ws = ctx;
    uint64_t fr;
    if (live < ws->peak_live - ws->peak_live / 2 || !ws->db->h)
        return;
    fr = free_in_extent(ws->db->h);
    if (!ws->found || fr > ws->best_free) {
        ws->found = 1;
        ws->best_free = fr;
        ws->best_op = op;
    }
}

static void worst_take(void *ctx, uint64_t op, uint64_t live)
{
    worst_scan *ws = ctx;
    rpx_heapmap *hm = ws->hm;
    if (op != ws->best_op || hm->taken || !ws->db->h)
        return;
    hm->taken = 1;
    hm->live = live;
    hm->n = 0;
    hm->op = op;
    hm->free_in_extent = free_in_extent(ws->db->h);
    if (dmm_heap_walk(ws->db->h, hm_walk, hm) != 0)
        hm->failed = 1;
    hm->stats = dmm_heap_get_counters(ws->db->h);
}

void rpx_heapmap_worst(rp_plan *plan, rp_backend *b, rpx_heapmap *hm)
{
    worst_scan ws;
    rp_pass_opts po;
    rp_pass_result pr;
    char err[600];
    memset(&ws, 0, sizeof ws);
    ws.db = (dmm_backend *)b;
    ws.hm = hm;
    ws.peak_live = plan->peak_live;
    hm->db = ws.db;
    hm->worst = 1;
    hm->sequential = 1;
    hm->taken = 0;
    if (rp_plan_flatten(plan))
        return;
    for (int step = 0; step < 2; step++) {
        if (step == 1 && !ws.found)
            return;
        if (b->cls->begin_pass(b, 1, err, sizeof err))
            return;
        memset(&po, 0, sizeof po);
        po.sequential = 1;
        po.on_op = step ? worst_take : worst_find;
        po.op_ctx = &ws;
        int rc = rp_run_pass(plan, b, &po, &pr);
        rp_pass_result_free(&pr);
        if (rc)
            return;
    }
}

static const char *state_name(unsigned s)
{
    switch (s) {
    case DMM_BLOCK_USED: return "used";
    case DMM_BLOCK_FREE: return "free";
    case DMM_BLOCK_QUICK: return "quick";
    case DMM_BLOCK_TOP: return "top";
    }
    return "unknown";
}


int rpx_heapmap_write(FILE *f, const rpx_heapmap *hm, const char *trace, uint64_t hash, const char *spec,
                      const char *cfgtext, uint64_t arena, uint64_t trace_peak_live, uint64_t peak_index)
{
    tj j;
    char hx[32];
    uint64_t bytes[4] = {0, 0, 0, 0}, counts[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < hm->n; i++)
        if (hm->b[i].state < 4) {
            bytes[hm->b[i].state] += hm->b[i].size;
            counts[hm->b[i].state]++;
        }
    tj_init(&j, f);
    tj_obj(&j, NULL);
    tj_str(&j, "schema", DMM_SCHEMA_HEAPMAP);
    tj_str(&j, "trace", trace);
    snprintf(hx, sizeof hx, "%016" PRIx64, hash);
    tj_str(&j, "trace_hash", hx);
    tj_str(&j, "allocator", spec);
    tj_str(&j, "config", cfgtext);
    tj_u64(&j, "arena", arena);
    tj_bool(&j, "taken", hm->taken && !hm->failed);
    tj_str(&j, "moment", hm->worst ? "worst_fragmentation" : "peak_live");
    if (hm->worst) {
        tj_str(&j, "when", "worst fragmentation: the first operation, among those after which live bytes are at "
                           "least half the trace's peak, after which the heap's extent holds the most bytes not "
                           "in used blocks (an extra sequential replay in trace order)");
        tj_u64(&j, "op", hm->op);
        tj_u64(&j, "free_in_extent", hm->free_in_extent);
    } else {
        tj_str(&j, "when", hm->sequential ? "the first time live bytes reached the trace's peak, in an extra "
                                            "sequential replay in trace order (the threaded pass never reached it)"
                                          : "the first time live bytes reached the trace's peak, in the first cold "
                                            "pass");
    }
    tj_u64(&j, "trace_peak_live", trace_peak_live);
    tj_u64(&j, "trace_peak_index", peak_index);
    tj_u64(&j, "live", hm->live);
    tj_u64(&j, "extent", hm->stats.extent);
    tj_u64(&j, "footprint", hm->stats.footprint);
    tj_u64(&j, "top_bytes", hm->stats.top_bytes);
    tj_u64(&j, "live_block_bytes", hm->stats.live_block_bytes);
    tj_obj(&j, "totals");
    for (unsigned s = 0; s < 4; s++) {
        tj_obj(&j, state_name(s));
        j.compact[j.depth] = 1;
        tj_u64(&j, "blocks", counts[s]);
        tj_u64(&j, "bytes", bytes[s]);
        tj_obj_end(&j);
    }
    tj_obj_end(&j);
    tj_arr_compact(&j, "regions");
    for (size_t r = 0; r < hm->nregions; r++)
        tj_u64(&j, NULL, r);
    tj_arr_end(&j);
    tj_arr_compact(&j, "columns");
    tj_str(&j, NULL, "region");
    tj_str(&j, NULL, "offset");
    tj_str(&j, NULL, "size");
    tj_str(&j, NULL, "state");
    tj_str(&j, NULL, "requested");
    tj_arr_end(&j);
    tj_arr(&j, "blocks");
    for (size_t i = 0; i < hm->n; i++) {
        tj_arr_compact(&j, NULL);
        tj_u64(&j, NULL, hm->b[i].region);
        tj_u64(&j, NULL, hm->b[i].offset);
        tj_u64(&j, NULL, hm->b[i].size);
        tj_str(&j, NULL, state_name(hm->b[i].state));
        tj_u64(&j, NULL, hm->b[i].requested);
        tj_arr_end(&j);
    }
    tj_arr_end(&j);
    tj_obj_end(&j);
    return tj_finish(&j);
}

void rpx_heapmap_free(rpx_heapmap *hm)
{
    free(hm->b);
    free(hm->region_base);
    hm->b = NULL;
    hm->region_base = NULL;
    hm->n = hm->cap = hm->nregions = 0;
}

/* ======================================================================
 * timeline
 * ====================================================================== */

int rpx_timeline_init(rp_timeline *tl, uint64_t ops)
{
    memset(tl, 0, sizeof *tl);
    tl->every = ops > 1000 ? (ops + 999) / 1000 : 1;
    tl->cap = (size_t)(ops / tl->every + 2);
    tl->pt = rp_big_alloc(tl->cap * sizeof *tl->pt);
    return tl->pt ? 0 : -1;
}

int rpx_timeline_write(FILE *f, const rp_timeline *tl, const char *trace, uint64_t hash,
                       const char *allocator, const char *footprint_source, uint64_t ops, uint64_t trace_peak_live)
{
    tj j;
    char hx[32];
    tj_init(&j, f);
    tj_obj(&j, NULL);
    tj_str(&j, "schema", DMM_SCHEMA_TIMELINE);
    tj_str(&j, "trace", trace);
    snprintf(hx, sizeof hx, "%016" PRIx64, hash);
    tj_str(&j, "trace_hash", hx);
    tj_str(&j, "allocator", allocator);
    tj_str(&j, "footprint_source", footprint_source);
    tj_str(&j, "pass", "first cold pass");
    tj_u64(&j, "ops", ops);
    tj_u64(&j, "every", tl->every);
    tj_u64(&j, "trace_peak_live", trace_peak_live);
    tj_arr_compact(&j, "columns");
    tj_str(&j, NULL, "op");
    tj_str(&j, NULL, "live");
    tj_str(&j, NULL, "footprint");
    tj_str(&j, NULL, "used");
    tj_arr_end(&j);
    tj_arr(&j, "points");
    for (size_t i = 0; i < tl->n; i++) {
        const rp_tl_point *p = &tl->pt[i];
        tj_arr_compact(&j, NULL);
        tj_u64(&j, NULL, p->op);
        tj_u64(&j, NULL, p->live);
        tj_u64(&j, NULL, p->footprint);
        if (p->used_known)
            tj_u64(&j, NULL, p->used);
        else
            tj_null(&j, NULL);
        tj_arr_end(&j);
    }
    tj_arr_end(&j);
    tj_obj_end(&j);
    return tj_finish(&j);
}

void rpx_timeline_free(rp_timeline *tl)
{
    rp_big_free(tl->pt);
    memset(tl, 0, sizeof *tl);
}

/* ======================================================================
 * histograms
 * ====================================================================== */

static void json_one_hist(tj *j, const char *key, const rp_hist *h)
{
    tj_arr(j, key);
    for (unsigned i = 0; h->b && i < RP_HIST_BUCKETS; i++) {
        uint64_t lo, w;
        if (!h->b[i])
            continue;
        rp_hist_bucket_range(i, &lo, &w);
        tj_arr_compact(j, NULL);
        tj_u64(j, NULL, lo);
        tj_u64(j, NULL, w);
        tj_u64(j, NULL, h->b[i]);
        tj_arr_end(j);
    }
    tj_arr_end(j);
}

void rpx_json_hists(tj *j, const char *key, const rp_hist h[RK_COUNT])
{
    rp_hist all;
    memset(&all, 0, sizeof all);
    tj_obj(j, key);
    for (unsigned k = 0; k < RK_COUNT; k++) {
        if (!h[k].count)
            continue;
        json_one_hist(j, rp_kind_names[k], &h[k]);
        (void)rp_hist_merge(&all, &h[k]);
    }
    if (all.count)
        json_one_hist(j, "all", &all);
    rp_hist_free(&all);
    tj_obj_end(j);
}

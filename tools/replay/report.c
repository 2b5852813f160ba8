/*
 * tools/replay/report.c - what dmm-replay prints and writes: the console
 * summary and the dmm-replay JSON document (DMM_SCHEMA_REPLAY,
 * docs/replay.md), plus the --timeline and --heapmap files.  Every file is
 * written through tc_out, so it appears complete or not at all.
 *
 * Memory figures mean one thing for every allocator: footprint is the
 * allocator's own count of the memory it holds.  A backend that cannot
 * count it (rp_mem_info.exact == 0) gets its growth figure under its own
 * name and no fragmentation ratios.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../common/schemas.h"
#include "../common/tcommon.h"
#include "rp_clock.h"
#include "run.h"

/* a / b; NaN (JSON null) when either is 0: a zero footprint means the
 * allocator never reported growth, not a ratio of 0. */
static double ratio(uint64_t a, uint64_t b) { return a && b ? (double)a / (double)b : 0.0 / 0.0; }

/* A ratio for the console: "-" when it has no value (no live bytes). */
static const char *fmt_ratio(double x, char *buf, size_t cap)
{
    if (x != x)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.3f", x);
    return buf;
}

/* The memory figures, worked out once for the console and the JSON. */
typedef struct figures {
    rp_mem at, pk;
    uint64_t live_peak, peak_fp;
    const char *peak_method;
    int exact;
    int sampled_mt; /* an own count, but its peak sampled across threads: not exact */
    double f3, f4;
    int64_t internal, external;
    int have_int, have_ext;
    uint64_t rss_growth; /* peak RSS over the pass minus RSS before it */
    uint64_t maxrss;
} figures;

static void work_out(const rp_run *r, figures *g)
{
    const rp_backend *b = r->b;
    struct rusage ru;
    uint64_t v;
    const char *m;
    memset(g, 0, sizeof *g);
    g->at = r->first.at_peak;
    g->pk = r->first.peak;
    g->live_peak = r->first.run_peak_live ? r->first.run_peak_live : r->plan.peak_live;
    g->peak_fp = g->pk.footprint;
    g->peak_method = "sampled (maximum over the samples taken at new live peaks)";
    g->exact = b->mem.exact;
    if (b->cls->peak_footprint && b->cls->peak_footprint((rp_backend *)b, &v, &m)) {
        g->peak_fp = v;
        g->peak_method = m;
    } else if (g->exact && r->plan.threads > 1) {
        /* The allocator's own count, but its peak is the largest sample,
         * and with several threads the samples miss the peak-live moment
         * (a "#4" below 1 was seen): the figure is not exact. */
        g->exact = 0;
        g->sampled_mt = 1;
        g->peak_method = "sampled during a multi-threaded replay (maximum over the samples taken at new live "
                         "peaks; they may miss the peak): not exact";
    }
    g->f3 = g->exact ? ratio(g->at.footprint, g->at.live) : 0.0 / 0.0;
    g->f4 = g->exact ? ratio(g->peak_fp, g->live_peak) : 0.0 / 0.0;
    if (g->exact && g->at.valid && g->at.used_known) {
        g->internal = (int64_t)g->at.used - (int64_t)g->at.live;
        g->have_int = 1;
        g->external = (int64_t)g->at.footprint - (int64_t)g->at.used -
                      (int64_t)(g->at.meta_known && b->mem.meta_in_footprint ? g->at.meta : 0);
        g->have_ext = 1;
    }
    g->rss_growth = r->hwm_after > r->rss_before ? r->hwm_after - r->rss_before : 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        g->maxrss = (uint64_t)ru.ru_maxrss * 1024u;
}

/* ---- console ---- */

static void print_pass(FILE *f, const char *name, const pass_set *ps)
{
    pass_sum m;
    unsigned rep;
    if (!ps->n)
        return;
    rp_median_of(ps, &m, &rep);
    for (unsigned k = 0; k < NK; k++) {
        if (!m.k[k].count)
            continue;
        fprintf(f, "  %-5s %-8s %10" PRIu64 " %10.1f %8" PRIu64 " %8" PRIu64 " %10" PRIu64 "\n", name,
                rp_kind_labels[k], m.k[k].count, m.k[k].avg, m.k[k].p50, m.k[k].p99, m.k[k].max);
    }
}

static void report_text(const rp_run *r, const figures *gp, FILE *f)
{
    const rp_options *o = r->o;
    const rp_plan *p = &r->plan;
    const rp_min_result *mr = &r->mr;
    const figures g = *gp;
    char b3[32], b4[32];
    fprintf(f, "trace      %s  (hash %016" PRIx64 ", %" PRIu64 " ops + %" PRIu64 " syncs, %u thread%s%s)\n", o->trace,
            r->hash, p->ops, p->syncs, p->threads, p->threads == 1 ? "" : "s",
            p->syncs_derived ? ", syncs derived" : "");
    fprintf(f, "           peak live %" PRIu64 " B in %" PRIu64 " objects\n", p->peak_live, p->peak_objects);
    if (p->impossible)
        fprintf(f, "           %" PRIu64 " request%s no allocator can grant (counted as failed)\n", p->impossible,
                p->impossible == 1 ? "" : "s");
    r->b->cls->text(r->b, f);
    if (o->min_arena) {
        if (mr->found)
            fprintf(f, "min arena  %" PRIu64 " B  (%" PRIu64 " B fails; %" PRIu64 " replays; search range %" PRIu64
                       "..%" PRIu64 ")\n",
                    mr->bytes, mr->bytes - mr->gran, mr->replays, mr->lower, mr->upper);
        else
            fprintf(f, "min arena  not found: %s\n", mr->why);
        return;
    }
    if (o->timing) {
        fprintf(f, "\ntiming (%s, empty bracket %" PRIu64 " subtracted, %.3f GHz; median of %u rep%s)\n",
                RP_CLOCK_UNIT, r->bracket, r->tps / 1e9, o->reps, o->reps == 1 ? "" : "s");
        fprintf(f, "  %-5s %-8s %10s %10s %8s %8s %10s\n", "pass", "kind", "count", "avg", "p50", "p99", "max");
        print_pass(f, "cold", &r->cold);
        print_pass(f, "warm", &r->warm);
    }
    {
        pass_sum m;
        unsigned rep;
        rp_median_of(&r->cold, &m, &rep);
        fprintf(f, "wall       cold %.3f ms (%" PRIu64 " preemptions)", (double)m.wall_ns / 1e6, m.nivcsw);
        if (r->warm.n) {
            rp_median_of(&r->warm, &m, &rep);
            fprintf(f, ", warm %.3f ms (%" PRIu64 ")", (double)m.wall_ns / 1e6, m.nivcsw);
        }
        fputc('\n', f);
    }
    fprintf(f, "\nmemory     footprint = %s\n", r->b->mem.footprint_source);
    fprintf(f, "  peak live requested  %12" PRIu64 " B\n", g.live_peak);
    if (g.exact) {
        fprintf(f, "  peak footprint       %12" PRIu64 " B  (%s)\n", g.peak_fp, g.peak_method);
        if (g.at.valid)
            fprintf(f, "  at peak live         %12" PRIu64 " B footprint for %" PRIu64 " B live\n", g.at.footprint,
                    g.at.live);
        if (g.have_int)
            fprintf(f, "  internal waste       %12" PRId64 " B  (used blocks - requested, at peak)\n", g.internal);
        if (g.have_ext)
            fprintf(f, "  external waste       %12" PRId64 " B  (footprint - used%s, at peak)\n", g.external,
                    r->b->mem.meta_in_footprint ? " - metadata" : "");
        if (g.at.meta_known)
            fprintf(f, "  metadata             %12" PRIu64 " B\n", g.at.meta);
    } else {
        if (g.sampled_mt)
            fprintf(f, "  peak footprint       %12" PRIu64 " B  (%s)\n", g.peak_fp, g.peak_method);
        else
            fprintf(f, "  %-20s %12" PRIu64 " B  (not exact: not the allocator's own count)\n",
                    !strcmp(r->b->mem.kind, "commit_growth") ? "commit growth" : "RSS growth", g.peak_fp);
    }
    fprintf(f, "  peak RSS (pass)      %12" PRIu64 " B%s\n", r->hwm_after,
            r->hwm_reset ? "" : "  (VmHWM could not be reset: process peak)");
    if (g.exact)
        fprintf(f, "fragmentation  #3 %s   #4 %s\n", fmt_ratio(g.f3, b3, sizeof b3), fmt_ratio(g.f4, b4, sizeof b4));
    else if (g.sampled_mt)
        fprintf(f, "fragmentation  not measured (the peak footprint is sampled across threads, not exact)\n");
    else
        fprintf(f, "fragmentation  not measured (the allocator does not count its memory)\n");
    fprintf(f, "failed     %" PRIu64 " allocation%s, %" PRIu64 " skipped op%s\n", r->first.failed,
            r->first.failed == 1 ? "" : "s", r->first.skipped, r->first.skipped == 1 ? "" : "s");
    fprintf(f, "verify     %s\n", !o->verify ? "off" : r->verify_failed ? "FAIL" : "pass");
}

/* ---- JSON ---- */

static void json_ksum(tj *j, const char *key, const ksum *k)
{
    tj_obj(j, key);
    j->compact[j->depth] = 1;
    tj_u64(j, "count", k->count);
    if (k->count) {
        tj_dbl(j, "avg", k->avg);
        tj_u64(j, "p50", k->p50);
        tj_u64(j, "p99", k->p99);
        tj_u64(j, "max", k->max);
        tj_u64(j, "min", k->min);
    } else {
        tj_null(j, "avg");
        tj_null(j, "p50");
        tj_null(j, "p99");
        tj_null(j, "max");
        tj_null(j, "min");
    }
    tj_obj_end(j);
}

static void json_pass(tj *j, const char *key, const pass_set *ps, int timing)
{
    pass_sum m;
    unsigned rep = 0;
    if (!ps->n) {
        tj_null(j, key);
        return;
    }
    rp_median_of(ps, &m, &rep);
    tj_obj(j, key);
    tj_u64(j, "reps", ps->n);
    tj_u64(j, "wall_ns", m.wall_ns);
    tj_arr_compact(j, "wall_ns_reps");
    for (unsigned i = 0; i < ps->n; i++)
        tj_u64(j, NULL, ps->s[i].wall_ns);
    tj_arr_end(j);
    tj_u64(j, "failed", m.failed);
    tj_u64(j, "skipped", m.skipped);
    tj_u64(j, "involuntary_ctx_switches", m.nivcsw);
    tj_u64(j, "voluntary_ctx_switches", m.nvcsw);
    if (timing) {
        tj_obj(j, "kinds");
        for (unsigned k = 0; k < NK; k++)
            json_ksum(j, rp_kind_labels[k], &m.k[k]);
        tj_obj_end(j);
        tj_u64(j, "threads_rep", rep);
        tj_arr(j, "threads");
        for (uint32_t t = 0; t < m.nthr; t++) {
            tj_obj(j, NULL);
            tj_u64(j, "thread", t);
            tj_obj(j, "kinds");
            for (unsigned k = 0; k < NK; k++)
                json_ksum(j, rp_kind_labels[k], &m.thr[t * NK + k]);
            tj_obj_end(j);
            tj_obj_end(j);
        }
        tj_arr_end(j);
    }
    tj_obj_end(j);
}

static void json_mem(tj *j, const char *key, const rp_mem *m)
{
    tj_obj(j, key);
    if (m->valid) {
        tj_u64(j, "live", m->live);
        tj_u64(j, "footprint", m->footprint);
        if (m->used_known)
            tj_u64(j, "used", m->used);
        else
            tj_null(j, "used");
        if (m->meta_known)
            tj_u64(j, "meta", m->meta);
        else
            tj_null(j, "meta");
        tj_u64(j, "rss", m->rss);
        if (m->regions)
            tj_u64(j, "regions", m->regions);
    }
    tj_obj_end(j);
}

static void json_trace(tj *j, const rp_run *r)
{
    const rp_plan *p = &r->plan;
    char hx[32];
    tj_obj(j, "trace");
    tj_str(j, "path", r->o->trace);
    snprintf(hx, sizeof hx, "%016" PRIx64, r->hash);
    tj_str(j, "hash", hx);
    tj_u64(j, "ops", p->ops);
    tj_u64(j, "syncs", p->syncs);
    tj_bool(j, "syncs_derived", p->syncs_derived);
    tj_u64(j, "threads", p->threads);
    tj_u64(j, "objects", p->nslots);
    tj_u64(j, "peak_live", p->peak_live);
    tj_u64(j, "peak_objects", p->peak_objects);
    tj_u64(j, "peak_index", p->peak_index);
    tj_u64(j, "ops_in_file", r->file_ops);
    tj_u64(j, "entries_in_file", r->file_entries);
    if (r->o->ops_limit)
        tj_u64(j, "ops_limit", r->o->ops_limit);
    else
        tj_null(j, "ops_limit");
    tj_bool(j, "prefix", r->o->ops_limit && r->o->ops_limit < r->file_entries);
    tj_u64(j, "impossible_requests", p->impossible);
    tj_obj(j, "op_counts");
    for (unsigned k = DMM_T_MALLOC; k <= DMM_T_SYNC; k++)
        tj_u64(j, tc_kind_name(k), p->kind_count[k]);
    tj_obj_end(j);
    tj_obj_end(j);
}

static void json_min_arena(tj *j, const rp_min_result *mr)
{
    tj_obj(j, "min_arena");
    tj_bool(j, "found", mr->found);
    if (mr->found)
        tj_u64(j, "bytes", mr->bytes);
    else
        tj_null(j, "bytes");
    tj_u64(j, "granule", mr->gran);
    tj_u64(j, "replays", mr->replays);
    tj_u64(j, "lower_bound", mr->lower);
    tj_u64(j, "upper_bound", mr->upper);
    tj_str(j, "search", mr->method ? mr->method : "bisect");
    if (mr->predicted)
        tj_u64(j, "predicted", mr->predicted);
    else
        tj_null(j, "predicted");
    tj_str(j, "method",
           mr->method && strcmp(mr->method, "extent") == 0
               ? "one replay's extent high-water predicts it (the policy's decisions do not depend on the arena "
                 "size), confirmed: it replays without failures and one granule less fails"
           : mr->method && strcmp(mr->method, "tight-bisect") == 0
               ? "bisection between tight bounds (peak live bytes; the extent high-water's prediction); "
                 "sequential replay in trace order; stops at the first failed allocation"
               : "bisection over arena sizes in granules from the doubled default arena; sequential replay in "
                 "trace order; stops at the first failed allocation");
    if (!mr->found)
        tj_str(j, "reason", mr->why);
    tj_obj_end(j);
}

static void json_timing(tj *j, const rp_run *r)
{
    const rp_options *o = r->o;
    tj_obj(j, "timing");
    tj_bool(j, "enabled", o->timing);
    tj_str(j, "clock", o->timing ? RP_CLOCK_KIND : "none");
    tj_str(j, "bracket", o->timing ? RP_CLOCK_BRACKET : NULL);
    tj_str(j, "unit", o->timing ? RP_CLOCK_UNIT : NULL);
    tj_u64(j, "bracket_cost", r->bracket);
    tj_dbl(j, "ticks_per_sec", o->timing ? r->tps : 0.0 / 0.0);
    tj_u64(j, "reps", o->reps);
    tj_str(j, "statistic", "median over reps of each figure; per-thread figures from the median-wall rep");
    tj_str(j, "percentiles", "exact below 1024 ticks, else within 1/64 (log-linear histogram)");
    tj_str(j, "warm_means", (r->cls->caps & RPB_FRESH) ? "the allocator reset, then the same replay"
                                                      : "a further replay in the same process (the allocator is not fresh)");
    json_pass(j, "cold", &r->cold, o->timing);
    json_pass(j, "warm", &r->warm, o->timing);
    if (o->hist && o->timing) {
        tj_obj(j, "histograms");
        tj_str(j, "unit", RP_CLOCK_UNIT);
        tj_str(j, "buckets", "[lowest value, width, count]; summed over the reps of each pass");
        if (r->cold.n)
            rpx_json_hists(j, "cold", r->hacc[0]);
        if (r->warm.n)
            rpx_json_hists(j, "warm", r->hacc[1]);
        tj_obj_end(j);
    }
    tj_obj_end(j);
}

static void json_memory(tj *j, const rp_run *r, const figures *g)
{
    const rp_mem_info *mi = &r->b->mem;
    tj_obj(j, "memory");
    tj_bool(j, "exact", g->exact);
    tj_str(j, "footprint_kind", g->sampled_mt ? "sampled" : mi->kind);
    tj_str(j, "footprint_source", mi->footprint_source);
    tj_str(j, "used_source", mi->used_source);
    tj_str(j, "meta_source", mi->meta_source);
    tj_u64(j, "peak_live_requested", r->plan.peak_live);
    tj_u64(j, "run_peak_live", r->first.run_peak_live);
    tj_u64(j, "peak_footprint", g->peak_fp);
    tj_str(j, "peak_footprint_method", g->peak_method);
    tj_u64(j, "footprint_end", r->first.end.footprint);
    tj_u64(j, "rss_growth", g->rss_growth);
    json_mem(j, "at_peak_live", &r->first.at_peak);
    json_mem(j, "peak", &r->first.peak);
    json_mem(j, "end", &r->first.end);
    json_mem(j, "baseline", &r->first.baseline);
    tj_bool(j, "net_of_baseline", r->b->subtract_baseline);
    tj_str(j, "baseline_rule", r->b->subtract_baseline
                                   ? "figures are growth over the baseline taken before the pass"
                                   : "figures are the allocator's own counts for the whole process; the baseline "
                                     "(before the pass) is what the replayer itself held then");
    tj_u64(j, "samples", r->first.samples);
    tj_u64(j, "sample_ns", r->first.sample_ns);
    tj_obj(j, "rss");
    tj_u64(j, "before_pass", r->rss_before);
    tj_u64(j, "peak_pass", r->hwm_after);
    tj_bool(j, "peak_pass_reset", r->hwm_reset);
    tj_u64(j, "vm_hwm", rp_hwm_bytes());
    tj_u64(j, "ru_maxrss", g->maxrss);
    tj_obj_end(j);
    if (r->cls->memory_json)
        r->cls->memory_json(r->b, j);
    tj_obj_end(j);
}

static void json_fragmentation(tj *j, const figures *g, int meta_in)
{
    if (!g->exact) {
        tj_null(j, "fragmentation");
        return;
    }
    tj_obj(j, "fragmentation");
    tj_bool(j, "exact", 1);
    tj_str(j, "definition", "Johnstone & Wilson: #3 = footprint / live at the peak-live sample, "
                            "#4 = peak footprint / peak live");
    tj_dbl(j, "frag3", g->f3);
    tj_dbl(j, "frag4", g->f4);
    tj_u64(j, "peak_live", g->live_peak);
    tj_u64(j, "live_at_sample", g->at.live);
    tj_u64(j, "footprint_at_peak_live", g->at.footprint);
    tj_u64(j, "peak_footprint", g->peak_fp);
    if (g->have_int)
        tj_i64(j, "internal_waste", g->internal);
    else
        tj_null(j, "internal_waste");
    if (g->have_ext)
        tj_i64(j, "external_waste", g->external);
    else
        tj_null(j, "external_waste");
    tj_str(j, "external_waste_definition",
           meta_in ? "footprint - used - metadata, at the peak-live sample" : "footprint - used, at the peak-live sample");
    if (g->at.meta_known)
        tj_u64(j, "metadata", g->at.meta);
    else
        tj_null(j, "metadata");
    tj_obj_end(j);
}

static int write_json(const rp_run *r, const figures *gp, FILE *f)
{
    const rp_options *o = r->o;
    const figures g = *gp;
    tj j;
    tj_init(&j, f);
    tj_obj(&j, NULL);
    tj_str(&j, "schema", DMM_SCHEMA_REPLAY);
    tc_json_machine(&j, "machine");
    tc_json_build(&j, "build");
    json_trace(&j, r);
    tj_obj(&j, "allocator");
    r->b->cls->json(r->b, &j);
    tj_bool(&j, "prefaulted", (r->cls->caps & RPB_ARENA) && !o->min_arena && !r->b->lazy_arena);
    tj_obj_end(&j);
    if (o->min_arena) {
        json_min_arena(&j, &r->mr);
        tj_null(&j, "timing");
        tj_null(&j, "memory");
        tj_null(&j, "fragmentation");
    } else {
        json_timing(&j, r);
        json_memory(&j, r, &g);
        json_fragmentation(&j, &g, r->b->mem.meta_in_footprint);
    }
    tj_u64(&j, "failed", o->min_arena ? 0 : r->first.failed);
    tj_u64(&j, "skipped", o->min_arena ? 0 : r->first.skipped);
    if (!o->min_arena && r->first.first_failed_index != UINT64_MAX)
        tj_u64(&j, "first_failed_index", r->first.first_failed_index);
    tj_str(&j, "verify", !o->verify ? "off" : r->verify_failed ? "fail" : "pass");
    if (r->verify_failed) {
        tj_obj(&j, "verify_error");
        tj_u64(&j, "index", r->verify_index);
        tj_str(&j, "message", r->verify_msg);
        tj_obj_end(&j);
    }
    tj_obj_end(&j);
    return tj_finish(&j);
}

int rp_report(const rp_run *r, FILE *console)
{
    const rp_options *o = r->o;
    tc_out out;
    figures g;
    int rc = 0;
    work_out(r, &g); /* once, for the console and the JSON alike */
    if (console)
        report_text(r, &g, console);
    if (o->timeline && !o->min_arena) {
        if (tc_out_open(&out, PROG, o->timeline))
            rc = -1;
        else if (tc_out_close(&out, PROG,
                              rpx_timeline_write(out.f, &r->tl, o->trace, r->hash, r->b->detected,
                                                 r->b->mem.footprint_source, r->plan.ops, r->plan.peak_live) == 0))
            rc = -1;
    }
    if (o->heapmap && !o->min_arena) {
        const dmm_backend *db = (const dmm_backend *)r->b; /* RPB_HEAPMAP: a dmm backend */
        if (tc_out_open(&out, PROG, o->heapmap))
            rc = -1;
        else if (tc_out_close(&out, PROG,
                              rpx_heapmap_write(out.f, &r->hm, o->trace, r->hash, db->spec, db->cfgtext, db->want,
                                                r->plan.peak_live, r->plan.peak_index) == 0))
            rc = -1;
    }
    if (o->json) {
        if (tc_out_open(&out, PROG, o->json))
            rc = -1;
        else if (tc_out_close(&out, PROG, write_json(r, &g, out.f) == 0))
            rc = -1;
    }
    return rc;
}

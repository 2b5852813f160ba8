/*
 * tools/replay/run.c - one dmm-replay invocation: trace -> plan -> backend
 * -> passes.  Backend-specific work goes through the class's hooks
 * (backends.h); nothing here knows which allocator it drives.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/tcommon.h"
#include "dmm/trace.h"
#include "run.h"

const char *const rp_kind_labels[NK] = {"malloc", "calloc", "realloc", "aligned", "free", "all"};

/* ---- summaries ---- */

static void ksum_of(ksum *k, const rp_hist *h)
{
    memset(k, 0, sizeof *k);
    k->count = h->count;
    if (!h->count)
        return;
    k->avg = (double)h->sum / (double)h->count;
    k->p50 = rp_hist_quantile(h, 0.50);
    k->p99 = rp_hist_quantile(h, 0.99);
    k->max = h->max;
    k->min = h->min;
}

static int summarise(const rp_pass_result *r, pass_sum *s)
{
    rp_hist all;
    memset(s, 0, sizeof *s);
    memset(&all, 0, sizeof all);
    s->wall_ns = r->wall_ns;
    s->failed = r->failed;
    s->skipped = r->skipped;
    s->nivcsw = r->nivcsw;
    s->nvcsw = r->nvcsw;
    for (unsigned k = 0; k < RK_COUNT; k++) {
        ksum_of(&s->k[k], &r->merged[k]);
        if (rp_hist_merge(&all, &r->merged[k]))
            return -1;
    }
    ksum_of(&s->k[RK_COUNT], &all);
    rp_hist_free(&all);
    s->nthr = r->nthr;
    if (!(s->thr = calloc((size_t)(r->nthr ? r->nthr : 1) * NK, sizeof *s->thr)))
        return -1;
    for (uint32_t t = 0; t < r->nthr; t++) {
        memset(&all, 0, sizeof all);
        for (unsigned k = 0; k < RK_COUNT; k++) {
            ksum_of(&s->thr[t * NK + k], &r->thr[t].h[k]);
            if (rp_hist_merge(&all, &r->thr[t].h[k]))
                return -1;
        }
        ksum_of(&s->thr[t * NK + RK_COUNT], &all);
        rp_hist_free(&all);
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t med_u64(uint64_t *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_u64);
    return v[(n - 1) / 2];
}
static double med_dbl(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void rp_median_of(const pass_set *ps, pass_sum *m, unsigned *rep)
{
    unsigned n = ps->n;
    uint64_t u[1000];
    double d[1000];
    memset(m, 0, sizeof *m);
    *rep = 0;
    if (!n)
        return;
    for (unsigned i = 0; i < n; i++)
        u[i] = ps->s[i].wall_ns;
    m->wall_ns = med_u64(u, n);
    for (unsigned i = 0; i < n; i++)
        if (ps->s[i].wall_ns == m->wall_ns)
            *rep = i;
    for (unsigned k = 0; k < NK; k++) {
#define MED_U(f)                                                                                             \
    for (unsigned i = 0; i < n; i++)                                                                         \
        u[i] = ps->s[i].k[k].f;                                                                              \
    m->k[k].f = med_u64(u, n)
        MED_U(count);
        MED_U(p50);
        MED_U(p99);
        MED_U(max);
        MED_U(min);
#undef MED_U
        for (unsigned i = 0; i < n; i++)
            d[i] = ps->s[i].k[k].avg;
        m->k[k].avg = med_dbl(d, n);
    }
#define MED_F(f)                                                                                             \
    for (unsigned i = 0; i < n; i++)                                                                         \
        u[i] = ps->s[i].f;                                                                                   \
    m->f = med_u64(u, n)
    MED_F(failed);
    MED_F(skipped);
    MED_F(nivcsw);
    MED_F(nvcsw);
#undef MED_F
    m->nthr = ps->s[*rep].nthr;
    m->thr = ps->s[*rep].thr;
}

/* ---- setup ---- */

static int reset_hwm(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    int ok;
    if (fd < 0)
        return 0;
    ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok;
}

int rp_run_setup(rp_run *r, const rp_options *o)
{
    dmm_trace t;
    dmm_trace_error te;
    rp_setup s;
    const char *spec = "";
    char err[700];
    memset(r, 0, sizeof *r);
    r->o = o;
    if (!(r->cls = rp_backend_find(o->alloc, &spec, err, sizeof err))) {
        fprintf(stderr, PROG ": %s\n", err);
        return RP_EXIT_USAGE;
    }
    if (o->arena && !(r->cls->caps & RPB_ARENA)) {
        fprintf(stderr, PROG ": --arena does not apply to --alloc %s\n", o->alloc);
        return RP_EXIT_USAGE;
    }
    if (o->min_arena && !(r->cls->caps & RPB_MIN_ARENA)) {
        fprintf(stderr, PROG ": --min-arena does not apply to --alloc %s\n", o->alloc);
        return RP_EXIT_USAGE;
    }
    if (o->heapmap && !(r->cls->caps & RPB_HEAPMAP)) {
        fprintf(stderr, PROG ": --heapmap does not apply to --alloc %s\n", o->alloc);
        return RP_EXIT_USAGE;
    }
    if (o->min_arena && (o->timeline || o->heapmap || o->hist)) {
        fprintf(stderr, PROG ": --timeline, --heapmap and --hist do not apply with --min-arena\n");
        return RP_EXIT_USAGE;
    }

    /* ---- trace -> plan ---- */
    if (tc_load_trace(PROG, o->trace, &t))
        return RP_EXIT_USAGE;
    memset(&te, 0, sizeof te);
    if (dmm_trace_validate(&t, &te)) {
        fprintf(stderr, PROG ": %s: operation %" PRIu64 ": %s\n", o->trace, te.offset, te.reason);
        dmm_trace_free(&t);
        return RP_EXIT_USAGE;
    }
    if (t.threads > o->max_threads) {
        fprintf(stderr, PROG ": %s: the trace has %u threads; a replay runs one thread per trace thread, "
                        "at most %u (--max-threads)\n", o->trace, t.threads, o->max_threads);
        dmm_trace_free(&t);
        return RP_EXIT_USAGE;
    }
    r->file_entries = t.n;
    for (size_t i = 0; i < t.n; i++)
        r->file_ops += t.ops[i].kind != DMM_T_SYNC;
    if (o->ops_limit && o->ops_limit < t.n) {
        /* --ops N: the first N entries.  A prefix of a valid trace is valid
         * (objects are used only after their allocation, a SYNC waits only
         * for operations before it); checked again all the same. */
        t.n = (size_t)o->ops_limit;
        if (dmm_trace_validate(&t, &te)) {
            fprintf(stderr, PROG ": %s: the first %" PRIu64 " entries are not a valid trace: operation %" PRIu64
                            ": %s\n", o->trace, o->ops_limit, te.offset, te.reason);
            dmm_trace_free(&t);
            return RP_EXIT_USAGE;
        }
    }
    r->hash = dmm_trace_hash(&t);
    if (rp_plan_build(&t, &r->plan, err, sizeof err)) {
        fprintf(stderr, PROG ": %s: %s\n", o->trace, err);
        dmm_trace_free(&t);
        return RP_EXIT_RUNTIME;
    }
    /* The replay needs only the plan (mmap'd): give the trace's memory back
     * before anything is measured (it came from the malloc a system replay
     * measures). */
    dmm_trace_free(&t);
    if (o->count_sweep)
        return -1;

    /* ---- backend ---- */
    memset(&s, 0, sizeof s);
    s.threads = o->min_arena ? 1 : r->plan.threads;
    s.arena = o->arena;
    s.peak_live = r->plan.peak_live;
    s.plan = &r->plan;
    if (!(r->b = r->cls->create(spec, &s, err, sizeof err))) {
        fprintf(stderr, PROG ": %s\n", err);
        return RP_EXIT_USAGE;
    }
    r->b->cls = r->cls;
    if (o->expect && strcmp(o->expect, r->b->detected) != 0) {
        fprintf(stderr, PROG ": expected allocator %s but the allocator is %s\n", o->expect, r->b->detected);
        return RP_EXIT_EXPECT;
    }
    return -1;
}

/* ---- passes ---- */

static int run_passes(rp_run *r)
{
    const rp_options *o = r->o;
    rp_backend *b = r->b;
    int fresh = (b->cls->caps & RPB_FRESH) != 0;
    unsigned ncold = fresh ? o->reps : 1, nwarm = o->warm ? o->reps : 0;
    char err[600];
    rp_tick_mark tps_start;
    if (o->timing) {
        r->bracket = rp_calibrate_bracket();
        rp_ticks_mark(&tps_start); /* rp_ticks_per_sec() at the end: the passes are the interval */
    }
    if (o->timeline && rpx_timeline_init(&r->tl, r->plan.ops)) {
        fprintf(stderr, PROG ": out of memory\n");
        return RP_EXIT_RUNTIME;
    }
    if (!(r->cold.s = calloc(ncold, sizeof *r->cold.s)) || (nwarm && !(r->warm.s = calloc(nwarm, sizeof *r->warm.s)))) {
        fprintf(stderr, PROG ": out of memory\n");
        return RP_EXIT_RUNTIME;
    }
    if (b->cls->prepare(b, err, sizeof err)) {
        fprintf(stderr, PROG ": %s\n", err);
        return RP_EXIT_RUNTIME;
    }
    for (unsigned rep = 0; rep < o->reps && !r->verify_failed; rep++) {
        for (int w = 0; w < 2 && !r->verify_failed; w++) {
            rp_pass_opts po;
            rp_pass_result pr;
            pass_set *set = w ? &r->warm : &r->cold;
            unsigned cap = w ? nwarm : ncold;
            if (set->n >= cap)
                continue;
            memset(&po, 0, sizeof po);
            po.timing = o->timing;
            po.bracket = r->bracket;
            po.verify = o->verify;
            po.sample_mem = !r->have_first;
            if (!r->have_first && o->timeline)
                po.timeline = &r->tl;
            if (!r->have_first && o->heapmap && !o->heapmap_worst) {
                r->hm.db = (dmm_backend *)b; /* RPB_HEAPMAP: a dmm backend */
                po.on_trace_peak = rpx_heapmap_at_peak;
                po.peak_ctx = &r->hm;
            }
            if (b->cls->begin_pass(b, !w, err, sizeof err)) {
                fprintf(stderr, PROG ": %s\n", err);
                return RP_EXIT_RUNTIME;
            }
            if (!r->have_first) {
                r->rss_before = rp_rss_bytes();
                r->hwm_reset = reset_hwm();
            }
            if (rp_run_pass(&r->plan, b, &po, &pr)) {
                rp_pass_result_free(&pr);
                return RP_EXIT_RUNTIME;
            }
            if (!r->have_first)
                r->hwm_after = rp_hwm_bytes();
            if (pr.verify_failed) {
                r->verify_failed = 1;
                r->verify_index = pr.verify_index;
                snprintf(r->verify_msg, sizeof r->verify_msg, "%s pass: %s", w ? "warm" : "cold", pr.verify_msg);
            }
            if (o->verify && !r->verify_failed && b->cls->check && b->cls->check(b, err, sizeof err)) {
                r->verify_failed = 1;
                r->verify_index = r->plan.ops;
                snprintf(r->verify_msg, sizeof r->verify_msg, "allocator check after the %s pass: %.200s",
                         w ? "warm" : "cold", err);
            }
            if (!r->have_first && b->cls->after_first)
                b->cls->after_first(b);
            if (o->hist)
                for (unsigned kk = 0; kk < RK_COUNT; kk++)
                    (void)rp_hist_merge(&r->hacc[w][kk], &pr.merged[kk]);
            if (summarise(&pr, &set->s[set->n])) {
                fprintf(stderr, PROG ": out of memory\n");
                rp_pass_result_free(&pr);
                return RP_EXIT_RUNTIME;
            }
            set->n++;
            if (!r->have_first) {
                /* keep the first pass's memory figures; drop its histograms */
                r->first = pr;
                for (uint32_t k = 0; k < pr.nthr; k++)
                    for (unsigned kk = 0; kk < RK_COUNT; kk++)
                        rp_hist_free(&r->first.thr[k].h[kk]);
                for (unsigned kk = 0; kk < RK_COUNT; kk++)
                    rp_hist_free(&r->first.merged[kk]);
                r->have_first = 1;
            } else {
                rp_pass_result_free(&pr);
            }
        }
    }
    if (o->timing)
        r->tps = rp_ticks_per_sec(&tps_start);
    if (o->heapmap && o->heapmap_worst && !r->verify_failed)
        rpx_heapmap_worst(&r->plan, b, &r->hm); /* --heapmap-at worst-frag (extras.c) */
    else if (o->heapmap && !r->hm.taken && !r->verify_failed) {
        /* A multi-threaded interleaving may never reach the trace's peak:
         * take the map from one extra sequential replay in trace order
         * (untimed, not counted in any figure). */
        rp_pass_opts po;
        rp_pass_result pr;
        if (rp_plan_flatten(&r->plan) == 0 && b->cls->begin_pass(b, 1, err, sizeof err) == 0) {
            memset(&po, 0, sizeof po);
            po.sequential = 1;
            po.sample_mem = 1;
            r->hm.db = (dmm_backend *)b;
            r->hm.sequential = 1;
            po.on_trace_peak = rpx_heapmap_at_peak;
            po.peak_ctx = &r->hm;
            (void)rp_run_pass(&r->plan, b, &po, &pr);
            rp_pass_result_free(&pr);
        }
    }
    if (r->verify_failed) {
        fprintf(stderr, PROG ": verify failed at operation %" PRIu64 ": %s\n", r->verify_index, r->verify_msg);
        return RP_EXIT_VERIFY;
    }
    return RP_EXIT_OK;
}

int rp_run_measure(rp_run *r)
{
    if (r->o->count_sweep)
        return rpx_count_sweep(PROG, &r->plan, r->o->count_sweep);
    if (r->o->min_arena) {
        int rc;
        r->mr.method_req = r->o->min_arena;
        rc = r->cls->min_arena(r->b, &r->plan, r->o->verify, &r->mr);
        if (rc == -4)
            return RP_EXIT_VERIFY;
        if (rc < 0) {
            fprintf(stderr, PROG ": min-arena search failed: %s\n", r->mr.why[0] ? r->mr.why : "engine error");
            return RP_EXIT_RUNTIME;
        }
        return RP_EXIT_OK;
    }
    return run_passes(r);
}

void rp_run_free(rp_run *r)
{
    rpx_timeline_free(&r->tl);
    rpx_heapmap_free(&r->hm);
    for (unsigned w = 0; w < 2; w++)
        for (unsigned kk = 0; kk < RK_COUNT; kk++)
            rp_hist_free(&r->hacc[w][kk]);
    if (r->have_first)
        rp_pass_result_free(&r->first);
    for (unsigned i = 0; i < r->cold.n; i++)
        free(r->cold.s[i].thr);
    for (unsigned i = 0; i < r->warm.n; i++)
        free(r->warm.s[i].thr);
    free(r->cold.s);
    free(r->warm.s);
    if (r->b)
        r->b->cls->destroy(r->b);
    rp_plan_free(&r->plan);
}

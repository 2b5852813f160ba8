/*
 * tools/replay/main.c - dmm-replay: replays an allocation trace against a
 * dmm heap configuration or the process's own malloc and reports speed,
 * footprint and fragmentation (docs/replay.md).
 *
 * Exit status: 0 done, 1 run-time failure (memory, threads), 2 bad usage,
 * bad trace or bad configuration, 3 --expect mismatch, 4 --verify found a
 * corrupted block (or the heap checker failed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/tcommon.h"
#include "backends.h"
#include "extras.h"
#include "dmm/heap.h"
#include "dmm/trace.h"
#include "replay.h"
#include "rp_clock.h"

#define PROG "dmm-replay"
#define NK (RK_COUNT + 1) /* kinds + "all" */

static const char *const kind_labels[NK] = {"malloc", "calloc", "realloc", "aligned", "free", "all"};

typedef struct opts {
    const char *trace;
    const char *alloc;
    const char *json;
    const char *expect;
    const char *timeline;     /* --timeline FILE */
    const char *heapmap;      /* --heapmap FILE */
    const char *check_configs;/* --check-configs FILE */
    const char *count_sweep;  /* --count-sweep FILE */
    int hist;                 /* --hist */
    uint64_t arena;
    int arena_given;
    unsigned reps;
    int warm, verify, quiet, min_arena, timing;
} opts;

typedef struct ksum {
    uint64_t count, p50, p99, max, min;
    double avg;
} ksum;

typedef struct pass_sum {
    uint64_t wall_ns;
    ksum k[NK];
    uint32_t nthr;
    ksum *thr; /* nthr * NK */
    uint64_t failed, skipped, nivcsw, nvcsw;
} pass_sum;

typedef struct pass_set {
    unsigned n;
    pass_sum *s;
} pass_set;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " TRACE [--alloc dmm:CONFIG | --alloc system] [--arena BYTES] [--reps N]\n"
            "                  [--warm | --no-warm] [--verify] [--json FILE] [--quiet] [--min-arena]\n"
            "                  [--no-timing] [--expect NAME] [--hist] [--timeline FILE] [--heapmap FILE]\n"
            "       " PROG " --check-configs FILE\n"
            "  --alloc dmm:CONFIG  a preset name (dlmalloc, tlsf, halffit, firstfit, p2012) or\n"
            "                      key=value pairs (e.g. dmm:preset=tlsf,fit=best); default dmm:tlsf\n"
            "  --alloc system      the process's malloc family (use LD_PRELOAD to pick one)\n"
            "  --arena BYTES       dmm arena size (k/m/g suffixes); default 4x peak live, >= 1 MiB\n"
            "  --reps N            repetitions; figures are medians over them (default 1)\n"
            "  --no-warm           skip the warm pass\n"
            "  --verify            fill blocks with a pattern and check it before realloc/free\n"
            "  --json FILE         write every figure as JSON (schema dmm-replay/1); '-' = stdout\n"
            "  --min-arena         bisect the smallest arena with no failed allocation (dmm only)\n"
            "  --no-timing         no rdtsc (for valgrind/callgrind runs)\n"
            "  --expect NAME       exit 3 unless the system allocator detected is NAME\n"
            "  --hist              add the latency histograms (non-empty buckets) to the JSON\n"
            "  --timeline FILE     write live bytes and footprint over the first cold pass (JSON)\n"
            "  --heapmap FILE      write every block of the heap when live bytes first reach the\n"
            "                      trace's peak (JSON; dmm only)\n"
            "  --count-sweep FILE  replay once per line 'ARENA CONFIG' (sequential, untimed), calling\n"
            "                      rpx_sweep_mark() after each: callgrind --dump-after=rpx_sweep_mark\n"
            "                      then gives every config its own instruction count\n"
            "  --check-configs FILE  check one dmm config per line ('-' = stdin), print\n"
            "                      'ok CONFIG' (normalised) or 'error REASON' per line; no trace\n");
}

static int parse_args(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->alloc = "dmm:tlsf";
    o->reps = 1;
    o->warm = 1;
    o->timing = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
#define NEEDV()                                                                                              \
    do {                                                                                                     \
        if (i + 1 >= argc) {                                                                                 \
            fprintf(stderr, PROG ": %s needs a value\n", a);                                                 \
            return -1;                                                                                       \
        }                                                                                                    \
        v = argv[++i];                                                                                       \
    } while (0)
        if (!strcmp(a, "--alloc")) {
            NEEDV();
            o->alloc = v;
        } else if (!strncmp(a, "--alloc=", 8)) {
            o->alloc = a + 8;
        } else if (!strcmp(a, "--arena")) {
            NEEDV();
            if (tc_parse_size(v, &o->arena) || o->arena == 0) {
                fprintf(stderr, PROG ": --arena: bad size '%s'\n", v);
                return -1;
            }
            o->arena_given = 1;
        } else if (!strcmp(a, "--reps")) {
            uint64_t n;
            NEEDV();
            if (tc_parse_u64(v, &n) || n == 0 || n > 1000) {
                fprintf(stderr, PROG ": --reps: expected 1..1000, got '%s'\n", v);
                return -1;
            }
            o->reps = (unsigned)n;
        } else if (!strcmp(a, "--warm")) {
            o->warm = 1;
        } else if (!strcmp(a, "--no-warm")) {
            o->warm = 0;
        } else if (!strcmp(a, "--verify")) {
            o->verify = 1;
        } else if (!strcmp(a, "--json")) {
            NEEDV();
            o->json = v;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--min-arena")) {
            o->min_arena = 1;
        } else if (!strcmp(a, "--no-timing")) {
            o->timing = 0;
        } else if (!strcmp(a, "--expect")) {
            NEEDV();
            o->expect = v;
        } else if (!strcmp(a, "--timeline")) {
            NEEDV();
            o->timeline = v;
        } else if (!strcmp(a, "--heapmap")) {
            NEEDV();
            o->heapmap = v;
        } else if (!strcmp(a, "--hist")) {
            o->hist = 1;
        } else if (!strcmp(a, "--count-sweep")) {
            NEEDV();
            o->count_sweep = v;
        } else if (!strcmp(a, "--check-configs")) {
            NEEDV();
            o->check_configs = v;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, PROG ": unknown option '%s'\n", a);
            return -1;
        } else if (!o->trace) {
            o->trace = a;
        } else {
            fprintf(stderr, PROG ": more than one trace given ('%s', '%s')\n", o->trace, a);
            return -1;
        }
#undef NEEDV
    }
    if (!o->trace && !o->check_configs) {
        fprintf(stderr, PROG ": no trace given\n");
        return -1;
    }
    return 0;
}

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
    if (!(s->thr = calloc((size_t)r->nthr * NK, sizeof *s->thr)))
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

/* Per-figure medians over the set; the representative rep (median wall
 * time) gives the per-thread figures. */
static void median_of(const pass_set *ps, pass_sum *m, unsigned *rep)
{
    unsigned n = ps->n;
    uint64_t u[1000];
    double d[1000];
    memset(m, 0, sizeof *m);
    if (!n)
        return;
    for (unsigned i = 0; i < n; i++)
        u[i] = ps->s[i].wall_ns;
    m->wall_ns = med_u64(u, n);
    *rep = 0;
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
    for (unsigned i = 0; i < n; i++)
        u[i] = ps->s[i].failed;
    m->failed = med_u64(u, n);
    for (unsigned i = 0; i < n; i++)
        u[i] = ps->s[i].skipped;
    m->skipped = med_u64(u, n);
    for (unsigned i = 0; i < n; i++)
        u[i] = ps->s[i].nivcsw;
    m->nivcsw = med_u64(u, n);
    for (unsigned i = 0; i < n; i++)
        u[i] = ps->s[i].nvcsw;
    m->nvcsw = med_u64(u, n);
    m->nthr = ps->s[*rep].nthr;
    m->thr = ps->s[*rep].thr;
}

/* ---- misc helpers ---- */

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

/* a / b; NaN (JSON null) when either is 0: a zero footprint means the
 * allocator never reported growth, not a ratio of 0. */
static double ratio(uint64_t a, uint64_t b) { return a && b ? (double)a / (double)b : 0.0 / 0.0; }

static const char *stats_name(dmm_heap_stats_level s)
{
    return s == DMM_STATS_FULL ? "full" : s == DMM_STATS_COUNTERS ? "counters" : "off";
}

/* ---- min arena ---- */

typedef struct min_result {
    uint64_t bytes, replays, lower, upper, gran;
    int found;
    char why[600];
} min_result;

/* 1 = replays with no failed allocation, 0 = fails (or init refused),
 * -1 = engine error, -4 = verify failure. */
static int try_arena(dmm_backend *b, rp_plan *p, size_t size, const opts *o, rp_pass_result *keep, uint64_t *replays)
{
    rp_pass_opts po;
    rp_pass_result r;
    int rc;
    if (dmmb_init(b, size) != DMM_OK)
        return 0;
    memset(&po, 0, sizeof po);
    po.sequential = 1;
    po.stop_on_fail = 1;
    po.verify = o->verify;
    (*replays)++;
    if (rp_run_pass(p, &b->rb, &po, &r)) {
        rp_pass_result_free(&r);
        dmmb_fini(b);
        return -1;
    }
    dmmb_fini(b);
    if (r.verify_failed) {
        fprintf(stderr, PROG ": verify failed at operation %" PRIu64 " with a %zu-byte arena: %s\n", r.verify_index,
                size, r.verify_msg);
        rp_pass_result_free(&r);
        return -4;
    }
    rc = r.failed == 0;
    if (keep)
        *keep = r;
    else
        rp_pass_result_free(&r);
    return rc;
}

static int find_min_arena(dmm_backend *b, rp_plan *p, const opts *o, uint64_t start, min_result *mr)
{
    const uint64_t G = DMM_HEAP_ALIGN;
    uint64_t minbuf = dmm_heap_min_buffer(&b->cfg);
    uint64_t hi = start, klo, khi;
    char err[200];
    rp_pass_result gr;
    int rc;
    memset(mr, 0, sizeof *mr);
    mr->gran = G;
    mr->lower = minbuf;
    if (rp_plan_flatten(p)) {
        snprintf(mr->why, sizeof mr->why, "out of memory");
        return -1;
    }
    if (hi < minbuf)
        hi = minbuf;
    hi = (hi + G - 1) / G * G;
    /* a generous arena that works: double until it does */
    for (;;) {
        if (dmmb_map(b, (size_t)hi, 0, err, sizeof err)) {
            snprintf(mr->why, sizeof mr->why, "no arena up to %" PRIu64 " bytes replays without failures (%s)", hi,
                     err);
            return 0;
        }
        rc = try_arena(b, p, (size_t)hi, o, &gr, &mr->replays);
        if (rc == 1)
            break;
        dmmb_unmap(b);
        if (rc < 0)
            return rc;
        if (hi > ((uint64_t)1 << 42)) {
            snprintf(mr->why, sizeof mr->why, "no arena up to %" PRIu64 " bytes replays without failures", hi);
            return 0;
        }
        hi *= 2;
    }
    mr->upper = hi;
    /* Sizes are multiples of the granule: k * G.  Everything below minbuf
     * is refused by init, so (ceil(minbuf/G) - 1) * G is a known failure. */
    klo = (minbuf + G - 1) / G - 1;
    khi = hi / G;
    if (b->cfg.max_block_log2 == 0) {
        /* The bin range, and with it the control block, is derived from the
         * arena size and steps up at powers of two, so success is not
         * monotonic across those steps.  Try the largest size below each
         * power of two first; bisect inside the first segment that works
         * (one control-block size throughout). */
        rp_pass_result_free(&gr);
        for (uint64_t pw = 1; pw && pw / 2 < hi; pw <<= 1) {
            uint64_t k = (pw - G) / G;
            if (pw <= G || k <= klo)
                continue;
            if (k >= khi)
                break;
            rc = try_arena(b, p, (size_t)(k * G), o, NULL, &mr->replays);
            if (rc < 0)
                return rc;
            if (rc) {
                khi = k;
                break;
            }
            klo = k;
        }
    } else {
        rp_pass_result_free(&gr);
    }
    while (khi - klo > 1) {
        uint64_t k = klo + (khi - klo) / 2;
        rc = try_arena(b, p, (size_t)(k * G), o, NULL, &mr->replays);
        if (rc < 0)
            return rc;
        if (rc)
            khi = k;
        else
            klo = k;
    }
    mr->bytes = khi * G;
    mr->found = 1;
    return 0;
}

/* ---- output ---- */

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
    median_of(ps, &m, &rep);
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
            json_ksum(j, kind_labels[k], &m.k[k]);
        tj_obj_end(j);
        tj_u64(j, "threads_rep", rep);
        tj_arr(j, "threads");
        for (uint32_t t = 0; t < m.nthr; t++) {
            tj_obj(j, NULL);
            tj_u64(j, "thread", t);
            tj_obj(j, "kinds");
            for (unsigned k = 0; k < NK; k++)
                json_ksum(j, kind_labels[k], &m.thr[t * NK + k]);
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

static void print_pass(FILE *f, const char *name, const pass_set *ps, const char *unit)
{
    pass_sum m;
    unsigned rep;
    if (!ps->n)
        return;
    median_of(ps, &m, &rep);
    for (unsigned k = 0; k < NK; k++) {
        if (!m.k[k].count)
            continue;
        fprintf(f, "  %-5s %-8s %10" PRIu64 " %10.1f %8" PRIu64 " %8" PRIu64 " %10" PRIu64 "\n", name,
                kind_labels[k], m.k[k].count, m.k[k].avg, m.k[k].p50, m.k[k].p99, m.k[k].max);
    }
    (void)unit;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    opts o;
    dmm_trace t;
    dmm_trace_error te;
    rp_plan plan;
    char err[512];
    int is_dmm, exit_code = 0;
    dmm_backend db;
    sys_backend sb;
    rp_backend *rb;
    dmm_heap_config cfg;
    pass_set cold = {0, NULL}, warm = {0, NULL};
    rp_pass_result first;
    int have_first = 0;
    uint64_t bracket = 0, rss_before = 0, hwm_after = 0;
    int hwm_reset = 0;
    double tps = 0;
    uint64_t hash;
    min_result mr;
    int verify_failed = 0;
    uint64_t verify_index = 0;
    char verify_msg[300] = "";
    dmm_heap_stats hstats;
    int have_hstats = 0;
    char cfgtext[1024] = "";
    FILE *hout = stdout;
    /* front-end extras (extras.c) */
    rp_timeline tl;
    rpx_heapmap hm;
    rp_hist hacc[2][RK_COUNT];

    memset(&mr, 0, sizeof mr);
    memset(&db, 0, sizeof db);
    memset(&sb, 0, sizeof sb);
    memset(&first, 0, sizeof first);
    memset(&hstats, 0, sizeof hstats);
    memset(&tl, 0, sizeof tl);
    memset(&hm, 0, sizeof hm);
    memset(hacc, 0, sizeof hacc);
    if (parse_args(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    if (o.check_configs)
        return rpx_check_configs(PROG, o.check_configs);
    is_dmm = strncmp(o.alloc, "dmm:", 4) == 0;
    if (!is_dmm && strcmp(o.alloc, "system") != 0) {
        fprintf(stderr, PROG ": --alloc: expected dmm:CONFIG or system, got '%s'\n", o.alloc);
        return 2;
    }
    if (!is_dmm && (o.min_arena || o.arena_given)) {
        fprintf(stderr, PROG ": %s applies to dmm configurations only\n", o.min_arena ? "--min-arena" : "--arena");
        return 2;
    }
    if (o.min_arena && (o.timeline || o.heapmap || o.hist)) {
        fprintf(stderr, PROG ": --timeline, --heapmap and --hist do not apply with --min-arena\n");
        return 2;
    }
    if (!is_dmm && o.heapmap) {
        fprintf(stderr, PROG ": --heapmap applies to dmm configurations only\n");
        return 2;
    }
    if (is_dmm && o.expect && strcmp(o.expect, "dmm") != 0) {
        fprintf(stderr, PROG ": --expect %s: the allocator is a dmm heap\n", o.expect);
        return 3;
    }
    if (is_dmm && dmmb_parse(o.alloc + 4, &cfg, err, sizeof err)) {
        fprintf(stderr, PROG ": %s\n", err);
        return 2;
    }
    if (o.json && !strcmp(o.json, "-"))
        hout = stderr;

    /* ---- trace ---- */
    if (tc_load_trace(PROG, o.trace, &t))
        return 2;
    memset(&te, 0, sizeof te);
    if (dmm_trace_validate(&t, &te)) {
        fprintf(stderr, PROG ": %s: operation %" PRIu64 ": %s\n", o.trace, te.offset, te.reason);
        dmm_trace_free(&t);
        return 2;
    }
    hash = dmm_trace_hash(&t);
    if (rp_plan_build(&t, &plan, err, sizeof err)) {
        fprintf(stderr, PROG ": %s: %s\n", o.trace, err);
        dmm_trace_free(&t);
        return 1;
    }

    /* The replay needs only the plan: give the trace's memory back before
     * anything is measured (it came from the same malloc a system replay
     * measures). */
    {
        dmm_trace_free(&t);
    }

    if (o.count_sweep) {
        int rc = rpx_count_sweep(PROG, &plan, o.count_sweep);
        rp_plan_free(&plan);
        return rc;
    }

    /* ---- allocator ---- */
    if (is_dmm) {
        if (dmmb_setup(&db, o.alloc + 4, &cfg, o.min_arena ? 1 : plan.threads, err, sizeof err)) {
            fprintf(stderr, PROG ": %s\n", err);
            exit_code = 2;
            goto done;
        }
        (void)dmm_heap_config_format(&db.cfg, cfgtext, sizeof cfgtext);
        rb = &db.rb;
        if (!o.arena_given) {
            uint64_t a = plan.peak_live > UINT64_MAX / 4 ? UINT64_MAX : plan.peak_live * 4;
            if (a < ((uint64_t)1 << 20))
                a = (uint64_t)1 << 20;
            o.arena = (a + 4095u) & ~(uint64_t)4095u;
        } else if (o.arena < dmm_heap_min_buffer(&db.cfg)) {
            fprintf(stderr, PROG ": --arena %" PRIu64 " is below the minimum %zu bytes for this configuration\n",
                    o.arena, dmm_heap_min_buffer(&db.cfg));
            exit_code = 2;
            goto done;
        }
    } else {
        sysb_setup(&sb);
        rb = &sb.rb;
        snprintf(cfgtext, sizeof cfgtext, "%s", sb.detected);
        if (o.expect && strcmp(o.expect, sb.detected) != 0) {
            fprintf(stderr, PROG ": expected allocator %s but malloc is served by %s (%s)%s%s\n", o.expect,
                    sb.detected, sb.malloc_object, sb.note[0] ? "; " : "", sb.note);
            exit_code = 3;
            goto done;
        }
    }

    if (o.min_arena) {
        int rc = find_min_arena(&db, &plan, &o, o.arena, &mr);
        dmmb_unmap(&db);
        if (rc == -4) {
            exit_code = 4;
            goto done;
        }
        if (rc < 0) {
            fprintf(stderr, PROG ": min-arena search failed: %s\n", mr.why[0] ? mr.why : "engine error");
            exit_code = 1;
            goto done;
        }
    } else {
        unsigned ncold = is_dmm ? o.reps : 1, nwarm = o.warm ? o.reps : 0;
        if (o.timing) {
            bracket = rp_calibrate_bracket();
            tps = rp_ticks_per_sec();
        }
        if (o.timeline && rpx_timeline_init(&tl, plan.ops)) {
            fprintf(stderr, PROG ": out of memory\n");
            exit_code = 1;
            goto done;
        }
        if (!(cold.s = calloc(ncold, sizeof *cold.s)) || (nwarm && !(warm.s = calloc(nwarm, sizeof *warm.s)))) {
            fprintf(stderr, PROG ": out of memory\n");
            exit_code = 1;
            goto done;
        }
        if (is_dmm) {
            int st;
            if (dmmb_map(&db, (size_t)o.arena, 1, err, sizeof err)) {
                fprintf(stderr, PROG ": %s (use --arena)\n", err);
                exit_code = 1;
                goto done;
            }
            if ((st = dmmb_init(&db, (size_t)o.arena)) != DMM_OK) {
                fprintf(stderr, PROG ": cannot create the heap on a %" PRIu64 "-byte arena: %s\n", o.arena,
                        dmm_status_str((dmm_status)st));
                exit_code = 2;
                goto done;
            }
            dmmb_fini(&db);
        }
        for (unsigned rep = 0; rep < o.reps && !verify_failed; rep++) {
            for (int w = 0; w < 2 && !verify_failed; w++) {
                rp_pass_opts po;
                rp_pass_result r;
                pass_set *set = w ? &warm : &cold;
                unsigned cap = w ? nwarm : ncold;
                if (set->n >= cap)
                    continue;
                memset(&po, 0, sizeof po);
                po.timing = o.timing;
                po.bracket = bracket;
                po.verify = o.verify;
                po.sample_mem = !have_first;
                if (!have_first && o.timeline)
                    po.timeline = &tl;
                if (!have_first && o.heapmap) {
                    hm.db = &db;
                    po.on_trace_peak = rpx_heapmap_at_peak;
                    po.peak_ctx = &hm;
                }
                if (is_dmm) {
                    if (!w) {
                        dmmb_fini(&db);
                        if (dmmb_init(&db, (size_t)o.arena) != DMM_OK) {
                            fprintf(stderr, PROG ": heap init failed\n");
                            exit_code = 1;
                            goto done;
                        }
                    } else {
                        dmmb_reset(&db);
                    }
                }
                if (!have_first) {
                    rss_before = rp_rss_bytes();
                    hwm_reset = reset_hwm();
                }
                if (rp_run_pass(&plan, rb, &po, &r)) {
                    rp_pass_result_free(&r);
                    exit_code = 1;
                    goto done;
                }
                if (!have_first)
                    hwm_after = rp_hwm_bytes();
                if (r.verify_failed) {
                    verify_failed = 1;
                    verify_index = r.verify_index;
                    snprintf(verify_msg, sizeof verify_msg, "%s pass: %s", w ? "warm" : "cold", r.verify_msg);
                }
                if (is_dmm && o.verify && !verify_failed) {
                    dmm_heap_check_report rep_;
                    if (dmm_heap_check(db.h, &rep_) != DMM_OK) {
                        verify_failed = 1;
                        verify_index = plan.ops;
                        snprintf(verify_msg, sizeof verify_msg, "heap checker after the %s pass: %s",
                                 w ? "warm" : "cold", rep_.detail ? rep_.detail : "corrupt");
                    }
                }
                if (is_dmm && !have_first) {
                    hstats = dmm_heap_get_stats(db.h);
                    have_hstats = 1;
                }
                if (o.hist)
                    for (unsigned kk = 0; kk < RK_COUNT; kk++)
                        (void)rp_hist_merge(&hacc[w][kk], &r.merged[kk]);
                if (summarise(&r, &set->s[set->n])) {
                    fprintf(stderr, PROG ": out of memory\n");
                    rp_pass_result_free(&r);
                    exit_code = 1;
                    goto done;
                }
                set->n++;
                if (!have_first) {
                    /* keep the first pass's memory figures; drop its histograms */
                    first = r;
                    for (uint32_t k = 0; k < r.nthr; k++)
                        for (unsigned kk = 0; kk < RK_COUNT; kk++)
                            rp_hist_free(&first.thr[k].h[kk]);
                    for (unsigned kk = 0; kk < RK_COUNT; kk++)
                        rp_hist_free(&first.merged[kk]);
                    have_first = 1;
                } else {
                    rp_pass_result_free(&r);
                }
            }
        }
        if (is_dmm && o.heapmap && !hm.taken && !verify_failed && exit_code == 0) {
            /* A multi-threaded interleaving may never reach the trace's peak:
             * take the map from one extra sequential replay in trace order
             * (untimed, not counted in any figure). */
            rp_pass_opts po;
            rp_pass_result r;
            dmmb_fini(&db);
            if (rp_plan_flatten(&plan) == 0 && dmmb_init(&db, (size_t)o.arena) == DMM_OK) {
                memset(&po, 0, sizeof po);
                po.sequential = 1;
                po.sample_mem = 1;
                hm.db = &db;
                hm.sequential = 1;
                po.on_trace_peak = rpx_heapmap_at_peak;
                po.peak_ctx = &hm;
                (void)rp_run_pass(&plan, rb, &po, &r);
                rp_pass_result_free(&r);
            }
        }
        if (is_dmm)
            dmmb_unmap(&db);
    }
    if (verify_failed) {
        fprintf(stderr, PROG ": verify failed at operation %" PRIu64 ": %s\n", verify_index, verify_msg);
        exit_code = 4;
    }

    /* ---- figures ---- */
    {
        rp_mem at = first.at_peak, pk = first.peak;
        uint64_t live_peak = first.run_peak_live ? first.run_peak_live : plan.peak_live;
        uint64_t peak_fp = pk.footprint;
        const char *peak_method = "sampled";
        const char *fp_source = is_dmm ? "dmm extent (regions minus untouched top blocks, control block included)"
                                       : sb.footprint_source;
        struct rusage ru;
        uint64_t maxrss = 0;
        uint64_t heap_errors = is_dmm ? atomic_load(&db.heap_errors) : 0;
        double f3 = ratio(at.footprint, at.live), f4 = ratio(peak_fp, live_peak);
        int64_t internal = 0, external = 0;
        int have_int = 0, have_ext = 0;
        if (is_dmm && have_hstats) {
            peak_fp = hstats.peak_extent;
            peak_method = "exact (heap statistics peak_extent)";
            f4 = ratio(peak_fp, live_peak);
        }
        if (at.valid && at.used_known) {
            internal = (int64_t)at.used - (int64_t)at.live;
            have_int = 1;
            if (at.meta_known || !is_dmm) {
                external = (int64_t)at.footprint - (int64_t)at.used - (int64_t)(at.meta_known ? at.meta : 0);
                have_ext = 1;
            }
        }
        if (getrusage(RUSAGE_SELF, &ru) == 0)
            maxrss = (uint64_t)ru.ru_maxrss * 1024u;

        if (!o.quiet) {
            FILE *f = hout;
            fprintf(f, "trace      %s  (hash %016" PRIx64 ", %" PRIu64 " ops + %" PRIu64 " syncs, %u thread%s%s)\n",
                    o.trace, hash, plan.ops, plan.syncs, plan.threads, plan.threads == 1 ? "" : "s",
                    plan.syncs_derived ? ", syncs derived" : "");
            fprintf(f, "           peak live %" PRIu64 " B in %" PRIu64 " objects\n", plan.peak_live,
                    plan.peak_objects);
            if (is_dmm)
                fprintf(f, "allocator  dmm:%s\n           %s%s%s\n", db.spec, cfgtext,
                        db.stats_forced ? "  [stats raised to counters]" : "",
                        db.lock_forced ? "  [lock=mutex for threads]" : "");
            else
                fprintf(f, "allocator  system: %s (malloc from %s)%s%s\n", sb.detected, sb.malloc_object,
                        sb.note[0] ? "\n           note: " : "", sb.note);
            if (o.min_arena) {
                if (mr.found)
                    fprintf(f,
                            "min arena  %" PRIu64 " B  (%" PRIu64 " B fails; %" PRIu64
                            " replays; search range %" PRIu64 "..%" PRIu64 ")\n",
                            mr.bytes, mr.bytes - mr.gran, mr.replays, mr.lower, mr.upper);
                else
                    fprintf(f, "min arena  not found: %s\n", mr.why);
            } else {
                if (is_dmm)
                    fprintf(f, "arena      %" PRIu64 " B (mmap, prefaulted)\n", o.arena);
                if (o.timing) {
                    fprintf(f, "\ntiming (%s, empty bracket %" PRIu64 " subtracted, %.3f GHz; median of %u rep%s)\n",
                            RP_CLOCK_UNIT, bracket, tps / 1e9, o.reps, o.reps == 1 ? "" : "s");
                    fprintf(f, "  %-5s %-8s %10s %10s %8s %8s %10s\n", "pass", "kind", "count", "avg", "p50", "p99",
                            "max");
                    print_pass(f, "cold", &cold, RP_CLOCK_UNIT);
                    print_pass(f, "warm", &warm, RP_CLOCK_UNIT);
                }
                {
                    pass_sum m;
                    unsigned rep;
                    median_of(&cold, &m, &rep);
                    fprintf(f, "wall       cold %.3f ms (%" PRIu64 " preemptions)", (double)m.wall_ns / 1e6, m.nivcsw);
                    if (warm.n) {
                        median_of(&warm, &m, &rep);
                        fprintf(f, ", warm %.3f ms (%" PRIu64 ")", (double)m.wall_ns / 1e6, m.nivcsw);
                    }
                    fputc('\n', f);
                }
                fprintf(f, "\nmemory     footprint = %s\n", fp_source);
                fprintf(f, "  peak live requested  %12" PRIu64 " B\n", live_peak);
                fprintf(f, "  peak footprint       %12" PRIu64 " B  (%s)\n", peak_fp, peak_method);
                if (at.valid)
                    fprintf(f, "  at peak live         %12" PRIu64 " B footprint for %" PRIu64 " B live\n",
                            at.footprint, at.live);
                if (have_int)
                    fprintf(f, "  internal waste       %12" PRId64 " B  (used blocks - requested, at peak)\n",
                            internal);
                if (have_ext)
                    fprintf(f, "  external waste       %12" PRId64 " B  (footprint - used - metadata, at peak)\n",
                            external);
                if (at.meta_known)
                    fprintf(f, "  metadata             %12" PRIu64 " B\n", at.meta);
                fprintf(f, "  peak RSS (pass)      %12" PRIu64 " B%s\n", hwm_after,
                        hwm_reset ? "" : "  (VmHWM could not be reset: process peak)");
                fprintf(f, "fragmentation  #3 %.3f   #4 %.3f\n", f3, f4);
                fprintf(f, "failed     %" PRIu64 " allocation%s, %" PRIu64 " skipped op%s%s\n", first.failed,
                        first.failed == 1 ? "" : "s", first.skipped, first.skipped == 1 ? "" : "s",
                        heap_errors ? "  (heap reported misuse!)" : "");
                fprintf(f, "verify     %s\n", !o.verify ? "off" : verify_failed ? "FAIL" : "pass");
            }
        }

        if (o.timeline && !o.min_arena &&
            rpx_timeline_write(o.timeline, &tl, o.trace, hash, is_dmm ? o.alloc : sb.detected, fp_source, plan.ops,
                               plan.peak_live)) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", o.timeline, strerror(errno));
            if (!exit_code)
                exit_code = 1;
        }
        if (o.heapmap && is_dmm && !o.min_arena &&
            rpx_heapmap_write(o.heapmap, &hm, o.trace, hash, o.alloc, cfgtext, o.arena, plan.peak_live,
                              plan.peak_index)) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", o.heapmap, strerror(errno));
            if (!exit_code)
                exit_code = 1;
        }

        if (o.json) {
            FILE *jf = !strcmp(o.json, "-") ? stdout : fopen(o.json, "w");
            tj j;
            char hx[32];
            if (!jf) {
                fprintf(stderr, PROG ": cannot write %s: %s\n", o.json, strerror(errno));
                if (!exit_code)
                    exit_code = 1;
                goto done;
            }
            tj_init(&j, jf);
            tj_obj(&j, NULL);
            tj_str(&j, "schema", "dmm-replay/1");
            tc_json_machine(&j, "machine");
            tc_json_build(&j, "build");
            tj_obj(&j, "trace");
            tj_str(&j, "path", o.trace);
            snprintf(hx, sizeof hx, "%016" PRIx64, hash);
            tj_str(&j, "hash", hx);
            tj_u64(&j, "ops", plan.ops);
            tj_u64(&j, "syncs", plan.syncs);
            tj_bool(&j, "syncs_derived", plan.syncs_derived);
            tj_u64(&j, "threads", plan.threads);
            tj_u64(&j, "objects", plan.nslots);
            tj_u64(&j, "peak_live", plan.peak_live);
            tj_u64(&j, "peak_objects", plan.peak_objects);
            tj_u64(&j, "peak_index", plan.peak_index);
            tj_obj(&j, "op_counts");
            for (unsigned k = DMM_T_MALLOC; k <= DMM_T_SYNC; k++)
                tj_u64(&j, tc_kind_name(k), plan.kind_count[k]);
            tj_obj_end(&j);
            tj_obj_end(&j);

            tj_obj(&j, "allocator");
            tj_str(&j, "kind", is_dmm ? "dmm" : "system");
            if (is_dmm) {
                tj_str(&j, "name", db.spec);
                tj_str(&j, "config", cfgtext);
                tj_str(&j, "detected", "dmm");
                tj_str(&j, "stats", stats_name(db.cfg.stats));
                tj_bool(&j, "stats_forced", db.stats_forced);
                tj_bool(&j, "lock_forced", db.lock_forced);
                tj_str(&j, "variant", db.variant ? db.variant : "");
                tj_u64(&j, "arena", o.arena);
                tj_bool(&j, "prefaulted", !o.min_arena);
                tj_u64(&j, "heap_errors", heap_errors);
            } else {
                tj_str(&j, "name", sb.detected);
                tj_str(&j, "detected", sb.detected);
                tj_str(&j, "malloc_object", sb.malloc_object);
                tj_str(&j, "note", sb.note[0] ? sb.note : NULL);
            }
            tj_obj_end(&j);

            if (o.min_arena) {
                tj_obj(&j, "min_arena");
                tj_bool(&j, "found", mr.found);
                if (mr.found)
                    tj_u64(&j, "bytes", mr.bytes);
                else
                    tj_null(&j, "bytes");
                tj_u64(&j, "granule", mr.gran);
                tj_u64(&j, "replays", mr.replays);
                tj_u64(&j, "lower_bound", mr.lower);
                tj_u64(&j, "upper_bound", mr.upper);
                tj_str(&j, "method", "bisection over arena sizes in granules; sequential replay in trace order; "
                                     "stops at the first failed allocation");
                if (!mr.found)
                    tj_str(&j, "reason", mr.why);
                tj_obj_end(&j);
                tj_null(&j, "timing");
                tj_null(&j, "memory");
                tj_null(&j, "fragmentation");
            } else {
                tj_obj(&j, "timing");
                tj_bool(&j, "enabled", o.timing);
                tj_str(&j, "clock", o.timing ? RP_CLOCK_KIND : "none");
                tj_str(&j, "bracket", o.timing ? RP_CLOCK_BRACKET : NULL);
                tj_str(&j, "unit", o.timing ? RP_CLOCK_UNIT : NULL);
                tj_u64(&j, "bracket_cost", bracket);
                tj_dbl(&j, "ticks_per_sec", o.timing ? tps : 0.0 / 0.0);
                tj_u64(&j, "reps", o.reps);
                tj_str(&j, "statistic", "median over reps of each figure; per-thread figures from the median-wall rep");
                tj_str(&j, "percentiles", "exact below 1024 ticks, else within 1/64 (log-linear histogram)");
                tj_str(&j, "warm_means", is_dmm ? "dmm_heap_reset, then the same replay"
                                                : "a further replay in the same process (the allocator is not fresh)");
                json_pass(&j, "cold", &cold, o.timing);
                json_pass(&j, "warm", &warm, o.timing);
                if (o.hist && o.timing) {
                    /* --hist: every rep of a pass kind summed; [lo, width, count] per non-empty bucket */
                    tj_obj(&j, "histograms");
                    tj_str(&j, "unit", RP_CLOCK_UNIT);
                    tj_str(&j, "buckets", "[lowest value, width, count]; summed over the reps of each pass");
                    if (cold.n)
                        rpx_json_hists(&j, "cold", hacc[0]);
                    if (warm.n)
                        rpx_json_hists(&j, "warm", hacc[1]);
                    tj_obj_end(&j);
                }
                tj_obj_end(&j);

                tj_obj(&j, "memory");
                tj_str(&j, "footprint_source", fp_source);
                tj_str(&j, "used_source", is_dmm ? "dmm used blocks (headers and tail words included)"
                                                 : sb.used_source);
                tj_str(&j, "meta_source", is_dmm ? "dmm control block + region descriptors and sentinels"
                                                 : sb.meta_source);
                tj_u64(&j, "peak_live_requested", plan.peak_live);
                tj_u64(&j, "run_peak_live", first.run_peak_live);
                tj_u64(&j, "peak_footprint", peak_fp);
                tj_str(&j, "peak_footprint_method", peak_method);
                tj_u64(&j, "footprint_end", first.end.footprint);
                if (is_dmm) {
                    tj_u64(&j, "arena", o.arena);
                    tj_u64(&j, "regions_peak", have_hstats ? hstats.peak_footprint : 0);
                    tj_u64(&j, "peak_block_bytes", have_hstats ? hstats.peak_block_bytes : 0);
                }
                json_mem(&j, "at_peak_live", &first.at_peak);
                json_mem(&j, "peak", &first.peak);
                json_mem(&j, "end", &first.end);
                json_mem(&j, "baseline", &first.baseline);
                tj_bool(&j, "net_of_baseline", rb->subtract_baseline);
                tj_u64(&j, "samples", first.samples);
                tj_u64(&j, "sample_ns", first.sample_ns);
                tj_obj(&j, "rss");
                tj_u64(&j, "before_pass", rss_before);
                tj_u64(&j, "peak_pass", hwm_after);
                tj_bool(&j, "peak_pass_reset", hwm_reset);
                tj_u64(&j, "vm_hwm", rp_hwm_bytes());
                tj_u64(&j, "ru_maxrss", maxrss);
                tj_obj_end(&j);
                if (have_hstats) {
                    char buf[4096];
                    size_t n = dmm_heap_stats_json(&hstats, buf, sizeof buf);
                    if (n < sizeof buf)
                        tj_raw(&j, "heap_stats", buf);
                }
                tj_obj_end(&j);

                tj_obj(&j, "fragmentation");
                tj_str(&j, "definition", "Johnstone & Wilson: #3 = footprint / live at the peak-live sample, "
                                         "#4 = peak footprint / peak live");
                tj_dbl(&j, "frag3", f3);
                tj_dbl(&j, "frag4", f4);
                tj_u64(&j, "peak_live", live_peak);
                tj_u64(&j, "live_at_sample", at.live);
                tj_u64(&j, "footprint_at_peak_live", at.footprint);
                tj_u64(&j, "peak_footprint", peak_fp);
                if (have_int)
                    tj_i64(&j, "internal_waste", internal);
                else
                    tj_null(&j, "internal_waste");
                if (have_ext)
                    tj_i64(&j, "external_waste", external);
                else
                    tj_null(&j, "external_waste");
                if (at.meta_known)
                    tj_u64(&j, "metadata", at.meta);
                else
                    tj_null(&j, "metadata");
                tj_obj_end(&j);
            }
            tj_u64(&j, "failed", o.min_arena ? 0 : first.failed);
            tj_u64(&j, "skipped", o.min_arena ? 0 : first.skipped);
            if (!o.min_arena && first.first_failed_index != UINT64_MAX)
                tj_u64(&j, "first_failed_index", first.first_failed_index);
            tj_str(&j, "verify", !o.verify ? "off" : verify_failed ? "fail" : "pass");
            if (verify_failed) {
                tj_obj(&j, "verify_error");
                tj_u64(&j, "index", verify_index);
                tj_str(&j, "message", verify_msg);
                tj_obj_end(&j);
            }
            tj_obj_end(&j);
            if (tj_finish(&j) && !exit_code)
                exit_code = 1;
            if (jf != stdout && fclose(jf) && !exit_code) {
                fprintf(stderr, PROG ": error writing %s\n", o.json);
                exit_code = 1;
            }
        }
    }

done:
    rpx_timeline_free(&tl);
    rpx_heapmap_free(&hm);
    for (unsigned w = 0; w < 2; w++)
        for (unsigned kk = 0; kk < RK_COUNT; kk++)
            rp_hist_free(&hacc[w][kk]);
    if (have_first)
        rp_pass_result_free(&first);
    for (unsigned i = 0; i < cold.n; i++)
        free(cold.s[i].thr);
    for (unsigned i = 0; i < warm.n; i++)
        free(warm.s[i].thr);
    free(cold.s);
    free(warm.s);
    if (is_dmm && db.arena)
        dmmb_unmap(&db);
    rp_plan_free(&plan);
    dmm_trace_free(&t);
    return exit_code;
}

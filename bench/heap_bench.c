/*
 * bench/heap_bench.c - per-operation cost of the heap presets on the bundled
 * synthetic workloads, with glibc malloc as a reference column.
 *
 *   heap_bench [--workload NAME|all] [--preset NAME|all] [--reps N]
 *              [--json FILE] [--quick] [--ops-only] [--dry] ...
 *   heap_bench --help   for every option
 *
 * Every target is driven through the dmm_allocator interface (common.h).
 *
 * Method (see bench/README.md):
 *  - every operation is bracketed by a fenced TSC read (bench_clock.h); the
 *    cost of an empty bracket (minimum of many) is subtracted;
 *  - per workload, the targets run one after another inside each repetition
 *    (interleaved, the starting target rotating), each with a cold pass (a
 *    fresh heap on the prefaulted arena) and a warm pass (the same heap after
 *    dmm_heap_reset);
 *  - per pass and op kind: average, p50, p99 and max of the samples; the
 *    reported figure is the median over the repetitions (and the worst max);
 *  - a separate untimed pass per workload and preset measures footprint and
 *    search steps (identical to the cold pass: everything is deterministic).
 *
 * Benchmark code: hosted C11 plus POSIX.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_setaffinity, sched_getcpu */
#endif
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

#include "bench_clock.h"
#include "dmm/heap.h"
#include "workloads/workload.h"

#ifndef BENCH_GIT_COMMIT
#define BENCH_GIT_COMMIT "unknown"
#endif
#ifndef BENCH_BUILD_TYPE
#define BENCH_BUILD_TYPE "unknown"
#endif
#ifndef BENCH_CFLAGS
#define BENCH_CFLAGS "unknown"
#endif

#if defined(__clang__)
#define BENCH_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define BENCH_COMPILER "gcc " __VERSION__
#else
#define BENCH_COMPILER "unknown"
#endif

#define SCHEMA_NAME "dmmkit.heap_bench"
#define SCHEMA_VERSION 1

enum { K_MALLOC = 0, K_FREE, K_REALLOC, NKINDS };
static const char *const kind_names[NKINDS] = {"malloc", "free", "realloc"};
enum { P_COLD = 0, P_WARM, NPASSES };
static const char *const pass_names[NPASSES] = {"cold", "warm"};

/* ---- targets --------------------------------------------------------- */

/* Every target is driven through the dmm_allocator interface (common.h):
 * a heap through dmm_heap_as_allocator, glibc through the wrappers below. */
typedef struct target {
    char name[32];
    bool is_dmm;
    dmm_heap_config cfg; /* is_dmm only */
    char cfg_text[768];
} target;

static void *libc_malloc(void *ctx, size_t n)
{
    (void)ctx;
    return malloc(n);
}
static void libc_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}
static void *libc_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return realloc(p, n);
}

static void libc_allocator(dmm_allocator *a)
{
    memset(a, 0, sizeof *a);
    a->name = "glibc";
    a->malloc = libc_malloc;
    a->free = libc_free;
    a->realloc = libc_realloc;
}

/* One out-of-line entry per op kind, identical for every target.  Callgrind
 * measures their inclusive cost (scripts/bench.sh), so keep them extern and
 * never inlined; they add the same few instructions to every target. */
__attribute__((noinline, used)) void *bench_op_malloc(const dmm_allocator *a, size_t n)
{
    return a->malloc(a->ctx, n);
}
__attribute__((noinline, used)) void bench_op_free(const dmm_allocator *a, void *p)
{
    a->free(a->ctx, p);
}
__attribute__((noinline, used)) void *bench_op_realloc(const dmm_allocator *a, void *p, size_t n)
{
    return a->realloc(a->ctx, p, n);
}

/* The configuration every preset runs with in the timing benchmark: the
 * preset's policies, no lock, counters, no hardening (speed). */
static dmm_heap_config bench_config(dmm_heap_preset p)
{
    dmm_heap_config c = dmm_heap_preset_config(p);
    c.lock = DMM_LOCK_NONE;
    c.stats = DMM_STATS_COUNTERS;
    c.harden = DMM_HARDEN_OFF;
    c.poison = false;
    return c;
}

/* ---- options ----------------------------------------------------------- */

typedef struct options {
    const char *workloads; /* comma list or "all" */
    const char *presets;   /* comma list, "all", "glibc" */
    const char *json;
    const char *config;    /* --config TEXT: an extra target "custom" */
    const char *config_name;
    unsigned reps;
    bool quick, ops_only, dry, print_config, list, no_glibc, self_test, fail_on_failed;
    const char *dump;
    uint64_t seed;
    size_t arena;
    bool pin;
    double outlier_us;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: heap_bench [options]\n"
            "  --workload NAME[,NAME..]|all  workloads to run (default all; --list shows them)\n"
            "  --preset NAME[,NAME..]|all    dlmalloc tlsf halffit firstfit p2012 glibc none (default all)\n"
            "  --config TEXT                 add a target with this heap config (dmm_heap_config_parse\n"
            "                                syntax, applied over preset=tlsf,lock=none,stats=counters,\n"
            "                                harden=off); named by --config-name (default custom)\n"
            "  --no-glibc                    leave out the glibc reference column\n"
            "  --reps N                      repetitions (default 5; --quick: 3)\n"
            "  --json FILE                   write the results as JSON\n"
            "  --quick                       fewer repetitions (for the demo)\n"
            "  --ops-only                    run each workload once per target, no timing (for callgrind)\n"
            "  --dry                         like --ops-only but perform no heap operation (baseline)\n"
            "  --seed N                      workload seed (default %u)\n"
            "  --arena-mb N                  arena size for the heaps (default 64)\n"
            "  --no-pin                      do not pin the process to its current CPU\n"
            "  --outlier-us X                samples above X microseconds count as preemption outliers,\n"
            "                                excluded from avg/p50/p99/max (default 50; 0 = keep all)\n"
            "  --print-config                print each target's config text and exit\n"
            "  --list                        list the workloads and exit\n"
            "  --dump NAME                   print workload NAME in text form and exit\n"
            "  --self-test                   check the workload generators and exit (0 = pass)\n"
            "  --fail-on-failed              exit 1 if any allocation returned NULL\n",
            (unsigned)WL_DEFAULT_SEED);
}

static bool list_has(const char *list, const char *name)
{
    if (!list || strcmp(list, "all") == 0)
        return true;
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

/* ---- small utilities --------------------------------------------------- */

static void die(const char *fmt, ...);

/* Every name of a comma list must be accepted by ok(); dies otherwise. */
static void check_list(const char *what, const char *list, bool (*ok)(const char *name))
{
    char buf[256];
    const char *p = list;
    while (p && *p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len >= sizeof buf)
            len = sizeof buf - 1;
        memcpy(buf, p, len);
        buf[len] = 0;
        if (!ok(buf))
            die("unknown %s '%s' (see --help / --list)", what, buf);
        p = e ? e + 1 : NULL;
    }
}

static bool preset_ok(const char *n)
{
    dmm_heap_preset p;
    return !strcmp(n, "all") || !strcmp(n, "none") || !strcmp(n, "glibc") ||
           dmm_heap_preset_from_name(n, &p) == DMM_OK;
}

static bool workload_ok(const char *n) { return !strcmp(n, "all") || wl_find(n) != NULL; }

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("heap_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s ? s : 1);
    if (!p)
        die("out of memory");
    return p;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- timer calibration --------------------------------------------------- */

static uint64_t calibrate_bracket(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 20000; i++) {
        uint64_t a = bench_ticks();
        uint64_t b = bench_ticks();
        if (b - a < best)
            best = b - a;
    }
    return best;
}

/* Average step by which the counter advances when it changes, read with no
 * fences in a tight loop (some CPUs and hypervisors advance the TSC in coarse
 * steps: single samples are then quantised to that step). */
static double tick_granularity(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* smallest average step over 20 short windows (a window that gets
     * preempted misses changes and over-estimates the step) */
    double best = 0.0;
    for (int w = 0; w < 20; w++) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        uint64_t first = ((uint64_t)hi << 32) | lo, prev = first, changes = 0;
        for (int i = 0; i < 10000; i++) {
            __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
            uint64_t now = ((uint64_t)hi << 32) | lo;
            changes += now != prev;
            prev = now;
        }
        double step = changes ? (double)(prev - first) / (double)changes : 0.0;
        if (step > 0 && (best == 0.0 || step < best))
            best = step;
    }
    return best;
#else
    struct timespec r;
    return clock_getres(CLOCK_MONOTONIC, &r) == 0 ? (double)r.tv_sec * 1e9 + (double)r.tv_nsec : 0.0;
#endif
}

static double estimate_tick_hz(double seconds)
{
    double t0 = now_sec();
    uint64_t c0 = bench_ticks();
    while (now_sec() - t0 < seconds) {
    }
    double t1 = now_sec();
    uint64_t c1 = bench_ticks();
    return (double)(c1 - c0) / (t1 - t0);
}

/* ---- per-pass statistics --------------------------------------------------- */

/* Figures of one pass and op kind.  Samples above the outlier threshold
 * (default 50 us) are taken for preemptions and interrupts on this shared
 * machine: they are left out of avg/p50/p99/max and counted in `outliers`;
 * avg_raw and max_raw keep them. */
typedef struct kstat {
    size_t count;
    double avg, p50, p99, max;
    double avg_raw, max_raw, outliers;
} kstat;

typedef struct samples {
    uint32_t *v[NKINDS];
    size_t n[NKINDS];
    size_t cap[NKINDS];
} samples;

static inline void rec(samples *s, int k, uint64_t d, uint64_t overhead, uint32_t *opmin)
{
    uint64_t c = d > overhead ? d - overhead : 0;
    if (c > UINT32_MAX)
        c = UINT32_MAX;
    s->v[k][s->n[k]++] = (uint32_t)c;
    if ((uint32_t)c < *opmin)
        *opmin = (uint32_t)c;
}

static kstat summarise(uint32_t *v, size_t n, uint64_t outlier)
{
    kstat k;
    memset(&k, 0, sizeof k);
    k.count = n;
    if (n == 0)
        return k;
    qsort(v, n, sizeof *v, cmp_u32);
    double sum = 0, raw = 0;
    size_t m = n; /* samples kept */
    while (outlier && m > 1 && v[m - 1] > outlier)
        m--;
    for (size_t i = 0; i < n; i++) {
        raw += v[i];
        if (i < m)
            sum += v[i];
    }
    k.avg = sum / (double)m;
    k.avg_raw = raw / (double)n;
    k.p50 = v[(m - 1) / 2];
    size_t i99 = (m * 99 + 99) / 100; /* ceil(0.99 m) */
    k.p99 = v[(i99 ? i99 : 1) - 1];
    k.max = v[m - 1];
    k.max_raw = v[n - 1];
    k.outliers = (double)(n - m);
    return k;
}

/* ---- replay ---------------------------------------------------------------- */

typedef struct counts {
    uint64_t ops[NKINDS];
    uint64_t failed; /* allocations / reallocs that returned NULL */
} counts;

/* Timed replay.  ptrs[] maps ids to pointers and must be all NULL.
 * opmin[i] keeps the smallest cost op i has had over the repetitions: the
 * replay is deterministic, so the per-op minimum strips the noise that
 * preemption, interrupts and hypervisor exits add to single samples. */
static void replay_timed(const wl_trace *w, const dmm_allocator *a, void **ptrs, samples *s, uint64_t overhead,
                         counts *c, uint32_t *opmin)
{
    for (int k = 0; k < NKINDS; k++)
        s->n[k] = 0;
    for (size_t i = 0; i < w->n_ops; i++) {
        const wl_op *o = &w->ops[i];
        uint64_t t0, t1;
        void *p;
        switch (o->kind) {
        case WL_ALLOC:
            t0 = bench_ticks();
            p = bench_op_malloc(a, o->size);
            t1 = bench_ticks();
            rec(s, K_MALLOC, t1 - t0, overhead, &opmin[i]);
            c->ops[K_MALLOC]++;
            ptrs[o->id] = p;
            if (p)
                *(volatile unsigned char *)p = (unsigned char)o->id; /* touch, as a program would */
            else
                c->failed++;
            break;
        case WL_FREE:
            p = ptrs[o->id];
            if (!p)
                break; /* its allocation failed */
            t0 = bench_ticks();
            bench_op_free(a, p);
            t1 = bench_ticks();
            rec(s, K_FREE, t1 - t0, overhead, &opmin[i]);
            c->ops[K_FREE]++;
            ptrs[o->id] = NULL;
            break;
        case WL_REALLOC:
            p = ptrs[o->id];
            if (!p)
                break;
            t0 = bench_ticks();
            p = bench_op_realloc(a, p, o->size);
            t1 = bench_ticks();
            rec(s, K_REALLOC, t1 - t0, overhead, &opmin[i]);
            c->ops[K_REALLOC]++;
            if (p) {
                ptrs[o->id] = p;
                *(volatile unsigned char *)p = (unsigned char)o->id;
            } else {
                c->failed++;
            }
            break;
        }
    }
}

/* Untimed replay (--ops-only, --dry).  With dry set no heap function runs:
 * the bookkeeping is the same, so (ops-only - dry) isolates the heap. */
static void replay_plain(const wl_trace *w, const dmm_allocator *a, void **ptrs, bool dry, counts *c)
{
    for (size_t i = 0; i < w->n_ops; i++) {
        const wl_op *o = &w->ops[i];
        void *p;
        switch (o->kind) {
        case WL_ALLOC:
            p = dry ? (void *)(uintptr_t)(o->id * 16u + 16u) : bench_op_malloc(a, o->size);
            c->ops[K_MALLOC]++;
            ptrs[o->id] = p;
            if (!p)
                c->failed++;
            else if (!dry)
                *(volatile unsigned char *)p = (unsigned char)o->id;
            break;
        case WL_FREE:
            p = ptrs[o->id];
            if (!p)
                break;
            if (!dry)
                bench_op_free(a, p);
            c->ops[K_FREE]++;
            ptrs[o->id] = NULL;
            break;
        case WL_REALLOC:
            p = ptrs[o->id];
            if (!p)
                break;
            if (!dry)
                p = bench_op_realloc(a, p, o->size);
            c->ops[K_REALLOC]++;
            if (p) {
                ptrs[o->id] = p;
                if (!dry)
                    *(volatile unsigned char *)p = (unsigned char)o->id;
            } else {
                c->failed++;
            }
            break;
        }
    }
}

/* ---- footprint pass ------------------------------------------------------- */

typedef struct footprint {
    bool valid;
    size_t peak_requested;   /* own tracking, successful requests only */
    size_t peak_block_bytes; /* stats */
    size_t hwm;              /* highest payload end ever handed out, from the
                                arena start (control block included) */
    size_t extent_at_peak;   /* end of the highest non-free block when the
                                live requested bytes peaked */
    size_t holes_at_peak;    /* free bytes below that extent */
    size_t quick_at_peak;    /* bytes parked in quick lists then */
    size_t block_at_peak;    /* live_block_bytes then */
    size_t free_bytes_at_peak; /* stats.free_bytes then (whole arena) */
    size_t stats_extent_at_peak; /* stats.extent then (the heap's own count) */
    size_t stats_peak_extent;    /* stats.peak_extent at the end */
    uint64_t failed;
    uint64_t search_steps, search_max, malloc_count, realloc_count, free_count, sweeps;
    size_t ctrl_and_region_overhead; /* first block's offset from the arena */
} footprint;

typedef struct walk_acc {
    const char *base;
    size_t extent, holes, pending_free, quick;
    size_t first_block;
} walk_acc;

static int walk_cb(void *ctx, const dmm_heap_block_info *b)
{
    walk_acc *a = ctx;
    size_t start = (size_t)((const char *)b->block - a->base);
    size_t end = start + b->block_size;
    if (a->first_block == SIZE_MAX || start < a->first_block)
        a->first_block = start;
    if (b->state == DMM_BLOCK_TOP) {
        /* the untouched end of the region: neither used nor a hole */
    } else if (b->state == DMM_BLOCK_FREE) {
        a->pending_free += b->block_size;
    } else {
        if (b->state == DMM_BLOCK_QUICK)
            a->quick += b->block_size;
        a->holes += a->pending_free; /* free blocks below a used one are holes */
        a->pending_free = 0;
        if (end > a->extent)
            a->extent = end;
    }
    return 0;
}

static footprint footprint_pass(const wl_trace *w, const target *t, unsigned char *arena, size_t arena_size,
                                void **ptrs)
{
    footprint f;
    memset(&f, 0, sizeof f);
    dmm_heap *h = NULL;
    dmm_status st = dmm_heap_init(&h, arena, arena_size, &t->cfg);
    if (st != DMM_OK)
        die("footprint pass: dmm_heap_init(%s): %s", t->name, dmm_status_str(st));
    size_t *req = xcalloc(w->n_ids, sizeof *req);
    size_t live = 0;
    for (size_t i = 0; i < w->n_ops; i++) {
        const wl_op *o = &w->ops[i];
        void *p = NULL;
        switch (o->kind) {
        case WL_ALLOC:
            p = dmm_heap_malloc(h, o->size);
            ptrs[o->id] = p;
            if (p) {
                req[o->id] = o->size;
                live += o->size;
            } else {
                f.failed++;
            }
            break;
        case WL_FREE:
            if (ptrs[o->id]) {
                dmm_heap_free(h, ptrs[o->id]);
                live -= req[o->id];
                req[o->id] = 0;
                ptrs[o->id] = NULL;
            }
            break;
        case WL_REALLOC:
            if (ptrs[o->id]) {
                p = dmm_heap_realloc(h, ptrs[o->id], o->size);
                if (p) {
                    ptrs[o->id] = p;
                    live = live - req[o->id] + o->size;
                    req[o->id] = o->size;
                } else {
                    f.failed++;
                }
            }
            break;
        }
        if (p) {
            size_t end = (size_t)((unsigned char *)p - arena) + dmm_heap_usable_size(h, p);
            if (end > f.hwm)
                f.hwm = end;
        }
        if (live > f.peak_requested)
            f.peak_requested = live;
        if (i == w->peak_index) {
            dmm_heap_stats s = dmm_heap_get_stats(h);
            walk_acc a = {(const char *)arena, 0, 0, 0, 0, SIZE_MAX};
            dmm_heap_walk(h, walk_cb, &a);
            f.extent_at_peak = a.extent;
            f.holes_at_peak = a.holes;
            f.quick_at_peak = a.quick;
            f.block_at_peak = s.live_block_bytes;
            f.free_bytes_at_peak = s.free_bytes;
            f.stats_extent_at_peak = s.extent;
            f.ctrl_and_region_overhead = a.first_block == SIZE_MAX ? 0 : a.first_block;
        }
    }
    dmm_heap_stats s = dmm_heap_get_stats(h);
    f.peak_block_bytes = s.peak_block_bytes;
    f.stats_peak_extent = s.peak_extent;
    f.search_steps = s.search_steps;
    f.search_max = s.search_max;
    f.malloc_count = s.malloc_count;
    f.realloc_count = s.realloc_count;
    f.free_count = s.free_count;
    f.sweeps = s.sweep_count;
    dmm_heap_destroy(h);
    free(req);
    f.valid = true;
    return f;
}

/* ---- context -------------------------------------------------------------- */

static void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ' || *c == '\t')
                    c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, cap, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v)
{
    if (v != v)
        fputs("null", f);
    else
        fprintf(f, "%.6g", v);
}

/* ---- --self-test: the workload generators ------------------------------- */

static int st_fail(const char *wl, const char *what)
{
    fprintf(stderr, "self-test FAIL: %s: %s\n", wl, what);
    return 1;
}

static int self_test(uint64_t seed)
{
    int bad = 0;
    for (size_t i = 0; i < wl_count(); i++) {
        const wl_info *wi = wl_get(i);
        wl_trace a, b, c;
        if (wl_generate(wi->name, seed, &a) != 0) {
            bad |= st_fail(wi->name, "generation failed");
            continue;
        }
        if (wl_generate(wi->name, seed, &b) != 0) {
            bad |= st_fail(wi->name, "second generation failed");
            wl_release(&a);
            continue;
        }
        if (a.n_ops != b.n_ops || memcmp(a.ops, b.ops, a.n_ops * sizeof *a.ops) != 0)
            bad |= st_fail(wi->name, "not deterministic for a fixed seed");
        if (wl_validate(&a) != 0)
            bad |= st_fail(wi->name, "op list not well formed");
        if (a.n_alloc != a.n_free)
            bad |= st_fail(wi->name, "objects left live at the end");
        if (a.n_alloc + a.n_free + a.n_realloc != a.n_ops || a.peak_live == 0 || a.max_size == 0)
            bad |= st_fail(wi->name, "analysis inconsistent");
        /* seeded shapes must change with the seed */
        bool seeded = (strcmp(wi->group, "p2012") != 0 && strcmp(wi->group, "p2012-repeated") != 0) ||
                      strncmp(wi->name, "fast", 4) == 0;
        if (seeded && wl_generate(wi->name, seed + 1, &c) == 0) {
            if (c.n_ops == a.n_ops && memcmp(a.ops, c.ops, a.n_ops * sizeof *a.ops) == 0)
                bad |= st_fail(wi->name, "seed has no effect");
            wl_release(&c);
        }
        /* section-5.3 variants: same allocation order and sizes as the base
         * kernel, free points spread uniformly over the remaining time */
        if (strcmp(wi->group, "p2012-random-free") == 0) {
            char base[40];
            snprintf(base, sizeof base, "%s", wi->name);
            base[strcspn(base, "-")] = 0;
            wl_trace k;
            if (wl_generate(base, seed, &k) != 0) {
                bad |= st_fail(wi->name, "base kernel failed");
            } else {
                size_t x = 0, y = 0, moved = 0;
                while (x < k.n_ops || y < a.n_ops) {
                    while (x < k.n_ops && k.ops[x].kind == WL_FREE)
                        x++;
                    while (y < a.n_ops && a.ops[y].kind == WL_FREE)
                        y++;
                    if (x >= k.n_ops || y >= a.n_ops) {
                        if (x < k.n_ops || y < a.n_ops)
                            bad |= st_fail(wi->name, "allocation counts differ from the kernel");
                        break;
                    }
                    if (k.ops[x].kind != a.ops[y].kind || k.ops[x].id != a.ops[y].id ||
                        k.ops[x].size != a.ops[y].size) {
                        bad |= st_fail(wi->name, "allocation order or sizes differ from the kernel");
                        break;
                    }
                    if (x != y)
                        moved++;
                    x++;
                    y++;
                }
                if (moved == 0)
                    bad |= st_fail(wi->name, "no free point moved");
                /* mean relative free position in (alloc, end] should be ~0.5 */
                size_t *at = xcalloc(a.n_ids, sizeof *at);
                size_t pos = 0, m = a.n_alloc + a.n_realloc;
                double sum = 0;
                size_t n = 0;
                for (size_t j = 0; j < a.n_ops; j++) {
                    if (a.ops[j].kind != WL_FREE) {
                        at[a.ops[j].id] = pos++;
                    } else if (m > at[a.ops[j].id] + 1) {
                        /* freed after op pos-1: uniform over last..m-1 */
                        sum += (double)(pos - 1 - at[a.ops[j].id]) / (double)(m - 1 - at[a.ops[j].id]);
                        n++;
                    }
                }
                double mean = n ? sum / (double)n : 0;
                if (mean < 0.45 || mean > 0.55) {
                    char msg[96];
                    snprintf(msg, sizeof msg, "mean relative free point %.3f, expected ~0.5", mean);
                    bad |= st_fail(wi->name, msg);
                }
                free(at);
                wl_release(&k);
            }
        }
        printf("self-test %-12s %6zu ops, peak live %8zu B, %s\n", wi->name, a.n_ops, a.peak_live,
               bad ? "..." : "ok");
        wl_release(&a);
        wl_release(&b);
    }
    /* random number helpers */
    wl_rng r;
    wl_rng_seed(&r, seed);
    bool lo_hit = false, hi_oct = false;
    for (int i = 0; i < 200000; i++) {
        uint64_t v = wl_rng_logu(&r, 16, 16384);
        if (v < 16 || v > 16384) {
            bad |= st_fail("rng", "wl_rng_logu out of range");
            break;
        }
        lo_hit |= v < 32;
        hi_oct |= v >= 8192;
        uint64_t u = wl_rng_below(&r, 7);
        if (u >= 7) {
            bad |= st_fail("rng", "wl_rng_below out of range");
            break;
        }
    }
    if (!lo_hit || !hi_oct)
        bad |= st_fail("rng", "wl_rng_logu misses an end octave");
    printf("self-test %s\n", bad ? "FAILED" : "passed");
    return bad ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------ */

typedef struct result {
    /* [rep][pass][kind] */
    kstat *k;
    uint32_t *opmin[NPASSES]; /* per op index: minimum over repetitions */
    counts c[NPASSES];
    footprint fp;
    counts plain; /* --ops-only / --dry */
} result;

static kstat *rk(result *r, unsigned reps, unsigned rep, int pass, int kind)
{
    (void)reps;
    return &r->k[((size_t)rep * NPASSES + (size_t)pass) * NKINDS + (size_t)kind];
}

/* Median (and worst max) over the repetitions of one pass / kind. */
typedef struct agg {
    size_t count;
    double avg, p50, p99, max, max_worst, avg_min, avg_max;
    double avg_raw, max_raw, max_raw_worst, outliers;
} agg;

static agg aggregate(result *r, unsigned reps, int pass, int kind)
{
    agg a;
    memset(&a, 0, sizeof a);
    double *v = xcalloc(reps, sizeof *v);
#define MED(field, out)                                                                                      \
    do {                                                                                                     \
        for (unsigned i = 0; i < reps; i++)                                                                  \
            v[i] = rk(r, reps, i, pass, kind)->field;                                                        \
        qsort(v, reps, sizeof *v, cmp_dbl);                                                                  \
        out = (reps % 2) ? v[reps / 2] : 0.5 * (v[reps / 2 - 1] + v[reps / 2]);                              \
    } while (0)
    MED(avg, a.avg);
    a.avg_min = v[0];
    a.avg_max = v[reps - 1];
    MED(p50, a.p50);
    MED(p99, a.p99);
    MED(max, a.max);
    a.max_worst = v[reps - 1];
    MED(avg_raw, a.avg_raw);
    MED(max_raw, a.max_raw);
    a.max_raw_worst = v[reps - 1];
    MED(outliers, a.outliers);
#undef MED
    a.count = rk(r, reps, 0, pass, kind)->count;
    free(v);
    return a;
}

/* Statistics of the per-op minima of one pass and kind ("denoised"). */
static kstat denoised(const result *r, const wl_trace *w, int pass, int kind, uint32_t *scratch)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n_ops; i++) {
        int k = w->ops[i].kind == WL_ALLOC ? K_MALLOC : w->ops[i].kind == WL_FREE ? K_FREE : K_REALLOC;
        if (k == kind && r->opmin[pass][i] != UINT32_MAX) /* skipped ops (failed allocs) stay at MAX */
            scratch[n++] = r->opmin[pass][i];
    }
    return summarise(scratch, n, 0);
}

static const char *human_bytes(size_t b, char *buf, size_t cap)
{
    if (b >= (size_t)10 << 20)
        snprintf(buf, cap, "%.1f MiB", (double)b / 1048576.0);
    else if (b >= (size_t)10 << 10)
        snprintf(buf, cap, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, cap, "%zu B", b);
    return buf;
}

static double ratio(double a, double b) { return b > 0 ? a / b : (double)NAN; }

int main(int argc, char **argv)
{
    options o;
    memset(&o, 0, sizeof o);
    o.workloads = "all";
    o.presets = "all";
    o.reps = 0;
    o.seed = WL_DEFAULT_SEED;
    o.arena = (size_t)64 << 20;
    o.pin = true;
    o.config_name = "custom";
    o.outlier_us = 50;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT() (i + 1 < argc ? argv[++i] : (die("%s needs a value", a), (char *)NULL))
        if (!strcmp(a, "--workload") || !strcmp(a, "--workloads"))
            o.workloads = NEXT();
        else if (!strcmp(a, "--preset") || !strcmp(a, "--presets"))
            o.presets = NEXT();
        else if (!strcmp(a, "--reps"))
            o.reps = (unsigned)strtoul(NEXT(), NULL, 10);
        else if (!strcmp(a, "--json"))
            o.json = NEXT();
        else if (!strcmp(a, "--config"))
            o.config = NEXT();
        else if (!strcmp(a, "--config-name"))
            o.config_name = NEXT();
        else if (!strcmp(a, "--quick"))
            o.quick = true;
        else if (!strcmp(a, "--ops-only"))
            o.ops_only = true;
        else if (!strcmp(a, "--dry"))
            o.ops_only = o.dry = true;
        else if (!strcmp(a, "--seed"))
            o.seed = strtoull(NEXT(), NULL, 0);
        else if (!strcmp(a, "--arena-mb"))
            o.arena = (size_t)strtoull(NEXT(), NULL, 10) << 20;
        else if (!strcmp(a, "--outlier-us"))
            o.outlier_us = strtod(NEXT(), NULL);
        else if (!strcmp(a, "--no-pin"))
            o.pin = false;
        else if (!strcmp(a, "--no-glibc"))
            o.no_glibc = true;
        else if (!strcmp(a, "--print-config"))
            o.print_config = true;
        else if (!strcmp(a, "--list"))
            o.list = true;
        else if (!strcmp(a, "--self-test"))
            o.self_test = true;
        else if (!strcmp(a, "--fail-on-failed"))
            o.fail_on_failed = true;
        else if (!strcmp(a, "--dump"))
            o.dump = NEXT();
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            die("unknown option %s", a);
        }
#undef NEXT
    }
    if (o.reps == 0)
        o.reps = o.quick ? 3 : 5;
    check_list("preset", o.presets, preset_ok);
    check_list("workload", o.workloads, workload_ok);
    if (o.arena < ((size_t)1 << 20))
        die("--arena-mb must be at least 1");

    if (o.list) {
        for (size_t i = 0; i < wl_count(); i++)
            printf("%-12s %-18s %s\n", wl_get(i)->name, wl_get(i)->group, wl_get(i)->summary);
        return 0;
    }
    if (o.self_test)
        return self_test(o.seed);
    if (o.dump) {
        wl_trace t;
        if (wl_generate(o.dump, o.seed, &t) != 0)
            die("unknown workload %s", o.dump);
        wl_write_text(&t, stdout);
        wl_release(&t);
        return 0;
    }

    /* ---- targets ---- */
    target targets[DMM_PRESET_COUNT + 2];
    unsigned nt = 0;
    const char *frozen_preset = NULL;
    char frozen_cfg[768] = "";
#ifdef BENCH_FROZEN_PRESET
    frozen_preset = BENCH_FROZEN_PRESET;
#endif
    for (unsigned p = 0; p < DMM_PRESET_COUNT; p++) {
        const char *name = dmm_heap_preset_name((dmm_heap_preset)p);
        if (!list_has(o.presets, name))
            continue;
        if (frozen_preset && strcmp(frozen_preset, name) != 0)
            continue; /* a frozen build accepts only its own config */
        target *t = &targets[nt];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, "%s", name);
        t->is_dmm = true;
        t->cfg = bench_config((dmm_heap_preset)p);
        if (frozen_preset && dmm_heap_config_check(&t->cfg, NULL) != DMM_OK) {
            /* the frozen header differs from the benchmark's settings
             * (lock/stats/hardening): take the frozen config itself */
            static unsigned char probe[1 << 16];
            dmm_heap *h = NULL;
            dmm_status st = dmm_heap_init(&h, probe, sizeof probe, NULL);
            if (st != DMM_OK)
                die("frozen build: dmm_heap_init(NULL config): %s", dmm_status_str(st));
            t->cfg = dmm_heap_get_config(h);
            dmm_heap_destroy(h);
        }
        nt++;
    }
    if (o.config) {
        target *t = &targets[nt];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, "%s", o.config_name);
        t->is_dmm = true;
        t->cfg = bench_config(DMM_PRESET_TLSF);
        const char *err = NULL;
        if (dmm_heap_config_parse(o.config, &t->cfg, &err) != DMM_OK)
            die("--config: %s", err ? err : "parse error");
        nt++;
    }
    if (!frozen_preset && !o.no_glibc && (strcmp(o.presets, "all") == 0 || list_has(o.presets, "glibc"))) {
        target *t = &targets[nt];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, "glibc");
        snprintf(t->cfg_text, sizeof t->cfg_text, "system malloc (reference)");
        nt++;
    }
    if (nt == 0)
        die("no target selected (presets: %s%s)", o.presets, frozen_preset ? "; this build is frozen" : "");
    for (unsigned i = 0; i < nt; i++) {
        target *t = &targets[i];
        if (!t->is_dmm)
            continue;
        const char *why = NULL;
        if (dmm_heap_config_check(&t->cfg, &why) != DMM_OK)
            die("target %s: invalid config: %s", t->name, why ? why : "?");
        dmm_heap_config_format(&t->cfg, t->cfg_text, sizeof t->cfg_text);
    }
    if (frozen_preset)
        snprintf(frozen_cfg, sizeof frozen_cfg, "%s", targets[0].cfg_text);
    if (o.print_config) {
        for (unsigned i = 0; i < nt; i++)
            printf("%s\t%s\n", targets[i].name, targets[i].cfg_text);
        return 0;
    }

    /* ---- workloads ---- */
    wl_trace *wls = xcalloc(wl_count(), sizeof *wls);
    unsigned nw = 0;
    size_t max_ids = 0, max_ops = 0;
    for (size_t i = 0; i < wl_count(); i++) {
        const wl_info *wi = wl_get(i);
        if (!list_has(o.workloads, wi->name))
            continue;
        if (wl_generate(wi->name, o.seed, &wls[nw]) != 0)
            die("cannot generate workload %s", wi->name);
        if (wls[nw].n_ids > max_ids)
            max_ids = wls[nw].n_ids;
        size_t m = wls[nw].n_alloc > wls[nw].n_free ? wls[nw].n_alloc : wls[nw].n_free;
        if (wls[nw].n_realloc > m)
            m = wls[nw].n_realloc;
        if (m > max_ops)
            max_ops = m;
        nw++;
    }
    if (nw == 0)
        die("no workload matches '%s' (see --list)", o.workloads);

    /* ---- arena: one buffer, prefaulted, reused by every heap ---- */
    unsigned char *arena = NULL;
    bool need_arena = false;
    for (unsigned i = 0; i < nt; i++)
        need_arena |= targets[i].is_dmm;
    if (need_arena) {
        if (posix_memalign((void **)&arena, 4096, o.arena) != 0)
            die("cannot allocate the %zu-byte arena", o.arena);
        if (!o.ops_only)
            memset(arena, 0, o.arena); /* prefault every page */
    }
    void **ptrs = xcalloc(max_ids, sizeof *ptrs);

    int pinned_cpu = -1;
#ifdef __linux__
    if (o.pin && !o.ops_only) {
        int cpu = sched_getcpu();
        if (cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET((size_t)cpu, &set);
            if (sched_setaffinity(0, sizeof set, &set) == 0)
                pinned_cpu = cpu;
        }
    }
#endif

    result *res = xcalloc((size_t)nw * nt, sizeof *res);
#define RES(w, t) (&res[(size_t)(w) * nt + (t)])

    /* ---- ops-only / dry: one plain pass per workload and target ---- */
    if (o.ops_only) {
        for (unsigned w = 0; w < nw; w++) {
            for (unsigned ti = 0; ti < nt; ti++) {
                target *t = &targets[ti];
                dmm_heap *h = NULL;
                dmm_allocator a;
                libc_allocator(&a);
                if (t->is_dmm) {
                    dmm_status st = dmm_heap_init(&h, arena, o.arena, &t->cfg);
                    if (st != DMM_OK)
                        die("dmm_heap_init(%s): %s", t->name, dmm_status_str(st));
                    dmm_heap_as_allocator(h, &a);
                }
                memset(ptrs, 0, max_ids * sizeof *ptrs);
                counts *c = &RES(w, ti)->plain;
                replay_plain(&wls[w], &a, ptrs, o.dry, c);
                if (h)
                    dmm_heap_destroy(h);
                else if (!o.dry) /* glibc: free what a failed run left */
                    for (size_t i = 0; i < wls[w].n_ids; i++)
                        free(ptrs[i]);
                printf("OPCOUNT %s %s malloc=%" PRIu64 " free=%" PRIu64 " realloc=%" PRIu64 " failed=%" PRIu64
                       "%s\n",
                       wls[w].name, t->name, c->ops[K_MALLOC], c->ops[K_FREE], c->ops[K_REALLOC], c->failed,
                       o.dry ? " dry" : "");
            }
        }
        if (o.json) {
            FILE *f = fopen(o.json, "w");
            if (!f)
                die("cannot write %s: %s", o.json, strerror(errno));
            fprintf(f, "{\"schema\": \"%s.opcount\", \"schema_version\": %d, \"dry\": %s, \"frozen_preset\": ",
                    SCHEMA_NAME, SCHEMA_VERSION, o.dry ? "true" : "false");
            if (frozen_preset)
                json_str(f, frozen_preset);
            else
                fputs("null", f);
            fputs(", \"runs\": [", f);
            for (unsigned w = 0; w < nw; w++)
                for (unsigned ti = 0; ti < nt; ti++) {
                    counts *c = &RES(w, ti)->plain;
                    fprintf(f, "%s\n  {\"workload\": ", (w || ti) ? "," : "");
                    json_str(f, wls[w].name);
                    fputs(", \"target\": ", f);
                    json_str(f, targets[ti].name);
                    fputs(", \"config\": ", f);
                    json_str(f, targets[ti].cfg_text);
                    fprintf(f,
                            ", \"malloc\": %" PRIu64 ", \"free\": %" PRIu64 ", \"realloc\": %" PRIu64
                            ", \"failed\": %" PRIu64 "}",
                            c->ops[K_MALLOC], c->ops[K_FREE], c->ops[K_REALLOC], c->failed);
                }
            fputs("\n]}\n", f);
            fclose(f);
        }
        uint64_t failed = 0;
        for (unsigned w = 0; w < nw; w++)
            for (unsigned ti = 0; ti < nt; ti++)
                failed += RES(w, ti)->plain.failed;
        free(res);
        free(ptrs);
        free(arena);
        for (unsigned w = 0; w < nw; w++)
            wl_release(&wls[w]);
        free(wls);
        if (failed && o.fail_on_failed && !o.dry) {
            fprintf(stderr, "heap_bench: %" PRIu64 " allocation(s) failed\n", failed);
            return 1;
        }
        return 0;
    }

    /* ---- timing ---- */
    uint64_t overhead = calibrate_bracket();
    double granularity = tick_granularity();
    double hz = estimate_tick_hz(o.quick ? 0.05 : 0.2);
    uint64_t outlier = o.outlier_us > 0 ? (uint64_t)(o.outlier_us * 1e-6 * hz) : 0;
    fprintf(stderr,
            "heap_bench: timer %s (%s), empty bracket %" PRIu64 " %s, counter step %.1f"
            ", ~%.3g %s/s, %u reps, %u workloads x %u targets%s\n",
            BENCH_CLOCK_KIND, BENCH_CLOCK_FENCE, overhead, BENCH_CLOCK_UNIT, granularity, hz, BENCH_CLOCK_UNIT,
            o.reps, nw, nt, frozen_preset ? " (frozen build)" : "");

    samples s;
    memset(&s, 0, sizeof s);
    for (int k = 0; k < NKINDS; k++) {
        s.cap[k] = max_ops;
        s.v[k] = xcalloc(max_ops, sizeof(uint32_t));
    }
    size_t max_n_ops = 0;
    for (unsigned w = 0; w < nw; w++)
        if (wls[w].n_ops > max_n_ops)
            max_n_ops = wls[w].n_ops;
    uint32_t *scratch = xcalloc(max_n_ops, sizeof(uint32_t));
    for (unsigned w = 0; w < nw; w++)
        for (unsigned ti = 0; ti < nt; ti++) {
            RES(w, ti)->k = xcalloc((size_t)o.reps * NPASSES * NKINDS, sizeof(kstat));
            for (int pass = 0; pass < NPASSES; pass++) {
                RES(w, ti)->opmin[pass] = xcalloc(wls[w].n_ops, sizeof(uint32_t));
                memset(RES(w, ti)->opmin[pass], 0xff, wls[w].n_ops * sizeof(uint32_t));
            }
        }

    /* footprint and search steps: untimed, once (deterministic) */
    for (unsigned w = 0; w < nw; w++)
        for (unsigned ti = 0; ti < nt; ti++)
            if (targets[ti].is_dmm) {
                memset(ptrs, 0, max_ids * sizeof *ptrs);
                RES(w, ti)->fp = footprint_pass(&wls[w], &targets[ti], arena, o.arena, ptrs);
            }

    double t_start = now_sec();
    for (unsigned rep = 0; rep < o.reps; rep++) {
        for (unsigned w = 0; w < nw; w++) {
            for (unsigned j = 0; j < nt; j++) {
                unsigned ti = (j + rep) % nt; /* rotate who goes first */
                target *t = &targets[ti];
                result *r = RES(w, ti);
                dmm_heap *h = NULL;
                for (int pass = 0; pass < NPASSES; pass++) {
                    dmm_allocator a;
                    libc_allocator(&a);
                    if (t->is_dmm) {
                        if (pass == P_COLD) {
                            dmm_status st = dmm_heap_init(&h, arena, o.arena, &t->cfg);
                            if (st != DMM_OK)
                                die("dmm_heap_init(%s): %s", t->name, dmm_status_str(st));
                        } else {
                            dmm_heap_reset(h);
                        }
                        dmm_heap_as_allocator(h, &a);
                    }
                    memset(ptrs, 0, wls[w].n_ids * sizeof *ptrs);
                    counts c;
                    memset(&c, 0, sizeof c);
                    replay_timed(&wls[w], &a, ptrs, &s, overhead, &c, r->opmin[pass]);
                    if (!t->is_dmm) /* frees a failed run skipped */
                        for (size_t i = 0; i < wls[w].n_ids; i++)
                            free(ptrs[i]);
                    for (int k = 0; k < NKINDS; k++)
                        *rk(r, o.reps, rep, pass, k) = summarise(s.v[k], s.n[k], outlier);
                    r->c[pass] = c;
                }
                if (h)
                    dmm_heap_destroy(h);
            }
        }
        fprintf(stderr, "heap_bench: repetition %u/%u done (%.1f s)\n", rep + 1, o.reps, now_sec() - t_start);
    }

    /* ---- human table ---- */
    int dl = -1;
    for (unsigned ti = 0; ti < nt; ti++)
        if (!strcmp(targets[ti].name, "dlmalloc"))
            dl = (int)ti;
    printf("\nheap_bench: per-operation cost in %s (empty bracket of %" PRIu64 " subtracted, counter step %.1f"
           "), median of %u reps;\n"
           "samples over %.0f us (%" PRIu64 " %s) are counted as preemption outliers and left out;\n"
           "warm pass unless marked; cold = max of the cold pass; dmax = max over ops of each op's minimum\n"
           "over the reps (denoised worst case); fp = peak footprint (high-water mark) / peak live requested;\n"
           "blk = peak bytes in used blocks / peak live requested; steps = free-list nodes visited\n"
           "per allocation; xdl = ratio of the average to the dlmalloc-like preset's (lower is faster).\n"
           "glibc = system malloc, reference only (no reset: its 'cold' pass is just its first pass).\n",
           BENCH_CLOCK_UNIT, overhead, granularity, o.reps, o.outlier_us, outlier, BENCH_CLOCK_UNIT);
    char b1[32];
    for (unsigned w = 0; w < nw; w++) {
        const wl_trace *wt = &wls[w];
        printf("\n== %s: %zu ops (%zu malloc, %zu free, %zu realloc), peak live %s ==\n", wt->name, wt->n_ops,
               wt->n_alloc, wt->n_free, wt->n_realloc, human_bytes(wt->peak_live, b1, sizeof b1));
        printf("%-9s | %7s %6s %6s %6s %6s | %7s %6s %6s %6s | %7s | %5s %5s | %5s %5s | %5s | %s\n", "target",
               "malloc", "p99", "max", "dmax", "cold", "free", "p99", "max", "dmax", "realloc", "fp", "blk",
               "xdl-m", "xdl-f", "steps", "outliers");
        for (unsigned ti = 0; ti < nt; ti++) {
            result *r = RES(w, ti);
            agg m = aggregate(r, o.reps, P_WARM, K_MALLOC);
            agg mc = aggregate(r, o.reps, P_COLD, K_MALLOC);
            agg f = aggregate(r, o.reps, P_WARM, K_FREE);
            agg re = aggregate(r, o.reps, P_WARM, K_REALLOC);
            char fp[16] = "-", blk[16] = "-", xm[16] = "-", xf[16] = "-", steps[24] = "-", rea[16] = "-";
            if (r->fp.valid && r->fp.peak_requested) {
                snprintf(fp, sizeof fp, "%.2f", ratio((double)r->fp.hwm, (double)r->fp.peak_requested));
                snprintf(blk, sizeof blk, "%.2f",
                         ratio((double)r->fp.peak_block_bytes, (double)r->fp.peak_requested));
                uint64_t nreq = r->fp.malloc_count + r->fp.realloc_count;
                snprintf(steps, sizeof steps, "%.1f", nreq ? (double)r->fp.search_steps / (double)nreq : 0.0);
            }
            if (re.count)
                snprintf(rea, sizeof rea, "%.1f", re.avg);
            if (dl >= 0) {
                agg dm = aggregate(RES(w, (unsigned)dl), o.reps, P_WARM, K_MALLOC);
                agg df = aggregate(RES(w, (unsigned)dl), o.reps, P_WARM, K_FREE);
                snprintf(xm, sizeof xm, "%.2f", ratio(m.avg, dm.avg));
                snprintf(xf, sizeof xf, "%.2f", ratio(f.avg, df.avg));
            }
            kstat dm = denoised(r, wt, P_WARM, K_MALLOC, scratch);
            kstat df = denoised(r, wt, P_WARM, K_FREE, scratch);
            printf("%-9s | %7.1f %6.0f %6.0f %6.0f %6.0f | %7.1f %6.0f %6.0f %6.0f | %7s | %5s %5s | %5s %5s | %5s | "
                   "%.0f%s\n",
                   targets[ti].name, m.avg, m.p99, m.max, dm.max, mc.max, f.avg, f.p99, f.max, df.max, rea, fp, blk,
                   xm, xf, steps, m.outliers + f.outliers + re.outliers,
                   (r->c[P_WARM].failed || r->fp.failed) ? "  FAILURES" : "");
        }
    }

    /* ---- summary matrices ---- */
    if (nw > 1) {
        printf("\nsummary (warm pass): malloc avg / free avg in %s, [ratio to dlmalloc-like], fp\n", BENCH_CLOCK_UNIT);
        printf("%-12s", "workload");
        for (unsigned ti = 0; ti < nt; ti++)
            printf(" | %-24s", targets[ti].name);
        printf("\n");
        for (unsigned w = 0; w < nw; w++) {
            printf("%-12s", wls[w].name);
            agg dm = {0}, df = {0};
            if (dl >= 0) {
                dm = aggregate(RES(w, (unsigned)dl), o.reps, P_WARM, K_MALLOC);
                df = aggregate(RES(w, (unsigned)dl), o.reps, P_WARM, K_FREE);
            }
            for (unsigned ti = 0; ti < nt; ti++) {
                result *r = RES(w, ti);
                agg m = aggregate(r, o.reps, P_WARM, K_MALLOC);
                agg f = aggregate(r, o.reps, P_WARM, K_FREE);
                char cell[64], fp[16] = "";
                if (r->fp.valid && r->fp.peak_requested)
                    snprintf(fp, sizeof fp, " %.2f", ratio((double)r->fp.hwm, (double)r->fp.peak_requested));
                if (dl >= 0)
                    snprintf(cell, sizeof cell, "%.0f/%.0f [%.2f/%.2f]%s", m.avg, f.avg, ratio(m.avg, dm.avg),
                             ratio(f.avg, df.avg), fp);
                else
                    snprintf(cell, sizeof cell, "%.0f/%.0f%s", m.avg, f.avg, fp);
                printf(" | %-24s", cell);
            }
            printf("\n");
        }
    }

    fflush(stdout); /* before the messages on stderr */

    /* ---- JSON ---- */
    if (o.json) {
        FILE *f = fopen(o.json, "w");
        if (!f)
            die("cannot write %s: %s", o.json, strerror(errno));
        char host[256] = "unknown", cpu[256], date[64];
        gethostname(host, sizeof host - 1);
        cpu_model(cpu, sizeof cpu);
        time_t now = time(NULL);
        struct tm tmv;
        gmtime_r(&now, &tmv);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        const char *commit = getenv("DMM_GIT_COMMIT");
        if (!commit || !*commit)
            commit = BENCH_GIT_COMMIT;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

        fprintf(f, "{\n\"schema\": \"%s\",\n\"schema_version\": %d,\n\"context\": {\n", SCHEMA_NAME, SCHEMA_VERSION);
        fputs("  \"date\": ", f);
        json_str(f, date);
        fputs(",\n  \"host\": ", f);
        json_str(f, host);
        fputs(",\n  \"cpu_model\": ", f);
        json_str(f, cpu);
        fprintf(f, ",\n  \"cpus_online\": %ld,\n  \"pinned_cpu\": %d,\n  \"compiler\": ", ncpu, pinned_cpu);
        json_str(f, BENCH_COMPILER);
        fputs(",\n  \"cflags\": ", f);
        json_str(f, BENCH_CFLAGS);
        fputs(",\n  \"build_type\": ", f);
        json_str(f, BENCH_BUILD_TYPE);
        fputs(",\n  \"git_commit\": ", f);
        json_str(f, commit);
        fputs(",\n  \"frozen_preset\": ", f);
        if (frozen_preset)
            json_str(f, frozen_preset);
        else
            fputs("null", f);
        fputs(",\n  \"frozen_config\": ", f);
        if (frozen_preset)
            json_str(f, frozen_cfg);
        else
            fputs("null", f);
        fprintf(f, ",\n  \"library_frozen\": %s", dmm_heap_is_frozen() ? "true" : "false");
        fputs(",\n  \"timer\": {\"kind\": ", f);
        json_str(f, BENCH_CLOCK_KIND);
        fputs(", \"fence\": ", f);
        json_str(f, BENCH_CLOCK_FENCE);
        fputs(", \"unit\": ", f);
        json_str(f, BENCH_CLOCK_UNIT);
        fprintf(f, ", \"bracket_overhead\": %" PRIu64 ", \"counter_step\": %.2f"
                   ", \"outlier_threshold_ticks\": %" PRIu64 ", \"outlier_threshold_us\": ",
                overhead, granularity, outlier);
        json_num(f, o.outlier_us);
        fputs(", \"ticks_per_second\": ", f);
        json_num(f, hz);
        fputs(", \"note\": ", f);
        json_str(f, strcmp(BENCH_CLOCK_KIND, "rdtsc") == 0
                        ? "TSC ticks at the constant reference rate (not core cycles); empty-bracket minimum subtracted"
                        : "clock_gettime nanoseconds (no cycle counter on this architecture)");
        fprintf(f, "},\n  \"reps\": %u,\n  \"statistic\": \"avg/p50/p99/max: median over reps of each per-pass figure "
                   "(outliers excluded); max_worst: worst over reps; *_raw: outliers kept; denoised: statistics of "
                   "each op's minimum over the reps (the replay is deterministic)\",\n", o.reps);
        fprintf(f, "  \"quick\": %s,\n  \"seed\": %" PRIu64 ",\n  \"arena_bytes\": %zu,\n", o.quick ? "true" : "false",
                o.seed, o.arena);
        fputs("  \"bench_config_overrides\": \"lock=none,stats=counters,harden=off,poison=off\",\n", f);
        fputs("  \"passes\": {\"cold\": \"fresh dmm_heap_init on the prefaulted arena\", \"warm\": \"the same heap after dmm_heap_reset\"},\n", f);
        fputs("  \"footprint_definitions\": {\"hwm_over_peak_live\": \"highest payload end ever handed out (from the arena start, control block included) / peak live requested bytes\", "
              "\"block_over_peak_live\": \"stats peak_block_bytes / peak live requested bytes\", "
              "\"extent_at_peak_over_peak_live\": \"end of the highest non-free block at the moment of peak live / peak live\", "
              "\"holes_at_peak\": \"free bytes below that extent at that moment\", "
              "\"stats_peak_extent_over_peak_live\": \"the heap's own high-water mark (dmm_heap_stats.peak_extent: "
              "regions minus their never-carved top, control block and region overhead included) / peak live\"}\n},\n", f);

        fputs("\"workloads\": [", f);
        for (unsigned w = 0; w < nw; w++) {
            const wl_trace *wt = &wls[w];
            const wl_info *wi = wl_find(wt->name);
            fprintf(f, "%s\n  {\"name\": ", w ? "," : "");
            json_str(f, wt->name);
            fputs(", \"group\": ", f);
            json_str(f, wi ? wi->group : "");
            fputs(", \"summary\": ", f);
            json_str(f, wi ? wi->summary : "");
            fprintf(f,
                    ", \"seed\": %" PRIu64 ", \"ops\": %zu, \"allocs\": %zu, \"frees\": %zu, \"reallocs\": %zu, "
                    "\"peak_live_requested\": %zu, \"peak_objects\": %zu, \"max_size\": %zu}",
                    wt->seed, wt->n_ops, wt->n_alloc, wt->n_free, wt->n_realloc, wt->peak_live, wt->peak_objects,
                    wt->max_size);
        }
        fputs("\n],\n\"targets\": [", f);
        for (unsigned ti = 0; ti < nt; ti++) {
            fprintf(f, "%s\n  {\"name\": ", ti ? "," : "");
            json_str(f, targets[ti].name);
            fprintf(f, ", \"kind\": \"%s\", \"config\": ", targets[ti].is_dmm ? "dmm_heap" : "system_malloc");
            json_str(f, targets[ti].cfg_text);
            fputs("}", f);
        }
        fputs("\n],\n\"results\": [", f);
        bool first = true;
        for (unsigned w = 0; w < nw; w++)
            for (unsigned ti = 0; ti < nt; ti++) {
                result *r = RES(w, ti);
                fprintf(f, "%s\n  {\"workload\": ", first ? "" : ",");
                first = false;
                json_str(f, wls[w].name);
                fputs(", \"target\": ", f);
                json_str(f, targets[ti].name);
                fprintf(f, ", \"failed\": %" PRIu64 ",\n   \"passes\": {", r->c[P_WARM].failed + r->c[P_COLD].failed);
                for (int pass = 0; pass < NPASSES; pass++) {
                    fprintf(f, "%s\"%s\": {", pass ? ", " : "", pass_names[pass]);
                    for (int k = 0; k < NKINDS; k++) {
                        agg a = aggregate(r, o.reps, pass, k);
                        fprintf(f, "%s\"%s\": {\"count\": %zu, \"avg\": ", k ? ", " : "", kind_names[k], a.count);
                        json_num(f, a.avg);
                        fputs(", \"p50\": ", f);
                        json_num(f, a.p50);
                        fputs(", \"p99\": ", f);
                        json_num(f, a.p99);
                        fputs(", \"max\": ", f);
                        json_num(f, a.max);
                        fputs(", \"max_worst\": ", f);
                        json_num(f, a.max_worst);
                        fputs(", \"outliers\": ", f);
                        json_num(f, a.outliers);
                        fputs(", \"avg_raw\": ", f);
                        json_num(f, a.avg_raw);
                        fputs(", \"max_raw\": ", f);
                        json_num(f, a.max_raw);
                        fputs(", \"max_raw_worst\": ", f);
                        json_num(f, a.max_raw_worst);
                        fputs(", \"avg_range\": [", f);
                        json_num(f, a.avg_min);
                        fputs(", ", f);
                        json_num(f, a.avg_max);
                        kstat dn = denoised(r, &wls[w], pass, k, scratch);
                        fputs("], \"denoised\": {\"avg\": ", f);
                        json_num(f, dn.avg);
                        fputs(", \"p50\": ", f);
                        json_num(f, dn.p50);
                        fputs(", \"p99\": ", f);
                        json_num(f, dn.p99);
                        fputs(", \"max\": ", f);
                        json_num(f, dn.max);
                        fputs("}}", f);
                    }
                    fputs("}", f);
                }
                fputs("},\n   \"footprint\": ", f);
                if (r->fp.valid) {
                    const footprint *p = &r->fp;
                    double pr = (double)p->peak_requested;
                    fprintf(f,
                            "{\"peak_live_requested\": %zu, \"peak_block_bytes\": %zu, \"hwm\": %zu, "
                            "\"extent_at_peak\": %zu, \"holes_at_peak\": %zu, \"quick_at_peak\": %zu, "
                            "\"block_bytes_at_peak\": %zu, \"stats_free_bytes_at_peak\": %zu, "
                            "\"stats_extent_at_peak\": %zu, \"stats_peak_extent\": %zu, "
                            "\"arena_overhead\": %zu, \"failed\": %" PRIu64 ", \"hwm_over_peak_live\": ",
                            p->peak_requested, p->peak_block_bytes, p->hwm, p->extent_at_peak, p->holes_at_peak,
                            p->quick_at_peak, p->block_at_peak, p->free_bytes_at_peak, p->stats_extent_at_peak,
                            p->stats_peak_extent, p->ctrl_and_region_overhead, p->failed);
                    json_num(f, ratio((double)p->hwm, pr));
                    fputs(", \"block_over_peak_live\": ", f);
                    json_num(f, ratio((double)p->peak_block_bytes, pr));
                    fputs(", \"extent_at_peak_over_peak_live\": ", f);
                    json_num(f, ratio((double)p->extent_at_peak, pr));
                    fputs(", \"stats_peak_extent_over_peak_live\": ", f);
                    json_num(f, ratio((double)p->stats_peak_extent, pr));
                    fputs(", \"block_plus_holes_at_peak_over_peak_live\": ", f);
                    json_num(f, ratio((double)(p->block_at_peak + p->holes_at_peak), pr));
                    fputs("},\n   \"search\": ", f);
                    uint64_t nreq = p->malloc_count + p->realloc_count;
                    fprintf(f,
                            "{\"steps\": %" PRIu64 ", \"max\": %" PRIu64 ", \"alloc_requests\": %" PRIu64
                            ", \"frees\": %" PRIu64 ", \"sweeps\": %" PRIu64 ", \"per_alloc\": ",
                            p->search_steps, p->search_max, nreq, p->free_count, p->sweeps);
                    json_num(f, nreq ? (double)p->search_steps / (double)nreq : 0.0);
                    fputs("}", f);
                } else {
                    fputs("null, \"search\": null", f);
                }
                fputs("}", f);
            }
        fputs("\n]\n}\n", f);
        fclose(f);
        fprintf(stderr, "heap_bench: wrote %s\n", o.json);
    }

    /* cross-check: the benchmark's own high-water mark against the heap's */
    int fp_mismatch = 0;
    for (unsigned w = 0; w < nw; w++)
        for (unsigned ti = 0; ti < nt; ti++) {
            const footprint *p = &RES(w, ti)->fp;
            if (!p->valid)
                continue;
            size_t tol = dmm_heap_block_overhead(&targets[ti].cfg) + dmm_heap_region_overhead();
            size_t d = p->hwm > p->stats_peak_extent ? p->hwm - p->stats_peak_extent : p->stats_peak_extent - p->hwm;
            if (d > tol) {
                fprintf(stderr, "heap_bench: footprint cross-check failed on %s/%s: high-water mark %zu, "
                                "stats.peak_extent %zu\n", wls[w].name, targets[ti].name, p->hwm,
                        p->stats_peak_extent);
                fp_mismatch = 1;
            }
        }

    uint64_t failed = 0;
    for (unsigned w = 0; w < nw; w++)
        for (unsigned ti = 0; ti < nt; ti++) {
            failed += RES(w, ti)->c[P_COLD].failed + RES(w, ti)->c[P_WARM].failed + RES(w, ti)->fp.failed;
            free(RES(w, ti)->k);
            for (int pass = 0; pass < NPASSES; pass++)
                free(RES(w, ti)->opmin[pass]);
        }
    for (int k = 0; k < NKINDS; k++)
        free(s.v[k]);
    free(scratch);
    free(res);
    free(ptrs);
    free(arena);
    for (unsigned w = 0; w < nw; w++)
        wl_release(&wls[w]);
    free(wls);
    if (failed) {
        fprintf(stderr, "heap_bench: %" PRIu64 " allocation(s) failed (see FAILURES above)\n", failed);
        if (o.fail_on_failed)
            return 1;
    }
    return fp_mismatch ? 3 : 0;
}

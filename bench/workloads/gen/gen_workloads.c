/*
 * bench/workloads/gen/gen_workloads.c - writes the bundled synthetic
 * workloads (bench/workloads/workload.c) as dmm traces, so that they replay
 * through the one replay engine (dmm-replay) like every other trace.
 *
 *   gen-workloads [--seed N] [--text] -o DIR [NAME|all ...]
 *   gen-workloads --list
 *   gen-workloads --self-test [--seed N]
 *   gen-workloads --dump NAME [--seed N]
 *
 * Each workload becomes one single-threaded trace DIR/NAME.dmmt (binary;
 * DIR/NAME.txt with --text): "a id size" -> MALLOC, "r id size" -> REALLOC,
 * "f id" -> FREE, ids unchanged.  The trace's metadata names the generator,
 * the workload, its group and the seed.  Generation is seeded and uses
 * integer arithmetic only, so a name and a seed give the same trace (the
 * same dmm_trace_hash) on every platform; the summary line prints the hash.
 *
 * --self-test checks every workload: generated twice with the same seed it
 * is identical, it is well formed, every object is freed, a seeded shape
 * changes with the seed, the section-5.3 variants keep their kernel's
 * allocation order and sizes with the free points spread (mean relative
 * position 0.5 +- 0.05), and the converted trace validates
 * (dmm_trace_validate), keeps every operation, and reads back from its
 * binary encoding with the same hash.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dmm/trace.h"
#include "workload.h"

#define PROG "gen-workloads"

static const char *usage_text =
    "usage: " PROG " [--seed N] [--text] -o DIR [NAME|all ...]\n"
    "       " PROG " --list | --self-test [--seed N] | --dump NAME [--seed N]\n"
    "  -o DIR        write DIR/NAME.dmmt for each workload named (default: all)\n"
    "  --seed N      generator seed (default 0x5eed2012, the benchmark's)\n"
    "  --text        write the text form (DIR/NAME.txt) instead of binary\n"
    "  --list        list the workloads (name, group, shape)\n"
    "  --self-test   check determinism, well-formedness, the 5.3 transform and\n"
    "                the conversion to dmm traces; exit 1 on any failure\n"
    "  --dump NAME   print workload NAME as a dmm text trace on stdout\n";

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (code == 2)
        fprintf(stderr, "(" PROG " --help for usage)\n");
    exit(code);
}

static uint64_t parse_seed(const char *s)
{
    char *end;
    unsigned long long v;
    if (!s || !*s || *s == '-')
        die(2, "--seed needs a non-negative number");
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || *end)
        die(2, "--seed: '%s' is not a number", s);
    return (uint64_t)v;
}

/* Converts a generated workload to a dmm trace (thread 0, no timestamps).
 * Returns 0 or -1 (out of memory). */
static int to_trace(const wl_trace *w, const wl_info *wi, dmm_trace *t)
{
    char meta[512];
    dmm_trace_init(t);
    snprintf(meta, sizeof meta,
             "generator=" PROG "\nworkload=%s\ngroup=%s\nseed=%" PRIu64 "\nshape=%s\n", w->name, wi->group,
             w->seed, wi->summary);
    if (dmm_trace_set_meta(t, meta) != 0)
        return -1;
    for (size_t i = 0; i < w->n_ops; i++) {
        const wl_op *o = &w->ops[i];
        dmm_trace_op op;
        memset(&op, 0, sizeof op);
        op.kind = o->kind == WL_ALLOC ? DMM_T_MALLOC : o->kind == WL_REALLOC ? DMM_T_REALLOC : DMM_T_FREE;
        op.id = o->id;
        op.size = o->kind == WL_FREE ? 0 : o->size;
        if (dmm_trace_push(t, &op) != 0) {
            dmm_trace_free(t);
            return -1;
        }
    }
    return 0;
}

/* Generates workload wi with seed into a dmm trace; dies on failure. */
static void generate(const wl_info *wi, uint64_t seed, wl_trace *w, dmm_trace *t)
{
    if (wl_generate(wi->name, seed, w) != 0)
        die(1, "%s: generation failed (out of memory, or a generator bug caught by wl_validate)", wi->name);
    if (to_trace(w, wi, t) != 0)
        die(1, "%s: out of memory converting to a trace", wi->name);
}

/* ---- self-test ------------------------------------------------------------ */

static int st_fail(const char *wl, const char *what)
{
    fprintf(stderr, "self-test FAIL: %s: %s\n", wl, what);
    return 1;
}

/* The converted trace: valid, every op kept, binary round trip keeps the hash. */
static int check_trace(const wl_info *wi, const wl_trace *w, const dmm_trace *t)
{
    int bad = 0;
    dmm_trace_error err;
    size_t n[DMM_T_SYNC + 1] = {0};
    if (t->n != w->n_ops)
        bad |= st_fail(wi->name, "trace has a different number of operations");
    for (size_t i = 0; i < t->n; i++)
        if (t->ops[i].kind <= DMM_T_SYNC)
            n[t->ops[i].kind]++;
    if (n[DMM_T_MALLOC] != w->n_alloc || n[DMM_T_REALLOC] != w->n_realloc || n[DMM_T_FREE] != w->n_free)
        bad |= st_fail(wi->name, "trace operation counts differ from the workload's");
    if (t->threads > 1)
        bad |= st_fail(wi->name, "trace is not single-threaded");
    if (dmm_trace_validate(t, &err) != 0) {
        char msg[240];
        snprintf(msg, sizeof msg, "trace invalid at operation %" PRIu64 ": %s", err.offset, err.reason);
        bad |= st_fail(wi->name, msg);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f || dmm_trace_write_binary(t, f) != 0 || fclose(f) != 0) {
        bad |= st_fail(wi->name, "cannot encode the trace");
    } else {
        dmm_trace back;
        dmm_trace_init(&back);
        if (dmm_trace_read_binary(&back, (const uint8_t *)buf, len, &err) != 0)
            bad |= st_fail(wi->name, "binary encoding does not read back");
        else if (dmm_trace_hash(&back) != dmm_trace_hash(t) || back.n != t->n)
            bad |= st_fail(wi->name, "binary round trip changed the trace");
        dmm_trace_free(&back);
    }
    free(buf);
    return bad;
}

/* Section-5.3 variant a of kernel k: same allocation subsequence, frees moved,
 * mean relative free point ~0.5. */
static int check_random_free(const wl_info *wi, const wl_trace *a, const wl_trace *k)
{
    int bad = 0;
    size_t x = 0, y = 0, moved = 0;
    while (x < k->n_ops || y < a->n_ops) {
        while (x < k->n_ops && k->ops[x].kind == WL_FREE)
            x++;
        while (y < a->n_ops && a->ops[y].kind == WL_FREE)
            y++;
        if (x >= k->n_ops || y >= a->n_ops) {
            if (x < k->n_ops || y < a->n_ops)
                bad |= st_fail(wi->name, "allocation counts differ from the kernel");
            break;
        }
        if (k->ops[x].kind != a->ops[y].kind || k->ops[x].id != a->ops[y].id || k->ops[x].size != a->ops[y].size) {
            bad |= st_fail(wi->name, "allocation order or sizes differ from the kernel");
            break;
        }
        moved += x != y;
        x++;
        y++;
    }
    if (moved == 0)
        bad |= st_fail(wi->name, "no free point moved");
    size_t *at = calloc(a->n_ids ? a->n_ids : 1, sizeof *at);
    if (!at)
        return bad | st_fail(wi->name, "out of memory");
    size_t pos = 0, m = a->n_alloc + a->n_realloc, n = 0;
    double sum = 0;
    for (size_t j = 0; j < a->n_ops; j++) {
        if (a->ops[j].kind != WL_FREE) {
            at[a->ops[j].id] = pos++;
        } else if (m > at[a->ops[j].id] + 1) {
            /* freed after op pos-1: uniform over last .. m-1 */
            sum += (double)(pos - 1 - at[a->ops[j].id]) / (double)(m - 1 - at[a->ops[j].id]);
            n++;
        }
    }
    free(at);
    double mean = n ? sum / (double)n : 0;
    if (mean < 0.45 || mean > 0.55) {
        char msg[96];
        snprintf(msg, sizeof msg, "mean relative free point %.3f, expected ~0.5", mean);
        bad |= st_fail(wi->name, msg);
    }
    return bad;
}

static int self_test(uint64_t seed)
{
    int bad_all = 0;
    for (size_t i = 0; i < wl_count(); i++) {
        const wl_info *wi = wl_get(i);
        int bad = 0;
        wl_trace a, b, c;
        if (wl_generate(wi->name, seed, &a) != 0) {
            bad_all |= st_fail(wi->name, "generation failed");
            continue;
        }
        if (wl_generate(wi->name, seed, &b) != 0) {
            bad_all |= st_fail(wi->name, "second generation failed");
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
        if (strcmp(wi->group, "p2012-random-free") == 0) {
            char base[40];
            snprintf(base, sizeof base, "%s", wi->name);
            base[strcspn(base, "-")] = 0;
            wl_trace k;
            if (wl_generate(base, seed, &k) != 0) {
                bad |= st_fail(wi->name, "base kernel failed");
            } else {
                bad |= check_random_free(wi, &a, &k);
                wl_release(&k);
            }
        }
        dmm_trace t;
        if (to_trace(&a, wi, &t) != 0) {
            bad |= st_fail(wi->name, "out of memory converting to a trace");
        } else {
            bad |= check_trace(wi, &a, &t);
            printf("self-test %-12s %6zu ops, peak live %8zu B, hash %016" PRIx64 ", %s\n", wi->name, a.n_ops,
                   a.peak_live, dmm_trace_hash(&t), bad ? "FAILED" : "ok");
            dmm_trace_free(&t);
        }
        bad_all |= bad;
        wl_release(&a);
        wl_release(&b);
    }
    /* the random number helpers stay in range and reach both end octaves */
    wl_rng r;
    wl_rng_seed(&r, seed);
    bool lo_hit = false, hi_oct = false;
    for (int i = 0; i < 200000; i++) {
        uint64_t v = wl_rng_logu(&r, 16, 16384);
        if (v < 16 || v > 16384) {
            bad_all |= st_fail("rng", "wl_rng_logu out of range");
            break;
        }
        lo_hit |= v < 32;
        hi_oct |= v >= 8192;
        if (wl_rng_below(&r, 7) >= 7) {
            bad_all |= st_fail("rng", "wl_rng_below out of range");
            break;
        }
    }
    if (!lo_hit || !hi_oct)
        bad_all |= st_fail("rng", "wl_rng_logu misses an end octave");
    printf("self-test %s\n", bad_all ? "FAILED" : "passed");
    return bad_all ? 1 : 0;
}

/* ---- main ----------------------------------------------------------------- */

static bool selected(const char *name, int argc, char **argv, int first)
{
    if (first >= argc)
        return true;
    for (int i = first; i < argc; i++)
        if (!strcmp(argv[i], "all") || !strcmp(argv[i], name))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    uint64_t seed = WL_DEFAULT_SEED;
    const char *dir = NULL, *dump = NULL;
    bool text = false, list = false, selftest = false;
    static const struct option lo[] = {
        {"seed", required_argument, 0, 's'}, {"text", no_argument, 0, 't'},      {"list", no_argument, 0, 'l'},
        {"self-test", no_argument, 0, 'S'},  {"dump", required_argument, 0, 'd'}, {"out", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        switch (ch) {
        case 's': seed = parse_seed(optarg); break;
        case 't': text = true; break;
        case 'l': list = true; break;
        case 'S': selftest = true; break;
        case 'd': dump = optarg; break;
        case 'o': dir = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: die(2, "bad usage");
        }
    }
    if (list) {
        for (size_t i = 0; i < wl_count(); i++)
            printf("%-12s %-18s %s\n", wl_get(i)->name, wl_get(i)->group, wl_get(i)->summary);
        return 0;
    }
    if (selftest)
        return self_test(seed);
    for (int i = optind; i < argc; i++)
        if (strcmp(argv[i], "all") != 0 && !wl_find(argv[i]))
            die(2, "unknown workload '%s' (--list shows them)", argv[i]);
    if (dump) {
        const wl_info *wi = wl_find(dump);
        wl_trace w;
        dmm_trace t;
        if (!wi)
            die(2, "unknown workload '%s' (--list shows them)", dump);
        generate(wi, seed, &w, &t);
        if (dmm_trace_write_text(&t, stdout) != 0 || fflush(stdout) != 0)
            die(1, "cannot write to stdout: %s", strerror(errno));
        dmm_trace_free(&t);
        wl_release(&w);
        return 0;
    }
    if (!dir)
        die(2, "no output directory (-o DIR)");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        die(1, "cannot create %s: %s", dir, strerror(errno));
    for (size_t i = 0; i < wl_count(); i++) {
        const wl_info *wi = wl_get(i);
        if (!selected(wi->name, argc, argv, optind))
            continue;
        wl_trace w;
        dmm_trace t;
        char path[4096];
        generate(wi, seed, &w, &t);
        if ((size_t)snprintf(path, sizeof path, "%s/%s.%s", dir, wi->name, text ? "txt" : "dmmt") >= sizeof path)
            die(2, "output directory name too long");
        /* written beside the target and renamed only when complete, so a
         * full disk never leaves a truncated trace under the final name */
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp%s", path, text ? ".txt" : "");
        if (dmm_trace_save(&t, tmp) != 0) {
            int e = errno;
            remove(tmp);
            die(1, "cannot write %s: %s", path, strerror(e));
        }
        if (rename(tmp, path) != 0) {
            int e = errno;
            remove(tmp);
            die(1, "cannot write %s: %s", path, strerror(e));
        }
        printf(PROG ": %s: %zu operations (%zu mallocs, %zu reallocs, %zu frees), peak live %zu B, "
               "hash %016" PRIx64 "\n",
               path, t.n, w.n_alloc, w.n_realloc, w.n_free, w.peak_live, dmm_trace_hash(&t));
        dmm_trace_free(&t);
        wl_release(&w);
    }
    return 0;
}

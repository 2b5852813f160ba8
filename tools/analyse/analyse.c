/*
 * tools/analyse/analyse.c - dmm-analyse: request-pattern analysis of an
 * allocation trace (docs/replay.md, "Request-pattern analysis").
 *
 *   dmm-analyse TRACE [--json FILE]
 *
 * Definitions (every figure is computed in trace order; SYNC operations are
 * not counted as operations):
 *   request       a malloc, calloc or aligned allocation, or a realloc to a
 *                 non-zero size; its size is the bytes asked for
 *   object        one allocation until its free (realloc keeps the object;
 *                 realloc to size 0 frees it)
 *   lifetime      operations from the allocation to the free (free op number
 *                 minus allocation op number)
 *   cross-thread  a free (or realloc to 0) issued by another thread than the
 *                 one that allocated the object
 *   realloc chain an object resized at least once; length = its reallocs
 *                 (the final realloc to 0, if any, not counted)
 *
 * Exit status: 0, 1 (memory / output error), 2 (bad usage or bad trace).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/schemas.h"
#include "../common/tcommon.h"
#include "dmm/trace.h"

#define PROG "dmm-analyse"
#define NB 65          /* power-of-two buckets: 0 = value 0, i = [2^(i-1), 2^i) */
#define MAX_POINTS 512 /* live-bytes-over-time samples */
#define TOPN 10

typedef struct obj {
    uint64_t born;    /* op number of the allocation (1-based) */
    uint64_t first;   /* initial size */
    uint64_t size;    /* current size */
    uint32_t tid;     /* allocating thread */
    uint32_t reallocs;
    int live;
    double logratio;  /* sum of log(new/old) over realloc steps */
} obj;

typedef struct point {
    uint64_t op, live, objects, max_live;
} point;

typedef struct an {
    uint64_t count[DMM_T_SYNC + 1];
    uint64_t ops;
    uint32_t threads;
    uint64_t *thread_ops;
    /* sizes */
    uint64_t size_hist[NB], size_bytes[NB];
    uint64_t requests, request_bytes, min_req, max_req;
    uint64_t *sizes; /* every request size, in order (sorted for the top list) */
    size_t nsizes, distinct;
    /* lifetimes */
    uint64_t life_hist[NB];
    uint64_t freed, never_freed;
    double life_sum;
    uint64_t life_max;
    /* live */
    uint64_t live, live_objs, peak_live, peak_objs, peak_op;
    point *pts;
    size_t npts, window;
    uint64_t win_max;
    /* threads */
    uint64_t cross_frees, cross_reallocs, all_frees;
    /* realloc */
    uint64_t chains, chain_reallocs, chain_len_hist[NB];
    uint64_t grow_steps, shrink_steps, same_steps;
    double chain_ratio_sum, chain_log_sum;
    double *chain_ratios;
    size_t nchain_ratios, cap_chain_ratios;
    uint64_t objects;
} an;

static unsigned bucket(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0u; }

static void bucket_range(unsigned i, uint64_t *lo, uint64_t *hi)
{
    if (i == 0) {
        *lo = *hi = 0;
        return;
    }
    *lo = (uint64_t)1 << (i - 1);
    *hi = i >= 64 ? UINT64_MAX : ((uint64_t)1 << i) - 1u;
}

static void note_request(an *a, uint64_t size)
{
    unsigned b = bucket(size);
    a->size_hist[b]++;
    a->size_bytes[b] += size;
    if (!a->requests || size < a->min_req)
        a->min_req = size;
    if (size > a->max_req)
        a->max_req = size;
    a->requests++;
    a->request_bytes += size;
    a->sizes[a->nsizes++] = size;
}

static int end_object(an *a, obj *o, uint64_t now, uint32_t tid, int counted_free)
{
    uint64_t life = now - o->born;
    if (counted_free) {
        a->freed++;
        a->all_frees++;
        if (tid != o->tid)
            a->cross_frees++;
        a->life_hist[bucket(life)]++;
        a->life_sum += (double)life;
        if (life > a->life_max)
            a->life_max = life;
    }
    if (o->reallocs) {
        double r = o->first ? (double)o->size / (double)o->first : NAN;
        a->chains++;
        a->chain_reallocs += o->reallocs;
        a->chain_len_hist[bucket(o->reallocs)]++;
        if (!isnan(r)) {
            if (a->nchain_ratios == a->cap_chain_ratios) {
                size_t nc = a->cap_chain_ratios ? a->cap_chain_ratios * 2 : 256;
                double *p = realloc(a->chain_ratios, nc * sizeof *p);
                if (!p)
                    return -1;
                a->chain_ratios = p;
                a->cap_chain_ratios = nc;
            }
            a->chain_ratios[a->nchain_ratios++] = r;
            a->chain_ratio_sum += r;
            a->chain_log_sum += o->logratio;
        }
    }
    return 0;
}

static void sample_point(an *a, int force)
{
    if (a->live > a->win_max)
        a->win_max = a->live;
    if (force || a->ops % a->window == 0) {
        if (a->npts < MAX_POINTS + 2) {
            point *p = &a->pts[a->npts++];
            p->op = a->ops;
            p->live = a->live;
            p->objects = a->live_objs;
            p->max_live = a->win_max;
        }
        a->win_max = a->live;
    }
}

/* Objects are the trace's incarnations (dmm_trace_summarize), so peak live
 * bytes and objects are the same figures dmm-replay reports. */
static int analyse(const dmm_trace *t, an *a)
{
    dmm_trace_summary sum;
    dmm_trace_error e;
    uint64_t *slot = NULL;
    obj *objs = NULL;
    int rc = -1;
    memset(a, 0, sizeof *a);
    a->threads = t->threads ? t->threads : 1;
    if (!(a->thread_ops = calloc(a->threads, sizeof *a->thread_ops)))
        return -1;
    if (!(slot = malloc((t->n ? t->n : 1) * sizeof *slot)))
        return -1;
    if (dmm_trace_summarize(t, &sum, slot, &e))
        goto out;
    a->window = sum.ops > MAX_POINTS ? (size_t)((sum.ops + MAX_POINTS - 1) / MAX_POINTS) : 1;
    a->peak_live = sum.peak_live;
    a->peak_objs = sum.peak_objects;
    a->objects = sum.objects;
    memcpy(a->count, sum.kind_count, sizeof a->count);
    if (!(a->pts = calloc(MAX_POINTS + 2, sizeof *a->pts)))
        goto out;
    if (!(objs = calloc(sum.objects ? sum.objects : 1, sizeof *objs)))
        goto out;
    if (!(a->sizes = malloc((sum.ops ? sum.ops : 1) * sizeof *a->sizes)))
        goto out;
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *op = &t->ops[i];
        obj *o;
        if (op->kind == DMM_T_SYNC)
            continue;
        a->ops++;
        a->thread_ops[op->tid]++;
        o = &objs[slot[i]];
        switch (op->kind) {
        case DMM_T_MALLOC:
        case DMM_T_CALLOC:
        case DMM_T_ALIGNED:
            o->born = a->ops;
            o->first = o->size = op->size;
            o->tid = op->tid;
            o->live = 1;
            note_request(a, op->size);
            a->live += op->size;
            a->live_objs++;
            break;
        case DMM_T_REALLOC:
            a->live -= o->size;
            if (op->tid != o->tid)
                a->cross_reallocs++;
            if (op->size == 0) {
                if (end_object(a, o, a->ops, op->tid, 1))
                    goto out;
                o->live = 0;
                a->live_objs--;
                break;
            }
            note_request(a, op->size);
            if (op->size > o->size)
                a->grow_steps++;
            else if (op->size < o->size)
                a->shrink_steps++;
            else
                a->same_steps++;
            if (o->size)
                o->logratio += log((double)op->size / (double)o->size);
            o->reallocs++;
            o->size = op->size;
            a->live += op->size;
            break;
        case DMM_T_FREE:
            a->live -= o->size;
            if (end_object(a, o, a->ops, op->tid, 1))
                goto out;
            o->live = 0;
            a->live_objs--;
            break;
        default:
            goto out;
        }
        if (i == sum.peak_index)
            a->peak_op = a->ops;
        sample_point(a, 0);
    }
    if (a->npts == 0 || a->pts[a->npts - 1].op != a->ops)
        sample_point(a, 1);
    /* objects never freed */
    for (uint64_t k = 0; k < sum.objects; k++)
        if (objs[k].live) {
            a->never_freed++;
            if (end_object(a, &objs[k], a->ops, 0, 0))
                goto out;
        }
    rc = 0;
out:
    free(slot);
    free(objs);
    return rc;
}

static int cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

typedef struct szc {
    uint64_t size, count;
} szc;

static int cmp_szc(const void *x, const void *y)
{
    const szc *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->size < b->size ? -1 : a->size > b->size;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The most frequent exact request sizes (sorts a->sizes, counts runs; sets
 * a->distinct). */
static size_t top_sizes(an *a, szc *out, size_t max)
{
    szc *all = malloc((a->nsizes ? a->nsizes : 1) * sizeof *all);
    size_t n = 0;
    if (!all)
        return 0;
    qsort(a->sizes, a->nsizes, sizeof *a->sizes, cmp_u64);
    for (size_t i = 0; i < a->nsizes; i++) {
        if (n && all[n - 1].size == a->sizes[i]) {
            all[n - 1].count++;
            continue;
        }
        all[n].size = a->sizes[i];
        all[n].count = 1;
        n++;
    }
    a->distinct = n;
    qsort(all, n, sizeof *all, cmp_szc);
    if (n > max)
        n = max;
    memcpy(out, all, n * sizeof *out);
    free(all);
    return n;
}

static void json_hist(tj *j, const char *key, const uint64_t *h, const uint64_t *bytes)
{
    tj_arr(j, key);
    for (unsigned i = 0; i < NB; i++) {
        uint64_t lo, hi;
        if (!h[i])
            continue;
        bucket_range(i, &lo, &hi);
        tj_obj(j, NULL);
        j->compact[j->depth] = 1;
        tj_u64(j, "min", lo);
        tj_u64(j, "max", hi);
        tj_u64(j, "count", h[i]);
        if (bytes)
            tj_u64(j, "bytes", bytes[i]);
        tj_obj_end(j);
    }
    tj_arr_end(j);
}

static double median_sorted(const double *v, size_t n)
{
    if (!n)
        return NAN;
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f) { fprintf(f, "usage: " PROG " TRACE [--json FILE]\n"); }

int main(int argc, char **argv)
{
    const char *path = NULL, *json = NULL;
    dmm_trace t;
    dmm_trace_error e;
    an a;
    szc top[TOPN];
    size_t ntop;
    uint64_t hash;
    int rc = 0;
    double chain_median;

    {
        static const struct option longopts[] = {
            {"json", required_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
        int c;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
            if (c == 'j') {
                json = optarg;
            } else if (c == 'h') {
                usage(stdout);
                return 0;
            } else if (c == ':') {
                fprintf(stderr, PROG ": %s needs a file name\n", argv[optind - 1]);
                return 2;
            } else {
                fprintf(stderr, PROG ": unknown option '%s' (see " PROG " --help)\n", argv[optind - 1]);
                return 2;
            }
        }
        for (int i = optind; i < argc; i++) {
            if (path) {
                fprintf(stderr, PROG ": more than one trace given ('%s', '%s')\n", path, argv[i]);
                return 2;
            }
            path = argv[i];
        }
    }
    if (!path) {
        fprintf(stderr, PROG ": no trace given (see " PROG " --help)\n");
        return 2;
    }
    if (tc_load_trace(PROG, path, &t))
        return 2;
    memset(&e, 0, sizeof e);
    if (dmm_trace_validate(&t, &e)) {
        fprintf(stderr, PROG ": %s: operation %" PRIu64 ": %s\n", path, e.offset, e.reason);
        dmm_trace_free(&t);
        return 2;
    }
    hash = dmm_trace_hash(&t);
    if (analyse(&t, &a)) {
        fprintf(stderr, PROG ": out of memory analysing %s\n", path);
        dmm_trace_free(&t);
        return 1;
    }
    ntop = top_sizes(&a, top, TOPN);
    if (a.nchain_ratios)
        qsort(a.chain_ratios, a.nchain_ratios, sizeof *a.chain_ratios, cmp_dbl);
    chain_median = median_sorted(a.chain_ratios, a.nchain_ratios);

    /* ---- text summary ---- */
    {
        FILE *f = json && !strcmp(json, "-") ? stderr : stdout;
        fprintf(f, "trace %s: %" PRIu64 " ops (+%" PRIu64 " syncs), %u thread%s, hash %016" PRIx64 "\n", path, a.ops,
                a.count[DMM_T_SYNC], a.threads, a.threads == 1 ? "" : "s", hash);
        fprintf(f, "  ops       malloc %" PRIu64 ", calloc %" PRIu64 ", realloc %" PRIu64 ", aligned %" PRIu64
                   ", free %" PRIu64 "\n",
                a.count[DMM_T_MALLOC], a.count[DMM_T_CALLOC], a.count[DMM_T_REALLOC], a.count[DMM_T_ALIGNED],
                a.count[DMM_T_FREE]);
        fprintf(f, "  peak live %" PRIu64 " B in %" PRIu64 " objects (at op %" PRIu64 "); %" PRIu64 " objects\n",
                a.peak_live, a.peak_objs, a.peak_op, a.objects);
        if (a.requests)
            fprintf(f, "  requests  %" PRIu64 ", sizes %" PRIu64 "..%" PRIu64 " B, mean %.1f B\n", a.requests,
                    a.min_req, a.max_req, (double)a.request_bytes / (double)a.requests);
        if (ntop) {
            fprintf(f, "  top sizes");
            for (size_t k = 0; k < ntop && k < 5; k++)
                fprintf(f, " %" PRIu64 "x%" PRIu64, top[k].size, top[k].count);
            fputc('\n', f);
        }
        fprintf(f, "  lifetime  %" PRIu64 " freed, mean %.1f ops, max %" PRIu64 "; %" PRIu64 " never freed\n",
                a.freed, a.freed ? a.life_sum / (double)a.freed : 0.0, a.life_max, a.never_freed);
        fprintf(f, "  threads   cross-thread frees %" PRIu64 " of %" PRIu64 " (%.1f%%)\n", a.cross_frees, a.all_frees,
                a.all_frees ? 100.0 * (double)a.cross_frees / (double)a.all_frees : 0.0);
        fprintf(f, "  reallocs  %" PRIu64 " chains, %" PRIu64 " reallocs, median final/initial %.3g\n", a.chains,
                a.chain_reallocs, a.nchain_ratios ? chain_median : 0.0);
    }

    if (json) {
        tc_out out;
        tj j;
        char hx[32];
        if (tc_out_open(&out, PROG, json)) {
            rc = 1;
            goto done;
        }
        tj_init(&j, out.f);
        tj_obj(&j, NULL);
        tj_str(&j, "schema", DMM_SCHEMA_ANALYSE);
        tj_obj(&j, "trace");
        tj_str(&j, "path", path);
        snprintf(hx, sizeof hx, "%016" PRIx64, hash);
        tj_str(&j, "hash", hx);
        tj_u64(&j, "ops", a.ops);
        tj_u64(&j, "syncs", a.count[DMM_T_SYNC]);
        tj_u64(&j, "threads", a.threads);
        tj_str(&j, "meta", t.meta);
        tj_obj_end(&j);

        tj_obj(&j, "op_counts");
        for (unsigned k = DMM_T_MALLOC; k <= DMM_T_SYNC; k++)
            tj_u64(&j, tc_kind_name(k), a.count[k]);
        tj_obj_end(&j);
        tj_arr_compact(&j, "thread_ops");
        for (uint32_t k = 0; k < a.threads; k++)
            tj_u64(&j, NULL, a.thread_ops[k]);
        tj_arr_end(&j);

        tj_obj(&j, "peak");
        tj_u64(&j, "live_bytes", a.peak_live);
        tj_u64(&j, "live_objects", a.peak_objs);
        tj_u64(&j, "op", a.peak_op);
        tj_obj_end(&j);

        tj_obj(&j, "sizes");
        tj_str(&j, "definition", "malloc, calloc, aligned and realloc-to-nonzero request sizes; bucket [2^(i-1), 2^i)");
        tj_u64(&j, "requests", a.requests);
        tj_u64(&j, "bytes", a.request_bytes);
        tj_u64(&j, "min", a.requests ? a.min_req : 0);
        tj_u64(&j, "max", a.max_req);
        tj_dbl(&j, "mean", a.requests ? (double)a.request_bytes / (double)a.requests : NAN);
        tj_u64(&j, "distinct", a.distinct);
        json_hist(&j, "histogram", a.size_hist, a.size_bytes);
        tj_arr(&j, "top");
        for (size_t k = 0; k < ntop; k++) {
            tj_obj(&j, NULL);
            j.compact[j.depth] = 1;
            tj_u64(&j, "size", top[k].size);
            tj_u64(&j, "count", top[k].count);
            tj_obj_end(&j);
        }
        tj_arr_end(&j);
        tj_obj_end(&j);

        tj_obj(&j, "lifetime");
        tj_str(&j, "unit", "operations from allocation to free (SYNCs not counted)");
        tj_u64(&j, "objects", a.objects);
        tj_u64(&j, "freed", a.freed);
        tj_u64(&j, "never_freed", a.never_freed);
        tj_dbl(&j, "mean", a.freed ? a.life_sum / (double)a.freed : NAN);
        tj_u64(&j, "max", a.life_max);
        json_hist(&j, "histogram", a.life_hist, NULL);
        tj_obj_end(&j);

        tj_obj(&j, "live");
        tj_u64(&j, "window", a.window);
        tj_str(&j, "columns", "op (operations done), live_bytes and live_objects after it, "
                              "max_live_bytes within the window ending there");
        tj_arr(&j, "points");
        for (size_t k = 0; k < a.npts; k++) {
            tj_arr_compact(&j, NULL);
            tj_u64(&j, NULL, a.pts[k].op);
            tj_u64(&j, NULL, a.pts[k].live);
            tj_u64(&j, NULL, a.pts[k].objects);
            tj_u64(&j, NULL, a.pts[k].max_live);
            tj_arr_end(&j);
        }
        tj_arr_end(&j);
        tj_obj_end(&j);

        tj_obj(&j, "threads");
        tj_u64(&j, "count", a.threads);
        tj_u64(&j, "frees", a.all_frees);
        tj_u64(&j, "cross_thread_frees", a.cross_frees);
        tj_dbl(&j, "cross_thread_free_fraction", a.all_frees ? (double)a.cross_frees / (double)a.all_frees : 0.0);
        tj_u64(&j, "cross_thread_reallocs", a.cross_reallocs);
        tj_obj_end(&j);

        tj_obj(&j, "realloc");
        tj_u64(&j, "chains", a.chains);
        tj_u64(&j, "reallocs", a.chain_reallocs);
        tj_u64(&j, "grow_steps", a.grow_steps);
        tj_u64(&j, "shrink_steps", a.shrink_steps);
        tj_u64(&j, "same_steps", a.same_steps);
        json_hist(&j, "length_histogram", a.chain_len_hist, NULL);
        tj_dbl(&j, "growth_mean", a.nchain_ratios ? a.chain_ratio_sum / (double)a.nchain_ratios : NAN);
        tj_dbl(&j, "growth_median", a.nchain_ratios ? chain_median : NAN);
        tj_dbl(&j, "growth_geomean", a.nchain_ratios ? exp(a.chain_log_sum / (double)a.nchain_ratios) : NAN);
        tj_str(&j, "growth_definition", "final size / initial size per chain (chains starting at size 0 excluded)");
        tj_obj_end(&j);

        tj_obj_end(&j);
        if (tc_out_close(&out, PROG, tj_finish(&j) == 0))
            rc = 1;
    }
done:
    free(a.thread_ops);
    free(a.pts);
    free(a.chain_ratios);
    free(a.sizes);
    dmm_trace_free(&t);
    return rc;
}

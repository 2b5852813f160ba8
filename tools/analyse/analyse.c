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
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    tc_map exact; /* size -> count */
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

static int note_request(an *a, uint64_t size)
{
    uint64_t c = 0;
    unsigned b = bucket(size);
    a->size_hist[b]++;
    a->size_bytes[b] += size;
    if (!a->requests || size < a->min_req)
        a->min_req = size;
    if (size > a->max_req)
        a->max_req = size;
    a->requests++;
    a->request_bytes += size;
    (void)tc_map_get(&a->exact, size, &c);
    return tc_map_put(&a->exact, size, c + 1);
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

static int analyse(const dmm_trace *t, an *a)
{
    tc_map live; /* id -> index into objs */
    obj *objs = NULL;
    size_t nobj = 0, cap = 0;
    uint64_t nops = 0;
    int rc = -1;
    memset(a, 0, sizeof *a);
    a->threads = t->threads ? t->threads : 1;
    if (!(a->thread_ops = calloc(a->threads, sizeof *a->thread_ops)))
        return -1;
    for (size_t i = 0; i < t->n; i++)
        if (t->ops[i].kind != DMM_T_SYNC)
            nops++;
    a->window = nops > MAX_POINTS ? (size_t)((nops + MAX_POINTS - 1) / MAX_POINTS) : 1;
    if (!(a->pts = calloc(MAX_POINTS + 2, sizeof *a->pts)))
        return -1;
    if (tc_map_init(&live, 1024))
        return -1;
    if (tc_map_init(&a->exact, 256))
        goto out;
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *op = &t->ops[i];
        uint64_t v;
        obj *o;
        if (op->kind <= DMM_T_SYNC)
            a->count[op->kind]++;
        if (op->kind == DMM_T_SYNC)
            continue;
        a->ops++;
        a->thread_ops[op->tid]++;
        switch (op->kind) {
        case DMM_T_MALLOC:
        case DMM_T_CALLOC:
        case DMM_T_ALIGNED:
            if (nobj == cap) {
                size_t nc = cap ? cap * 2 : 1024;
                obj *p = realloc(objs, nc * sizeof *p);
                if (!p)
                    goto out;
                objs = p;
                cap = nc;
            }
            o = &objs[nobj];
            memset(o, 0, sizeof *o);
            o->born = a->ops;
            o->first = o->size = op->size;
            o->tid = op->tid;
            if (tc_map_put(&live, op->id, nobj++) || note_request(a, op->size))
                goto out;
            a->objects++;
            a->live += op->size;
            a->live_objs++;
            break;
        case DMM_T_REALLOC:
            if (!tc_map_get(&live, op->id, &v))
                goto out; /* validated traces never get here */
            o = &objs[v];
            a->live -= o->size;
            if (op->tid != o->tid)
                a->cross_reallocs++;
            if (op->size == 0) {
                if (end_object(a, o, a->ops, op->tid, 1))
                    goto out;
                tc_map_del(&live, op->id);
                a->live_objs--;
                break;
            }
            if (note_request(a, op->size))
                goto out;
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
            if (!tc_map_get(&live, op->id, &v))
                goto out;
            o = &objs[v];
            a->live -= o->size;
            if (end_object(a, o, a->ops, op->tid, 1))
                goto out;
            tc_map_del(&live, op->id);
            a->live_objs--;
            break;
        default:
            goto out;
        }
        if (a->live > a->peak_live) {
            a->peak_live = a->live;
            a->peak_op = a->ops;
        }
        if (a->live_objs > a->peak_objs)
            a->peak_objs = a->live_objs;
        sample_point(a, 0);
    }
    if (a->npts == 0 || a->pts[a->npts - 1].op != a->ops)
        sample_point(a, 1);
    /* objects never freed */
    for (size_t k = 0; k < live.cap; k++)
        if (live.used[k] == 1) {
            a->never_freed++;
            if (end_object(a, &objs[live.vals[k]], a->ops, 0, 0))
                goto out;
        }
    rc = 0;
out:
    tc_map_free(&live);
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

static size_t top_sizes(const an *a, szc *out, size_t max)
{
    szc *all = malloc((a->exact.n ? a->exact.n : 1) * sizeof *all);
    size_t n = 0;
    if (!all)
        return 0;
    for (size_t k = 0; k < a->exact.cap; k++)
        if (a->exact.used[k] == 1) {
            all[n].size = a->exact.keys[k];
            all[n].count = a->exact.vals[k];
            n++;
        }
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

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            if (i + 1 >= argc) {
                fprintf(stderr, PROG ": --json needs a file name\n");
                return 2;
            }
            json = argv[++i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, PROG ": unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, PROG ": more than one trace given\n");
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
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
        FILE *jf = !strcmp(json, "-") ? stdout : fopen(json, "w");
        tj j;
        char hx[32];
        if (!jf) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", json, strerror(errno));
            rc = 1;
            goto done;
        }
        tj_init(&j, jf);
        tj_obj(&j, NULL);
        tj_str(&j, "schema", "dmm-analyse/1");
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
        tj_u64(&j, "distinct", a.exact.n);
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
        if (tj_finish(&j))
            rc = 1;
        if (jf != stdout && fclose(jf))
            rc = 1;
        if (rc)
            fprintf(stderr, PROG ": error writing %s\n", json);
    }
done:
    free(a.thread_ops);
    free(a.pts);
    free(a.chain_ratios);
    tc_map_free(&a.exact);
    dmm_trace_free(&t);
    return rc;
}

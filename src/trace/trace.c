/*
 * src/trace/trace.c - the in-memory trace, validation, derived
 * synchronisation, hashing and the randomised-free transform.
 * File formats live in trace_io.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* qsort_r */
#endif
#include "dmm/trace.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"

void dmm_trace_init(dmm_trace *t) { memset(t, 0, sizeof *t); }

void dmm_trace_free(dmm_trace *t)
{
    free(t->ops);
    free(t->meta);
    dmm_trace_init(t);
}

int dmm_trace_push(dmm_trace *t, const dmm_trace_op *op)
{
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        dmm_trace_op *p;
        if (nc > SIZE_MAX / sizeof *p)
            return -1;
        p = realloc(t->ops, nc * sizeof *p);
        if (!p)
            return -1;
        t->ops = p;
        t->cap = nc;
    }
    t->ops[t->n++] = *op;
    if (op->tid + 1u > t->threads)
        t->threads = op->tid + 1u;
    return 0;
}

int dmm_trace_set_meta(dmm_trace *t, const char *meta)
{
    char *m = NULL;
    if (meta) {
        size_t n = strlen(meta);
        if (!(m = malloc(n + 1)))
            return -1;
        memcpy(m, meta, n + 1);
    }
    free(t->meta);
    t->meta = m;
    return 0;
}

/* ---- derived synchronisation ---------------------------------------- */

int dmm_trace_add_syncs(dmm_trace *t)
{
    dmm_idmap last; /* id -> (tid << 40) | ops done by tid after the touch */
    uint64_t *done = calloc(t->threads ? t->threads : 1, sizeof *done);
    dmm_trace out;
    int rc = -1;
    if (!done)
        return -1;
    dmm_trace_init(&out);
    if (dmm_idmap_init(&last, 1024)) {
        free(done);
        return -1;
    }
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *op = &t->ops[i];
        uint64_t v;
        if (op->kind == DMM_T_SYNC)
            continue;
        if (dmm_idmap_get(&last, op->id, &v) == 0) {
            uint32_t owner = (uint32_t)(v >> 40);
            if (owner != op->tid) {
                dmm_trace_op s;
                memset(&s, 0, sizeof s);
                s.kind = DMM_T_SYNC;
                s.tid = op->tid;
                s.arg = owner;
                s.size = v & (((uint64_t)1 << 40) - 1u);
                s.t_ns = op->t_ns;
                if (dmm_trace_push(&out, &s))
                    goto done;
            }
        }
        if (dmm_trace_push(&out, op))
            goto done;
        done[op->tid]++;
        if (dmm_idmap_put(&last, op->id, ((uint64_t)op->tid << 40) | done[op->tid]))
            goto done;
    }
    free(t->ops);
    t->ops = out.ops;
    t->n = out.n;
    t->cap = out.cap;
    out.ops = NULL;
    rc = 0;
done:
    dmm_trace_free(&out);
    dmm_idmap_free(&last);
    free(done);
    return rc;
}

/* ---- validation --------------------------------------------------------- */

static int verr(dmm_trace_error *err, uint64_t at, const char *why)
{
    if (err) {
        err->offset = at;
        err->is_line = 0;
        snprintf(err->reason, sizeof err->reason, "%s", why);
    }
    return -1;
}

int dmm_trace_validate(const dmm_trace *t, dmm_trace_error *err)
{
    dmm_idmap live;
    uint64_t *done;
    int rc = -1;
    if (t->threads > DMM_TRACE_MAX_THREADS)
        return verr(err, 0, "too many threads");
    if (!(done = calloc(t->threads ? t->threads : 1, sizeof *done)))
        return verr(err, 0, "out of memory");
    if (dmm_idmap_init(&live, 1024)) {
        free(done);
        return verr(err, 0, "out of memory");
    }
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *op = &t->ops[i];
        uint64_t v;
        int is_live = dmm_idmap_get(&live, op->id, &v) == 0;
        switch (op->kind) {
        case DMM_T_MALLOC:
        case DMM_T_CALLOC:
        case DMM_T_ALIGNED:
            if (is_live) {
                verr(err, i, "object allocated while still live");
                goto out;
            }
            if (op->kind == DMM_T_ALIGNED && (op->arg == 0 || (op->arg & (op->arg - 1u)))) {
                verr(err, i, "alignment is not a power of two");
                goto out;
            }
            if (op->kind == DMM_T_ALIGNED && op->sub > DMM_TA_PVALLOC) {
                verr(err, i, "unknown aligned allocation API");
                goto out;
            }
            if (dmm_idmap_put(&live, op->id, 1)) {
                verr(err, i, "out of memory");
                goto out;
            }
            break;
        case DMM_T_REALLOC:
            if (!is_live) {
                verr(err, i, "realloc of an object that is not live");
                goto out;
            }
            if (op->size == 0)
                dmm_idmap_del(&live, op->id);
            break;
        case DMM_T_FREE:
            if (!is_live) {
                verr(err, i, "free of an object that is not live (double free or never allocated)");
                goto out;
            }
            dmm_idmap_del(&live, op->id);
            break;
        case DMM_T_SYNC:
            if (op->arg >= t->threads || op->arg == op->tid) {
                verr(err, i, "sync names a thread that does not exist or itself");
                goto out;
            }
            if (op->size > done[op->arg]) {
                verr(err, i, "sync waits for an operation its thread has not done yet in trace order");
                goto out;
            }
            break;
        default:
            verr(err, i, "unknown operation kind");
            goto out;
        }
        if (op->kind != DMM_T_SYNC)
            done[op->tid]++;
    }
    rc = 0;
out:
    dmm_idmap_free(&live);
    free(done);
    return rc;
}

/* ---- synchronisation cover ------------------------------------------------ */

int dmm_trace_syncs_cover(const dmm_trace *t)
{
    dmm_idmap last;  /* object id -> (tid << 40) | count of tid's ops after the touch */
    dmm_idmap known; /* (tid << 32) | other -> ops of other known done */
    uint64_t *done;
    int rc = 1;
    if (t->threads <= 1)
        return 1;
    if (!(done = calloc(t->threads, sizeof *done)))
        return -1;
    if (dmm_idmap_init(&last, 1024)) {
        free(done);
        return -1;
    }
    if (dmm_idmap_init(&known, 64)) {
        dmm_idmap_free(&last);
        free(done);
        return -1;
    }
    for (size_t i = 0; i < t->n && rc == 1; i++) {
        const dmm_trace_op *op = &t->ops[i];
        uint64_t v, k;
        if (op->kind == DMM_T_SYNC) {
            k = ((uint64_t)op->tid << 32) | (uint32_t)op->arg;
            if ((dmm_idmap_get(&known, k, &v) != 0 || v < op->size) && dmm_idmap_put(&known, k, op->size))
                rc = -1;
            continue;
        }
        if (dmm_idmap_get(&last, op->id, &v) == 0) {
            uint32_t owner = (uint32_t)(v >> 40);
            uint64_t cnt = v & (((uint64_t)1 << 40) - 1u);
            if (owner != op->tid) {
                uint64_t kv = 0;
                k = ((uint64_t)op->tid << 32) | owner;
                if (dmm_idmap_get(&known, k, &kv) != 0 || kv < cnt)
                    rc = 0;
            }
        }
        done[op->tid]++;
        if (dmm_idmap_put(&last, op->id, ((uint64_t)op->tid << 40) | done[op->tid]))
            rc = -1;
    }
    dmm_idmap_free(&last);
    dmm_idmap_free(&known);
    free(done);
    return rc;
}

/* ---- thread numbering ------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int dmm_trace_compact_threads(dmm_trace *t)
{
    dmm_idmap map; /* old tid -> new tid */
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0;
    uint32_t prev = UINT32_MAX;
    int dense = 1;
    /* Fast path: already dense when the first appearances are 0, 1, 2, ...
     * in some order and no id is skipped (checked below with the map). */
    if (t->n == 0) {
        t->threads = 0;
        return 0;
    }
    if (dmm_idmap_init(&map, 16))
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        uint32_t tid = t->ops[i].tid;
        uint64_t v;
        if (tid == prev)
            continue;
        prev = tid;
        if (dmm_idmap_get(&map, tid, &v) == 0)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            uint32_t *p = realloc(ids, nc * sizeof *p);
            if (!p)
                goto oom;
            ids = p;
            cap = nc;
        }
        ids[n++] = tid;
        if (dmm_idmap_put(&map, tid, 0))
            goto oom;
    }
    qsort(ids, n, sizeof *ids, cmp_u32);
    for (size_t k = 0; k < n; k++) {
        if (ids[k] != k)
            dense = 0;
        if (dmm_idmap_put(&map, ids[k], k))
            goto oom;
    }
    if (!dense) {
        for (size_t i = 0; i < t->n; i++) {
            dmm_trace_op *op = &t->ops[i];
            uint64_t v = 0;
            (void)dmm_idmap_get(&map, op->tid, &v);
            op->tid = (uint32_t)v;
            if (op->kind == DMM_T_SYNC) {
                if (op->arg <= UINT32_MAX && dmm_idmap_get(&map, op->arg, &v) == 0)
                    op->arg = v;
                else
                    op->arg = UINT64_MAX; /* names no thread: validation refuses it */
            }
        }
    }
    t->threads = (uint32_t)n;
    dmm_idmap_free(&map);
    free(ids);
    return 0;
oom:
    dmm_idmap_free(&map);
    free(ids);
    return -1;
}

/* ---- summary ----------------------------------------------------------------- */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

int dmm_trace_summarize(const dmm_trace *t, dmm_trace_summary *s, uint64_t *slot, dmm_trace_error *err)
{
    dmm_idmap live; /* object id -> incarnation */
    uint64_t *cur = NULL; /* incarnation -> current size */
    size_t cur_cap = 0;
    uint64_t live_bytes = 0, live_objs = 0;
    int rc = -1;
    memset(s, 0, sizeof *s);
    if (dmm_idmap_init(&live, 1024))
        return verr(err, 0, "out of memory");
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *op = &t->ops[i];
        uint64_t k = UINT64_MAX;
        if (op->kind <= DMM_T_SYNC)
            s->kind_count[op->kind]++;
        switch (op->kind) {
        case DMM_T_MALLOC:
        case DMM_T_CALLOC:
        case DMM_T_ALIGNED:
            k = s->objects++;
            if (k >= cur_cap) {
                size_t nc = cur_cap ? cur_cap * 2 : 1024;
                uint64_t *p = realloc(cur, nc * sizeof *p);
                if (!p) {
                    verr(err, i, "out of memory");
                    goto out;
                }
                cur = p;
                cur_cap = nc;
            }
            if (dmm_idmap_put(&live, op->id, k)) {
                verr(err, i, "out of memory");
                goto out;
            }
            cur[k] = op->size > PTRDIFF_MAX - live_bytes ? 0 : op->size;
            if (op->size > PTRDIFF_MAX - live_bytes)
                s->impossible++;
            live_bytes += cur[k];
            live_objs++;
            s->total_requested = sat_add(s->total_requested, cur[k]);
            if (op->size > s->max_request)
                s->max_request = op->size;
            break;
        case DMM_T_REALLOC:
            if (dmm_idmap_get(&live, op->id, &k) != 0) {
                verr(err, i, "realloc of an object that is not live");
                goto out;
            }
            live_bytes -= cur[k];
            if (op->size == 0) {
                dmm_idmap_del(&live, op->id);
                live_objs--;
                cur[k] = 0;
            } else if (op->size > PTRDIFF_MAX - live_bytes) {
                s->impossible++; /* fails; the object keeps its old size */
                live_bytes += cur[k];
                if (op->size > s->max_request)
                    s->max_request = op->size;
            } else {
                live_bytes += op->size;
                if (op->size > cur[k])
                    s->total_requested = sat_add(s->total_requested, op->size - cur[k]);
                cur[k] = op->size;
                if (op->size > s->max_request)
                    s->max_request = op->size;
            }
            break;
        case DMM_T_FREE:
            if (dmm_idmap_get(&live, op->id, &k) != 0) {
                verr(err, i, "free of an object that is not live");
                goto out;
            }
            dmm_idmap_del(&live, op->id);
            live_bytes -= cur[k];
            live_objs--;
            cur[k] = 0;
            break;
        case DMM_T_SYNC:
            s->syncs++;
            if (slot)
                slot[i] = UINT64_MAX;
            continue;
        default:
            verr(err, i, "unknown operation kind");
            goto out;
        }
        if (slot)
            slot[i] = k;
        s->ops++;
        if (live_bytes > s->peak_live) {
            s->peak_live = live_bytes;
            s->peak_index = i;
        }
        if (live_objs > s->peak_objects)
            s->peak_objects = live_objs;
    }
    s->end_live = live_bytes;
    s->end_objects = live_objs;
    rc = 0;
out:
    dmm_idmap_free(&live);
    free(cur);
    return rc;
}

/* ---- hashing -------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t dmm_trace_hash(const dmm_trace *t)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *op = &t->ops[i];
        h = fnv(h, (uint64_t)op->kind | ((uint64_t)op->sub << 8) | ((uint64_t)op->tid << 16));
        h = fnv(h, op->id);
        h = fnv(h, op->size);
        h = fnv(h, op->arg);
    }
    return h;
}

/* ---- randomised free points ---------------------------------------------- */

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

typedef struct rf_obj {
    size_t last;   /* index (among kept ops) of the allocation or last realloc */
    int freed;
    size_t slot;   /* frees happen after kept op slot-1 */
    uint64_t nid;  /* fresh id */
} rf_obj;

static int cmp_slot(const void *a, const void *b, void *ctx);

int dmm_trace_randomize_frees(const dmm_trace *in, dmm_trace *out, uint64_t seed)
{
    dmm_idmap cur; /* original id -> object index */
    rf_obj *objs = NULL;
    size_t nobj = 0, cap = 0, kept = 0;
    size_t *kept_obj = NULL; /* kept op index -> object index */
    size_t *order = NULL;
    uint64_t s = seed ? seed : 0x9E3779B97F4A7C15ull;
    int rc = -1;
    dmm_trace_init(out);
    if (dmm_idmap_init(&cur, 1024))
        return -1;
    if (!(kept_obj = malloc((in->n ? in->n : 1) * sizeof *kept_obj)))
        goto done;
    for (size_t i = 0; i < in->n; i++) {
        const dmm_trace_op *op = &in->ops[i];
        uint64_t v;
        if (op->kind == DMM_T_SYNC)
            continue;
        if (op->kind == DMM_T_FREE || (op->kind == DMM_T_REALLOC && op->size == 0)) {
            if (dmm_idmap_get(&cur, op->id, &v) == 0) {
                objs[v].freed = 1;
                dmm_idmap_del(&cur, op->id);
            }
            continue;
        }
        if (op->kind == DMM_T_REALLOC) {
            if (dmm_idmap_get(&cur, op->id, &v) != 0)
                goto done; /* not a valid trace */
            objs[v].last = kept;
        } else {
            if (nobj == cap) {
                size_t nc = cap ? cap * 2 : 1024;
                rf_obj *p = realloc(objs, nc * sizeof *p);
                if (!p)
                    goto done;
                objs = p;
                cap = nc;
            }
            objs[nobj].last = kept;
            objs[nobj].freed = 0;
            objs[nobj].nid = nobj + 1;
            v = nobj++;
            if (dmm_idmap_put(&cur, op->id, v))
                goto done;
        }
        kept_obj[kept] = (size_t)v;
        kept++;
    }
    /* draw each free slot uniformly in (last, kept] */
    for (size_t o = 0; o < nobj; o++)
        if (objs[o].freed) {
            size_t span = kept - objs[o].last;
            objs[o].slot = objs[o].last + 1 + (size_t)(xorshift(&s) % span);
        }
    if (!(order = malloc((nobj ? nobj : 1) * sizeof *order)))
        goto done;
    {
        size_t nf = 0;
        for (size_t o = 0; o < nobj; o++)
            if (objs[o].freed)
                order[nf++] = o;
        qsort_r(order, nf, sizeof *order, cmp_slot, objs);
        {
            size_t k = 0, f = 0;
            for (size_t i = 0; i < in->n; i++) {
                const dmm_trace_op *op = &in->ops[i];
                dmm_trace_op o2;
                if (op->kind == DMM_T_SYNC || op->kind == DMM_T_FREE || (op->kind == DMM_T_REALLOC && op->size == 0))
                    continue;
                o2 = *op;
                o2.tid = 0;
                o2.id = objs[kept_obj[k]].nid;
                if (dmm_trace_push(out, &o2))
                    goto done;
                k++;
                while (f < nf && objs[order[f]].slot == k) {
                    dmm_trace_op fr;
                    memset(&fr, 0, sizeof fr);
                    fr.kind = DMM_T_FREE;
                    fr.id = objs[order[f]].nid;
                    fr.t_ns = op->t_ns;
                    if (dmm_trace_push(out, &fr))
                        goto done;
                    f++;
                }
            }
        }
    }
    out->has_time = in->has_time;
    if (dmm_trace_set_meta(out, in->meta))
        goto done;
    rc = 0;
done:
    if (rc)
        dmm_trace_free(out);
    free(order);
    free(kept_obj);
    free(objs);
    dmm_idmap_free(&cur);
    return rc;
}

static int cmp_slot(const void *a, const void *b, void *ctx)
{
    const rf_obj *objs = ctx;
    size_t x = objs[*(const size_t *)a].slot, y = objs[*(const size_t *)b].slot;
    if (x != y)
        return x < y ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/*
 * tools/replay/replay.c - the replay engine (see replay.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "replay.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/tcommon.h"
#include "rp_clock.h"

const char *const rp_kind_names[RK_COUNT] = {"malloc", "calloc", "realloc", "aligned", "free"};

/* ======================================================================
 * the engine's own large buffers come from mmap, not malloc, so that a
 * replay against the system malloc measures the trace's blocks and not the
 * replayer's (plan, slots, histograms)
 * ====================================================================== */

#define BIG_HDR 64u

void *rp_big_alloc(size_t bytes)
{
    size_t total;
    unsigned char *p;
    if (bytes > SIZE_MAX - BIG_HDR - 4096u)
        return NULL;
    total = bytes + BIG_HDR;
    p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    memcpy(p, &total, sizeof total);
    return p + BIG_HDR; /* zero-filled */
}

void rp_big_free(void *ptr)
{
    unsigned char *p = ptr;
    size_t total;
    if (!p)
        return;
    p -= BIG_HDR;
    memcpy(&total, p, sizeof total);
    munmap(p, total);
}

/* ======================================================================
 * histogram
 * ====================================================================== */

static unsigned hist_bucket(uint64_t v)
{
    unsigned e;
    if (v < RP_HIST_LINEAR)
        return (unsigned)v;
    e = 63u - (unsigned)__builtin_clzll(v); /* >= 10 */
    return RP_HIST_LINEAR + (e - 10u) * RP_HIST_SUB + (unsigned)((v >> (e - 6u)) & (RP_HIST_SUB - 1u));
}

/* Lowest value and width of bucket i. */
static void hist_range(unsigned i, uint64_t *lo, uint64_t *width)
{
    unsigned e, sub;
    if (i < RP_HIST_LINEAR) {
        *lo = i;
        *width = 1;
        return;
    }
    e = (i - RP_HIST_LINEAR) / RP_HIST_SUB + 10u;
    sub = (i - RP_HIST_LINEAR) % RP_HIST_SUB;
    *lo = (uint64_t)(RP_HIST_SUB + sub) << (e - 6u);
    *width = (uint64_t)1 << (e - 6u);
}

int rp_hist_add(rp_hist *h, uint64_t v)
{
    if (!h->b && !(h->b = rp_big_alloc(RP_HIST_BUCKETS * sizeof *h->b)))
        return -1;
    h->b[hist_bucket(v)]++;
    if (!h->count || v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->count++;
    h->sum += v;
    return 0;
}

int rp_hist_merge(rp_hist *dst, const rp_hist *src)
{
    if (!src->count)
        return 0;
    if (!dst->b && !(dst->b = rp_big_alloc(RP_HIST_BUCKETS * sizeof *dst->b)))
        return -1;
    for (unsigned i = 0; i < RP_HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
    if (!dst->count || src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    dst->count += src->count;
    dst->sum += src->sum;
    return 0;
}

uint64_t rp_hist_quantile(const rp_hist *h, double q)
{
    uint64_t rank, seen = 0;
    if (!h->count || !h->b)
        return 0;
    if (q <= 0)
        return h->min;
    if (q >= 1)
        return h->max;
    /* nearest-rank: the smallest value with at least q*count samples <= it */
    rank = (uint64_t)(q * (double)h->count);
    if ((double)rank < q * (double)h->count)
        rank++;
    if (rank == 0)
        rank = 1;
    for (unsigned i = 0; i < RP_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t lo, w, v;
            hist_range(i, &lo, &w);
            v = lo + w / 2;
            if (v > h->max)
                v = h->max;
            if (v < h->min)
                v = h->min;
            return v;
        }
    }
    return h->max;
}

void rp_hist_bucket_range(unsigned i, uint64_t *lo, uint64_t *width) { hist_range(i, lo, width); }

void rp_hist_free(rp_hist *h)
{
    rp_big_free(h->b);
    memset(h, 0, sizeof *h);
}

/* ======================================================================
 * plan
 * ====================================================================== */

static int plan_err(char *err, size_t cap, const char *msg)
{
    if (err && cap)
        snprintf(err, cap, "%s", msg);
    return -1;
}

/* orig: when not NULL, the index in the caller's trace of each non-SYNC op
 * (the trace planned here had its SYNCs re-derived).  Object incarnations
 * and every figure the trace determines come from dmm_trace_summarize. */
static int plan_build_checked(const dmm_trace *t, const uint64_t *orig, rp_plan *p, char *err, size_t cap)
{
    uint64_t nonsync = 0;
    uint64_t *slot = NULL; /* per trace op: its object incarnation */
    size_t *fill = NULL;
    dmm_trace_summary sum;
    dmm_trace_error e;
    int rc = -1;

    p->threads = t->threads ? t->threads : 1;
    if (!(slot = malloc((t->n ? t->n : 1) * sizeof *slot)))
        goto oom;
    if (dmm_trace_summarize(t, &sum, slot, &e)) {
        snprintf(err, cap, "operation %llu: %s", (unsigned long long)e.offset, e.reason);
        goto out;
    }
    p->nslots = sum.objects;
    p->ops = sum.ops;
    p->syncs = sum.syncs;
    memcpy(p->kind_count, sum.kind_count, sizeof p->kind_count);
    p->peak_live = sum.peak_live;
    p->peak_objects = sum.peak_objects;
    p->peak_index = sum.peak_index; /* an index of t: mapped to orig below */
    p->total_requested = sum.total_requested;
    p->max_request = sum.max_request;
    p->impossible = sum.impossible;

    p->stream = calloc(p->threads, sizeof *p->stream);
    p->len = calloc(p->threads, sizeof *p->len);
    fill = calloc(p->threads, sizeof *fill);
    if (!p->stream || !p->len || !fill)
        goto oom;
    for (size_t i = 0; i < t->n; i++)
        p->len[t->ops[i].tid]++;
    for (uint32_t k = 0; k < p->threads; k++)
        if (!(p->stream[k] = rp_big_alloc((p->len[k] ? p->len[k] : 1) * sizeof(rp_op))))
            goto oom;
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *op = &t->ops[i];
        rp_op *r = &p->stream[op->tid][fill[op->tid]++];
        memset(r, 0, sizeof *r);
        r->kind = op->kind;
        r->sub = op->sub;
        r->size = op->size;
        r->arg = op->arg;
        r->index = i;
        r->tid = (uint16_t)op->tid;
        if (op->kind == DMM_T_SYNC) {
            r->thread = (uint32_t)op->arg;
            continue;
        }
        if (orig)
            r->index = orig[nonsync];
        if (orig && i == sum.peak_index)
            p->peak_index = r->index;
        r->slot = slot[i];
        r->thread = (uint32_t)nonsync++; /* seq: position among non-SYNC ops */
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, cap, "out of memory building the replay plan");
out:
    free(slot);
    free(fill);
    return rc;
}

int rp_plan_build(const dmm_trace *t, rp_plan *p, char *err, size_t cap)
{
    int cover;
    memset(p, 0, sizeof *p);
    if ((cover = dmm_trace_syncs_cover(t)) < 0)
        return plan_err(err, cap, "out of memory checking synchronisation");
    if (cover) {
        if (plan_build_checked(t, NULL, p, err, cap)) {
            rp_plan_free(p);
            return -1;
        }
        return 0;
    }
    /* Derive direct synchronisation on a copy, then plan that. */
    {
        dmm_trace c;
        dmm_trace_error e;
        int rc;
        size_t k = 0;
        uint64_t *orig = malloc((t->n ? t->n : 1) * sizeof *orig);
        if (!orig)
            return plan_err(err, cap, "out of memory copying the trace");
        for (size_t i = 0; i < t->n; i++)
            if (t->ops[i].kind != DMM_T_SYNC)
                orig[k++] = i;
        dmm_trace_init(&c);
        for (size_t i = 0; i < t->n; i++)
            if (dmm_trace_push(&c, &t->ops[i])) {
                dmm_trace_free(&c);
                free(orig);
                return plan_err(err, cap, "out of memory copying the trace");
            }
        c.threads = t->threads;
        if (dmm_trace_add_syncs(&c)) {
            dmm_trace_free(&c);
            free(orig);
            return plan_err(err, cap, "out of memory deriving synchronisation");
        }
        if (dmm_trace_validate(&c, &e)) {
            snprintf(err, cap, "trace with derived synchronisation does not validate: op %llu: %s",
                     (unsigned long long)e.offset, e.reason);
            dmm_trace_free(&c);
            free(orig);
            return -1;
        }
        rc = plan_build_checked(&c, orig, p, err, cap);
        dmm_trace_free(&c);
        free(orig);
        if (rc) {
            rp_plan_free(p);
            return -1;
        }
        p->syncs_derived = 1;
        return 0;
    }
}

int rp_plan_flatten(rp_plan *p)
{
    if (p->flat)
        return 0;
    if (p->ops > UINT32_MAX)
        return -1;
    if (!(p->flat = rp_big_alloc((p->ops ? p->ops : 1) * sizeof *p->flat)))
        return -1;
    /* every non-SYNC op knows its position in trace order (seq) */
    for (uint32_t k = 0; k < p->threads; k++)
        for (size_t i = 0; i < p->len[k]; i++) {
            const rp_op *op = &p->stream[k][i];
            if (op->kind != DMM_T_SYNC)
                p->flat[op->thread] = *op;
        }
    p->flat_len = (size_t)p->ops;
    return 0;
}

static unsigned class_of(uint64_t size, const uint64_t *bound, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (size <= bound[i])
            return i;
    return 255u;
}

int rp_plan_class_peaks(rp_plan *p, const uint64_t *bound, unsigned n, uint64_t *peak)
{
    uint8_t *cls;
    uint64_t live[255];
    if (n > 255u || rp_plan_flatten(p))
        return -1;
    memset(live, 0, sizeof live);
    for (unsigned i = 0; i < n; i++)
        peak[i] = 0;
    if (!(cls = rp_big_alloc(p->nslots ? p->nslots : 1)))
        return -1;
    memset(cls, 0xFF, p->nslots ? p->nslots : 1);
    for (size_t i = 0; i < p->flat_len; i++) {
        const rp_op *op = &p->flat[i];
        unsigned c, was = cls[op->slot];
        switch (op->kind) {
        case DMM_T_MALLOC:
        case DMM_T_CALLOC:
        case DMM_T_ALIGNED:
        case DMM_T_REALLOC:
            if (op->kind == DMM_T_REALLOC && op->size == 0)
                c = 255u; /* realloc(p, 0) frees */
            else
                c = class_of(op->size, bound, n);
            break;
        case DMM_T_FREE:
            c = 255u;
            break;
        default:
            continue;
        }
        if (was != 255u)
            live[was]--;
        cls[op->slot] = (uint8_t)c;
        if (c != 255u && ++live[c] > peak[c])
            peak[c] = live[c];
    }
    rp_big_free(cls);
    return 0;
}

void rp_plan_free(rp_plan *p)
{
    if (p->stream)
        for (uint32_t k = 0; k < p->threads; k++)
            rp_big_free(p->stream[k]);
    free(p->stream);
    free(p->len);
    rp_big_free(p->flat);
    memset(p, 0, sizeof *p);
}

/* ======================================================================
 * pass
 * ====================================================================== */

typedef struct slot {
    void *ptr;
    uint64_t size; /* requested bytes the block holds for the replay */
} slot;

typedef struct padded_counter {
    _Alignas(64) atomic_uint_fast64_t v;
    char pad[64 - sizeof(atomic_uint_fast64_t)];
} padded_counter;

typedef struct pass_ctx {
    const rp_plan *p;
    rp_backend *b;
    const rp_pass_opts *o;
    rp_pass_result *r;
    slot *slots;
    padded_counter *done;
    int mt;
    atomic_int stop;
    atomic_int go;
    /* live tracking */
    uint64_t live;               /* single thread */
    uint64_t peak;
    _Atomic int64_t alive;       /* multi-threaded */
    atomic_uint_fast64_t apeak;
    atomic_int reached_trace_peak;
    uint64_t pass_start_ns;
    pthread_mutex_t sample_lock;
    pthread_mutex_t fail_lock;
    atomic_uint_fast64_t failed_total;
    atomic_uint_fast64_t tl_ops; /* operations done, all threads (--timeline) */
} pass_ctx;

typedef struct thread_arg {
    pass_ctx *c;
    uint32_t tid;
    const rp_op *ops;
    size_t n;
    rp_thread_result *res;
    int oom;
} thread_arg;

/* ---- verification pattern ---- */

static inline uint64_t pat_word(uint64_t seed, uint64_t k) { return seed ^ (k * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull); }

static void pat_fill(unsigned char *p, uint64_t from, uint64_t to, uint64_t seed)
{
    uint64_t i = from;
    while (i < to && (i & 7u)) {
        uint64_t w = pat_word(seed, i >> 3);
        p[i] = (unsigned char)(w >> (8u * (i & 7u)));
        i++;
    }
    for (; i + 8 <= to; i += 8) {
        uint64_t w = pat_word(seed, i >> 3);
        memcpy(p + i, &w, 8); /* little and big endian: byte order below matches */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (unsigned k = 0; k < 8; k++)
            p[i + k] = (unsigned char)(w >> (8u * k));
#endif
    }
    for (; i < to; i++) {
        uint64_t w = pat_word(seed, i >> 3);
        p[i] = (unsigned char)(w >> (8u * (i & 7u)));
    }
}

/* Returns the first offset in [from, to) that differs, or UINT64_MAX. */
static uint64_t pat_check(const unsigned char *p, uint64_t from, uint64_t to, uint64_t seed)
{
    for (uint64_t i = from; i < to; i++) {
        if ((i & 7u) == 0 && i + 8 <= to) {
            uint64_t w = pat_word(seed, i >> 3), got;
            memcpy(&got, p + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            got = __builtin_bswap64(got);
#endif
            if (got == w) {
                i += 7;
                continue;
            }
        }
        if (p[i] != (unsigned char)(pat_word(seed, i >> 3) >> (8u * (i & 7u))))
            return i;
    }
    return UINT64_MAX;
}

static uint64_t zero_check(const unsigned char *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i])
            return i;
    return UINT64_MAX;
}

static inline uint64_t slot_seed(uint64_t s) { return tc_mix64(s * 2u + 1u); }

static void verify_fail(pass_ctx *c, const rp_op *op, const char *what, uint64_t off)
{
    pthread_mutex_lock(&c->fail_lock);
    if (!c->r->verify_failed || op->index < c->r->verify_index) {
        c->r->verify_failed = 1;
        c->r->verify_index = op->index;
        if (off == UINT64_MAX)
            snprintf(c->r->verify_msg, sizeof c->r->verify_msg, "%s", what);
        else
            snprintf(c->r->verify_msg, sizeof c->r->verify_msg, "%s (byte %llu of the block)", what,
                     (unsigned long long)off);
    }
    pthread_mutex_unlock(&c->fail_lock);
    atomic_store(&c->stop, 1);
}

/* ---- memory sampling ---- */

static void mem_max(rp_mem *acc, const rp_mem *m)
{
#define MX(f)                                                                                                \
    if (m->f > acc->f)                                                                                      \
    acc->f = m->f
    MX(live);
    MX(footprint);
    MX(used);
    MX(meta);
    MX(rss);
    MX(regions);
#undef MX
    acc->used_known |= m->used_known;
    acc->meta_known |= m->meta_known;
    acc->valid = 1;
}

static inline uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* One snapshot, net of the baseline when the backend wants that. */
static int sample_net(pass_ctx *c, rp_mem *m)
{
    const rp_mem *base = &c->r->baseline;
    memset(m, 0, sizeof *m);
    if (!c->b->sample || c->b->sample(c->b, m) != 0)
        return -1;
    m->valid = 1;
    if (c->b->subtract_baseline && base->valid) {
        m->footprint = sat_sub(m->footprint, base->footprint);
        m->used = sat_sub(m->used, base->used);
        m->meta = sat_sub(m->meta, base->meta);
    }
    return 0;
}

static void take_baseline(pass_ctx *c)
{
    rp_mem m;
    memset(&c->r->baseline, 0, sizeof c->r->baseline);
    if (c->o->sample_mem && sample_net(c, &m) == 0)
        c->r->baseline = m;
}

static void take_sample(pass_ctx *c, uint64_t live)
{
    rp_mem m;
    uint64_t t0 = tc_now_ns();
    if (sample_net(c, &m) == 0) {
        m.live = live;
        mem_max(&c->r->peak, &m);
        if (!c->r->at_peak.valid || live >= c->r->at_peak.live)
            c->r->at_peak = m;
    }
    c->r->samples++;
    c->r->sample_ns += tc_now_ns() - t0;
}

/* Called on a new live peak.  The first time the trace's own peak is
 * reached a sample is always taken; later peaks are sampled while sampling
 * has cost at most 1/20 of the pass so far. */
static void on_new_peak(pass_ctx *c, uint64_t live)
{
    int forced = 0;
    if (!c->o->sample_mem || !c->b->sample)
        return;
    if (live >= c->p->peak_live && !atomic_load_explicit(&c->reached_trace_peak, memory_order_relaxed)) {
        if (c->mt)
            pthread_mutex_lock(&c->sample_lock);
        forced = !atomic_exchange(&c->reached_trace_peak, 1);
    } else if (c->mt && pthread_mutex_trylock(&c->sample_lock)) {
        return;
    }
    if (forced || c->r->samples < 16 || c->r->sample_ns * 20u <= tc_now_ns() - c->pass_start_ns)
        take_sample(c, live);
    if (forced && c->o->on_trace_peak)
        c->o->on_trace_peak(c->o->peak_ctx, live);
    if (c->mt)
        pthread_mutex_unlock(&c->sample_lock);
}

static inline void live_change(pass_ctx *c, int64_t delta)
{
    if (!delta)
        return;
    if (!c->mt) {
        c->live += (uint64_t)delta;
        if (c->live > c->peak) {
            c->peak = c->live;
            on_new_peak(c, c->live);
        }
    } else {
        int64_t nl = atomic_fetch_add_explicit(&c->alive, delta, memory_order_relaxed) + delta;
        if (nl > 0) {
            uint64_t pk = atomic_load_explicit(&c->apeak, memory_order_relaxed);
            while ((uint64_t)nl > pk) {
                if (atomic_compare_exchange_weak_explicit(&c->apeak, &pk, (uint64_t)nl, memory_order_relaxed,
                                                          memory_order_relaxed)) {
                    on_new_peak(c, (uint64_t)nl);
                    break;
                }
            }
        }
    }
}

/* ---- timeline (--timeline): a sample every `every` operations ---- */

static void timeline_tick(pass_ctx *c)
{
    rp_timeline *tl = c->o->timeline;
    uint64_t n = atomic_fetch_add_explicit(&c->tl_ops, 1, memory_order_relaxed) + 1;
    rp_mem m;
    if (n % tl->every)
        return;
    if (c->mt)
        pthread_mutex_lock(&c->sample_lock);
    if (tl->n < tl->cap && sample_net(c, &m) == 0) {
        rp_tl_point *pt = &tl->pt[tl->n++];
        pt->op = n;
        pt->live = c->mt ? (uint64_t)atomic_load(&c->alive) : c->live;
        pt->footprint = m.footprint;
        pt->used = m.used;
        pt->used_known = m.used_known;
    }
    if (c->mt)
        pthread_mutex_unlock(&c->sample_lock);
}

/* ---- one stream ---- */

static inline void record(thread_arg *ta, unsigned kind, uint64_t t0, uint64_t t1)
{
    uint64_t d = t1 - t0;
    uint64_t br = ta->c->o->bracket;
    d = d > br ? d - br : 0;
    if (rp_hist_add(&ta->res->h[kind], d))
        ta->oom = 1;
}

#define TIMED(kind, stmt)                                                                                    \
    do {                                                                                                     \
        if (timing) {                                                                                        \
            uint64_t t0_ = rp_tick_begin();                                                                  \
            stmt;                                                                                            \
            uint64_t t1_ = rp_tick_end();                                                                    \
            record(ta, (kind), t0_, t1_);                                                                    \
        } else {                                                                                             \
            stmt;                                                                                            \
        }                                                                                                    \
    } while (0)

static void note_failed(thread_arg *ta, const rp_op *op)
{
    pass_ctx *c = ta->c;
    ta->res->failed++;
    atomic_fetch_add(&c->failed_total, 1);
    pthread_mutex_lock(&c->fail_lock);
    if (op->index < c->r->first_failed_index)
        c->r->first_failed_index = op->index;
    pthread_mutex_unlock(&c->fail_lock);
    if (c->o->stop_on_fail)
        atomic_store(&c->stop, 1);
}

static void wait_for(pass_ctx *c, uint32_t thread, uint64_t count)
{
    unsigned spins = 0;
    while (atomic_load_explicit(&c->done[thread].v, memory_order_acquire) < count) {
        if (atomic_load_explicit(&c->stop, memory_order_relaxed))
            return;
        if (++spins < 128)
            rp_cpu_relax();
        else
            sched_yield();
    }
}

static void run_stream(thread_arg *ta)
{
    pass_ctx *c = ta->c;
    const rp_pass_opts *o = c->o;
    const dmm_allocator *a = &c->b->a;
    const int timing = o->timing, verify = o->verify, mt = c->mt;
    uint64_t done = 0;
    struct rusage ru0, ru1;
    int have_ru = getrusage(RUSAGE_THREAD, &ru0) == 0;
    /* a backend that wants the trace thread: once for a stream, per change
     * of thread for the flat (sequential) order */
    void (*const set_thread)(rp_backend *, uint32_t) = c->b->set_thread;
    const int per_op_thread = set_thread && c->p->flat && ta->ops == c->p->flat;
    uint32_t cur_thread = UINT32_MAX;
    if (set_thread && !per_op_thread)
        set_thread(c->b, mt ? ta->tid : 0u);
    for (size_t i = 0; i < ta->n; i++) {
        const rp_op *op = &ta->ops[i];
        slot *s;
        void *p = NULL;
        if (atomic_load_explicit(&c->stop, memory_order_relaxed))
            break;
        if (per_op_thread && op->tid != cur_thread) {
            cur_thread = op->tid;
            set_thread(c->b, cur_thread);
        }
        if (op->kind == DMM_T_SYNC) {
            wait_for(c, op->thread, op->size);
            continue;
        }
        s = &c->slots[op->slot];
        switch (op->kind) {
        case DMM_T_MALLOC: {
            size_t n = (size_t)op->size;
            TIMED(RK_MALLOC, p = a->malloc(a->ctx, n));
            goto allocated;
        }
        case DMM_T_CALLOC: {
            size_t n = (size_t)op->size, cnt = (size_t)op->arg, each;
            if (cnt == 0 || op->size % op->arg != 0) {
                cnt = 1;
                each = n;
            } else {
                each = n / cnt;
            }
            if (a->calloc) {
                TIMED(RK_CALLOC, p = a->calloc(a->ctx, cnt, each));
            } else {
                TIMED(RK_CALLOC, p = a->malloc(a->ctx, n); if (p) memset(p, 0, n));
            }
            if (p && verify) {
                uint64_t off = zero_check(p, op->size);
                if (off != UINT64_MAX) {
                    s->ptr = p;
                    s->size = op->size;
                    verify_fail(c, op, "calloc returned memory that is not zeroed", off);
                    goto next;
                }
            }
            goto allocated;
        }
        case DMM_T_ALIGNED: {
            size_t n = (size_t)op->size, al = (size_t)op->arg;
            if (a->aligned_alloc) {
                TIMED(RK_ALIGNED, p = a->aligned_alloc(a->ctx, al, n));
            } else {
                TIMED(RK_ALIGNED, p = NULL);
            }
            if (p && verify && ((uintptr_t)p & (al - 1u))) {
                s->ptr = p;
                s->size = op->size;
                verify_fail(c, op, "aligned allocation returned a misaligned pointer", UINT64_MAX);
                goto next;
            }
            goto allocated;
        }
        allocated:
            s->ptr = p;
            s->size = p ? op->size : 0;
            if (!p) {
                if (op->size > 0)
                    note_failed(ta, op);
                break;
            }
            if (verify)
                pat_fill(p, 0, op->size, slot_seed(op->slot));
            live_change(c, (int64_t)op->size);
            break;
        case DMM_T_REALLOC: {
            uint64_t old = s->size;
            size_t n = (size_t)op->size;
            if (!s->ptr) {
                ta->res->skipped++;
                break;
            }
            if (verify) {
                uint64_t off = pat_check(s->ptr, 0, old, slot_seed(op->slot));
                if (off != UINT64_MAX) {
                    verify_fail(c, op, "block contents changed before realloc", off);
                    goto next;
                }
            }
            if (n == 0) {
                /* realloc(p, 0) frees in this trace format (implementations
                 * differ, so the replay calls free) */
                TIMED(RK_REALLOC, a->free(a->ctx, s->ptr));
                s->ptr = NULL;
                s->size = 0;
                live_change(c, -(int64_t)old);
                break;
            }
            if (a->realloc) {
                TIMED(RK_REALLOC, p = a->realloc(a->ctx, s->ptr, n));
            } else {
                TIMED(RK_REALLOC, p = a->malloc(a->ctx, n); if (p) {
                    memcpy(p, s->ptr, old < n ? (size_t)old : n);
                    a->free(a->ctx, s->ptr);
                });
            }
            if (!p) {
                note_failed(ta, op);
                break;
            }
            s->ptr = p;
            s->size = op->size;
            if (verify) {
                uint64_t keep = old < op->size ? old : op->size;
                uint64_t off = pat_check(p, 0, keep, slot_seed(op->slot));
                if (off != UINT64_MAX) {
                    verify_fail(c, op, "realloc did not preserve the block contents", off);
                    goto next;
                }
                if (op->size > old)
                    pat_fill(p, old, op->size, slot_seed(op->slot));
            }
            live_change(c, (int64_t)op->size - (int64_t)old);
            break;
        }
        case DMM_T_FREE: {
            uint64_t old = s->size;
            if (!s->ptr) {
                ta->res->skipped++;
                break;
            }
            if (verify) {
                uint64_t off = pat_check(s->ptr, 0, old, slot_seed(op->slot));
                if (off != UINT64_MAX) {
                    verify_fail(c, op, "block contents changed before free", off);
                    goto next;
                }
            }
            TIMED(RK_FREE, a->free(a->ctx, s->ptr));
            s->ptr = NULL;
            s->size = 0;
            live_change(c, -(int64_t)old);
            break;
        }
        default:
            break;
        }
    next:
        ta->res->ops++;
        done++;
        if (o->timeline && o->sample_mem)
            timeline_tick(c);
        if (o->on_op && !mt)
            o->on_op(o->op_ctx, done, c->live);
        if (mt)
            atomic_store_explicit(&c->done[ta->tid].v, done, memory_order_release);
    }
    if (have_ru && getrusage(RUSAGE_THREAD, &ru1) == 0) {
        ta->res->nivcsw = (uint64_t)(ru1.ru_nivcsw - ru0.ru_nivcsw);
        ta->res->nvcsw = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
    }
}

static void *thread_main(void *arg)
{
    thread_arg *ta = arg;
    unsigned spins = 0;
    while (!atomic_load_explicit(&ta->c->go, memory_order_acquire)) {
        if (++spins < 64)
            rp_cpu_relax();
        else
            sched_yield();
    }
    run_stream(ta);
    return NULL;
}

int rp_run_pass(const rp_plan *p, rp_backend *b, const rp_pass_opts *o, rp_pass_result *r)
{
    pass_ctx c;
    thread_arg *ta = NULL;
    pthread_t *th = NULL;
    uint32_t nthr;
    int rc = -1;
    uint64_t t0, t1;

    memset(r, 0, sizeof *r);
    r->first_failed_index = UINT64_MAX;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.b = b;
    c.o = o;
    c.r = r;
    c.mt = !o->sequential && p->threads > 1;
    nthr = c.mt ? p->threads : 1;
    pthread_mutex_init(&c.sample_lock, NULL);
    pthread_mutex_init(&c.fail_lock, NULL);
    atomic_init(&c.stop, 0);
    atomic_init(&c.go, 0);
    atomic_init(&c.alive, 0);
    atomic_init(&c.apeak, 0);
    atomic_init(&c.failed_total, 0);
    atomic_init(&c.reached_trace_peak, 0);
    atomic_init(&c.tl_ops, 0);
    if (o->timeline && !o->timeline->every)
        o->timeline->every = 1;

    if (o->sequential && !p->flat && p->threads > 1)
        goto out; /* caller must flatten first */
    r->nthr = nthr;
    if (!(r->thr = calloc(nthr, sizeof *r->thr)) || !(ta = calloc(nthr, sizeof *ta)) ||
        !(c.slots = rp_big_alloc((p->nslots ? p->nslots : 1) * sizeof *c.slots)))
        goto oom;
    if (c.mt) {
        if (!(c.done = rp_big_alloc(nthr * sizeof *c.done)) || !(th = calloc(nthr, sizeof *th)))
            goto oom;
        for (uint32_t k = 0; k < nthr; k++)
            atomic_init(&c.done[k].v, 0);
    }
    for (uint32_t k = 0; k < nthr; k++) {
        ta[k].c = &c;
        ta[k].tid = k;
        ta[k].res = &r->thr[k];
        if (c.mt) {
            ta[k].ops = p->stream[k];
            ta[k].n = p->len[k];
        } else if (p->threads > 1 || o->sequential) {
            ta[k].ops = p->flat ? p->flat : p->stream[0];
            ta[k].n = p->flat ? p->flat_len : p->len[0];
        } else {
            ta[k].ops = p->stream[0];
            ta[k].n = p->len[0];
        }
        /* pre-size the histograms so the first op of a kind does not allocate */
        if (o->timing)
            for (unsigned kk = 0; kk < RK_COUNT; kk++)
                if (!(r->thr[k].h[kk].b = rp_big_alloc(RP_HIST_BUCKETS * sizeof(uint64_t))))
                    goto oom;
    }

    if (c.mt) {
        uint32_t started = 0;
        for (; started < nthr; started++)
            if (pthread_create(&th[started], NULL, thread_main, &ta[started]) != 0)
                break;
        if (started < nthr) {
            atomic_store(&c.stop, 1);
            atomic_store(&c.go, 1);
            for (uint32_t k = 0; k < started; k++)
                pthread_join(th[k], NULL);
            fprintf(stderr, "dmm-replay: cannot create replay thread %u: %s\n", started, strerror(errno));
            goto out;
        }
        take_baseline(&c);
        c.pass_start_ns = tc_now_ns();
        t0 = c.pass_start_ns;
        atomic_store_explicit(&c.go, 1, memory_order_release);
        for (uint32_t k = 0; k < nthr; k++)
            pthread_join(th[k], NULL);
        t1 = tc_now_ns();
        r->run_peak_live = atomic_load(&c.apeak);
    } else {
        take_baseline(&c);
        c.pass_start_ns = tc_now_ns();
        t0 = c.pass_start_ns;
        run_stream(&ta[0]);
        t1 = tc_now_ns();
        r->run_peak_live = c.peak;
    }
    r->wall_ns = t1 - t0;

    /* end-of-run sample, then cleanup (untimed) */
    if (o->sample_mem && b->sample) {
        rp_mem m;
        if (sample_net(&c, &m) == 0) {
            m.live = c.mt ? (uint64_t)atomic_load(&c.alive) : c.live;
            r->end = m;
            mem_max(&r->peak, &m);
            if (!r->at_peak.valid)
                r->at_peak = m;
        }
    }
    for (size_t s = 0; s < p->nslots; s++)
        if (c.slots[s].ptr)
            b->a.free(b->a.ctx, c.slots[s].ptr);

    for (uint32_t k = 0; k < nthr; k++) {
        r->failed += r->thr[k].failed;
        r->skipped += r->thr[k].skipped;
        r->nivcsw += r->thr[k].nivcsw;
        r->nvcsw += r->thr[k].nvcsw;
        if (ta[k].oom)
            r->oom = 1;
        for (unsigned kk = 0; kk < RK_COUNT; kk++)
            if (rp_hist_merge(&r->merged[kk], &r->thr[k].h[kk]))
                r->oom = 1;
    }
    rc = r->oom ? -1 : 0;
    if (r->oom)
        fprintf(stderr, "dmm-replay: out of memory recording timings\n");
    goto out;
oom:
    fprintf(stderr, "dmm-replay: out of memory setting up a replay pass\n");
    r->oom = 1;
out:
    rp_big_free(c.slots);
    rp_big_free(c.done);
    free(th);
    free(ta);
    pthread_mutex_destroy(&c.sample_lock);
    pthread_mutex_destroy(&c.fail_lock);
    return rc;
}

void rp_pass_result_free(rp_pass_result *r)
{
    if (r->thr)
        for (uint32_t k = 0; k < r->nthr; k++)
            for (unsigned kk = 0; kk < RK_COUNT; kk++)
                rp_hist_free(&r->thr[k].h[kk]);
    free(r->thr);
    for (unsigned kk = 0; kk < RK_COUNT; kk++)
        rp_hist_free(&r->merged[kk]);
    memset(r, 0, sizeof *r);
}

/* ======================================================================
 * clock calibration, RSS
 * ====================================================================== */

uint64_t rp_calibrate_bracket(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 20000; i++) {
        uint64_t t0 = rp_tick_begin();
        uint64_t t1 = rp_tick_end();
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    return best == UINT64_MAX ? 0 : best;
}

/* One (ns, ticks) pair read as close together as the clocks allow: the
 * tick reading is the midpoint of the two ticks that bracket the ns reading,
 * and of three tries the one with the narrowest bracket is kept (a try that
 * was preempted has a wide one). */
void rp_ticks_mark(rp_tick_mark *m)
{
    uint64_t best = UINT64_MAX;
    m->ns = m->ticks = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t c0 = rp_tick_begin(), n = tc_now_ns(), c1 = rp_tick_end();
        if (c1 - c0 < best) {
            best = c1 - c0;
            m->ns = n;
            m->ticks = c0 + (c1 - c0) / 2;
        }
    }
}

double rp_ticks_per_sec(const rp_tick_mark *start)
{
#if defined(__x86_64__) || defined(__i386__)
    rp_tick_mark end = {0, 0};
    uint64_t now = tc_now_ns();
    if (now >= start->ns && now - start->ns < RP_TPS_MIN_NS) {
        uint64_t rest = RP_TPS_MIN_NS - (now - start->ns);
        struct timespec ts = {0, (long)rest};
        nanosleep(&ts, NULL);
    }
    rp_ticks_mark(&end);
    if (end.ns <= start->ns || end.ticks <= start->ticks)
        return 0;
    return (double)(end.ticks - start->ticks) * 1e9 / (double)(end.ns - start->ns);
#else
    (void)start;
    return 1e9;
#endif
}

/* Reads a small /proc file into buf without stdio (no malloc while a replay
 * against the system allocator is being measured). */
static size_t read_proc(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    size_t n = 0;
    if (fd < 0)
        return 0;
    while (n + 1 < cap) {
        ssize_t g = read(fd, buf + n, cap - 1 - n);
        if (g <= 0)
            break;
        n += (size_t)g;
    }
    close(fd);
    buf[n] = '\0';
    return n;
}

static uint64_t status_kb(const char *key)
{
    char buf[4096];
    size_t kl = strlen(key);
    const char *p = buf;
    if (!read_proc("/proc/self/status", buf, sizeof buf))
        return 0;
    while (p && *p) {
        if (strncmp(p, key, kl) == 0 && p[kl] == ':')
            return strtoull(p + kl + 1, NULL, 10) * 1024u;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

uint64_t rp_phys_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

uint64_t rp_rss_bytes(void)
{
    char buf[256];
    char *e;
    unsigned long long res;
    if (!read_proc("/proc/self/statm", buf, sizeof buf))
        return 0;
    (void)strtoull(buf, &e, 10);
    res = strtoull(e, NULL, 10);
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t rp_hwm_bytes(void) { return status_kb("VmHWM"); }

/*
 * bench/workloads/workload.c - the bundled synthetic workloads.
 *
 * Each generator builds its op list with the small builder below.  The
 * shapes are documented in bench/workloads/README.md; keep the two in step.
 */
#include "workload.h"

#include <stdlib.h>
#include <string.h>

/* ---- random numbers ---------------------------------------------------- */

void wl_rng_seed(wl_rng *r, uint64_t seed) { r->s = seed ^ 0x9e3779b97f4a7c15ull; }

uint64_t wl_rng_next(wl_rng *r)
{
    /* splitmix64 (Steele, Lea, Flood 2014): a full-period 64-bit generator
     * that is more than good enough for shaping workloads. */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t wl_rng_below(wl_rng *r, uint64_t n)
{
    /* Reject the top partial copy of [0, n) so every value is equally
     * likely. */
    uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
    uint64_t x;
    do {
        x = wl_rng_next(r);
    } while (x >= limit);
    return x % n;
}

uint64_t wl_rng_range(wl_rng *r, uint64_t lo, uint64_t hi)
{
    return lo + wl_rng_below(r, hi - lo + 1);
}

uint64_t wl_rng_logu(wl_rng *r, uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return lo;
    unsigned k = 0; /* number of octaves [lo*2^i, lo*2^(i+1)) covering [lo, hi] */
    while (k < 63 && (lo << k) < hi)
        k++;
    unsigned i = (unsigned)wl_rng_below(r, k);
    uint64_t a = lo << i;
    uint64_t b = (i + 1 == k) ? hi : (lo << (i + 1)) - 1;
    if (b > hi)
        b = hi;
    return wl_rng_range(r, a, b);
}

/* ---- builder ------------------------------------------------------------ */

void wl_push(wl_trace *t, uint32_t kind, uint32_t id, uint32_t size)
{
    if (t->error)
        return;
    if (t->n_ops == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        wl_op *n = realloc(t->ops, nc * sizeof *n);
        if (!n) {
            t->error = 1;
            return;
        }
        t->ops = n;
        t->cap = nc;
    }
    wl_op *o = &t->ops[t->n_ops++];
    o->kind = kind;
    o->id = id;
    o->size = size;
}

static uint32_t b_alloc(wl_trace *t, size_t size)
{
    uint32_t id = t->n_ids++;
    wl_push(t, WL_ALLOC, id, (uint32_t)size);
    return id;
}

static void b_free(wl_trace *t, uint32_t id) { wl_push(t, WL_FREE, id, 0); }

/* A growable array of ids, for generators that remember what to free. */
typedef struct idvec {
    uint32_t *v;
    size_t n, cap;
} idvec;

static void iv_push(wl_trace *t, idvec *iv, uint32_t id)
{
    if (t->error)
        return;
    if (iv->n == iv->cap) {
        size_t nc = iv->cap ? iv->cap * 2 : 256;
        uint32_t *n = realloc(iv->v, nc * sizeof *n);
        if (!n) {
            t->error = 1;
            return;
        }
        iv->v = n;
        iv->cap = nc;
    }
    iv->v[iv->n++] = id;
}

static void iv_free(idvec *iv)
{
    free(iv->v);
    iv->v = NULL;
    iv->n = iv->cap = 0;
}

/* ---- the P2012-shaped kernels ------------------------------------------
 *
 * One generator call is ONE application run, as in the seed's traces: on
 * P2012 the cluster controller makes every allocation of a run before the
 * tasks start (stacks, task descriptors, data buffers) and frees everything
 * after they end; only FAST allocates inside its kernel.  Common frame: a
 * 384x256 8-bit image cut into 32x32 tiles (12 x 8 = 96 tiles) and 16
 * worker processors.  The generators append to the trace, so a run can be
 * repeated on the same heap (the "-x8" workloads). */

enum {
    IMG_W = 384,
    IMG_H = 256,
    TILE = 32,
    TILES_X = IMG_W / TILE,
    TILES_Y = IMG_H / TILE,
    NTILES = TILES_X * TILES_Y,
    WORKERS = 16
};

static int gen_integral(wl_trace *t, uint64_t seed)
{
    (void)seed; /* fully deterministic shape */
    uint32_t task[WORKERS], stack[WORKERS], row[IMG_H], carry[TILES_X];
    uint32_t tin[NTILES], tout[NTILES];
    /* allocation phase */
    uint32_t app = b_alloc(t, 64);
    for (int c = 0; c < WORKERS; c++) {
        task[c] = b_alloc(t, 96);
        stack[c] = b_alloc(t, 2048);
    }
    for (int r = 0; r < IMG_H; r++)
        row[r] = b_alloc(t, IMG_W * 4); /* 32-bit row prefix sums */
    for (int i = 0; i < NTILES; i++) {
        tin[i] = b_alloc(t, TILE * TILE);      /* 8-bit input tile */
        tout[i] = b_alloc(t, TILE * TILE * 4); /* 32-bit integral tile */
    }
    for (int x = 0; x < TILES_X; x++)
        carry[x] = b_alloc(t, IMG_H * 4); /* column carries */
    /* free phases, after the tasks end */
    for (int c = 0; c < WORKERS; c++) {
        b_free(t, task[c]);
        b_free(t, stack[c]);
    }
    for (int i = 0; i < NTILES; i++) {
        b_free(t, tin[i]);
        b_free(t, tout[i]);
    }
    for (int x = 0; x < TILES_X; x++)
        b_free(t, carry[x]);
    for (int r = IMG_H - 1; r >= 0; r--)
        b_free(t, row[r]);
    b_free(t, app);
    return t->error ? -1 : 0;
}

static int gen_gaussian(wl_trace *t, uint64_t seed)
{
    (void)seed;
    enum { K = 7, HALO = K - 1 };
    uint32_t kh[WORKERS], kv[WORKERS], k2[WORKERS];
    uint32_t desc[NTILES], in[NTILES], mid[NTILES], out[NTILES];
    uint32_t app = b_alloc(t, 64);
    for (int w = 0; w < WORKERS; w++) {
        kh[w] = b_alloc(t, K * 4);     /* horizontal taps, float */
        kv[w] = b_alloc(t, K * 4);     /* vertical taps */
        k2[w] = b_alloc(t, K * K * 4); /* full 2-D kernel */
    }
    for (int i = 0; i < NTILES; i++) {
        desc[i] = b_alloc(t, 64);
        in[i] = b_alloc(t, (TILE + HALO) * (TILE + HALO));
        mid[i] = b_alloc(t, TILE * (TILE + HALO) * 2); /* 16-bit pass */
        out[i] = b_alloc(t, TILE * TILE);
    }
    for (int i = 0; i < NTILES; i++) { /* FIFO, tile by tile */
        b_free(t, in[i]);
        b_free(t, mid[i]);
        b_free(t, out[i]);
        b_free(t, desc[i]);
    }
    for (int w = 0; w < WORKERS; w++) {
        b_free(t, kh[w]);
        b_free(t, kv[w]);
        b_free(t, k2[w]);
    }
    b_free(t, app);
    return t->error ? -1 : 0;
}

static int gen_fast(wl_trace *t, uint64_t seed)
{
    enum { BORDER = 3 };
    wl_rng r;
    wl_rng_seed(&r, seed);
    uint32_t task[WORKERS], buf[NTILES];
    idvec corners = {0};
    uint32_t app = b_alloc(t, 64);
    for (int c = 0; c < WORKERS; c++)
        task[c] = b_alloc(t, 96);
    for (int i = 0; i < NTILES && !t->error; i++) {
        buf[i] = b_alloc(t, (TILE + 2 * BORDER) * (TILE + 2 * BORDER));
        uint32_t score = b_alloc(t, TILE * TILE);
        /* corners found in this tile: sum of four uniforms, 0..48 */
        unsigned n = 0;
        for (int k = 0; k < 4; k++)
            n += (unsigned)wl_rng_range(&r, 0, 12);
        for (unsigned k = 0; k < n; k++)
            iv_push(t, &corners, b_alloc(t, 16)); /* x, y, score */
        b_free(t, score); /* scratch dies inside the kernel */
    }
    /* non-maximum suppression writes one array of the survivors */
    size_t total = corners.n ? corners.n : 1;
    uint32_t result = b_alloc(t, total * 16);
    for (size_t k = 0; k < corners.n; k++)
        b_free(t, corners.v[k]);
    for (int i = 0; i < NTILES; i++)
        b_free(t, buf[i]);
    for (int c = 0; c < WORKERS; c++)
        b_free(t, task[c]);
    b_free(t, result);
    b_free(t, app);
    iv_free(&corners);
    return t->error ? -1 : 0;
}

static int gen_matmul(wl_trace *t, uint64_t seed)
{
    (void)seed;
    enum { N = 128, T = 8, TN = (N / T) * (N / T) };
    uint32_t a[TN], b[TN], c[TN], wd[WORKERS];
    /* the master allocates everything */
    uint32_t jobs = b_alloc(t, TN * 8);
    for (int w = 0; w < WORKERS; w++)
        wd[w] = b_alloc(t, 48);
    for (int i = 0; i < TN; i++) {
        a[i] = b_alloc(t, T * T * 4); /* 8x8 float tiles: 256 bytes */
        b[i] = b_alloc(t, T * T * 4);
        c[i] = b_alloc(t, T * T * 4);
    }
    /* worker w owns tiles w, w+16, ...; each releases its share at the
     * end, worker by worker */
    for (int w = 0; w < WORKERS; w++) {
        for (int i = w; i < TN; i += WORKERS) {
            b_free(t, a[i]);
            b_free(t, b[i]);
            b_free(t, c[i]);
        }
        b_free(t, wd[w]);
    }
    b_free(t, jobs);
    return t->error ? -1 : 0;
}

/* The section-5.3 variants: the kernel's trace with its free points
 * redrawn. */
static int gen_random_free(wl_trace *t, uint64_t seed, wl_gen_fn base)
{
    wl_trace b;
    memset(&b, 0, sizeof b);
    if (base(&b, seed) != 0 || b.error) {
        wl_release(&b);
        return -1;
    }
    int rc = wl_randomize_frees(&b, seed ^ 0x53u, t);
    wl_release(&b);
    return rc;
}

static int gen_integral_rf(wl_trace *t, uint64_t s) { return gen_random_free(t, s, gen_integral); }
static int gen_gaussian_rf(wl_trace *t, uint64_t s) { return gen_random_free(t, s, gen_gaussian); }
static int gen_fast_rf(wl_trace *t, uint64_t s) { return gen_random_free(t, s, gen_fast); }
static int gen_matmul_rf(wl_trace *t, uint64_t s) { return gen_random_free(t, s, gen_matmul); }

/* Beyond the seed: the same run repeated on one heap without a reset, as a
 * runtime that keeps its heap across kernel launches would do.  Run r uses
 * seed + r (only FAST's corner counts depend on it). */
enum { REPEAT_RUNS = 8 };

static int gen_repeat(wl_trace *t, uint64_t seed, wl_gen_fn base)
{
    for (unsigned r = 0; r < REPEAT_RUNS; r++)
        if (base(t, seed + r) != 0)
            return -1;
    return t->error ? -1 : 0;
}

static int gen_integral_x8(wl_trace *t, uint64_t s) { return gen_repeat(t, s, gen_integral); }
static int gen_gaussian_x8(wl_trace *t, uint64_t s) { return gen_repeat(t, s, gen_gaussian); }
static int gen_fast_x8(wl_trace *t, uint64_t s) { return gen_repeat(t, s, gen_fast); }
static int gen_matmul_x8(wl_trace *t, uint64_t s) { return gen_repeat(t, s, gen_matmul); }

/* ---- fragmenting stress -------------------------------------------------
 * Sizes log-uniform in 16 B .. 16 KiB, lifetimes random (a free picks a
 * uniformly random live object), and the live population swings between a
 * low and a high water mark so that holes of every size open up (and a
 * first-fit list grows to thousands of blocks). */
static int gen_fragment(wl_trace *t, uint64_t seed)
{
    enum { CYCLES = 6, LOW = 500, HIGH = 2500 };
    wl_rng r;
    wl_rng_seed(&r, seed);
    idvec live = {0};
    for (int cyc = 0; cyc < CYCLES && !t->error; cyc++) {
        /* grow: 3 allocations for every free until HIGH objects are live */
        while (live.n < HIGH && !t->error) {
            if (live.n > 0 && wl_rng_below(&r, 4) == 0) {
                size_t k = (size_t)wl_rng_below(&r, live.n);
                b_free(t, live.v[k]);
                live.v[k] = live.v[--live.n];
            } else {
                iv_push(t, &live, b_alloc(t, wl_rng_logu(&r, 16, 16384)));
            }
        }
        /* shrink: 3 frees for every allocation until LOW are live */
        while (live.n > LOW && !t->error) {
            if (wl_rng_below(&r, 4) == 0) {
                iv_push(t, &live, b_alloc(t, wl_rng_logu(&r, 16, 16384)));
            } else {
                size_t k = (size_t)wl_rng_below(&r, live.n);
                b_free(t, live.v[k]);
                live.v[k] = live.v[--live.n];
            }
        }
    }
    while (live.n > 0 && !t->error) { /* drain in random order */
        size_t k = (size_t)wl_rng_below(&r, live.n);
        b_free(t, live.v[k]);
        live.v[k] = live.v[--live.n];
    }
    iv_free(&live);
    return t->error ? -1 : 0;
}

/* ---- mixed small objects --------------------------------------------------
 * A general-purpose program: mostly small objects, mostly short-lived, a
 * few long-lived ones, and some growing buffers (realloc chains).  Built as
 * timed events (one allocation per tick) and sorted. */
typedef struct mx_event {
    uint64_t tick;
    uint32_t seq;
    uint32_t kind, id, size;
} mx_event;

static int mx_cmp(const void *pa, const void *pb)
{
    const mx_event *a = pa, *b = pb;
    if (a->tick != b->tick)
        return a->tick < b->tick ? -1 : 1;
    return a->seq < b->seq ? -1 : (a->seq > b->seq);
}

static int gen_mixed(wl_trace *t, uint64_t seed)
{
    enum { NOBJ = 12000, MAXEV = NOBJ * 8 };
    wl_rng r;
    wl_rng_seed(&r, seed);
    mx_event *ev = malloc(sizeof *ev * MAXEV);
    if (!ev)
        return -1;
    size_t n = 0;
    uint32_t seq = 0;
    for (uint32_t k = 0; k < NOBJ; k++) {
        uint64_t c = wl_rng_below(&r, 100), size;
        if (c < 55)
            size = wl_rng_range(&r, 1, 64);
        else if (c < 80)
            size = wl_rng_range(&r, 65, 256);
        else if (c < 92)
            size = wl_rng_range(&r, 257, 1024);
        else if (c < 98)
            size = wl_rng_range(&r, 1025, 8192);
        else
            size = wl_rng_range(&r, 8193, 65536);
        uint64_t l = wl_rng_below(&r, 100), life;
        if (l < 70)
            life = wl_rng_logu(&r, 1, 64); /* temporaries */
        else if (l < 95)
            life = wl_rng_logu(&r, 64, 4000); /* working set */
        else
            life = (uint64_t)NOBJ - k + wl_rng_below(&r, 1000); /* until the end */
        uint32_t id = t->n_ids++;
        ev[n++] = (mx_event){k, seq++, WL_ALLOC, id, (uint32_t)size};
        uint64_t last = k;
        if (wl_rng_below(&r, 100) < 6 && life >= 4) { /* a growing buffer */
            unsigned steps = (unsigned)wl_rng_range(&r, 1, 5);
            for (unsigned s = 0; s < steps; s++) {
                uint64_t room = (uint64_t)k + life - 1 - last;
                if (room < 1)
                    break;
                last += 1 + wl_rng_below(&r, room < 8 ? room : room / 2);
                if (last >= (uint64_t)k + life)
                    break;
                size = size * 2 > 262144 ? 262144 : size * 2;
                ev[n++] = (mx_event){last, seq++, WL_REALLOC, id, (uint32_t)size};
            }
            if (wl_rng_below(&r, 4) == 0 && last + 1 < (uint64_t)k + life) {
                last++; /* shrink to fit before the end of its life */
                size = size / 2 ? size / 2 : 1;
                ev[n++] = (mx_event){last, seq++, WL_REALLOC, id, (uint32_t)size};
            }
        }
        uint64_t end = (uint64_t)k + life;
        if (end <= last)
            end = last + 1;
        ev[n++] = (mx_event){end, seq++, WL_FREE, id, 0};
    }
    qsort(ev, n, sizeof *ev, mx_cmp);
    for (size_t i = 0; i < n; i++)
        wl_push(t, ev[i].kind, ev[i].id, ev[i].size);
    free(ev);
    return t->error ? -1 : 0;
}

/* ---- registry ------------------------------------------------------------- */

static const wl_info workloads[] = {
    {"integral", "p2012", "integral image, one run: row + tile buffers, alloc phase then free phases", gen_integral},
    {"gaussian", "p2012", "gaussian blur, one run: per-tile in/mid/out buffers + per-worker taps, FIFO frees", gen_gaussian},
    {"fast", "p2012", "FAST corners, one run: tile buffers + many 16 B corner nodes allocated inside the kernel", gen_fast},
    {"matmul", "p2012", "matrix multiply, one run: master allocates 768 x 256 B tiles, workers free at the end", gen_matmul},
    {"integral-rf", "p2012-random-free", "integral with free points redrawn (seed sec. 5.3)", gen_integral_rf},
    {"gaussian-rf", "p2012-random-free", "gaussian with free points redrawn (seed sec. 5.3)", gen_gaussian_rf},
    {"fast-rf", "p2012-random-free", "fast with free points redrawn (seed sec. 5.3)", gen_fast_rf},
    {"matmul-rf", "p2012-random-free", "matmul with free points redrawn (seed sec. 5.3)", gen_matmul_rf},
    {"integral-x8", "p2012-repeated", "integral run 8 times on one heap (no reset between runs)", gen_integral_x8},
    {"gaussian-x8", "p2012-repeated", "gaussian run 8 times on one heap", gen_gaussian_x8},
    {"fast-x8", "p2012-repeated", "fast run 8 times on one heap", gen_fast_x8},
    {"matmul-x8", "p2012-repeated", "matmul run 8 times on one heap", gen_matmul_x8},
    {"fragment", "stress", "log-uniform 16 B..16 KiB, random lifetimes, live set swinging 500..2500", gen_fragment},
    {"mixed", "general", "general program: small objects, short lives, some realloc chains", gen_mixed},
};

size_t wl_count(void) { return sizeof workloads / sizeof workloads[0]; }

const wl_info *wl_get(size_t i) { return i < wl_count() ? &workloads[i] : NULL; }

const wl_info *wl_find(const char *name)
{
    for (size_t i = 0; i < wl_count(); i++)
        if (strcmp(workloads[i].name, name) == 0)
            return &workloads[i];
    return NULL;
}

void wl_release(wl_trace *t)
{
    free(t->ops);
    memset(t, 0, sizeof *t);
}

int wl_generate(const char *name, uint64_t seed, wl_trace *t)
{
    const wl_info *w = wl_find(name);
    if (!w)
        return -1;
    memset(t, 0, sizeof *t);
    if (w->gen(t, seed) != 0 || t->error) {
        wl_release(t);
        return -1;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    t->seed = seed;
    if (wl_validate(t) != 0) {
        wl_release(t);
        return -1;
    }
    wl_analyse(t);
    return 0;
}

size_t wl_validate(const wl_trace *t)
{
    unsigned char *st = calloc(t->n_ids ? t->n_ids : 1, 1); /* 0 new, 1 live, 2 freed */
    if (!st)
        return 1;
    size_t bad = 0;
    for (size_t i = 0; i < t->n_ops && !bad; i++) {
        const wl_op *o = &t->ops[i];
        if (o->id >= t->n_ids) {
            bad = i + 1;
            break;
        }
        switch (o->kind) {
        case WL_ALLOC:
            if (st[o->id] == 1 || o->size == 0)
                bad = i + 1;
            st[o->id] = 1;
            break;
        case WL_REALLOC:
            if (st[o->id] != 1 || o->size == 0)
                bad = i + 1;
            break;
        case WL_FREE:
            if (st[o->id] != 1)
                bad = i + 1;
            st[o->id] = 2;
            break;
        default:
            bad = i + 1;
        }
    }
    free(st);
    return bad;
}

void wl_analyse(wl_trace *t)
{
    uint32_t *sz = calloc(t->n_ids ? t->n_ids : 1, sizeof *sz);
    t->n_alloc = t->n_free = t->n_realloc = 0;
    t->peak_live = t->peak_index = t->peak_objects = t->max_size = 0;
    t->total_requested = 0;
    if (!sz)
        return;
    size_t live = 0, objs = 0;
    for (size_t i = 0; i < t->n_ops; i++) {
        const wl_op *o = &t->ops[i];
        switch (o->kind) {
        case WL_ALLOC:
            t->n_alloc++;
            sz[o->id] = o->size;
            live += o->size;
            objs++;
            break;
        case WL_REALLOC:
            t->n_realloc++;
            live = live - sz[o->id] + o->size;
            sz[o->id] = o->size;
            break;
        case WL_FREE:
            t->n_free++;
            live -= sz[o->id];
            sz[o->id] = 0;
            objs--;
            break;
        }
        if (o->kind != WL_FREE) {
            t->total_requested += o->size;
            if (o->size > t->max_size)
                t->max_size = o->size;
        }
        if (live > t->peak_live) {
            t->peak_live = live;
            t->peak_index = i;
        }
        if (objs > t->peak_objects)
            t->peak_objects = objs;
    }
    free(sz);
}

int wl_randomize_frees(const wl_trace *in, uint64_t seed, wl_trace *out)
{
    memset(out, 0, sizeof *out);
    /* Positions are counted in the list without its frees: object o may be
     * freed right after any of the ops last[o] .. m-1. */
    size_t m = 0;
    for (size_t i = 0; i < in->n_ops; i++)
        if (in->ops[i].kind != WL_FREE)
            m++;
    size_t nid = in->n_ids ? in->n_ids : 1;
    size_t *last = malloc(nid * sizeof *last);
    unsigned char *freed = calloc(nid, 1);
    uint32_t *head = malloc((m + 1) * sizeof *head); /* ids freed after position p */
    uint32_t *next = malloc(nid * sizeof *next);
    uint32_t *tmp = malloc(nid * sizeof *tmp);
    int rc = -1;
    if (!last || !freed || !head || !next || !tmp)
        goto done;
    size_t pos = 0;
    for (size_t i = 0; i < in->n_ops; i++) {
        const wl_op *o = &in->ops[i];
        if (o->kind == WL_FREE)
            freed[o->id] = 1;
        else
            last[o->id] = pos++;
    }
    /* (An id re-allocated after its free would make the redraw ambiguous;
     * the bundled generators never reuse ids, and wl_validate of the output
     * would catch it.) */
    for (size_t p = 0; p <= m; p++)
        head[p] = UINT32_MAX;
    wl_rng r;
    wl_rng_seed(&r, seed);
    for (uint32_t id = 0; id < in->n_ids; id++) {
        if (!freed[id])
            continue;
        size_t p = last[id] + (size_t)wl_rng_below(&r, m - last[id]);
        next[id] = head[p];
        head[p] = id;
    }
    out->n_ids = in->n_ids;
    pos = 0;
    for (size_t i = 0; i < in->n_ops && !out->error; i++) {
        const wl_op *o = &in->ops[i];
        if (o->kind == WL_FREE)
            continue;
        wl_push(out, o->kind, o->id, o->size);
        /* a bucket is LIFO; emit it in increasing id order */
        size_t cnt = 0;
        for (uint32_t id = head[pos]; id != UINT32_MAX; id = next[id])
            tmp[cnt++] = id;
        while (cnt > 0)
            wl_push(out, WL_FREE, tmp[--cnt], 0);
        pos++;
    }
    if (out->error || wl_validate(out) != 0)
        goto done;
    snprintf(out->name, sizeof out->name, "%.36s-rf", in->name);
    out->seed = seed;
    wl_analyse(out);
    rc = 0;
done:
    free(last);
    free(freed);
    free(head);
    free(next);
    free(tmp);
    if (rc != 0)
        wl_release(out);
    return rc;
}

int wl_write_text(const wl_trace *t, FILE *f)
{
    if (fprintf(f, "# dmmkit workload %s seed %llu\n", t->name, (unsigned long long)t->seed) < 0)
        return -1;
    for (size_t i = 0; i < t->n_ops; i++) {
        const wl_op *o = &t->ops[i];
        int n;
        if (o->kind == WL_FREE)
            n = fprintf(f, "f %u\n", o->id);
        else
            n = fprintf(f, "%c %u %u\n", o->kind == WL_ALLOC ? 'a' : 'r', o->id, o->size);
        if (n < 0)
            return -1;
    }
    return 0;
}

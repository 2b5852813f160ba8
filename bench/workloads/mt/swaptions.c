/*
 * mt-swaptions - a data-parallel pricing kernel in the style of PARSEC's
 * swaptions, as the seed describes it (README.md here): a fixed set of
 * swaptions is split into equal contiguous shares, one per worker thread,
 * and each worker prices its swaptions by Monte Carlo simulation of an
 * HJM-like forward-rate model.  What matters for the allocator is the
 * request pattern: every simulation block allocates a handful of small
 * vectors and matrices (rows of 8..40 doubles, one row-pointer array per
 * matrix), uses them briefly and frees them, all inside the worker thread.
 * No block ever changes threads; there are many small, short-lived requests
 * per thread, so an allocator with a lock or shared structure on its fast
 * path pays for it on every block.
 *
 * The model is deliberately simple (no claim of financial accuracy): a
 * forward curve is shocked with approximately normal variates (sum of 12
 * uniforms minus 6, no libm), discount factors are products of 1/(1+r dt),
 * the payoff is max(0, swap value).  Each swaption has its own PRNG stream
 * (seeded by its index), so its price does not depend on which thread
 * priced it; the checksum folds every price's bits in swaption order.
 *
 * Checks: every vector and matrix row carries a header (magic, size, a key
 * unique to the block) that must be intact at its free, so a live block
 * handed out twice is caught; the matrices come from calloc and must read as
 * zero; the blocks each worker allocates and frees balance.
 */
#include "mt_common.h"

/* A small vector of doubles behind a header of its own (the blocks are
 * small, so the whole-block pattern of mt_fill would swamp the kernel). */
typedef struct vhdr {
    uint64_t magic;
    uint64_t n;   /* doubles */
    uint64_t key; /* unique per block */
    uint64_t owner;
} vhdr;

#define VMAGIC 0x7377617076656321u /* "swapvec!" */
#define FACTORS 3
#define BLOCK_TRIALS 16 /* trials per simulation block (one set of allocations) */

typedef struct thr {
    uint64_t id;
    size_t first, count; /* the swaptions this worker prices */
    uint64_t trials;
    double *prices;      /* shared result array, one slot per swaption */
    uint64_t allocs, frees, key;
} thr;

static double *vec_new(thr *t, size_t n, int zero)
{
    vhdr *h = zero ? mt_calloc(1, sizeof *h + n * sizeof(double)) : mt_malloc(sizeof *h + n * sizeof(double));
    h->magic = VMAGIC;
    h->n = n;
    h->key = ++t->key;
    h->owner = t->id;
    t->allocs++;
    return (double *)(h + 1);
}

static void vec_free(thr *t, double *v, size_t n, uint64_t key)
{
    vhdr *h = (vhdr *)v - 1;
    if (h->magic != VMAGIC || h->n != n || h->key != key || h->owner != t->id)
        mt_fail("swaptions: vector %p (%zu doubles, key %" PRIu64 ") was overwritten: header says magic %016" PRIx64
                " n %" PRIu64 " key %" PRIu64 " owner %" PRIu64,
                (void *)v, n, key, h->magic, h->n, h->key, h->owner);
    h->magic = 0;
    mt_free(h);
    t->frees++;
}

static uint64_t vec_key(const double *v) { return ((const vhdr *)v - 1)->key; }

/* A matrix: a row-pointer array plus one block per row (as the original's
 * dmatrix); rows from calloc (checked zero). */
static double **mat_new(thr *t, size_t rows, size_t cols)
{
    double **m = mt_malloc(rows * sizeof *m);
    t->allocs++;
    for (size_t i = 0; i < rows; i++)
        m[i] = vec_new(t, cols, 1);
    return m;
}

static void mat_free(thr *t, double **m, size_t rows, size_t cols, const uint64_t *keys)
{
    for (size_t i = 0; i < rows; i++)
        vec_free(t, m[i], cols, keys[i]);
    mt_free(m);
    t->frees++;
}

/* roughly standard normal: Irwin-Hall with 12 uniforms */
static double normal(mt_rng *r)
{
    double s = 0;
    for (int i = 0; i < 12; i++)
        s += (double)(mt_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return s - 6.0;
}

/* The swaption's terms, derived from its index. */
typedef struct swaption {
    size_t n;      /* forward-curve points (8..40) */
    double strike, vol, dt;
} swaption;

static swaption terms(uint64_t seed, size_t idx)
{
    mt_rng r = mt_rng_make(seed, 0x5741500000000000u + idx);
    swaption s;
    s.n = mt_range(&r, 8, 40);
    s.strike = 0.02 + 0.0001 * (double)mt_below(&r, 300);
    s.vol = 0.005 + 0.0001 * (double)mt_below(&r, 100);
    s.dt = 0.25 + 0.25 * (double)mt_below(&r, 4);
    return s;
}

/* Prices one swaption: trials grouped in blocks, each block allocating its
 * own workspace and freeing it again. */
static double price(thr *t, uint64_t seed, size_t idx)
{
    swaption s = terms(seed, idx);
    size_t n = s.n;
    mt_rng r = mt_rng_make(seed, idx);
    double total = 0;
    uint64_t done = 0;
    while (done < t->trials) {
        uint64_t block = t->trials - done < BLOCK_TRIALS ? t->trials - done : BLOCK_TRIALS;
        /* the workspace of one block */
        double *fwd = vec_new(t, n, 0), *drift = vec_new(t, n, 0), *disc = vec_new(t, n, 0);
        double *cash = vec_new(t, n, 0), *payoff = vec_new(t, (size_t)block, 0);
        uint64_t kf = vec_key(fwd), kd = vec_key(drift), kc = vec_key(disc), kh = vec_key(cash), kp = vec_key(payoff);
        double **shock = mat_new(t, n, FACTORS), **path = mat_new(t, n, n);
        uint64_t ks[40], kpath[40];
        for (size_t i = 0; i < n; i++) {
            ks[i] = vec_key(shock[i]);
            kpath[i] = vec_key(path[i]);
        }
        for (size_t i = 0; i < n; i++) {
            fwd[i] = s.strike * (0.9 + 0.2 * (double)i / (double)n);
            drift[i] = 0.5 * s.vol * s.vol * s.dt * (double)(i + 1);
            cash[i] = s.strike * s.dt;
        }
        cash[n - 1] += 1.0;
        for (uint64_t k = 0; k < block; k++) {
            for (size_t i = 0; i < n; i++)
                for (size_t f = 0; f < FACTORS; f++)
                    shock[i][f] = normal(&r);
            /* path[j][i]: the forward rate i at time step j */
            for (size_t i = 0; i < n; i++)
                path[0][i] = fwd[i];
            for (size_t j = 1; j < n; j++)
                for (size_t i = j; i < n; i++) {
                    double z = shock[j][0] + 0.5 * shock[j][1] * ((double)i / (double)n) + 0.25 * shock[j][2];
                    path[j][i] = path[j - 1][i] + drift[i - j] * 0.01 + s.vol * z * 0.1;
                }
            /* discount along the diagonal, then the swap's value */
            double df = 1.0;
            for (size_t j = 0; j < n; j++) {
                df /= 1.0 + path[j][j] * s.dt;
                disc[j] = df;
            }
            double value = 0;
            for (size_t j = 0; j < n; j++)
                value += cash[j] * disc[j];
            payoff[k] = value > 1.0 ? value - 1.0 : 0.0;
        }
        for (uint64_t k = 0; k < block; k++)
            total += payoff[k];
        done += block;
        mat_free(t, path, n, n, kpath);
        mat_free(t, shock, n, FACTORS, ks);
        vec_free(t, payoff, (size_t)block, kp);
        vec_free(t, cash, n, kh);
        vec_free(t, disc, n, kc);
        vec_free(t, drift, n, kd);
        vec_free(t, fwd, n, kf);
    }
    return total / (double)t->trials;
}

static uint64_t g_seed;

static void *run(void *arg)
{
    thr *t = arg;
    for (size_t i = 0; i < t->count; i++)
        t->prices[t->first + i] = price(t, g_seed, t->first + i);
    return NULL;
}

int main(int argc, char **argv)
{
    mt_opts o = mt_parse(argc, argv, "swaptions",
                         "swaptions-like data-parallel kernel: many small vectors and matrices per swaption, "
                         "allocated and freed inside each worker.");
    size_t nt = (size_t)o.threads;
    size_t per = 4;                     /* swaptions per thread */
    size_t ns = nt * per;
    g_seed = o.seed;
    thr *ts = mt_calloc(nt, sizeof *ts);
    pthread_t *th = mt_calloc(nt, sizeof *th);
    double *prices = mt_calloc(ns, sizeof *prices);
    for (size_t i = 0; i < nt; i++) {
        ts[i].id = i + 1;
        ts[i].first = i * per;
        ts[i].count = per;
        ts[i].trials = o.scale * 64;
        ts[i].prices = prices;
    }
    uint64_t wall = mt_run_all(th, nt, run, ts, sizeof ts[0]);

    uint64_t allocs = 0, frees = 0, sum = 0;
    for (size_t i = 0; i < nt; i++) {
        if (ts[i].allocs != ts[i].frees)
            mt_fail("swaptions: worker %zu allocated %" PRIu64 " blocks and freed %" PRIu64, i, ts[i].allocs,
                    ts[i].frees);
        allocs += ts[i].allocs;
        frees += ts[i].frees;
    }
    for (size_t i = 0; i < ns; i++) {
        uint64_t bits;
        memcpy(&bits, &prices[i], sizeof bits);
        if (!(prices[i] >= 0.0) || prices[i] > 1.0)
            mt_fail("swaptions: swaption %zu has price %g (outside [0, 1])", i, prices[i]);
        sum = mt_sum(sum, bits);
    }
    char extra[128];
    snprintf(extra, sizeof extra, "allocs=%" PRIu64 " cross_thread_frees=0 swaptions=%zu", allocs, ns);
    mt_report(&o, allocs + frees, wall, sum, extra);
    mt_free(prices);
    mt_free(th);
    mt_free(ts);
    return 0;
}

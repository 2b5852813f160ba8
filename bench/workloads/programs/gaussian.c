/*
 * bench/workloads/programs/gaussian.c - 7x7 Gaussian (binomial) blur of a
 * synthetic picture, with the P2012 master-worker allocation shape (seed
 * 001's Gaussian kernel).
 *
 *   gaussian [-W 384] [-H 256] [-T 32] [--workers 16] [--threads 0]
 *            [--runs 1] [--seed S]
 *
 * One run:
 *   master: application descriptor; per worker a task descriptor, a stack
 *           and three coefficient arrays (7 horizontal taps, 7 vertical
 *           taps, the 7x7 kernel); per tile a 64-byte tile descriptor, the
 *           input tile with a 3-pixel halo ((T+6)^2 bytes, edges clamped),
 *           a 16-bit intermediate ((T+6) x T) and the output tile (T^2);
 *   jobs:   one per tile: horizontal pass into the intermediate, vertical
 *           pass into the output (integer, exact), a 16-byte result record;
 *   master: copies the tiles into the output picture and frees each tile's
 *           buffers tile by tile (FIFO), then the records, tasks, stacks and
 *           coefficients, then the descriptor.
 * Check: 256 random pixels recomputed with the 7x7 kernel directly.
 */
#include "kernel_common.h"

#define R 3 /* kernel radius */
#define K (2 * R + 1)

typedef struct tile_desc {
    uint32_t x0, y0, tw, th;
    unsigned char pad[48];
} tile_desc;

typedef struct coeffs {
    int32_t *h, *v, *k2; /* K, K, K*K */
} coeffs;

typedef struct record {
    uint64_t tile, sum;
} record;

typedef struct ctx {
    size_t t, tx;
    tile_desc **desc;
    unsigned char **in, **out;
    uint16_t **mid;
    record **rec;
    coeffs *co;
    unsigned nworkers;
} ctx;

static const int32_t binom[K] = {1, 6, 15, 20, 15, 6, 1}; /* sum 64 */

static void tile_job(void *vc, size_t j, unsigned worker)
{
    ctx *c = vc;
    const coeffs *co = &c->co[worker % c->nworkers];
    const tile_desc *d = c->desc[j];
    size_t t = c->t, hw = t + 2 * R;
    const unsigned char *in = c->in[j];
    uint16_t *mid = c->mid[j];
    unsigned char *out = c->out[j];
    record *rec = xmalloc(sizeof *rec);
    uint64_t sum = 0;
    /* horizontal: rows -R .. th+R-1, columns 0 .. tw-1 */
    for (size_t y = 0; y < d->th + 2 * R; y++)
        for (size_t x = 0; x < d->tw; x++) {
            int32_t a = 0;
            for (int k = 0; k < K; k++)
                a += co->h[k] * in[y * hw + x + (size_t)k];
            mid[y * t + x] = (uint16_t)a; /* <= 255 * 64 */
        }
    for (size_t y = 0; y < d->th; y++)
        for (size_t x = 0; x < d->tw; x++) {
            int32_t a = 0;
            for (int k = 0; k < K; k++)
                a += co->v[k] * mid[(y + (size_t)k) * t + x];
            out[y * t + x] = (unsigned char)((a + 2048) >> 12);
            sum += out[y * t + x];
        }
    rec->tile = j;
    rec->sum = sum;
    c->rec[j] = rec;
}

static unsigned char clamped(const unsigned char *img, size_t w, size_t h, long x, long y)
{
    if (x < 0)
        x = 0;
    if (y < 0)
        y = 0;
    if (x >= (long)w)
        x = (long)w - 1;
    if (y >= (long)h)
        y = (long)h - 1;
    return img[(size_t)y * w + (size_t)x];
}

int main(int argc, char **argv)
{
    uint64_t w = 384, h = 256, t = 32, workers = 16, threads = 0, runs = 1, seed = 1;
    prog_opt opts[] = {
        {"-W", "--width", &w, 1, 1u << 15, "image width"},
        {"-H", "--height", &h, 1, 1u << 15, "image height"},
        {"-T", "--tile", &t, 1, 1024, "tile side"},
        {NULL, "--workers", &workers, 1, 1024, "worker processors (descriptors, stacks, coefficients)"},
        {NULL, "--threads", &threads, 0, 256, "threads running the jobs (0 = the master)"},
        {NULL, "--runs", &runs, 1, 1u << 16, "application runs, back to back"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed (image content)"},
    };
    prog_sum s;
    uint64_t total = 0;

    prog_parse(argc, argv, "7x7 Gaussian blur of a synthetic picture, P2012 master-worker allocation shape.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    if (threads > workers)
        prog_die(2, "--threads (%" PRIu64 ") must not exceed --workers (%" PRIu64 ")", threads, workers);
    sum_init(&s);
    for (uint64_t run = 0; run < runs; run++) {
        unsigned char *img = make_image(w, h, seed + run), *res;
        size_t hw = t + 2 * R, n;
        prog_rng pr;
        ctx c;
        rt r;
        rt_start(&r, (unsigned)workers);
        c.t = t;
        c.tx = (w + t - 1) / t;
        c.nworkers = (unsigned)workers;
        n = c.tx * ((h + t - 1) / t);
        c.co = xmalloc(workers * sizeof *c.co);
        for (unsigned i = 0; i < workers; i++) {
            c.co[i].h = xmalloc(K * sizeof(int32_t));
            c.co[i].v = xmalloc(K * sizeof(int32_t));
            c.co[i].k2 = xmalloc(K * K * sizeof(int32_t));
            for (int a = 0; a < K; a++) {
                c.co[i].h[a] = binom[a];
                c.co[i].v[a] = binom[a];
                for (int b = 0; b < K; b++)
                    c.co[i].k2[a * K + b] = binom[a] * binom[b];
            }
        }
        c.desc = xmalloc(n * sizeof *c.desc);
        c.in = xmalloc(n * sizeof *c.in);
        c.mid = xmalloc(n * sizeof *c.mid);
        c.out = xmalloc(n * sizeof *c.out);
        c.rec = xcalloc(n, sizeof *c.rec);
        for (size_t j = 0; j < n; j++) {
            tile_desc *d = xmalloc(sizeof *d);
            size_t x0 = (j % c.tx) * t, y0 = (j / c.tx) * t;
            d->x0 = (uint32_t)x0;
            d->y0 = (uint32_t)y0;
            d->tw = (uint32_t)(w - x0 < t ? w - x0 : t);
            d->th = (uint32_t)(h - y0 < t ? h - y0 : t);
            memset(d->pad, 0, sizeof d->pad);
            c.desc[j] = d;
            c.in[j] = xmalloc(hw * hw);
            c.mid[j] = xmalloc(hw * t * sizeof **c.mid);
            c.out[j] = xmalloc(t * t);
            for (size_t y = 0; y < hw; y++)
                for (size_t x = 0; x < hw; x++)
                    c.in[j][y * hw + x] = clamped(img, w, h, (long)(x0 + x) - R, (long)(y0 + y) - R);
        }
        prog_run_jobs(tile_job, &c, n, (unsigned)threads);

        res = xmalloc(w * h);
        for (size_t j = 0; j < n; j++) {
            const tile_desc *d = c.desc[j];
            for (size_t y = 0; y < d->th; y++)
                memcpy(res + (d->y0 + y) * w + d->x0, c.out[j] + y * t, d->tw);
            free(c.desc[j]);
            free(c.in[j]);
            free(c.mid[j]);
            free(c.out[j]);
        }
        rng_seed(&pr, seed * 31 + run);
        for (int k = 0; k < 256; k++) {
            long x = (long)rng_below(&pr, w), y = (long)rng_below(&pr, h);
            int32_t a = 0;
            for (int dy = -R; dy <= R; dy++)
                for (int dx = -R; dx <= R; dx++)
                    a += c.co[0].k2[(dy + R) * K + dx + R] * clamped(img, w, h, x + dx, y + dy);
            if (res[(size_t)y * w + (size_t)x] != (unsigned char)((a + 2048) >> 12))
                prog_die(1, "self-check: pixel (%ld, %ld) is %u, expected %d", x, y, res[(size_t)y * w + (size_t)x],
                         (a + 2048) >> 12);
        }
        sum_bytes(&s, res, w * h);
        for (size_t j = 0; j < n; j++) {
            total += c.rec[j]->sum;
            free(c.rec[j]);
        }
        rt_stop_workers(&r);
        for (unsigned i = 0; i < workers; i++) {
            free(c.co[i].h);
            free(c.co[i].v);
            free(c.co[i].k2);
        }
        free(c.co);
        free(c.rec);
        free(c.out);
        free(c.mid);
        free(c.in);
        free(c.desc);
        free(res);
        rt_stop(&r);
        free(img);
    }
    sum_u64(&s, total);
    printf("gaussian %" PRIu64 "x%" PRIu64 " tile=%" PRIu64 " workers=%" PRIu64 " threads=%" PRIu64 " runs=%" PRIu64
           " seed=%" PRIu64 ": tiles=%" PRIu64 " mean=%.3f\n",
           w, h, t, workers, threads, runs, seed, ((w + t - 1) / t) * ((h + t - 1) / t),
           (double)total / (double)(w * h * runs));
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}

/*
 * bench/workloads/programs/integral.c - integral image (summed-area table)
 * of a synthetic picture, with the P2012 master-worker allocation shape
 * (seed 001's Integral kernel).
 *
 *   integral [-W 384] [-H 256] [-T 32] [--workers 16] [--threads 0]
 *            [--runs 1] [--seed S]
 *
 * One run:
 *   master: application descriptor, per worker a task descriptor and a
 *           stack, then per tile an 8-bit input tile (T*T, the "DMA" copy)
 *           and a 32-bit output tile (4*T*T);
 *   jobs:   one per tile: the tile-local integral, with the column sums in
 *           the worker's stack; each job allocates a 16-byte result record
 *           (tile sum) that the master later frees;
 *   master: combines the tiles in raster order into the global table, with
 *           a carry buffer per tile row (the row above, 4*W) and a left
 *           column carry per tile row (4*T);
 *   check:  a directly computed table (one big buffer) must be equal;
 *   frees:  tasks and stacks, input tiles (allocation order), result
 *           records, carries, output tiles (reverse order), the descriptor.
 */
#include "kernel_common.h"

typedef struct result {
    uint64_t tile;
    uint64_t sum;
} result;

typedef struct ctx {
    const unsigned char *img;
    size_t w, h, t, tx, ty;
    unsigned char **in;
    uint32_t **out;
    result **res;
    rt *rt;
} ctx;

static void tile_job(void *vc, size_t j, unsigned worker)
{
    ctx *c = vc;
    size_t tx = j % c->tx, ty = j / c->tx;
    size_t x0 = tx * c->t, y0 = ty * c->t;
    size_t tw = c->w - x0 < c->t ? c->w - x0 : c->t, th = c->h - y0 < c->t ? c->h - y0 : c->t;
    uint32_t *col = (uint32_t *)(void *)c->rt->w[worker % c->rt->nworkers].stack; /* T <= 512 */
    const unsigned char *in = c->in[j];
    uint32_t *out = c->out[j];
    result *res = xmalloc(sizeof *res);
    uint64_t total = 0;
    for (size_t x = 0; x < tw; x++)
        col[x] = 0;
    for (size_t y = 0; y < th; y++) {
        uint32_t run = 0;
        for (size_t x = 0; x < tw; x++) {
            run += in[y * c->t + x];
            col[x] += run;
            out[y * c->t + x] = col[x];
        }
        total += run;
    }
    res->tile = j;
    res->sum = total;
    c->res[j] = res;
}

int main(int argc, char **argv)
{
    uint64_t w = 384, h = 256, t = 32, workers = 16, threads = 0, runs = 1, seed = 1;
    prog_opt opts[] = {
        {"-W", "--width", &w, 1, 1u << 15, "image width"},
        {"-H", "--height", &h, 1, 1u << 15, "image height"},
        {"-T", "--tile", &t, 1, 512, "tile side"},
        {NULL, "--workers", &workers, 1, 1024, "worker processors (task descriptors, stacks)"},
        {NULL, "--threads", &threads, 0, 256, "threads running the jobs (0 = the master)"},
        {NULL, "--runs", &runs, 1, 1u << 16, "application runs, back to back"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed (image content)"},
    };
    prog_sum s;

    prog_parse(argc, argv, "Integral image of a synthetic picture, P2012 master-worker allocation shape.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    if (threads > workers)
        prog_die(2, "--threads (%" PRIu64 ") must not exceed --workers (%" PRIu64 ")", threads, workers);
    if (w * h > ((uint64_t)1 << 24))
        prog_die(2, "image too large for 32-bit sums (at most 2^24 pixels)");
    sum_init(&s);
    for (uint64_t run = 0; run < runs; run++) {
        unsigned char *img = make_image(w, h, seed + run);
        ctx c;
        rt r;
        size_t n;
        uint32_t **carry, *left, *ref;
        uint64_t grand = 0;
        rt_start(&r, (unsigned)workers);
        c.img = img;
        c.w = w;
        c.h = h;
        c.t = t;
        c.tx = (w + t - 1) / t;
        c.ty = (h + t - 1) / t;
        c.rt = &r;
        n = c.tx * c.ty;
        c.in = xmalloc(n * sizeof *c.in);
        c.out = xmalloc(n * sizeof *c.out);
        c.res = xcalloc(n, sizeof *c.res);
        for (size_t j = 0; j < n; j++) {
            size_t x0 = (j % c.tx) * t, y0 = (j / c.tx) * t;
            c.in[j] = xmalloc(t * t);
            c.out[j] = xmalloc(t * t * sizeof **c.out);
            for (size_t y = 0; y < t; y++)
                for (size_t x = 0; x < t; x++)
                    c.in[j][y * t + x] = (x0 + x < w && y0 + y < h) ? img[(y0 + y) * w + x0 + x] : 0;
        }
        prog_run_jobs(tile_job, &c, n, (unsigned)threads);

        /* combine in raster order */
        carry = xmalloc(c.ty * sizeof *carry);
        for (size_t ty = 0; ty < c.ty; ty++) {
            size_t y0 = ty * t, th = h - y0 < t ? h - y0 : t;
            carry[ty] = xcalloc(w, sizeof **carry); /* G(x, y0 + th - 1) after this row */
            left = xcalloc(t, sizeof *left);        /* G(x0 - 1, y) for the tile's rows */
            for (size_t tx = 0; tx < c.tx; tx++) {
                size_t x0 = tx * t, tw = w - x0 < t ? w - x0 : t;
                uint32_t *o = c.out[ty * c.tx + tx];
                uint32_t corner = (ty > 0 && tx > 0) ? carry[ty - 1][x0 - 1] : 0;
                for (size_t y = 0; y < th; y++)
                    for (size_t x = 0; x < tw; x++) {
                        uint32_t above = ty > 0 ? carry[ty - 1][x0 + x] : 0;
                        o[y * t + x] += above + left[y] - corner;
                    }
                for (size_t y = 0; y < th; y++)
                    left[y] = o[y * t + tw - 1];
                for (size_t x = 0; x < tw; x++)
                    carry[ty][x0 + x] = o[(th - 1) * t + x];
            }
            free(left);
        }

        /* check against a direct computation */
        ref = xmalloc(w * h * sizeof *ref);
        for (size_t y = 0; y < h; y++) {
            uint32_t row = 0;
            for (size_t x = 0; x < w; x++) {
                row += img[y * w + x];
                ref[y * w + x] = row + (y ? ref[(y - 1) * w + x] : 0);
            }
        }
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++) {
                size_t j = (y / t) * c.tx + x / t;
                uint32_t g = c.out[j][(y % t) * t + x % t];
                if (g != ref[y * w + x])
                    prog_die(1, "self-check: G(%zu, %zu) = %u, expected %u", x, y, g, ref[y * w + x]);
                sum_u64(&s, g);
            }
        for (size_t j = 0; j < n; j++)
            grand += c.res[j]->sum;
        if (grand != ref[w * h - 1])
            prog_die(1, "self-check: tile sums %" PRIu64 " != total %u", grand, ref[w * h - 1]);
        free(ref);

        /* free phases */
        rt_stop_workers(&r);
        for (size_t j = 0; j < n; j++)
            free(c.in[j]);
        for (size_t j = 0; j < n; j++)
            free(c.res[j]);
        for (size_t ty = 0; ty < c.ty; ty++)
            free(carry[ty]);
        free(carry);
        for (size_t j = n; j-- > 0;)
            free(c.out[j]);
        free(c.res);
        free(c.out);
        free(c.in);
        rt_stop(&r);
        free(img);
    }
    printf("integral %" PRIu64 "x%" PRIu64 " tile=%" PRIu64 " workers=%" PRIu64 " threads=%" PRIu64 " runs=%" PRIu64
           " seed=%" PRIu64 ": tiles=%" PRIu64 "\n",
           w, h, t, workers, threads, runs, seed, ((w + t - 1) / t) * ((h + t - 1) / t));
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}

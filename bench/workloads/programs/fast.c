/*
 * bench/workloads/programs/fast.c - FAST-9 corner detection on a synthetic
 * picture, with the P2012 master-worker allocation shape (seed 001's FAST
 * kernel, the one that allocates inside the kernel).
 *
 *   fast [-W 384] [-H 256] [-T 32] [--threshold 20] [--workers 16]
 *        [--threads 0] [--runs 1] [--seed S]
 *
 * One run:
 *   master: application descriptor; per worker a task descriptor and a
 *           stack; per tile the tile with a 3-pixel border ((T+6)^2 bytes);
 *   jobs:   one per tile, and the kernel allocates: a score buffer (T^2
 *           32-bit scores, freed before the job ends), then one 16-byte corner
 *           record per corner that survives 3x3 non-maximum suppression;
 *   master: one result array of 16 bytes x corners, filled tile by tile;
 *           frees the corner records in allocation order, the tile buffers,
 *           the tasks and stacks, the result, the descriptor.
 * A pixel is a corner when 9 contiguous pixels of the 16 on the radius-3
 * circle are all brighter than it + threshold or all darker than it -
 * threshold; its score is the sum of (|difference| - threshold) over them.
 * Check: the raw candidate count of the tiles equals a whole-image scan.
 */
#include "kernel_common.h"

#define B 3 /* border */

typedef struct corner {
    uint16_t x, y;
    uint32_t score;
    struct corner *next;
} corner;

typedef struct ctx {
    size_t w, h, t, tx;
    unsigned thr;
    unsigned char **tile;
    corner **first;      /* per tile: its corner records, in allocation order */
    uint64_t *raw;       /* per tile: candidates before suppression */
} ctx;

static const int cx[16] = {0, 1, 2, 3, 3, 3, 2, 1, 0, -1, -2, -3, -3, -3, -2, -1};
static const int cy[16] = {-3, -3, -2, -1, 0, 1, 2, 3, 3, 3, 2, 1, 0, -1, -2, -3};

/* FAST-9 score of the pixel at p in an image with row stride `stride`; 0 if
 * not a corner. */
static uint32_t fast_score(const unsigned char *p, size_t stride, unsigned thr)
{
    int v = *p;
    int bright = 0, dark = 0, best_b = 0, best_d = 0;
    uint32_t sb = 0, sd = 0;
    int d[16];
    for (int i = 0; i < 16; i++)
        d[i] = (int)p[(long)cy[i] * (long)stride + cx[i]] - v;
    /* longest circular runs: walk the circle twice */
    for (int i = 0; i < 32; i++) {
        int x = d[i & 15];
        bright = x > (int)thr ? bright + 1 : 0;
        dark = x < -(int)thr ? dark + 1 : 0;
        if (bright > best_b)
            best_b = bright;
        if (dark > best_d)
            best_d = dark;
    }
    if (best_b < 9 && best_d < 9)
        return 0;
    for (int i = 0; i < 16; i++) {
        if (d[i] > (int)thr)
            sb += (uint32_t)(d[i] - (int)thr);
        if (d[i] < -(int)thr)
            sd += (uint32_t)(-d[i] - (int)thr);
    }
    return best_b >= 9 && (best_d < 9 || sb >= sd) ? sb : sd;
}

static void tile_job(void *vc, size_t j, unsigned worker)
{
    ctx *c = vc;
    size_t t = c->t, bw = t + 2 * B;
    size_t x0 = (j % c->tx) * t, y0 = (j / c->tx) * t;
    size_t tw = c->w - x0 < t ? c->w - x0 : t, th = c->h - y0 < t ? c->h - y0 : t;
    const unsigned char *tile = c->tile[j];
    uint32_t *score = xmalloc(t * t * sizeof *score);
    corner *head = NULL, **tail = &head;
    uint64_t raw = 0;
    (void)worker;
    for (size_t y = 0; y < th; y++)
        for (size_t x = 0; x < tw; x++) {
            size_t gx = x0 + x, gy = y0 + y;
            uint32_t sc = 0;
            if (gx >= B && gy >= B && gx + B < c->w && gy + B < c->h)
                sc = fast_score(tile + (y + B) * bw + x + B, bw, c->thr);
            score[y * t + x] = sc;
            raw += sc != 0;
        }
    /* 3x3 non-maximum suppression inside the tile; ties go to the first in
     * raster order */
    for (size_t y = 0; y < th; y++)
        for (size_t x = 0; x < tw; x++) {
            uint32_t sc = score[y * t + x];
            int keep = sc != 0;
            for (int dy = -1; dy <= 1 && keep; dy++)
                for (int dx = -1; dx <= 1 && keep; dx++) {
                    long nx = (long)x + dx, ny = (long)y + dy;
                    uint32_t o;
                    if ((dx == 0 && dy == 0) || nx < 0 || ny < 0 || nx >= (long)tw || ny >= (long)th)
                        continue;
                    o = score[(size_t)ny * t + (size_t)nx];
                    if (o > sc || (o == sc && (dy < 0 || (dy == 0 && dx < 0))))
                        keep = 0;
                }
            if (keep) {
                corner *k = xmalloc(sizeof *k);
                k->x = (uint16_t)(x0 + x);
                k->y = (uint16_t)(y0 + y);
                k->score = sc;
                k->next = NULL;
                *tail = k;
                tail = &k->next;
            }
        }
    free(score); /* inside the kernel, before the next tile */
    c->first[j] = head;
    c->raw[j] = raw;
}

int main(int argc, char **argv)
{
    uint64_t w = 384, h = 256, t = 32, thr = 20, workers = 16, threads = 0, runs = 1, seed = 1;
    prog_opt opts[] = {
        {"-W", "--width", &w, 7, 65535, "image width"},
        {"-H", "--height", &h, 7, 65535, "image height"},
        {"-T", "--tile", &t, 1, 1024, "tile side"},
        {NULL, "--threshold", &thr, 1, 254, "FAST intensity threshold"},
        {NULL, "--workers", &workers, 1, 1024, "worker processors (descriptors, stacks)"},
        {NULL, "--threads", &threads, 0, 256, "threads running the jobs (0 = the master)"},
        {NULL, "--runs", &runs, 1, 1u << 16, "application runs, back to back"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed (image content)"},
    };
    prog_sum s;
    uint64_t corners_total = 0, raw_total = 0;

    prog_parse(argc, argv, "FAST-9 corners of a synthetic picture; the kernel allocates a record per corner.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    if (threads > workers)
        prog_die(2, "--threads (%" PRIu64 ") must not exceed --workers (%" PRIu64 ")", threads, workers);
    sum_init(&s);
    for (uint64_t run = 0; run < runs; run++) {
        unsigned char *img = make_image(w, h, seed + run);
        size_t bw = t + 2 * B, n, ncorners = 0, k;
        uint64_t raw = 0, whole = 0;
        corner *result;
        ctx c;
        rt r;
        rt_start(&r, (unsigned)workers);
        c.w = w;
        c.h = h;
        c.t = t;
        c.tx = (w + t - 1) / t;
        c.thr = (unsigned)thr;
        n = c.tx * ((h + t - 1) / t);
        c.tile = xmalloc(n * sizeof *c.tile);
        c.first = xcalloc(n, sizeof *c.first);
        c.raw = xcalloc(n, sizeof *c.raw);
        for (size_t j = 0; j < n; j++) {
            size_t x0 = (j % c.tx) * t, y0 = (j / c.tx) * t;
            c.tile[j] = xmalloc(bw * bw);
            for (size_t y = 0; y < bw; y++)
                for (size_t x = 0; x < bw; x++) {
                    long gx = (long)(x0 + x) - B, gy = (long)(y0 + y) - B;
                    c.tile[j][y * bw + x] =
                        (gx < 0 || gy < 0 || gx >= (long)w || gy >= (long)h) ? 0 : img[(size_t)gy * w + (size_t)gx];
                }
        }
        prog_run_jobs(tile_job, &c, n, (unsigned)threads);

        for (size_t j = 0; j < n; j++) {
            raw += c.raw[j];
            for (const corner *q = c.first[j]; q; q = q->next)
                ncorners++;
        }
        result = xmalloc((ncorners ? ncorners : 1) * sizeof *result);
        k = 0;
        for (size_t j = 0; j < n; j++)
            for (const corner *q = c.first[j]; q; q = q->next) {
                result[k] = *q;
                result[k].next = NULL;
                sum_u64(&s, (uint64_t)q->x << 48 | (uint64_t)q->y << 32 | q->score);
                k++;
            }
        for (size_t y = B; y + B < h; y++)
            for (size_t x = B; x + B < w; x++)
                whole += fast_score(img + y * w + x, w, c.thr) != 0;
        if (whole != raw)
            prog_die(1, "self-check: tiles found %" PRIu64 " candidates, the whole image %" PRIu64, raw, whole);
        for (size_t j = 0; j < n; j++)
            while (c.first[j]) {
                corner *q = c.first[j];
                c.first[j] = q->next;
                free(q);
            }
        for (size_t j = 0; j < n; j++)
            free(c.tile[j]);
        rt_stop_workers(&r);
        free(result);
        free(c.raw);
        free(c.first);
        free(c.tile);
        rt_stop(&r);
        free(img);
        corners_total += ncorners;
        raw_total += raw;
    }
    sum_u64(&s, corners_total);
    printf("fast %" PRIu64 "x%" PRIu64 " tile=%" PRIu64 " threshold=%" PRIu64 " workers=%" PRIu64 " threads=%" PRIu64
           " runs=%" PRIu64 " seed=%" PRIu64 ": corners=%" PRIu64 " candidates=%" PRIu64 "\n",
           w, h, t, thr, workers, threads, runs, seed, corners_total, raw_total);
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}

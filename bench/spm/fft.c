/*
 * bench/spm/fft.c - the managed FFT / inverse FFT (bench/workloads/programs/
 * fft.c, same options and checksum; fft_inv is this file built with
 * FFT_DEFAULT_INVERSE=1): coefficient, input, twiddle and per-stage buffers
 * in global memory, every element access through hm.h (p2s before, s2p
 * after).  The arithmetic is the unmanaged program's, in the same order.
 */
#include <math.h>

#include "prog_common.h"
#include "hm.h"

#ifndef FFT_DEFAULT_INVERSE
#define FFT_DEFAULT_INVERSE 0
#endif

typedef struct cpx {
    double re, im;
} cpx;

static _Thread_local uint64_t stages_done, buffers_allocated;

#define RE(r, i) HM_GET(cpx, HM_IDX(cpx, r, i), re)
#define IM(r, i) HM_GET(cpx, HM_IDX(cpx, r, i), im)
#define SETRE(r, i, v) HM_SET(cpx, HM_IDX(cpx, r, i), re, v)
#define SETIM(r, i, v) HM_SET(cpx, HM_IDX(cpx, r, i), im, v)

static hm_ref transform(hm_ref x, size_t n, int sign)
{
    const double pi = 3.14159265358979323846;
    hm_ref tw = HM_MALLOC(n / 2 * sizeof(cpx) + sizeof(cpx));
    hm_ref in = x, cur = HM_NULL;
    for (size_t t = 0; t < n / 2; t++) {
        double a = sign * 2.0 * pi * (double)t / (double)n;
        SETRE(tw, t, cos(a));
        SETIM(tw, t, sin(a));
    }
    if (n == 1) {
        cur = HM_MALLOC(sizeof(cpx));
        SETRE(cur, 0, RE(x, 0));
        SETIM(cur, 0, IM(x, 0));
        buffers_allocated++;
    }
    for (size_t l = n / 2, m = 1; l >= 1; l /= 2, m *= 2) {
        hm_ref y = HM_MALLOC(n * sizeof(cpx));
        buffers_allocated++;
        for (size_t j = 0; j < l; j++) {
            cpx w = {RE(tw, j * m), IM(tw, j * m)};
            for (size_t k = 0; k < m; k++) {
                cpx c0 = {RE(in, k + j * m), IM(in, k + j * m)};
                cpx c1 = {RE(in, k + j * m + l * m), IM(in, k + j * m + l * m)};
                cpx d = {c0.re - c1.re, c0.im - c1.im};
                SETRE(y, k + 2 * j * m, c0.re + c1.re);
                SETIM(y, k + 2 * j * m, c0.im + c1.im);
                SETRE(y, k + 2 * j * m + m, w.re * d.re - w.im * d.im);
                SETIM(y, k + 2 * j * m + m, w.re * d.im + w.im * d.re);
            }
        }
        if (cur)
            HM_FREE(cur);
        cur = y;
        in = y;
        stages_done++;
    }
    HM_FREE(tw);
    if (sign > 0)
        for (size_t i = 0; i < n; i++) {
            SETRE(cur, i, RE(cur, i) / (double)n);
            SETIM(cur, i, IM(cur, i) / (double)n);
        }
    return cur;
}

static int64_t quant(double v) { return (int64_t)llround(v * 1000.0); }

static int prog_main(int argc, char **argv)
{
    uint64_t n = 4096, waves = 8, blocks = 16, seed = 1;
    int inverse = FFT_DEFAULT_INVERSE, forward = 0;
    prog_opt opts[] = {
        {"-n", "--size", &n, 1, 1u << 24, "transform size (a power of two)"},
        {"-w", "--waves", &waves, 1, 1024, "sinusoids per block"},
        {"-b", "--blocks", &blocks, 1, 1u << 20, "transforms"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed"},
    };
    const char *flags[] = {"-i", "--inverse", "--forward"};
    int *flag_vals[] = {&inverse, &inverse, &forward};
    prog_rng r;
    prog_sum s;
    const double pi = 3.14159265358979323846;
    double worst = 0;

    stages_done = buffers_allocated = 0;
    prog_parse(argc, argv,
               "Radix-2 Stockham FFT (managed); per block: coefficient arrays, input arrays, one buffer per stage.\n"
               "Flags: -i/--inverse (inverse transform), --forward (forward transform).",
               opts, sizeof opts / sizeof opts[0], flags, flag_vals, 3);
    if (forward)
        inverse = 0;
    if (n & (n - 1))
        prog_die(2, "--size must be a power of two, not %" PRIu64, n);
    rng_seed(&r, seed);
    sum_init(&s);

    for (uint64_t b = 0; b < blocks; b++) {
        hm_ref coeff = HM_MALLOC(waves * sizeof(double));
        hm_ref amp = HM_MALLOC(waves * sizeof(double));
        hm_ref re = HM_MALLOC(n * sizeof(double)), im = HM_MALLOC(n * sizeof(double));
        hm_ref x = HM_MALLOC(n * sizeof(cpx)), y;
        for (uint64_t w = 0; w < waves; w++) {
            HM_ASET(double, coeff, w, (double)rng_below(&r, n / 2 + 1));
            HM_ASET(double, amp, w, 1.0 + (double)rng_below(&r, 1000) / 10.0);
        }
        for (uint64_t i = 0; i < n; i++) {
            HM_ASET(double, re, i, 0.0);
            HM_ASET(double, im, i, 0.0);
        }
        if (!inverse) {
            for (uint64_t i = 0; i < n; i++)
                for (uint64_t w = 0; w < waves; w++) {
                    double add = HM_AGET(double, amp, w) *
                                 cos(2.0 * pi * HM_AGET(double, coeff, w) * (double)i / (double)n);
                    HM_ASET(double, re, i, HM_AGET(double, re, i) + add);
                }
        } else {
            for (uint64_t w = 0; w < waves; w++) {
                size_t k = (size_t)HM_AGET(double, coeff, w) % n;
                double aw = HM_AGET(double, amp, w);
                HM_ASET(double, re, k, HM_AGET(double, re, k) + aw * (double)n / 2.0);
                HM_ASET(double, im, k, HM_AGET(double, im, k) - aw * (double)n / 4.0);
            }
        }
        for (uint64_t i = 0; i < n; i++) {
            SETRE(x, i, HM_AGET(double, re, i));
            SETIM(x, i, HM_AGET(double, im, i));
        }
        y = transform(x, n, inverse ? 1 : -1);
        for (uint64_t i = 0; i < n; i++) {
            double yr = RE(y, i), yi = IM(y, i);
            double mag = sqrt(yr * yr + yi * yi);
            sum_u64(&s, (uint64_t)quant(mag));
        }
        if (b == 0) {
            hm_ref z = transform(y, n, inverse ? -1 : 1);
            double peak = 0, err = 0;
            for (uint64_t i = 0; i < n; i++) {
                double xr = RE(x, i), xi = IM(x, i);
                double e = hypot(RE(z, i) - xr, IM(z, i) - xi);
                double m = hypot(xr, xi);
                if (e > err)
                    err = e;
                if (m > peak)
                    peak = m;
            }
            HM_FREE(z);
            if (n <= 1024) {
                double derr = 0, dpeak = 0;
                for (uint64_t k = 0; k < n; k++) {
                    double ar = 0, ai = 0, yr, yi;
                    for (uint64_t j = 0; j < n; j++) {
                        double a = (inverse ? 2.0 : -2.0) * pi * (double)((k * j) % n) / (double)n;
                        double xr = RE(x, j), xi = IM(x, j);
                        ar += xr * cos(a) - xi * sin(a);
                        ai += xr * sin(a) + xi * cos(a);
                    }
                    if (inverse) {
                        ar /= (double)n;
                        ai /= (double)n;
                    }
                    yr = RE(y, k);
                    yi = IM(y, k);
                    if (hypot(ar - yr, ai - yi) > derr)
                        derr = hypot(ar - yr, ai - yi);
                    if (hypot(ar, ai) > dpeak)
                        dpeak = hypot(ar, ai);
                }
                if (derr > 1e-9 * (dpeak > 1 ? dpeak : 1))
                    prog_die(1, "self-check: differs from the direct DFT by %g (peak %g)", derr, dpeak);
            }
            worst = peak > 0 ? err / peak : err;
            if (worst > 1e-6)
                prog_die(1, "self-check: round trip error %g of the peak", worst);
        }
        HM_FREE(y);
        HM_FREE(x);
        HM_FREE(im);
        HM_FREE(re);
        HM_FREE(amp);
        HM_FREE(coeff);
    }
    hm_info("%s n=%" PRIu64 " waves=%" PRIu64 " blocks=%" PRIu64 " seed=%" PRIu64 ": stages=%" PRIu64
            " stage_buffers=%" PRIu64 " roundtrip_error=%.1e",
            inverse ? "fft_inv" : "fft", n, waves, blocks, seed, stages_done, buffers_allocated, worst);
    hm_checksum(s.h);
    return 0;
}

int main(int argc, char **argv) { return hm_run(argc, argv, FFT_DEFAULT_INVERSE ? "fft_inv" : "fft", prog_main); }

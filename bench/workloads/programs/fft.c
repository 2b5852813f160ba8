/*
 * bench/workloads/programs/fft.c - fast Fourier transform and its inverse
 * (seed 000's fft and fft_inv, after MiBench's telecomm/FFT).
 *
 *   fft     -n 4096 [--waves 8] [--blocks 16] [--seed S]
 *   fft_inv -n 4096 ...          (the same program built with the inverse as
 *                                 default; or: fft --inverse)
 *
 * Per block, as MiBench does per run: allocate the coefficient and
 * amplitude arrays of --waves random sinusoids, the real and imaginary input
 * arrays (separate, like MiBench's RealIn/ImagIn), and transform.  The
 * transform is a radix-2 Stockham autosort FFT that allocates its twiddle
 * table and a fresh complex buffer for every one of its log2(n) stages,
 * freeing the previous stage's buffer: the "array per stage" shape.
 * Forward: synthesise a signal, transform, sum the spectrum's magnitudes.
 * Inverse: synthesise a sparse spectrum (the sinusoids' bins), transform
 * back to a signal.  Block 0 is checked by transforming the result the
 * other way and comparing (max error < 1e-6 of the peak) and, for n <= 1024,
 * against a direct O(n^2) DFT.
 */
#include <math.h>

#include "prog_common.h"

#ifndef FFT_DEFAULT_INVERSE
#define FFT_DEFAULT_INVERSE 0
#endif

typedef struct cpx {
    double re, im;
} cpx;

static uint64_t stages_done, buffers_allocated;

/* Transforms x (n complex, not modified); returns a new malloc'ed buffer.
 * sign -1: forward, +1: inverse (scaled by 1/n). */
static cpx *transform(const cpx *x, size_t n, int sign)
{
    const double pi = 3.14159265358979323846;
    cpx *tw = xmalloc(n / 2 * sizeof *tw + sizeof *tw);
    const cpx *in = x;
    cpx *cur = NULL;
    for (size_t t = 0; t < n / 2; t++) {
        double a = sign * 2.0 * pi * (double)t / (double)n;
        tw[t].re = cos(a);
        tw[t].im = sin(a);
    }
    if (n == 1) {
        cur = xmalloc(sizeof *cur);
        cur[0] = x[0];
        buffers_allocated++;
    }
    for (size_t l = n / 2, m = 1; l >= 1; l /= 2, m *= 2) {
        cpx *y = xmalloc(n * sizeof *y);
        buffers_allocated++;
        for (size_t j = 0; j < l; j++) {
            cpx w = tw[j * m];
            for (size_t k = 0; k < m; k++) {
                cpx c0 = in[k + j * m], c1 = in[k + j * m + l * m];
                cpx d = {c0.re - c1.re, c0.im - c1.im};
                y[k + 2 * j * m].re = c0.re + c1.re;
                y[k + 2 * j * m].im = c0.im + c1.im;
                y[k + 2 * j * m + m].re = w.re * d.re - w.im * d.im;
                y[k + 2 * j * m + m].im = w.re * d.im + w.im * d.re;
            }
        }
        if (cur)
            free(cur);
        cur = y;
        in = y;
        stages_done++;
    }
    free(tw);
    if (sign > 0)
        for (size_t i = 0; i < n; i++) {
            cur[i].re /= (double)n;
            cur[i].im /= (double)n;
        }
    return cur;
}

static int64_t quant(double v) { return (int64_t)llround(v * 1000.0); }

int main(int argc, char **argv)
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

    prog_parse(argc, argv,
               "Radix-2 Stockham FFT; per block: coefficient arrays, input arrays, one buffer per stage.\n"
               "Flags: -i/--inverse (inverse transform), --forward (forward transform).",
               opts, sizeof opts / sizeof opts[0], flags, flag_vals, 3);
    if (forward)
        inverse = 0;
    if (n & (n - 1))
        prog_die(2, "--size must be a power of two, not %" PRIu64, n);
    rng_seed(&r, seed);
    sum_init(&s);

    for (uint64_t b = 0; b < blocks; b++) {
        double *coeff = xmalloc(waves * sizeof *coeff); /* frequencies (bins) */
        double *amp = xmalloc(waves * sizeof *amp);
        double *re = xmalloc(n * sizeof *re), *im = xmalloc(n * sizeof *im);
        cpx *x = xmalloc(n * sizeof *x), *y;
        for (uint64_t w = 0; w < waves; w++) {
            coeff[w] = (double)rng_below(&r, n / 2 + 1);
            amp[w] = 1.0 + (double)rng_below(&r, 1000) / 10.0;
        }
        for (uint64_t i = 0; i < n; i++) {
            re[i] = 0;
            im[i] = 0;
        }
        if (!inverse) {
            for (uint64_t i = 0; i < n; i++)
                for (uint64_t w = 0; w < waves; w++)
                    re[i] += amp[w] * cos(2.0 * pi * coeff[w] * (double)i / (double)n);
        } else {
            for (uint64_t w = 0; w < waves; w++) {
                size_t k = (size_t)coeff[w] % n;
                re[k] += amp[w] * (double)n / 2.0;
                im[k] -= amp[w] * (double)n / 4.0;
            }
        }
        for (uint64_t i = 0; i < n; i++) {
            x[i].re = re[i];
            x[i].im = im[i];
        }
        y = transform(x, n, inverse ? 1 : -1);
        for (uint64_t i = 0; i < n; i++) {
            double mag = sqrt(y[i].re * y[i].re + y[i].im * y[i].im);
            sum_u64(&s, (uint64_t)quant(mag));
        }
        if (b == 0) {
            cpx *z = transform(y, n, inverse ? -1 : 1);
            double peak = 0, err = 0;
            for (uint64_t i = 0; i < n; i++) {
                double e = hypot(z[i].re - x[i].re, z[i].im - x[i].im);
                double m = hypot(x[i].re, x[i].im);
                if (e > err)
                    err = e;
                if (m > peak)
                    peak = m;
            }
            free(z);
            if (n <= 1024) { /* and against the definition, O(n^2) */
                double derr = 0, dpeak = 0;
                for (uint64_t k = 0; k < n; k++) {
                    double ar = 0, ai = 0;
                    for (uint64_t j = 0; j < n; j++) {
                        double a = (inverse ? 2.0 : -2.0) * pi * (double)((k * j) % n) / (double)n;
                        ar += x[j].re * cos(a) - x[j].im * sin(a);
                        ai += x[j].re * sin(a) + x[j].im * cos(a);
                    }
                    if (inverse) {
                        ar /= (double)n;
                        ai /= (double)n;
                    }
                    if (hypot(ar - y[k].re, ai - y[k].im) > derr)
                        derr = hypot(ar - y[k].re, ai - y[k].im);
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
        free(y);
        free(x);
        free(im);
        free(re);
        free(amp);
        free(coeff);
    }
    printf("%s n=%" PRIu64 " waves=%" PRIu64 " blocks=%" PRIu64 " seed=%" PRIu64 ": stages=%" PRIu64
           " stage_buffers=%" PRIu64 " roundtrip_error=%.1e\n",
           inverse ? "fft_inv" : "fft", n, waves, blocks, seed, stages_done, buffers_allocated, worst);
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}

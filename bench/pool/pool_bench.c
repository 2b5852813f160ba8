/*
 * bench/pool/pool_bench.c - the pool benchmarks of issue 11 (seed 003):
 *
 *   ops     wall-clock ns per init / alloc / free: the dmm pool, the
 *           conventional RT-Thread-style pool (rtpool.c), a dmm heap (tlsf
 *           preset) and malloc, interleaved repetitions, medians;
 *   space   bytes per block lost to vector alignment and blocks a 64 KiB
 *           buffer yields, rtpool vs dmm pool (dmm_pool_layout_of);
 *   memset  the seed's alloc + memset + free scenario: rtpool + a scalar
 *           byte loop, rtpool + libc memset, dmm pool + dmm_pool_memset,
 *           dmm pool + libc memset, block sizes 64 B..4 KiB;
 *   --cg    one operation N times for scripts/pool_callgrind.sh (callgrind
 *           counts the instructions inside the function named there).
 *
 * The program is built once per pool library variant (bench/CMakeLists.txt):
 * PBENCH_VARIANT "runtime" (the run-time configured library: the pool is
 * measured with the lean and the checked config), "lean" or "checked" (the
 * library frozen to configs/frozen/pool/<variant>.h: only that config).
 * It writes one JSON document (schema dmm-pool-bench-run/1);
 * bench/pool/pool_report.py merges the runs into bench/results/pool_bench.*.
 *
 *   pool_bench [--reps R] [--quick] [--no-space] [--no-memset] [--no-ops]
 *   pool_bench --self-test   (rtpool and the layouts are what they claim)
 *   pool_bench --cg init|alloc|free pool-lean|pool-checked|rtpool|heap|malloc N
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmm/heap.h"
#include "dmm/pool.h"
#include "dmm/vec.h"
#include "rtpool.h"

#ifndef PBENCH_VARIANT
#define PBENCH_VARIANT "runtime"
#endif
#ifndef PBENCH_CFLAGS
#define PBENCH_CFLAGS ""
#endif

#define OPS_BLOCK 64u    /* block size of the ops measurement */
#define OPS_ALIGN 32u    /* its alignment (the AVX2 width, fixed so that the
                            figures do not move with the vector unit) */
#define OPS_BLOCKS 1024u /* blocks taken and given back per sample */
#define INIT_BUF 65536u  /* buffer of the init measurement */

static volatile unsigned sink; /* keeps the memset scenario's stores alive */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what)
{
    fprintf(stderr, "pool_bench: %s\n", what);
    exit(1);
}

/* ---- the pool configs ------------------------------------------------------ */

static dmm_pool_config pool_cfg(int checked, size_t block, size_t align)
{
    dmm_pool_config c = dmm_pool_default_config();
    c.block_size = block;
    c.align = align;
    c.lock = DMM_LOCK_NONE;
    c.stats = DMM_STATS_OFF;
    c.harden = checked ? DMM_HARDEN_CHECKED : DMM_HARDEN_OFF;
    c.poison = false;
    return c;
}

/* Which pool configs this build measures: the runtime library both, a
 * frozen one only its own (it refuses the other). */
static int has_lean(void) { return strcmp(PBENCH_VARIANT, "checked") != 0; }
static int has_checked(void) { return strcmp(PBENCH_VARIANT, "lean") != 0; }

static void *xaligned(size_t align, size_t size)
{
    size = (size + align - 1) / align * align;
    void *p = aligned_alloc(align, size);
    if (!p)
        die("out of memory");
    return p;
}

/* ---- the subjects of the ops measurement ------------------------------------ */

enum subject { S_POOL_LEAN, S_POOL_CHECKED, S_RTPOOL, S_HEAP, S_MALLOC, S_COUNT };
static const char *subject_name[S_COUNT] = {"dmm-pool-lean", "dmm-pool-checked", "rtpool", "dmm-heap-tlsf", "malloc"};

static int subject_here(enum subject s)
{
    if (s == S_POOL_LEAN)
        return has_lean();
    if (s == S_POOL_CHECKED)
        return has_checked();
    return strcmp(PBENCH_VARIANT, "runtime") == 0; /* the others once, in the runtime build */
}

typedef struct subject_state {
    dmm_pool *pool;
    rtpool rt;
    dmm_heap *heap;
    void *buf;
    size_t size;
} subject_state;

static void subject_open(enum subject s, subject_state *st, size_t blocks)
{
    memset(st, 0, sizeof *st);
    if (s == S_POOL_LEAN || s == S_POOL_CHECKED) {
        dmm_pool_config c = pool_cfg(s == S_POOL_CHECKED, OPS_BLOCK, OPS_ALIGN);
        st->size = dmm_pool_buffer_size(&c, blocks);
        if (st->size == 0)
            die("dmm_pool_buffer_size failed");
        st->buf = xaligned(64, st->size);
        if (dmm_pool_init(&st->pool, st->buf, st->size, &c) != DMM_OK)
            die("dmm_pool_init failed");
    } else if (s == S_RTPOOL) {
        st->size = (RTPOOL_HEADER + OPS_BLOCK + OPS_ALIGN) * (blocks + 1);
        st->buf = xaligned(64, st->size);
        if (rtpool_init(&st->rt, st->buf, st->size, OPS_BLOCK, OPS_ALIGN) != 0 || st->rt.total < blocks)
            die("rtpool_init failed");
    } else if (s == S_HEAP) {
        dmm_heap_config c = dmm_heap_preset_config(DMM_PRESET_TLSF);
        st->size = 4 * (OPS_BLOCK + 64) * blocks + (1u << 16);
        st->buf = xaligned(64, st->size);
        if (dmm_heap_init(&st->heap, st->buf, st->size, &c) != DMM_OK)
            die("dmm_heap_init failed");
    }
}

static void subject_close(enum subject s, subject_state *st)
{
    if (st->pool)
        dmm_pool_destroy(st->pool);
    if (st->heap)
        dmm_heap_destroy(st->heap);
    (void)s;
    free(st->buf);
}

static void *subject_alloc(enum subject s, subject_state *st)
{
    switch (s) {
    case S_POOL_LEAN:
    case S_POOL_CHECKED: return dmm_pool_alloc(st->pool);
    case S_RTPOOL: return rtpool_alloc(&st->rt, 0);
    case S_HEAP: return dmm_heap_malloc(st->heap, OPS_BLOCK);
    default: return malloc(OPS_BLOCK);
    }
}

static void subject_free(enum subject s, subject_state *st, void *p)
{
    switch (s) {
    case S_POOL_LEAN:
    case S_POOL_CHECKED: dmm_pool_free(st->pool, p); break;
    case S_RTPOOL: rtpool_free(p); break;
    case S_HEAP: dmm_heap_free(st->heap, p); break;
    default: free(p); break;
    }
}

/* One init of a fresh INIT_BUF pool/heap on buf; returns ns. */
static double time_init(enum subject s, void *buf)
{
    double t0, t1;
    if (s == S_POOL_LEAN || s == S_POOL_CHECKED) {
        dmm_pool_config c = pool_cfg(s == S_POOL_CHECKED, OPS_BLOCK, OPS_ALIGN);
        dmm_pool *p;
        t0 = now_ns();
        dmm_status r = dmm_pool_init(&p, buf, INIT_BUF, &c);
        t1 = now_ns();
        if (r != DMM_OK)
            die("dmm_pool_init failed");
        dmm_pool_destroy(p);
    } else if (s == S_RTPOOL) {
        rtpool rt;
        t0 = now_ns();
        int r = rtpool_init(&rt, buf, INIT_BUF, OPS_BLOCK, OPS_ALIGN);
        t1 = now_ns();
        if (r != 0)
            die("rtpool_init failed");
    } else {
        dmm_heap_config c = dmm_heap_preset_config(DMM_PRESET_TLSF);
        dmm_heap *h;
        t0 = now_ns();
        dmm_status r = dmm_heap_init(&h, buf, INIT_BUF, &c);
        t1 = now_ns();
        if (r != DMM_OK)
            die("dmm_heap_init failed");
        dmm_heap_destroy(h);
    }
    return t1 - t0;
}

/* ---- JSON output ----------------------------------------------------------- */

static FILE *out;
static const char *sep_row = "";

static void json_samples(const double *v, unsigned n)
{
    fputc('[', out);
    for (unsigned i = 0; i < n; i++)
        fprintf(out, "%s%.3f", i ? "," : "", v[i]);
    fputc(']', out);
}

static void machine_json(void)
{
    char model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    c += 1 + (c[1] == ' ');
                    c[strcspn(c, "\n")] = 0;
                    snprintf(model, sizeof model, "%s", c);
                }
                break;
            }
        }
        fclose(f);
    }
    for (char *c = model; *c; c++)
        if (*c == '"' || *c == '\\')
            *c = ' ';
    fprintf(out, "\"machine\":{\"cpu\":\"%s\"},", model);
}

/* ---- ops ------------------------------------------------------------------ */

static void run_ops(unsigned reps, unsigned inner)
{
    enum { OP_INIT, OP_ALLOC, OP_FREE, OP_COUNT };
    static const char *op_name[OP_COUNT] = {"init", "alloc", "free"};
    double *samples[S_COUNT][OP_COUNT] = {{0}};
    void **ptrs = malloc(OPS_BLOCKS * sizeof *ptrs);
    void *initbuf = xaligned(64, INIT_BUF);
    if (!ptrs)
        die("out of memory");
    for (int s = 0; s < S_COUNT; s++)
        for (int o = 0; o < OP_COUNT; o++)
            samples[s][o] = calloc(reps, sizeof(double));

    for (unsigned r = 0; r < reps; r++) {
        /* interleaved: every repetition visits every subject, starting
         * with a different one each time */
        for (int k = 0; k < S_COUNT; k++) {
            enum subject s = (enum subject)((r + (unsigned)k) % S_COUNT);
            if (!subject_here(s))
                continue;
            if (s != S_MALLOC) {
                double t = 0;
                for (unsigned i = 0; i < inner; i++)
                    t += time_init(s, initbuf);
                samples[s][OP_INIT][r] = t / inner;
            }
            subject_state st;
            subject_open(s, &st, OPS_BLOCKS);
            double ta = 0, tf = 0;
            for (unsigned i = 0; i < inner; i++) {
                double t0 = now_ns();
                for (unsigned b = 0; b < OPS_BLOCKS; b++)
                    ptrs[b] = subject_alloc(s, &st);
                double t1 = now_ns();
                for (unsigned b = 0; b < OPS_BLOCKS; b++)
                    subject_free(s, &st, ptrs[b]);
                double t2 = now_ns();
                for (unsigned b = 0; b < OPS_BLOCKS; b++)
                    if (!ptrs[b])
                        die("an allocation failed in the ops measurement");
                ta += t1 - t0;
                tf += t2 - t1;
            }
            samples[s][OP_ALLOC][r] = ta / ((double)inner * OPS_BLOCKS);
            samples[s][OP_FREE][r] = tf / ((double)inner * OPS_BLOCKS);
            subject_close(s, &st);
        }
    }
    fprintf(out, "\"ops\":{\"block_size\":%u,\"align\":%u,\"blocks\":%u,\"init_buffer\":%u,\"reps\":%u,\"inner\":%u,\"rows\":[",
            OPS_BLOCK, OPS_ALIGN, OPS_BLOCKS, INIT_BUF, reps, inner);
    sep_row = "";
    for (int s = 0; s < S_COUNT; s++) {
        if (!subject_here((enum subject)s))
            continue;
        for (int o = 0; o < OP_COUNT; o++) {
            if (s == S_MALLOC && o == OP_INIT)
                continue;
            fprintf(out, "%s{\"subject\":\"%s\",\"op\":\"%s\",\"ns\":", sep_row, subject_name[s], op_name[o]);
            json_samples(samples[s][o], reps);
            fprintf(out, ",\"ns_median\":%.3f}", median(samples[s][o], reps));
            sep_row = ",";
        }
    }
    fprintf(out, "]},");
    for (int s = 0; s < S_COUNT; s++)
        for (int o = 0; o < OP_COUNT; o++)
            free(samples[s][o]);
    free(ptrs);
    free(initbuf);
}

/* ---- space ----------------------------------------------------------------- */

static void run_space(void)
{
    static const size_t sizes[] = {16, 24, 32, 48, 64, 100, 128, 256, 512, 1000, 1024, 2048, 4096};
    static const size_t aligns[] = {16, 32, 64};
    const size_t bufsize = 65536;
    void *buf = xaligned(4096, bufsize);
    fprintf(out, "\"space\":{\"buffer\":%zu,\"buffer_align\":4096,\"rows\":[", bufsize);
    sep_row = "";
    for (size_t a = 0; a < sizeof aligns / sizeof *aligns; a++) {
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            size_t bs = sizes[i], al = aligns[a];
            rtpool_layout rl;
            if (rtpool_layout_of(buf, bufsize, bs, al, &rl) != 0)
                die("rtpool_layout_of failed");
            fprintf(out, "%s{\"block_size\":%zu,\"align\":%zu,\"rtpool\":{\"blocks\":%zu,\"stride\":%zu,"
                         "\"per_block_waste\":%zu,\"lead\":%zu,\"overhead_per_block\":%.2f}",
                    sep_row, bs, al, rl.blocks, rl.stride, rl.per_block_waste, rl.lead,
                    (double)(bufsize - rl.blocks * bs) / (double)rl.blocks);
            for (int checked = 0; checked < 2; checked++) {
                dmm_pool_config c = pool_cfg(checked, bs, al);
                dmm_pool_layout l;
                dmm_status st = dmm_pool_layout_of(&c, buf, bufsize, &l);
                if (st != DMM_OK)
                    die("dmm_pool_layout_of failed");
                /* the smallest buffer giving the rtpool's number of blocks */
                size_t need = dmm_pool_buffer_size(&c, rl.blocks);
                fprintf(out, ",\"%s\":{\"blocks\":%zu,\"stride\":%zu,\"align_waste\":%zu,\"control_bytes\":%zu,"
                             "\"meta_bytes\":%zu,\"pad_bytes\":%zu,\"tail_bytes\":%zu,\"overhead_per_block\":%.2f,"
                             "\"buffer_for_rtpool_blocks\":%zu}",
                        checked ? "dmm_checked" : "dmm_lean", l.blocks, l.stride, l.align_waste, l.control_bytes,
                        l.meta_bytes, l.pad_bytes, l.tail_bytes,
                        (double)(bufsize - l.blocks * bs) / (double)l.blocks, need);
            }
            fputc('}', out);
            sep_row = ",";
        }
    }
    fprintf(out, "]},");
    free(buf);
}

/* ---- alloc + memset + free --------------------------------------------------- */

enum pipeline { P_RT_BYTES, P_RT_LIBC, P_DMM_VEC, P_DMM_LIBC, P_COUNT };
static const char *pipeline_name[P_COUNT] = {"rtpool+byteloop", "rtpool+libc_memset", "dmm_pool+dmm_pool_memset",
                                             "dmm_pool+libc_memset"};

static void run_memset(unsigned reps, unsigned iters)
{
    static const size_t sizes[] = {64, 128, 256, 512, 1024, 2048, 4096};
    const size_t nsz = sizeof sizes / sizeof *sizes;
    const int checked = !has_lean(); /* the build's own config; runtime: lean */
    double *samples = calloc((size_t)reps * P_COUNT, sizeof(double));
    if (!samples)
        die("out of memory");
    fprintf(out, "\"memset\":{\"align\":%u,\"pool_config\":\"%s\",\"reps\":%u,\"iters\":%u,\"rows\":[", OPS_ALIGN,
            checked ? "checked" : "lean", reps, iters);
    sep_row = "";
    for (size_t z = 0; z < nsz; z++) {
        size_t bs = sizes[z];
        dmm_pool_config c = pool_cfg(checked, bs, OPS_ALIGN);
        size_t dsize = dmm_pool_buffer_size(&c, 4);
        void *dbuf = xaligned(64, dsize);
        dmm_pool *pool;
        if (dmm_pool_init(&pool, dbuf, dsize, &c) != DMM_OK)
            die("dmm_pool_init failed (memset)");
        size_t rsize = (RTPOOL_HEADER + bs + OPS_ALIGN) * 5;
        void *rbuf = xaligned(64, rsize);
        rtpool rt;
        if (rtpool_init(&rt, rbuf, rsize, bs, OPS_ALIGN) != 0)
            die("rtpool_init failed (memset)");
        for (unsigned r = 0; r < reps; r++) {
            for (int k = 0; k < P_COUNT; k++) {
                enum pipeline pl = (enum pipeline)((r + (unsigned)k) % P_COUNT);
                unsigned acc = 0;
                double t0 = now_ns();
                for (unsigned i = 0; i < iters; i++) {
                    unsigned char *p;
                    int c = (int)(i & 0x7f);
                    switch (pl) {
                    case P_RT_BYTES:
                        p = rtpool_alloc(&rt, 0);
                        rtpool_memset_bytes(p, c, bs);
                        acc += p[bs - 1];
                        rtpool_free(p);
                        break;
                    case P_RT_LIBC:
                        p = rtpool_alloc(&rt, 0);
                        memset(p, c, bs);
                        acc += p[bs - 1];
                        rtpool_free(p);
                        break;
                    case P_DMM_VEC:
                        p = dmm_pool_alloc(pool);
                        dmm_pool_memset(pool, p, c);
                        acc += p[bs - 1];
                        dmm_pool_free(pool, p);
                        break;
                    default:
                        p = dmm_pool_alloc(pool);
                        memset(p, c, bs);
                        acc += p[bs - 1];
                        dmm_pool_free(pool, p);
                        break;
                    }
                }
                double t1 = now_ns();
                sink += acc;
                samples[(size_t)pl * reps + r] = (t1 - t0) / iters;
            }
        }
        double med[P_COUNT];
        for (int pl = 0; pl < P_COUNT; pl++) {
            fprintf(out, "%s{\"block_size\":%zu,\"pipeline\":\"%s\",\"ns\":", sep_row, bs, pipeline_name[pl]);
            json_samples(samples + (size_t)pl * reps, reps);
            med[pl] = median(samples + (size_t)pl * reps, reps);
            fprintf(out, ",\"ns_median\":%.3f}", med[pl]);
            sep_row = ",";
        }
        fprintf(stderr, "memset %4zu B: byteloop %.1f ns, rt+libc %.1f ns, dmm+vec %.1f ns -> %.2fx / %.2fx\n", bs,
                med[P_RT_BYTES], med[P_RT_LIBC], med[P_DMM_VEC], med[P_RT_BYTES] / med[P_DMM_VEC],
                med[P_RT_LIBC] / med[P_DMM_VEC]);
        dmm_pool_destroy(pool);
        free(dbuf);
        free(rbuf);
    }
    fprintf(out, "]},");
    free(samples);
}

/* ---- self-test: the baseline and the space figures are what they claim ----- */

static int self_test(void)
{
    static const size_t sizes[] = {1, 16, 24, 48, 64, 100, 1000, 4096};
    static const size_t aligns[] = {8, 16, 32, 64};
    const size_t bufsize = 65536;
    unsigned char *buf = xaligned(4096, bufsize + 64);
    void **ptrs = xaligned(64, bufsize * sizeof *ptrs);
    int bad = 0;
    for (size_t a = 0; a < sizeof aligns / sizeof *aligns; a++) {
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            for (size_t off = 0; off < 64; off += 24) { /* aligned and misaligned buffers */
                size_t bs = sizes[i], al = aligns[a];
                rtpool_layout l;
                rtpool rt;
                if (rtpool_layout_of(buf + off, bufsize, bs, al, &l) != 0 ||
                    rtpool_init(&rt, buf + off, bufsize, bs, al) != 0) {
                    fprintf(stderr, "self-test: rtpool init %zu/%zu failed\n", bs, al);
                    bad++;
                    continue;
                }
                size_t n = 0;
                unsigned char *p;
                while ((p = rtpool_alloc(&rt, 0)) != NULL) {
                    if ((uintptr_t)p % al != 0 || p < buf + off + RTPOOL_HEADER || p + bs > buf + off + bufsize ||
                        (n > 0 && p != (unsigned char *)ptrs[n - 1] + l.stride)) {
                        fprintf(stderr, "self-test: rtpool %zu/%zu: block %zu misplaced\n", bs, al, n);
                        bad++;
                        break;
                    }
                    memset(p, 0xA5, bs); /* must not damage the neighbours' headers */
                    ptrs[n++] = p;
                }
                if (n != l.blocks || rt.free_count != 0 || l.per_block_waste != l.stride - bs) {
                    fprintf(stderr, "self-test: rtpool %zu/%zu: %zu blocks, layout says %zu\n", bs, al, n, l.blocks);
                    bad++;
                }
                for (size_t k = n; k-- > 0;)
                    rtpool_free(ptrs[k]);
                if (rt.free_count != l.blocks || rtpool_alloc(&rt, 0) != ptrs[0]) {
                    fprintf(stderr, "self-test: rtpool %zu/%zu: frees not taken back\n", bs, al);
                    bad++;
                }
                if (al < 16)
                    continue;
                /* the dmm pool yields as many blocks as dmm_pool_layout_of says, aligned */
                dmm_pool_config c = pool_cfg(!has_lean(), bs, al);
                dmm_pool_layout dl;
                dmm_pool *pool;
                if (dmm_pool_layout_of(&c, buf + off, bufsize, &dl) != DMM_OK ||
                    dmm_pool_init(&pool, buf + off, bufsize, &c) != DMM_OK) {
                    fprintf(stderr, "self-test: dmm pool %zu/%zu failed\n", bs, al);
                    bad++;
                    continue;
                }
                n = 0;
                while ((p = dmm_pool_alloc(pool)) != NULL) {
                    if ((uintptr_t)p % al != 0 || p < buf + off || p + bs > buf + off + bufsize) {
                        fprintf(stderr, "self-test: dmm pool %zu/%zu: block %zu misplaced\n", bs, al, n);
                        bad++;
                        break;
                    }
                    n++;
                }
                if (n != dl.blocks || dl.align_waste != dl.stride - bs - dl.guard_bytes) {
                    fprintf(stderr, "self-test: dmm pool %zu/%zu: %zu blocks, layout says %zu\n", bs, al, n, dl.blocks);
                    bad++;
                }
                dmm_pool_destroy(pool);
            }
        }
    }
    free(ptrs);
    free(buf);
    if (bad)
        return 1;
    printf("pool_bench: self-test passed\n");
    return 0;
}

/* ---- callgrind kernel ----------------------------------------------------- */

static int run_cg(const char *op, const char *who, unsigned long n)
{
    enum subject s = S_COUNT;
    for (int i = 0; i < S_COUNT; i++) {
        const char *nm = subject_name[i];
        if (strncmp(nm, "dmm-", 4) == 0 && strncmp(who, "pool-", 5) == 0 && strcmp(nm + 4, who) == 0)
            s = (enum subject)i;
        else if (strcmp(who, "heap") == 0 && i == S_HEAP)
            s = S_HEAP;
        else if (strcmp(who, nm) == 0)
            s = (enum subject)i;
    }
    if (s == S_COUNT || !(s == S_POOL_LEAN ? has_lean() : s == S_POOL_CHECKED ? has_checked() : 1)) {
        fprintf(stderr, "pool_bench: --cg: '%s' not available in the %s build\n", who, PBENCH_VARIANT);
        return 2;
    }
    if (strcmp(op, "init") == 0) {
        if (s == S_MALLOC)
            return 2;
        void *buf = xaligned(64, INIT_BUF);
        for (unsigned long i = 0; i < n; i++)
            (void)time_init(s, buf);
        free(buf);
        return 0;
    }
    if (strcmp(op, "alloc") != 0 && strcmp(op, "free") != 0)
        return 2;
    /* aligned_alloc, not malloc: callgrind counts every call of malloc when
     * it measures malloc */
    void **ptrs = xaligned(64, n * sizeof *ptrs);
    subject_state st;
    subject_open(s, &st, n);
    for (unsigned long i = 0; i < n; i++)
        if (!(ptrs[i] = subject_alloc(s, &st)))
            die("allocation failed (--cg)");
    for (unsigned long i = 0; i < n; i++)
        subject_free(s, &st, ptrs[i]);
    subject_close(s, &st);
    free(ptrs);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned reps = 21, inner = 8, iters = 64;
    int do_ops = 1, do_space = 1, do_memset = 1;
    const char *outpath = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cg") == 0 && i + 3 < argc)
            return run_cg(argv[i + 1], argv[i + 2], strtoul(argv[i + 3], NULL, 10));
        else if (strcmp(argv[i], "--self-test") == 0)
            return self_test();
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--quick") == 0)
            reps = 3, inner = 1, iters = 4;
        else if (strcmp(argv[i], "--no-ops") == 0)
            do_ops = 0;
        else if (strcmp(argv[i], "--no-space") == 0)
            do_space = 0;
        else if (strcmp(argv[i], "--no-memset") == 0)
            do_memset = 0;
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            outpath = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--self-test] [--reps R] [--quick] [--no-ops] [--no-space] [--no-memset] [-o FILE]\n"
                            "       %s --cg init|alloc|free pool-lean|pool-checked|rtpool|heap|malloc N\n",
                    argv[0], argv[0]);
            return 2;
        }
    }
    if (reps == 0)
        reps = 1;
    out = stdout;
    if (outpath && !(out = fopen(outpath, "w")))
        die("cannot open the output file");
    fprintf(out, "{\"schema\":\"dmm-pool-bench-run/1\",\"variant\":\"%s\",", PBENCH_VARIANT);
#ifdef __VERSION__
    fprintf(out, "\"compiler\":\"%s\",\"cflags\":\"%s\",", __VERSION__, PBENCH_CFLAGS);
#else
    fprintf(out, "\"compiler\":\"unknown\",\"cflags\":\"%s\",", PBENCH_CFLAGS);
#endif
    fprintf(out, "\"vec\":{\"impl\":\"%s\",\"width\":%zu},", dmm_vec_name(), dmm_vec_width());
    machine_json();
    if (do_ops)
        run_ops(reps, inner);
    if (do_space && strcmp(PBENCH_VARIANT, "runtime") == 0)
        run_space();
    if (do_memset)
        run_memset(reps, iters);
    fprintf(out, "\"ok\":true}\n");
    if (out != stdout)
        fclose(out);
    return 0;
}

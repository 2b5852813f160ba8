/*
 * bench/anchors/heap_v2.c - the "Heap v2" benchmark harness: one allocator
 * (an adapter, see anchor.h) replays three single-threaded workloads in a
 * caller buffer of --arena bytes.
 *
 *   kernels  the four seed-001-shaped kernels of bench/workloads (integral,
 *            gaussian, fast, matmul: master-worker, one run each) replayed
 *            back to back on one heap (ids renumbered, nothing else changed)
 *   frag     fragmenting random mix: sizes log-uniform 8 B .. 16 KiB, random
 *            lifetimes, 40,000 alloc-or-free steps with the live population
 *            walking randomly between 1,500 and 2,500 objects
 *   rbtree   a red-black-tree-sized node pool: 6,000 nodes of 24 B inserted
 *            with random keys, then 24,000 delete+insert steps (the node of
 *            a uniformly chosen live key dies, a new key is inserted), then
 *            the tree is destroyed in post-order (children before parent,
 *            over the key order of a balanced tree)
 *   integral, gaussian, fast, matmul and their "-rf" forms: one kernel alone
 *            (seed 001's setting), named with --workload only (see gen_one)
 *
 * What is measured is decided by the caller (scripts/bench_heap_v2.py):
 *   - instructions: valgrind --tool=callgrind --toggle-collect='bench_op_*'
 *     counts only bench_op_malloc / bench_op_free and what they call (the
 *     adapter and the allocator); ops = mallocs + frees printed here;
 *   - minimum arena: the smallest --arena for which the replay completes
 *     (status=ok), searched by bisection; the allocator's control structure
 *     lives in the arena for every allocator.
 *
 * Output: one tab-separated line per workload, "heap_v2<TAB>key=value...".
 * Exit status: 0 all ok, 1 some workload did not fit (init refused or an
 * allocation failed; the replay stops at the first failure), 2 usage or
 * fatal error, 3 a payload was corrupted (the allocator handed out
 * overlapping blocks).
 *
 * Benchmark code, hosted C11.
 */
#include "anchor.h"
#include "workload.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef HEAP_V2_CFLAGS
#define HEAP_V2_CFLAGS "unknown"
#endif
#ifdef __VERSION__
#define HEAP_V2_COMPILER __VERSION__
#else
#define HEAP_V2_COMPILER "unknown"
#endif

#define DEFAULT_ARENA ((size_t)64 << 20)
#define ARENA_ALIGN 64u

/* ---- the measured entry points --------------------------------------------
 * Identical for every adapter.  The empty asm after the call keeps the
 * compiler from turning it into a tail jump, so callgrind always sees
 * bench_op_* call anchor_* and return: the wrapper costs the same few
 * instructions for everyone. */
__attribute__((noinline, used)) void *bench_op_malloc(size_t n)
{
    void *p = anchor_malloc(n);
    __asm__ __volatile__("" ::: "memory");
    return p;
}

__attribute__((noinline, used)) void bench_op_free(void *p)
{
    anchor_free(p);
    __asm__ __volatile__("" ::: "memory");
}

/* ---- workloads ---------------------------------------------------------------- */


static uint32_t v2_alloc(wl_trace *t, size_t size)
{
    uint32_t id = t->n_ids++;
    wl_push(t, WL_ALLOC, id, (uint32_t)size);
    return id;
}

/* kernels: the bundled generators, unchanged, one run each, back to back. */
static int gen_kernels(wl_trace *t)
{
    static const char *const names[] = {"integral", "gaussian", "fast", "matmul"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        wl_trace one;
        memset(&one, 0, sizeof one);
        if (wl_generate(names[k], WL_DEFAULT_SEED, &one) != 0)
            return -1;
        uint32_t base = t->n_ids;
        for (size_t i = 0; i < one.n_ops; i++)
            wl_push(t, one.ops[i].kind, base + one.ops[i].id, one.ops[i].size);
        t->n_ids += one.n_ids;
        wl_release(&one);
    }
    return t->error ? -1 : 0;
}

/* One kernel alone on a fresh heap, as seed 001 measures each application
 * (scripts/seed001_bench.py); the "-rf" forms redraw its free points with
 * wl_randomize_frees (seed 1), the seed's section-5.3 transform.  Not part of
 * "all": name them with --workload. */
static int gen_one(wl_trace *t, const char *name, int rf)
{
    wl_trace one, rnd;
    memset(&one, 0, sizeof one);
    if (wl_generate(name, WL_DEFAULT_SEED, &one) != 0)
        return -1;
    if (rf) {
        memset(&rnd, 0, sizeof rnd);
        int rc = wl_randomize_frees(&one, 1, &rnd);
        wl_release(&one);
        if (rc != 0)
            return -1;
        one = rnd;
    }
    for (size_t i = 0; i < one.n_ops; i++)
        wl_push(t, one.ops[i].kind, one.ops[i].id, one.ops[i].size);
    t->n_ids = one.n_ids;
    wl_release(&one);
    return t->error ? -1 : 0;
}
#define HEAP_V2_ONE(fn, name, rf) \
    static int fn(wl_trace *t) { return gen_one(t, name, rf); }
HEAP_V2_ONE(gen_integral, "integral", 0)
HEAP_V2_ONE(gen_gaussian, "gaussian", 0)
HEAP_V2_ONE(gen_fast, "fast", 0)
HEAP_V2_ONE(gen_matmul, "matmul", 0)
HEAP_V2_ONE(gen_integral_rf, "integral", 1)
HEAP_V2_ONE(gen_gaussian_rf, "gaussian", 1)
HEAP_V2_ONE(gen_fast_rf, "fast", 1)
HEAP_V2_ONE(gen_matmul_rf, "matmul", 1)

/* frag: a steady random mix.  2,000 objects, then 40,000 steps that each
 * allocate (log-uniform 8 B .. 16 KiB) or free a uniformly chosen live object
 * with equal odds, the population kept between 1,500 and 2,500 (a random
 * walk), then a drain in random order.  Unlike bench/workloads "fragment"
 * (whose population swings, so coalescing recovers in every shrink phase),
 * holes of every size stay scattered while the live set peaks. */
static int gen_frag(wl_trace *t)
{
    enum { RAMP = 2000, LOW = 1500, HIGH = 2500, STEPS = 40000, MIN = 8, MAX = 16384 };
    wl_rng r;
    wl_rng_seed(&r, WL_DEFAULT_SEED ^ 0xf7a9u);
    uint32_t *live = malloc(sizeof *live * (HIGH + 1));
    size_t n = 0;
    if (!live)
        return -1;
    while (n < RAMP)
        live[n++] = v2_alloc(t, wl_rng_logu(&r, MIN, MAX));
    for (size_t s = 0; s < STEPS && !t->error; s++) {
        int alloc = n <= LOW ? 1 : n >= HIGH ? 0 : (int)wl_rng_below(&r, 2);
        if (alloc) {
            live[n++] = v2_alloc(t, wl_rng_logu(&r, MIN, MAX));
        } else {
            size_t k = (size_t)wl_rng_below(&r, n);
            wl_push(t, WL_FREE, live[k], 0);
            live[k] = live[--n];
        }
    }
    while (n > 0 && !t->error) {
        size_t k = (size_t)wl_rng_below(&r, n);
        wl_push(t, WL_FREE, live[k], 0);
        live[k] = live[--n];
    }
    free(live);
    return t->error ? -1 : 0;
}

/* rbtree: 6,000 live 24-byte nodes keyed by random 32-bit keys. */
typedef struct rb_node {
    uint32_t key, id;
} rb_node;

static int rb_cmp(const void *a, const void *b)
{
    const rb_node *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

/* Post-order over the balanced tree whose in-order sequence is v[lo, hi). */
static void rb_postorder(wl_trace *t, const rb_node *v, size_t lo, size_t hi)
{
    if (lo >= hi)
        return;
    size_t mid = lo + (hi - lo) / 2;
    rb_postorder(t, v, lo, mid);
    rb_postorder(t, v, mid + 1, hi);
    wl_push(t, WL_FREE, v[mid].id, 0);
}

static int gen_rbtree(wl_trace *t)
{
    enum { NODES = 6000, NODE_BYTES = 24, STEPS = 4 * NODES };
    wl_rng r;
    wl_rng_seed(&r, WL_DEFAULT_SEED ^ 0x2b7eu);
    rb_node *live = malloc(sizeof *live * NODES);
    if (!live)
        return -1;
    for (size_t i = 0; i < NODES; i++) /* build */
        live[i] = (rb_node){(uint32_t)wl_rng_next(&r), v2_alloc(t, NODE_BYTES)};
    for (size_t s = 0; s < STEPS && !t->error; s++) { /* delete one, insert one */
        size_t k = (size_t)wl_rng_below(&r, NODES);
        wl_push(t, WL_FREE, live[k].id, 0);
        live[k] = (rb_node){(uint32_t)wl_rng_next(&r), v2_alloc(t, NODE_BYTES)};
    }
    qsort(live, NODES, sizeof *live, rb_cmp); /* destroy: post-order */
    rb_postorder(t, live, 0, NODES);
    free(live);
    return t->error ? -1 : 0;
}

typedef struct v2_workload {
    const char *name;
    const char *summary;
    int (*gen)(wl_trace *t);
    int extra; /* not part of "all" */
} v2_workload;

static const v2_workload workloads[] = {
    {"kernels", "integral + gaussian + fast + matmul (bench/workloads), one run each, back to back", gen_kernels, 0},
    {"frag", "log-uniform 8 B..16 KiB, random lifetimes, 40,000 alloc-or-free steps, live set walking 1500..2500", gen_frag, 0},
    {"rbtree", "6,000 live 24 B tree nodes: build, 24,000 delete+insert of random keys, post-order destroy", gen_rbtree, 0},
    {"integral", "the integral kernel alone (bench/workloads)", gen_integral, 1},
    {"gaussian", "the gaussian kernel alone (bench/workloads)", gen_gaussian, 1},
    {"fast", "the fast kernel alone (bench/workloads)", gen_fast, 1},
    {"matmul", "the matmul kernel alone (bench/workloads)", gen_matmul, 1},
    {"integral-rf", "integral, frees redrawn (wl_randomize_frees, seed 1)", gen_integral_rf, 1},
    {"gaussian-rf", "gaussian, frees redrawn (wl_randomize_frees, seed 1)", gen_gaussian_rf, 1},
    {"fast-rf", "fast, frees redrawn (wl_randomize_frees, seed 1)", gen_fast_rf, 1},
    {"matmul-rf", "matmul, frees redrawn (wl_randomize_frees, seed 1)", gen_matmul_rf, 1},
};
#define N_WORKLOADS (sizeof workloads / sizeof workloads[0])

static int build(const v2_workload *w, wl_trace *t)
{
    memset(t, 0, sizeof *t);
    if (w->gen(t) != 0 || t->error) {
        wl_release(t);
        return -1;
    }
    snprintf(t->name, sizeof t->name, "%s", w->name);
    t->seed = WL_DEFAULT_SEED;
    if (wl_validate(t) != 0) {
        wl_release(t);
        return -1;
    }
    wl_analyse(t);
    if (t->n_realloc != 0) { /* the adapter interface has no realloc */
        wl_release(t);
        return -1;
    }
    return 0;
}

/* ---- replay --------------------------------------------------------------------- */

typedef struct run_result {
    const char *status; /* ok, init-too-small, alloc-failed, corrupt */
    size_t mallocs, frees;
    long failed_at;     /* op index of the failed allocation, -1 */
    uintptr_t addr_or;  /* OR of every pointer returned: its lowest bit is
                           the alignment every block had */
    size_t lowest, highest; /* lowest payload offset, highest payload end
                               offset from the arena start */
} run_result;

static unsigned char fill_byte(uint32_t id) { return (unsigned char)(id * 31u + 7u); }

/* Writes the payload's identity (id, size) at its start (8 bytes) and a
 * marker in its last byte (when that is not one of those 8); with full,
 * fills the whole payload.  Checked before the free, so two
 * blocks that overlap are caught. */
static void tag(void *p, uint32_t id, uint32_t size, int full)
{
    unsigned char *b = p;
    if (full)
        memset(b, fill_byte(id), size);
    if (size >= 8) {
        uint32_t w[2] = {id, size};
        memcpy(b, w, 8);
    }
    if (size != 8)
        b[size - 1] = fill_byte(id);
}

static int tag_ok(const void *p, uint32_t id, uint32_t size, int full)
{
    const unsigned char *b = p;
    if (size >= 8) {
        uint32_t w[2];
        memcpy(w, b, 8);
        if (w[0] != id || w[1] != size)
            return 0;
    }
    if (size != 8 && b[size - 1] != fill_byte(id))
        return 0;
    if (full)
        for (uint32_t i = size >= 8 ? 8 : 0; i < size; i++)
            if (b[i] != fill_byte(id))
                return 0;
    return 1;
}

static run_result replay(const wl_trace *t, unsigned char *arena, size_t n, int full, int *fatal)
{
    run_result r = {"ok", 0, 0, -1, 0, SIZE_MAX, 0};
    void **slot = calloc(t->n_ids ? t->n_ids : 1, sizeof *slot);
    uint32_t *size = calloc(t->n_ids ? t->n_ids : 1, sizeof *size);
    if (!slot || !size) {
        fprintf(stderr, "heap_v2: out of memory\n");
        *fatal = 2;
        free(slot);
        free(size);
        return r;
    }
    int rc = anchor_init(arena, n);
    if (rc != 0) {
        if (rc < 0) {
            fprintf(stderr, "heap_v2: %s: anchor_init failed\n", anchor_name());
            *fatal = 2;
        }
        r.status = "init-too-small";
        r.failed_at = 0;
        free(slot);
        free(size);
        return r;
    }
    for (size_t i = 0; i < t->n_ops; i++) {
        const wl_op *o = &t->ops[i];
        if (o->kind == WL_ALLOC) {
            void *p = bench_op_malloc(o->size);
            if (!p) {
                r.status = "alloc-failed";
                r.failed_at = (long)i;
                break;
            }
            r.mallocs++;
            uintptr_t a = (uintptr_t)p;
            if (a < (uintptr_t)arena || a + o->size > (uintptr_t)arena + n) {
                fprintf(stderr, "heap_v2: %s: block %p+%u outside the arena\n", anchor_name(), p,
                        (unsigned)o->size);
                r.status = "corrupt";
                r.failed_at = (long)i;
                *fatal = 3;
                break;
            }
            r.addr_or |= a;
            size_t off = (size_t)(a - (uintptr_t)arena);
            if (off < r.lowest)
                r.lowest = off;
            if (off + o->size > r.highest)
                r.highest = off + o->size;
            tag(p, o->id, o->size, full);
            slot[o->id] = p;
            size[o->id] = o->size;
        } else if (o->kind == WL_FREE) {
            void *p = slot[o->id];
            if (!tag_ok(p, o->id, size[o->id], full)) {
                fprintf(stderr, "heap_v2: %s: payload of object %u overwritten (op %zu)\n", anchor_name(),
                        (unsigned)o->id, i);
                r.status = "corrupt";
                r.failed_at = (long)i;
                *fatal = 3;
                break;
            }
            bench_op_free(p);
            r.frees++;
            slot[o->id] = NULL;
        }
    }
    free(slot);
    free(size);
    return r;
}

/* ---- command line ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: heap_v2 [--workload NAME[,NAME...]|all] [--arena BYTES] [--check]\n"
            "       heap_v2 --list | --info | --help\n"
            "  --workload  kernels, frag, rbtree or all (default all: these three);\n"
            "              one kernel alone: integral, gaussian, fast, matmul, or NAME-rf\n"
            "  --arena     arena size in bytes (suffix k or M allowed; default 64M)\n"
            "  --check     fill and verify every payload byte (slower; default checks\n"
            "              the first 8 and the last byte of each block)\n"
            "  --no-prefault  do not write the arena before the replay (for callgrind)\n"
            "  --list      the workloads: ops, peak live bytes, largest request\n"
            "  --info      adapter name, description, compiler and flags\n"
            "Prints one line per workload: heap_v2<TAB>adapter=...<TAB>workload=...<TAB>status=...\n"
            "Exit: 0 ok, 1 a workload did not fit the arena, 2 error, 3 corruption.\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    if (*end == 'k' || *end == 'K') {
        v <<= 10;
        end++;
    } else if (*end == 'M' || *end == 'm') {
        v <<= 20;
        end++;
    }
    if (*end || v == 0 || v > SIZE_MAX / 2)
        return -1;
    *out = (size_t)v;
    return 0;
}

static unsigned align_of(uintptr_t or_all)
{
    unsigned a = 1;
    while (a < ARENA_ALIGN && !(or_all & a))
        a <<= 1;
    return a;
}

int main(int argc, char **argv)
{
    const char *wsel = "all";
    size_t arena_size = DEFAULT_ARENA;
    int full = 0, list = 0, info = 0, prefault = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--workload") == 0 && i + 1 < argc)
            wsel = argv[++i];
        else if (strcmp(a, "--arena") == 0 && i + 1 < argc) {
            if (parse_size(argv[++i], &arena_size) != 0) {
                fprintf(stderr, "heap_v2: bad --arena '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--check") == 0)
            full = 1;
        else if (strcmp(a, "--no-prefault") == 0)
            prefault = 0;
        else if (strcmp(a, "--list") == 0)
            list = 1;
        else if (strcmp(a, "--info") == 0)
            info = 1;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "heap_v2: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (info) {
        printf("heap_v2-info\tadapter=%s\tdescribe=%s\tcompiler=%s\tcflags=%s\n", anchor_name(),
               anchor_describe(), HEAP_V2_COMPILER, HEAP_V2_CFLAGS);
        return 0;
    }

    int chosen[N_WORKLOADS] = {0};
    if (strcmp(wsel, "all") == 0) {
        for (size_t k = 0; k < N_WORKLOADS; k++)
            chosen[k] = !workloads[k].extra;
    } else {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", wsel);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            size_t k = 0;
            while (k < N_WORKLOADS && strcmp(workloads[k].name, tok) != 0)
                k++;
            if (k == N_WORKLOADS) {
                fprintf(stderr, "heap_v2: unknown workload '%s'\n", tok);
                return 2;
            }
            chosen[k] = 1;
        }
    }

    if (list) {
        for (size_t k = 0; k < N_WORKLOADS; k++) {
            wl_trace t;
            if (build(&workloads[k], &t) != 0) {
                fprintf(stderr, "heap_v2: cannot build workload %s\n", workloads[k].name);
                return 2;
            }
            printf("%s\tops=%zu\tallocs=%zu\tfrees=%zu\tpeak_live=%zu\tpeak_objects=%zu\tmax_size=%zu\t%s\n",
                   workloads[k].name, t.n_ops, t.n_alloc, t.n_free, t.peak_live, t.peak_objects, t.max_size,
                   workloads[k].summary);
            wl_release(&t);
        }
        return 0;
    }

    /* One arena for every workload: aligned, prefaulted (every page written
     * before the first allocator call; --no-prefault skips that, which only
     * saves time under callgrind, where page faults cost no instructions). */
    size_t alloc_size = (arena_size + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    unsigned char *arena = aligned_alloc(ARENA_ALIGN, alloc_size);
    if (!arena) {
        fprintf(stderr, "heap_v2: cannot allocate an arena of %zu bytes\n", arena_size);
        return 2;
    }
    if (prefault)
        memset(arena, 0, alloc_size);

    int exit_code = 0;
    for (size_t k = 0; k < N_WORKLOADS; k++) {
        if (!chosen[k])
            continue;
        wl_trace t;
        if (build(&workloads[k], &t) != 0) {
            fprintf(stderr, "heap_v2: cannot build workload %s\n", workloads[k].name);
            free(arena);
            return 2;
        }
        int fatal = 0;
        run_result r = replay(&t, arena, arena_size, full, &fatal);
        printf("heap_v2\tadapter=%s\tworkload=%s\tarena=%zu\tstatus=%s\tops=%zu\tmallocs=%zu\tfrees=%zu\t"
               "failed_at=%ld\tpeak_live=%zu\tmax_size=%zu\tmin_align=%u\thighest_end=%zu\n",
               anchor_name(), t.name, arena_size, r.status, t.n_ops, r.mallocs, r.frees, r.failed_at,
               t.peak_live, t.max_size, r.mallocs ? align_of(r.addr_or) : 0u, r.highest);
        fflush(stdout);
        wl_release(&t);
        if (fatal) {
            free(arena);
            return fatal;
        }
        if (strcmp(r.status, "ok") != 0)
            exit_code = 1;
    }
    free(arena);
    return exit_code;
}

/*
 * embedded/demo.c - the bare-metal demo, shared by every board.
 *
 * Runs a seeded pseudo-random workload on a dmm heap (libdmm_heap.a frozen
 * to configs/frozen/tlsf.h, so dmm_heap_init(NULL config) gets the TLSF-like
 * preset) and on a dmm pool, against a shadow model: every block's size and
 * fill pattern are remembered and verified before it is freed, the heap's
 * and pool's own counters must agree with the model, and the checkers
 * (dmm_heap_check, dmm_pool_check) run after every phase.  Misuse (a double
 * free, a foreign pointer) must be reported and change nothing.  Prints the
 * statistics and the instructions each malloc/free took (the board's
 * counter, exact under QEMU's -icount), then exits with status 0 only when
 * every check passed.
 */
#include <stddef.h>
#include <stdint.h>

#include "board.h"
#include "dmm/heap.h"
#include "dmm/pool.h"

#define HEAP_BYTES (32u * 1024u)
#define HEAP_SLOTS 96u
#define HEAP_PHASES 4u
#define HEAP_OPS_PER_PHASE 3000u
#define POOL_BYTES 6144u
#define POOL_BLOCK 48u
#define POOL_SLOTS 64u
#define POOL_OPS 4000u
#define SEED 0x2545F491u

static unsigned char heap_arena[HEAP_BYTES] __attribute__((aligned(16)));
static unsigned char pool_arena[POOL_BYTES] __attribute__((aligned(16)));

static unsigned failures;

/* ---- output ----------------------------------------------------------------- */

static void put_u32(uint32_t v)
{
    char buf[11];
    char *p = buf + sizeof buf - 1;
    *p = '\0';
    do {
        *--p = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    board_puts(p);
}

static void put_kv(const char *key, uint32_t v)
{
    board_puts(" ");
    board_puts(key);
    board_puts("=");
    put_u32(v);
}

static void check(int ok, const char *what)
{
    if (!ok) {
        failures++;
        board_puts("CHECK FAILED: ");
        board_puts(what);
        board_puts("\n");
    }
}

/* ---- workload helpers ----------------------------------------------------------- */

static uint32_t rng_state = SEED;

static uint32_t rng(void)
{
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    rng_state = x;
    return x;
}

/* Mostly small requests, some medium, a few large (up to 4 KiB). */
static uint32_t pick_size(void)
{
    uint32_t r = rng() % 100u;
    if (r < 60u)
        return 1u + rng() % 64u;
    if (r < 90u)
        return 65u + rng() % 448u;
    return 513u + rng() % 3584u;
}

static void fill(unsigned char *p, uint32_t n, unsigned char tag)
{
    for (uint32_t i = 0; i < n; i++)
        p[i] = (unsigned char)(tag + i);
}

static int intact(const unsigned char *p, uint32_t n, unsigned char tag)
{
    for (uint32_t i = 0; i < n; i++) {
        if (p[i] != (unsigned char)(tag + i))
            return 0;
    }
    return 1;
}

/* ---- instruction counts ---------------------------------------------------------- */

typedef struct op_count {
    uint32_t calls;
    uint64_t sum;
    uint32_t min, max;
} op_count;

static uint32_t read_overhead; /* instructions of an empty measurement */

static void op_add(op_count *c, uint32_t t0, uint32_t t1)
{
    uint32_t n = board_counter_to_insns(t1 - t0) - read_overhead;
    if (c->calls == 0 || n < c->min)
        c->min = n;
    if (n > c->max)
        c->max = n;
    c->sum += n;
    c->calls++;
}

static void op_print(const char *name, const op_count *c)
{
    board_puts("insns ");
    board_puts(name);
    put_kv("calls", c->calls);
    put_kv("min", c->min);
    put_kv("avg", c->calls ? (uint32_t)(c->sum / c->calls) : 0u);
    put_kv("max", c->max);
    board_puts("\n");
}

/* The counter must count instructions exactly: 64 no-ops between two reads
 * take 64 more than no no-ops. */
static int counter_calibrate(void)
{
    uint32_t a, b, c, d, empty, nops;
    a = board_counter_read();
    b = board_counter_read();
    c = board_counter_read();
    __asm__ volatile(".rept 64\n\tnop\n\t.endr" ::: "memory");
    d = board_counter_read();
    empty = board_counter_to_insns(b - a);
    nops = board_counter_to_insns(d - c) - empty;
    read_overhead = empty;
    board_puts("counter: ");
    board_puts(board_counter_name);
    put_kv("read_overhead", empty);
    put_kv("probe_64_nops", nops);
    board_puts("\n");
    return nops == 64u;
}

/* ---- the heap ------------------------------------------------------------------- */

typedef struct slot {
    unsigned char *p;
    uint32_t size;
    unsigned char tag;
} slot;

static slot heap_slots[HEAP_SLOTS];

static void heap_stats_line(const char *label, dmm_heap *h)
{
    dmm_heap_stats st = dmm_heap_get_stats(h);
    /* External fragmentation: the share of free bytes outside the largest
     * free block, in per mille. */
    uint32_t frag = st.free_bytes ? (uint32_t)(1000u - (uint32_t)((uint64_t)st.largest_free * 1000u / st.free_bytes)) : 0u;
    board_puts("heap ");
    board_puts(label);
    put_kv("mallocs", (uint32_t)st.malloc_count);
    put_kv("frees", (uint32_t)st.free_count);
    put_kv("failed", (uint32_t)st.failed_count);
    put_kv("live_blocks", (uint32_t)st.live_count);
    put_kv("live_bytes", (uint32_t)st.live_block_bytes);
    put_kv("peak_bytes", (uint32_t)st.peak_block_bytes);
    put_kv("free_bytes", (uint32_t)st.free_bytes);
    put_kv("largest_free", (uint32_t)st.largest_free);
    put_kv("frag_permille", frag);
    board_puts("\n");
}

static void heap_demo(void)
{
    dmm_heap *h = NULL;
    dmm_heap_check_report rep;
    op_count cm = {0, 0, 0, 0}, cf = {0, 0, 0, 0};
    uint32_t mallocs = 0, frees = 0, failed = 0, live = 0;
    uint32_t t0, t1;

    check(dmm_heap_is_frozen() != 0, "libdmm_heap.a is frozen (configs/frozen/tlsf.h)");
    check(dmm_heap_init(&h, heap_arena, sizeof heap_arena, NULL) == DMM_OK, "heap init");
    if (h == NULL)
        return;
    board_puts("heap: frozen preset tlsf, arena ");
    put_u32(HEAP_BYTES);
    board_puts(" B, code path ");
    board_puts(dmm_heap_variant(h));
    board_puts("\n");

    for (uint32_t phase = 0; phase < HEAP_PHASES; phase++) {
        for (uint32_t op = 0; op < HEAP_OPS_PER_PHASE; op++) {
            slot *s = &heap_slots[rng() % HEAP_SLOTS];
            if (s->p != NULL) {
                check(intact(s->p, s->size, s->tag), "heap block contents kept until free");
                t0 = board_counter_read();
                dmm_heap_free(h, s->p);
                t1 = board_counter_read();
                op_add(&cf, t0, t1);
                s->p = NULL;
                frees++;
                live--;
            } else {
                uint32_t n = pick_size();
                unsigned char *p;
                t0 = board_counter_read();
                p = dmm_heap_malloc(h, n);
                t1 = board_counter_read();
                op_add(&cm, t0, t1);
                if (p == NULL) {
                    failed++;
                    continue;
                }
                check(((uintptr_t)p % DMM_HEAP_ALIGN) == 0, "heap payload aligned");
                check(p >= heap_arena && p + n <= heap_arena + sizeof heap_arena, "heap block inside the arena");
                s->p = p;
                s->size = n;
                s->tag = (unsigned char)rng();
                fill(p, n, s->tag);
                mallocs++;
                live++;
            }
        }
        check(dmm_heap_check(h, &rep) == DMM_OK, "dmm_heap_check after a phase");
        {
            dmm_heap_stats st = dmm_heap_get_counters(h);
            check(st.malloc_count == mallocs, "heap malloc_count matches the model");
            check(st.free_count == frees, "heap free_count matches the model");
            check(st.failed_count == failed, "heap failed_count matches the model");
            check(st.live_count == live, "heap live_count matches the model");
            check(st.peak_block_bytes >= st.live_block_bytes, "heap peak >= live");
        }
        {
            char label[] = "phase N";
            label[6] = (char)('1' + phase);
            heap_stats_line(label, h);
        }
    }

    /* Misuse: a double free is reported (error_count) and changes nothing. */
    {
        slot *s = NULL;
        for (uint32_t i = 0; i < HEAP_SLOTS && s == NULL; i++) {
            if (heap_slots[i].p != NULL)
                s = &heap_slots[i];
        }
        check(s != NULL, "a live block for the double-free test");
        if (s != NULL) {
            dmm_heap_stats before = dmm_heap_get_counters(h), after;
            dmm_heap_free(h, s->p);
            frees++;
            live--;
            dmm_heap_free(h, s->p); /* the second free: refused */
            after = dmm_heap_get_counters(h);
            check(after.error_count == before.error_count + 1u, "double free reported once");
            check(after.free_count == before.free_count + 1u, "double free not counted as a free");
            check(after.live_count == live, "double free left live_count alone");
            check(dmm_heap_check(h, &rep) == DMM_OK, "dmm_heap_check after a double free");
            s->p = NULL;
        }
    }

    /* Everything back: one free block again. */
    for (uint32_t i = 0; i < HEAP_SLOTS; i++) {
        slot *s = &heap_slots[i];
        if (s->p == NULL)
            continue;
        check(intact(s->p, s->size, s->tag), "heap block contents kept until free");
        dmm_heap_free(h, s->p);
        s->p = NULL;
        frees++;
        live--;
    }
    check(dmm_heap_check(h, &rep) == DMM_OK, "dmm_heap_check after freeing everything");
    {
        dmm_heap_stats st = dmm_heap_get_stats(h);
        check(st.live_count == 0 && st.live_block_bytes == 0, "heap empty at the end");
        check(st.largest_free == st.free_bytes, "every free byte coalesced into one block");
        check(st.free_count == frees, "heap free_count matches the model at the end");
    }
    heap_stats_line("end", h);
    op_print("malloc", &cm);
    op_print("free", &cf);
    dmm_heap_destroy(h);
}

/* ---- the pool ------------------------------------------------------------------- */

static slot pool_slots[POOL_SLOTS];

static void pool_demo(void)
{
    dmm_pool *p = NULL;
    dmm_pool_config cfg = dmm_pool_default_config();
    dmm_pool_check_report rep;
    dmm_pool_stats st;
    op_count ca = {0, 0, 0, 0}, cf = {0, 0, 0, 0};
    uint32_t allocs = 0, frees = 0, failed = 0, live = 0, extra = 0;
    uint32_t t0, t1;
    unsigned char *extra_blocks[POOL_BYTES / POOL_BLOCK];

    cfg.block_size = POOL_BLOCK;
    cfg.align = 8;
    check(dmm_pool_init(&p, pool_arena, sizeof pool_arena, &cfg) == DMM_OK, "pool init");
    if (p == NULL)
        return;
    st = dmm_pool_get_stats(p);
    board_puts("pool: block ");
    put_u32((uint32_t)st.block_size);
    board_puts(" B, stride ");
    put_u32((uint32_t)st.stride);
    board_puts(" B, capacity ");
    put_u32((uint32_t)st.capacity);
    board_puts(" blocks in ");
    put_u32(POOL_BYTES);
    board_puts(" B\n");

    for (uint32_t op = 0; op < POOL_OPS; op++) {
        slot *s = &pool_slots[rng() % POOL_SLOTS];
        if (s->p != NULL) {
            check(intact(s->p, POOL_BLOCK, s->tag), "pool block contents kept until free");
            t0 = board_counter_read();
            dmm_pool_free(p, s->p);
            t1 = board_counter_read();
            op_add(&cf, t0, t1);
            s->p = NULL;
            frees++;
            live--;
        } else {
            unsigned char *b;
            t0 = board_counter_read();
            b = dmm_pool_alloc(p);
            t1 = board_counter_read();
            op_add(&ca, t0, t1);
            if (b == NULL) {
                failed++;
                continue;
            }
            check(dmm_pool_owns(p, b), "pool block owned by the pool");
            s->p = b;
            s->tag = (unsigned char)rng();
            fill(b, POOL_BLOCK, s->tag);
            allocs++;
            live++;
        }
    }
    check(dmm_pool_check(p, &rep) == DMM_OK, "dmm_pool_check after the workload");
    st = dmm_pool_get_stats(p);
    check(st.alloc_count == allocs && st.free_count == frees, "pool counters match the model");
    check(st.failed_count == failed && st.live_blocks == live, "pool live/failed match the model");

    /* Exhaustion: exactly capacity - live more blocks, then NULL. */
    for (;;) {
        unsigned char *b = dmm_pool_alloc(p);
        if (b == NULL)
            break;
        if (extra < sizeof extra_blocks / sizeof extra_blocks[0])
            extra_blocks[extra] = b;
        extra++;
    }
    check(extra == st.capacity - live, "pool hands out exactly its capacity");

    /* Misuse: a pointer inside a block and one outside the pool are
     * reported and change nothing. */
    {
        dmm_pool_stats before = dmm_pool_get_stats(p), after;
        dmm_pool_free(p, extra_blocks[0] + 1);
        dmm_pool_free(p, heap_arena);
        after = dmm_pool_get_stats(p);
        check(after.error_count == before.error_count + 2u, "bad pool frees reported");
        check(after.live_blocks == before.live_blocks, "bad pool frees changed nothing");
        check(dmm_pool_check(p, &rep) == DMM_OK, "dmm_pool_check after bad frees");
    }

    for (uint32_t i = 0; i < extra && i < sizeof extra_blocks / sizeof extra_blocks[0]; i++)
        dmm_pool_free(p, extra_blocks[i]);
    for (uint32_t i = 0; i < POOL_SLOTS; i++) {
        if (pool_slots[i].p != NULL) {
            check(intact(pool_slots[i].p, POOL_BLOCK, pool_slots[i].tag), "pool block contents kept until free");
            dmm_pool_free(p, pool_slots[i].p);
            pool_slots[i].p = NULL;
        }
    }
    check(dmm_pool_check(p, &rep) == DMM_OK, "dmm_pool_check at the end");
    st = dmm_pool_get_stats(p);
    check(st.live_blocks == 0, "pool empty at the end");
    board_puts("pool end");
    put_kv("allocs", (uint32_t)st.alloc_count);
    put_kv("frees", (uint32_t)st.free_count);
    put_kv("failed", (uint32_t)st.failed_count);
    put_kv("errors", (uint32_t)st.error_count);
    put_kv("peak_blocks", (uint32_t)st.peak_blocks);
    put_kv("capacity", (uint32_t)st.capacity);
    board_puts("\n");
    op_print("pool_alloc", &ca);
    op_print("pool_free", &cf);
    dmm_pool_destroy(p);
}

int main(void)
{
    board_puts("dmmkit bare-metal demo on ");
    board_puts(board_name);
    board_puts(", seed ");
    put_u32(SEED);
    board_puts("\n");
    if (board_counter_init()) {
        check(counter_calibrate(), "the counter counts 64 no-ops as 64 instructions");
    } else {
        board_puts("counter: none on this board (instruction counts below read 0)\n");
    }
    heap_demo();
    pool_demo();
    if (failures == 0) {
        board_puts("DMM-DEMO PASS\n");
        board_exit(0);
    }
    board_puts("DMM-DEMO FAIL: ");
    put_u32(failures);
    board_puts(" checks failed\n");
    board_exit(1);
}

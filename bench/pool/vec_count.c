/*
 * bench/pool/vec_count.c - calls one memset/memcpy routine CALLS times on
 * 64-byte-aligned blocks of SIZE bytes, for counting instructions from
 * outside (scripts/vec_neon_count.py runs it under qemu-aarch64 with one
 * guest instruction per logged translation block, twice and three times as
 * many calls, and takes the differences so start-up cancels).
 *
 *   vec_count --list                      the routine names, one a line
 *   vec_count ROUTINE memset|memcpy SIZE CALLS
 *
 * ROUTINE: a dmm_vec implementation this CPU runs (dmm_vec_impls: "neon",
 * "portable", ...), "scalar" (seed 003's byte loop, vec_baselines.h),
 * "glibc" (memset/memcpy through a volatile pointer, vec_baselines.h),
 * "empty" (a function that only returns: the harness alone) or, on AArch64,
 * "selftest": a hand-written loop of SIZE iterations that executes exactly
 * 2 * SIZE + 1 instructions (subs, b.ne per iteration, then ret; memset
 * only), which the
 * counting script checks its method against.  SIZE must be a multiple of 16
 * up to 4096 (dmm/vec.h's contract) except for selftest.
 *
 * Everything but the CALLS loop (run_calls) is the same whatever CALLS is,
 * provided CALLS keeps its number of digits.  The memset value is a
 * constant non-zero byte (0x5a): glibc's AArch64 memset takes another path
 * (DC ZVA) for zero.  Prints nothing on success; exit status 2 on bad input
 * with a one-line error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmm/vec.h"
#include "vec_baselines.h"

#define MAX_SIZE 4096u

static _Alignas(64) unsigned char buf_dst[MAX_SIZE];
static _Alignas(64) unsigned char buf_src[MAX_SIZE];

typedef struct routine {
    const char *name;
    void (*set)(void *, int, size_t);
    void (*cpy)(void *, const void *, size_t);
} routine;

static __attribute__((noinline)) void empty_set(void *d, int c, size_t n)
{
    (void)d, (void)c, (void)n;
    __asm__ volatile("");
}

static __attribute__((noinline)) void empty_cpy(void *d, const void *s, size_t n)
{
    (void)d, (void)s, (void)n;
    __asm__ volatile("");
}

#if defined(__aarch64__)
/* n iterations of subs + b.ne, then ret: 2n + 1 instructions for n >= 1.
 * Written in assembly so no compiler can add or remove an instruction. */
__asm__(".text\n"
        ".p2align 2\n"
        ".type vc_selftest_loop, %function\n"
        "vc_selftest_loop:\n"
        "1:  subs x2, x2, #1\n"
        "    b.ne 1b\n"
        "    ret\n"
        ".size vc_selftest_loop, .-vc_selftest_loop\n");
void vc_selftest_loop(void *d, int c, size_t n);
#endif

/* The loop whose instructions are counted CALLS times (its own share is
 * reported apart, by symbol, as harness overhead). */
static __attribute__((noinline)) void run_calls(const routine *r, int op, size_t n, unsigned long calls)
{
    if (op == 0) {
        for (unsigned long i = 0; i < calls; i++) {
            r->set(buf_dst, 0x5a, n);
            __asm__ volatile("" ::: "memory");
        }
    } else {
        for (unsigned long i = 0; i < calls; i++) {
            r->cpy(buf_dst, buf_src, n);
            __asm__ volatile("" ::: "memory");
        }
    }
}

static unsigned routines(routine *out, unsigned cap)
{
    const dmm_vec_impl *impls[8];
    unsigned n = 0, nimpl = dmm_vec_impls(impls, 8);
    for (unsigned i = 0; i < nimpl && i < 8 && n < cap; i++)
        out[n++] = (routine){impls[i]->name, impls[i]->memset, impls[i]->memcpy};
    if (n < cap)
        out[n++] = (routine){"scalar", scalar_memset, scalar_memcpy};
    if (n < cap)
        out[n++] = (routine){"glibc", glibc_memset, glibc_memcpy};
    if (n < cap)
        out[n++] = (routine){"empty", empty_set, empty_cpy};
#if defined(__aarch64__)
    if (n < cap)
        out[n++] = (routine){"selftest", vc_selftest_loop, NULL};
#endif
    return n;
}

int main(int argc, char **argv)
{
    routine rs[16];
    unsigned nr = routines(rs, 16);
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (unsigned i = 0; i < nr; i++)
            printf("%s\n", rs[i].name);
        return 0;
    }
    if (argc != 5) {
        fprintf(stderr, "usage: %s --list | ROUTINE memset|memcpy SIZE CALLS\n", argv[0]);
        return 2;
    }
    const routine *r = NULL;
    for (unsigned i = 0; i < nr; i++)
        if (!strcmp(argv[1], rs[i].name))
            r = &rs[i];
    int op = !strcmp(argv[2], "memset") ? 0 : !strcmp(argv[2], "memcpy") ? 1 : -1;
    char *end1, *end2;
    unsigned long size = strtoul(argv[3], &end1, 10), calls = strtoul(argv[4], &end2, 10);
    int selftest = r && !strcmp(r->name, "selftest");
    if (!r || op < 0 || *end1 || *end2 || size > MAX_SIZE || (!selftest && size % 16) || (selftest && (size == 0 || op != 0))) {
        fprintf(stderr, "vec_count: bad arguments (routine from --list, memset|memcpy, size a multiple of 16 "
                        "up to %u, calls)\n", MAX_SIZE);
        return 2;
    }
    for (unsigned i = 0; i < MAX_SIZE; i++)
        buf_src[i] = (unsigned char)(i * 7u);
    run_calls(r, op, (size_t)size, calls);
    /* The routine did its job (checked once per run, the same work whatever CALLS is). */
    if (!selftest && strcmp(r->name, "empty") != 0 && calls > 0) {
        for (unsigned long i = 0; i < size; i++)
            if (buf_dst[i] != (op == 0 ? 0x5a : buf_src[i])) {
                fprintf(stderr, "vec_count: %s %s of %lu B wrong at byte %lu\n", r->name, argv[2], size, i);
                return 1;
            }
    }
    return 0;
}

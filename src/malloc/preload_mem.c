/*
 * src/malloc/preload_mem.c - libdmm.so's memcpy, memmove and memset: in
 * secure mode (DMM_SECURE=1) a copy or fill whose destination lies in
 * memory libdmm manages must stay inside the block it starts in
 * (dmm_malloc_guard_write, malloc.c; docs/malloc.md, "Secure mode"), the
 * idea of snmalloc's guarded memcpy.  Otherwise, and always in the default
 * mode, each is a jump through a pointer to the C library's function.
 *
 * The C library's functions are found once (dmm_port_next_symbol: the
 * dynamic linker's next definition, the variant its IFUNC resolver picked)
 * at load or at the first call, whichever comes first.  libdmm's own copies
 * call dmm_libc_memcpy, ... (libc_mem.h renames them), defined here as the
 * same jump without the check.  While the lookup runs (it may allocate, and
 * the allocator copies), or if it fails, byte loops stand in: their
 * accesses are volatile, so the compiler cannot turn them back into calls.
 *
 * This file is compiled with libc_mem.h like the rest of libdmm.so, so the
 * exported names are given as assembler names of functions named
 * otherwise (memcpy itself means dmm_libc_memcpy here).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guard.h"
#include "../port/port.h"

#define EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))

typedef void *(*copy_fn)(void *, const void *, size_t);
typedef void *(*fill_fn)(void *, int, size_t);

static _Atomic(copy_fn) next_memcpy, next_memmove;
static _Atomic(fill_fn) next_memset;
static atomic_flag looking = ATOMIC_FLAG_INIT;

static void *bytes_copy(void *dst, const void *src, size_t n)
{
    volatile unsigned char *d = dst;
    const volatile unsigned char *s = src;
    if ((uintptr_t)d <= (uintptr_t)s || (uintptr_t)d >= (uintptr_t)s + n)
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    else
        for (size_t i = n; i-- > 0;)
            d[i] = s[i];
    return dst;
}

static void *bytes_fill(void *dst, int c, size_t n)
{
    volatile unsigned char *d = dst;
    for (size_t i = 0; i < n; i++)
        d[i] = (unsigned char)c;
    return dst;
}

/* Finds the three; false (the loops stand in) while another call is
 * finding them, this thread's included. */
static __attribute__((noinline)) bool find_libc(void)
{
    void *a, *b, *c;
    copy_fn fa;
    copy_fn fb;
    fill_fn fc;
    if (atomic_flag_test_and_set_explicit(&looking, memory_order_acquire))
        return false;
    a = dmm_port_next_symbol("memcpy");
    b = dmm_port_next_symbol("memmove");
    c = dmm_port_next_symbol("memset");
    if (a && b && c) {
        *(void **)&fa = a;
        *(void **)&fb = b;
        *(void **)&fc = c;
        atomic_store_explicit(&next_memmove, fb, memory_order_relaxed);
        atomic_store_explicit(&next_memset, fc, memory_order_relaxed);
        atomic_store_explicit(&next_memcpy, fa, memory_order_release);
    }
    atomic_flag_clear_explicit(&looking, memory_order_release);
    return a && b && c;
}

__attribute__((constructor(101))) static void find_libc_at_load(void) { (void)find_libc(); }

HIDDEN void *dmm_libc_memcpy(void *__restrict dst, const void *__restrict src, size_t n)
{
    copy_fn f = atomic_load_explicit(&next_memcpy, memory_order_relaxed);
    if (__builtin_expect(f != NULL, 1) || (find_libc() && (f = atomic_load_explicit(&next_memcpy, memory_order_relaxed))))
        return f(dst, src, n);
    return bytes_copy(dst, src, n);
}

HIDDEN void *dmm_libc_memmove(void *dst, const void *src, size_t n)
{
    copy_fn f = atomic_load_explicit(&next_memmove, memory_order_relaxed);
    if (__builtin_expect(f != NULL, 1) || (find_libc() && (f = atomic_load_explicit(&next_memmove, memory_order_relaxed))))
        return f(dst, src, n);
    return bytes_copy(dst, src, n);
}

HIDDEN void *dmm_libc_memset(void *dst, int c, size_t n)
{
    fill_fn f = atomic_load_explicit(&next_memset, memory_order_relaxed);
    if (__builtin_expect(f != NULL, 1) || (find_libc() && (f = atomic_load_explicit(&next_memset, memory_order_relaxed))))
        return f(dst, c, n);
    return bytes_fill(dst, c, n);
}

/* The exported functions (assembler names memcpy, memmove, memset). */
EXPORT void *dmm_export_memcpy(void *__restrict dst, const void *__restrict src, size_t n) __asm__("memcpy");
EXPORT void *dmm_export_memmove(void *dst, const void *src, size_t n) __asm__("memmove");
EXPORT void *dmm_export_memset(void *dst, int c, size_t n) __asm__("memset");

/* Each exported function is one jump through its own pointer: to the
 * checked_ function below until libdmm's initialisation has decided the
 * mode (dmm_malloc_guard_on no longer -1) and the C library's function is
 * found; then, in the default mode, to the C library's function itself,
 * which the checked_ function stores there on its next call.  Before, every
 * call tested the mode flag and the looked-up pointer: two loads from two
 * cache lines, seven instructions (mimalloc-bench's alloc-test, callgrind:
 * 5.1 M memsets, 36 M instructions in the wrapper); now one jump.  Secure
 * mode keeps the checked_ functions: the flag never goes back to 0. */
static void *checked_memcpy(void *__restrict dst, const void *__restrict src, size_t n);
static void *checked_memmove(void *dst, const void *src, size_t n);
static void *checked_memset(void *dst, int c, size_t n);
static _Atomic(copy_fn) jump_memcpy = checked_memcpy;
static _Atomic(copy_fn) jump_memmove = checked_memmove;
static _Atomic(fill_fn) jump_memset = checked_memset;

/* The checks and the lookup, out of line. */
static __attribute__((noinline)) void *checked_memcpy(void *__restrict dst, const void *__restrict src, size_t n)
{
    int on = dmm_malloc_guard_on;
    copy_fn f;
    if (on > 0)
        dmm_malloc_guard_write(dst, n);
    else if (on == 0 && (f = atomic_load_explicit(&next_memcpy, memory_order_relaxed)) != NULL)
        atomic_store_explicit(&jump_memcpy, f, memory_order_relaxed);
    return dmm_libc_memcpy(dst, src, n);
}

static __attribute__((noinline)) void *checked_memmove(void *dst, const void *src, size_t n)
{
    int on = dmm_malloc_guard_on;
    copy_fn f;
    if (on > 0)
        dmm_malloc_guard_write(dst, n);
    else if (on == 0 && (f = atomic_load_explicit(&next_memmove, memory_order_relaxed)) != NULL)
        atomic_store_explicit(&jump_memmove, f, memory_order_relaxed);
    return dmm_libc_memmove(dst, src, n);
}

static __attribute__((noinline)) void *checked_memset(void *dst, int c, size_t n)
{
    int on = dmm_malloc_guard_on;
    fill_fn f;
    if (on > 0)
        dmm_malloc_guard_write(dst, n);
    else if (on == 0 && (f = atomic_load_explicit(&next_memset, memory_order_relaxed)) != NULL)
        atomic_store_explicit(&jump_memset, f, memory_order_relaxed);
    return dmm_libc_memset(dst, c, n);
}

void *dmm_export_memcpy(void *__restrict dst, const void *__restrict src, size_t n)
{
    return atomic_load_explicit(&jump_memcpy, memory_order_relaxed)(dst, src, n);
}

void *dmm_export_memmove(void *dst, const void *src, size_t n)
{
    return atomic_load_explicit(&jump_memmove, memory_order_relaxed)(dst, src, n);
}

void *dmm_export_memset(void *dst, int c, size_t n)
{
    return atomic_load_explicit(&jump_memset, memory_order_relaxed)(dst, c, n);
}

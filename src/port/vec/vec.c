/*
 * src/port/vec/vec.c - the vector routines' dispatcher and the portable
 * implementation (a 16-byte-granule word loop).  The architecture files
 * (vec_x86.c, vec_neon.c) add theirs through dmm__vec_arch_impls when the
 * build defines DMM_VEC_ARCH.
 */
#include <stdatomic.h>

#include "dmm/vec.h"
#include "../port.h"

#ifndef DMM_ASSERT_LEVEL
#define DMM_ASSERT_LEVEL 0
#endif
/* The contract's alignment and size rule, checked at assertion level >= 1
 * (debug builds): a violation would otherwise write outside the block or
 * fault on an aligned move. */
#define VEC_REQUIRE(c)                                                                                       \
    do {                                                                                                     \
        if (DMM_ASSERT_LEVEL >= 1 && !(c))                                                                   \
            dmm_port_assert_fail(#c, __FILE__, __LINE__);                                                    \
    } while (0)
#define VEC_ALIGNED(p) (((uintptr_t)(p) & (DMM_VEC_GRANULE - 1)) == 0)

#if DMM_VEC_ARCH
/* Implementations of this architecture that the CPU runs, best first. */
unsigned dmm__vec_arch_impls(const dmm_vec_impl **out, unsigned cap);
#endif

/* The portable implementation: two 8-byte words per 16-byte granule.  The
 * stores are volatile so that the compiler neither turns the loop into a
 * call of memset/memcpy (there is none on a freestanding build, and on a
 * hosted one dmm_vec_memset is what memset-like code should call) nor
 * vectorises it behind the dispatcher's back. */
static void portable_memset(void *dst, int c, size_t n)
{
    uint64_t w = (uint64_t)(unsigned char)c * 0x0101010101010101ull;
    volatile uint64_t *d = (volatile uint64_t *)dst; /* volatile: no libc call in its place */
    for (size_t i = 0; i < n / 8; i += 2) {
        d[i] = w;
        d[i + 1] = w;
    }
}

static void portable_memcpy(void *dst, const void *src, size_t n)
{
    volatile uint64_t *d = (volatile uint64_t *)dst;
    const uint64_t *s = (const uint64_t *)src;
    for (size_t i = 0; i < n / 8; i += 2) {
        d[i] = s[i];
        d[i + 1] = s[i + 1];
    }
}

static const dmm_vec_impl portable = {"portable", DMM_VEC_GRANULE, portable_memset, portable_memcpy};

static _Atomic(const dmm_vec_impl *) selected;

unsigned dmm_vec_impls(const dmm_vec_impl **out, unsigned cap)
{
    unsigned n = 0;
#if DMM_VEC_ARCH
    n = dmm__vec_arch_impls(out, cap);
#endif
    if (n < cap && out)
        out[n] = &portable;
    return n + 1;
}

static const dmm_vec_impl *best(void)
{
    const dmm_vec_impl *list[1];
    dmm_vec_impls(list, 1);
    return list[0];
}

static const dmm_vec_impl *current(void)
{
    const dmm_vec_impl *v = atomic_load_explicit(&selected, memory_order_acquire);
    if (!v) {
        v = best();
        atomic_store_explicit(&selected, v, memory_order_release);
    }
    return v;
}

dmm_status dmm_vec_select(const char *name)
{
    if (!name) {
        atomic_store_explicit(&selected, best(), memory_order_release);
        return DMM_OK;
    }
    const dmm_vec_impl *list[8];
    unsigned n = dmm_vec_impls(list, 8);
    for (unsigned i = 0; i < n && i < 8; i++) {
        const char *a = list[i]->name, *b = name;
        while (*a && *a == *b) {
            a++;
            b++;
        }
        if (*a == 0 && *b == 0) {
            atomic_store_explicit(&selected, list[i], memory_order_release);
            return DMM_OK;
        }
    }
    return DMM_E_UNSUPPORTED;
}

void dmm_vec_memset(void *dst, int c, size_t n)
{
    VEC_REQUIRE(VEC_ALIGNED(dst) && n % DMM_VEC_GRANULE == 0);
    current()->memset(dst, c, n);
}

void dmm_vec_memcpy(void *dst, const void *src, size_t n)
{
    VEC_REQUIRE(VEC_ALIGNED(dst) && VEC_ALIGNED(src) && n % DMM_VEC_GRANULE == 0);
    current()->memcpy(dst, src, n);
}

size_t dmm_vec_width(void)
{
    return current()->width;
}

const char *dmm_vec_name(void)
{
    return current()->name;
}

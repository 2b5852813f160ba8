/*
 * bench/malloc/glibc_support/internal.h - names glibc's own build gives
 * every test through its internal headers (its include/sys/cdefs.h
 * wrapper), force-included (-include) by bench/malloc/glibc_tests.sh.
 * Written from their documented meaning; not glibc code.
 */
#ifndef DMM_GLIBC_INTERNAL_H
#define DMM_GLIBC_INTERNAL_H

#include <sys/cdefs.h>

/* A function the compiler must neither inline, clone nor analyse across
   calls, so calls through it (a malloc the test wants made) are kept. */
#ifndef __attribute_optimization_barrier__
#if defined(__clang__)
#define __attribute_optimization_barrier__ __attribute__((noinline, optnone))
#else
#define __attribute_optimization_barrier__ __attribute__((noinline, noclone, noipa))
#endif
#endif

#endif

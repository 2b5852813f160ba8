/*
 * src/malloc/guard.h - secure mode's checks on writes into libdmm's blocks
 * and on C++ sized deletes (docs/malloc.md, "Secure mode"), answered by
 * malloc.c for the exported memcpy, memmove and memset (preload_mem.c) and
 * for operator delete (preload_cxx.c), and operator new's malloc
 * (dmm__malloc_or).  Internal to libdmm.so: hidden.
 */
#ifndef DMM_MALLOC_GUARD_H
#define DMM_MALLOC_GUARD_H

#include <stddef.h>

#define DMM_GUARD_HIDDEN __attribute__((visibility("hidden")))

/* -1 until libdmm's initialisation has decided the mode, then 1 in secure
 * mode and 0 in the default mode, for good (the exported copies then jump
 * straight to the C library's: preload_mem.c).  Checks run when it is
 * above 0. */
DMM_GUARD_HIDDEN extern int dmm_malloc_guard_on;

/* Secure mode: a write of n bytes at d that starts in memory libdmm
 * manages must stay inside one block's usable bytes.  Reports the misuse
 * (and aborts, unless DMM_ABORT_ON_ERROR=0) when it does not; returns when
 * the write is allowed or d is not libdmm's. */
DMM_GUARD_HIDDEN void dmm_malloc_guard_write(const void *d, size_t n);

/* Secure mode: a sized delete of p with the size n: n must be a request
 * that libdmm would serve with p's kind of block (for small blocks its
 * size class, else at most its usable size).  Reports a mismatch. */
DMM_GUARD_HIDDEN void dmm_malloc_guard_sized(const void *p, size_t n);

/* malloc(n) for C++'s throwing operator new (preload_cxx.c): on_null(n)
 * when malloc would return NULL. */
DMM_GUARD_HIDDEN void *dmm__malloc_or(size_t n, void *(*on_null)(size_t));

#endif

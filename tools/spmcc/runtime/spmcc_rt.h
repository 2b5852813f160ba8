/*
 * tools/spmcc/runtime/spmcc_rt.h - what the output of dmm-spmcc calls.
 *
 * A program rewritten by dmm-spmcc (tools/spmcc/spmcc.py) keeps its pointer
 * types, but every heap pointer holds a GLOBAL address of the scratchpad
 * heap (dmm_gaddr, carried in the pointer's bits as SPMCC_BIAS + the
 * address: the top quarter of the host's address space, where no host
 * object lies and a dereference the pass missed faults).  Before the accesses of a
 * region the pass inserts one spmcc_p2s / spmcc_p2s_ro / spmcc_pin per
 * pointer and accesses through the local address it returns; pins are
 * released with spmcc_unpin at the end of the region; spmcc_s2p turns an
 * escaping local address back into a global one.  The program's main is
 * renamed spmcc_user_main and run by spmcc_run (spmcc_rt.c) on one execution
 * core whose heap is set up from the environment:
 *
 *   SPMCC_LOCAL   bytes of local memory S (default 32768)
 *   SPMCC_GLOBAL  bytes of global memory (default 16 MiB)
 *   SPMCC_CONFIG  the heap's configuration text (docs/spm.md), e.g.
 *                 "table=1024,frames=2,harden=paranoid"
 *   SPMCC_STATIC  1: global memory in static mode (no manager thread, no
 *                 mailbox words); unset or 0: dynamic mode
 *   SPMCC_STATS   when set: the heap's statistics as JSON on stderr at exit
 *
 * A translation that fails (bad address, local memory full of pins) ends
 * the program with a message and exit status 3; so does any error the
 * library reported or a failed dmm_spm_check at exit.
 */
#ifndef SPMCC_RT_H
#define SPMCC_RT_H

#include <stddef.h>
#include <stdint.h>
#include "dmm/spm.h"

extern dmm_spm *spmcc_heap;
/* the global memory's size and the local memory (spmcc_run sets them): a
 * heap pointer lies in [SPMCC_BIAS, SPMCC_BIAS + spmcc_gsize), and spmcc_run
 * checks that the host's objects (stack, static data, C heap, the simulated
 * memories) lie below SPMCC_BIAS, so the _any translations below can tell
 * the two apart */
#define SPMCC_BIAS ((uintptr_t)0 - ((uintptr_t)1 << (sizeof(uintptr_t) * 8 - 2)))
extern uintptr_t spmcc_gsize;
extern const char *spmcc_lbase;
extern size_t spmcc_lsize;
/* Pins made before a loop that frees (docs/spm.md, "Loops"): their global
 * addresses, each the start of an object, innermost loop last.  free and
 * realloc of such an object drop its pin first and clear the entry, so the
 * unpin after the loop (spmcc_guard_pop) does nothing. */
#define SPMCC_GUARDS 64
extern void *spmcc_guard[SPMCC_GUARDS];
extern unsigned spmcc_nguard;

_Noreturn void spmcc_fail(const char *what, const void *g);
int spmcc_run(int argc, char **argv, int (*fn)(int, char **));

static inline dmm_gaddr spmcc_g(const void *p) { return p ? (dmm_gaddr)((uintptr_t)p - SPMCC_BIAS) : DMM_GNULL; }
static inline void *spmcc_p(dmm_gaddr a) { return a ? (void *)(uintptr_t)(SPMCC_BIAS + (uintptr_t)a) : NULL; }

static inline void *spmcc_malloc(size_t n) { return spmcc_p(dmm_spm_malloc(spmcc_heap, n)); }
static inline void *spmcc_calloc(size_t n, size_t sz) { return spmcc_p(dmm_spm_calloc(spmcc_heap, n, sz)); }
static inline void spmcc_unguard(const void *g)
{
    for (unsigned i = 0; i < spmcc_nguard; i++)
        if (spmcc_guard[i] == g) {
            dmm_spm_unpin(spmcc_heap, spmcc_g(g));
            spmcc_guard[i] = NULL;
        }
}
static inline void *spmcc_realloc(void *g, size_t n)
{
    if (g)
        spmcc_unguard(g);
    return spmcc_p(dmm_spm_realloc(spmcc_heap, spmcc_g(g), n));
}
static inline void spmcc_free(void *g)
{
    if (g) {
        spmcc_unguard(g);
        dmm_spm_free(spmcc_heap, spmcc_g(g));
    }
}
static inline void *spmcc_p2s(const void *g)
{
    if (!g)
        return NULL; /* a guarded access (p && p->x): translated before its guard */
    void *l = dmm_spm_p2s(spmcc_heap, spmcc_g(g));
    if (!l)
        spmcc_fail("p2s", g);
    return l;
}
static inline void *spmcc_p2s_ro(const void *g)
{
    if (!g)
        return NULL; /* a guarded access (p && p->x): translated before its guard */
    const void *l = dmm_spm_p2s_ro(spmcc_heap, spmcc_g(g));
    if (!l)
        spmcc_fail("p2s_ro", g);
    return (void *)(uintptr_t)l;
}
/* One element [at, at + n) of the object of g (g[i] translated alone: the
 * pass's element translations): only its part of a large object is
 * fetched (dmm_spm_p2s_part). */
static inline void *spmcc_p2s_part(const void *g, const void *at, size_t n)
{
    void *l = dmm_spm_p2s_part(spmcc_heap, spmcc_g(g), spmcc_g(at), n);
    if (!l)
        spmcc_fail("p2s_part", at);
    return l;
}
static inline void *spmcc_p2s_part_ro(const void *g, const void *at, size_t n)
{
    const void *l = dmm_spm_p2s_part_ro(spmcc_heap, spmcc_g(g), spmcc_g(at), n);
    if (!l)
        spmcc_fail("p2s_part_ro", at);
    return (void *)(uintptr_t)l;
}
static inline void *spmcc_pin(const void *g)
{
    if (!g)
        return NULL; /* a guarded access (p && p->x): translated before its guard */
    void *l = dmm_spm_pin(spmcc_heap, spmcc_g(g));
    if (!l)
        spmcc_fail("pin", g);
    return l;
}
static inline void spmcc_unpin(const void *g)
{
    if (g)
        dmm_spm_unpin(spmcc_heap, spmcc_g(g));
}
static inline void spmcc_guard_push(void *g)
{
    if (spmcc_nguard == SPMCC_GUARDS)
        spmcc_fail("more nested loops holding pins than SPMCC_GUARDS", g);
    spmcc_guard[spmcc_nguard++] = g;
}
/* unpins the last n guarded pins (those of the loop that just ended) */
static inline void spmcc_guard_pop(unsigned n)
{
    while (n--) {
        void *g = spmcc_guard[--spmcc_nguard];
        if (g)
            dmm_spm_unpin(spmcc_heap, spmcc_g(g));
    }
}
static inline void *spmcc_s2p(const void *local)
{
    dmm_gaddr a = dmm_spm_s2p(spmcc_heap, local);
    if (!a)
        spmcc_fail("s2p", local);
    return spmcc_p(a);
}
/* A pointer the pass found may hold a heap (global) address or the address
 * of a host object (`node **link = &t->root` then `link = &p->left`): the
 * _any translations translate the first and pass the second through. */
static inline int spmcc_is_global(const void *p) { return (uintptr_t)p - SPMCC_BIAS < spmcc_gsize; }
static inline void *spmcc_p2s_any(const void *p) { return spmcc_is_global(p) ? spmcc_p2s(p) : (void *)(uintptr_t)p; }
static inline void *spmcc_p2s_ro_any(const void *p)
{
    return spmcc_is_global(p) ? spmcc_p2s_ro(p) : (void *)(uintptr_t)p;
}
static inline void *spmcc_pin_any(const void *p) { return spmcc_is_global(p) ? spmcc_pin(p) : (void *)(uintptr_t)p; }
static inline void spmcc_unpin_any(const void *p)
{
    if (spmcc_is_global(p))
        dmm_spm_unpin(spmcc_heap, spmcc_g(p));
}
/* an address inside local memory goes back to its global address; the
 * address of a host object stays what it is */
static inline void *spmcc_s2p_any(const void *p)
{
    const char *c = (const char *)p;
    return c >= spmcc_lbase && c < spmcc_lbase + spmcc_lsize ? spmcc_s2p(p) : (void *)(uintptr_t)p;
}
static inline void *spmcc_s2p_or_null(const void *local) { return local ? spmcc_s2p(local) : NULL; }

#endif /* SPMCC_RT_H */

/*
 * bench/anchors/anchor.h - the adapter interface of the "Heap v2" harness.
 *
 * heap_v2.c replays a workload through these four functions and nothing
 * else, so every allocator (dmm in each form, and the outside anchors:
 * dlmalloc 2.8.6, o1heap 2.2, TLSF 3.1) is driven the same way:
 *
 *   - one caller buffer of exactly n bytes (64-byte aligned, prefaulted) is
 *     the whole arena: the allocator's control structure must fit in it too;
 *   - one instance at a time, single-threaded, no growth;
 *   - the measured calls are heap_v2.c's bench_op_malloc / bench_op_free,
 *     which call anchor_malloc / anchor_free out of line (separate
 *     translation units, no LTO), so the call overhead is the same for all.
 *
 * An adapter is one .c file: adapter_dmm.c (built by CMake against the
 * runtime and frozen libraries) or adapter_<anchor>.c (compiled by hand
 * against sources kept OUTSIDE the repository, see bench/README.md).
 */
#ifndef DMM_BENCH_ANCHOR_H
#define DMM_BENCH_ANCHOR_H

#include <stddef.h>

/* Creates the allocator in buf[0, n).  Returns 0 on success, 1 when the
 * arena is too small for the allocator to start (counts as "does not fit"
 * when the minimum arena is searched), -1 on any other error (fatal). */
int anchor_init(void *buf, size_t n);

/* malloc / free of the one instance made by anchor_init. */
void *anchor_malloc(size_t n);
void anchor_free(void *p);

/* Short stable name, e.g. "tlsf" or "dmm-tlsf-frozen-lean". */
const char *anchor_name(void);

/* One line: what this is and how it is configured (valid after init; may
 * be called before init and then says less). */
const char *anchor_describe(void);

#endif /* DMM_BENCH_ANCHOR_H */

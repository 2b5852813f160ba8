/*
 * src/heap/heap_fields.h - the heap's one list of its configuration and
 * statistics fields (X-macros).  Everything per field comes from here:
 *
 *   config.c  the dmm_field descriptor table (src/core/fields.h), hence the
 *             parser, the formatter, the frozen header writer and the field
 *             list as JSON; the defaults (dmm_heap_default_config); the
 *             per-field range checks of validation and their sentences; the
 *             frozen-build check (V_FROZEN) and the frozen build's default
 *             config (dmm__heap_frozen_cfg); static assertions that the
 *             list and the hand-written public struct dmm_heap_config agree
 *             member by member (offset, size and type).
 *   stats.c   the dmm_stat table, hence dmm_heap_stats_json, and the same
 *             static assertions against dmm_heap_stats.
 *
 * The public structs stay hand-written in include/dmm/heap.h, with their
 * documentation (docs/heap.md, "The field list", says why).
 *
 * ---- configuration: DMM_HEAP_CONFIG_FIELDS(E, B, N, R, H) ----------------
 * One entry per member of dmm_heap_config, in the struct's order.  The
 * order of the E/B/N/R entries is also the order of the text form.
 *
 *   E(key, member, type, VALUES, default, FROZEN, MACRO, help)    enum
 *   B(key, member, default, FROZEN, MACRO, help)                  bool (on/off)
 *   N(key, member, KIND, default, parse_max, FROZEN, MACRO, help) number
 *   R(key, member, KIND, default, parse_max, check_max, "range sentence",
 *     FROZEN, MACRO, help)            number that validation bounds by check_max
 *   H(member, type)                   a member without a text form (pointers,
 *                                     hooks): zero in every default
 *
 *   key     the text form's key, an identifier (stringified)
 *   VALUES  the value list DMM_HEAP_<VALUES>_VALUES(V): V(VALUES, name,
 *           CONSTANT) per value, in the enum's order (asserted: CONSTANT
 *           == its index)
 *   KIND    SIZE (size_t, k/m/g suffixes), UNSIGNED (unsigned) or UINTPTR
 *   parse_max  the largest number the text form accepts ("bad number for
 *           KEY" above it); check_max the largest valid one
 *           (dmm_heap_config_check says the sentence above it)
 *   FROZEN  RUNTIME: no macro, a run-time value;
 *           VALUE: DMM_FROZEN_<MACRO> gives the frozen build's default, the
 *                  value may still vary at run time (bin geometry);
 *           FIXED: a policy, the frozen build accepts only this value;
 *           ONOFF: a policy, the frozen build fixes only whether it is 0.
 *   MACRO   suffix of the DMM_FROZEN_* macro (NONE for RUNTIME fields)
 *
 * Users of the list paste or stringify key, VALUES, KIND, FROZEN and MACRO
 * in the macro that receives them (never pass them on bare): some of these
 * words are macros elsewhere (heap_internal.h defines LINKS).
 *
 * Cross-field rules (next fit needs org=single, ...) are not here: they
 * stay hand-written in config.c with their sentences.
 */
#ifndef DMM_HEAP_FIELDS_H
#define DMM_HEAP_FIELDS_H

#include "dmm/heap.h"

/* ---- enum value lists ----------------------------------------------------- */

#define DMM_HEAP_ORG_VALUES(V)                                                                               \
    V(ORG, single, DMM_ORG_SINGLE)                                                                           \
    V(ORG, exact, DMM_ORG_SEG_EXACT)                                                                         \
    V(ORG, geometric, DMM_ORG_SEG_GEOMETRIC)                                                                 \
    V(ORG, tlsf, DMM_ORG_TLSF)                                                                               \
    V(ORG, addrtree, DMM_ORG_ADDRTREE)
#define DMM_HEAP_LINKS_VALUES(V) V(LINKS, singly, DMM_LINKS_SINGLY) V(LINKS, doubly, DMM_LINKS_DOUBLY)
#define DMM_HEAP_ORDER_VALUES(V)                                                                             \
    V(ORDER, lifo, DMM_ORDER_LIFO)                                                                           \
    V(ORDER, fifo, DMM_ORDER_FIFO)                                                                           \
    V(ORDER, address, DMM_ORDER_ADDRESS)                                                                     \
    V(ORDER, size, DMM_ORDER_SIZE)
#define DMM_HEAP_FIT_VALUES(V)                                                                               \
    V(FIT, first, DMM_FIT_FIRST)                                                                             \
    V(FIT, next, DMM_FIT_NEXT)                                                                               \
    V(FIT, best, DMM_FIT_BEST)                                                                               \
    V(FIT, exact, DMM_FIT_EXACT)                                                                             \
    V(FIT, good, DMM_FIT_GOOD)
#define DMM_HEAP_COALESCE_VALUES(V)                                                                          \
    V(COALESCE, off, DMM_COALESCE_OFF)                                                                       \
    V(COALESCE, immediate, DMM_COALESCE_IMMEDIATE)                                                           \
    V(COALESCE, deferred, DMM_COALESCE_DEFERRED)
#define DMM_HEAP_LOCK_VALUES(V)                                                                              \
    V(LOCK, none, DMM_LOCK_NONE)                                                                             \
    V(LOCK, spin, DMM_LOCK_SPIN)                                                                             \
    V(LOCK, mutex, DMM_LOCK_MUTEX)                                                                           \
    V(LOCK, user, DMM_LOCK_USER)
#define DMM_HEAP_STATS_VALUES(V)                                                                             \
    V(STATS, off, DMM_STATS_OFF)                                                                             \
    V(STATS, counters, DMM_STATS_COUNTERS)                                                                   \
    V(STATS, full, DMM_STATS_FULL)
#define DMM_HEAP_HARDEN_VALUES(V)                                                                            \
    V(HARDEN, off, DMM_HARDEN_OFF)                                                                           \
    V(HARDEN, checked, DMM_HARDEN_CHECKED)                                                                   \
    V(HARDEN, canary, DMM_HARDEN_CANARY)                                                                     \
    V(HARDEN, paranoid, DMM_HARDEN_PARANOID)
#define DMM_HEAP_ON_ERROR_VALUES(V) V(ON_ERROR, report, DMM_ON_ERROR_REPORT) V(ON_ERROR, abort, DMM_ON_ERROR_ABORT)

/* ---- the configuration ------------------------------------------------------ */

#define DMM_HEAP_CONFIG_FIELDS(E, B, N, R, H)                                                                \
    E(org, org, dmm_heap_org, ORG, DMM_ORG_TLSF, FIXED, ORG,                                                 \
      "free-list organisation: one list, exact bins, geometric bins, TLSF or an address tree")                                \
    R(sl_bits, sl_bits, UNSIGNED, 4, 64, 5, "sl_bits must be 0..5", VALUE, SL_BITS,                           \
      "sub-bins per power of two = 2^sl_bits (exact, geometric, tlsf)")                                      \
    N(exact_max, exact_max, SIZE, 256, SIZE_MAX, VALUE, EXACT_MAX,                                            \
      "org=exact: block sizes below this have one bin each (power of two)")                                  \
    E(links, links, dmm_heap_links, LINKS, DMM_LINKS_DOUBLY, FIXED, LINKS, "free-list links")                \
    E(order, order, dmm_heap_order, ORDER, DMM_ORDER_LIFO, FIXED, ORDER, "where a freed block goes in its list") \
    E(fit, fit, dmm_heap_fit, FIT, DMM_FIT_GOOD, FIXED, FIT, "how a free block is chosen")                    \
    B(split, split, true, FIXED, SPLIT, "split the unused tail off a listed block")                          \
    B(victim, victim, false, FIXED, VICTIM,                                                                  \
      "designated victim: the last split's remainder serves small requests first (dlmalloc)")                \
    N(split_min, split_min, SIZE, 0, SIZE_MAX, RUNTIME, NONE, "smallest tail worth splitting off, bytes")     \
    E(coalesce, coalesce, dmm_heap_coalesce, COALESCE, DMM_COALESCE_IMMEDIATE, FIXED, COALESCE,               \
      "merge free neighbours: never, on every free, or in a sweep")                                          \
    N(coalesce_max, coalesce_max, SIZE, 0, SIZE_MAX, RUNTIME, NONE, "largest block a merge may create (0 = no limit)") \
    R(quick_max, quick_max, SIZE, 0, SIZE_MAX, 4096, "quick_max must be at most 4096 bytes", ONOFF, QUICK_MAX, \
      "requests up to this many bytes use exact-size quick lists (0 = none)")                                \
    N(quick_limit, quick_limit, UNSIGNED, 0, 0xFFFFFFFFu, RUNTIME, NONE, "most blocks per quick list (0 = no limit)") \
    E(lock, lock, dmm_heap_lock, LOCK, DMM_LOCK_NONE, FIXED, LOCK, "lock kind")                               \
    H(lock_hooks, dmm_lock_hooks)                                                                            \
    E(stats, stats, dmm_heap_stats_level, STATS, DMM_STATS_COUNTERS, FIXED, STATS, "statistics level")        \
    E(harden, harden, dmm_heap_harden, HARDEN, DMM_HARDEN_CHECKED, FIXED, HARDEN, "pointer validation level") \
    B(poison, poison, false, FIXED, POISON, "fill freed payloads with a pattern")                            \
    E(on_error, on_error, dmm_error_policy, ON_ERROR, DMM_ON_ERROR_REPORT, RUNTIME, NONE,                     \
      "misuse: report through error_fn, or abort")                                                           \
    H(error_fn, dmm_error_fn)                                                                                \
    H(error_ctx, void *)                                                                                     \
    N(grow, grow_granularity, SIZE, 0, SIZE_MAX, ONOFF, GROW_GRANULARITY,                                     \
      "map OS pages in multiples of this size when nothing fits (0 = no growth)")                           \
    B(release_empty, release_empty, false, RUNTIME, NONE, "give a grown region back once it is entirely free") \
    N(max_block_log2, max_block_log2, UNSIGNED, 0, 64, RUNTIME, NONE,                                         \
      "bins cover block sizes below 2^n (0 = derive from the buffer)")                                       \
    N(cookie, cookie, UINTPTR, 0, UINTPTR_MAX, RUNTIME, NONE, "secret mixed into canaries (0 = derived)")

/* C types of the number kinds. */
#define DMM_HEAP_KIND_TYPE_SIZE size_t
#define DMM_HEAP_KIND_TYPE_UNSIGNED unsigned
#define DMM_HEAP_KIND_TYPE_UINTPTR uintptr_t

/* ---- the statistics: DMM_HEAP_STATS_FIELDS(S, A) ----------------------------
 * One entry per member of dmm_heap_stats, in the struct's order, which is
 * also the order of the JSON (the keys are the member names; tools and the
 * Python front end read them).
 *   S(member, type)         a counter
 *   A(member, type, count)  an array of counters */
#define DMM_HEAP_STATS_FIELDS(S, A)                                                                          \
    S(malloc_count, uint64_t)                                                                                \
    S(calloc_count, uint64_t)                                                                                \
    S(realloc_count, uint64_t)                                                                               \
    S(aligned_count, uint64_t)                                                                               \
    S(free_count, uint64_t)                                                                                  \
    S(failed_count, uint64_t)                                                                                \
    S(error_count, uint64_t)                                                                                 \
    S(search_steps, uint64_t)                                                                                \
    S(search_max, uint64_t)                                                                                  \
    S(sweep_count, uint64_t)                                                                                 \
    S(grow_count, uint64_t)                                                                                  \
    S(release_count, uint64_t)                                                                               \
    S(live_count, size_t)                                                                                    \
    S(live_block_bytes, size_t)                                                                              \
    S(peak_block_bytes, size_t)                                                                              \
    S(live_requested, size_t)                                                                                \
    S(peak_requested, size_t)                                                                                \
    S(footprint, size_t)                                                                                     \
    S(peak_footprint, size_t)                                                                                \
    S(top_bytes, size_t)                                                                                     \
    S(extent, size_t)                                                                                        \
    S(peak_extent, size_t)                                                                                   \
    S(free_bytes, size_t)                                                                                    \
    S(largest_free, size_t)                                                                                  \
    A(size_hist, uint64_t, DMM_HEAP_HIST_BUCKETS)

/* The default configuration of a frozen build: dmm_heap_default_config()
 * with every field that has a DMM_FROZEN_* macro set from it.  Defined in
 * config.c only when the library is frozen (DMM_HEAP_FROZEN). */
extern const dmm_heap_config dmm__heap_frozen_cfg;

#endif

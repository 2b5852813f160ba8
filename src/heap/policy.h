/*
 * src/heap/policy.h - policy accessors for the hot paths.
 *
 * Each P_X(h) reads a policy field of heap h, unless the translation unit
 * fixed it: a variant (src/heap/variant_*.c) defines DMM_V_X before
 * including the engine, and a frozen build (DMM_HEAP_CONFIG_HEADER) fixes
 * every field from its DMM_FROZEN_* macros.  A fixed field is a constant,
 * so the compiler drops every branch of the other policies.
 */
#ifndef DMM_HEAP_POLICY_H
#define DMM_HEAP_POLICY_H

#include "heap_internal.h"

#if DMM_HEAP_FROZEN
#define DMM_V_ORG DMM_FROZEN_ORG
#define DMM_V_LINKS DMM_FROZEN_LINKS
#define DMM_V_ORDER DMM_FROZEN_ORDER
#define DMM_V_FIT DMM_FROZEN_FIT
#define DMM_V_SPLIT DMM_FROZEN_SPLIT
#define DMM_V_COALESCE DMM_FROZEN_COALESCE
#define DMM_V_QUICK (DMM_FROZEN_QUICK_MAX != 0)
#define DMM_V_VICTIM DMM_FROZEN_VICTIM
#define DMM_V_LOCK DMM_FROZEN_LOCK
#define DMM_V_STATS DMM_FROZEN_STATS
#define DMM_V_HARDEN DMM_FROZEN_HARDEN
#define DMM_V_POISON DMM_FROZEN_POISON
#define DMM_V_GROW (DMM_FROZEN_GROW_GRANULARITY != 0)
#define DMM_V_SL_BITS DMM_FROZEN_SL_BITS
#define DMM_V_EXACT_MAX DMM_FROZEN_EXACT_MAX
#endif

#define DMM__FIX(h, v) ((void)(h), (v))

/* The bin mapping's parameters, as constants where sl_bits and exact_max
 * are fixed (the same LIN_MAX_OF that layout.c evaluates at run time). */
#ifdef DMM_V_SL_BITS
#define DMM_V_SUB DMM_V_SL_BITS
#define DMM_V_LIN_MAX LIN_MAX_OF(DMM_V_ORG, DMM_V_SL_BITS, DMM_V_EXACT_MAX)
#endif

#ifdef DMM_V_ORG
#define P_ORG(h) DMM__FIX(h, (dmm_heap_org)(DMM_V_ORG))
#else
#define P_ORG(h) ((h)->cfg.org)
#endif
#ifdef DMM_V_LINKS
#define P_LINKS(h) DMM__FIX(h, (dmm_heap_links)(DMM_V_LINKS))
#else
#define P_LINKS(h) ((h)->cfg.links)
#endif
#ifdef DMM_V_ORDER
#define P_ORDER(h) DMM__FIX(h, (dmm_heap_order)(DMM_V_ORDER))
#else
#define P_ORDER(h) ((h)->cfg.order)
#endif
#ifdef DMM_V_FIT
#define P_FIT(h) DMM__FIX(h, (dmm_heap_fit)(DMM_V_FIT))
#else
#define P_FIT(h) ((h)->cfg.fit)
#endif
#ifdef DMM_V_SPLIT
#define P_SPLIT(h) DMM__FIX(h, (bool)(DMM_V_SPLIT))
#else
#define P_SPLIT(h) ((h)->cfg.split)
#endif
#ifdef DMM_V_COALESCE
#define P_COALESCE(h) DMM__FIX(h, (dmm_heap_coalesce)(DMM_V_COALESCE))
#else
#define P_COALESCE(h) ((h)->cfg.coalesce)
#endif
#ifdef DMM_V_QUICK
#define P_QUICK(h) DMM__FIX(h, (bool)(DMM_V_QUICK))
#else
#define P_QUICK(h) ((h)->cfg.quick_max != 0)
#endif
#ifdef DMM_V_VICTIM
#define P_VICTIM(h) DMM__FIX(h, (bool)(DMM_V_VICTIM))
#else
#define P_VICTIM(h) ((h)->cfg.victim)
#endif
#ifdef DMM_V_LOCK
#define P_LOCK(h) DMM__FIX(h, (dmm_heap_lock)(DMM_V_LOCK))
#else
#define P_LOCK(h) ((h)->cfg.lock)
#endif
#ifdef DMM_V_STATS
#define P_STATS(h) DMM__FIX(h, (dmm_heap_stats_level)(DMM_V_STATS))
#else
#define P_STATS(h) ((h)->cfg.stats)
#endif
#ifdef DMM_V_HARDEN
#define P_HARDEN(h) DMM__FIX(h, (dmm_heap_harden)(DMM_V_HARDEN))
#else
#define P_HARDEN(h) ((h)->cfg.harden)
#endif
#ifdef DMM_V_POISON
#define P_POISON(h) DMM__FIX(h, (bool)(DMM_V_POISON))
#else
#define P_POISON(h) ((h)->cfg.poison)
#endif
#ifdef DMM_V_GROW
#define P_GROW(h) DMM__FIX(h, (bool)(DMM_V_GROW))
#else
#define P_GROW(h) ((h)->cfg.grow_granularity != 0)
#endif
#ifdef DMM_V_LIN_MAX
#define B_SUB(h) DMM__FIX(h, (unsigned)(DMM_V_SUB))
#define B_LIN_MAX(h) DMM__FIX(h, (size_t)(DMM_V_LIN_MAX))
#define B_LIN_BINS(h) DMM__FIX(h, (unsigned)(DMM_V_LIN_MAX / GRAN))
#define B_LIN_LOG2(h) DMM__FIX(h, dmm_log2_floor(DMM_V_LIN_MAX))
#else
#define B_SUB(h) ((h)->sub)
#define B_LIN_MAX(h) ((h)->lin_max)
#define B_LIN_BINS(h) ((h)->lin_bins)
#define B_LIN_LOG2(h) ((h)->lin_log2)
#endif

#define DOUBLY(h) (P_LINKS(h) == DMM_LINKS_DOUBLY)
#define HARDENED(h) (P_HARDEN(h) >= DMM_HARDEN_CHECKED)
#define COUNTING(h) (P_STATS(h) != DMM_STATS_OFF)

#endif

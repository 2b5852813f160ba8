/*
 * src/heap/variant.h - what each compiled variant of the hot paths fixes.
 *
 * A variant translation unit (src/heap/variant_<shape>_<tier>.c) defines
 * DMM_VARIANT_SHAPE_<PRESET> and DMM_VARIANT_TIER_<TIER>, then includes
 * this file, which turns them into the DMM_V_* constants policy.h reads and
 * compiles the engine (engine/entry.h).
 *
 *   shape  the preset's structural fields: organisation, links, order, fit,
 *          split, coalescing, quick lists on or off, the designated victim.  Every other field is
 *          read at run time.
 *   ship   + the preset as shipped: lock none, stats counters, hardening
 *          checked, poison off, no growth, the preset's bin parameters.
 *   lean   + lock none, stats off, hardening off, poison off, no growth,
 *          the preset's bin parameters.
 *
 * The preset variants are compiled when DMM_HEAP_VARIANTS is 1 (CMake
 * option DMM_HEAP_VARIANTS: on for hosted ports, off for freestanding ones,
 * where one generic copy of the code is what a firmware wants).
 *
 * A ship or lean variant compiles the same engine source with the same
 * policy constants as a build frozen to that config; the machine code
 * differs by the dispatch through the ops table and the compiler's
 * per-unit inlining and register choices (docs/heap.md, "Fast paths").
 * Init takes the first variant that accepts the config, in the order
 * of dmm__heap_variants (variant_any.c): ship and lean before shape, shape
 * before any.  tests/heap check that the shapes match the presets.
 */
#ifndef DMM_HEAP_VARIANT_H
#define DMM_HEAP_VARIANT_H

#include "heap_internal.h"

#if !DMM_HEAP_FROZEN && DMM_HEAP_VARIANTS

#if defined(DMM_VARIANT_SHAPE_DLMALLOC)
#define DMM_V_ORG DMM_ORG_SEG_EXACT
#define DMM_V_LINKS DMM_LINKS_DOUBLY
#define DMM_V_ORDER DMM_ORDER_FIFO
#define DMM_V_FIT DMM_FIT_BEST
#define DMM_V_SPLIT 1
#define DMM_V_COALESCE DMM_COALESCE_IMMEDIATE
#define DMM_V_QUICK 1
#define DMM_V_VICTIM 1
#define DMM_VARIANT_PRESET_SL_BITS 4
#define DMM_VARIANT_PRESET_EXACT_MAX 256
#define DMM_VARIANT_SHAPE_NAME "dlmalloc"
#elif defined(DMM_VARIANT_SHAPE_TLSF)
#define DMM_V_ORG DMM_ORG_TLSF
#define DMM_V_LINKS DMM_LINKS_DOUBLY
#define DMM_V_ORDER DMM_ORDER_LIFO
#define DMM_V_FIT DMM_FIT_GOOD
#define DMM_V_SPLIT 1
#define DMM_V_COALESCE DMM_COALESCE_IMMEDIATE
#define DMM_V_QUICK 0
#define DMM_V_VICTIM 0
#define DMM_VARIANT_PRESET_SL_BITS 4
#define DMM_VARIANT_PRESET_EXACT_MAX 256
#define DMM_VARIANT_SHAPE_NAME "tlsf"
#elif defined(DMM_VARIANT_SHAPE_HALFFIT)
#define DMM_V_ORG DMM_ORG_SEG_GEOMETRIC
#define DMM_V_LINKS DMM_LINKS_DOUBLY
#define DMM_V_ORDER DMM_ORDER_LIFO
#define DMM_V_FIT DMM_FIT_GOOD
#define DMM_V_SPLIT 1
#define DMM_V_COALESCE DMM_COALESCE_IMMEDIATE
#define DMM_V_QUICK 0
#define DMM_V_VICTIM 0
#define DMM_VARIANT_PRESET_SL_BITS 0
#define DMM_VARIANT_PRESET_EXACT_MAX 256
#define DMM_VARIANT_SHAPE_NAME "halffit"
#elif defined(DMM_VARIANT_SHAPE_FIRSTFIT)
#define DMM_V_ORG DMM_ORG_ADDRTREE
#define DMM_V_LINKS DMM_LINKS_DOUBLY
#define DMM_V_ORDER DMM_ORDER_ADDRESS
#define DMM_V_FIT DMM_FIT_FIRST
#define DMM_V_SPLIT 1
#define DMM_V_COALESCE DMM_COALESCE_IMMEDIATE
#define DMM_V_QUICK 0
#define DMM_V_VICTIM 0
#define DMM_VARIANT_PRESET_SL_BITS 4
#define DMM_VARIANT_PRESET_EXACT_MAX 256
#define DMM_VARIANT_SHAPE_NAME "firstfit"
#elif defined(DMM_VARIANT_SHAPE_P2012)
#define DMM_V_ORG DMM_ORG_SINGLE
#define DMM_V_LINKS DMM_LINKS_SINGLY
#define DMM_V_ORDER DMM_ORDER_LIFO
#define DMM_V_FIT DMM_FIT_FIRST
#define DMM_V_SPLIT 0
#define DMM_V_COALESCE DMM_COALESCE_OFF
#define DMM_V_QUICK 0
#define DMM_V_VICTIM 0
#define DMM_VARIANT_PRESET_SL_BITS 4
#define DMM_VARIANT_PRESET_EXACT_MAX 256
#define DMM_VARIANT_SHAPE_NAME "p2012"
#else
#error "a variant names its shape: DMM_VARIANT_SHAPE_<PRESET>"
#endif

#if defined(DMM_VARIANT_TIER_SHIP) || defined(DMM_VARIANT_TIER_LEAN)
#define DMM_V_LOCK DMM_LOCK_NONE
#define DMM_V_POISON 0
#define DMM_V_GROW 0
#define DMM_V_SL_BITS DMM_VARIANT_PRESET_SL_BITS
#define DMM_V_EXACT_MAX DMM_VARIANT_PRESET_EXACT_MAX
#if defined(DMM_VARIANT_TIER_SHIP)
#define DMM_V_STATS DMM_STATS_COUNTERS
#define DMM_V_HARDEN DMM_HARDEN_CHECKED
#define DMM_VARIANT_NAME DMM_VARIANT_SHAPE_NAME "/ship"
#else
#define DMM_V_STATS DMM_STATS_OFF
#define DMM_V_HARDEN DMM_HARDEN_OFF
#define DMM_VARIANT_NAME DMM_VARIANT_SHAPE_NAME "/lean"
#endif
#elif defined(DMM_VARIANT_TIER_SHAPE)
#define DMM_VARIANT_NAME DMM_VARIANT_SHAPE_NAME "/shape"
#else
#error "a variant names its tier: DMM_VARIANT_TIER_SHAPE, _SHIP or _LEAN"
#endif

#include "engine/entry.h"

#else
typedef int dmm__heap_variant_unused; /* a frozen build, or one built with
                                         DMM_HEAP_VARIANTS=0, compiles only variant_any.c */
#endif /* !DMM_HEAP_FROZEN && DMM_HEAP_VARIANTS */
#endif

/*
 * src/heap/variant_halffit.c - the hot paths specialised for the shape of the
 * "halffit" preset (power-of-two bins, good fit, doubly-linked LIFO bins, immediate coalescing, splitting).
 *
 * Only the structural policy fields are fixed here; statistics, hardening,
 * locks, poisoning and growth stay run-time switches, and so do the bin
 * parameters.  Init selects this variant for every config with this shape
 * (see heap.c).  tests/heap check that these values match
 * dmm_heap_preset_config(DMM_PRESET_HALFFIT).
 */
#include "heap_internal.h"

#if !DMM_HEAP_FROZEN
#define DMM_VARIANT_OPS dmm__heap_ops_halffit
#define DMM_VARIANT_NAME "halffit"
#define DMM_V_ORG DMM_ORG_SEG_GEOMETRIC
#define DMM_V_LINKS DMM_LINKS_DOUBLY
#define DMM_V_ORDER DMM_ORDER_LIFO
#define DMM_V_FIT DMM_FIT_GOOD
#define DMM_V_SPLIT 1
#define DMM_V_COALESCE DMM_COALESCE_IMMEDIATE
#define DMM_V_QUICK 0
#include "engine/entry.h"
#else
typedef int dmm__heap_variant_halffit_unused; /* ISO C wants a non-empty unit */
#endif

/*
 * src/heap/variant_p2012.c - the hot paths specialised for the shape of the
 * "p2012" preset (one singly-linked LIFO list, first fit, no splitting, no coalescing).
 *
 * Only the structural policy fields are fixed here; statistics, hardening,
 * locks, poisoning and growth stay run-time switches, and so do the bin
 * parameters.  Init selects this variant for every config with this shape
 * (see heap.c).  tests/heap check that these values match
 * dmm_heap_preset_config(DMM_PRESET_P2012).
 */
#include "heap_internal.h"

#if !DMM_HEAP_FROZEN
#define DMM_VARIANT_OPS dmm__heap_ops_p2012
#define DMM_VARIANT_NAME "p2012"
#define DMM_V_ORG DMM_ORG_SINGLE
#define DMM_V_LINKS DMM_LINKS_SINGLY
#define DMM_V_ORDER DMM_ORDER_LIFO
#define DMM_V_FIT DMM_FIT_FIRST
#define DMM_V_SPLIT 0
#define DMM_V_COALESCE DMM_COALESCE_OFF
#define DMM_V_QUICK 0
#include "engine/entry.h"
#else
typedef int dmm__heap_variant_p2012_unused; /* ISO C wants a non-empty unit */
#endif

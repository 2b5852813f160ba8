/*
 * src/heap/variant_tlsf.c - the hot paths specialised for the shape of the
 * "tlsf" preset (two-level segregated good fit, doubly-linked LIFO bins, immediate coalescing, splitting).
 *
 * Only the structural policy fields are fixed here; statistics, hardening,
 * locks, poisoning and growth stay run-time switches, and so do the bin
 * parameters.  Init selects this variant for every config with this shape
 * (see heap.c).  tests/heap check that these values match
 * dmm_heap_preset_config(DMM_PRESET_TLSF).
 */
#include "heap_internal.h"

#if !DMM_HEAP_FROZEN
#define DMM_VARIANT_OPS dmm__heap_ops_tlsf
#define DMM_VARIANT_NAME "tlsf"
#define DMM_V_ORG DMM_ORG_TLSF
#define DMM_V_LINKS DMM_LINKS_DOUBLY
#define DMM_V_ORDER DMM_ORDER_LIFO
#define DMM_V_FIT DMM_FIT_GOOD
#define DMM_V_SPLIT 1
#define DMM_V_COALESCE DMM_COALESCE_IMMEDIATE
#define DMM_V_QUICK 0
#include "engine/entry.h"
#else
typedef int dmm__heap_variant_tlsf_unused; /* ISO C wants a non-empty unit */
#endif

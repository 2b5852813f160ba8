/*
 * src/heap/variant_any.c - the hot paths for any configuration: every policy
 * field is read from the heap at run time.  In a frozen build this is the
 * only variant, every field is a constant (policy.h), and it defines the
 * public allocation functions directly.
 */
#include "heap_internal.h"

#define DMM_VARIANT_OPS dmm__heap_ops_any
#define DMM_VARIANT_NAME "any"
#include "engine/entry.h"

/* Most specific first (every ship and lean variant, then the shapes);
 * dmm__heap_ops_any accepts every valid config. */
#if DMM_HEAP_FROZEN
/* no table: entry.h defines the public functions directly */
#elif !DMM_HEAP_VARIANTS
const dmm__heap_ops *const dmm__heap_variants[] = {&dmm__heap_ops_any};
#else
extern const dmm__heap_ops dmm__heap_ops_dlmalloc_ship, dmm__heap_ops_tlsf_ship, dmm__heap_ops_halffit_ship, dmm__heap_ops_firstfit_ship, dmm__heap_ops_p2012_ship, dmm__heap_ops_dlmalloc_lean, dmm__heap_ops_tlsf_lean, dmm__heap_ops_halffit_lean, dmm__heap_ops_firstfit_lean, dmm__heap_ops_p2012_lean, dmm__heap_ops_dlmalloc_shape, dmm__heap_ops_tlsf_shape, dmm__heap_ops_halffit_shape, dmm__heap_ops_firstfit_shape, dmm__heap_ops_p2012_shape;
/* tlsf first: it is the default preset and what libdmm's medium heaps run,
 * so their init reads one variant's accepts (one page of code) before it
 * finds theirs.  The ship variants accept disjoint configs, and so do the
 * lean ones, so the order within a tier chooses nothing. */
const dmm__heap_ops *const dmm__heap_variants[] = {
    &dmm__heap_ops_tlsf_ship,
    &dmm__heap_ops_dlmalloc_ship,
    &dmm__heap_ops_halffit_ship,
    &dmm__heap_ops_firstfit_ship,
    &dmm__heap_ops_p2012_ship,
    &dmm__heap_ops_dlmalloc_lean,
    &dmm__heap_ops_tlsf_lean,
    &dmm__heap_ops_halffit_lean,
    &dmm__heap_ops_firstfit_lean,
    &dmm__heap_ops_p2012_lean,
    &dmm__heap_ops_dlmalloc_shape,
    &dmm__heap_ops_tlsf_shape,
    &dmm__heap_ops_halffit_shape,
    &dmm__heap_ops_firstfit_shape,
    &dmm__heap_ops_p2012_shape,
    &dmm__heap_ops_any,
};
#endif
#if !DMM_HEAP_FROZEN
const unsigned dmm__heap_variant_count = sizeof dmm__heap_variants / sizeof dmm__heap_variants[0];
#endif

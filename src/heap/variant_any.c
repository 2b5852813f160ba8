/*
 * src/heap/variant_any.c - the hot paths for any configuration: every policy
 * field is read from the heap at run time.  In a frozen build this is the
 * only variant, every field is a constant (policy.h), and it defines the
 * public allocation functions directly.
 */
#include "heap_internal.h"

#define DMM_VARIANT_OPS dmm__heap_ops_any
#if DMM_HEAP_FROZEN
#define DMM_VARIANT_NAME "frozen"
#else
#define DMM_VARIANT_NAME "any"
#endif
#include "engine/entry.h"

/* Most specific first; dmm__heap_ops_any accepts every valid config. */
#if DMM_HEAP_FROZEN
const dmm__heap_ops *const dmm__heap_variants[] = {&dmm__heap_ops_any};
#else
extern const dmm__heap_ops dmm__heap_ops_dlmalloc, dmm__heap_ops_tlsf, dmm__heap_ops_halffit,
    dmm__heap_ops_firstfit, dmm__heap_ops_p2012;
const dmm__heap_ops *const dmm__heap_variants[] = {
    &dmm__heap_ops_dlmalloc, &dmm__heap_ops_tlsf, &dmm__heap_ops_halffit,
    &dmm__heap_ops_firstfit, &dmm__heap_ops_p2012, &dmm__heap_ops_any,
};
#endif
const unsigned dmm__heap_variant_count = sizeof dmm__heap_variants / sizeof dmm__heap_variants[0];

/* src/heap/variant_tlsf_shape.c - the "tlsf" shape, shape tier (see variant.h). */
#define DMM_VARIANT_SHAPE_TLSF
#define DMM_VARIANT_TIER_SHAPE
#define DMM_VARIANT_OPS dmm__heap_ops_tlsf_shape
#include "variant.h"

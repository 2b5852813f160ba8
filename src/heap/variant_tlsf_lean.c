/* src/heap/variant_tlsf_lean.c - the "tlsf" shape, lean tier (see variant.h). */
#define DMM_VARIANT_SHAPE_TLSF
#define DMM_VARIANT_TIER_LEAN
#define DMM_VARIANT_OPS dmm__heap_ops_tlsf_lean
#include "variant.h"

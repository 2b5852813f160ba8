/* src/heap/variant_p2012_lean.c - the "p2012" shape, lean tier (see variant.h). */
#define DMM_VARIANT_SHAPE_P2012
#define DMM_VARIANT_TIER_LEAN
#define DMM_VARIANT_OPS dmm__heap_ops_p2012_lean
#include "variant.h"

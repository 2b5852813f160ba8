/* src/heap/variant_firstfit_lean.c - the "firstfit" shape, lean tier (see variant.h). */
#define DMM_VARIANT_SHAPE_FIRSTFIT
#define DMM_VARIANT_TIER_LEAN
#define DMM_VARIANT_OPS dmm__heap_ops_firstfit_lean
#include "variant.h"

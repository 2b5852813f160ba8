/* src/heap/variant_halffit_lean.c - the "halffit" shape, lean tier (see variant.h). */
#define DMM_VARIANT_SHAPE_HALFFIT
#define DMM_VARIANT_TIER_LEAN
#define DMM_VARIANT_OPS dmm__heap_ops_halffit_lean
#include "variant.h"

/* src/heap/variant_firstfit_shape.c - the "firstfit" shape, shape tier (see variant.h). */
#define DMM_VARIANT_SHAPE_FIRSTFIT
#define DMM_VARIANT_TIER_SHAPE
#define DMM_VARIANT_OPS dmm__heap_ops_firstfit_shape
#include "variant.h"

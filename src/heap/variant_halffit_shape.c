/* src/heap/variant_halffit_shape.c - the "halffit" shape, shape tier (see variant.h). */
#define DMM_VARIANT_SHAPE_HALFFIT
#define DMM_VARIANT_TIER_SHAPE
#define DMM_VARIANT_OPS dmm__heap_ops_halffit_shape
#include "variant.h"

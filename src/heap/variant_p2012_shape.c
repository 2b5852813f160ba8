/* src/heap/variant_p2012_shape.c - the "p2012" shape, shape tier (see variant.h). */
#define DMM_VARIANT_SHAPE_P2012
#define DMM_VARIANT_TIER_SHAPE
#define DMM_VARIANT_OPS dmm__heap_ops_p2012_shape
#include "variant.h"

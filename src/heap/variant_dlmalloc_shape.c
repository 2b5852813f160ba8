/* src/heap/variant_dlmalloc_shape.c - the "dlmalloc" shape, shape tier (see variant.h). */
#define DMM_VARIANT_SHAPE_DLMALLOC
#define DMM_VARIANT_TIER_SHAPE
#define DMM_VARIANT_OPS dmm__heap_ops_dlmalloc_shape
#include "variant.h"

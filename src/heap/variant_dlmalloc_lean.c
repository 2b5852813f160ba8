/* src/heap/variant_dlmalloc_lean.c - the "dlmalloc" shape, lean tier (see variant.h). */
#define DMM_VARIANT_SHAPE_DLMALLOC
#define DMM_VARIANT_TIER_LEAN
#define DMM_VARIANT_OPS dmm__heap_ops_dlmalloc_lean
#include "variant.h"

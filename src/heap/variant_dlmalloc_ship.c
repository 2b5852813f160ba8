/* src/heap/variant_dlmalloc_ship.c - the "dlmalloc" shape, ship tier (see variant.h). */
#define DMM_VARIANT_SHAPE_DLMALLOC
#define DMM_VARIANT_TIER_SHIP
#define DMM_VARIANT_OPS dmm__heap_ops_dlmalloc_ship
#include "variant.h"

/* src/heap/variant_p2012_ship.c - the "p2012" shape, ship tier (see variant.h). */
#define DMM_VARIANT_SHAPE_P2012
#define DMM_VARIANT_TIER_SHIP
#define DMM_VARIANT_OPS dmm__heap_ops_p2012_ship
#include "variant.h"

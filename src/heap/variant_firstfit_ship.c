/* src/heap/variant_firstfit_ship.c - the "firstfit" shape, ship tier (see variant.h). */
#define DMM_VARIANT_SHAPE_FIRSTFIT
#define DMM_VARIANT_TIER_SHIP
#define DMM_VARIANT_OPS dmm__heap_ops_firstfit_ship
#include "variant.h"

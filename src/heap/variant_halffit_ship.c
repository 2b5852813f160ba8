/* src/heap/variant_halffit_ship.c - the "halffit" shape, ship tier (see variant.h). */
#define DMM_VARIANT_SHAPE_HALFFIT
#define DMM_VARIANT_TIER_SHIP
#define DMM_VARIANT_OPS dmm__heap_ops_halffit_ship
#include "variant.h"

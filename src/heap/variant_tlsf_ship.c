/* src/heap/variant_tlsf_ship.c - the "tlsf" shape, ship tier (see variant.h). */
#define DMM_VARIANT_SHAPE_TLSF
#define DMM_VARIANT_TIER_SHIP
#define DMM_VARIANT_OPS dmm__heap_ops_tlsf_ship
#include "variant.h"

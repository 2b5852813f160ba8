/*
 * src/malloc/slot.h - libdmm's block-boundary test (malloc.c, docs/malloc.md
 * "The fast paths"): is a page offset the start of one of the first n
 * blocks of a page of blocks of bs bytes?  One multiply and one compare,
 * with two 32-bit terms kept in the page descriptor.
 *
 * For a block size d (16 <= d <= 8192) and an offset x below 2^16 (a page
 * is 64 KiB), let c = floor(2^32 / d) + 1 (the multiplier) and
 * e = d * c - 2^32 (the step; 1 <= e <= d, and e = d when d is a power
 * of two).  Write x = k * d + r with 0 <= r < d.  Then, exactly (no
 * wrap-around: k * e <= 2^16 and r * c <= (d - 1) * (2^32 / d + 1), whose
 * sum stays below 2^32 because 2^32 / d >= 2^19 > 2^16 + d):
 *
 *     x * c mod 2^32 = k * e + r * c
 *
 * so for a boundary (r = 0) the product is k * e, which is below n * e
 * exactly when k < n; for any other offset it is at least c > 2^19, above
 * every n * e (at most (2^16 / d) * d = 2^16).  The test
 * "x * c mod 2^32 < n * e" is therefore "x is the start of block k with
 * k < n", and n = 0 (a page not in use) refuses every offset.
 * tests/malloc (MallocSlot.*) checks it for every multiple of 16 up to
 * 8192, every offset and every n.
 */
#ifndef DMM_MALLOC_SLOT_H
#define DMM_MALLOC_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#define DMM_SLOT_MAX_BLOCK 8192u  /* the largest block size the test holds for */
#define DMM_SLOT_OFF_BITS 16u     /* offsets below 2^16: a page of 64 KiB */

/* The multiplier c of block size bs. */
static inline uint32_t dmm_slot_mul(uint32_t bs) { return (uint32_t)(((uint64_t)1 << 32) / bs + 1u); }

/* The step e of block size bs: bs * c mod 2^32. */
static inline uint32_t dmm_slot_step(uint32_t bs) { return bs * dmm_slot_mul(bs); }

/* The limit for the first n blocks (n at most 2^16 / bs). */
static inline uint32_t dmm_slot_limit(uint32_t bs, uint32_t n) { return n * dmm_slot_step(bs); }

/* Offset off (below 2^16) is the start of one of the blocks the limit
 * lim covers; mul is dmm_slot_mul of the block size. */
static inline bool dmm_slot_in(uint32_t off, uint32_t mul, uint32_t lim) { return off * mul < lim; }

#endif

/*
 * bench/pool/rtpool.h - a conventional fixed-block memory pool in the style
 * of RT-Thread's rt_mp (the baseline of seed 003), written for the pool
 * benchmarks from the description only:
 *
 *   every block is a pointer header followed by the payload; while a block
 *   is free the header links it to the next free block, while it is handed
 *   out the header points back to its pool, so free(block) needs no pool
 *   argument;
 *   blocks are only pointer-aligned in the original; to hand out payloads
 *   aligned to `align` (a vector width) the whole block (header + payload)
 *   is rounded up to `align` and the first payload is placed on an aligned
 *   address, which is the space the benchmark measures.
 *
 * rtpool_alloc(pool, time) follows rt_mp_alloc: time 0 returns at once (NULL
 * when the pool is empty).  This baseline has no scheduler, so every other
 * time behaves as 0 too; rtpool_free checks the (always empty) waiter count
 * the way rt_mp_free checks its suspend list, so the branch is paid.
 */
#ifndef DMM_BENCH_RTPOOL_H
#define DMM_BENCH_RTPOOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct rtpool {
    unsigned char *start;      /* first block header */
    size_t size;               /* bytes of the caller buffer */
    size_t block_size;         /* payload bytes as asked */
    size_t stride;             /* header + payload, rounded to the alignment */
    size_t align;              /* payload alignment (>= sizeof(void *)) */
    size_t total;              /* blocks */
    size_t free_count;
    unsigned waiting;          /* threads suspended on the pool (always 0 here) */
    unsigned char *free_list;  /* header of the first free block */
} rtpool;

/* Where the blocks of a pool on [buf, buf+size) would sit. */
typedef struct rtpool_layout {
    size_t blocks;
    size_t stride;
    size_t lead;      /* bytes skipped before the first header (alignment) */
    size_t per_block_waste; /* stride - block_size: header + padding */
} rtpool_layout;

#define RTPOOL_HEADER sizeof(unsigned char *)

/* 0 on success, -1 when align is not a power of two >= the header size,
 * block_size is 0 or no block fits.  O(blocks). */
int rtpool_layout_of(const void *buf, size_t size, size_t block_size, size_t align, rtpool_layout *out);
int rtpool_init(rtpool *mp, void *buf, size_t size, size_t block_size, size_t align);
void *rtpool_alloc(rtpool *mp, int32_t time);
void rtpool_free(void *block);

/* The baseline's memset: a plain byte loop (RT-Thread's tiny rt_memset). */
void rtpool_memset_bytes(void *dst, int c, size_t n);

#endif

/* bench/pool/rtpool.c - the conventional pool baseline (see rtpool.h). */
#include "rtpool.h"

static size_t round_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

int rtpool_layout_of(const void *buf, size_t size, size_t block_size, size_t align, rtpool_layout *out)
{
    if (block_size == 0 || align < RTPOOL_HEADER || (align & (align - 1)) != 0)
        return -1;
    /* the payload follows the header, so the header of the first block sits
     * RTPOOL_HEADER bytes before the first aligned address past it */
    uintptr_t b = (uintptr_t)buf;
    uintptr_t first_payload = (uintptr_t)round_up((size_t)(b + RTPOOL_HEADER), align);
    size_t lead = (size_t)(first_payload - RTPOOL_HEADER - b);
    size_t stride = round_up(RTPOOL_HEADER + round_up(block_size, RTPOOL_HEADER), align);
    if (size < lead || (size - lead) < stride)
        return -1;
    out->blocks = (size - lead) / stride;
    out->stride = stride;
    out->lead = lead;
    out->per_block_waste = stride - block_size;
    return 0;
}

int rtpool_init(rtpool *mp, void *buf, size_t size, size_t block_size, size_t align)
{
    rtpool_layout l;
    if (rtpool_layout_of(buf, size, block_size, align, &l) != 0)
        return -1;
    mp->start = (unsigned char *)buf + l.lead;
    mp->size = size;
    mp->block_size = block_size;
    mp->stride = l.stride;
    mp->align = align;
    mp->total = l.blocks;
    mp->free_count = l.blocks;
    mp->waiting = 0;
    /* link every block to the next through its header, the last to NULL */
    unsigned char *h = mp->start;
    for (size_t i = 0; i + 1 < l.blocks; i++, h += l.stride)
        *(unsigned char **)h = h + l.stride;
    *(unsigned char **)h = NULL;
    mp->free_list = mp->start;
    return 0;
}

void *rtpool_alloc(rtpool *mp, int32_t time)
{
    (void)time; /* no scheduler: every timeout behaves as 0 */
    unsigned char *h = mp->free_list;
    if (h == NULL)
        return NULL;
    mp->free_list = *(unsigned char **)h;
    mp->free_count--;
    *(rtpool **)h = mp; /* the header points back to the pool */
    return h + RTPOOL_HEADER;
}

void rtpool_free(void *block)
{
    unsigned char *h = (unsigned char *)block - RTPOOL_HEADER;
    rtpool *mp = *(rtpool **)h;
    *(unsigned char **)h = mp->free_list;
    mp->free_list = h;
    mp->free_count++;
    if (mp->waiting != 0) {
        /* rt_mp_free would wake the first suspended thread here */
    }
}

void rtpool_memset_bytes(void *dst, int c, size_t n)
{
    /* volatile: one byte store per byte, never turned into a libc memset
     * or vectorised by the compiler */
    volatile unsigned char *d = (volatile unsigned char *)dst;
    for (size_t i = 0; i < n; i++)
        d[i] = (unsigned char)c;
}

/*
 * bench/anchors/adapter_dlmalloc.c - anchor.h over dlmalloc 2.8.6 as an
 * mspace on the arena (create_mspace_with_base).  malloc.c is kept outside
 * the repository and compiled by hand with
 *     -DONLY_MSPACES=1 -DUSE_LOCKS=0 -DHAVE_MMAP=0
 * (bench/README.md, "Anchors"): no locks, no mmap, no morecore, so the
 * mspace can never grow beyond the arena.
 *
 * malloc.c 2.8.6 comes without its header (malloc-2.8.6.h); these are the
 * four declarations it documents for mspaces.
 */
#include "anchor.h"

typedef void *mspace;
mspace create_mspace_with_base(void *base, size_t capacity, int locked);
void *mspace_malloc(mspace msp, size_t bytes);
void mspace_free(mspace msp, void *mem);
size_t destroy_mspace(mspace msp);

static mspace ms;

int anchor_init(void *buf, size_t n)
{
    ms = create_mspace_with_base(buf, n, 0);
    return ms ? 0 : 1;
}

void *anchor_malloc(size_t n) { return mspace_malloc(ms, n); }

void anchor_free(void *p) { mspace_free(ms, p); }

const char *anchor_name(void) { return "dlmalloc"; }

const char *anchor_describe(void)
{
    return "dlmalloc 2.8.6 mspace (ONLY_MSPACES=1 USE_LOCKS=0 HAVE_MMAP=0): create_mspace_with_base on the arena";
}

/*
 * bench/anchors/adapter_o1heap.c - anchor.h over o1heap 2.2
 * (pavel-kirienko/o1heap).  Compiled by hand against o1heap.h / o1heap.c
 * kept outside the repository (bench/README.md, "Anchors").  o1heapInit
 * puts its instance at the start of the arena (which heap_v2.c aligns to
 * 64 bytes, more than O1HEAP_ALIGNMENT).
 */
#include "anchor.h"

#include "o1heap.h"

static O1HeapInstance *heap;

int anchor_init(void *buf, size_t n)
{
    heap = o1heapInit(buf, n);
    return heap ? 0 : 1;
}

void *anchor_malloc(size_t n) { return o1heapAllocate(heap, n); }

void anchor_free(void *p) { o1heapFree(heap, p); }

const char *anchor_name(void) { return "o1heap"; }

const char *anchor_describe(void) { return "o1heap 2.2 (pavel-kirienko/o1heap): o1heapInit on the arena"; }

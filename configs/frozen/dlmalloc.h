/* configs/frozen/dlmalloc.h - the "dlmalloc" preset frozen at build time (policy fields
 * become constants; see docs/heap.md).  Must match dmm_heap_preset_config
 * for DMM_PRESET_DLMALLOC: tests/heap check that it does. */
#define DMM_FROZEN_ORG DMM_ORG_SEG_EXACT
#define DMM_FROZEN_LINKS DMM_LINKS_DOUBLY
#define DMM_FROZEN_ORDER DMM_ORDER_FIFO
#define DMM_FROZEN_FIT DMM_FIT_BEST
#define DMM_FROZEN_SPLIT 1
#define DMM_FROZEN_COALESCE DMM_COALESCE_IMMEDIATE
#define DMM_FROZEN_QUICK_MAX (8 * sizeof(void *))
#define DMM_FROZEN_SL_BITS 1
#define DMM_FROZEN_EXACT_MAX 256
#define DMM_FROZEN_LOCK DMM_LOCK_NONE
#define DMM_FROZEN_STATS DMM_STATS_COUNTERS
#define DMM_FROZEN_HARDEN DMM_HARDEN_CHECKED
#define DMM_FROZEN_POISON 0
#define DMM_FROZEN_GROW_GRANULARITY 0

/* configs/frozen/dlmalloc.h - a dmm heap configuration frozen at build time
 * (written by dmm_heap_config_header, e.g. dmm-config header TEXT).
 * Policy fields become constants, sizes stay run-time values, and a heap
 * built with this header refuses configs whose policies differ; see
 * docs/heap.md, "Freezing a configuration".
 * config: org=exact,sl_bits=4,exact_max=256,links=doubly,order=fifo,fit=best,
 *   split=on,victim=on,split_min=0,coalesce=immediate,coalesce_max=0,
 *   quick_max=64,quick_limit=0,lock=none,stats=counters,harden=checked,
 *   poison=off,on_error=report,grow=0,release_empty=off,max_block_log2=0,
 *   cookie=0 */
#define DMM_FROZEN_ORG DMM_ORG_SEG_EXACT
#define DMM_FROZEN_SL_BITS 4
#define DMM_FROZEN_EXACT_MAX 256
#define DMM_FROZEN_LINKS DMM_LINKS_DOUBLY
#define DMM_FROZEN_ORDER DMM_ORDER_FIFO
#define DMM_FROZEN_FIT DMM_FIT_BEST
#define DMM_FROZEN_SPLIT 1
#define DMM_FROZEN_VICTIM 1
#define DMM_FROZEN_COALESCE DMM_COALESCE_IMMEDIATE
#define DMM_FROZEN_QUICK_MAX 64
#define DMM_FROZEN_LOCK DMM_LOCK_NONE
#define DMM_FROZEN_STATS DMM_STATS_COUNTERS
#define DMM_FROZEN_HARDEN DMM_HARDEN_CHECKED
#define DMM_FROZEN_POISON 0
#define DMM_FROZEN_GROW_GRANULARITY 0

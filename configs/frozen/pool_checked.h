/* configs/frozen/pool_checked.h - a dmm pool configuration frozen at build
 * time for the pool benchmarks (bench/pool): as pool_lean.h but free
 * validates every pointer (harden=checked: inside the blocks, on a block
 * boundary, not already free; the allocation bitmap is kept).
 * config: lock=none,stats=off,harden=checked,poison=off */
#define DMM_POOL_FROZEN_LOCK DMM_LOCK_NONE
#define DMM_POOL_FROZEN_STATS DMM_STATS_OFF
#define DMM_POOL_FROZEN_HARDEN DMM_HARDEN_CHECKED
#define DMM_POOL_FROZEN_POISON 0

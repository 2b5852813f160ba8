/* configs/frozen/pool_lean.h - a dmm pool configuration frozen at build
 * time for the pool benchmarks (bench/pool): no lock, no statistics, no
 * hardening, no poisoning, the leanest hot path the pool has.  Block size
 * and alignment stay run-time values.
 * config: lock=none,stats=off,harden=off,poison=off */
#define DMM_POOL_FROZEN_LOCK DMM_LOCK_NONE
#define DMM_POOL_FROZEN_STATS DMM_STATS_OFF
#define DMM_POOL_FROZEN_HARDEN DMM_HARDEN_OFF
#define DMM_POOL_FROZEN_POISON 0

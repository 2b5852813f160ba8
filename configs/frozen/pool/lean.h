/* configs/frozen/pool/lean.h - a frozen dmm pool configuration (DMM_POOL_CONFIG_HEADER)
 * config: block=64,align=0,lock=none,stats=off,harden=off,poison=off,
 *   on_error=report */
#define DMM_POOL_FROZEN_LOCK DMM_LOCK_NONE
#define DMM_POOL_FROZEN_STATS DMM_STATS_OFF
#define DMM_POOL_FROZEN_HARDEN DMM_HARDEN_OFF
#define DMM_POOL_FROZEN_POISON 0

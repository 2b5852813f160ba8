/*
 * src/pool/config.c - the pool's configuration: defaults, validation, the
 * text form, the frozen header and the field list (one dmm_field table, the
 * machinery of src/core/fields.h), and the statistics' JSON form.
 */
#include "../core/fields.h"
#include "pool_internal.h"

static const char *const lock_names[] = {"none", "spin", "mutex", "user"};
static const char *const lock_consts[] = {"DMM_LOCK_NONE", "DMM_LOCK_SPIN", "DMM_LOCK_MUTEX", "DMM_LOCK_USER"};
static const char *const stats_names[] = {"off", "counters", "full"};
static const char *const stats_consts[] = {"DMM_STATS_OFF", "DMM_STATS_COUNTERS", "DMM_STATS_FULL"};
static const char *const harden_names[] = {"off", "checked", "canary", "paranoid"};
static const char *const harden_consts[] = {"DMM_HARDEN_OFF", "DMM_HARDEN_CHECKED", "DMM_HARDEN_CANARY",
                                            "DMM_HARDEN_PARANOID"};
static const char *const on_error_names[] = {"report", "abort"};
static const char *const on_error_consts[] = {"DMM_ON_ERROR_REPORT", "DMM_ON_ERROR_ABORT"};

_Static_assert(DMM_LOCK_USER == 3 && DMM_STATS_FULL == 2 && DMM_HARDEN_PARANOID == 3 && DMM_ON_ERROR_ABORT == 1,
               "the value names above follow the enums' order");

static const dmm_field pool_fields[] = {
    DMM_FIELD_NUM_INIT(dmm_pool_config, block_size, "block", DMM_FIELD_SIZE, SIZE_MAX, SIZE_MAX, NULL,
                       DMM_FIELD_RUNTIME, NULL, "bytes a block holds"),
    DMM_FIELD_NUM_INIT(dmm_pool_config, align, "align", DMM_FIELD_SIZE, SIZE_MAX, DMM_POOL_MAX_ALIGN,
                       "align must be a power of two up to 65536 (0 = the vector width)", DMM_FIELD_RUNTIME, NULL,
                       "block alignment, a power of two (0 = the widest vector unit)"),
    DMM_FIELD_ENUM_INIT(dmm_pool_config, lock, "lock", lock_names, lock_consts, DMM_FIELD_FROZEN_FIXED,
                        "DMM_POOL_FROZEN_LOCK", "lock kind (user = critical-section hooks)"),
    DMM_FIELD_ENUM_INIT(dmm_pool_config, stats, "stats", stats_names, stats_consts, DMM_FIELD_FROZEN_FIXED,
                        "DMM_POOL_FROZEN_STATS", "statistics level (full = counters for a pool)"),
    DMM_FIELD_ENUM_INIT(dmm_pool_config, harden, "harden", harden_names, harden_consts, DMM_FIELD_FROZEN_FIXED,
                        "DMM_POOL_FROZEN_HARDEN", "pointer validation level"),
    DMM_FIELD_BOOL_INIT(dmm_pool_config, poison, "poison", DMM_FIELD_FROZEN_FIXED, "DMM_POOL_FROZEN_POISON",
                        "fill freed blocks with a pattern, verified when handed out"),
    DMM_FIELD_ENUM_INIT(dmm_pool_config, on_error, "on_error", on_error_names, on_error_consts,
                        DMM_FIELD_RUNTIME, NULL, "misuse: report through error_fn, or abort"),
};
#define NFIELDS ((unsigned)(sizeof pool_fields / sizeof pool_fields[0]))

dmm_pool_config dmm_pool_default_config(void)
{
    dmm_pool_config c = {0};
    c.block_size = 64;
    c.align = 0;
    c.lock = DMM_LOCK_NONE;
    c.stats = DMM_STATS_COUNTERS;
    c.harden = DMM_HARDEN_CHECKED;
    c.poison = false;
    c.on_error = DMM_ON_ERROR_REPORT;
#if DMM_POOL_FROZEN
    c.lock = (dmm_heap_lock)DMM_POOL_FROZEN_LOCK;
    c.stats = (dmm_heap_stats_level)DMM_POOL_FROZEN_STATS;
    c.harden = (dmm_heap_harden)DMM_POOL_FROZEN_HARDEN;
    c.poison = DMM_POOL_FROZEN_POISON != 0;
#endif
    return c;
}

dmm_status dmm_pool_config_check(const dmm_pool_config *cfg, const char **reason)
{
    const char *why = NULL;
    if (!cfg) {
        if (reason)
            *reason = "no config";
        return DMM_E_NULL;
    }
    const dmm_field *bad = dmm_fields_check(pool_fields, NFIELDS, cfg);
    if (bad)
        why = bad->range;
    else if (cfg->block_size == 0)
        why = "block must be at least 1 byte";
    else if (cfg->align != 0 && !dmm_is_pow2(cfg->align))
        why = "align must be a power of two up to 65536 (0 = the vector width)";
    else if (cfg->block_size > SIZE_MAX / 4)
        why = "block is too large";
    else if (cfg->lock == DMM_LOCK_MUTEX && !dmm_port_has_mutex())
        why = "lock=mutex needs a port with mutexes";
    else if (cfg->lock == DMM_LOCK_USER && (!cfg->lock_hooks.lock || !cfg->lock_hooks.unlock))
        why = "lock=user needs lock_hooks.lock and lock_hooks.unlock";
#if DMM_POOL_FROZEN
    else if (cfg->lock != (dmm_heap_lock)DMM_POOL_FROZEN_LOCK || cfg->stats != (dmm_heap_stats_level)DMM_POOL_FROZEN_STATS ||
             cfg->harden != (dmm_heap_harden)DMM_POOL_FROZEN_HARDEN || cfg->poison != (DMM_POOL_FROZEN_POISON != 0))
        why = "this library's pool is frozen: lock, stats, harden and poison must be the frozen values";
#endif
    if (reason)
        *reason = why;
    return why ? DMM_E_CONFIG : DMM_OK;
}

dmm_status dmm_pool_config_parse(const char *text, dmm_pool_config *cfg, const char **err)
{
    if (!text || !cfg) {
        if (err)
            *err = "no text or no config";
        return DMM_E_NULL;
    }
    dmm_pool_config c = *cfg;
    const char *e = dmm_fields_parse(pool_fields, NFIELDS, text, &c, NULL, NULL);
    if (!e) {
        /* The hooks are not part of the text: lock=user is accepted here
         * and the caller sets them before init. */
        dmm_pool_config probe = c;
        if (probe.lock == DMM_LOCK_USER && !probe.lock_hooks.lock)
            probe.lock = DMM_LOCK_SPIN;
        const char *why = NULL;
        if (dmm_pool_config_check(&probe, &why) != DMM_OK)
            e = why ? why : "invalid configuration";
    }
    if (e) {
        if (err)
            *err = e;
        return DMM_E_CONFIG;
    }
    *cfg = c;
    if (err)
        *err = NULL;
    return DMM_OK;
}

size_t dmm_pool_config_format(const dmm_pool_config *cfg, char *buf, size_t cap)
{
    return dmm_fields_format(pool_fields, NFIELDS, cfg, buf, cap);
}

size_t dmm_pool_config_header(const dmm_pool_config *cfg, const char *name, char *buf, size_t cap)
{
    return dmm_fields_header(pool_fields, NFIELDS, cfg, name, "a frozen dmm pool configuration (DMM_POOL_CONFIG_HEADER)",
                             buf, cap);
}

size_t dmm_pool_config_fields_json(char *buf, size_t cap)
{
    dmm_pool_config d = dmm_pool_default_config();
    return dmm_fields_json(pool_fields, NFIELDS, &d, buf, cap);
}

static const dmm_stat pool_stats[] = {
    DMM_STAT_INIT(dmm_pool_stats, alloc_count, "alloc_count"),
    DMM_STAT_INIT(dmm_pool_stats, free_count, "free_count"),
    DMM_STAT_INIT(dmm_pool_stats, failed_count, "failed_count"),
    DMM_STAT_INIT(dmm_pool_stats, error_count, "error_count"),
    DMM_STAT_INIT(dmm_pool_stats, wait_count, "wait_count"),
    DMM_STAT_INIT(dmm_pool_stats, timeout_count, "timeout_count"),
    DMM_STAT_INIT(dmm_pool_stats, handoff_count, "handoff_count"),
    DMM_STAT_INIT(dmm_pool_stats, capacity, "capacity"),
    DMM_STAT_INIT(dmm_pool_stats, live_blocks, "live_blocks"),
    DMM_STAT_INIT(dmm_pool_stats, peak_blocks, "peak_blocks"),
    DMM_STAT_INIT(dmm_pool_stats, waiting, "waiting"),
    DMM_STAT_INIT(dmm_pool_stats, block_size, "block_size"),
    DMM_STAT_INIT(dmm_pool_stats, stride, "stride"),
    DMM_STAT_INIT(dmm_pool_stats, footprint, "footprint"),
    DMM_STAT_INIT(dmm_pool_stats, meta_bytes, "meta_bytes"),
    DMM_STAT_INIT(dmm_pool_stats, align_waste, "align_waste"),
};
_Static_assert(sizeof pool_stats / sizeof pool_stats[0] * sizeof(uint64_t) == sizeof(dmm_pool_stats) ||
                   sizeof(size_t) != sizeof(uint64_t),
               "every member of dmm_pool_stats is in the stats table");

size_t dmm_pool_stats_json(const dmm_pool_stats *st, char *buf, size_t cap)
{
    return dmm_stats_json(pool_stats, (unsigned)(sizeof pool_stats / sizeof pool_stats[0]), st, buf, cap);
}

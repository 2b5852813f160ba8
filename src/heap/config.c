/*
 * src/heap/config.c - the configuration space: defaults, presets,
 * validation, text form, and the sizes derived from a configuration.
 */
#include "../core/text.h"
#include "heap_internal.h"

/* ---- names ------------------------------------------------------------ */

static const char *const org_names[] = {"single", "exact", "geometric", "tlsf"};
static const char *const links_names[] = {"singly", "doubly"};
static const char *const order_names[] = {"lifo", "fifo", "address", "size"};
static const char *const fit_names[] = {"first", "next", "best", "exact", "good"};
static const char *const coalesce_names[] = {"off", "immediate", "deferred"};
static const char *const lock_names[] = {"none", "spin", "mutex", "user"};
static const char *const stats_names[] = {"off", "counters", "full"};
static const char *const harden_names[] = {"off", "checked", "canary", "paranoid"};
static const char *const policy_names[] = {"report", "abort"};
static const char *const bool_names[] = {"off", "on"};
static const char *const preset_names[] = {"dlmalloc", "tlsf", "halffit", "firstfit", "p2012"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- defaults and presets -------------------------------------------- */

static dmm_heap_config base_config(void)
{
    dmm_heap_config c;
    c.org = DMM_ORG_TLSF;
    c.sl_bits = 4;
    c.exact_max = 256;
    c.links = DMM_LINKS_DOUBLY;
    c.order = DMM_ORDER_LIFO;
    c.fit = DMM_FIT_GOOD;
    c.split = true;
    c.split_min = 0;
    c.coalesce = DMM_COALESCE_IMMEDIATE;
    c.coalesce_max = 0;
    c.quick_max = 0;
    c.quick_limit = 0;
    c.lock = DMM_LOCK_NONE;
    c.lock_hooks.lock = NULL;
    c.lock_hooks.unlock = NULL;
    c.lock_hooks.ctx = NULL;
    c.stats = DMM_STATS_COUNTERS;
    c.harden = DMM_HARDEN_CHECKED;
    c.poison = false;
    c.on_error = DMM_ON_ERROR_REPORT;
    c.error_fn = NULL;
    c.error_ctx = NULL;
    c.grow_granularity = 0;
    c.release_empty = false;
    c.max_block_log2 = 0;
    c.cookie = 0;
    return c;
}

dmm_heap_config dmm_heap_default_config(void) { return base_config(); }

dmm_heap_config dmm_heap_preset_config(dmm_heap_preset p)
{
    dmm_heap_config c = base_config();
    switch (p) {
    case DMM_PRESET_DLMALLOC:
        /* dlmalloc 2.8: exact small bins below 256 bytes, two bins per power
         * of two above, best fit, immediate coalescing, fast bins. */
        c.org = DMM_ORG_SEG_EXACT;
        c.exact_max = 256;
        c.sl_bits = 1;
        c.order = DMM_ORDER_FIFO;
        c.fit = DMM_FIT_BEST;
        c.quick_max = 8 * sizeof(void *);
        break;
    case DMM_PRESET_TLSF:
        break; /* the base config is TLSF */
    case DMM_PRESET_HALFFIT:
        c.org = DMM_ORG_SEG_GEOMETRIC;
        c.sl_bits = 0;
        c.fit = DMM_FIT_GOOD;
        break;
    case DMM_PRESET_FIRSTFIT:
        c.org = DMM_ORG_SINGLE;
        c.order = DMM_ORDER_ADDRESS;
        c.fit = DMM_FIT_FIRST;
        break;
    case DMM_PRESET_P2012:
        c.org = DMM_ORG_SINGLE;
        c.links = DMM_LINKS_SINGLY;
        c.order = DMM_ORDER_LIFO;
        c.fit = DMM_FIT_FIRST;
        c.split = false;
        c.coalesce = DMM_COALESCE_OFF;
        break;
    default:
        break;
    }
    return c;
}

const char *dmm_heap_preset_name(dmm_heap_preset p)
{
    return (unsigned)p < COUNT(preset_names) ? preset_names[p] : NULL;
}

dmm_status dmm_heap_preset_from_name(const char *name, dmm_heap_preset *out)
{
    if (!name || !out)
        return DMM_E_NULL;
    for (unsigned i = 0; i < COUNT(preset_names); i++)
        if (dmm_streq(name, preset_names[i])) {
            *out = (dmm_heap_preset)i;
            return DMM_OK;
        }
    return DMM_E_RANGE;
}

/* ---- validation -------------------------------------------------------- */

/* Validation returns a code; only dmm_heap_config_check turns it into a
 * sentence, so a firmware that never asks for the reason links none of the
 * text (init validates through dmm__config_verdict). */
enum verdict {
    V_OK = 0,
    V_NULL,
    V_ORG,
    V_LINKS,
    V_ORDER,
    V_FIT,
    V_COALESCE,
    V_LOCK,
    V_STATS,
    V_HARDEN,
    V_ON_ERROR,
    V_SL_BITS,
    V_EXACT_MAX,
    V_NEXT_FIT,
    V_GOOD_FIT,
    V_QUICK_MAX,
    V_QUICK_LIMIT,
    V_COALESCE_MAX_OFF,
    V_COALESCE_MAX_SMALL,
    V_USER_LOCK,
    V_RELEASE_EMPTY,
    V_MAX_BLOCK,
    V_MUTEX,
    V_GROW,
    V_FROZEN,
    V_COUNT
};

static const char *const verdict_text[V_COUNT] = {
    [V_OK] = NULL,
    [V_NULL] = "config is NULL",
    [V_ORG] = "org out of range",
    [V_LINKS] = "links out of range",
    [V_ORDER] = "order out of range",
    [V_FIT] = "fit out of range",
    [V_COALESCE] = "coalesce out of range",
    [V_LOCK] = "lock out of range",
    [V_STATS] = "stats out of range",
    [V_HARDEN] = "harden out of range",
    [V_ON_ERROR] = "on_error out of range",
    [V_SL_BITS] = "sl_bits must be 0..5",
    [V_EXACT_MAX] = "exact_max must be a power of two between 4*DMM_HEAP_ALIGN and 65536",
    [V_NEXT_FIT] = "next fit needs a single free list (org=single)",
    [V_GOOD_FIT] = "good fit needs segregated bins (org exact, geometric or tlsf)",
    [V_QUICK_MAX] = "quick_max must be at most 4096 bytes",
    [V_QUICK_LIMIT] = "quick_limit set without quick lists (quick_max=0)",
    [V_COALESCE_MAX_OFF] = "coalesce_max set while coalescing is off",
    [V_COALESCE_MAX_SMALL] = "coalesce_max is smaller than two minimum blocks",
    [V_USER_LOCK] = "lock=user needs lock_hooks.lock and lock_hooks.unlock",
    [V_RELEASE_EMPTY] = "release_empty needs growth (grow_granularity > 0)",
    [V_MAX_BLOCK] = "max_block_log2 out of range",
    [V_MUTEX] = "lock=mutex needs a port with mutexes (this port has none)",
    [V_GROW] = "growth needs a port with OS pages (this port has none)",
    [V_FROZEN] = "config differs from the one this library was frozen to",
};

static unsigned verdict_of(const dmm_heap_config *c)
{
    if (!c)
        return V_NULL;
    if ((unsigned)c->org >= COUNT(org_names))
        return V_ORG;
    if ((unsigned)c->links >= COUNT(links_names))
        return V_LINKS;
    if ((unsigned)c->order >= COUNT(order_names))
        return V_ORDER;
    if ((unsigned)c->fit >= COUNT(fit_names))
        return V_FIT;
    if ((unsigned)c->coalesce >= COUNT(coalesce_names))
        return V_COALESCE;
    if ((unsigned)c->lock >= COUNT(lock_names))
        return V_LOCK;
    if ((unsigned)c->stats >= COUNT(stats_names))
        return V_STATS;
    if ((unsigned)c->harden >= COUNT(harden_names))
        return V_HARDEN;
    if ((unsigned)c->on_error >= COUNT(policy_names))
        return V_ON_ERROR;
    if (c->sl_bits > 5)
        return V_SL_BITS;
    if (c->org == DMM_ORG_SEG_EXACT &&
        (!dmm_is_pow2(c->exact_max) || c->exact_max < 4 * GRAN || c->exact_max > ((size_t)1 << 16)))
        return V_EXACT_MAX;
    if (c->fit == DMM_FIT_NEXT && c->org != DMM_ORG_SINGLE)
        return V_NEXT_FIT;
    if (c->fit == DMM_FIT_GOOD && c->org == DMM_ORG_SINGLE)
        return V_GOOD_FIT;
    if (c->quick_max > 4096)
        return V_QUICK_MAX;
    if (c->quick_max == 0 && c->quick_limit != 0)
        return V_QUICK_LIMIT;
    if (c->coalesce == DMM_COALESCE_OFF && c->coalesce_max != 0)
        return V_COALESCE_MAX_OFF;
    if (c->coalesce_max != 0 && c->coalesce_max < 2 * MINB)
        return V_COALESCE_MAX_SMALL;
    if (c->lock == DMM_LOCK_USER && (!c->lock_hooks.lock || !c->lock_hooks.unlock))
        return V_USER_LOCK;
    if (c->release_empty && c->grow_granularity == 0)
        return V_RELEASE_EMPTY;
    if (c->max_block_log2 != 0 &&
        (c->max_block_log2 < dmm_log2_floor(MINB) + 1u || c->max_block_log2 > DMM_WORD_BITS - 1u))
        return V_MAX_BLOCK;
    if (c->lock == DMM_LOCK_MUTEX && !dmm_port_has_mutex())
        return V_MUTEX;
    if (c->grow_granularity != 0 && dmm_port_page_size() == 0)
        return V_GROW;
#if DMM_HEAP_FROZEN
    if (c->org != DMM_FROZEN_ORG || c->links != DMM_FROZEN_LINKS || c->order != DMM_FROZEN_ORDER ||
        c->fit != DMM_FROZEN_FIT || c->split != (bool)DMM_FROZEN_SPLIT || c->coalesce != DMM_FROZEN_COALESCE ||
        (c->quick_max != 0) != (DMM_FROZEN_QUICK_MAX != 0) || c->lock != DMM_FROZEN_LOCK ||
        c->stats != DMM_FROZEN_STATS || c->harden != DMM_FROZEN_HARDEN ||
        c->poison != (bool)DMM_FROZEN_POISON ||
        (c->grow_granularity != 0) != (DMM_FROZEN_GROW_GRANULARITY != 0))
        return V_FROZEN;
#endif
    return V_OK;
}

static dmm_status status_of(unsigned v)
{
    if (v == V_OK)
        return DMM_OK;
    if (v == V_NULL)
        return DMM_E_NULL;
    if (v == V_MUTEX || v == V_GROW)
        return DMM_E_UNSUPPORTED;
    return DMM_E_CONFIG;
}

dmm_status dmm__config_verdict(const dmm_heap_config *c) { return status_of(verdict_of(c)); }

dmm_status dmm_heap_config_check(const dmm_heap_config *c, const char **reason)
{
    unsigned v = verdict_of(c);
    if (reason)
        *reason = verdict_text[v];
    return status_of(v);
}

int dmm_heap_is_frozen(void) { return DMM_HEAP_FROZEN; }


/* ---- text form ----------------------------------------------------------- */

static int lookup(const char *v, size_t n, const char *const *names, unsigned count, unsigned *out)
{
    for (unsigned i = 0; i < count; i++)
        if (dmm_token_eq(v, n, names[i])) {
            *out = i;
            return 0;
        }
    return -1;
}

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

static const char *apply(dmm_heap_config *c, const char *k, size_t kn, const char *v, size_t vn)
{
    unsigned e;
    uint64_t n;
#define ENUM_KEY(key, names, field, type)                                                                    \
    if (dmm_token_eq(k, kn, key)) {                                                                          \
        if (lookup(v, vn, names, COUNT(names), &e))                                                          \
            return "bad value for " key;                                                                     \
        c->field = (type)e;                                                                                  \
        return NULL;                                                                                         \
    }
#define BOOL_KEY(key, field)                                                                                 \
    if (dmm_token_eq(k, kn, key)) {                                                                          \
        if (lookup(v, vn, bool_names, 2, &e))                                                                \
            return "bad value for " key " (on or off)";                                                      \
        c->field = e != 0;                                                                                   \
        return NULL;                                                                                         \
    }
#define SIZE_KEY(key, field, type, max)                                                                      \
    if (dmm_token_eq(k, kn, key)) {                                                                          \
        if (dmm_parse_size(v, vn, &n) || n > (uint64_t)(max))                                                \
            return "bad number for " key;                                                                    \
        c->field = (type)n;                                                                                  \
        return NULL;                                                                                         \
    }
    if (dmm_token_eq(k, kn, "preset")) {
        if (lookup(v, vn, preset_names, COUNT(preset_names), &e))
            return "unknown preset (dlmalloc, tlsf, halffit, firstfit, p2012)";
        {
            dmm_heap_config p = dmm_heap_preset_config((dmm_heap_preset)e);
            /* keep what a preset does not choose */
            p.lock_hooks = c->lock_hooks;
            p.error_fn = c->error_fn;
            p.error_ctx = c->error_ctx;
            *c = p;
        }
        return NULL;
    }
    ENUM_KEY("org", org_names, org, dmm_heap_org)
    ENUM_KEY("links", links_names, links, dmm_heap_links)
    ENUM_KEY("order", order_names, order, dmm_heap_order)
    ENUM_KEY("fit", fit_names, fit, dmm_heap_fit)
    ENUM_KEY("coalesce", coalesce_names, coalesce, dmm_heap_coalesce)
    ENUM_KEY("lock", lock_names, lock, dmm_heap_lock)
    ENUM_KEY("stats", stats_names, stats, dmm_heap_stats_level)
    ENUM_KEY("harden", harden_names, harden, dmm_heap_harden)
    ENUM_KEY("on_error", policy_names, on_error, dmm_error_policy)
    BOOL_KEY("split", split)
    BOOL_KEY("poison", poison)
    BOOL_KEY("release_empty", release_empty)
    SIZE_KEY("sl_bits", sl_bits, unsigned, 64)
    SIZE_KEY("exact_max", exact_max, size_t, SIZE_MAX)
    SIZE_KEY("split_min", split_min, size_t, SIZE_MAX)
    SIZE_KEY("coalesce_max", coalesce_max, size_t, SIZE_MAX)
    SIZE_KEY("quick_max", quick_max, size_t, SIZE_MAX)
    SIZE_KEY("quick_limit", quick_limit, unsigned, 0xFFFFFFFFu)
    SIZE_KEY("grow", grow_granularity, size_t, SIZE_MAX)
    SIZE_KEY("max_block_log2", max_block_log2, unsigned, 64)
    SIZE_KEY("cookie", cookie, uintptr_t, UINTPTR_MAX)
#undef ENUM_KEY
#undef BOOL_KEY
#undef SIZE_KEY
    return "unknown key";
}

dmm_status dmm_heap_config_parse(const char *text, dmm_heap_config *out, const char **err)
{
    dmm_heap_config c;
    const char *s = text;
    if (!text || !out) {
        if (err)
            *err = "NULL argument";
        return DMM_E_NULL;
    }
    c = *out;
    while (*s) {
        const char *k, *v, *end;
        size_t kn, vn;
        const char *why;
        while (is_space(*s) || *s == ',')
            s++;
        if (!*s)
            break;
        k = s;
        while (*s && *s != '=' && *s != ',')
            s++;
        if (*s != '=') {
            if (err)
                *err = "expected key=value";
            return DMM_E_CONFIG;
        }
        end = s;
        while (end > k && is_space(end[-1]))
            end--;
        kn = (size_t)(end - k);
        s++;
        while (is_space(*s))
            s++;
        v = s;
        while (*s && *s != ',')
            s++;
        end = s;
        while (end > v && is_space(end[-1]))
            end--;
        vn = (size_t)(end - v);
        why = apply(&c, k, kn, v, vn);
        if (why) {
            if (err)
                *err = why;
            return DMM_E_CONFIG;
        }
    }
    *out = c;
    if (err)
        *err = NULL;
    return DMM_OK;
}

static void kv_str(dmm_text *t, const char *k, const char *v)
{
    if (t->len)
        dmm_text_char(t, ',');
    dmm_text_str(t, k);
    dmm_text_char(t, '=');
    dmm_text_str(t, v);
}

static void kv_num(dmm_text *t, const char *k, uint64_t v)
{
    if (t->len)
        dmm_text_char(t, ',');
    dmm_text_str(t, k);
    dmm_text_char(t, '=');
    dmm_text_u64(t, v);
}

#define NAME(arr, v) ((unsigned)(v) < COUNT(arr) ? arr[(unsigned)(v)] : "?")

size_t dmm_heap_config_format(const dmm_heap_config *c, char *buf, size_t cap)
{
    dmm_text t;
    dmm_text_init(&t, buf, cap);
    if (!c)
        return 0;
    kv_str(&t, "org", NAME(org_names, c->org));
    kv_num(&t, "sl_bits", c->sl_bits);
    kv_num(&t, "exact_max", c->exact_max);
    kv_str(&t, "links", NAME(links_names, c->links));
    kv_str(&t, "order", NAME(order_names, c->order));
    kv_str(&t, "fit", NAME(fit_names, c->fit));
    kv_str(&t, "split", c->split ? "on" : "off");
    kv_num(&t, "split_min", c->split_min);
    kv_str(&t, "coalesce", NAME(coalesce_names, c->coalesce));
    kv_num(&t, "coalesce_max", c->coalesce_max);
    kv_num(&t, "quick_max", c->quick_max);
    kv_num(&t, "quick_limit", c->quick_limit);
    kv_str(&t, "lock", NAME(lock_names, c->lock));
    kv_str(&t, "stats", NAME(stats_names, c->stats));
    kv_str(&t, "harden", NAME(harden_names, c->harden));
    kv_str(&t, "poison", c->poison ? "on" : "off");
    kv_str(&t, "on_error", NAME(policy_names, c->on_error));
    kv_num(&t, "grow", c->grow_granularity);
    kv_str(&t, "release_empty", c->release_empty ? "on" : "off");
    kv_num(&t, "max_block_log2", c->max_block_log2);
    kv_num(&t, "cookie", c->cookie);
    return t.len;
}

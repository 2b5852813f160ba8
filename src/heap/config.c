/*
 * src/heap/config.c - the configuration space: defaults, presets,
 * validation, text form, frozen header.  Per-field code is generated from
 * the field list in heap_fields.h; the presets and the cross-field rules
 * are written out here.
 */
#include "../core/fields.h"
#include "../core/text.h"
#include "heap_fields.h"
#include "heap_internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- value names, from the value lists -------------------------------------- */

#define HF_V_NAME(L, name, c) #name,
#define HF_V_CONST(L, name, c) #c,
#define HF_V_IDX(L, name, c) hf_idx_##L##_##name,
#define HF_V_ASSERT(L, name, c)                                                                              \
    _Static_assert((int)(c) == (int)hf_idx_##L##_##name, #c " must equal its index in DMM_HEAP_" #L "_VALUES");

#define HF_E(key, member, type, VALUES, def, fz, m, help)                                                   \
    static const char *const key##_names[] = {DMM_HEAP_##VALUES##_VALUES(HF_V_NAME)};                        \
    static const char *const key##_consts[] = {DMM_HEAP_##VALUES##_VALUES(HF_V_CONST)};                      \
    enum { DMM_HEAP_##VALUES##_VALUES(HF_V_IDX) hf_idx_##VALUES##_count };                                   \
    DMM_HEAP_##VALUES##_VALUES(HF_V_ASSERT)
#define HF_NONE(...)
DMM_HEAP_CONFIG_FIELDS(HF_E, HF_NONE, HF_NONE, HF_NONE, HF_NONE)
#undef HF_E

static const char *const preset_names[] = {"dlmalloc", "tlsf", "halffit", "firstfit", "p2012"};

/* ---- the list against the public struct ------------------------------------------
 * A struct laid out from the list must have the same size as dmm_heap_config
 * and every member the same offset, size and type: a member added to one and
 * not to the other, reordered or retyped, fails the build here.  (A member
 * that fits entirely in padding would escape the size check; the C++ test
 * ConfigFields.ListCoversTheStruct counts the members.) */

#define HF_MIRROR_E(key, member, type, VALUES, def, fz, m, help) type member;
#define HF_MIRROR_B(key, member, def, fz, m, help) bool member;
#define HF_MIRROR_N(key, member, KIND, def, pmax, fz, m, help) DMM_HEAP_KIND_TYPE_##KIND member;
#define HF_MIRROR_R(key, member, KIND, def, pmax, cmax, msg, fz, m, help) DMM_HEAP_KIND_TYPE_##KIND member;
#define HF_MIRROR_H(member, type) type member;
struct hf_mirror {
    DMM_HEAP_CONFIG_FIELDS(HF_MIRROR_E, HF_MIRROR_B, HF_MIRROR_N, HF_MIRROR_R, HF_MIRROR_H)
};
_Static_assert(sizeof(struct hf_mirror) == sizeof(dmm_heap_config),
               "DMM_HEAP_CONFIG_FIELDS and dmm_heap_config differ (a member missing from one of them?)");

#define HF_MEMBER(member) (((dmm_heap_config *)0)->member)
#define HF_SAME(member, type)                                                                                \
    _Static_assert(offsetof(dmm_heap_config, member) == offsetof(struct hf_mirror, member) &&                \
                       sizeof(HF_MEMBER(member)) == sizeof(type) && _Generic(HF_MEMBER(member), type: 1, default: 0), \
                   "dmm_heap_config." #member ": offset, size or type differs from DMM_HEAP_CONFIG_FIELDS");
#define HF_SAME_E(key, member, type, VALUES, def, fz, m, help) HF_SAME(member, type)
#define HF_SAME_B(key, member, def, fz, m, help) HF_SAME(member, bool)
#define HF_SAME_N(key, member, KIND, def, pmax, fz, m, help) HF_SAME(member, DMM_HEAP_KIND_TYPE_##KIND)
#define HF_SAME_R(key, member, KIND, def, pmax, cmax, msg, fz, m, help) HF_SAME(member, DMM_HEAP_KIND_TYPE_##KIND)
#define HF_SAME_H(member, type)                                                                              \
    _Static_assert(offsetof(dmm_heap_config, member) == offsetof(struct hf_mirror, member) &&                \
                       sizeof(HF_MEMBER(member)) == sizeof(type),                                             \
                   "dmm_heap_config." #member ": offset or size differs from DMM_HEAP_CONFIG_FIELDS");
DMM_HEAP_CONFIG_FIELDS(HF_SAME_E, HF_SAME_B, HF_SAME_N, HF_SAME_R, HF_SAME_H)

/* ---- the descriptor table ------------------------------------------------------ */

#define HF_MACRO_RUNTIME(name) NULL
#define HF_MACRO_VALUE(name) "DMM_FROZEN_" name
#define HF_MACRO_FIXED(name) "DMM_FROZEN_" name
#define HF_MACRO_ONOFF(name) "DMM_FROZEN_" name
#define HF_FZ(fz) HF_FZ_##fz
#define HF_FZ_RUNTIME DMM_FIELD_RUNTIME
#define HF_FZ_VALUE DMM_FIELD_FROZEN_VALUE
#define HF_FZ_FIXED DMM_FIELD_FROZEN_FIXED
#define HF_FZ_ONOFF DMM_FIELD_FROZEN_ONOFF

#define HF_DESC_E(key, member, type, VALUES, def, fz, m, help)                                              \
    DMM_FIELD_ENUM_INIT(dmm_heap_config, member, #key, key##_names, key##_consts, HF_FZ(fz), HF_MACRO_##fz(#m), help),
#define HF_DESC_B(key, member, def, fz, m, help)                                                             \
    DMM_FIELD_BOOL_INIT(dmm_heap_config, member, #key, HF_FZ(fz), HF_MACRO_##fz(#m), help),
#define HF_DESC_N(key, member, KIND, def, pmax, fz, m, help)                                                 \
    DMM_FIELD_NUM_INIT(dmm_heap_config, member, #key, DMM_FIELD_##KIND, pmax, pmax, NULL, HF_FZ(fz),         \
                       HF_MACRO_##fz(#m), help),
#define HF_DESC_R(key, member, KIND, def, pmax, cmax, msg, fz, m, help)                                      \
    DMM_FIELD_NUM_INIT(dmm_heap_config, member, #key, DMM_FIELD_##KIND, pmax, cmax, msg, HF_FZ(fz),          \
                       HF_MACRO_##fz(#m), help),
static const dmm_field heap_fields[] = {
    DMM_HEAP_CONFIG_FIELDS(HF_DESC_E, HF_DESC_B, HF_DESC_N, HF_DESC_R, HF_NONE)
};

/* ---- defaults and presets -------------------------------------------- */

#define HF_DEF_E(key, member, type, VALUES, def, fz, m, help) c.member = (type)(def);
#define HF_DEF_B(key, member, def, fz, m, help) c.member = (def);
#define HF_DEF_N(key, member, KIND, def, pmax, fz, m, help) c.member = (DMM_HEAP_KIND_TYPE_##KIND)(def);
#define HF_DEF_R(key, member, KIND, def, pmax, cmax, msg, fz, m, help) c.member = (DMM_HEAP_KIND_TYPE_##KIND)(def);

static dmm_heap_config base_config(void)
{
    dmm_heap_config c = {0}; /* the H members (hooks, callbacks): NULL */
    DMM_HEAP_CONFIG_FIELDS(HF_DEF_E, HF_DEF_B, HF_DEF_N, HF_DEF_R, HF_NONE)
    return c;
}

dmm_heap_config dmm_heap_default_config(void) { return base_config(); }

dmm_heap_config dmm_heap_preset_config(dmm_heap_preset p)
{
    dmm_heap_config c = base_config();
    switch (p) {
    case DMM_PRESET_DLMALLOC:
        /* dlmalloc 2.8: exact small bins below 256 bytes, best fit,
         * immediate coalescing, fast bins.  Above 256 bytes 16 bins per
         * power of two (dlmalloc keeps its large bins as size-sorted
         * tries; with two bins per power of two, as here before issue 25,
         * best fit scanned long lists: 310 instructions per malloc on the
         * heap_v2 kernels workload against 218). */
        c.org = DMM_ORG_SEG_EXACT;
        c.exact_max = 256;
        c.sl_bits = 4;
        c.order = DMM_ORDER_FIFO;
        c.fit = DMM_FIT_BEST;
        c.quick_max = 64; /* the same on every target: frozen headers are shared */
        c.victim = true;  /* dlmalloc 2.8's "designated victim" (engine/victim.h) */
        break;
    case DMM_PRESET_TLSF:
        break; /* the base config is TLSF */
    case DMM_PRESET_HALFFIT:
        c.org = DMM_ORG_SEG_GEOMETRIC;
        c.sl_bits = 0;
        c.fit = DMM_FIT_GOOD;
        break;
    case DMM_PRESET_FIRSTFIT:
        /* address-ordered first fit in O(log n); org=single is the list form */
        c.org = DMM_ORG_ADDRTREE;
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
/* Per-field verdicts come from the list (V_F_<key>, one per E and R entry,
 * in list order); the cross-field ones follow. */
#define HF_VERDICT_E(key, member, type, VALUES, def, fz, m, help) V_F_##key,
#define HF_VERDICT_R(key, member, KIND, def, pmax, cmax, msg, fz, m, help) V_F_##key,
enum verdict {
    V_OK = 0,
    V_NULL,
    DMM_HEAP_CONFIG_FIELDS(HF_VERDICT_E, HF_NONE, HF_NONE, HF_VERDICT_R, HF_NONE)
    V_EXACT_MAX,
    V_NEXT_FIT,
    V_GOOD_FIT,
    V_ADDRTREE,
    V_QUICK_LIMIT,
    V_VICTIM,
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

#define HF_TEXT_E(key, member, type, VALUES, def, fz, m, help) [V_F_##key] = #key " out of range",
#define HF_TEXT_R(key, member, KIND, def, pmax, cmax, msg, fz, m, help) [V_F_##key] = msg,
static const char *const verdict_text[V_COUNT] = {
    [V_OK] = NULL,
    [V_NULL] = "config is NULL",
    DMM_HEAP_CONFIG_FIELDS(HF_TEXT_E, HF_NONE, HF_NONE, HF_TEXT_R, HF_NONE)
    [V_EXACT_MAX] = "exact_max must be a power of two between 4*DMM_HEAP_ALIGN and 65536",
    [V_NEXT_FIT] = "next fit needs a single free list (org=single)",
    [V_GOOD_FIT] = "good fit needs segregated bins (org exact, geometric or tlsf)",
    [V_ADDRTREE] = "org=addrtree is address-ordered first fit: it needs fit=first and order=address",
    [V_QUICK_LIMIT] = "quick_limit set without quick lists (quick_max=0)",
    [V_VICTIM] = "victim=on needs segregated bins (org exact, geometric or tlsf) and split=on",
    [V_COALESCE_MAX_OFF] = "coalesce_max set while coalescing is off",
    [V_COALESCE_MAX_SMALL] = "coalesce_max is smaller than two minimum blocks",
    [V_USER_LOCK] = "lock=user needs lock_hooks.lock and lock_hooks.unlock",
    [V_RELEASE_EMPTY] = "release_empty needs growth (grow_granularity > 0)",
    [V_MAX_BLOCK] = "max_block_log2 out of range",
    [V_MUTEX] = "lock=mutex needs a port with mutexes (this port has none)",
    [V_GROW] = "growth needs a port with OS pages (this port has none)",
    [V_FROZEN] = "config differs from the one this library was frozen to",
};

/* The range checks are generated as code, not as a walk over heap_fields:
 * init validates through here, and a firmware that only calls init and
 * malloc then links neither the table nor its strings. */
#define HF_CHECK_E(key, member, type, VALUES, def, fz, m, help)                                             \
    if ((unsigned)c->member >= COUNT(key##_names))                                                           \
        return V_F_##key;
#define HF_CHECK_R(key, member, KIND, def, pmax, cmax, msg, fz, m, help)                                     \
    if (c->member > (cmax))                                                                                  \
        return V_F_##key;

/* A frozen build accepts only configs whose policy fields match. */
#define HF_FROZEN_RUNTIME(member, type, macro)
#define HF_FROZEN_VALUE(member, type, macro)
#define HF_FROZEN_FIXED(member, type, macro) || c->member != (type)(macro)
#define HF_FROZEN_ONOFF(member, type, macro) || (c->member != 0) != ((macro) != 0)
#define HF_FZCHK_E(key, member, type, VALUES, def, fz, m, help) HF_FROZEN_##fz(member, type, DMM_FROZEN_##m)
#define HF_FZCHK_B(key, member, def, fz, m, help) HF_FROZEN_##fz(member, bool, DMM_FROZEN_##m)
#define HF_FZCHK_N(key, member, KIND, def, pmax, fz, m, help) HF_FROZEN_##fz(member, DMM_HEAP_KIND_TYPE_##KIND, DMM_FROZEN_##m)
#define HF_FZCHK_R(key, member, KIND, def, pmax, cmax, msg, fz, m, help)                                     \
    HF_FROZEN_##fz(member, DMM_HEAP_KIND_TYPE_##KIND, DMM_FROZEN_##m)

/* In a frozen build inlined into both callers: init's dmm__config_verdict
 * needs only the status, so there the compiler merges the many verdicts
 * that map to one status (DMM_E_CONFIG) into one exit; only
 * dmm_heap_config_check, which names the reason, keeps them apart
 * (Cortex-M4 -Os, lean tlsf init+malloc+free: -60 B). */
#if DMM_HEAP_FROZEN
#define VERDICT_INLINE DMM_FORCE_INLINE
#else /* run-time build: one shared copy (images that link both callers) */
#define VERDICT_INLINE
#endif
static VERDICT_INLINE unsigned verdict_of(const dmm_heap_config *c)
{
    if (!c)
        return V_NULL;
#if DMM_HEAP_FROZEN
    /* First in a frozen build: once the policy fields equal the header's
     * constants, the compiler folds the range and cross-field checks on
     * them away (init validates every config through here). */
    if (0 DMM_HEAP_CONFIG_FIELDS(HF_FZCHK_E, HF_FZCHK_B, HF_FZCHK_N, HF_FZCHK_R, HF_NONE))
        return V_FROZEN;
#endif
    DMM_HEAP_CONFIG_FIELDS(HF_CHECK_E, HF_NONE, HF_NONE, HF_CHECK_R, HF_NONE)
    if (c->org == DMM_ORG_SEG_EXACT &&
        (!dmm_is_pow2(c->exact_max) || c->exact_max < 4 * GRAN || c->exact_max > ((size_t)1 << 16)))
        return V_EXACT_MAX;
    if (c->fit == DMM_FIT_NEXT && c->org != DMM_ORG_SINGLE)
        return V_NEXT_FIT;
    if (c->fit == DMM_FIT_GOOD && c->org == DMM_ORG_SINGLE)
        return V_GOOD_FIT;
    if (c->org == DMM_ORG_ADDRTREE && (c->fit != DMM_FIT_FIRST || c->order != DMM_ORDER_ADDRESS))
        return V_ADDRTREE;
    if (c->quick_max == 0 && c->quick_limit != 0)
        return V_QUICK_LIMIT;
    if (c->victim && (c->org == DMM_ORG_SINGLE || c->org == DMM_ORG_ADDRTREE || !c->split))
        return V_VICTIM;
    if (c->coalesce == DMM_COALESCE_OFF && c->coalesce_max != 0)
        return V_COALESCE_MAX_OFF;
    if (c->coalesce_max != 0 && c->coalesce_max < 2 * MINB)
        return V_COALESCE_MAX_SMALL;
    if (c->lock == DMM_LOCK_USER && (!c->lock_hooks.lock || !c->lock_hooks.unlock))
        return V_USER_LOCK;
    if (c->release_empty && c->grow_granularity == 0)
        return V_RELEASE_EMPTY;
    /* 0, or from one above the smallest block's log2 to the word size:
     * the lower bound depends on the platform, so it is not in the list */
    if (c->max_block_log2 != 0 &&
        (c->max_block_log2 < dmm_log2_floor(MINB) + 1u || c->max_block_log2 > DMM_WORD_BITS - 1u))
        return V_MAX_BLOCK;
    if (c->lock == DMM_LOCK_MUTEX && !dmm_port_has_mutex())
        return V_MUTEX;
    if (c->grow_granularity != 0 && dmm_port_page_size() == 0)
        return V_GROW;
    return V_OK;
}

static VERDICT_INLINE dmm_status status_of(unsigned v)
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


/* ---- the frozen build's default ---------------------------------------------- */

#if DMM_HEAP_FROZEN
/* A constant object rather than a function that builds it: init copies it
 * like a caller's config (Cortex-M4 -Os: 84 B of .rodata against 104 B of
 * code that zeroed a struct and stored the defaults, then the frozen
 * values, into it). */
#define HF_FZVAL_RUNTIME(def, macro) (def)
#define HF_FZVAL_VALUE(def, macro) (macro)
#define HF_FZVAL_FIXED(def, macro) (macro)
#define HF_FZVAL_ONOFF(def, macro) (macro)
#define HF_FZINIT_E(key, member, type, VALUES, def, fz, m, help) .member = (type)HF_FZVAL_##fz(def, DMM_FROZEN_##m),
#define HF_FZINIT_B(key, member, def, fz, m, help) .member = (bool)HF_FZVAL_##fz(def, DMM_FROZEN_##m),
#define HF_FZINIT_N(key, member, KIND, def, pmax, fz, m, help)                                               \
    .member = (DMM_HEAP_KIND_TYPE_##KIND)HF_FZVAL_##fz(def, DMM_FROZEN_##m),
#define HF_FZINIT_R(key, member, KIND, def, pmax, cmax, msg, fz, m, help)                                    \
    .member = (DMM_HEAP_KIND_TYPE_##KIND)HF_FZVAL_##fz(def, DMM_FROZEN_##m),
const dmm_heap_config dmm__heap_frozen_cfg = {
    DMM_HEAP_CONFIG_FIELDS(HF_FZINIT_E, HF_FZINIT_B, HF_FZINIT_N, HF_FZINIT_R, HF_NONE) /* H members: 0 */
};
#endif

/* ---- text form ----------------------------------------------------------- */

/* "preset=NAME": every field to the preset, keeping what a preset does not
 * choose (hooks and callbacks). */
static const char *apply_extra(void *ctx, void *obj, const char *k, size_t kn, const char *v, size_t vn)
{
    dmm_heap_config *c = (dmm_heap_config *)obj;
    (void)ctx;
    if (!dmm_token_eq(k, kn, "preset"))
        return dmm_fields_unknown_key;
    for (unsigned i = 0; i < COUNT(preset_names); i++)
        if (dmm_token_eq(v, vn, preset_names[i])) {
            dmm_heap_config p = dmm_heap_preset_config((dmm_heap_preset)i);
            p.lock_hooks = c->lock_hooks;
            p.error_fn = c->error_fn;
            p.error_ctx = c->error_ctx;
            *c = p;
            return NULL;
        }
    return "unknown preset (dlmalloc, tlsf, halffit, firstfit, p2012)";
}

dmm_status dmm_heap_config_parse(const char *text, dmm_heap_config *out, const char **err)
{
    dmm_heap_config c;
    const char *why;
    if (!text || !out) {
        if (err)
            *err = "NULL argument";
        return DMM_E_NULL;
    }
    c = *out;
    why = dmm_fields_parse(heap_fields, COUNT(heap_fields), text, &c, apply_extra, NULL);
    if (why) {
        if (err)
            *err = why;
        return DMM_E_CONFIG;
    }
    *out = c;
    if (err)
        *err = NULL;
    return DMM_OK;
}

size_t dmm_heap_config_format(const dmm_heap_config *c, char *buf, size_t cap)
{
    return dmm_fields_format(heap_fields, COUNT(heap_fields), c, buf, cap);
}

size_t dmm_heap_config_header(const dmm_heap_config *c, const char *name, char *buf, size_t cap)
{
    return dmm_fields_header(heap_fields, COUNT(heap_fields), c, name,
                             "a dmm heap configuration frozen at build time\n"
                             "(written by dmm_heap_config_header, e.g. dmm-config header TEXT).\n"
                             "Policy fields become constants, sizes stay run-time values, and a heap\n"
                             "built with this header refuses configs whose policies differ; see\n"
                             "docs/heap.md, \"Freezing a configuration\".",
                             buf, cap);
}

size_t dmm_heap_config_fields_json(char *buf, size_t cap)
{
    dmm_text t;
    dmm_heap_config d = base_config();
    dmm_text_init(&t, buf, cap);
    dmm_text_str(&t, "{\"component\":\"heap\",\"fields\":");
    dmm_fields_json_text(&t, heap_fields, COUNT(heap_fields), &d);
    dmm_text_str(&t, ",\"presets\":[");
    for (unsigned i = 0; i < COUNT(preset_names); i++) {
        if (i)
            dmm_text_char(&t, ',');
        dmm_text_json_str(&t, preset_names[i]);
    }
    dmm_text_str(&t, "]}");
    return t.len;
}

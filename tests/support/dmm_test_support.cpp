// tests/support/dmm_test_support.cpp - configuration helpers, patterns,
// buffers and names shared by the test binaries.
#include "dmm_test_support.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dmmt {

uint64_t mix64(uint64_t a, uint64_t b) {
    Rng r(a ^ (b * 0xA24BAED4963EE407ull) ^ 0x3C6EF372FE94F82Bull);
    r.next();
    return r.next();
}

uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *s = std::getenv(name);
    if (s == nullptr || *s == '\0')
        return dflt;
    char *end = nullptr;
    unsigned long long v = std::strtoull(s, &end, 0);
    if (end == s || *end != '\0')
        return dflt;
    return (uint64_t)v;
}

size_t scaled_ops(size_t base) {
    uint64_t v = env_u64("DMM_TEST_OPS", 0);
    return v > 0 ? (size_t)v : base;
}

uint64_t base_seed() { return env_u64("DMM_TEST_SEED", 0x5EED2012ull); }

std::string cfg_str(const dmm_heap_config &cfg) {
    char small[8];
    size_t need = dmm_heap_config_format(&cfg, small, sizeof small);
    std::string s(need + 1, '\0');
    dmm_heap_config_format(&cfg, &s[0], s.size());
    s.resize(need);
    return s;
}

bool cfg_equal(const dmm_heap_config &a, const dmm_heap_config &b, std::string *diff) {
#define DMMT_CMP(f)                                                                                \
    do {                                                                                           \
        if (!(a.f == b.f)) {                                                                       \
            if (diff)                                                                              \
                *diff = #f;                                                                        \
            return false;                                                                          \
        }                                                                                          \
    } while (0)
    DMMT_CMP(org);
    DMMT_CMP(sl_bits);
    DMMT_CMP(exact_max);
    DMMT_CMP(links);
    DMMT_CMP(order);
    DMMT_CMP(fit);
    DMMT_CMP(split);
    DMMT_CMP(split_min);
    DMMT_CMP(coalesce);
    DMMT_CMP(coalesce_max);
    DMMT_CMP(quick_max);
    DMMT_CMP(quick_limit);
    DMMT_CMP(victim);
    DMMT_CMP(lock);
    DMMT_CMP(lock_hooks.lock);
    DMMT_CMP(lock_hooks.unlock);
    DMMT_CMP(lock_hooks.ctx);
    DMMT_CMP(stats);
    DMMT_CMP(harden);
    DMMT_CMP(poison);
    DMMT_CMP(on_error);
    DMMT_CMP(error_fn);
    DMMT_CMP(error_ctx);
    DMMT_CMP(grow_granularity);
    DMMT_CMP(release_empty);
    DMMT_CMP(max_block_log2);
    DMMT_CMP(cookie);
#undef DMMT_CMP
    return true;
}

const char *org_name(dmm_heap_org o) {
    switch (o) {
    case DMM_ORG_SINGLE: return "Single";
    case DMM_ORG_SEG_EXACT: return "SegExact";
    case DMM_ORG_SEG_GEOMETRIC: return "SegGeo";
    case DMM_ORG_TLSF: return "Tlsf";
    case DMM_ORG_ADDRTREE: return "AddrTree";
    }
    return "Org?";
}
const char *links_name(dmm_heap_links l) { return l == DMM_LINKS_SINGLY ? "Singly" : "Doubly"; }
const char *order_name(dmm_heap_order o) {
    switch (o) {
    case DMM_ORDER_LIFO: return "Lifo";
    case DMM_ORDER_FIFO: return "Fifo";
    case DMM_ORDER_ADDRESS: return "Addr";
    case DMM_ORDER_SIZE: return "Size";
    }
    return "Order?";
}
const char *fit_name(dmm_heap_fit f) {
    switch (f) {
    case DMM_FIT_FIRST: return "First";
    case DMM_FIT_NEXT: return "Next";
    case DMM_FIT_BEST: return "Best";
    case DMM_FIT_EXACT: return "Exact";
    case DMM_FIT_GOOD: return "Good";
    }
    return "Fit?";
}
const char *coalesce_name(dmm_heap_coalesce c) {
    switch (c) {
    case DMM_COALESCE_OFF: return "NoCoal";
    case DMM_COALESCE_IMMEDIATE: return "Immediate";
    case DMM_COALESCE_DEFERRED: return "Deferred";
    }
    return "Coal?";
}
const char *inv_name(dmm_heap_invariant inv) {
    switch (inv) {
    case DMM_INV_NONE: return "NONE";
    case DMM_INV_CONTROL: return "CONTROL";
    case DMM_INV_REGION: return "REGION";
    case DMM_INV_BLOCK_SIZE: return "BLOCK_SIZE";
    case DMM_INV_BOUNDARY_TAG: return "BOUNDARY_TAG";
    case DMM_INV_SENTINEL: return "SENTINEL";
    case DMM_INV_CANARY: return "CANARY";
    case DMM_INV_POISON: return "POISON";
    case DMM_INV_ADJACENT_FREE: return "ADJACENT_FREE";
    case DMM_INV_LIST_LINK: return "LIST_LINK";
    case DMM_INV_LIST_BIN: return "LIST_BIN";
    case DMM_INV_LIST_ORDER: return "LIST_ORDER";
    case DMM_INV_BITMAP: return "BITMAP";
    case DMM_INV_FREE_COUNT: return "FREE_COUNT";
    case DMM_INV_QUICK: return "QUICK";
    case DMM_INV_ACCOUNTING: return "ACCOUNTING";
    }
    return "INV?";
}
const char *err_name(dmm_error_kind k) {
    switch (k) {
    case DMM_ERR_FOREIGN_POINTER: return "FOREIGN_POINTER";
    case DMM_ERR_MISALIGNED_POINTER: return "MISALIGNED_POINTER";
    case DMM_ERR_INVALID_POINTER: return "INVALID_POINTER";
    case DMM_ERR_DOUBLE_FREE: return "DOUBLE_FREE";
    case DMM_ERR_CANARY: return "CANARY";
    case DMM_ERR_POISON: return "POISON";
    case DMM_ERR_HEADER: return "HEADER";
    case DMM_ERR_FREE_LIST: return "FREE_LIST";
    }
    return "ERR?";
}

std::string Combo::name() const {
    std::string s;
    s += org_name(org);
    s += "_";
    s += links_name(links);
    s += "_";
    s += order_name(order);
    s += "_";
    s += fit_name(fit);
    s += split ? "_Split_" : "_NoSplit_";
    s += coalesce_name(coalesce);
    if (victim)
        s += "_Victim";
    return s;
}

std::vector<Combo> all_combos() {
    std::vector<Combo> v;
    unsigned idx = 0;
    for (int vi = 0; vi <= 1; ++vi)
    for (int o = DMM_ORG_SINGLE; o <= DMM_ORG_ADDRTREE; ++o)
        for (int l = DMM_LINKS_SINGLY; l <= DMM_LINKS_DOUBLY; ++l)
            for (int ord = DMM_ORDER_LIFO; ord <= DMM_ORDER_SIZE; ++ord)
                for (int f = DMM_FIT_FIRST; f <= DMM_FIT_GOOD; ++f)
                    for (int sp = 0; sp <= 1; ++sp)
                        for (int c = DMM_COALESCE_OFF; c <= DMM_COALESCE_DEFERRED; ++c) {
                            Combo k;
                            k.org = (dmm_heap_org)o;
                            k.links = (dmm_heap_links)l;
                            k.order = (dmm_heap_order)ord;
                            k.fit = (dmm_heap_fit)f;
                            k.split = sp != 0;
                            k.coalesce = (dmm_heap_coalesce)c;
                            k.victim = vi != 0;
                            k.index = idx++;
                            v.push_back(k);
                        }
    return v;
}

dmm_heap_config combo_config(const Combo &c) {
    dmm_heap_config cfg = dmm_heap_default_config();
    cfg.org = c.org;
    cfg.links = c.links;
    cfg.order = c.order;
    cfg.fit = c.fit;
    cfg.split = c.split;
    cfg.coalesce = c.coalesce;
    cfg.victim = c.victim;
    cfg.lock = DMM_LOCK_NONE;
    cfg.on_error = DMM_ON_ERROR_REPORT;
    cfg.grow_granularity = 0;
    if (c.org == DMM_ORG_SEG_EXACT && cfg.exact_max < 4 * DMM_HEAP_ALIGN)
        cfg.exact_max = 16 * DMM_HEAP_ALIGN;
    return cfg;
}

std::vector<Combo> valid_combos() {
    std::vector<Combo> out;
    for (const Combo &c : all_combos()) {
        dmm_heap_config cfg = combo_config(c);
        if (dmm_heap_config_check(&cfg, nullptr) == DMM_OK)
            out.push_back(c);
    }
    return out;
}

static Knobs draw_knobs(const Combo &c, Rng &r) {
    Knobs k;
    if (r.chance(50)) {
        static const std::vector<size_t> qm = {16, 32, 64, 128, 256};
        k.quick_max = r.pick(qm);
        static const std::vector<unsigned> ql = {0, 1, 4, 16};
        k.quick_limit = r.pick(ql);
    }
    k.stats = (dmm_heap_stats_level)r.below(3);
    k.harden = (dmm_heap_harden)r.below(4);
    k.poison = r.chance(50);
    if (c.split) {
        static const std::vector<size_t> sm = {0, 1, 16, 32, 48, 64, 256};
        k.split_min = r.pick(sm);
    }
    if (c.coalesce != DMM_COALESCE_OFF && r.chance(40)) {
        static const std::vector<size_t> cm = {128, 512, 1024, 4096};
        k.coalesce_max = r.pick(cm);
    }
    if (c.org != DMM_ORG_SINGLE)
        k.sl_bits = (unsigned)r.below(6);
    if (c.org == DMM_ORG_SEG_EXACT) {
        static const std::vector<size_t> em = {4 * DMM_HEAP_ALIGN, 8 * DMM_HEAP_ALIGN,
                                               16 * DMM_HEAP_ALIGN, 64 * DMM_HEAP_ALIGN};
        k.exact_max = r.pick(em);
    }
    unsigned lk = (unsigned)r.below(10);
    k.lock = lk < 7 ? DMM_LOCK_NONE : lk < 9 ? DMM_LOCK_SPIN : DMM_LOCK_MUTEX;
    if (r.chance(20)) {
        static const std::vector<size_t> gg = {4096, 16384, 65536};
        k.grow_granularity = r.pick(gg);
        k.release_empty = r.chance(60);
    }
    unsigned er = (unsigned)r.below(10);
    k.extra_regions = er < 6 ? 0 : er < 9 ? 1 : 2;
    static const std::vector<size_t> bs = {8 * 1024, 12 * 1024, 16 * 1024, 24 * 1024, 32 * 1024};
    k.buf_size = r.pick(bs);
    k.misalign = r.chance(25) ? (size_t)r.range(1, 15) : 0;
    return k;
}

static void apply_knobs(const Knobs &k, dmm_heap_config *cfg) {
    cfg->quick_max = k.quick_max;
    cfg->quick_limit = k.quick_limit;
    cfg->stats = k.stats;
    cfg->harden = k.harden;
    cfg->poison = k.poison;
    if (cfg->split)
        cfg->split_min = k.split_min;
    cfg->coalesce_max = k.coalesce_max;
    if (cfg->org != DMM_ORG_SINGLE)
        cfg->sl_bits = k.sl_bits;
    if (cfg->org == DMM_ORG_SEG_EXACT)
        cfg->exact_max = k.exact_max;
    cfg->lock = k.lock;
    cfg->grow_granularity = k.grow_granularity;
    cfg->release_empty = k.release_empty;
}

Knobs choose_knobs(const Combo &c, uint64_t seed, dmm_heap_config *cfg) {
    Rng r(mix64(seed, 0x6B6E6F6273ull /* "knobs" */));
    const dmm_heap_config base = *cfg;
    for (int attempt = 0; attempt < 16; ++attempt) {
        Knobs k = draw_knobs(c, r);
        dmm_heap_config trial = base;
        apply_knobs(k, &trial);
        if (dmm_heap_config_check(&trial, nullptr) == DMM_OK) {
            *cfg = trial;
            return k;
        }
    }
    Knobs plain;
    plain.quick_max = base.quick_max;
    plain.quick_limit = base.quick_limit;
    plain.stats = base.stats;
    plain.harden = base.harden;
    plain.poison = base.poison;
    plain.split_min = base.split_min;
    plain.coalesce_max = base.coalesce_max;
    plain.sl_bits = base.sl_bits;
    plain.exact_max = base.exact_max;
    plain.buf_size = 32 * 1024;
    *cfg = base;
    return plain;
}

void fill_pattern(void *p, size_t from, size_t to, uint64_t id) {
    unsigned char *b = static_cast<unsigned char *>(p);
    for (size_t i = from; i < to; ++i)
        b[i] = pattern_byte(id, i);
}

size_t find_pattern_mismatch(const void *p, size_t from, size_t to, uint64_t id) {
    const unsigned char *b = static_cast<const unsigned char *>(p);
    for (size_t i = from; i < to; ++i)
        if (b[i] != pattern_byte(id, i))
            return i;
    return SIZE_MAX;
}

Buffer::Buffer(size_t size, size_t misalign)
    : raw_(new unsigned char[size + misalign + 3 * kGuard]), size_(size), misalign_(misalign) {
    uintptr_t a = (uintptr_t)raw_.get();
    uintptr_t aligned = (a + 63) & ~(uintptr_t)63;
    base_ = raw_.get() + (aligned - a);
    std::memset(base_, 0xB5, kGuard + misalign_);
    std::memset(data(), 0x00, size_);
    std::memset(data() + size_, 0xB6, kGuard);
}

bool Buffer::contains(const void *p, size_t n) const {
    uintptr_t lo = (uintptr_t)(base_ + kGuard + misalign_);
    uintptr_t q = (uintptr_t)p;
    return q >= lo && q <= lo + size_ && n <= lo + size_ - q;
}

bool Buffer::guards_intact() const {
    for (size_t i = 0; i < kGuard + misalign_; ++i)
        if (base_[i] != 0xB5)
            return false;
    const unsigned char *end = base_ + kGuard + misalign_ + size_;
    for (size_t i = 0; i < kGuard; ++i)
        if (end[i] != 0xB6)
            return false;
    return true;
}

static int collect_cb(void *ctx, const dmm_heap_block_info *info) {
    static_cast<std::vector<dmm_heap_block_info> *>(ctx)->push_back(*info);
    return 0;
}

std::vector<dmm_heap_block_info> walk_all(dmm_heap *h, int *rc) {
    std::vector<dmm_heap_block_info> v;
    int r = dmm_heap_walk(h, collect_cb, &v);
    if (rc)
        *rc = r;
    return v;
}

std::string report_str(const dmm_heap_check_report &r) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "invariant %s (%d) at %p: %s", inv_name(r.invariant),
                  (int)r.invariant, r.where, r.detail ? r.detail : "(null detail)");
    return buf;
}

void ErrorLog::callback(void *ctx, const dmm_error *e) {
    static_cast<ErrorLog *>(ctx)->errors.push_back(*e);
}

std::string describe(const dmm_heap_config &cfg, uint64_t seed) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)seed);
    return std::string("config: \"") + cfg_str(cfg) + "\"  seed: " + buf;
}

} // namespace dmmt

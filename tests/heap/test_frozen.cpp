// tests/heap/test_frozen.cpp - a library frozen to one preset at build time
// (DMM_HEAP_CONFIG_HEADER = configs/frozen/<preset>.h).  Built once per
// frozen preset; DMMT_FROZEN_PRESET_NAME names it.
#include <gtest/gtest.h>

#include "dmm_test_support.h"

#ifndef DMMT_FROZEN_PRESET_NAME
#error "DMMT_FROZEN_PRESET_NAME must name the frozen preset"
#endif

using namespace dmmt;

// src/heap/heap_fields.h: the frozen build's default config, built from the
// DMM_FROZEN_* macros through the field list (internal to the library).
extern "C" const dmm_heap_config dmm__heap_frozen_cfg;

namespace {

dmm_heap_preset frozen_preset() {
    dmm_heap_preset p = DMM_PRESET_COUNT;
    EXPECT_EQ(dmm_heap_preset_from_name(DMMT_FROZEN_PRESET_NAME, &p), DMM_OK);
    return p;
}

bool same_policy(const dmm_heap_config &a, const dmm_heap_config &b) {
    return a.org == b.org && a.links == b.links && a.order == b.order && a.fit == b.fit &&
           a.split == b.split && a.coalesce == b.coalesce && (a.quick_max != 0) == (b.quick_max != 0) &&
           a.lock == b.lock && a.stats == b.stats && a.harden == b.harden && a.poison == b.poison &&
           (a.grow_granularity != 0) == (b.grow_granularity != 0);
}

} // namespace

TEST(Frozen, IsFrozen) { EXPECT_EQ(dmm_heap_is_frozen(), 1); }

TEST(Frozen, NullConfigGivesThePreset) {
    dmm_heap_preset p = frozen_preset();
    Buffer b(32 * 1024, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), nullptr), DMM_OK);
    dmm_heap_config got = dmm_heap_get_config(h);
    dmm_heap_config want = dmm_heap_preset_config(p);
    EXPECT_TRUE(same_policy(got, want)) << "frozen header and preset differ:\n  frozen: "
                                        << cfg_str(got) << "\n  preset: " << cfg_str(want);
    EXPECT_EQ(got.sl_bits, want.sl_bits);
    EXPECT_EQ(got.quick_max, want.quick_max);
    if (want.org == DMM_ORG_SEG_EXACT) {
        EXPECT_EQ(got.exact_max, want.exact_max);
    }
    std::vector<void *> ps;
    for (int i = 0; i < 20; ++i) {
        void *q = dmm_heap_malloc(h, 10 + i * 7);
        if (q)
            ps.push_back(q);
        ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
    }
    EXPECT_FALSE(ps.empty());
    for (void *q : ps)
        dmm_heap_free(h, q);
    EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
    dmm_heap_destroy(h);
}

TEST(Frozen, FrozenConfigFromTheFieldListIsThePreset) {
    // configs/frozen/<preset>.h is written by dmm_heap_config_header from the
    // preset: reading it back through the field list gives the preset again,
    // every field (the run-time ones are the defaults, as in every preset).
    dmm_heap_config got = dmm__heap_frozen_cfg;
    dmm_heap_config want = dmm_heap_preset_config(frozen_preset());
    std::string diff;
    EXPECT_TRUE(cfg_equal(got, want, &diff)) << "field " << diff << "\n  frozen: " << cfg_str(got)
                                             << "\n  preset: " << cfg_str(want);
    const char *reason = nullptr;
    EXPECT_EQ(dmm_heap_config_check(&got, &reason), DMM_OK) << (reason ? reason : "");
}

TEST(Frozen, PresetConfigPassesTheRandomTest) {
    dmm_heap_preset p = frozen_preset();
    dmm_heap_config cfg = dmm_heap_preset_config(p);
    const char *reason = nullptr;
    ASSERT_EQ(dmm_heap_config_check(&cfg, &reason), DMM_OK) << (reason ? reason : "");
    for (int variant = 0; variant < 3; ++variant) {
        RunSpec spec;
        spec.cfg = cfg;
        spec.seed = mix64(base_seed(), 0xF20 + variant);
        spec.ops = scaled_ops(1000);
        spec.buf_size = 32 * 1024;
        if (variant == 1) {
            spec.misalign = 7;
            spec.extra_regions = {8192, 5000};
        }
        if (variant == 2) {
            // Fields the freeze leaves to run time may still vary.
            spec.cfg.split_min = 128;
            spec.cfg.cookie = 0xC0FFEE;
            if (spec.cfg.coalesce != DMM_COALESCE_OFF)
                spec.cfg.coalesce_max = 2048;
        }
        RunResult r = run_random(spec);
        ASSERT_TRUE(r.ok) << "variant " << variant << ": " << r.message;
    }
}

TEST(Frozen, OtherPoliciesAreRefused) {
    dmm_heap_preset p = frozen_preset();
    const dmm_heap_config mine = dmm_heap_preset_config(p);
    std::vector<dmm_heap_config> others;
    for (int q = 0; q < DMM_PRESET_COUNT; ++q) {
        dmm_heap_config c = dmm_heap_preset_config((dmm_heap_preset)q);
        if (!same_policy(c, mine))
            others.push_back(c);
    }
    EXPECT_GE(others.size(), 3u);
    dmm_heap_config c;
    c = mine; c.harden = mine.harden == DMM_HARDEN_PARANOID ? DMM_HARDEN_CHECKED : DMM_HARDEN_PARANOID; others.push_back(c);
    c = mine; c.stats = mine.stats == DMM_STATS_FULL ? DMM_STATS_OFF : DMM_STATS_FULL; others.push_back(c);
    c = mine; c.poison = !mine.poison; others.push_back(c);
    c = mine; c.lock = mine.lock == DMM_LOCK_SPIN ? DMM_LOCK_NONE : DMM_LOCK_SPIN; others.push_back(c);
    c = mine; c.order = mine.order == DMM_ORDER_FIFO ? DMM_ORDER_LIFO : DMM_ORDER_FIFO; others.push_back(c);
    c = mine; c.links = mine.links == DMM_LINKS_SINGLY ? DMM_LINKS_DOUBLY : DMM_LINKS_SINGLY; others.push_back(c);
    for (const dmm_heap_config &o : others) {
        SCOPED_TRACE(cfg_str(o));
        const char *reason = nullptr;
        EXPECT_EQ(dmm_heap_config_check(&o, &reason), DMM_E_CONFIG);
        EXPECT_NE(reason, nullptr);
        std::vector<unsigned char> buf(32 * 1024, 0x42);
        dmm_heap *h = reinterpret_cast<dmm_heap *>(&buf);
        EXPECT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &o), DMM_E_CONFIG);
        EXPECT_EQ(h, nullptr);
        bool untouched = true;
        for (unsigned char ch : buf)
            untouched &= ch == 0x42;
        EXPECT_TRUE(untouched) << "refused init wrote to the buffer";
    }
}

// tests/heap/test_config.cpp - configuration validation, the text form,
// presets and the size queries.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dmm_test_support.h"

using namespace dmmt;

namespace {

void dummy_lock(void *) {}
void dummy_unlock(void *) {}

// Expects cfg to be refused by both config_check and init, with a reason,
// and init to leave *out NULL and the buffer untouched.
void expect_refused(const dmm_heap_config &cfg, const char *what) {
    SCOPED_TRACE(std::string(what) + "; config: " + cfg_str(cfg));
    const char *reason = nullptr;
    EXPECT_EQ(dmm_heap_config_check(&cfg, &reason), DMM_E_CONFIG);
    ASSERT_NE(reason, nullptr);
    EXPECT_GT(std::strlen(reason), 5u);
    std::vector<unsigned char> buf(16384, 0xA7);
    dmm_heap *h = reinterpret_cast<dmm_heap *>(buf.data());
    EXPECT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &cfg), DMM_E_CONFIG);
    EXPECT_EQ(h, nullptr);
    for (size_t i = 0; i < buf.size(); ++i)
        if (buf[i] != 0xA7) {
            ADD_FAILURE() << "init of a refused config wrote byte " << i;
            break;
        }
}

} // namespace

TEST(Config, DefaultIsValidAndDocumented) {
    dmm_heap_config c = dmm_heap_default_config();
    const char *reason = "unset";
    EXPECT_EQ(dmm_heap_config_check(&c, &reason), DMM_OK) << cfg_str(c);
    EXPECT_EQ(reason, nullptr) << "reason should be NULL on success";
    // heap.h: "TLSF-like, no lock, counters, checked hardening".
    EXPECT_EQ(c.org, DMM_ORG_TLSF);
    EXPECT_EQ(c.lock, DMM_LOCK_NONE);
    EXPECT_EQ(c.stats, DMM_STATS_COUNTERS);
    EXPECT_EQ(c.harden, DMM_HARDEN_CHECKED);
    EXPECT_EQ(dmm_heap_is_frozen(), 0);
}

TEST(Config, CheckNullConfig) {
    const char *reason = nullptr;
    EXPECT_NE(dmm_heap_config_check(nullptr, &reason), DMM_OK);
    EXPECT_NE(reason, nullptr);
    EXPECT_NE(dmm_heap_config_check(nullptr, nullptr), DMM_OK);
}

TEST(Config, NextFitWithTlsfRefused) {
    dmm_heap_config c = dmm_heap_default_config();
    c.org = DMM_ORG_TLSF;
    c.fit = DMM_FIT_NEXT;
    expect_refused(c, "fit=next org=tlsf");
}

TEST(Config, GoodFitWithSingleListRefused) {
    dmm_heap_config c = dmm_heap_default_config();
    c.org = DMM_ORG_SINGLE;
    c.fit = DMM_FIT_GOOD;
    expect_refused(c, "fit=good org=single");
}

TEST(Config, SlBitsOutOfRangeRefused) {
    for (unsigned bits : {6u, 9u, 31u, 64u, 1000u}) {
        dmm_heap_config c = dmm_heap_default_config();
        c.sl_bits = bits;
        expect_refused(c, ("sl_bits=" + std::to_string(bits)).c_str());
    }
    for (unsigned bits = 0; bits <= 5; ++bits) {
        dmm_heap_config c = dmm_heap_default_config();
        c.sl_bits = bits;
        EXPECT_EQ(dmm_heap_config_check(&c, nullptr), DMM_OK) << "sl_bits=" << bits;
    }
}

TEST(Config, ExactMaxMustBePowerOfTwo) {
    for (size_t em : {(size_t)0, (size_t)100, (size_t)(4 * DMM_HEAP_ALIGN + DMM_HEAP_ALIGN),
                      (size_t)(2 * DMM_HEAP_ALIGN), (size_t)3000}) {
        dmm_heap_config c = dmm_heap_default_config();
        c.org = DMM_ORG_SEG_EXACT;
        c.exact_max = em;
        expect_refused(c, ("exact_max=" + std::to_string(em)).c_str());
    }
    dmm_heap_config c = dmm_heap_default_config();
    c.org = DMM_ORG_SEG_EXACT;
    c.exact_max = 4 * DMM_HEAP_ALIGN;
    EXPECT_EQ(dmm_heap_config_check(&c, nullptr), DMM_OK);
}

TEST(Config, UserLockNeedsHooks) {
    dmm_heap_config c = dmm_heap_default_config();
    c.lock = DMM_LOCK_USER;
    expect_refused(c, "lock=user without hooks");
    c.lock_hooks.lock = dummy_lock;
    expect_refused(c, "lock=user without unlock hook");
    c.lock_hooks.unlock = dummy_unlock;
    EXPECT_EQ(dmm_heap_config_check(&c, nullptr), DMM_OK);
}

TEST(Config, EnumsOutOfRangeRefused) {
    dmm_heap_config c;
    c = dmm_heap_default_config(); c.org = (dmm_heap_org)7; expect_refused(c, "org=7");
    c = dmm_heap_default_config(); c.links = (dmm_heap_links)2; expect_refused(c, "links=2");
    c = dmm_heap_default_config(); c.order = (dmm_heap_order)4; expect_refused(c, "order=4");
    c = dmm_heap_default_config(); c.fit = (dmm_heap_fit)5; expect_refused(c, "fit=5");
    c = dmm_heap_default_config(); c.coalesce = (dmm_heap_coalesce)3; expect_refused(c, "coalesce=3");
    c = dmm_heap_default_config(); c.lock = (dmm_heap_lock)4; expect_refused(c, "lock=4");
    c = dmm_heap_default_config(); c.stats = (dmm_heap_stats_level)3; expect_refused(c, "stats=3");
    c = dmm_heap_default_config(); c.harden = (dmm_heap_harden)4; expect_refused(c, "harden=4");
    c = dmm_heap_default_config(); c.on_error = (dmm_error_policy)2; expect_refused(c, "on_error=2");
}

TEST(Config, ReleaseEmptyNeedsGrowth) {
    dmm_heap_config c = dmm_heap_default_config();
    c.release_empty = true;
    c.grow_granularity = 0;
    expect_refused(c, "release_empty without growth");
}

// ---- text form --------------------------------------------------------------

TEST(ConfigText, FormatParseRoundTripsEveryPreset) {
    for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
        dmm_heap_config c = dmm_heap_preset_config((dmm_heap_preset)p);
        std::string s = cfg_str(c);
        SCOPED_TRACE(std::string(dmm_heap_preset_name((dmm_heap_preset)p)) + ": " + s);
        dmm_heap_config back = dmm_heap_default_config();
        const char *err = "unset";
        ASSERT_EQ(dmm_heap_config_parse(s.c_str(), &back, &err), DMM_OK) << (err ? err : "");
        std::string diff;
        EXPECT_TRUE(cfg_equal(c, back, &diff)) << "field " << diff << " differs after round trip";
        EXPECT_EQ(cfg_str(back), s);
    }
}

TEST(ConfigText, FormatParseRoundTripsRandomConfigs) {
    // Random valid configs from the policy product with random knobs.
    Rng r(base_seed());
    std::vector<Combo> v = valid_combos();
    for (int i = 0; i < 200; ++i) {
        const Combo &c = r.pick(v);
        dmm_heap_config cfg = combo_config(c);
        choose_knobs(c, r.next(), &cfg);
        cfg.cookie = r.chance(50) ? (uintptr_t)r.next() : 0;
        cfg.max_block_log2 = r.chance(30) ? (unsigned)r.range(6, 30) : 0;
        cfg.on_error = r.chance(50) ? DMM_ON_ERROR_ABORT : DMM_ON_ERROR_REPORT;
        std::string s = cfg_str(cfg);
        SCOPED_TRACE(s);
        dmm_heap_config back = dmm_heap_default_config();
        ASSERT_EQ(dmm_heap_config_parse(s.c_str(), &back, nullptr), DMM_OK);
        std::string diff;
        EXPECT_TRUE(cfg_equal(cfg, back, &diff)) << "field " << diff << " differs";
    }
}

TEST(ConfigText, RoundTripDoesNotDependOnTheBase) {
    // format writes a complete configuration: parsing it must give the same
    // config whatever the target held before (here: a preset with a cookie).
    for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
        dmm_heap_config c = dmm_heap_preset_config((dmm_heap_preset)p);
        std::string s = cfg_str(c);
        SCOPED_TRACE(s);
        dmm_heap_config base = dmm_heap_preset_config((dmm_heap_preset)((p + 2) % DMM_PRESET_COUNT));
        base.cookie = 0x1234;
        base.max_block_log2 = 20;
        base.split_min = 4096;
        ASSERT_EQ(dmm_heap_config_parse(s.c_str(), &base, nullptr), DMM_OK);
        std::string diff;
        EXPECT_TRUE(cfg_equal(c, base, &diff)) << "field " << diff << " kept the base's value";
    }
}

TEST(ConfigText, ParsePresetKeyAndWhitespace) {
    dmm_heap_config c = dmm_heap_default_config();
    const char *err = nullptr;
    ASSERT_EQ(dmm_heap_config_parse("  preset = p2012 , split_min = 64 ,fit= best ", &c, &err), DMM_OK)
        << (err ? err : "");
    dmm_heap_config want = dmm_heap_preset_config(DMM_PRESET_P2012);
    want.split_min = 64;
    want.fit = DMM_FIT_BEST;
    std::string diff;
    EXPECT_TRUE(cfg_equal(c, want, &diff)) << diff << " / " << cfg_str(c);

    // Fields not named keep their value.
    dmm_heap_config d = dmm_heap_default_config();
    d.quick_max = 96;
    ASSERT_EQ(dmm_heap_config_parse("fit=first", &d, nullptr), DMM_OK);
    EXPECT_EQ(d.quick_max, 96u);
    EXPECT_EQ(d.fit, DMM_FIT_FIRST);
    // The empty text changes nothing.
    dmm_heap_config e = d;
    ASSERT_EQ(dmm_heap_config_parse("", &e, nullptr), DMM_OK);
    EXPECT_TRUE(cfg_equal(d, e, &diff)) << diff;
}

TEST(ConfigText, ParseErrorsLeaveConfigUnchanged) {
    const char *bad[] = {
        "nope=1",                  // unknown key
        "fit=sideways",            // bad enum value
        "split_min=abc",           // bad number
        "split=maybe",             // bad bool
        "fit",                     // no '='
        "preset=jemalloc",         // unknown preset
        "fit=best,bogus=1",        // a valid pair then an error: nothing applied
        "org=tlsf,sl_bits=-1",     // negative number
        "quick_max=99999999999999999999999", // overflow
    };
    for (const char *text : bad) {
        SCOPED_TRACE(text);
        dmm_heap_config c = dmm_heap_preset_config(DMM_PRESET_HALFFIT);
        c.cookie = 77;
        const dmm_heap_config before = c;
        const char *err = nullptr;
        EXPECT_EQ(dmm_heap_config_parse(text, &c, &err), DMM_E_CONFIG);
        ASSERT_NE(err, nullptr) << "no error message";
        EXPECT_GT(std::strlen(err), 3u);
        std::string diff;
        EXPECT_TRUE(cfg_equal(before, c, &diff)) << "field " << diff << " changed on error";
    }
}

TEST(ConfigText, ParseNullArguments) {
    dmm_heap_config c = dmm_heap_default_config();
    const char *err = nullptr;
    EXPECT_NE(dmm_heap_config_parse(nullptr, &c, &err), DMM_OK);
    EXPECT_NE(dmm_heap_config_parse("fit=best", nullptr, &err), DMM_OK);
}

TEST(ConfigText, FormatTruncatesLikeSnprintf) {
    dmm_heap_config c = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    std::string full = cfg_str(c);
    ASSERT_GT(full.size(), 20u);
    EXPECT_EQ(dmm_heap_config_format(&c, nullptr, 0), full.size());
    for (size_t cap : {(size_t)1, (size_t)2, (size_t)10, full.size(), full.size() + 1}) {
        std::vector<char> buf(cap + 8, '#');
        size_t n = dmm_heap_config_format(&c, buf.data(), cap);
        EXPECT_EQ(n, full.size()) << "cap " << cap;
        size_t written = std::min(cap - 1, full.size());
        EXPECT_EQ(std::string(buf.data(), written), full.substr(0, written)) << "cap " << cap;
        EXPECT_EQ(buf[written], '\0') << "cap " << cap;
        EXPECT_EQ(buf[cap], '#') << "wrote past cap " << cap;
    }
}

// ---- presets ------------------------------------------------------------------

TEST(Presets, NamesRoundTrip) {
    const char *expect[] = {"dlmalloc", "tlsf", "halffit", "firstfit", "p2012"};
    for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
        const char *n = dmm_heap_preset_name((dmm_heap_preset)p);
        ASSERT_NE(n, nullptr);
        EXPECT_STREQ(n, expect[p]);
        dmm_heap_preset back = DMM_PRESET_COUNT;
        EXPECT_EQ(dmm_heap_preset_from_name(n, &back), DMM_OK);
        EXPECT_EQ(back, p);
    }
    EXPECT_EQ(dmm_heap_preset_name(DMM_PRESET_COUNT), nullptr);
    EXPECT_EQ(dmm_heap_preset_name((dmm_heap_preset)-1), nullptr);
    dmm_heap_preset out = DMM_PRESET_TLSF;
    for (const char *bad : {"", "nope", "tlsf ", "p2012x", "dlmallo", "jemalloc"}) {
        EXPECT_EQ(dmm_heap_preset_from_name(bad, &out), DMM_E_RANGE) << "'" << bad << "'";
        EXPECT_EQ(out, DMM_PRESET_TLSF) << "out written on failure for '" << bad << "'";
    }
    // Out-of-range presets give the default config.
    dmm_heap_config d = dmm_heap_default_config();
    dmm_heap_config o = dmm_heap_preset_config(DMM_PRESET_COUNT);
    std::string diff;
    EXPECT_TRUE(cfg_equal(d, o, &diff)) << diff;
}

TEST(Presets, FollowTheirAlgorithms) {
    dmm_heap_config c = dmm_heap_preset_config(DMM_PRESET_P2012);
    EXPECT_EQ(c.org, DMM_ORG_SINGLE);
    EXPECT_EQ(c.links, DMM_LINKS_SINGLY);
    EXPECT_EQ(c.order, DMM_ORDER_LIFO);
    EXPECT_EQ(c.fit, DMM_FIT_FIRST);
    EXPECT_FALSE(c.split);
    EXPECT_EQ(c.coalesce, DMM_COALESCE_OFF);

    c = dmm_heap_preset_config(DMM_PRESET_TLSF);
    EXPECT_EQ(c.org, DMM_ORG_TLSF);
    EXPECT_EQ(c.fit, DMM_FIT_GOOD);
    EXPECT_EQ(c.coalesce, DMM_COALESCE_IMMEDIATE);
    EXPECT_TRUE(c.split);

    c = dmm_heap_preset_config(DMM_PRESET_HALFFIT);
    EXPECT_NE(c.org, DMM_ORG_SINGLE);
    EXPECT_EQ(c.fit, DMM_FIT_GOOD);
    EXPECT_EQ(c.sl_bits, 0u) << "half-fit: one bin per power of two";

    c = dmm_heap_preset_config(DMM_PRESET_FIRSTFIT);
    EXPECT_EQ(c.org, DMM_ORG_SINGLE);
    EXPECT_EQ(c.links, DMM_LINKS_DOUBLY);
    EXPECT_EQ(c.order, DMM_ORDER_ADDRESS);
    EXPECT_EQ(c.fit, DMM_FIT_FIRST);
    EXPECT_TRUE(c.split);
    EXPECT_EQ(c.coalesce, DMM_COALESCE_IMMEDIATE);

    c = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    EXPECT_NE(c.org, DMM_ORG_SINGLE);
    EXPECT_EQ(c.fit, DMM_FIT_BEST);
    EXPECT_EQ(c.coalesce, DMM_COALESCE_IMMEDIATE);
    EXPECT_TRUE(c.split);
    EXPECT_GT(c.quick_max, 0u);
}

class PresetRun : public ::testing::TestWithParam<int> {};

TEST_P(PresetRun, InitsAndPassesRandomTest) {
    dmm_heap_preset p = (dmm_heap_preset)GetParam();
    dmm_heap_config cfg = dmm_heap_preset_config(p);
    const char *reason = nullptr;
    ASSERT_EQ(dmm_heap_config_check(&cfg, &reason), DMM_OK) << (reason ? reason : "");
    for (int variant = 0; variant < 3; ++variant) {
        RunSpec spec;
        spec.cfg = cfg;
        spec.seed = mix64(base_seed(), 1000 + 10 * GetParam() + variant);
        spec.ops = scaled_ops(1000);
        spec.buf_size = variant == 2 ? 8 * 1024 : 32 * 1024;
        if (variant == 1) {
            spec.cfg.stats = DMM_STATS_FULL;
            spec.cfg.harden = DMM_HARDEN_CANARY;
            spec.cfg.poison = true;
            spec.misalign = 5;
            spec.extra_regions = {6000, 10000};
        }
        RunResult r = run_random(spec);
        ASSERT_TRUE(r.ok) << dmm_heap_preset_name(p) << " variant " << variant << ": " << r.message;
        EXPECT_GT(r.allocs_ok, spec.ops / 4);
    }
}

INSTANTIATE_TEST_SUITE_P(All, PresetRun, ::testing::Range(0, (int)DMM_PRESET_COUNT),
                         [](const ::testing::TestParamInfo<int> &i) {
                             return std::string(dmm_heap_preset_name((dmm_heap_preset)i.param));
                         });

// ---- size queries -------------------------------------------------------------

TEST(Sizes, OverheadsAreSane) {
    dmm_heap_config c = dmm_heap_default_config();
    c.stats = DMM_STATS_COUNTERS;
    c.harden = DMM_HARDEN_CHECKED;
    size_t base = dmm_heap_block_overhead(&c);
    EXPECT_EQ(base, sizeof(size_t)) << "a used block costs one header word";
    c.harden = DMM_HARDEN_CANARY;
    EXPECT_GT(dmm_heap_block_overhead(&c), base) << "canary costs a word";
    c.stats = DMM_STATS_FULL;
    EXPECT_GT(dmm_heap_block_overhead(&c), base + sizeof(size_t) - 1) << "FULL costs a word";
    EXPECT_GT(dmm_heap_region_overhead(), 0u);
    EXPECT_EQ(dmm_heap_region_overhead() % DMM_HEAP_ALIGN, 0u);
}

// The v2 layout: one header word per used block, the previous block's size
// kept only while that block is free.  A 24-byte request (an rbTree node on
// 64-bit) needs a 32-byte block; the query and the heap agree.
TEST(Sizes, BlockSizeOfARequestIsOneWordPlusPayloadRounded) {
    dmm_heap_config c = dmm_heap_preset_config(DMM_PRESET_TLSF);
    const size_t W = sizeof(size_t), A = DMM_HEAP_ALIGN;
    auto expect = [&](size_t req) {
        size_t s = (req + W + A - 1) / A * A;
        return s < 2 * A ? 2 * A : s;
    };
    for (size_t req : {0u, 1u, 8u, 24u, 25u, 40u, 100u, 1000u})
        EXPECT_EQ(dmm_heap_block_size(&c, req), expect(req)) << req;
    if (sizeof(size_t) == 8) {
        EXPECT_EQ(dmm_heap_block_size(&c, 24), 32u);
    }
    c.harden = DMM_HARDEN_CANARY;
    EXPECT_EQ(dmm_heap_block_size(&c, 24), expect(24 + W));
    EXPECT_EQ(dmm_heap_block_size(&c, SIZE_MAX - 8), 0u) << "overflow";
    c.org = (dmm_heap_org)99;
    EXPECT_EQ(dmm_heap_block_size(&c, 24), 0u) << "invalid config";

    // the heap hands a 24-byte request exactly that block
    c = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    std::vector<unsigned char> buf(1 << 16);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &c), DMM_OK);
    void *p = dmm_heap_malloc(h, 24);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(dmm_heap_usable_size(h, p), dmm_heap_block_size(&c, 24) - W);
    struct Ctx { const void *p; size_t size; } ctx{p, 0};
    dmm_heap_walk(h, [](void *v, const dmm_heap_block_info *i) {
        auto *x = (Ctx *)v;
        if (i->payload == x->p) x->size = i->block_size;
        return 0;
    }, &ctx);
    EXPECT_EQ(ctx.size, dmm_heap_block_size(&c, 24));
    dmm_heap_free(h, p);
}

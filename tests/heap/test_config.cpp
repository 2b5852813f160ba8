// tests/heap/test_config.cpp - configuration validation, the text form,
// presets, the size queries, the field list, the frozen header writer and
// the statistics JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "dmm_test_support.h"
#include "json_mini.h"

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
    EXPECT_EQ(c.org, DMM_ORG_ADDRTREE) << "first fit in O(log n)";
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

// Init picks the compiled code path: a preset as shipped or lean runs its
// exact fast path, the preset's shape with other switches runs the shape
// variant, any other shape the generic one.  This also proves that the
// shapes in src/heap/variant.h match dmm_heap_preset_config.
TEST(Variants, InitPicksThePresetsFastPaths) {
    std::vector<unsigned char> buf(1 << 16);
    auto variant_of = [&](const dmm_heap_config &c) {
        dmm_heap *h = nullptr;
        EXPECT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &c), DMM_OK);
        std::string v = h ? dmm_heap_variant(h) : "";
        if (h) dmm_heap_destroy(h);
        return v;
    };
    EXPECT_EQ(dmm_heap_variant(nullptr), nullptr);
    for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
        const std::string name = dmm_heap_preset_name((dmm_heap_preset)p);
        dmm_heap_config c = dmm_heap_preset_config((dmm_heap_preset)p);
        if (dmm_heap_is_frozen()) {
            EXPECT_EQ(variant_of(c), "frozen");
            continue;
        }
        if (variant_of(c) == "any")
            GTEST_SKIP() << "library built with DMM_HEAP_VARIANTS=OFF";
        EXPECT_EQ(variant_of(c), name + "/ship") << name;
        dmm_heap_config lean = c;
        lean.stats = DMM_STATS_OFF;
        lean.harden = DMM_HARDEN_OFF;
        EXPECT_EQ(variant_of(lean), name + "/lean") << name;
        dmm_heap_config shape = c;
        shape.stats = DMM_STATS_FULL;
        shape.harden = DMM_HARDEN_CANARY;
        shape.lock = DMM_LOCK_SPIN;
        shape.sl_bits = c.sl_bits == 2 ? 3 : 2;
        EXPECT_EQ(variant_of(shape), name + "/shape") << name;
        dmm_heap_config other = c;
        other.fit = c.fit == DMM_FIT_FIRST ? DMM_FIT_BEST : DMM_FIT_FIRST;
        if (c.org == DMM_ORG_ADDRTREE) { // first fit only: the list form instead
            other.fit = c.fit;
            other.org = DMM_ORG_SINGLE;
        }
        ASSERT_EQ(dmm_heap_config_check(&other, nullptr), DMM_OK) << name;
        EXPECT_EQ(variant_of(other), "any") << name;
    }
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

// ---- the field list (src/heap/heap_fields.h) through the public API ----------

namespace {

std::string fields_json() {
    std::string s(dmm_heap_config_fields_json(nullptr, 0) + 1, '\0');
    dmm_heap_config_fields_json(&s[0], s.size());
    s.pop_back();
    return s;
}

const JsonValue &heap_fields(JsonValue *doc) {
    std::string err;
    std::string s = fields_json();
    EXPECT_TRUE(json_parse(s, doc, &err)) << err << "\n" << s;
    static const JsonValue empty;
    const JsonValue *f = doc->get("fields");
    return f ? *f : empty;
}

// "key=value" as the formatter writes it for cfg.
std::string pair_of(const dmm_heap_config &cfg, const std::string &key) {
    std::string s = "," + cfg_str(cfg) + ",";
    size_t at = s.find("," + key + "=");
    if (at == std::string::npos)
        return "";
    size_t end = s.find(',', at + 1);
    return s.substr(at + 1, end - at - 1);
}

} // namespace

TEST(ConfigFields, ListCoversTheStruct) {
    // The struct has exactly the members the list names: 22 with a text form
    // plus lock_hooks, error_fn and error_ctx.  The structured binding stops
    // compiling when a member is added to dmm_heap_config; config.c's static
    // assertions catch a list that differs in offset, size or type.
    dmm_heap_config c = dmm_heap_default_config();
    [[maybe_unused]] auto &[org, sl_bits, exact_max, links, order, fit, split, victim, split_min, coalesce,
                            coalesce_max, quick_max, quick_limit, lock, lock_hooks, stats, harden, poison, on_error,
                            error_fn, error_ctx, grow, release_empty, max_block_log2, cookie] = c;
    JsonValue doc;
    const JsonValue &f = heap_fields(&doc);
    ASSERT_EQ(f.items.size(), 22u);
    const char *keys[] = {"org", "sl_bits", "exact_max", "links", "order", "fit", "split", "victim",
                          "split_min", "coalesce", "coalesce_max", "quick_max", "quick_limit", "lock", "stats",
                          "harden", "poison", "on_error", "grow", "release_empty", "max_block_log2", "cookie"};
    for (size_t i = 0; i < f.items.size(); ++i)
        EXPECT_EQ(f.items[i].get("name")->text, keys[i]) << "field " << i;
    ASSERT_NE(doc.get("presets"), nullptr);
    ASSERT_EQ(doc.get("presets")->items.size(), (size_t)DMM_PRESET_COUNT);
    for (int p = 0; p < DMM_PRESET_COUNT; ++p)
        EXPECT_EQ(doc.get("presets")->items[p].text, dmm_heap_preset_name((dmm_heap_preset)p));
}

TEST(ConfigFields, DefaultsInTheListAreTheDefaultConfig) {
    JsonValue doc;
    const JsonValue &f = heap_fields(&doc);
    dmm_heap_config d = dmm_heap_default_config();
    for (const JsonValue &fld : f.items) {
        const std::string key = fld.get("name")->text;
        EXPECT_EQ(pair_of(d, key), key + "=" + fld.get("default")->text);
    }
    EXPECT_EQ(d.lock_hooks.lock, nullptr);
    EXPECT_EQ(d.lock_hooks.unlock, nullptr);
    EXPECT_EQ(d.lock_hooks.ctx, nullptr);
    EXPECT_EQ(d.error_fn, nullptr);
    EXPECT_EQ(d.error_ctx, nullptr);
}

TEST(ConfigFields, EveryFieldAndEveryValueRoundTrips) {
    JsonValue doc;
    const JsonValue &f = heap_fields(&doc);
    ASSERT_FALSE(f.items.empty());
    size_t enum_values = 0;
    for (const JsonValue &fld : f.items) {
        const std::string key = fld.get("name")->text, kind = fld.get("kind")->text;
        SCOPED_TRACE(key);
        std::vector<std::string> vals;
        if (kind == "enum" || kind == "bool") {
            for (const JsonValue &v : fld.get("values")->items)
                vals.push_back(v.text);
            if (kind == "bool") {
                EXPECT_EQ(vals, (std::vector<std::string>{"off", "on"}));
            }
            enum_values += vals.size();
        } else {
            const std::string pmax = fld.get("parse_max")->text;
            uint64_t pm = std::stoull(pmax);
            for (uint64_t n : {0ull, 1ull, 5ull, 63ull, 4096ull, 1ull << 40})
                if (n < pm)
                    vals.push_back(std::to_string(n));
            vals.push_back(pmax);
            // the largest number the text form takes, then one more
            if (pm != UINT64_MAX) {
                dmm_heap_config c = dmm_heap_default_config();
                const char *err = nullptr;
                EXPECT_EQ(dmm_heap_config_parse((key + "=" + std::to_string(pm + 1)).c_str(), &c, &err),
                          DMM_E_CONFIG);
                EXPECT_STREQ(err, ("bad number for " + key).c_str());
            }
        }
        for (const std::string &v : vals) {
            dmm_heap_config c = dmm_heap_default_config();
            const char *err = nullptr;
            ASSERT_EQ(dmm_heap_config_parse((key + "=" + v).c_str(), &c, &err), DMM_OK) << v << ": " << err;
            EXPECT_EQ(pair_of(c, key), key + "=" + v);
            dmm_heap_config back = dmm_heap_preset_config(DMM_PRESET_P2012);
            ASSERT_EQ(dmm_heap_config_parse(cfg_str(c).c_str(), &back, &err), DMM_OK) << err;
            std::string diff;
            EXPECT_TRUE(cfg_equal(c, back, &diff)) << key << "=" << v << ": field " << diff << " differs";
        }
    }
    EXPECT_EQ(enum_values, 5u + 2 + 4 + 5 + 3 + 4 + 3 + 4 + 2 + 4 * 2) << "a value was added: extend the tests";
}

TEST(ConfigFields, EnumValueNamesMatchTheConstants) {
    // Setting the C constant and formatting gives the documented name.
    struct {
        const char *pair;
        void (*set)(dmm_heap_config &);
    } cases[] = {
        {"org=single", [](dmm_heap_config &c) { c.org = DMM_ORG_SINGLE; }},
        {"org=exact", [](dmm_heap_config &c) { c.org = DMM_ORG_SEG_EXACT; }},
        {"org=geometric", [](dmm_heap_config &c) { c.org = DMM_ORG_SEG_GEOMETRIC; }},
        {"org=tlsf", [](dmm_heap_config &c) { c.org = DMM_ORG_TLSF; }},
        {"org=addrtree", [](dmm_heap_config &c) { c.org = DMM_ORG_ADDRTREE; }},
        {"links=singly", [](dmm_heap_config &c) { c.links = DMM_LINKS_SINGLY; }},
        {"links=doubly", [](dmm_heap_config &c) { c.links = DMM_LINKS_DOUBLY; }},
        {"order=lifo", [](dmm_heap_config &c) { c.order = DMM_ORDER_LIFO; }},
        {"order=fifo", [](dmm_heap_config &c) { c.order = DMM_ORDER_FIFO; }},
        {"order=address", [](dmm_heap_config &c) { c.order = DMM_ORDER_ADDRESS; }},
        {"order=size", [](dmm_heap_config &c) { c.order = DMM_ORDER_SIZE; }},
        {"fit=first", [](dmm_heap_config &c) { c.fit = DMM_FIT_FIRST; }},
        {"fit=next", [](dmm_heap_config &c) { c.fit = DMM_FIT_NEXT; }},
        {"fit=best", [](dmm_heap_config &c) { c.fit = DMM_FIT_BEST; }},
        {"fit=exact", [](dmm_heap_config &c) { c.fit = DMM_FIT_EXACT; }},
        {"fit=good", [](dmm_heap_config &c) { c.fit = DMM_FIT_GOOD; }},
        {"coalesce=off", [](dmm_heap_config &c) { c.coalesce = DMM_COALESCE_OFF; }},
        {"coalesce=immediate", [](dmm_heap_config &c) { c.coalesce = DMM_COALESCE_IMMEDIATE; }},
        {"coalesce=deferred", [](dmm_heap_config &c) { c.coalesce = DMM_COALESCE_DEFERRED; }},
        {"lock=none", [](dmm_heap_config &c) { c.lock = DMM_LOCK_NONE; }},
        {"lock=spin", [](dmm_heap_config &c) { c.lock = DMM_LOCK_SPIN; }},
        {"lock=mutex", [](dmm_heap_config &c) { c.lock = DMM_LOCK_MUTEX; }},
        {"lock=user", [](dmm_heap_config &c) { c.lock = DMM_LOCK_USER; }},
        {"stats=off", [](dmm_heap_config &c) { c.stats = DMM_STATS_OFF; }},
        {"stats=counters", [](dmm_heap_config &c) { c.stats = DMM_STATS_COUNTERS; }},
        {"stats=full", [](dmm_heap_config &c) { c.stats = DMM_STATS_FULL; }},
        {"harden=off", [](dmm_heap_config &c) { c.harden = DMM_HARDEN_OFF; }},
        {"harden=checked", [](dmm_heap_config &c) { c.harden = DMM_HARDEN_CHECKED; }},
        {"harden=canary", [](dmm_heap_config &c) { c.harden = DMM_HARDEN_CANARY; }},
        {"harden=paranoid", [](dmm_heap_config &c) { c.harden = DMM_HARDEN_PARANOID; }},
        {"on_error=report", [](dmm_heap_config &c) { c.on_error = DMM_ON_ERROR_REPORT; }},
        {"on_error=abort", [](dmm_heap_config &c) { c.on_error = DMM_ON_ERROR_ABORT; }},
    };
    for (auto &k : cases) {
        dmm_heap_config c = dmm_heap_default_config();
        k.set(c);
        std::string p = k.pair;
        EXPECT_EQ(pair_of(c, p.substr(0, p.find('='))), p);
    }
}

TEST(ConfigFields, OutOfRangeNumbersKeepTheirMessages) {
    struct {
        const char *text, *err;
    } parse_errors[] = {
        {"sl_bits=65", "bad number for sl_bits"},
        {"max_block_log2=65", "bad number for max_block_log2"},
        {"quick_limit=4294967296", "bad number for quick_limit"},
        {"quick_max=99999999999999999999999", "bad number for quick_max"},
        {"grow=17179869184g", "bad number for grow"},
        {"split=1", "bad value for split (on or off)"},
        {"org=7", "bad value for org"},
        {"preset=jemalloc", "unknown preset (dlmalloc, tlsf, halffit, firstfit, p2012)"},
        {"nope=1", "unknown key"},
        {"fit", "expected key=value"},
    };
    for (auto &k : parse_errors) {
        dmm_heap_config c = dmm_heap_default_config();
        const char *err = nullptr;
        EXPECT_EQ(dmm_heap_config_parse(k.text, &c, &err), DMM_E_CONFIG) << k.text;
        EXPECT_STREQ(err, k.err) << k.text;
    }
    // Values the text form reads but validation refuses, with the sentences.
    struct {
        const char *text, *reason;
    } refused[] = {
        {"sl_bits=6", "sl_bits must be 0..5"},
        {"sl_bits=64", "sl_bits must be 0..5"},
        {"quick_max=4097", "quick_max must be at most 4096 bytes"},
        {"max_block_log2=64", "max_block_log2 out of range"},
        {"org=exact,exact_max=100", "exact_max must be a power of two between 4*DMM_HEAP_ALIGN and 65536"},
        {"org=tlsf,fit=next", "next fit needs a single free list (org=single)"},
        {"org=single,fit=good", "good fit needs segregated bins (org exact, geometric or tlsf)"},
        {"org=addrtree,fit=best,order=address", "org=addrtree is address-ordered first fit: it needs fit=first and order=address"},
        {"org=addrtree,fit=first,order=lifo", "org=addrtree is address-ordered first fit: it needs fit=first and order=address"},
    };
    for (auto &k : refused) {
        dmm_heap_config c = dmm_heap_default_config();
        ASSERT_EQ(dmm_heap_config_parse(k.text, &c, nullptr), DMM_OK) << k.text;
        const char *reason = nullptr;
        EXPECT_EQ(dmm_heap_config_check(&c, &reason), DMM_E_CONFIG) << k.text;
        EXPECT_STREQ(reason, k.reason) << k.text;
    }
    dmm_heap_config c = dmm_heap_default_config();
    const char *reason = nullptr;
    c.org = (dmm_heap_org)5;
    EXPECT_EQ(dmm_heap_config_check(&c, &reason), DMM_E_CONFIG);
    EXPECT_STREQ(reason, "org out of range");
    c = dmm_heap_default_config();
    c.on_error = (dmm_error_policy)2;
    EXPECT_EQ(dmm_heap_config_check(&c, &reason), DMM_E_CONFIG);
    EXPECT_STREQ(reason, "on_error out of range");
}

TEST(ConfigHeader, DefinesEveryFrozenMacro) {
    dmm_heap_config c = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    c.grow_granularity = 1u << 20;
    c.poison = true;
    std::string h(dmm_heap_config_header(&c, "dmm_config.h", nullptr, 0) + 1, '\0');
    dmm_heap_config_header(&c, "dmm_config.h", &h[0], h.size());
    h.pop_back();
    EXPECT_EQ(h.rfind("/* dmm_config.h - ", 0), 0u) << h;
    EXPECT_NE(h.find(" * config: org=exact,sl_bits=4,"), std::string::npos) << h;
    const char *lines[] = {
        "#define DMM_FROZEN_ORG DMM_ORG_SEG_EXACT\n",   "#define DMM_FROZEN_SL_BITS 4\n",
        "#define DMM_FROZEN_EXACT_MAX 256\n",           "#define DMM_FROZEN_LINKS DMM_LINKS_DOUBLY\n",
        "#define DMM_FROZEN_ORDER DMM_ORDER_FIFO\n",     "#define DMM_FROZEN_FIT DMM_FIT_BEST\n",
        "#define DMM_FROZEN_SPLIT 1\n",                 "#define DMM_FROZEN_COALESCE DMM_COALESCE_IMMEDIATE\n",
        "#define DMM_FROZEN_LOCK DMM_LOCK_NONE\n",       "#define DMM_FROZEN_STATS DMM_STATS_COUNTERS\n",
        "#define DMM_FROZEN_HARDEN DMM_HARDEN_CHECKED\n", "#define DMM_FROZEN_POISON 1\n",
        "#define DMM_FROZEN_GROW_GRANULARITY 1048576\n", "#define DMM_FROZEN_VICTIM 1\n",
    };
    for (const char *l : lines)
        EXPECT_NE(h.find(l), std::string::npos) << l << "in:\n" << h;
    EXPECT_NE(h.find("#define DMM_FROZEN_QUICK_MAX " + std::to_string(c.quick_max) + "\n"), std::string::npos);
    size_t defines = 0;
    for (size_t at = h.find("#define"); at != std::string::npos; at = h.find("#define", at + 1))
        ++defines;
    EXPECT_EQ(defines, 15u);
    EXPECT_EQ(h.find("*/"), h.find(" */\n#define DMM_FROZEN_ORG") + 1) << "one comment, then the macros";
}

TEST(ConfigHeader, TruncatesLikeSnprintfAndRefusesBadConfigs) {
    dmm_heap_config c = dmm_heap_preset_config(DMM_PRESET_TLSF);
    std::string full(dmm_heap_config_header(&c, nullptr, nullptr, 0) + 1, '\0');
    dmm_heap_config_header(&c, nullptr, &full[0], full.size());
    full.pop_back();
    ASSERT_GT(full.size(), 400u);
    for (size_t cap : {(size_t)1, (size_t)2, (size_t)77, full.size() - 1, full.size(), full.size() + 1}) {
        std::vector<char> buf(cap + 8, '#');
        EXPECT_EQ(dmm_heap_config_header(&c, nullptr, buf.data(), cap), full.size()) << "cap " << cap;
        size_t written = std::min(cap - 1, full.size());
        EXPECT_EQ(std::string(buf.data(), written), full.substr(0, written)) << "cap " << cap;
        EXPECT_EQ(buf[written], '\0') << "cap " << cap;
        EXPECT_EQ(buf[cap], '#') << "wrote past cap " << cap;
    }
    char buf[32] = "untouched";
    EXPECT_EQ(dmm_heap_config_header(nullptr, "x", buf, sizeof buf), 0u);
    EXPECT_STREQ(buf, "");
    c.fit = (dmm_heap_fit)9;
    std::strcpy(buf, "untouched");
    EXPECT_EQ(dmm_heap_config_header(&c, "x", buf, sizeof buf), 0u) << "an enum out of range has no constant";
    EXPECT_STREQ(buf, "");
    c = dmm_heap_preset_config(DMM_PRESET_TLSF);
    c.sl_bits = 6;
    EXPECT_EQ(dmm_heap_config_header(&c, "x", buf, sizeof buf), 0u);
}

TEST(ConfigFields, FieldsJsonTruncatesLikeSnprintf) {
    std::string full = fields_json();
    ASSERT_GT(full.size(), 1000u);
    for (size_t cap : {(size_t)1, (size_t)5, full.size() / 3, full.size(), full.size() + 1}) {
        std::vector<char> buf(cap + 8, '#');
        EXPECT_EQ(dmm_heap_config_fields_json(buf.data(), cap), full.size()) << "cap " << cap;
        size_t written = std::min(cap - 1, full.size());
        EXPECT_EQ(std::string(buf.data(), written), full.substr(0, written)) << "cap " << cap;
        EXPECT_EQ(buf[written], '\0') << "cap " << cap;
        EXPECT_EQ(buf[cap], '#') << "wrote past cap " << cap;
    }
}

TEST(StatsJson, KeysAndOrderAreUnchanged) {
    // Tools and the Python front end read these keys: the exact text of a
    // known snapshot (the order and spelling of the format before the list).
    dmm_heap_stats st{};
    st.malloc_count = 100;
    st.calloc_count = 101;
    st.realloc_count = 102;
    st.aligned_count = 103;
    st.free_count = 104;
    st.failed_count = 105;
    st.error_count = 106;
    st.search_steps = 107;
    st.search_max = 108;
    st.sweep_count = 109;
    st.grow_count = 110;
    st.release_count = 111;
    st.live_count = 1;
    st.live_block_bytes = 2;
    st.peak_block_bytes = 3;
    st.live_requested = 4;
    st.peak_requested = 5;
    st.footprint = 6;
    st.peak_footprint = 7;
    st.top_bytes = 8;
    st.extent = 9;
    st.peak_extent = 10;
    st.free_bytes = 11;
    st.largest_free = 12;
    for (int i = 0; i < DMM_HEAP_HIST_BUCKETS; ++i)
        st.size_hist[i] = i == 31 ? UINT64_MAX : (uint64_t)i;
    std::string want =
        "{\"malloc_count\":100,\"calloc_count\":101,\"realloc_count\":102,\"aligned_count\":103,"
        "\"free_count\":104,\"failed_count\":105,\"error_count\":106,\"search_steps\":107,\"search_max\":108,"
        "\"sweep_count\":109,\"grow_count\":110,\"release_count\":111,\"live_count\":1,\"live_block_bytes\":2,"
        "\"peak_block_bytes\":3,\"live_requested\":4,\"peak_requested\":5,\"footprint\":6,\"peak_footprint\":7,"
        "\"top_bytes\":8,\"extent\":9,\"peak_extent\":10,\"free_bytes\":11,\"largest_free\":12,\"size_hist\":[";
    for (int i = 0; i < 31; ++i)
        want += std::to_string(i) + ",";
    want += "18446744073709551615]}";
    std::string got(dmm_heap_stats_json(&st, nullptr, 0) + 1, '\0');
    dmm_heap_stats_json(&st, &got[0], got.size());
    got.pop_back();
    EXPECT_EQ(got, want);
    EXPECT_EQ(dmm_heap_stats_json(nullptr, nullptr, 0), 0u);
}

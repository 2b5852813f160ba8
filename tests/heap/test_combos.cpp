// tests/heap/test_combos.cpp - the policy cartesian product.
//
// Every (org x links x order x fit x split x coalesce x victim) tuple is
// enumerated.
// Tuples dmm_heap_config_check refuses must be refused with a reason; every
// tuple it accepts runs two seeded random sequences with the checker and the
// shadow model after each operation:
//   RandomKnobs - the orthogonal knobs (quick lists, statistics level,
//                 hardening, poison, split_min, coalesce_max, sl_bits,
//                 exact_max, lock, growth, extra regions, buffer size and
//                 misalignment) drawn from the combo's seed;
//   Strict      - the most checking the heap offers: PARANOID hardening,
//                 FULL statistics, poisoning, quick lists on.
// Reproduce one failure with the printed DMM_TEST_SEED and
//   --gtest_filter='*<combo name>*'; scale the run with DMM_TEST_OPS=<ops>.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <set>

#include "dmm_test_support.h"

using namespace dmmt;

namespace {

const std::vector<Combo> &valid() {
    static const std::vector<Combo> v = valid_combos();
    return v;
}

std::string seed_note(const Combo &c) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "\n  (base DMM_TEST_SEED=0x%llx, combo #%u %s)",
                  (unsigned long long)base_seed(), c.index, c.name().c_str());
    return buf;
}

RunSpec spec_for(const Combo &c, uint64_t seed, const dmm_heap_config &cfg, const Knobs &k) {
    RunSpec spec;
    spec.cfg = cfg;
    spec.seed = seed;
    spec.ops = scaled_ops(200);
    spec.buf_size = k.buf_size ? k.buf_size : 32 * 1024;
    spec.misalign = k.misalign;
    Rng r(mix64(seed, 0x7265676E /* regions */));
    for (unsigned i = 0; i < k.extra_regions; ++i)
        spec.extra_regions.push_back((size_t)r.range(2048, 12 * 1024));
    (void)c;
    return spec;
}

} // namespace

// ---- the product itself -----------------------------------------------------

TEST(Product, InvalidCombosRejectedWithReason) {
    size_t nvalid = 0, ninvalid = 0;
    for (const Combo &c : all_combos()) {
        dmm_heap_config cfg = combo_config(c);
        const char *reason = nullptr;
        dmm_status st = dmm_heap_config_check(&cfg, &reason);
        if (st == DMM_OK) {
            ++nvalid;
            continue;
        }
        ++ninvalid;
        EXPECT_TRUE(st == DMM_E_CONFIG || st == DMM_E_UNSUPPORTED)
            << c.name() << ": status " << dmm_status_str(st);
        ASSERT_NE(reason, nullptr) << c.name() << " refused without a reason";
        EXPECT_GT(std::strlen(reason), 5u) << c.name();
        EXPECT_EQ(dmm_heap_min_buffer(&cfg), 0u) << c.name() << ": min_buffer of an invalid config";
        EXPECT_EQ(dmm_heap_block_overhead(&cfg), 0u) << c.name();

        // init refuses it too, and writes nothing.
        std::vector<unsigned char> buf(8192, 0x3C);
        dmm_heap *h = reinterpret_cast<dmm_heap *>(&buf);
        EXPECT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &cfg), st) << c.name();
        EXPECT_EQ(h, nullptr) << c.name();
        for (size_t i = 0; i < buf.size(); ++i)
            if (buf[i] != 0x3C) {
                ADD_FAILURE() << c.name() << ": refused init wrote byte " << i;
                break;
            }
    }
    std::printf("policy product: %zu combos, %zu valid, %zu refused\n", nvalid + ninvalid, nvalid,
                ninvalid);
    EXPECT_EQ(nvalid + ninvalid, 5u * 2u * 4u * 5u * 2u * 3u * 2u);
    EXPECT_GE(nvalid, 300u) << "the design space should hold several hundred valid combos";
    EXPECT_EQ(nvalid, valid().size());
}

TEST(Product, KnobChoicesCoverEveryValue) {
    // The seeded knob choice must exercise every knob value somewhere in
    // the product, or a knob would go untested.
    std::set<size_t> quick, qlimit, splitmin, coalmax, exactmax, gg;
    std::set<int> stats, harden, poison, slbits, lock, extra, release, misal;
    for (const Combo &c : valid()) {
        dmm_heap_config cfg = combo_config(c);
        Knobs k = choose_knobs(c, mix64(base_seed(), c.index), &cfg);
        quick.insert(k.quick_max != 0);
        qlimit.insert(k.quick_limit);
        stats.insert(k.stats);
        harden.insert(k.harden);
        poison.insert(k.poison);
        if (c.split)
            splitmin.insert(k.split_min);
        if (c.coalesce != DMM_COALESCE_OFF)
            coalmax.insert(k.coalesce_max != 0);
        if (c.org != DMM_ORG_SINGLE)
            slbits.insert((int)k.sl_bits);
        if (c.org == DMM_ORG_SEG_EXACT)
            exactmax.insert(k.exact_max);
        lock.insert(k.lock);
        gg.insert(k.grow_granularity != 0);
        if (k.grow_granularity)
            release.insert(k.release_empty);
        extra.insert((int)k.extra_regions);
        misal.insert(k.misalign != 0);
    }
    EXPECT_EQ(quick.size(), 2u);
    EXPECT_GE(qlimit.size(), 3u);
    EXPECT_EQ(stats.size(), 3u);
    EXPECT_EQ(harden.size(), 4u);
    EXPECT_EQ(poison.size(), 2u);
    EXPECT_GE(splitmin.size(), 4u);
    EXPECT_EQ(coalmax.size(), 2u);
    EXPECT_EQ(slbits.size(), 6u);
    EXPECT_GE(exactmax.size(), 3u);
    EXPECT_EQ(lock.size(), 3u);
    EXPECT_EQ(gg.size(), 2u);
    EXPECT_EQ(release.size(), 2u);
    EXPECT_EQ(extra.size(), 3u);
    EXPECT_EQ(misal.size(), 2u);
}

// ---- one random run per valid combo ----------------------------------------

class Combos : public ::testing::TestWithParam<Combo> {};

TEST_P(Combos, RandomKnobs) {
    const Combo &c = GetParam();
    uint64_t seed = mix64(base_seed(), c.index);
    dmm_heap_config cfg = combo_config(c);
    Knobs k = choose_knobs(c, seed, &cfg);
    RunSpec spec = spec_for(c, seed, cfg, k);
    RunResult r = run_random(spec);
    ASSERT_TRUE(r.ok) << r.message << seed_note(c);
    EXPECT_GT(r.allocs_ok, spec.ops / 4) << describe(cfg, seed) << ": too few allocations succeeded"
                                         << seed_note(c);
}

TEST_P(Combos, Strict) {
    const Combo &c = GetParam();
    uint64_t seed = mix64(base_seed() ^ 0x57524943ull, c.index);
    dmm_heap_config cfg = combo_config(c);
    cfg.harden = DMM_HARDEN_PARANOID;
    cfg.stats = DMM_STATS_FULL;
    cfg.poison = true;
    cfg.quick_max = 64;
    cfg.quick_limit = 8;
    const char *reason = nullptr;
    if (dmm_heap_config_check(&cfg, &reason) != DMM_OK) {
        // Quick lists may be refused for some organisations; then without.
        cfg.quick_max = 0;
        cfg.quick_limit = 0;
    }
    ASSERT_EQ(dmm_heap_config_check(&cfg, &reason), DMM_OK)
        << describe(cfg, seed) << ": strict knobs refused: " << (reason ? reason : "?");
    RunSpec spec;
    spec.cfg = cfg;
    spec.seed = seed;
    spec.ops = scaled_ops(150);
    spec.buf_size = 16 * 1024;
    RunResult r = run_random(spec);
    ASSERT_TRUE(r.ok) << r.message << seed_note(c);
}

static std::string combo_name(const ::testing::TestParamInfo<Combo> &info) {
    return info.param.name();
}

INSTANTIATE_TEST_SUITE_P(Valid, Combos, ::testing::ValuesIn(valid()), combo_name);

// ---- fit x coalescing: long malloc/free runs --------------------------------

namespace {

// A correct program that only calls malloc and free: `slots` pointers, each
// step frees a random slot if it is taken, else fills it with 1..max_req
// bytes (a failed malloc is fine).  No error may be reported, and the
// checker must pass every `check_every` steps and at the end.
void malloc_free_run(dmm_heap_config cfg, uint64_t seed, size_t heap_bytes, unsigned slots, size_t max_req,
                     unsigned steps, unsigned check_every) {
    ErrorLog errs;
    errs.attach(&cfg);
    Buffer buf(heap_bytes, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, buf.data(), heap_bytes, &cfg), DMM_OK) << cfg_str(cfg);
    std::vector<void *> slot(slots, nullptr);
    Rng r(seed);
    for (unsigned i = 0; i < steps; ++i) {
        size_t k = (size_t)r.below(slots);
        if (slot[k]) {
            dmm_heap_free(h, slot[k]);
            slot[k] = nullptr;
        } else {
            slot[k] = dmm_heap_malloc(h, (size_t)r.range(1, max_req));
        }
        ASSERT_TRUE(errs.errors.empty()) << cfg_str(cfg) << ": step " << i << ": false report: "
                                         << (errs.errors[0].message ? errs.errors[0].message : "?");
        if (check_every && i % check_every == 0) {
            ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK) << cfg_str(cfg) << ": step " << i;
        }
    }
    ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK) << cfg_str(cfg);
    for (void *p : slot)
        dmm_heap_free(h, p);
    ASSERT_TRUE(errs.errors.empty()) << cfg_str(cfg);
    ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK) << cfg_str(cfg);
}

} // namespace

// Issue 25, item 7: next fit without coalescing keeps many small free blocks
// in its one list.  A failing search (rover to the end, then head to the
// rover) walked up to twice the list under one step counter, and the cycle
// guard read more than max_nodes steps as a forged cycle: false reports, a
// list cut, free blocks lost (dmm_heap_check failed).
TEST(FitCoalesce, NextFitWithoutCoalescingReportsNoFalseCycle) {
    const char *texts[] = {
        "org=single,links=singly,order=lifo,fit=next,coalesce=off",
        "preset=firstfit,org=single,fit=next,coalesce=off", // the list form (the tree refuses next fit)
    };
    for (const char *t : texts) {
        for (dmm_heap_harden hd : {DMM_HARDEN_CHECKED, DMM_HARDEN_CANARY, DMM_HARDEN_PARANOID}) {
            dmm_heap_config cfg = dmm_heap_default_config();
            const char *err = nullptr;
            ASSERT_EQ(dmm_heap_config_parse(t, &cfg, &err), DMM_OK) << t << ": " << (err ? err : "?");
            cfg.harden = hd;
            SCOPED_TRACE(t);
            malloc_free_run(cfg, 0x7e57ull + (uint64_t)hd, 64 * 1024, 64, 600, 12000, 0);
        }
    }
}

// Every fit x coalescing pair, in every valid combo that has it, on long
// malloc/free runs with the checker (the shadow-model runs above are short:
// too few free blocks to reach a walk bound).
class FitCoalescePairs : public ::testing::TestWithParam<std::pair<dmm_heap_fit, dmm_heap_coalesce>> {};

TEST_P(FitCoalescePairs, LongRunsWithChecker) {
    const auto pr = GetParam();
    unsigned n = 0;
    for (const Combo &c : valid()) {
        if (c.fit != pr.first || c.coalesce != pr.second)
            continue;
        dmm_heap_config cfg = combo_config(c);
        cfg.harden = DMM_HARDEN_CHECKED;
        SCOPED_TRACE(c.name());
        malloc_free_run(cfg, mix64(base_seed(), c.index), 64 * 1024, 64, 600, scaled_ops(8000), 1000);
        if (HasFatalFailure())
            return;
        ++n;
    }
    EXPECT_GT(n, 0u) << "no valid combo has this fit x coalescing pair";
}

static std::vector<std::pair<dmm_heap_fit, dmm_heap_coalesce>> fit_coalesce_pairs() {
    std::vector<std::pair<dmm_heap_fit, dmm_heap_coalesce>> v;
    for (dmm_heap_fit f : {DMM_FIT_FIRST, DMM_FIT_NEXT, DMM_FIT_BEST, DMM_FIT_EXACT, DMM_FIT_GOOD})
        for (dmm_heap_coalesce co : {DMM_COALESCE_OFF, DMM_COALESCE_IMMEDIATE, DMM_COALESCE_DEFERRED})
            v.emplace_back(f, co);
    return v;
}

using FitCoalesce_Pair = std::pair<dmm_heap_fit, dmm_heap_coalesce>;
static std::string fit_coalesce_name(const ::testing::TestParamInfo<FitCoalesce_Pair> &i) {
    static const char *fn[] = {"first", "next", "best", "exact", "good"};
    static const char *cn[] = {"off", "immediate", "deferred"};
    return std::string(fn[i.param.first]) + "_" + cn[i.param.second];
}

INSTANTIATE_TEST_SUITE_P(AllPairs, FitCoalescePairs, ::testing::ValuesIn(fit_coalesce_pairs()), fit_coalesce_name);

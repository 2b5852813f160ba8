// tests/heap/test_frozen_lean.cpp - a library frozen to one of the lean
// headers (configs/frozen/lean/<preset>.h: a preset's policies with stats
// and hardening off, the smallest firmware builds; docs/heap.md).  Built once
// per lean header; DMMT_LEAN_NAME names the preset it was written from.
// Also built against a checked preset compiled with DMM_HEAP_ERROR_TEXT=0
// (DMMT_NO_ERROR_TEXT): misuse is still reported, with its kind, and an
// empty message.
#include <gtest/gtest.h>

#include <cstring>

#include "dmm_test_support.h"

using namespace dmmt;

extern "C" const dmm_heap_config dmm__heap_frozen_cfg;

#ifdef DMMT_LEAN_NAME

TEST(FrozenLean, NullConfigIsTheHeader) {
    EXPECT_EQ(dmm_heap_is_frozen(), 1);
    dmm_heap_config want = dmm__heap_frozen_cfg;
    EXPECT_EQ(want.stats, DMM_STATS_OFF);
    EXPECT_EQ(want.harden, DMM_HARDEN_OFF);
    // the preset's policies, only stats and hardening differ
    dmm_heap_preset p = DMM_PRESET_COUNT;
    ASSERT_EQ(dmm_heap_preset_from_name(DMMT_LEAN_NAME, &p), DMM_OK);
    dmm_heap_config pre = dmm_heap_preset_config(p);
    pre.stats = DMM_STATS_OFF;
    pre.harden = DMM_HARDEN_OFF;
    std::string diff;
    EXPECT_TRUE(cfg_equal(want, pre, &diff)) << "field " << diff;
    Buffer b(32 * 1024, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), nullptr), DMM_OK);
    dmm_heap_config got = dmm_heap_get_config(h);
    EXPECT_TRUE(cfg_equal(got, want, &diff)) << "field " << diff;
    dmm_heap_destroy(h);
}

TEST(FrozenLean, RandomSequencesKeepEveryByte) {
    for (int variant = 0; variant < 2; ++variant) {
        RunSpec spec;
        spec.cfg = dmm__heap_frozen_cfg;
        spec.seed = mix64(base_seed(), 0x1EA0 + variant);
        spec.ops = scaled_ops(2000);
        spec.buf_size = variant ? 8 * 1024 : 64 * 1024;
        RunResult r = run_random(spec);
        ASSERT_TRUE(r.ok) << "variant " << variant << ": " << r.message;
    }
}

TEST(FrozenLean, OtherPoliciesAreRefused) {
    dmm_heap_config c = dmm__heap_frozen_cfg;
    c.harden = DMM_HARDEN_CHECKED;
    Buffer b(16 * 1024, 0);
    dmm_heap *h = nullptr;
    EXPECT_EQ(dmm_heap_init(&h, b.data(), b.size(), &c), DMM_E_CONFIG);
    c = dmm__heap_frozen_cfg;
    c.stats = DMM_STATS_FULL;
    EXPECT_EQ(dmm_heap_init(&h, b.data(), b.size(), &c), DMM_E_CONFIG);
    EXPECT_EQ(h, nullptr);
}

#endif

#ifdef DMMT_NO_ERROR_TEXT

TEST(NoErrorText, MisuseKeepsItsKindAndLosesItsSentence) {
    dmm_heap_config c = dmm__heap_frozen_cfg;
    ASSERT_NE(c.harden, DMM_HARDEN_OFF);
    ErrorLog log;
    log.attach(&c);
    c.on_error = DMM_ON_ERROR_REPORT;
    Buffer b(16 * 1024, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &c), DMM_OK);
    void *p = dmm_heap_malloc(h, 40);
    void *q = dmm_heap_malloc(h, 40);
    ASSERT_NE(p, nullptr);
    dmm_heap_free(h, p);
    dmm_heap_free(h, p); // double free
    ASSERT_EQ(log.errors.size(), 1u);
    EXPECT_EQ(log.errors[0].kind, DMM_ERR_DOUBLE_FREE);
    EXPECT_EQ(log.errors[0].op, DMM_OP_FREE);
    EXPECT_EQ(log.errors[0].ptr, p);
    ASSERT_NE(log.errors[0].message, nullptr);
    EXPECT_STREQ(log.errors[0].message, "");
    EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK); // nothing lost
    dmm_heap_free(h, q);
    dmm_heap_destroy(h);
}

#endif

// tests/pool/test_pool_frozen.cpp - the library built with
// DMM_POOL_CONFIG_HEADER (configs/frozen/pool/<name>.h): the frozen policy is
// the default, any other policy is refused, and the pool works.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

extern "C" {
#include "dmm/pool.h"
}

TEST(PoolFrozen, DefaultIsTheFrozenPolicyAndOthersAreRefused)
{
    dmm_pool_config c = dmm_pool_default_config();
    EXPECT_EQ(c.harden, DMMT_FROZEN_HARDEN);
    EXPECT_EQ(c.stats, DMM_STATS_OFF);
    EXPECT_EQ(c.lock, DMM_LOCK_NONE);
    dmm_pool_config other = c;
    other.harden = c.harden == DMM_HARDEN_OFF ? DMM_HARDEN_CHECKED : DMM_HARDEN_OFF;
    const char *why = nullptr;
    EXPECT_EQ(dmm_pool_config_check(&other, &why), DMM_E_CONFIG);
    EXPECT_NE(std::string(why).find("frozen"), std::string::npos);
    std::vector<unsigned char> mem(8192);
    dmm_pool *p = nullptr;
    EXPECT_EQ(dmm_pool_init(&p, mem.data(), mem.size(), &other), DMM_E_CONFIG);
}

TEST(PoolFrozen, AllocFreeAndTheChecker)
{
    dmm_pool_config c = dmm_pool_default_config();
    c.block_size = 48;
    c.align = 16;
    std::vector<unsigned char> mem(dmm_pool_buffer_size(&c, 32));
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, mem.data(), mem.size(), &c), DMM_OK);
    std::set<void *> live;
    for (int round = 0; round < 3; round++) {
        while (void *b = dmm_pool_alloc(p)) {
            ASSERT_TRUE(live.insert(b).second);
            std::memset(b, round, 48);
        }
        EXPECT_GE(live.size(), 32u);
        for (void *b : live)
            dmm_pool_free(p, b);
        live.clear();
        dmm_pool_check_report r{};
        ASSERT_EQ(dmm_pool_check(p, &r), DMM_OK) << r.detail;
    }
    EXPECT_EQ(dmm_pool_get_stats(p).live_blocks, 0u);
    EXPECT_EQ(dmm_pool_get_stats(p).alloc_count, 0u); // stats=off: no counters
}

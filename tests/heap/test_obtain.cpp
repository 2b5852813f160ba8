// tests/heap/test_obtain.cpp - where malloc's block comes from: a listed
// free block that fits is always taken before the top.
//
// The allocation fast path skips the search of the bins when the bitmap's
// summary word says no block is listed (engine/alloc.h, OBTAIN_NO_LISTED):
// the common case of a program that allocates everything before it frees.
// These tests guard that skip on every valid policy combination, at every
// statistics level and at hardening off and checked: a freed block (alone,
// or beside another one) must be handed out again before the top grows, the
// top must serve once the bins are empty again, and the checker must pass
// after every call (the library runs it at assertion level 3 in Debug).
// A skip taken while a block is listed would carve from the top instead
// (a higher address), which is what these tests catch.
#include <gtest/gtest.h>

#include <vector>

#include "dmm_test_support.h"

using namespace dmmt;

namespace {

struct Level {
    dmm_heap_stats_level stats;
    dmm_heap_harden harden;
};

const Level kLevels[] = {
    {DMM_STATS_OFF, DMM_HARDEN_OFF},
    {DMM_STATS_COUNTERS, DMM_HARDEN_CHECKED},
    {DMM_STATS_FULL, DMM_HARDEN_CHECKED},
    {DMM_STATS_OFF, DMM_HARDEN_CHECKED},
};

struct Heap {
    std::vector<unsigned char> buf;
    dmm_heap *h = nullptr;
    explicit Heap(const dmm_heap_config &cfg) : buf(64 * 1024) {
        EXPECT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &cfg), DMM_OK) << cfg_str(cfg);
    }
    void check(const char *where) const {
        dmm_heap_check_report rep{};
        ASSERT_EQ(dmm_heap_check(h, &rep), DMM_OK) << where << ": " << (rep.detail ? rep.detail : "?");
    }
};

std::vector<std::pair<std::string, dmm_heap_config>> configs() {
    std::vector<std::pair<std::string, dmm_heap_config>> v;
    for (const Combo &c : valid_combos()) {
        for (const Level &l : kLevels) {
            dmm_heap_config cfg = combo_config(c);
            cfg.quick_max = 0; // quick lists are their own source (the quick leaf), not the bins
            cfg.stats = l.stats;
            cfg.harden = l.harden;
            const char *why = nullptr;
            if (dmm_heap_config_check(&cfg, &why) != DMM_OK)
                continue;
            v.emplace_back(c.name() + " " + cfg_str(cfg), cfg);
        }
    }
    return v;
}

} // namespace

// One freed block: the next request of its size gets it back, not the top;
// once it is taken (no block listed again) the top serves.
TEST(Obtain, ListedBlockBeforeTop) {
    size_t n = 0;
    for (const auto &[name, cfg] : configs()) {
        SCOPED_TRACE(name);
        Heap hp(cfg);
        ASSERT_NE(hp.h, nullptr);
        void *a = dmm_heap_malloc(hp.h, 100);
        void *g = dmm_heap_malloc(hp.h, 100); // keeps a off the top
        ASSERT_NE(a, nullptr);
        ASSERT_NE(g, nullptr);
        dmm_heap_free(hp.h, a);
        hp.check("after free(a)");
        void *b = dmm_heap_malloc(hp.h, 100);
        EXPECT_EQ(b, a) << "a listed block that fits was passed over";
        void *c = dmm_heap_malloc(hp.h, 100);
        ASSERT_NE(c, nullptr);
        EXPECT_GT((char *)c, (char *)g) << "nothing listed: the block comes from the top";
        hp.check("after the top carve");
        dmm_heap_free(hp.h, b);
        dmm_heap_free(hp.h, c);
        dmm_heap_free(hp.h, g);
        hp.check("all freed");
        ++n;
    }
    EXPECT_GT(n, 100u);
}

// Two freed blocks of different sizes: taking one leaves the other listed
// (its bin's bit and the summary stay set), and it is found too.  Not for
// fit=good: it looks only in bins whose every block fits (the request
// rounded up to the next class), so it may pass over the 600-byte block by
// design and carve from the top.
TEST(Obtain, SecondListedBlockStillFound) {
    size_t n = 0;
    for (const auto &[name, cfg] : configs()) {
        if (cfg.fit == DMM_FIT_GOOD)
            continue;
        SCOPED_TRACE(name);
        ++n;
        Heap hp(cfg);
        ASSERT_NE(hp.h, nullptr);
        void *a = dmm_heap_malloc(hp.h, 100);
        void *g1 = dmm_heap_malloc(hp.h, 100);
        void *x = dmm_heap_malloc(hp.h, 600);
        void *g2 = dmm_heap_malloc(hp.h, 100);
        ASSERT_TRUE(a && g1 && x && g2);
        dmm_heap_free(hp.h, a);
        dmm_heap_free(hp.h, x);
        hp.check("after the frees");
        void *x2 = dmm_heap_malloc(hp.h, 600);
        void *a2 = dmm_heap_malloc(hp.h, 100);
        EXPECT_EQ(x2, x);
        EXPECT_EQ(a2, a);
        void *t = dmm_heap_malloc(hp.h, 100);
        ASSERT_NE(t, nullptr);
        EXPECT_GT((char *)t, (char *)g2) << "nothing listed: the block comes from the top";
        hp.check("after the top carve");
    }
    EXPECT_GT(n, 100u);
}

// tests/heap/test_walk_stats.cpp - the walker, the statistics and their
// JSON form, growth from OS pages and reset.
#include <gtest/gtest.h>

#include <cstring>

#include "dmm_test_support.h"
#include "json_mini.h"

using namespace dmmt;

namespace {

struct StopCtx {
    int calls = 0;
    int stop_at = 0;
};

int stop_cb(void *ctx, const dmm_heap_block_info *) {
    StopCtx *s = static_cast<StopCtx *>(ctx);
    ++s->calls;
    return s->calls == s->stop_at ? 7 : 0;
}

} // namespace

TEST(Walk, AddressOrderAndSizesSumToRegions) {
    for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
        dmm_heap_config cfg = dmm_heap_preset_config((dmm_heap_preset)p);
        cfg.stats = DMM_STATS_FULL;
        SCOPED_TRACE(cfg_str(cfg));
        const size_t size0 = 32 * 1024, size1 = 8 * 1024, size2 = 12 * 1024;
        Buffer b0(size0, 0), b1(size1, 0), b2(size2, 0);
        dmm_heap *h = nullptr;
        ASSERT_EQ(dmm_heap_init(&h, b0.data(), size0, &cfg), DMM_OK);
        ASSERT_EQ(dmm_heap_add_region(h, b1.data(), size1), DMM_OK);
        ASSERT_EQ(dmm_heap_add_region(h, b2.data(), size2), DMM_OK);

        // A mix of used and free blocks.
        Rng r(mix64(base_seed(), 500 + p));
        std::vector<void *> ps;
        for (int i = 0; i < 120; ++i) {
            void *q = dmm_heap_malloc(h, (size_t)r.range(1, 700));
            if (q)
                ps.push_back(q);
        }
        for (size_t i = 0; i < ps.size(); i += 3)
            dmm_heap_free(h, ps[i]);
        ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK);

        int rc = 1;
        std::vector<dmm_heap_block_info> w = walk_all(h, &rc);
        ASSERT_EQ(rc, 0);
        ASSERT_FALSE(w.empty());
        std::map<unsigned, size_t> per_region;
        std::map<unsigned, std::pair<uintptr_t, uintptr_t>> span; // first block, end of last
        for (size_t i = 0; i < w.size(); ++i) {
            const dmm_heap_block_info &x = w[i];
            per_region[x.region] += x.block_size;
            auto it = span.find(x.region);
            if (it == span.end())
                span[x.region] = {(uintptr_t)x.block, (uintptr_t)x.block + x.block_size};
            else {
                EXPECT_EQ(it->second.second, (uintptr_t)x.block)
                    << "block " << i << " does not follow its predecessor in region " << x.region;
                it->second.second = (uintptr_t)x.block + x.block_size;
            }
            if (i > 0) {
                EXPECT_GE(x.region, w[i - 1].region);
            }
            // a block starts at its one header word; the payload follows it
            EXPECT_EQ((char *)x.payload - (const char *)x.block, (long)sizeof(size_t));
            if (x.state == DMM_BLOCK_USED) {
                EXPECT_EQ(x.usable, dmm_heap_usable_size(h, x.payload));
                EXPECT_LE(x.requested, x.usable);
            }
        }
        ASSERT_EQ(per_region.size(), 3u) << "three regions expected";
        // Each region's blocks fill the region minus its overhead (the
        // caller's regions here are aligned and multiples of the granule).
        const size_t ro = dmm_heap_region_overhead();
        size_t total_blocks = 0;
        for (const auto &kv : per_region)
            total_blocks += kv.second;
        bool saw1 = false, saw2 = false;
        for (const auto &kv : span) {
            unsigned reg = kv.first;
            uintptr_t first = kv.second.first;
            if (b1.contains((void *)first, 1)) {
                saw1 = true;
                EXPECT_EQ(per_region[reg], size1 - ro) << "added region 1";
            } else if (b2.contains((void *)first, 1)) {
                saw2 = true;
                EXPECT_EQ(per_region[reg], size2 - ro) << "added region 2";
            } else {
                ASSERT_TRUE(b0.contains((void *)first, 1));
                // the first block's header word sits one word past the
                // region descriptor (ro - 2 words; the sentinel is 2 words)
                size_t ctrl = first - (uintptr_t)b0.data() - (ro - 2 * sizeof(size_t)) - sizeof(size_t);
                EXPECT_EQ(per_region[reg] + ro + ctrl, size0) << "first region + control block";
                EXPECT_GT(ctrl, 0u);
                EXPECT_EQ(ctrl % DMM_HEAP_ALIGN, 0u);
            }
        }
        EXPECT_TRUE(saw1 && saw2);
        dmm_heap_stats st = dmm_heap_get_stats(h);
        EXPECT_EQ(st.footprint, size0 + size1 + size2);
        EXPECT_EQ(st.live_block_bytes + st.free_bytes, total_blocks);

        // Stop on a non-zero return.
        for (int stop : {1, 2, 5}) {
            StopCtx s;
            s.stop_at = stop;
            EXPECT_EQ(dmm_heap_walk(h, stop_cb, &s), 7);
            EXPECT_EQ(s.calls, stop);
        }
        dmm_heap_destroy(h);
    }
}

TEST(Walk, StatesOfQuickAndFreeBlocks) {
    dmm_heap_config cfg = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    ASSERT_GT(cfg.quick_max, 16u);
    Buffer b(32 * 1024, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &cfg), DMM_OK);
    void *a = dmm_heap_malloc(h, 16);
    void *big = dmm_heap_malloc(h, 2000);
    void *c = dmm_heap_malloc(h, 16);
    ASSERT_TRUE(a && big && c);
    dmm_heap_free(h, a);   // small: parked in a quick list
    dmm_heap_free(h, big); // large: a free block
    std::vector<dmm_heap_block_info> w = walk_all(h);
    int quick = 0, freeb = 0, used = 0, top = 0;
    for (const auto &x : w) {
        if (x.payload == a) {
            EXPECT_EQ(x.state, DMM_BLOCK_QUICK);
        }
        if (x.payload == big) {
            EXPECT_EQ(x.state, DMM_BLOCK_FREE);
        }
        if (x.payload == c) {
            EXPECT_EQ(x.state, DMM_BLOCK_USED);
        }
        quick += x.state == DMM_BLOCK_QUICK;
        freeb += x.state == DMM_BLOCK_FREE;
        used += x.state == DMM_BLOCK_USED;
        top += x.state == DMM_BLOCK_TOP;
    }
    EXPECT_LE(top, 1) << "at most one top block per region";
    EXPECT_EQ(quick, 1);
    EXPECT_GE(freeb, 1);
    EXPECT_EQ(used, 1);
    dmm_heap_stats st = dmm_heap_get_stats(h);
    EXPECT_EQ(st.live_count, 1u) << "quick-list blocks are excluded from live_count";
    dmm_heap_destroy(h);
}

TEST(Walk, NullArguments) {
    EXPECT_NE(dmm_heap_walk(nullptr, stop_cb, nullptr), 0);
    Buffer b(8192, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), nullptr), DMM_OK);
    EXPECT_NE(dmm_heap_walk(h, nullptr, nullptr), 0);
    EXPECT_EQ(dmm_heap_check(nullptr, nullptr), DMM_E_NULL);
    dmm_heap_destroy(h);
}

// ---- statistics -----------------------------------------------------------------

TEST(Stats, CountsAtEachLevel) {
    for (int level = DMM_STATS_OFF; level <= DMM_STATS_FULL; ++level) {
        dmm_heap_config cfg = dmm_heap_default_config();
        cfg.stats = (dmm_heap_stats_level)level;
        SCOPED_TRACE(cfg_str(cfg));
        Buffer b(64 * 1024, 0);
        dmm_heap *h = nullptr;
        ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &cfg), DMM_OK);
        void *a = dmm_heap_malloc(h, 100);
        void *c = dmm_heap_calloc(h, 10, 10);
        void *d = dmm_heap_aligned_alloc(h, 256, 50);
        void *e = dmm_heap_malloc(h, 3);
        ASSERT_TRUE(a && c && d && e);
        a = dmm_heap_realloc(h, a, 1000);
        ASSERT_NE(a, nullptr);
        EXPECT_EQ(dmm_heap_malloc(h, SIZE_MAX), nullptr);
        EXPECT_EQ(dmm_heap_calloc(h, SIZE_MAX, 3), nullptr);
        dmm_heap_free(h, e);
        dmm_heap_free(h, nullptr);
        dmm_heap_stats st = dmm_heap_get_stats(h);
        EXPECT_EQ(st.footprint, b.size());
        EXPECT_GE(st.peak_footprint, st.footprint);
        EXPECT_GT(st.free_bytes, 0u) << "free bytes are known at every level";
        EXPECT_GT(st.largest_free, 0u);
        if (level == DMM_STATS_OFF) {
            EXPECT_EQ(st.malloc_count, 0u);
            EXPECT_EQ(st.live_count, 0u);
            EXPECT_EQ(st.failed_count, 0u);
            EXPECT_EQ(st.live_requested, 0u);
        } else {
            EXPECT_GE(st.malloc_count, 2u);
            EXPECT_EQ(st.calloc_count, 1u);
            EXPECT_GE(st.aligned_count, 1u);
            EXPECT_GE(st.realloc_count, 1u);
            EXPECT_GE(st.free_count, 1u);
            EXPECT_EQ(st.failed_count, 2u);
            EXPECT_EQ(st.error_count, 0u);
            EXPECT_EQ(st.live_count, 3u);
            EXPECT_GT(st.live_block_bytes, 1000u + 100u + 50u);
            EXPECT_GE(st.peak_block_bytes, st.live_block_bytes);
        }
        if (level == DMM_STATS_FULL) {
            EXPECT_GT(st.search_steps, 0u);
            EXPECT_GE(st.search_steps, st.search_max);
        } else {
            // counters keep a few adds per operation: search steps are full's
            EXPECT_EQ(st.search_steps, 0u);
            EXPECT_EQ(st.search_max, 0u);
        }
        uint64_t hist = 0;
        for (uint64_t x : st.size_hist)
            hist += x;
        if (level == DMM_STATS_FULL) {
            EXPECT_EQ(st.live_requested, 1000u + 100u + 50u);
            EXPECT_GE(st.peak_requested, st.live_requested);
            EXPECT_GE(hist, 4u);
            EXPECT_GE(st.size_hist[2], 1u) << "3 bytes is in bucket 2: [2, 4)";
            EXPECT_GE(st.size_hist[7], 1u) << "100 bytes is in bucket 7: [64, 128)";
        } else {
            EXPECT_EQ(hist, 0u);
            EXPECT_EQ(st.live_requested, 0u);
            EXPECT_EQ(st.peak_requested, 0u);
        }
        dmm_heap_free(h, a);
        dmm_heap_free(h, c);
        dmm_heap_free(h, d);
        st = dmm_heap_get_stats(h);
        EXPECT_EQ(st.live_count, 0u);
        EXPECT_EQ(st.live_block_bytes, 0u);
        EXPECT_EQ(st.live_requested, 0u);
        EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK);

        // reset restarts the statistics.
        dmm_heap_reset(h);
        st = dmm_heap_get_stats(h);
        EXPECT_EQ(st.malloc_count, 0u);
        EXPECT_EQ(st.failed_count, 0u);
        EXPECT_EQ(st.live_count, 0u);
        EXPECT_EQ(st.footprint, b.size());
        EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
        dmm_heap_destroy(h);
    }
}

TEST(Stats, JsonIsParseableAndMatches) {
    dmm_heap_config cfg = dmm_heap_default_config();
    cfg.stats = DMM_STATS_FULL;
    Buffer b(64 * 1024, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &cfg), DMM_OK);
    for (int i = 1; i < 40; ++i)
        dmm_heap_malloc(h, (size_t)i * 37);
    dmm_heap_malloc(h, SIZE_MAX);
    dmm_heap_stats st = dmm_heap_get_stats(h);

    size_t need = dmm_heap_stats_json(&st, nullptr, 0);
    ASSERT_GT(need, 100u);
    std::string s(need + 1, '#');
    ASSERT_EQ(dmm_heap_stats_json(&st, &s[0], s.size()), need);
    ASSERT_EQ(s[need], '\0');
    s.resize(need);

    JsonValue v;
    std::string err;
    ASSERT_TRUE(json_parse(s, &v, &err)) << err << "\n" << s;
    ASSERT_EQ(v.kind, JsonValue::Object);
    struct {
        const char *key;
        uint64_t value;
    } expect[] = {
        {"malloc_count", st.malloc_count},     {"calloc_count", st.calloc_count},
        {"realloc_count", st.realloc_count},   {"aligned_count", st.aligned_count},
        {"free_count", st.free_count},         {"failed_count", st.failed_count},
        {"error_count", st.error_count},       {"search_steps", st.search_steps},
        {"search_max", st.search_max},         {"sweep_count", st.sweep_count},
        {"grow_count", st.grow_count},         {"release_count", st.release_count},
        {"live_count", st.live_count},         {"live_block_bytes", st.live_block_bytes},
        {"peak_block_bytes", st.peak_block_bytes}, {"live_requested", st.live_requested},
        {"peak_requested", st.peak_requested}, {"footprint", st.footprint},
        {"peak_footprint", st.peak_footprint}, {"top_bytes", st.top_bytes},
        {"extent", st.extent},                 {"peak_extent", st.peak_extent},
        {"free_bytes", st.free_bytes},
        {"largest_free", st.largest_free},
    };
    for (const auto &e : expect) {
        const JsonValue *x = v.get(e.key);
        ASSERT_NE(x, nullptr) << "key " << e.key << " missing in " << s;
        ASSERT_EQ(x->kind, JsonValue::Number) << e.key;
        EXPECT_EQ(x->text, std::to_string(e.value)) << e.key;
    }
    const JsonValue *hist = v.get("size_hist");
    ASSERT_NE(hist, nullptr);
    ASSERT_EQ(hist->kind, JsonValue::Array);
    ASSERT_EQ(hist->items.size(), (size_t)DMM_HEAP_HIST_BUCKETS);
    for (size_t i = 0; i < hist->items.size(); ++i)
        EXPECT_EQ(hist->items[i].text, std::to_string(st.size_hist[i])) << "bucket " << i;

    // Truncation: returns the full length, writes a NUL-terminated prefix.
    for (size_t cap : {(size_t)1, (size_t)2, (size_t)17, need / 2, need, need + 1}) {
        std::vector<char> buf(cap + 4, '@');
        EXPECT_EQ(dmm_heap_stats_json(&st, buf.data(), cap), need) << "cap " << cap;
        size_t written = std::min(cap - 1, need);
        EXPECT_EQ(std::string(buf.data(), written), s.substr(0, written)) << "cap " << cap;
        EXPECT_EQ(buf[written], '\0') << "cap " << cap;
        EXPECT_EQ(buf[cap], '@') << "wrote past cap " << cap;
    }
    // A zeroed struct is valid JSON too.
    dmm_heap_stats zero{};
    std::string z(dmm_heap_stats_json(&zero, nullptr, 0) + 1, '\0');
    dmm_heap_stats_json(&zero, &z[0], z.size());
    z.resize(z.size() - 1);
    EXPECT_TRUE(json_parse(z, &v, &err)) << err << "\n" << z;
    dmm_heap_destroy(h);
}

TEST(Stats, JsonParserRejectsBrokenJson) {
    // The little parser must be able to fail, or the test above proves nothing.
    JsonValue v;
    std::string err;
    for (const char *bad : {"", "{", "{\"a\":1,}", "{\"a\":1 \"b\":2}", "{\"a\":01}", "[1,2",
                            "{\"a\":1}x", "{a:1}", "{\"a\":-}", "{\"a\":1,\"a\":2}"})
        EXPECT_FALSE(json_parse(bad, &v, &err)) << bad;
    EXPECT_TRUE(json_parse(" {\"a\": [1, 2.5e3, -0, true, null, \"x\\n\"]} ", &v, &err)) << err;
}

// ---- growth -----------------------------------------------------------------------

TEST(Growth, GrowsAndReleasesEmptyRegions) {
    for (int p : {DMM_PRESET_TLSF, DMM_PRESET_FIRSTFIT, DMM_PRESET_DLMALLOC, DMM_PRESET_HALFFIT}) {
        dmm_heap_config cfg = dmm_heap_preset_config((dmm_heap_preset)p);
        cfg.grow_granularity = 64 * 1024;
        cfg.release_empty = true;
        cfg.quick_max = 0; // parked blocks would keep a region non-empty
        SCOPED_TRACE(cfg_str(cfg));
        Buffer b(8 * 1024, 0);
        dmm_heap *h = nullptr;
        ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &cfg), DMM_OK);
        size_t fp0 = dmm_heap_get_stats(h).footprint;
        std::vector<void *> ps;
        for (int i = 0; i < 40; ++i) {
            void *q = dmm_heap_malloc(h, 3000);
            ASSERT_NE(q, nullptr) << "growth should serve allocation " << i;
            std::memset(q, 0x11, 3000);
            ps.push_back(q);
            ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
        }
        void *large = dmm_heap_malloc(h, 200 * 1024); // larger than the granularity
        ASSERT_NE(large, nullptr);
        std::memset(large, 0x22, 200 * 1024);
        dmm_heap_stats st = dmm_heap_get_stats(h);
        EXPECT_GE(st.grow_count, 2u);
        EXPECT_GT(st.footprint, fp0 + 200 * 1024);
        for (void *q : ps)
            dmm_heap_free(h, q);
        dmm_heap_free(h, large);
        ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
        st = dmm_heap_get_stats(h);
        EXPECT_EQ(st.release_count, st.grow_count) << "every grown region is empty again";
        EXPECT_EQ(st.footprint, fp0) << "footprint back to the caller's buffer";
        EXPECT_GE(st.peak_footprint, fp0 + 200 * 1024);
        dmm_heap_destroy(h);
    }
}

TEST(Growth, KeepsRegionsWithoutReleaseAndResetReleases) {
    dmm_heap_config cfg = dmm_heap_default_config();
    cfg.grow_granularity = 16 * 1024;
    Buffer b(8 * 1024, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &cfg), DMM_OK);
    size_t fp0 = dmm_heap_get_stats(h).footprint;
    std::vector<void *> ps;
    for (int i = 0; i < 30; ++i) {
        void *q = dmm_heap_malloc(h, 1500);
        ASSERT_NE(q, nullptr);
        ps.push_back(q);
    }
    for (void *q : ps)
        dmm_heap_free(h, q);
    dmm_heap_stats st = dmm_heap_get_stats(h);
    EXPECT_GT(st.grow_count, 0u);
    EXPECT_EQ(st.release_count, 0u);
    EXPECT_GT(st.footprint, fp0);
    dmm_heap_reset(h);
    st = dmm_heap_get_stats(h);
    EXPECT_EQ(st.footprint, fp0) << "reset gives grown regions back";
    EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
    EXPECT_NE(dmm_heap_malloc(h, 100), nullptr);
    dmm_heap_destroy(h);
}

TEST(Growth, RandomRunsWithGrowth) {
    for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
        RunSpec spec;
        spec.cfg = dmm_heap_preset_config((dmm_heap_preset)p);
        spec.cfg.grow_granularity = p % 2 ? 4096 : 32 * 1024;
        spec.cfg.release_empty = p != 1;
        spec.seed = mix64(base_seed(), 9000 + p);
        spec.ops = scaled_ops(800);
        spec.buf_size = 6 * 1024;
        spec.max_request = 20 * 1024;
        RunResult r = run_random(spec);
        ASSERT_TRUE(r.ok) << r.message;
        EXPECT_GT(r.grow_count, 0u) << describe(spec.cfg, spec.seed) << ": never grew";
    }
}

TEST(Reset, ForgetsEverything) {
    for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
        dmm_heap_config cfg = dmm_heap_preset_config((dmm_heap_preset)p);
        SCOPED_TRACE(cfg_str(cfg));
        Buffer b0(16 * 1024, 0), b1(8 * 1024, 0);
        dmm_heap *h = nullptr;
        ASSERT_EQ(dmm_heap_init(&h, b0.data(), b0.size(), &cfg), DMM_OK);
        ASSERT_EQ(dmm_heap_add_region(h, b1.data(), b1.size()), DMM_OK);
        while (dmm_heap_malloc(h, 64) != nullptr) {
        }
        dmm_heap_reset(h);
        ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
        std::vector<dmm_heap_block_info> w = walk_all(h);
        size_t unused = 0;
        for (const auto &x : w)
            unused += x.state == DMM_BLOCK_FREE || x.state == DMM_BLOCK_TOP;
        EXPECT_EQ(w.size(), 2u) << "one free (or top) block per caller region after reset";
        EXPECT_EQ(unused, w.size());
        EXPECT_EQ(dmm_heap_get_stats(h).live_count, 0u);
        EXPECT_NE(dmm_heap_malloc(h, 5000), nullptr);
        dmm_heap_destroy(h);
    }
}

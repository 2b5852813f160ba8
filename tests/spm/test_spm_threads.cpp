// tests/spm/test_spm_threads.cpp - many cores, one manager (label threads,
// run under TSan): core threads hammer dmm_spm_global_alloc/free through
// depth-4 mailboxes; no global address range is handed out twice while
// live (a shared interval map, and each object's bytes checked before its
// free), everything is given back at the end (bytes_in_use 0), the words
// add up, and the manager stops cleanly.  The static mode runs the same
// load with each core in its own slice.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

extern "C" {
#include "dmm/spm.h"
}

namespace {

struct Live {
    std::mutex mu;
    std::map<dmm_gaddr, size_t> spans; // start -> bytes
    int overlaps = 0;

    void add(dmm_gaddr a, size_t n)
    {
        std::lock_guard<std::mutex> lk(mu);
        auto next = spans.lower_bound(a);
        if (next != spans.end() && next->first < a + n) {
            overlaps++;
        }
        if (next != spans.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second > a) {
                overlaps++;
            }
        }
        spans[a] = n;
    }
    void remove(dmm_gaddr a)
    {
        std::lock_guard<std::mutex> lk(mu);
        spans.erase(a);
    }
};

struct Counts {
    uint64_t allocs = 0, frees = 0, failures = 0, words = 0, bad_data = 0, outside = 0;
};

// One core: a seeded mix of allocations (16..2000 bytes, sometimes aligned
// to 64 or 256) and frees; every object carries a pattern of its own.
void core_main(dmm_spm_global *g, unsigned core, unsigned ops, Live *live, Counts *out, size_t lo, size_t hi)
{
    std::mt19937 rng(1234u + core);
    std::vector<std::pair<dmm_gaddr, size_t>> mine;
    Counts c;
    auto release = [&](size_t i) {
        dmm_gaddr a = mine[i].first;
        size_t n = mine[i].second;
        auto *h = static_cast<unsigned char *>(dmm_spm_global_host(g, a, n));
        for (size_t j = 0; h && j < n; j++) {
            if (h[j] != static_cast<unsigned char>(a * 13 + j)) {
                c.bad_data++;
                break;
            }
        }
        live->remove(a); // before the free: the manager may hand it out again at once
        unsigned w = 0;
        dmm_spm_global_free(g, core, a, &w);
        c.words += w;
        c.frees++;
        mine[i] = mine.back();
        mine.pop_back();
    };
    for (unsigned i = 0; i < ops; i++) {
        bool do_alloc = mine.empty() || (mine.size() < 40 && rng() % 100 < 55);
        if (do_alloc) {
            size_t n = 16 + rng() % 1985;
            size_t align = rng() % 8 == 0 ? (rng() % 2 ? 64 : 256) : 16;
            unsigned w = 0;
            dmm_gaddr a = dmm_spm_global_alloc(g, core, n, align, &w);
            c.words += w;
            if (a == DMM_GNULL) {
                c.failures++;
                continue;
            }
            c.allocs++;
            if (a % align != 0 || a < lo || a + n > hi) {
                c.outside++;
            }
            live->add(a, n);
            auto *h = static_cast<unsigned char *>(dmm_spm_global_host(g, a, n));
            for (size_t j = 0; h && j < n; j++) {
                h[j] = static_cast<unsigned char>(a * 13 + j);
            }
            mine.emplace_back(a, n);
        } else {
            release(rng() % mine.size());
        }
    }
    while (!mine.empty()) {
        release(mine.size() - 1);
    }
    *out = c;
}

// offset 16: the buffer is only 16-aligned, so the 64- and 256-aligned
// requests take the shifted placement (an aligned offset inside a larger
// block, found again through its tag on free).
void run_cores(dmm_spm_mode mode, unsigned cores, unsigned ops, size_t offset = 0)
{
    const size_t size = 2u << 20;
    auto *mem = static_cast<unsigned char *>(std::aligned_alloc(4096, size + 4096));
    ASSERT_NE(mem, nullptr);
    unsigned char *buf = mem + offset;
    dmm_spm_global_config cfg = dmm_spm_global_default_config();
    cfg.mode = mode;
    cfg.cores = cores;
    cfg.mailbox_depth = 4;
    cfg.manager_thread = true;
    dmm_spm_global *g = nullptr;
    ASSERT_EQ(dmm_spm_global_create(&g, buf, size, &cfg), DMM_OK);

    Live live;
    std::vector<Counts> counts(cores);
    std::vector<std::thread> threads;
    for (unsigned k = 0; k < cores; k++) {
        size_t lo = 0, hi = size;
        if (mode == DMM_SPM_STATIC) {
            // Slice k lies past the control block (< 4 KiB) within
            // [size/cores*k, size/cores*(k+1) + control).
            lo = size / cores * k;
            hi = size / cores * (k + 1) + 4096;
        }
        threads.emplace_back(core_main, g, k, ops, &live, &counts[k], lo, hi);
    }
    for (auto &t : threads) {
        t.join();
    }
    Counts sum;
    for (const Counts &c : counts) {
        sum.allocs += c.allocs;
        sum.frees += c.frees;
        sum.failures += c.failures;
        sum.words += c.words;
        sum.bad_data += c.bad_data;
        sum.outside += c.outside;
    }
    EXPECT_EQ(live.overlaps, 0);
    EXPECT_TRUE(live.spans.empty());
    EXPECT_EQ(sum.bad_data, 0u);
    EXPECT_EQ(sum.outside, 0u);
    EXPECT_EQ(sum.failures, 0u); // 2 MiB holds every core's 40 live objects
    EXPECT_EQ(sum.allocs, sum.frees);
    EXPECT_GT(sum.allocs, uint64_t(cores) * ops / 3);

    dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
    EXPECT_EQ(s.allocs, sum.allocs);
    EXPECT_EQ(s.frees, sum.frees);
    EXPECT_EQ(s.failures, 0u);
    EXPECT_EQ(s.errors, 0u);
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_GT(s.peak_bytes, 0u);
    if (mode == DMM_SPM_DYNAMIC) {
        EXPECT_EQ(s.words_in, 3 * sum.allocs + 3 * sum.frees);
        EXPECT_EQ(s.words_out, 2 * sum.allocs);
        EXPECT_EQ(sum.words, s.words_in + s.words_out);
    } else {
        EXPECT_EQ(sum.words, 0u);
        EXPECT_EQ(s.words_in, 0u);
    }
    dmm_spm_global_destroy(g); // stops and joins the manager
    std::free(mem);
}

} // namespace

TEST(SpmThreads, FiveCoresOneManager) { run_cores(DMM_SPM_DYNAMIC, 5, 1500); }

TEST(SpmThreads, SixCoresOneManagerDepthOne)
{
    // Round trips through 1-word inbound boxes (each 3-word request may
    // block on its full box while the manager serves other cores): nothing
    // is lost and the words add up.
    const size_t size = 1u << 20;
    auto *buf = static_cast<unsigned char *>(std::aligned_alloc(4096, size));
    ASSERT_NE(buf, nullptr);
    dmm_spm_global_config cfg = dmm_spm_global_default_config();
    cfg.cores = 6;
    cfg.mailbox_depth = 1;
    dmm_spm_global *g = nullptr;
    ASSERT_EQ(dmm_spm_global_create(&g, buf, size, &cfg), DMM_OK);
    std::vector<std::thread> threads;
    for (unsigned k = 0; k < 6; k++) {
        threads.emplace_back([g, k] {
            for (unsigned i = 0; i < 300; i++) {
                dmm_gaddr a = dmm_spm_global_alloc(g, k, 64 + 16 * (i % 7), 16, nullptr);
                if (a != DMM_GNULL) {
                    dmm_spm_global_free(g, k, a, nullptr);
                }
            }
        });
    }
    for (auto &t : threads) {
        t.join();
    }
    dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
    EXPECT_EQ(s.allocs, 6u * 300u);
    EXPECT_EQ(s.frees, 6u * 300u);
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_EQ(s.words_in, 6u * 300u * 6u);
    dmm_spm_global_destroy(g);
    std::free(buf);
}

TEST(SpmThreads, FourStaticCores) { run_cores(DMM_SPM_STATIC, 4, 1500); }

TEST(SpmThreads, FourCoresOneManagerShiftedAlignments) { run_cores(DMM_SPM_DYNAMIC, 4, 1000, 16); }

TEST(SpmThreads, FourStaticCoresShiftedAlignments) { run_cores(DMM_SPM_STATIC, 4, 1000, 16); }

TEST(SpmThreads, CreateDestroyManagerRepeatedly)
{
    // The manager thread starts and stops cleanly, also when it never served.
    const size_t size = 64u << 10;
    auto *buf = static_cast<unsigned char *>(std::aligned_alloc(4096, size));
    ASSERT_NE(buf, nullptr);
    for (int i = 0; i < 20; i++) {
        dmm_spm_global *g = nullptr;
        dmm_spm_global_config cfg = dmm_spm_global_default_config();
        cfg.cores = 2;
        ASSERT_EQ(dmm_spm_global_create(&g, buf, size, &cfg), DMM_OK);
        if (i % 2) {
            dmm_gaddr a = dmm_spm_global_alloc(g, i % 2, 100, 16, nullptr);
            EXPECT_NE(a, DMM_GNULL);
            dmm_spm_global_free(g, i % 2, a, nullptr); // left in the box for destroy to drain
        }
        dmm_spm_global_destroy(g);
    }
    std::free(buf);
}

// tests/heap/test_threads.cpp - lock kinds under concurrent use (label
// "threads"; the test script runs these under ThreadSanitizer).
//
// 2-4 threads share one heap and run seeded random malloc / calloc /
// realloc / aligned_alloc / free, each verifying its own blocks' fill
// patterns before touching them.  Blocks are also handed between threads
// through a mutex-protected exchange, so blocks get freed by a thread other
// than the one that allocated them.  One thread periodically runs the
// checker, the walker and the statistics concurrently with the others.  At
// the end the checker passes and the live count equals the blocks held.
#include <gtest/gtest.h>

#include <atomic>
#include <cinttypes>
#include <cstring>
#include <mutex>
#include <thread>

#include "dmm_test_support.h"

using namespace dmmt;

namespace {

struct UserLock {
    std::mutex m;
    std::atomic<uint64_t> locks{0}, unlocks{0};
    static void lock(void *ctx) {
        UserLock *u = static_cast<UserLock *>(ctx);
        u->m.lock();
        u->locks.fetch_add(1, std::memory_order_relaxed);
    }
    static void unlock(void *ctx) {
        UserLock *u = static_cast<UserLock *>(ctx);
        u->unlocks.fetch_add(1, std::memory_order_relaxed);
        u->m.unlock();
    }
};

struct Held {
    void *p;
    size_t n;
    uint64_t id;
};

struct Exchange {
    std::mutex m;
    std::vector<Held> items;
};

struct Shared {
    dmm_heap *h;
    Exchange ex;
    std::atomic<bool> failed{false};
    std::mutex msg_m;
    std::string msg;
    std::atomic<uint64_t> next_id{1};

    void fail(const std::string &m) {
        std::lock_guard<std::mutex> g(msg_m);
        if (!failed.exchange(true))
            msg = m;
    }
};

bool verify(Shared &s, const Held &b, const char *when) {
    size_t off = find_pattern_mismatch(b.p, 0, b.n, b.id);
    if (off == SIZE_MAX)
        return true;
    char m[200];
    std::snprintf(m, sizeof m, "%s: block id %" PRIu64 " at %p (%zu bytes) corrupted at offset %zu",
                  when, b.id, b.p, b.n, off);
    s.fail(m);
    return false;
}

void worker(Shared &s, uint64_t seed, size_t ops, bool checker, std::vector<Held> *left) {
    Rng r(seed);
    std::vector<Held> mine;
    for (size_t i = 0; i < ops && !s.failed.load(std::memory_order_relaxed); ++i) {
        unsigned u = (unsigned)r.below(100);
        if (checker && i % 50 == 0) {
            dmm_heap_check_report rep{};
            if (dmm_heap_check(s.h, &rep) != DMM_OK) {
                s.fail("concurrent check: " + report_str(rep));
                break;
            }
            std::vector<dmm_heap_block_info> w = walk_all(s.h);
            if (w.empty()) {
                s.fail("concurrent walk saw no blocks");
                break;
            }
            dmm_heap_stats st = dmm_heap_get_stats(s.h);
            if (st.footprint == 0) {
                s.fail("concurrent stats: zero footprint");
                break;
            }
        }
        if (mine.empty() || u < 45) {
            size_t n = r.chance(80) ? (size_t)r.range(1, 200) : (size_t)r.range(201, 3000);
            void *p;
            unsigned kind = (unsigned)r.below(10);
            if (kind < 6)
                p = dmm_heap_malloc(s.h, n);
            else if (kind < 8)
                p = dmm_heap_calloc(s.h, 1, n);
            else
                p = dmm_heap_aligned_alloc(s.h, (size_t)64 << r.below(4), n);
            if (!p)
                continue; // heap full: fine under contention
            if (kind == 6 || kind == 7) {
                for (size_t k = 0; k < n; ++k)
                    if (static_cast<unsigned char *>(p)[k] != 0) {
                        s.fail("calloc memory not zero");
                        return;
                    }
            }
            Held b{p, n, s.next_id.fetch_add(1, std::memory_order_relaxed)};
            fill_pattern(p, 0, n, b.id);
            mine.push_back(b);
        } else if (u < 65) {
            size_t k = r.below(mine.size());
            Held b = mine[k];
            if (!verify(s, b, "before realloc"))
                return;
            size_t n = (size_t)r.range(1, 2500);
            void *q = dmm_heap_realloc(s.h, b.p, n);
            if (!q)
                continue; // b stays valid
            size_t keep = std::min(n, b.n);
            Held nb{q, n, b.id};
            if (find_pattern_mismatch(q, 0, keep, b.id) != SIZE_MAX) {
                s.fail("realloc lost the prefix");
                return;
            }
            fill_pattern(q, keep, n, b.id);
            mine[k] = nb;
        } else if (u < 75) {
            // Hand a block to whichever thread takes it next.
            size_t k = r.below(mine.size());
            if (!verify(s, mine[k], "before handing over"))
                return;
            std::lock_guard<std::mutex> g(s.ex.m);
            s.ex.items.push_back(mine[k]);
            mine[k] = mine.back();
            mine.pop_back();
        } else if (u < 80) {
            Held b{};
            bool got = false;
            {
                std::lock_guard<std::mutex> g(s.ex.m);
                if (!s.ex.items.empty()) {
                    size_t k = r.below(s.ex.items.size());
                    b = s.ex.items[k];
                    s.ex.items[k] = s.ex.items.back();
                    s.ex.items.pop_back();
                    got = true;
                }
            }
            if (got) {
                if (!verify(s, b, "taken from another thread"))
                    return;
                dmm_heap_free(s.h, b.p); // remote free
            }
        } else {
            size_t k = r.below(mine.size());
            if (!verify(s, mine[k], "before free"))
                return;
            dmm_heap_free(s.h, mine[k].p);
            mine[k] = mine.back();
            mine.pop_back();
        }
    }
    for (const Held &b : mine)
        verify(s, b, "at the end");
    *left = mine;
}

struct LockCase {
    dmm_heap_lock lock;
    int threads;
    dmm_heap_preset preset;
};

void PrintTo(const LockCase &c, std::ostream *os) {
    static const char *const ln[] = {"none", "spin", "mutex", "user"};
    *os << ln[c.lock] << "_" << c.threads << "threads_" << dmm_heap_preset_name(c.preset);
}

class Threads : public ::testing::TestWithParam<LockCase> {};

} // namespace

TEST_P(Threads, HammerOneHeap) {
    const LockCase lc = GetParam();
    dmm_heap_config cfg = dmm_heap_preset_config(lc.preset);
    cfg.lock = lc.lock;
    cfg.harden = DMM_HARDEN_CANARY;
    cfg.stats = DMM_STATS_FULL;
    cfg.split = true; // several blocks per region even for P2012's policy
    UserLock ul;
    if (lc.lock == DMM_LOCK_USER) {
        cfg.lock_hooks.lock = &UserLock::lock;
        cfg.lock_hooks.unlock = &UserLock::unlock;
        cfg.lock_hooks.ctx = &ul;
    }
    ErrorLog errs;
    errs.attach(&cfg);
    const char *reason = nullptr;
    ASSERT_EQ(dmm_heap_config_check(&cfg, &reason), DMM_OK) << (reason ? reason : "");
    Buffer buf(256 * 1024, 0);
    Buffer extra(64 * 1024, 0);
    Shared s;
    ASSERT_EQ(dmm_heap_init(&s.h, buf.data(), buf.size(), &cfg), DMM_OK) << cfg_str(cfg);
    ASSERT_EQ(dmm_heap_add_region(s.h, extra.data(), extra.size()), DMM_OK);

    const size_t ops = scaled_ops(2500);
    const uint64_t seed = mix64(base_seed(), 0x7468 + lc.lock * 16 + lc.threads);
    std::vector<std::vector<Held>> left(lc.threads);
    std::vector<std::thread> ts;
    for (int t = 0; t < lc.threads; ++t)
        ts.emplace_back(worker, std::ref(s), mix64(seed, t), ops, t == 0, &left[t]);
    for (auto &t : ts)
        t.join();
    ASSERT_FALSE(s.failed.load()) << s.msg << "\n  " << describe(cfg, seed);
    EXPECT_TRUE(errs.errors.empty()) << "error callback fired: " << err_name(errs.errors[0].kind);

    dmm_heap_check_report rep{};
    ASSERT_EQ(dmm_heap_check(s.h, &rep), DMM_OK) << report_str(rep) << "\n  " << describe(cfg, seed);
    size_t held = s.ex.items.size();
    size_t req = 0;
    for (const Held &b : s.ex.items)
        req += b.n;
    for (const auto &v : left) {
        held += v.size();
        for (const Held &b : v)
            req += b.n;
    }
    dmm_heap_stats st = dmm_heap_get_stats(s.h);
    EXPECT_EQ(st.live_count, held) << describe(cfg, seed);
    EXPECT_EQ(st.live_requested, req) << describe(cfg, seed);
    EXPECT_GT(st.malloc_count, ops / 4);

    for (const auto &v : left)
        for (const Held &b : v)
            dmm_heap_free(s.h, b.p);
    for (const Held &b : s.ex.items)
        dmm_heap_free(s.h, b.p);
    ASSERT_EQ(dmm_heap_check(s.h, &rep), DMM_OK) << report_str(rep);
    EXPECT_EQ(dmm_heap_get_stats(s.h).live_count, 0u);
    if (lc.lock == DMM_LOCK_USER) {
        EXPECT_GT(ul.locks.load(), ops) << "user hooks were not used";
        EXPECT_EQ(ul.locks.load(), ul.unlocks.load());
    }
    dmm_heap_destroy(s.h);
}

namespace {

std::vector<LockCase> lock_cases() {
    return {LockCase{DMM_LOCK_SPIN, 2, DMM_PRESET_TLSF},     LockCase{DMM_LOCK_SPIN, 4, DMM_PRESET_DLMALLOC},
            LockCase{DMM_LOCK_MUTEX, 2, DMM_PRESET_FIRSTFIT}, LockCase{DMM_LOCK_MUTEX, 4, DMM_PRESET_TLSF},
            LockCase{DMM_LOCK_USER, 3, DMM_PRESET_HALFFIT},   LockCase{DMM_LOCK_USER, 4, DMM_PRESET_P2012}};
}

std::string lock_case_name(const ::testing::TestParamInfo<LockCase> &i) {
    static const char *const ln[] = {"none", "spin", "mutex", "user"};
    return std::string(ln[i.param.lock]) + "_" + std::to_string(i.param.threads) + "threads_" +
           dmm_heap_preset_name(i.param.preset);
}

} // namespace

INSTANTIATE_TEST_SUITE_P(Locks, Threads, ::testing::ValuesIn(lock_cases()), lock_case_name);

TEST(Threads, SeveralHeapsAreIndependent) {
    // Different heaps without locks, one per thread.
    const int n = 3;
    std::vector<std::thread> ts;
    std::vector<RunResult> results(n);
    for (int t = 0; t < n; ++t)
        ts.emplace_back([t, &results] {
            RunSpec spec;
            spec.cfg = dmm_heap_preset_config((dmm_heap_preset)(t % DMM_PRESET_COUNT));
            spec.seed = mix64(base_seed(), 0x4845 + t);
            spec.ops = scaled_ops(600);
            results[t] = run_random(spec);
        });
    for (auto &t : ts)
        t.join();
    for (int t = 0; t < n; ++t)
        EXPECT_TRUE(results[t].ok) << results[t].message;
}

TEST(Threads, LockNoneIsAccepted) {
    dmm_heap_config cfg = dmm_heap_default_config();
    cfg.lock = DMM_LOCK_NONE;
    EXPECT_EQ(dmm_heap_config_check(&cfg, nullptr), DMM_OK);
    RunSpec spec;
    spec.cfg = cfg;
    spec.seed = mix64(base_seed(), 0x4E4F4E45);
    spec.ops = scaled_ops(300);
    RunResult r = run_random(spec);
    ASSERT_TRUE(r.ok) << r.message;
}

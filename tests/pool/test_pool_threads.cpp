// tests/pool/test_pool_threads.cpp - blocking allocation (label threads, run
// under TSan): many threads contend for few blocks with no block handed out
// twice and no lost wake-up; waiters are served in FIFO order and a free
// hands its block to the first waiter, not to a newcomer; timeouts return
// (functional bounds only, never precise timing).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

extern "C" {
#include "dmm/pool.h"
}

namespace {

using clk = std::chrono::steady_clock;

struct Pool {
    std::vector<unsigned char> mem;
    dmm_pool *p = nullptr;
    Pool(size_t blocks, dmm_heap_lock lock, size_t block = 64)
    {
        dmm_pool_config c = dmm_pool_default_config();
        c.block_size = block;
        c.align = 64;
        c.lock = lock;
        size_t n = dmm_pool_buffer_size(&c, blocks);
        mem.resize(n);
        EXPECT_EQ(dmm_pool_init(&p, mem.data(), n, &c), DMM_OK);
    }
    ~Pool() { dmm_pool_destroy(p); }
    size_t cap() const { return dmm_pool_get_layout(p).blocks; }
};

void wait_for_waiters(dmm_pool *p, size_t n)
{
    auto until = clk::now() + std::chrono::seconds(30);
    while (dmm_pool_get_stats(p).waiting < n && clk::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(dmm_pool_get_stats(p).waiting, n);
}

// Takes every block but the first, which is returned (held by the test).
void *hold_all_but_one_returned(dmm_pool *p, std::vector<void *> &rest)
{
    void *first = dmm_pool_alloc(p);
    while (void *b = dmm_pool_alloc(p))
        rest.push_back(b);
    return first;
}

} // namespace

class PoolContention : public ::testing::TestWithParam<dmm_heap_lock> {};

TEST_P(PoolContention, ManyThreadsFewBlocksNothingHandedOutTwice)
{
    Pool pool(3, GetParam());
    size_t cap = pool.cap();
    const int threads = 8, rounds = 300;
    std::atomic<int> in_use{0}, max_in_use{0}, errors{0};
    auto worker = [&](int id) {
        for (int r = 0; r < rounds; r++) {
            // Mostly wait forever; sometimes a short timeout that may expire.
            void *b = dmm_pool_alloc_wait(pool.p, r % 5 == 4 ? 100000 : -1);
            if (!b)
                continue;
            // mark the block as ours; a block handed out twice shows another mark
            std::memcpy(b, &id, sizeof id);
            int now = ++in_use;
            int m = max_in_use.load();
            while (now > m && !max_in_use.compare_exchange_weak(m, now)) {
            }
            if (now > static_cast<int>(cap))
                errors++;
            std::this_thread::yield();
            int seen;
            std::memcpy(&seen, b, sizeof seen);
            if (seen != id)
                errors++; // someone else wrote into our block: handed out twice
            --in_use;
            dmm_pool_free(pool.p, b);
        }
    };
    // Start with every block held, so that the workers must queue (the
    // scheduler alone may never make them wait, under TSan least of all).
    std::vector<void *> held;
    while (void *b = dmm_pool_alloc(pool.p))
        held.push_back(b);
    ASSERT_EQ(held.size(), cap);
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; i++)
        ts.emplace_back(worker, i);
    auto until = clk::now() + std::chrono::seconds(30);
    while (dmm_pool_get_stats(pool.p).waiting == 0 && clk::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_GT(dmm_pool_get_stats(pool.p).waiting, 0u);
    for (void *b : held)
        dmm_pool_free(pool.p, b);
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_LE(max_in_use.load(), static_cast<int>(cap));
    dmm_pool_stats s = dmm_pool_get_stats(pool.p);
    EXPECT_EQ(s.live_blocks, 0u);
    EXPECT_EQ(s.waiting, 0u);
    EXPECT_EQ(s.alloc_count, s.free_count);
    EXPECT_GT(s.wait_count, 0u);
    EXPECT_GT(s.handoff_count, 0u);
    dmm_pool_check_report r{};
    EXPECT_EQ(dmm_pool_check(pool.p, &r), DMM_OK) << r.detail;
}

INSTANTIATE_TEST_SUITE_P(Locks, PoolContention, ::testing::Values(DMM_LOCK_SPIN, DMM_LOCK_MUTEX));

TEST(PoolWaitOrder, WaitersAreServedInFifoOrderAndNewcomersCannotSteal)
{
    Pool pool(1, DMM_LOCK_MUTEX);
    std::vector<void *> rest; // the sizing may give a spare block: hold it too
    void *held = hold_all_but_one_returned(pool.p, rest);
    ASSERT_NE(held, nullptr);
    const int n = 5;
    std::vector<int> order;
    std::mutex m;
    std::vector<std::thread> ts;
    std::vector<std::atomic<void *>> got(n);
    for (int i = 0; i < n; i++) {
        ts.emplace_back([&, i] {
            void *b = dmm_pool_alloc_wait(pool.p, -1);
            got[i] = b;
            {
                std::lock_guard<std::mutex> g(m);
                order.push_back(i);
            }
        });
        wait_for_waiters(pool.p, static_cast<size_t>(i + 1)); // queue in a known order
    }
    void *b = held;
    for (int i = 0; i < n; i++) {
        dmm_pool_free(pool.p, b);
        // The block went to waiter i: a newcomer finds the pool empty.
        EXPECT_EQ(dmm_pool_alloc(pool.p), nullptr);
        auto until = clk::now() + std::chrono::seconds(30);
        while (!got[i].load() && clk::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ASSERT_EQ(got[i].load(), held) << "waiter " << i << " did not get the block";
        b = got[i].load();
    }
    for (auto &t : ts)
        t.join();
    ASSERT_EQ(order.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; i++)
        EXPECT_EQ(order[i], i);
    dmm_pool_stats s = dmm_pool_get_stats(pool.p);
    EXPECT_EQ(s.handoff_count, static_cast<uint64_t>(n));
    EXPECT_EQ(s.live_blocks, 1u + rest.size());
    dmm_pool_free(pool.p, b);
    for (void *x : rest)
        dmm_pool_free(pool.p, x);
    EXPECT_EQ(dmm_pool_get_stats(pool.p).live_blocks, 0u);
}

TEST(PoolWaitTimeout, ZeroReturnsAtOnceAndPositiveReturnsAfterItsTime)
{
    Pool pool(1, DMM_LOCK_MUTEX);
    std::vector<void *> rest;
    void *held = hold_all_but_one_returned(pool.p, rest);
    ASSERT_NE(held, nullptr);
    uint64_t failed0 = dmm_pool_get_stats(pool.p).failed_count;
    auto t0 = clk::now();
    EXPECT_EQ(dmm_pool_alloc_wait(pool.p, 0), nullptr);
    auto t1 = clk::now();
    EXPECT_EQ(dmm_pool_alloc_wait(pool.p, 30 * 1000 * 1000), nullptr); // 30 ms
    auto t2 = clk::now();
    EXPECT_LT(t1 - t0, std::chrono::seconds(1));
    EXPECT_GE(t2 - t1, std::chrono::milliseconds(30));
    EXPECT_LT(t2 - t1, std::chrono::seconds(20)); // generous: the machine is shared
    dmm_pool_stats s = dmm_pool_get_stats(pool.p);
    EXPECT_EQ(s.timeout_count, 1u);
    EXPECT_EQ(s.waiting, 0u);
    EXPECT_EQ(s.failed_count, failed0 + 2u);
    dmm_pool_check_report r{};
    EXPECT_EQ(dmm_pool_check(pool.p, &r), DMM_OK) << r.detail;
    // A timed wait that a free ends early gets the block.
    std::atomic<void *> got{nullptr};
    std::thread t([&] { got = dmm_pool_alloc_wait(pool.p, 20LL * 1000 * 1000 * 1000); });
    wait_for_waiters(pool.p, 1);
    dmm_pool_free(pool.p, held);
    t.join();
    EXPECT_EQ(got.load(), held);
}

TEST(PoolWaitTimeout, ManyTimedWaitersOnAnEmptyPoolAllLeave)
{
    Pool pool(1, DMM_LOCK_SPIN);
    std::vector<void *> rest;
    void *held = hold_all_but_one_returned(pool.p, rest);
    std::vector<std::thread> ts;
    std::atomic<int> nulls{0};
    for (int i = 0; i < 6; i++)
        ts.emplace_back([&, i] {
            if (!dmm_pool_alloc_wait(pool.p, (1 + i) * 2 * 1000 * 1000))
                nulls++;
        });
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(nulls.load(), 6);
    dmm_pool_stats s = dmm_pool_get_stats(pool.p);
    EXPECT_EQ(s.waiting, 0u);
    EXPECT_EQ(s.timeout_count, 6u);
    dmm_pool_free(pool.p, held);
    dmm_pool_check_report r{};
    EXPECT_EQ(dmm_pool_check(pool.p, &r), DMM_OK) << r.detail;
}

// tests/multiheap/test_multiheap_threads.cpp - real threads as nodes (label
// threads, run under TSan): each thread has a home node, allocates, hands
// some blocks to other threads (cross-node frees, locked or queued), frees
// the rest; at the end every node heap is empty and the checker passes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

extern "C" {
#include "dmm/multiheap.h"
}

namespace {

struct Param {
    dmm_mh_policy policy;
    dmm_mh_remote_free rf;
    unsigned cache; // cfg.home_cache
    unsigned homes; // threads share homes when fewer than the threads
};

class MultiheapThreads : public ::testing::TestWithParam<Param> {};

} // namespace

TEST_P(MultiheapThreads, CrossNodeTrafficLosesNothing)
{
    const unsigned nodes = 4, threads = 4;
    dmm_mh_config c = dmm_mh_default_config(nodes);
    c.policy = GetParam().policy;
    c.remote_free = GetParam().rf;
    c.home_cache = GetParam().cache;
    const unsigned homes = GetParam().homes;
    size_t bytes = dmm_mh_buffer_size(&c, 64 * 1024);
    std::vector<unsigned char> mem(bytes);
    dmm_mh *mh = nullptr;
    ASSERT_EQ(dmm_mh_init(&mh, mem.data(), bytes, &c), DMM_OK);
    // one mailbox per thread: blocks handed to it for freeing
    std::vector<std::vector<void *>> box(threads);
    std::vector<std::mutex> box_mu(threads);
    std::atomic<int> bad{0};
    std::atomic<int> running{static_cast<int>(threads)};
    auto worker = [&](unsigned id) {
        const unsigned home = id % homes;
        std::mt19937 rng(1234 + id);
        std::vector<std::pair<unsigned char *, unsigned char>> mine;
        for (int op = 0; op < 3000; op++) {
            unsigned r = rng() % 10;
            if (r < 5 || mine.empty()) {
                size_t sz = 8 + rng() % 600;
                auto *p = static_cast<unsigned char *>(dmm_mh_malloc(mh, home, sz));
                if (!p)
                    continue;
                unsigned char tag = static_cast<unsigned char>(id * 16 + (op & 15));
                p[0] = tag;
                mine.push_back({p, tag});
            } else if (r < 7) {
                auto kv = mine.back();
                mine.pop_back();
                if (kv.first[0] != kv.second)
                    bad++;
                unsigned to = rng() % threads;
                std::lock_guard<std::mutex> g(box_mu[to]);
                box[to].push_back(kv.first);
            } else {
                size_t k = rng() % mine.size();
                if (mine[k].first[0] != mine[k].second)
                    bad++;
                dmm_mh_free(mh, home, mine[k].first);
                mine[k] = mine.back();
                mine.pop_back();
            }
            if (op % 50 == 0) {
                std::vector<void *> got;
                {
                    std::lock_guard<std::mutex> g(box_mu[id]);
                    got.swap(box[id]);
                }
                for (void *p : got)
                    dmm_mh_free(mh, home, p);
            }
        }
        for (auto &kv : mine)
            dmm_mh_free(mh, home, kv.first);
        running--;
    };
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < threads; i++)
        ts.emplace_back(worker, i);
    // the checker and the statistics while the threads run (caches included)
    int checks = 0;
    while (running.load() > 0 && checks < 200) {
        const char *d = nullptr;
        EXPECT_EQ(dmm_mh_check(mh, &d), DMM_OK) << d;
        for (unsigned i = 0; i < nodes; i++)
            (void)dmm_mh_get_node_stats(mh, i);
        checks++;
    }
    for (auto &t : ts)
        t.join();
    for (unsigned i = 0; i < threads; i++)
        for (void *p : box[i])
            dmm_mh_free(mh, i % homes, p);
    EXPECT_EQ(bad.load(), 0);
    // drain every queue (a visit by the owner), then everything is free
    for (unsigned i = 0; i < nodes; i++)
        dmm_mh_free(mh, i, dmm_mh_malloc(mh, i, 8));
    for (unsigned i = 0; i < nodes; i++) // what the home caches hold goes back
        dmm_mh_cache_flush(mh, i);
    const char *d = nullptr;
    EXPECT_EQ(dmm_mh_check(mh, &d), DMM_OK) << d;
    uint64_t remote = 0;
    for (unsigned i = 0; i < nodes; i++) {
        dmm_mh_node_stats s = dmm_mh_get_node_stats(mh, i);
        if (c.policy != DMM_MH_CENTRAL || i == 0) {
            EXPECT_EQ(s.heap.live_count, 0u) << "node " << i;
        }
        remote += s.remote_frees;
    }
    EXPECT_GT(remote, 0u);
    dmm_mh_destroy(mh);
}

INSTANTIATE_TEST_SUITE_P(Policies, MultiheapThreads,
                         ::testing::Values(Param{DMM_MH_LAZY, DMM_MH_FREE_LOCKED, 0, 4},
                                           Param{DMM_MH_LAZY, DMM_MH_FREE_QUEUE, 0, 4},
                                           Param{DMM_MH_CENTRAL, DMM_MH_FREE_LOCKED, 0, 4},
                                           Param{DMM_MH_PRIVATE, DMM_MH_FREE_QUEUE, 0, 4},
                                           Param{DMM_MH_PRIORITY, DMM_MH_FREE_LOCKED, 0, 4},
                                           // home caches: one thread per home, and homes shared
                                           Param{DMM_MH_LAZY, DMM_MH_FREE_QUEUE, 8, 4},
                                           Param{DMM_MH_LAZY, DMM_MH_FREE_LOCKED, 4, 2},
                                           Param{DMM_MH_PRIVATE, DMM_MH_FREE_QUEUE, 16, 2},
                                           Param{DMM_MH_PRIORITY, DMM_MH_FREE_QUEUE, 8, 4}));

// A node taken out of service while threads run: its blocks' frees are
// reported and kept, allocation goes on from the other nodes, and nothing
// held by the other nodes is lost.
class MultiheapThreadsFault : public ::testing::TestWithParam<unsigned> {};

TEST_P(MultiheapThreadsFault, ANodeGoesOfflineWhileThreadsRun)
{
    const unsigned nodes = 4, threads = 4;
    std::atomic<uint64_t> reported{0};
    dmm_mh_config c = dmm_mh_default_config(nodes);
    c.home_cache = GetParam(); // with caches, node 2's cache keeps its blocks parked
    // Remote frees under the owner's lock, so that every free has reached its
    // heap when the threads end (a queue of the offline node is never drained).
    c.remote_free = DMM_MH_FREE_LOCKED;
    // With its home out of service, a thread's every try is a try-lock that
    // skips busy heaps; the final blocking pass makes it wait instead of
    // failing when all were busy at once.
    c.final_blocking_pass = true;
    c.error_fn = [](void *ctx, const dmm_error *e) {
        if (e->kind == DMM_ERR_INVALID_POINTER)
            static_cast<std::atomic<uint64_t> *>(ctx)->fetch_add(1);
    };
    c.error_ctx = &reported;
    size_t bytes = dmm_mh_buffer_size(&c, 256 * 1024);
    std::vector<unsigned char> mem(bytes);
    dmm_mh *mh = nullptr;
    ASSERT_EQ(dmm_mh_init(&mh, mem.data(), bytes, &c), DMM_OK);
    std::atomic<bool> go{false};
    std::atomic<int> failures{0};
    auto worker = [&](unsigned id) {
        while (!go.load()) {
        }
        std::mt19937 rng(99 + id);
        std::vector<void *> mine;
        for (int op = 0; op < 4000; op++) {
            if (mine.size() < 64 && (rng() % 2 || mine.empty())) {
                void *p = dmm_mh_malloc(mh, id, 16 + rng() % 300);
                if (!p)
                    failures++;
                else
                    mine.push_back(p);
            } else {
                size_t k = rng() % mine.size();
                dmm_mh_free(mh, id, mine[k]); // refused (and kept) if its node is offline
                mine[k] = mine.back();
                mine.pop_back();
            }
        }
        for (void *p : mine)
            dmm_mh_free(mh, id, p);
    };
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < threads; i++)
        ts.emplace_back(worker, i);
    go = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_EQ(dmm_mh_set_offline(mh, 2, true), DMM_OK); // the fault, mid-run
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(failures.load(), 0); // the other nodes served node 2's home
    for (unsigned i = 0; i < nodes; i++) // node 2's cache keeps its blocks: out of service
        dmm_mh_cache_flush(mh, i);
    dmm_mh_node_stats s2 = dmm_mh_get_node_stats(mh, 2);
    EXPECT_EQ(s2.offline_frees, reported.load());
    // every refused block is kept, and the blocks parked in node 2's cache
    EXPECT_EQ(s2.heap.live_count, s2.offline_frees + s2.cached);
    for (unsigned i = 0; i < nodes; i++) {
        if (i != 2) {
            EXPECT_EQ(dmm_mh_get_node_stats(mh, i).heap.live_count, 0u) << "node " << i;
        }
    }
    const char *d = nullptr;
    EXPECT_EQ(dmm_mh_check(mh, &d), DMM_OK) << d;
    dmm_mh_destroy(mh);
}

INSTANTIATE_TEST_SUITE_P(HomeCache, MultiheapThreadsFault, ::testing::Values(0u, 8u));

// The home cache's owner path (docs/multiheap.md, "Owned caches"): the first
// thread to use a home's cache enters it without an atomic read-modify-write.
// Other threads must still get in safely: the checker and the statistics
// while the owner runs (they keep the owner out for a moment), a second
// thread on the same home (the cache becomes shared for good), and a thread
// that frees a block the owner already freed (a double free, reported).
TEST(MultiheapOwnedCache, OtherThreadsGetInWhileTheOwnerRuns)
{
    const unsigned nodes = 2;
    dmm_mh_config c = dmm_mh_default_config(nodes);
    std::atomic<uint64_t> counts[2] = {{0}, {0}}; // double frees, other errors
    c.error_fn = [](void *ctx, const dmm_error *e) {
        auto *n = static_cast<std::atomic<uint64_t> *>(ctx);
        n[e->kind == DMM_ERR_DOUBLE_FREE ? 0 : 1].fetch_add(1);
    };
    c.error_ctx = counts;
    size_t bytes = dmm_mh_buffer_size(&c, 512 * 1024);
    std::vector<unsigned char> mem(bytes);
    dmm_mh *mh = nullptr;
    ASSERT_EQ(dmm_mh_init(&mh, mem.data(), bytes, &c), DMM_OK);
    auto work = [&](unsigned home, unsigned seed, int ops) {
        std::mt19937 rng(seed);
        std::vector<unsigned char *> mine;
        for (int op = 0; op < ops; op++) {
            if (mine.size() < 48 && (rng() % 2 || mine.empty())) {
                size_t n = 16 + rng() % 400;
                auto *p = static_cast<unsigned char *>(dmm_mh_malloc(mh, home, n));
                ASSERT_NE(p, nullptr);
                std::memset(p, 0xA5, n); // TSan sees any block handed out twice at once
                mine.push_back(p);
            } else {
                size_t k = rng() % mine.size();
                dmm_mh_free(mh, home, mine[k]);
                mine[k] = mine.back();
                mine.pop_back();
            }
        }
        for (void *p : mine)
            dmm_mh_free(mh, home, p);
    };
    // the owner runs while another thread checks and reads statistics
    std::atomic<bool> done{false};
    std::atomic<int> bad_checks{0}, checks{0};
    std::thread owner([&] {
        work(0, 1, 20000);
        done = true;
    });
    std::thread checker([&] {
        while (!done.load() || checks.load() < 3) {
            const char *d = nullptr;
            if (dmm_mh_check(mh, &d) != DMM_OK)
                bad_checks++;
            (void)dmm_mh_get_node_stats(mh, 0);
            checks++;
        }
    });
    owner.join();
    checker.join();
    EXPECT_EQ(bad_checks.load(), 0);
    EXPECT_GT(dmm_mh_get_node_stats(mh, 0).cache_hits, 0u);
    // two threads on one home: the cache is shared from then on
    std::thread t1([&] { work(0, 2, 8000); });
    std::thread t2([&] { work(0, 3, 8000); });
    t1.join();
    t2.join();
    // a double free across threads: freed by home 1's owner, then by this thread
    void *p = nullptr;
    std::thread a([&] {
        p = dmm_mh_malloc(mh, 1, 64);
        dmm_mh_free(mh, 1, p); // parked by the owner, no lock
    });
    a.join();
    ASSERT_NE(p, nullptr);
    dmm_mh_free(mh, 1, p); // parked again, by another thread
    for (unsigned i = 0; i < nodes; i++)
        dmm_mh_cache_flush(mh, i);
    EXPECT_EQ(counts[0].load(), 1u); // the double free, reported once
    EXPECT_EQ(counts[1].load(), 0u);
    for (unsigned i = 0; i < nodes; i++)
        EXPECT_EQ(dmm_mh_get_node_stats(mh, i).heap.live_count, 0u) << "node " << i;
    const char *d = nullptr;
    EXPECT_EQ(dmm_mh_check(mh, &d), DMM_OK) << d;
    dmm_mh_destroy(mh);
}

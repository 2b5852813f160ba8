// tests/multiheap/test_multiheap.cpp - the multi-heap: address-to-node
// mapping, the try order, the four selection policies, busy heaps skipped,
// queued remote frees that lose nothing, offline nodes, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include "dmm/multiheap.h"
}

namespace {

struct Errors {
    std::vector<dmm_error_kind> kinds;
    static void fn(void *ctx, const dmm_error *e) { static_cast<Errors *>(ctx)->kinds.push_back(e->kind); }
};

struct MH {
    std::vector<unsigned char> mem;
    dmm_mh *mh = nullptr;
    MH(dmm_mh_config c, size_t per_node = 16384)
    {
        size_t n = dmm_mh_buffer_size(&c, per_node);
        EXPECT_GT(n, 0u);
        mem.resize(n);
        EXPECT_EQ(dmm_mh_init(&mh, mem.data(), n, &c), DMM_OK);
    }
    ~MH()
    {
        if (mh)
            dmm_mh_destroy(mh);
    }
};

// The seed's own design: remote frees under the owner's lock, no home
// cache, so every free reaches its heap at once (the tests of exact heap
// counters use it; the default queues remote frees and caches home frees).
dmm_mh_config seed_config(unsigned nodes)
{
    dmm_mh_config c = dmm_mh_default_config(nodes);
    c.remote_free = DMM_MH_FREE_LOCKED;
    c.home_cache = 0;
    return c;
}

void expect_ok(dmm_mh *mh)
{
    const char *d = nullptr;
    ASSERT_EQ(dmm_mh_check(mh, &d), DMM_OK) << d;
}

} // namespace

// The owner is computed by a multiply, not a divide, when the node size is
// no power of two: every byte of the buffer, walked in order, must map to
// no node (control block), then nodes 0..n-1 in equal contiguous ranges,
// then no node (tail).
TEST(MultiheapMap, OwnerByMultiplyMatchesEqualRanges)
{
    for (unsigned nodes : {3u, 7u, 9u, 64u}) {
        for (size_t per_node : {size_t(16384), size_t(16384 + 192), size_t(100000)}) {
            dmm_mh_config c = seed_config(nodes);
            size_t bytes = dmm_mh_buffer_size(&c, per_node) + 4096 + 8 * nodes; // odd spare: odd node sizes
            std::vector<unsigned char> mem(bytes);
            dmm_mh *mh = nullptr;
            ASSERT_EQ(dmm_mh_init(&mh, mem.data(), bytes, &c), DMM_OK);
            std::vector<size_t> len(nodes, 0);
            unsigned last = DMM_MH_NO_NODE;
            bool seen_any = false, after = false;
            for (size_t off = 0; off < bytes; off++) {
                unsigned o = dmm_mh_owner(mh, mem.data() + off);
                if (o == DMM_MH_NO_NODE) {
                    after = seen_any;
                } else {
                    ASSERT_FALSE(after) << "a node after the tail at " << off;
                    ASSERT_LT(o, nodes);
                    ASSERT_TRUE(o == last || o == (seen_any ? last + 1 : 0u)) << "owner jumps at " << off;
                    seen_any = true;
                    len[o]++;
                }
                last = o == DMM_MH_NO_NODE ? last : o;
            }
            for (unsigned i = 0; i < nodes; i++)
                ASSERT_EQ(len[i], len[0]) << nodes << " nodes, node " << i;
            EXPECT_GE(len[0], per_node);
            EXPECT_EQ(len[0] % 64, 0u);
            dmm_mh_destroy(mh);
        }
    }
}

TEST(MultiheapMap, OwnerIsTheRangeThatHoldsThePointer)
{
    dmm_mh_config c = dmm_mh_default_config(9);
    MH m(c);
    std::mt19937_64 rng(7);
    std::map<unsigned, std::vector<unsigned char *>> by_owner;
    for (int i = 0; i < 400; i++) {
        unsigned home = rng() % 9;
        auto *p = static_cast<unsigned char *>(dmm_mh_malloc(m.mh, home, 8 + rng() % 200));
        ASSERT_NE(p, nullptr);
        unsigned o = dmm_mh_owner(m.mh, p);
        ASSERT_LT(o, 9u);
        EXPECT_EQ(o, home); // plenty of room: every request is served at home
        EXPECT_EQ(dmm_mh_owner(m.mh, p + 7), o);
        by_owner[o].push_back(p);
    }
    // ranges are disjoint and ordered by node id
    for (auto &a : by_owner) {
        for (auto &b : by_owner) {
            if (a.first < b.first) {
                for (auto *p : a.second) {
                    for (auto *q : b.second) {
                        ASSERT_LT(p, q);
                    }
                }
            }
        }
    }
    int local = 0;
    EXPECT_EQ(dmm_mh_owner(m.mh, &local), DMM_MH_NO_NODE);
    EXPECT_EQ(dmm_mh_owner(m.mh, m.mem.data()), DMM_MH_NO_NODE); // the control block
    EXPECT_EQ(dmm_mh_owner(m.mh, m.mem.data() + m.mem.size() + 4096), DMM_MH_NO_NODE);
    for (auto &kv : by_owner)
        for (auto *p : kv.second)
            dmm_mh_free(m.mh, kv.first, p);
    expect_ok(m.mh);
}

TEST(MultiheapMap, DistanceAndNearestFirstOrder)
{
    dmm_mh_config c = dmm_mh_default_config(16);
    MH m(c, 4096);
    EXPECT_EQ(dmm_mh_distance(m.mh, 0, 15), 6u); // (0,0) to (3,3)
    EXPECT_EQ(dmm_mh_distance(m.mh, 5, 6), 1u);
    EXPECT_EQ(dmm_mh_distance(m.mh, 3, 12), 6u);
    for (unsigned a = 0; a < 16; a++)
        for (unsigned b = 0; b < 16; b++)
            EXPECT_EQ(dmm_mh_distance(m.mh, a, b), dmm_mh_distance(m.mh, b, a));
    for (unsigned h = 0; h < 16; h++) {
        const uint16_t *row = dmm_mh_try_order(m.mh, h);
        ASSERT_NE(row, nullptr);
        EXPECT_EQ(row[0], h);
        std::set<unsigned> seen(row, row + 16);
        EXPECT_EQ(seen.size(), 16u);
        for (unsigned k = 1; k < 16; k++) {
            unsigned d0 = dmm_mh_distance(m.mh, h, row[k - 1]), d1 = dmm_mh_distance(m.mh, h, row[k]);
            EXPECT_TRUE(d0 < d1 || (d0 == d1 && row[k - 1] < row[k]) || k == 1) << h << " " << k;
        }
    }
}

TEST(MultiheapPolicy, LazySpillsToTheNearestNodePrivateFailsCentralServes)
{
    for (int pol = DMM_MH_LAZY; pol <= DMM_MH_PRIORITY; pol++) {
        SCOPED_TRACE(dmm_mh_policy_name(static_cast<dmm_mh_policy>(pol)));
        dmm_mh_config c = seed_config(4);
        c.policy = static_cast<dmm_mh_policy>(pol);
        MH m(c, 8192);
        std::vector<void *> got;
        while (void *p = dmm_mh_malloc(m.mh, 0, 512)) {
            got.push_back(p);
            if (got.size() > 200)
                break;
        }
        dmm_mh_node_stats s0 = dmm_mh_get_node_stats(m.mh, 0);
        EXPECT_EQ(s0.failures, 1u);
        if (pol == DMM_MH_PRIVATE) {
            for (void *p : got)
                EXPECT_EQ(dmm_mh_owner(m.mh, p), 0u);
            EXPECT_EQ(s0.served_remote, 0u);
        } else if (pol == DMM_MH_CENTRAL) {
            EXPECT_GT(got.size(), 40u); // the whole range
        } else {
            EXPECT_GT(s0.served_remote, 0u);
            // the first spill went to a nearest node (1 or 2 on a 2x2 mesh)
            auto first_remote = std::find_if(got.begin(), got.end(),
                                             [&](void *p) { return dmm_mh_owner(m.mh, p) != 0; });
            ASSERT_NE(first_remote, got.end());
            EXPECT_EQ(dmm_mh_distance(m.mh, 0, dmm_mh_owner(m.mh, *first_remote)), 1u);
            // every node served some
            std::set<unsigned> owners;
            for (void *p : got)
                owners.insert(dmm_mh_owner(m.mh, p));
            EXPECT_EQ(owners.size(), 4u);
        }
        expect_ok(m.mh);
        for (void *p : got)
            dmm_mh_free(m.mh, 3, p); // freed by another node
        expect_ok(m.mh);
        for (unsigned i = 0; i < 4; i++)
            EXPECT_EQ(dmm_mh_get_node_stats(m.mh, i).heap.live_count, 0u);
    }
}

namespace {

// Lock hooks where some nodes are always busy for try_lock (blocking locks
// succeed): what the skip and the priority wait do.
struct BusyLocks {
    std::set<unsigned> busy;
    int waits = 0, tries = 0;
    static bool try_lock(void *ctx, unsigned node)
    {
        auto *b = static_cast<BusyLocks *>(ctx);
        b->tries++;
        return !b->busy.count(node);
    }
    static void lock(void *ctx, unsigned) { static_cast<BusyLocks *>(ctx)->waits++; }
    static void unlock(void *, unsigned) {}
};

} // namespace

TEST(MultiheapPolicy, LazySkipsBusyHeapsPriorityWaitsFinalPassWaits)
{
    for (int pol : {DMM_MH_LAZY, DMM_MH_PRIORITY}) {
        for (bool final_pass : {false, true}) {
            BusyLocks bl;
            bl.busy = {1, 2};
            dmm_mh_config c = dmm_mh_default_config(4);
            c.policy = static_cast<dmm_mh_policy>(pol);
            c.final_blocking_pass = final_pass;
            c.lock_ops = {BusyLocks::try_lock, BusyLocks::lock, BusyLocks::unlock, &bl};
            MH m(c, 8192);
            std::vector<void *> got;
            while (void *p = dmm_mh_malloc(m.mh, 0, 1024))
                got.push_back(p);
            std::set<unsigned> owners;
            for (void *p : got)
                owners.insert(dmm_mh_owner(m.mh, p));
            dmm_mh_node_stats s = dmm_mh_get_node_stats(m.mh, 0);
            if (pol == DMM_MH_LAZY && !final_pass) {
                EXPECT_EQ(owners, (std::set<unsigned>{0, 3})); // 1 and 2 were always busy
                EXPECT_GT(s.skipped_busy, 0u);
            } else {
                EXPECT_EQ(owners.size(), 4u);
                if (pol == DMM_MH_PRIORITY) {
                    EXPECT_EQ(s.skipped_busy, 0u);
                }
            }
            for (void *p : got)
                dmm_mh_free(m.mh, 0, p);
            expect_ok(m.mh);
        }
    }
}

TEST(MultiheapFree, QueuedRemoteFreesLoseNothing)
{
    dmm_mh_config c = seed_config(4);
    c.remote_free = DMM_MH_FREE_QUEUE;
    MH m(c, 65536);
    std::vector<void *> a;
    for (int i = 0; i < 100; i++)
        a.push_back(dmm_mh_malloc(m.mh, 0, 64 + i));
    for (void *p : a)
        dmm_mh_free(m.mh, 2, p); // node 2 frees node 0's blocks: queued
    dmm_mh_node_stats s = dmm_mh_get_node_stats(m.mh, 0);
    EXPECT_EQ(s.remote_frees, 100u);
    EXPECT_EQ(s.queued_frees, 100u);
    EXPECT_EQ(s.heap.live_count, 100u); // still in the queue
    expect_ok(m.mh);
    void *p = dmm_mh_malloc(m.mh, 0, 32); // the owner drains on its next visit
    s = dmm_mh_get_node_stats(m.mh, 0);
    EXPECT_EQ(s.heap.live_count, 1u);
    dmm_mh_free(m.mh, 0, p);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 0).heap.live_count, 0u);
    expect_ok(m.mh);
}

TEST(MultiheapFault, AnOfflineNodeIsSkippedItsBlocksKeptOthersUnaffected)
{
    Errors errs;
    dmm_mh_config c = seed_config(4);
    c.error_fn = Errors::fn;
    c.error_ctx = &errs;
    MH m(c, 16384);
    void *on1 = dmm_mh_malloc(m.mh, 1, 100);
    void *on2 = dmm_mh_malloc(m.mh, 2, 100);
    std::memset(on1, 0x5A, 100);
    ASSERT_EQ(dmm_mh_owner(m.mh, on1), 1u);
    ASSERT_EQ(dmm_mh_set_offline(m.mh, 1, true), DMM_OK);
    void *p = dmm_mh_malloc(m.mh, 1, 100); // home 1 is out: served elsewhere
    ASSERT_NE(p, nullptr);
    EXPECT_NE(dmm_mh_owner(m.mh, p), 1u);
    dmm_mh_free(m.mh, 1, on1); // refused and kept
    ASSERT_EQ(errs.kinds.size(), 1u);
    EXPECT_EQ(errs.kinds[0], DMM_ERR_INVALID_POINTER);
    EXPECT_EQ(static_cast<unsigned char *>(on1)[0], 0x5A);
    dmm_mh_node_stats s1 = dmm_mh_get_node_stats(m.mh, 1);
    EXPECT_TRUE(s1.offline);
    EXPECT_EQ(s1.offline_frees, 1u);
    EXPECT_EQ(s1.heap.live_count, 1u);
    dmm_mh_free(m.mh, 2, on2); // other nodes work as before
    dmm_mh_free(m.mh, 1, p);
    expect_ok(m.mh);
    ASSERT_EQ(dmm_mh_set_offline(m.mh, 1, false), DMM_OK);
    dmm_mh_free(m.mh, 1, on1);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 1).heap.live_count, 0u);
    EXPECT_EQ(dmm_mh_set_offline(m.mh, 9, true), DMM_E_RANGE);
    dmm_mh_config cc = dmm_mh_default_config(4);
    cc.policy = DMM_MH_CENTRAL;
    MH central(cc, 4096);
    EXPECT_EQ(dmm_mh_set_offline(central.mh, 1, true), DMM_E_UNSUPPORTED);
}

TEST(MultiheapFault, PrivateNodeOfflineFailsOthersServe)
{
    dmm_mh_config c = dmm_mh_default_config(4);
    c.policy = DMM_MH_PRIVATE;
    MH m(c, 8192);
    ASSERT_EQ(dmm_mh_set_offline(m.mh, 2, true), DMM_OK);
    EXPECT_EQ(dmm_mh_malloc(m.mh, 2, 16), nullptr);
    void *p = dmm_mh_malloc(m.mh, 3, 16);
    EXPECT_EQ(dmm_mh_owner(m.mh, p), 3u);
    dmm_mh_free(m.mh, 3, p);
}

TEST(MultiheapRealloc, GrowsInPlaceOrMovesAcrossNodesKeepingTheData)
{
    dmm_mh_config c = dmm_mh_default_config(4);
    MH m(c, 16384);
    auto *p = static_cast<unsigned char *>(dmm_mh_malloc(m.mh, 0, 100));
    for (int i = 0; i < 100; i++)
        p[i] = static_cast<unsigned char>(i);
    auto *q = static_cast<unsigned char *>(dmm_mh_realloc(m.mh, 0, p, 6000));
    ASSERT_NE(q, nullptr);
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(q[i], i);
    ASSERT_EQ(dmm_mh_owner(m.mh, q), 0u);
    void *blocker = dmm_mh_malloc(m.mh, 0, 5000); // node 0 now lacks the room for 12000
    ASSERT_EQ(dmm_mh_owner(m.mh, blocker), 0u);
    auto *r = static_cast<unsigned char *>(dmm_mh_realloc(m.mh, 0, q, 12000)); // node 0 cannot hold it: moves
    ASSERT_NE(r, nullptr);
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(r[i], i);
    EXPECT_NE(dmm_mh_owner(m.mh, r), 0u);
    EXPECT_GE(dmm_mh_usable_size(m.mh, r), 12000u);
    EXPECT_EQ(dmm_mh_realloc(m.mh, 1, r, 0), nullptr);
    dmm_mh_free(m.mh, 0, blocker);
    expect_ok(m.mh);
    dmm_mh_handle h{m.mh, 2};
    dmm_allocator a;
    dmm_mh_as_allocator(&h, &a);
    void *x = a.calloc(a.ctx, 10, 10);
    ASSERT_NE(x, nullptr);
    EXPECT_EQ(dmm_mh_owner(m.mh, x), 2u);
    a.free(a.ctx, x);
}

TEST(MultiheapBadInput, ConfigAndPointers)
{
    const char *why = nullptr;
    dmm_mh_config c = dmm_mh_default_config(0);
    EXPECT_EQ(dmm_mh_config_check(&c, &why), DMM_E_CONFIG);
    c = dmm_mh_default_config(300);
    EXPECT_EQ(dmm_mh_config_check(&c, &why), DMM_E_CONFIG);
    c = dmm_mh_default_config(4);
    c.mesh_width = 9;
    EXPECT_EQ(dmm_mh_config_check(&c, &why), DMM_E_CONFIG);
    c = dmm_mh_default_config(2);
    uint16_t bad[] = {0, 1, 0, 1}; // row 1 does not start with 1
    c.order = bad;
    EXPECT_EQ(dmm_mh_config_check(&c, &why), DMM_E_CONFIG);
    EXPECT_NE(std::string(why).find("home"), std::string::npos);
    uint16_t good[] = {0, 1, 1, 0};
    c.order = good;
    EXPECT_EQ(dmm_mh_config_check(&c, &why), DMM_OK);
    dmm_mh_policy pol;
    EXPECT_EQ(dmm_mh_policy_from_name("priority", &pol), DMM_OK);
    EXPECT_EQ(pol, DMM_MH_PRIORITY);
    EXPECT_EQ(dmm_mh_policy_from_name("prio", &pol), DMM_E_CONFIG);
    std::vector<unsigned char> small(256);
    dmm_mh *mh = nullptr;
    c = dmm_mh_default_config(4);
    EXPECT_EQ(dmm_mh_init(&mh, small.data(), small.size(), &c), DMM_E_TOO_SMALL);
    Errors errs;
    c.error_fn = Errors::fn;
    c.error_ctx = &errs;
    MH m(c, 4096);
    int local;
    dmm_mh_free(m.mh, 0, &local);
    EXPECT_EQ(dmm_mh_malloc(m.mh, 4, 16), nullptr); // no such home
    ASSERT_EQ(errs.kinds.size(), 1u);
    EXPECT_EQ(errs.kinds[0], DMM_ERR_FOREIGN_POINTER);
    expect_ok(m.mh);
}

TEST(MultiheapAligned, AlignedRequestsFollowThePolicy)
{
    dmm_mh_config c = dmm_mh_default_config(4);
    MH m(c, 16384);
    std::vector<void *> v;
    for (int i = 0; i < 24; i++) { // 24 KB: more than node 1's 16 KiB
        void *p = dmm_mh_aligned_alloc(m.mh, 1, 256, 1000);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
        v.push_back(p);
    }
    EXPECT_EQ(dmm_mh_owner(m.mh, v.front()), 1u);
    EXPECT_NE(dmm_mh_owner(m.mh, v.back()), 1u); // node 1 filled up: spilled
    EXPECT_EQ(dmm_mh_aligned_alloc(m.mh, 1, 48, 10), nullptr);
    for (void *p : v)
        dmm_mh_free(m.mh, 1, p);
    expect_ok(m.mh);
}

// ---- the home cache (cfg.home_cache) ------------------------------------------------

namespace {

dmm_mh_config cached_config(unsigned nodes, unsigned per_class, Errors *errs = nullptr)
{
    dmm_mh_config c = seed_config(nodes);
    c.home_cache = per_class;
    if (errs) {
        c.error_fn = Errors::fn;
        c.error_ctx = errs;
    }
    return c;
}

size_t cached_total(dmm_mh *mh)
{
    size_t n = 0;
    for (unsigned i = 0; i < dmm_mh_nodes(mh); i++)
        n += dmm_mh_get_node_stats(mh, i).cached;
    return n;
}

} // namespace

TEST(MultiheapCache, ConfigRules)
{
    dmm_mh_config c = dmm_mh_default_config(4);
    // the default is the configuration measured best on real threads
    EXPECT_EQ(c.home_cache, DMM_MH_DEFAULT_HOME_CACHE);
    EXPECT_EQ(c.remote_free, DMM_MH_FREE_QUEUE);
    EXPECT_EQ(c.policy, DMM_MH_LAZY);
    EXPECT_NE(c.heap.harden, DMM_HARDEN_OFF); // hardening stays on
    c.home_cache = DMM_MH_CACHE_MAX_BLOCKS + 1;
    const char *why = nullptr;
    EXPECT_EQ(dmm_mh_config_check(&c, &why), DMM_E_CONFIG);
    c.home_cache = 8;
    c.policy = DMM_MH_PRIVATE;
    EXPECT_EQ(dmm_mh_config_check(&c, &why), DMM_OK);
    // central ignores the cache: one heap, one lock, no home owns a range
    c.policy = DMM_MH_CENTRAL;
    EXPECT_EQ(dmm_mh_config_check(&c, &why), DMM_OK);
    dmm_mh_config c0 = c;
    c0.home_cache = 0;
    EXPECT_EQ(dmm_mh_buffer_size(&c, 4096), dmm_mh_buffer_size(&c0, 4096));
    MH m(c);
    void *p = dmm_mh_malloc(m.mh, 1, 100);
    ASSERT_NE(p, nullptr);
    dmm_mh_free(m.mh, 1, p);
    dmm_mh_node_stats s = dmm_mh_get_node_stats(m.mh, 0);
    EXPECT_EQ(s.cached, 0u);
    EXPECT_EQ(s.heap.live_count, 0u);
    expect_ok(m.mh);
}

// Random malloc/realloc/free from random homes (so a third of the frees are
// remote, some queued), data tags verified, the checker after every batch;
// the stats count cached blocks as used blocks of their heap.
TEST(MultiheapCache, RandomSequencesKeepEveryInvariant)
{
    for (dmm_mh_remote_free rf : {DMM_MH_FREE_LOCKED, DMM_MH_FREE_QUEUE}) {
        Errors errs;
        dmm_mh_config c = cached_config(4, 4, &errs);
        c.remote_free = rf;
        MH m(c, 64 * 1024);
        std::mt19937_64 rng(rf == DMM_MH_FREE_QUEUE ? 11 : 12);
        struct Blk {
            unsigned char *p;
            size_t n;
            unsigned char tag;
        };
        std::vector<Blk> live;
        uint64_t ops = 0;
        for (int batch = 0; batch < 40; batch++) {
            for (int i = 0; i < 100; i++, ops++) {
                unsigned home = rng() % 3; // node 3 only serves spills
                unsigned r = rng() % 10;
                if (r < 5 || live.empty()) {
                    size_t n = 1 + rng() % (r == 0 ? 3000 : 600);
                    auto *p = static_cast<unsigned char *>(dmm_mh_malloc(m.mh, home, n));
                    if (!p)
                        continue;
                    ASSERT_GE(dmm_mh_usable_size(m.mh, p), n);
                    unsigned char tag = static_cast<unsigned char>(ops);
                    std::memset(p, tag, n);
                    live.push_back({p, n, tag});
                } else {
                    size_t k = rng() % live.size();
                    Blk b = live[k];
                    for (size_t j = 0; j < b.n; j++)
                        ASSERT_EQ(b.p[j], b.tag) << "block overwritten while live";
                    if (r == 9) {
                        size_t n = 1 + rng() % 900;
                        auto *q = static_cast<unsigned char *>(dmm_mh_realloc(m.mh, home, b.p, n));
                        if (q) {
                            for (size_t j = 0; j < std::min(n, b.n); j++)
                                ASSERT_EQ(q[j], b.tag);
                            std::memset(q, b.tag, n);
                            live[k] = {q, n, b.tag};
                        }
                        continue;
                    }
                    dmm_mh_free(m.mh, home, b.p);
                    live[k] = live.back();
                    live.pop_back();
                }
            }
            expect_ok(m.mh);
            // every used block of a heap is live or in its home's cache
            size_t used = 0, cached = 0, hits = 0;
            for (unsigned i = 0; i < 4; i++) {
                dmm_mh_free(m.mh, i, dmm_mh_malloc(m.mh, i, 2000)); // drains any queue; the free is parked
                dmm_mh_node_stats s = dmm_mh_get_node_stats(m.mh, i);
                used += s.heap.live_count;
                cached += s.cached;
                hits += s.cache_hits;
                EXPECT_LE(s.cache_hits, s.local_allocs);
            }
            EXPECT_EQ(used, live.size() + cached);
            if (batch == 39) {
                EXPECT_GT(hits, 0u);
            }
        }
        for (auto &b : live)
            dmm_mh_free(m.mh, rng() % 4, b.p);
        for (unsigned i = 0; i < 4; i++)
            dmm_mh_cache_flush(m.mh, i);
        expect_ok(m.mh);
        EXPECT_EQ(cached_total(m.mh), 0u);
        for (unsigned i = 0; i < 4; i++) {
            dmm_mh_free(m.mh, i, dmm_mh_malloc(m.mh, i, 2000));
            dmm_mh_cache_flush(m.mh, i);
            EXPECT_EQ(dmm_mh_get_node_stats(m.mh, i).heap.live_count, 0u) << "node " << i;
        }
        EXPECT_TRUE(errs.kinds.empty());
    }
}

// A home's own free is served back to it without visiting the heap; a free
// from another node goes to the owner, never into the freeing node's cache.
TEST(MultiheapCache, HitsAreLocalRemoteFreesGoToTheOwner)
{
    dmm_mh_config c = cached_config(4, 8);
    MH m(c);
    void *a = dmm_mh_malloc(m.mh, 0, 100);
    ASSERT_EQ(dmm_mh_owner(m.mh, a), 0u);
    dmm_mh_free(m.mh, 0, a);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 0).cached, 1u);
    void *b = dmm_mh_malloc(m.mh, 0, 100);
    EXPECT_EQ(b, a); // the parked block, now sorted into its class
    dmm_mh_node_stats s = dmm_mh_get_node_stats(m.mh, 0);
    EXPECT_EQ(s.cache_hits, 1u);
    EXPECT_EQ(s.local_allocs, 2u);
    EXPECT_EQ(s.cached, 0u);
    dmm_mh_free(m.mh, 1, b); // remote: to node 0, not node 1's cache
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 1).cached, 0u);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 0).cached, 0u);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 0).remote_frees, 1u);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 0).heap.live_count, 0u);
    // a class that is full sends the block back to the heap
    std::vector<void *> v;
    for (int i = 0; i < 20; i++)
        v.push_back(dmm_mh_malloc(m.mh, 2, 40));
    for (void *p : v)
        dmm_mh_free(m.mh, 2, p);
    dmm_mh_free(m.mh, 2, dmm_mh_malloc(m.mh, 2, 700)); // a miss: sorts the parked frees
    s = dmm_mh_get_node_stats(m.mh, 2);
    EXPECT_LE(s.cached, 8u + 1u);
    EXPECT_EQ(s.heap.live_count, s.cached);
    expect_ok(m.mh);
    dmm_mh_cache_flush(m.mh, 2);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 2).heap.live_count, 0u);
}

// An offline node's cache serves nobody: its home's requests go to other
// nodes, its blocks stay parked (counted), and come back with the node.
TEST(MultiheapCache, OfflineNodeWithCachedBlocks)
{
    Errors errs;
    dmm_mh_config c = cached_config(4, 8, &errs);
    MH m(c);
    std::vector<void *> v;
    for (int i = 0; i < 6; i++)
        v.push_back(dmm_mh_malloc(m.mh, 1, 64));
    for (void *p : v)
        dmm_mh_free(m.mh, 1, p);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 1).cached, 6u);
    ASSERT_EQ(dmm_mh_set_offline(m.mh, 1, true), DMM_OK);
    for (int i = 0; i < 10; i++) {
        void *p = dmm_mh_malloc(m.mh, 1, 64);
        ASSERT_NE(p, nullptr);
        EXPECT_NE(dmm_mh_owner(m.mh, p), 1u) << "a cache served an offline node";
        dmm_mh_free(m.mh, 1, p);
    }
    dmm_mh_cache_flush(m.mh, 1); // keeps them: the heap is out of service
    dmm_mh_node_stats s = dmm_mh_get_node_stats(m.mh, 1);
    EXPECT_EQ(s.cached, 6u);
    EXPECT_EQ(s.heap.live_count, 6u);
    EXPECT_EQ(s.cache_hits, 0u);
    expect_ok(m.mh);
    EXPECT_TRUE(errs.kinds.empty());
    ASSERT_EQ(dmm_mh_set_offline(m.mh, 1, false), DMM_OK);
    void *p = dmm_mh_malloc(m.mh, 1, 64);
    EXPECT_EQ(dmm_mh_owner(m.mh, p), 1u);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 1).cache_hits, 1u);
    dmm_mh_free(m.mh, 1, p);
    dmm_mh_cache_flush(m.mh, 1);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 1).heap.live_count, 0u);
    expect_ok(m.mh);
}

// With a hardened node heap, misuse through the cache is still caught: a
// double free is reported (not handed out twice), a foreign pointer is
// validated by the heap before anything is written, and an overwritten link
// in a cached block fails the checker.
TEST(MultiheapCache, MisuseIsCaught)
{
    Errors errs;
    dmm_mh_config c = cached_config(2, 8, &errs);
    MH m(c);
    void *a = dmm_mh_malloc(m.mh, 0, 48);
    dmm_mh_free(m.mh, 0, a);
    dmm_mh_free(m.mh, 0, a); // double free, both parked
    void *x = dmm_mh_malloc(m.mh, 0, 48);
    void *y = dmm_mh_malloc(m.mh, 0, 48);
    EXPECT_EQ(x, a);
    EXPECT_NE(y, a);
    ASSERT_EQ(errs.kinds.size(), 1u);
    EXPECT_EQ(errs.kinds[0], DMM_ERR_DOUBLE_FREE);
    // a pointer inside node 0's range that is no block: the heap reports it
    auto *inside = static_cast<unsigned char *>(y) + 8;
    unsigned char before[8];
    std::memcpy(before, inside, 8);
    dmm_mh_free(m.mh, 0, inside);
    dmm_mh_cache_flush(m.mh, 0);
    EXPECT_EQ(std::memcmp(before, inside, 8), 0);
    ASSERT_EQ(errs.kinds.size(), 2u);
    // a use after free that overwrites the link of a cached block
    dmm_mh_free(m.mh, 0, x);
    dmm_mh_free(m.mh, 0, dmm_mh_malloc(m.mh, 0, 900)); // sorts x into its class
    expect_ok(m.mh);
    void *saved = *static_cast<void **>(x);
    *static_cast<void **>(x) = y;
    const char *d = nullptr;
    EXPECT_EQ(dmm_mh_check(m.mh, &d), DMM_E_CORRUPT);
    *static_cast<void **>(x) = saved;
    expect_ok(m.mh);
    // a use after free that writes anywhere in the first two words: the
    // cache's mark is gone, which the checker reports
    auto *w = static_cast<uintptr_t *>(x);
    uintptr_t mark = w[1];
    w[1] = 0;
    EXPECT_EQ(dmm_mh_check(m.mh, &d), DMM_E_CORRUPT);
    EXPECT_NE(std::string(d).find("written after its free"), std::string::npos) << d;
    w[1] = mark;
    expect_ok(m.mh);
    // a double free of a block already sorted into its class (x is there)
    dmm_mh_free(m.mh, 0, x);
    dmm_mh_free(m.mh, 0, dmm_mh_malloc(m.mh, 0, 900)); // sorts: x is found in its class
    ASSERT_EQ(errs.kinds.size(), 3u);
    EXPECT_EQ(errs.kinds[2], DMM_ERR_DOUBLE_FREE);
    expect_ok(m.mh);
    // a block handed out again carries no mark: freeing it once is no double free
    void *x2 = dmm_mh_malloc(m.mh, 0, 48);
    EXPECT_EQ(x2, x);
    dmm_mh_free(m.mh, 0, x2);
    dmm_mh_free(m.mh, 0, dmm_mh_malloc(m.mh, 0, 900));
    EXPECT_EQ(errs.kinds.size(), 3u);
    expect_ok(m.mh);
    dmm_mh_free(m.mh, 0, y);
}

// When no heap can serve a request, the home's cache (parked frees of any
// size included) goes back to its heap before the request fails.
TEST(MultiheapCache, AFullHeapTakesBackWhatTheCacheHolds)
{
    dmm_mh_config c = cached_config(1, 8);
    MH m(c, 16384);
    void *big = dmm_mh_malloc(m.mh, 0, 9000);
    ASSERT_NE(big, nullptr);
    std::vector<void *> small;
    for (void *p; (p = dmm_mh_malloc(m.mh, 0, 200)) != nullptr;)
        small.push_back(p);
    dmm_mh_free(m.mh, 0, big); // parked, not yet in the heap
    for (void *p : small)
        dmm_mh_free(m.mh, 0, p);
    dmm_mh_node_stats s = dmm_mh_get_node_stats(m.mh, 0);
    EXPECT_GT(s.cached, 0u);
    EXPECT_EQ(s.failures, 1u); // the request that found the heap full
    void *again = dmm_mh_malloc(m.mh, 0, 9000);
    EXPECT_NE(again, nullptr);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 0).failures, 1u); // not counted: it was served
    expect_ok(m.mh);
    dmm_mh_free(m.mh, 0, again);
    dmm_mh_cache_flush(m.mh, 0);
    EXPECT_EQ(dmm_mh_get_node_stats(m.mh, 0).heap.live_count, 0u);
}

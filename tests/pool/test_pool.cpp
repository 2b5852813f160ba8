// tests/pool/test_pool.cpp - one pool, pool sets and the pool front:
// configuration and text form, layout (every block at its stride and
// alignment), seeded random operation sequences with the checker after every
// operation, misuse (foreign, interior, double free) reported with nothing
// changed, corruption detected by the guard, poison and the checker.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include "dmm/pool.h"
#include "dmm/vec.h"
}

namespace {

struct Errors {
    std::vector<dmm_error_kind> kinds;
    static void fn(void *ctx, const dmm_error *e) { static_cast<Errors *>(ctx)->kinds.push_back(e->kind); }
};

uint64_t seed_base()
{
    const char *s = std::getenv("DMM_TEST_SEED");
    return s ? std::strtoull(s, nullptr, 0) : 20261124u;
}

struct Buf {
    std::vector<unsigned char> v;
    unsigned char *p;
    Buf(size_t n, size_t offset = 0) : v(n + 128 + offset)
    {
        uintptr_t a = (reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t(63);
        p = reinterpret_cast<unsigned char *>(a) + offset;
    }
};

// Field by field: a struct's padding bytes are not part of its value.
bool same_config(const dmm_pool_config &a, const dmm_pool_config &b)
{
    return a.block_size == b.block_size && a.align == b.align && a.lock == b.lock &&
           a.lock_hooks.lock == b.lock_hooks.lock && a.lock_hooks.unlock == b.lock_hooks.unlock &&
           a.lock_hooks.ctx == b.lock_hooks.ctx && a.stats == b.stats && a.harden == b.harden &&
           a.poison == b.poison && a.on_error == b.on_error && a.error_fn == b.error_fn && a.error_ctx == b.error_ctx;
}

void expect_ok(dmm_pool *p)
{
    dmm_pool_check_report r{};
    ASSERT_EQ(dmm_pool_check(p, &r), DMM_OK) << r.detail;
}

dmm_pool_config cfg_of(size_t block, size_t align, dmm_heap_harden h = DMM_HARDEN_CHECKED, bool poison = false)
{
    dmm_pool_config c = dmm_pool_default_config();
    c.block_size = block;
    c.align = align;
    c.harden = h;
    c.poison = poison;
    return c;
}

} // namespace

// ---- configuration ------------------------------------------------------------

TEST(PoolConfig, DefaultsAndTextRoundTrip)
{
    dmm_pool_config c = dmm_pool_default_config();
    EXPECT_EQ(c.block_size, 64u);
    EXPECT_EQ(c.align, 0u);
    EXPECT_EQ(c.harden, DMM_HARDEN_CHECKED);
    const char *err = nullptr;
    ASSERT_EQ(dmm_pool_config_parse("block=48, align=32,lock=spin,harden=canary,poison=on", &c, &err), DMM_OK) << err;
    EXPECT_EQ(c.block_size, 48u);
    EXPECT_EQ(c.align, 32u);
    EXPECT_EQ(c.lock, DMM_LOCK_SPIN);
    EXPECT_EQ(c.harden, DMM_HARDEN_CANARY);
    EXPECT_TRUE(c.poison);
    char text[256];
    size_t n = dmm_pool_config_format(&c, text, sizeof text);
    ASSERT_LT(n, sizeof text);
    EXPECT_EQ(std::string(text), "block=48,align=32,lock=spin,stats=counters,harden=canary,poison=on,on_error=report");
    dmm_pool_config d = dmm_pool_default_config();
    ASSERT_EQ(dmm_pool_config_parse(text, &d, &err), DMM_OK);
    EXPECT_TRUE(same_config(c, d));
    ASSERT_EQ(dmm_pool_config_parse("1k", &d, &err), DMM_E_CONFIG);
    ASSERT_EQ(dmm_pool_config_parse("block=1k", &d, &err), DMM_OK);
    EXPECT_EQ(d.block_size, 1024u);
}

TEST(PoolConfig, BadTextIsRefusedAndNothingChanges)
{
    const char *bad[] = {"align=3", "align=131072", "block=0", "harden=maximum", "colour=blue", "block=", "lock=mutexx",
                         "block=99999999999999999999999"};
    for (const char *t : bad) {
        dmm_pool_config c = dmm_pool_default_config();
        dmm_pool_config before = c;
        const char *err = nullptr;
        EXPECT_EQ(dmm_pool_config_parse(t, &c, &err), DMM_E_CONFIG) << t;
        ASSERT_NE(err, nullptr) << t;
        EXPECT_GT(std::strlen(err), 5u) << t;
        EXPECT_TRUE(same_config(c, before)) << t;
    }
    dmm_pool_config c = dmm_pool_default_config();
    c.lock = DMM_LOCK_USER; // no hooks
    const char *why = nullptr;
    EXPECT_EQ(dmm_pool_config_check(&c, &why), DMM_E_CONFIG);
    EXPECT_NE(std::string(why).find("lock_hooks"), std::string::npos);
}

TEST(PoolConfig, HeaderAndFieldList)
{
    dmm_pool_config c = cfg_of(64, 64, DMM_HARDEN_OFF);
    c.stats = DMM_STATS_OFF;
    char h[2048];
    ASSERT_LT(dmm_pool_config_header(&c, "lean", h, sizeof h), sizeof h);
    std::string s(h);
    EXPECT_NE(s.find("#define DMM_POOL_FROZEN_HARDEN DMM_HARDEN_OFF"), std::string::npos) << s;
    EXPECT_NE(s.find("#define DMM_POOL_FROZEN_STATS DMM_STATS_OFF"), std::string::npos) << s;
    EXPECT_NE(s.find("#define DMM_POOL_FROZEN_LOCK DMM_LOCK_NONE"), std::string::npos) << s;
    EXPECT_NE(s.find("#define DMM_POOL_FROZEN_POISON 0"), std::string::npos) << s;
    char j[4096];
    ASSERT_LT(dmm_pool_config_fields_json(j, sizeof j), sizeof j);
    EXPECT_NE(std::string(j).find("\"name\":\"harden\""), std::string::npos);
}

// ---- layout -----------------------------------------------------------------------

TEST(PoolLayout, EveryBlockAtItsStrideAndAlignment)
{
    const size_t sizes[] = {1, 7, 16, 24, 48, 64, 100, 1000, 4096, 5000};
    const size_t aligns[] = {1, 8, 16, 32, 64, 128, 4096, 65536};
    for (size_t bs : sizes)
        for (size_t al : aligns)
            for (size_t off : {0, 1, 13, 48}) {
                size_t want = 5;
                dmm_pool_config c = cfg_of(bs, al);
                size_t need = dmm_pool_buffer_size(&c, want);
                ASSERT_GT(need, 0u);
                Buf b(need, off);
                dmm_pool *p = nullptr;
                ASSERT_EQ(dmm_pool_init(&p, b.p, need, &c), DMM_OK) << bs << "/" << al << "/" << off;
                dmm_pool_layout l = dmm_pool_get_layout(p);
                EXPECT_GE(l.blocks, want);
                EXPECT_EQ(l.stride, (bs + al - 1) / al * al);
                EXPECT_EQ(l.align_waste, l.stride - bs);
                EXPECT_EQ(l.guard_bytes, 0u);
                std::vector<unsigned char *> got;
                while (void *q = dmm_pool_alloc(p))
                    got.push_back(static_cast<unsigned char *>(q));
                ASSERT_EQ(got.size(), l.blocks);
                for (size_t i = 0; i < got.size(); i++) {
                    EXPECT_EQ(reinterpret_cast<uintptr_t>(got[i]) % al, 0u);
                    if (i) {
                        EXPECT_EQ(got[i] - got[i - 1], static_cast<ptrdiff_t>(l.stride)); // address order
                    }
                    EXPECT_GE(got[i], b.p);
                    EXPECT_LE(got[i] + bs, b.p + need);
                }
                expect_ok(p);
            }
}

TEST(PoolLayout, ZeroAlignmentWasteWhenTheBlockIsAMultipleOfTheAlignment)
{
    for (size_t al : {16u, 32u, 64u})
        for (size_t bs = al; bs <= 4096; bs *= 2) {
            dmm_pool_config c = cfg_of(bs, al);
            Buf b(65536);
            dmm_pool_layout l{};
            ASSERT_EQ(dmm_pool_layout_of(&c, b.p, 65536, &l), DMM_OK);
            EXPECT_EQ(l.align_waste, 0u);
            EXPECT_EQ(l.stride, bs);
            // metadata: 4 bytes of free list and 1 bit per block, outside the blocks
            EXPECT_LE(l.meta_bytes, l.blocks * 4 + (l.blocks + 63) / 64 * 8 + 8);
        }
}

TEST(PoolLayout, DefaultAlignmentIsTheVectorWidth)
{
    dmm_pool_config c = dmm_pool_default_config();
    Buf b(8192);
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, b.p, 8192, &c), DMM_OK);
    EXPECT_EQ(dmm_pool_get_config(p).align, dmm_vec_width());
}

TEST(PoolLayout, BadInitInput)
{
    dmm_pool_config c = cfg_of(64, 64);
    Buf b(4096);
    dmm_pool *p = reinterpret_cast<dmm_pool *>(1);
    EXPECT_EQ(dmm_pool_init(&p, b.p, 100, &c), DMM_E_TOO_SMALL);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(dmm_pool_init(&p, nullptr, 4096, &c), DMM_E_NULL);
    EXPECT_EQ(dmm_pool_init(nullptr, b.p, 4096, &c), DMM_E_NULL);
    c.align = 48;
    EXPECT_EQ(dmm_pool_init(&p, b.p, 4096, &c), DMM_E_CONFIG);
    EXPECT_EQ(dmm_pool_buffer_size(&c, 4), 0u);
    c = cfg_of(64, 64);
    EXPECT_EQ(dmm_pool_buffer_size(&c, 0), 0u);
    dmm_pool_layout l;
    EXPECT_EQ(dmm_pool_layout_of(&c, b.p, 10, &l), DMM_E_TOO_SMALL);
}

// ---- random sequences against a shadow model --------------------------------------

namespace {

void random_run(dmm_pool_config c, uint64_t seed, int ops)
{
    Errors errs;
    c.error_fn = Errors::fn;
    c.error_ctx = &errs;
    std::mt19937_64 rng(seed);
    size_t want = 1 + rng() % 40;
    size_t need = dmm_pool_buffer_size(&c, want);
    Buf b(need, rng() % 32);
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, b.p, need, &c), DMM_OK);
    size_t cap = dmm_pool_get_layout(p).blocks;
    std::map<unsigned char *, unsigned char> live; // block -> fill byte
    for (int op = 0; op < ops; op++) {
        bool do_alloc = live.empty() || (live.size() < cap && rng() % 2);
        if (do_alloc) {
            bool zero = rng() % 4 == 0;
            auto *q = static_cast<unsigned char *>(zero ? dmm_pool_calloc(p) : dmm_pool_alloc(p));
            ASSERT_NE(q, nullptr) << "seed " << seed << " op " << op;
            ASSERT_EQ(live.count(q), 0u) << "block handed out twice";
            ASSERT_TRUE(dmm_pool_owns(p, q));
            if (zero) {
                for (size_t k = 0; k < c.block_size; k++) {
                    ASSERT_EQ(q[k], 0) << "calloc block not zero";
                }
            }
            unsigned char fill = static_cast<unsigned char>(rng());
            std::memset(q, fill, c.block_size);
            live[q] = fill;
        } else {
            auto it = live.begin();
            std::advance(it, rng() % live.size());
            for (size_t k = 0; k < c.block_size; k++)
                ASSERT_EQ(it->first[k], it->second) << "a live block was overwritten";
            dmm_pool_free(p, it->first);
            live.erase(it);
        }
        if (live.size() == cap) {
            EXPECT_EQ(dmm_pool_alloc(p), nullptr);
        }
        dmm_pool_check_report r{};
        ASSERT_EQ(dmm_pool_check(p, &r), DMM_OK) << r.detail << " seed " << seed << " op " << op;
        dmm_pool_stats st = dmm_pool_get_stats(p);
        ASSERT_EQ(st.live_blocks, live.size());
        ASSERT_EQ(st.capacity, cap);
    }
    EXPECT_TRUE(errs.kinds.empty());
    if (c.harden >= DMM_HARDEN_CHECKED) {
        size_t used = 0;
        ASSERT_EQ(dmm_pool_walk(
                      p,
                      [](void *ctx, void *, bool u) {
                          *static_cast<size_t *>(ctx) += u;
                          return 0;
                      },
                      &used),
                  DMM_OK);
        EXPECT_EQ(used, live.size());
    }
    dmm_pool_destroy(p);
}

} // namespace

TEST(PoolRandom, EveryHardeningLevelAndPoison)
{
    const size_t sizes[] = {1, 16, 24, 64, 100, 256, 1000};
    const size_t aligns[] = {1, 16, 32, 64};
    uint64_t seed = seed_base();
    int ops = std::getenv("DMM_TEST_OPS") ? std::atoi(std::getenv("DMM_TEST_OPS")) : 400;
    for (int h = DMM_HARDEN_OFF; h <= DMM_HARDEN_PARANOID; h++)
        for (bool poison : {false, true})
            for (size_t bs : sizes)
                for (size_t al : aligns) {
                    SCOPED_TRACE(testing::Message() << "harden " << h << " poison " << poison << " block " << bs
                                                    << " align " << al);
                    random_run(cfg_of(bs, al, static_cast<dmm_heap_harden>(h), poison), seed++, ops);
                    if (HasFatalFailure())
                        return;
                }
}

// ---- misuse ---------------------------------------------------------------------------

TEST(PoolMisuse, BadFreesAreReportedAndNothingChanges)
{
    for (int h = DMM_HARDEN_CHECKED; h <= DMM_HARDEN_PARANOID; h++) {
        Errors errs;
        dmm_pool_config c = cfg_of(48, 16, static_cast<dmm_heap_harden>(h));
        c.error_fn = Errors::fn;
        c.error_ctx = &errs;
        Buf b(4096);
        dmm_pool *p = nullptr;
        ASSERT_EQ(dmm_pool_init(&p, b.p, 4096, &c), DMM_OK);
        auto *a = static_cast<unsigned char *>(dmm_pool_alloc(p));
        auto *x = static_cast<unsigned char *>(dmm_pool_alloc(p));
        ASSERT_TRUE(a && x);
        dmm_pool_free(p, x);
        std::vector<unsigned char> before(b.v);
        dmm_pool_stats s0 = dmm_pool_get_stats(p);
        int local = 0;
        dmm_pool_free(p, &local);   // foreign
        dmm_pool_free(p, a + 16);   // interior
        dmm_pool_free(p, x);        // double free
        dmm_pool_free(p, b.p);      // inside the buffer, in the metadata
        ASSERT_EQ(errs.kinds.size(), 4u);
        EXPECT_EQ(errs.kinds[0], DMM_ERR_FOREIGN_POINTER);
        EXPECT_EQ(errs.kinds[1], DMM_ERR_MISALIGNED_POINTER);
        EXPECT_EQ(errs.kinds[2], DMM_ERR_DOUBLE_FREE);
        EXPECT_EQ(errs.kinds[3], DMM_ERR_FOREIGN_POINTER);
        dmm_pool_stats s1 = dmm_pool_get_stats(p);
        EXPECT_EQ(s1.error_count, s0.error_count + 4);
        EXPECT_EQ(s1.live_blocks, s0.live_blocks);
        EXPECT_EQ(s1.free_count, s0.free_count);
        // nothing but the error counter changed in the whole buffer
        size_t differ = 0;
        for (size_t k = 0; k < before.size(); k++)
            differ += before[k] != b.v[k];
        EXPECT_LE(differ, 8u);
        expect_ok(p);
        dmm_pool_free(p, a);
        expect_ok(p);
        EXPECT_EQ(dmm_pool_get_stats(p).live_blocks, 0u);
    }
}

TEST(PoolCorruption, OverflowIntoTheGuardIsCaught)
{
    Errors errs;
    dmm_pool_config c = cfg_of(40, 16, DMM_HARDEN_CANARY);
    c.error_fn = Errors::fn;
    c.error_ctx = &errs;
    Buf b(4096);
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, b.p, 4096, &c), DMM_OK);
    EXPECT_EQ(dmm_pool_get_layout(p).stride, 48u);
    auto *a = static_cast<unsigned char *>(dmm_pool_alloc(p));
    a[40] ^= 1; // one byte past the block
    dmm_pool_check_report r{};
    EXPECT_EQ(dmm_pool_check(p, &r), DMM_E_CORRUPT);
    EXPECT_EQ(r.invariant, DMM_POOL_INV_CANARY);
    dmm_pool_free(p, a);
    ASSERT_EQ(errs.kinds.size(), 1u);
    EXPECT_EQ(errs.kinds[0], DMM_ERR_CANARY);
    EXPECT_EQ(dmm_pool_get_stats(p).live_blocks, 1u); // not taken back
}

TEST(PoolCorruption, WriteAfterFreeIsCaughtByPoison)
{
    Errors errs;
    dmm_pool_config c = cfg_of(64, 64, DMM_HARDEN_CHECKED, true);
    c.error_fn = Errors::fn;
    c.error_ctx = &errs;
    Buf b(1024);
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, b.p, 1024, &c), DMM_OK);
    auto *a = static_cast<unsigned char *>(dmm_pool_alloc(p));
    dmm_pool_free(p, a);
    a[10] = 0x42; // dangling write
    dmm_pool_check_report r{};
    EXPECT_EQ(dmm_pool_check(p, &r), DMM_E_CORRUPT);
    EXPECT_EQ(r.invariant, DMM_POOL_INV_POISON);
    EXPECT_EQ(dmm_pool_alloc(p), a); // LIFO: the same block comes back, reported
    ASSERT_EQ(errs.kinds.size(), 1u);
    EXPECT_EQ(errs.kinds[0], DMM_ERR_POISON);
}

TEST(PoolCorruption, CheckerFindsDamagedMetadata)
{
    dmm_pool_config c = cfg_of(32, 32);
    Buf b(4096);
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, b.p, 4096, &c), DMM_OK);
    void *a = dmm_pool_alloc(p);
    void *x = dmm_pool_alloc(p);
    (void)a;
    dmm_pool_free(p, x);
    expect_ok(p);
    // The free list sits right after the control block; find it through the
    // layout and duplicate one entry over another.
    dmm_pool_layout l = dmm_pool_get_layout(p);
    auto *ctrl_end = reinterpret_cast<unsigned char *>(p) + (l.control_bytes - (reinterpret_cast<uintptr_t>(p) -
                                                                                 reinterpret_cast<uintptr_t>(b.p)));
    auto *fl = reinterpret_cast<uint32_t *>(ctrl_end);
    uint32_t save = fl[0];
    fl[0] = fl[1];
    dmm_pool_check_report r{};
    EXPECT_EQ(dmm_pool_check(p, &r), DMM_E_CORRUPT);
    EXPECT_EQ(r.invariant, DMM_POOL_INV_FREE_LIST);
    fl[0] = 0xFFFFFFF0u;
    EXPECT_EQ(dmm_pool_check(p, &r), DMM_E_CORRUPT);
    EXPECT_EQ(r.invariant, DMM_POOL_INV_FREE_LIST);
    fl[0] = save;
    expect_ok(p);
    // a bit of the bitmap flipped
    auto *bm = reinterpret_cast<uint64_t *>(ctrl_end + ((l.blocks * 4 + 7) & ~size_t(7)));
    bm[0] ^= 1u << 5;
    EXPECT_EQ(dmm_pool_check(p, &r), DMM_E_CORRUPT);
    bm[0] ^= 1u << 5;
    expect_ok(p);
}

TEST(PoolStats, CountersAndJson)
{
    dmm_pool_config c = cfg_of(100, 32);
    Buf b(4096);
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, b.p, 4096, &c), DMM_OK);
    size_t cap = dmm_pool_get_layout(p).blocks;
    std::vector<void *> v;
    while (void *q = dmm_pool_alloc(p))
        v.push_back(q);
    for (void *q : v)
        dmm_pool_free(p, q);
    dmm_pool_stats s = dmm_pool_get_stats(p);
    EXPECT_EQ(s.alloc_count, cap);
    EXPECT_EQ(s.free_count, cap);
    EXPECT_EQ(s.failed_count, 1u);
    EXPECT_EQ(s.peak_blocks, cap);
    EXPECT_EQ(s.stride, 128u);
    EXPECT_EQ(s.align_waste, dmm_pool_get_layout(p).pad_bytes + 28 * cap);
    char j[1024];
    ASSERT_LT(dmm_pool_stats_json(&s, j, sizeof j), sizeof j);
    EXPECT_NE(std::string(j).find("\"peak_blocks\":" + std::to_string(cap)), std::string::npos) << j;
    EXPECT_EQ(dmm_pool_reset(p), DMM_OK);
    EXPECT_EQ(dmm_pool_get_stats(p).live_blocks, 0u);
    expect_ok(p);
}

TEST(PoolHooks, UserLockHooksWrapEveryOperation)
{
    struct Ctx {
        int depth = 0, calls = 0, max = 0;
    } ctx;
    dmm_pool_config c = cfg_of(32, 16);
    c.lock = DMM_LOCK_USER;
    c.lock_hooks.ctx = &ctx;
    c.lock_hooks.lock = [](void *x) {
        auto *k = static_cast<Ctx *>(x);
        k->calls++;
        k->max = std::max(k->max, ++k->depth);
    };
    c.lock_hooks.unlock = [](void *x) { static_cast<Ctx *>(x)->depth--; };
    Buf b(1024);
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, b.p, 1024, &c), DMM_OK);
    void *a = dmm_pool_alloc(p);
    dmm_pool_free(p, a);
    // lock=user: blocking with a timeout is still refused to wait when no block
    // can come (the pool is not empty here, so this returns a block)
    void *w = dmm_pool_alloc_wait(p, 1000000);
    EXPECT_NE(w, nullptr);
    EXPECT_EQ(ctx.depth, 0);
    EXPECT_EQ(ctx.max, 1);
    EXPECT_GE(ctx.calls, 3);
}

TEST(PoolWait, NoLockMeansNoWaiting)
{
    dmm_pool_config c = cfg_of(64, 64);
    Buf b(1024);
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, b.p, 1024, &c), DMM_OK);
    while (dmm_pool_alloc(p)) {
    }
    EXPECT_EQ(dmm_pool_alloc_wait(p, -1), nullptr); // lock none: returns at once
    EXPECT_EQ(dmm_pool_get_stats(p).wait_count, 0u);
}

// ---- the allocator view ---------------------------------------------------------------

TEST(PoolAllocator, View)
{
    dmm_pool_config c = cfg_of(64, 32);
    Buf b(2048);
    dmm_pool *p = nullptr;
    ASSERT_EQ(dmm_pool_init(&p, b.p, 2048, &c), DMM_OK);
    dmm_allocator a;
    dmm_pool_as_allocator(p, &a);
    EXPECT_EQ(a.malloc(a.ctx, 65), nullptr);
    void *q = a.malloc(a.ctx, 64);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(a.usable_size(a.ctx, q), 64u);
    EXPECT_EQ(a.realloc(a.ctx, q, 10), q);
    EXPECT_EQ(a.realloc(a.ctx, q, 100), nullptr);
    EXPECT_EQ(a.aligned_alloc(a.ctx, 64, 8), nullptr);
    void *z = a.calloc(a.ctx, 8, 8);
    ASSERT_NE(z, nullptr);
    EXPECT_EQ(a.calloc(a.ctx, SIZE_MAX / 2, 4), nullptr);
    a.free(a.ctx, q);
    a.free(a.ctx, z);
    expect_ok(p);
}

// ---- pool sets ---------------------------------------------------------------------------

TEST(PoolSet, SmallestFittingPoolThenLargerOnesAndOwnerRouting)
{
    Errors errs;
    dmm_pool_config base = cfg_of(0, 32);
    base.block_size = 1;
    base.error_fn = Errors::fn;
    base.error_ctx = &errs;
    dmm_pool_class cls[] = {{256, 2}, {32, 3}, {64, 2}}; // any order
    size_t need = dmm_pool_set_buffer_size(&base, cls, 3);
    ASSERT_GT(need, 0u);
    Buf b(need, 5);
    dmm_pool_set *s = nullptr;
    ASSERT_EQ(dmm_pool_set_init(&s, b.p, need, &base, cls, 3), DMM_OK);
    ASSERT_EQ(dmm_pool_set_count(s), 3u);
    EXPECT_EQ(dmm_pool_get_config(dmm_pool_set_pool(s, 0)).block_size, 32u);
    EXPECT_EQ(dmm_pool_get_config(dmm_pool_set_pool(s, 2)).block_size, 256u);
    std::vector<void *> got;
    for (int i = 0; i < 3; i++) {
        void *q = dmm_pool_set_alloc(s, 20);
        ASSERT_EQ(dmm_pool_set_owner(s, q), dmm_pool_set_pool(s, 0));
        got.push_back(q);
    }
    size_t cap0 = dmm_pool_get_layout(dmm_pool_set_pool(s, 0)).blocks;
    for (size_t i = 3; i < cap0; i++)
        got.push_back(dmm_pool_set_alloc(s, 20));
    void *spill = dmm_pool_set_alloc(s, 20); // the 32-byte pool is full: the next one
    ASSERT_NE(spill, nullptr);
    EXPECT_EQ(dmm_pool_set_owner(s, spill), dmm_pool_set_pool(s, 1));
    EXPECT_EQ(dmm_pool_set_alloc(s, 257), nullptr);
    void *big = dmm_pool_set_alloc(s, 256);
    EXPECT_EQ(dmm_pool_set_owner(s, big), dmm_pool_set_pool(s, 2));
    dmm_pool_set_free(s, spill);
    dmm_pool_set_free(s, big);
    for (void *q : got)
        dmm_pool_set_free(s, q);
    int local;
    dmm_pool_set_free(s, &local);
    ASSERT_EQ(errs.kinds.size(), 1u);
    EXPECT_EQ(errs.kinds[0], DMM_ERR_FOREIGN_POINTER);
    dmm_pool_check_report r{};
    EXPECT_EQ(dmm_pool_set_check(s, &r), DMM_OK) << r.detail;
    for (unsigned i = 0; i < 3; i++)
        EXPECT_EQ(dmm_pool_get_stats(dmm_pool_set_pool(s, i)).live_blocks, 0u);
}

TEST(PoolSet, BadClasses)
{
    dmm_pool_config base = cfg_of(1, 16);
    dmm_pool_class dup[] = {{32, 1}, {32, 2}};
    dmm_pool_class zero[] = {{0, 1}};
    EXPECT_EQ(dmm_pool_set_buffer_size(&base, dup, 2), 0u);
    EXPECT_EQ(dmm_pool_set_buffer_size(&base, zero, 1), 0u);
    Buf b(4096);
    dmm_pool_set *s = nullptr;
    EXPECT_EQ(dmm_pool_set_init(&s, b.p, 4096, &base, dup, 2), DMM_E_CONFIG);
    dmm_pool_class many[] = {{32, 1000}};
    EXPECT_EQ(dmm_pool_set_init(&s, b.p, 4096, &base, many, 1), DMM_E_TOO_SMALL);
}

// ---- the front: pools before a heap -------------------------------------------------------

TEST(PoolFront, RandomMixAgainstAShadow)
{
    for (uint64_t seed = seed_base(); seed < seed_base() + 6; seed++) {
        dmm_pool_front_config fc{};
        fc.pool = cfg_of(1, 16, static_cast<dmm_heap_harden>(seed % 4));
        fc.classes[0] = {16, 20};
        fc.classes[1] = {64, 10};
        fc.classes[2] = {128, 5};
        fc.nclasses = seed % 3 == 2 ? 0 : 3;
        fc.heap = dmm_heap_preset_config(static_cast<dmm_heap_preset>(seed % 5));
        Buf b(1 << 18);
        dmm_pool_front *f = nullptr;
        ASSERT_EQ(dmm_pool_front_init(&f, b.p, 1 << 18, &fc), DMM_OK);
        std::mt19937_64 rng(seed);
        std::map<unsigned char *, std::pair<size_t, unsigned char>> live;
        for (int op = 0; op < 1500; op++) {
            unsigned r = rng() % 10;
            if (live.empty() || r < 4) {
                size_t sz = rng() % 3 ? rng() % 140 : rng() % 3000;
                auto *q = static_cast<unsigned char *>(r == 1 ? dmm_pool_front_calloc(f, 1, sz)
                                                              : dmm_pool_front_malloc(f, sz));
                if (!q)
                    continue;
                ASSERT_GE(dmm_pool_front_usable_size(f, q), sz);
                if (r == 1) {
                    for (size_t k = 0; k < sz; k++) {
                        ASSERT_EQ(q[k], 0);
                    }
                }
                unsigned char fill = static_cast<unsigned char>(rng());
                std::memset(q, fill, sz);
                ASSERT_EQ(live.count(q), 0u);
                live[q] = {sz, fill};
            } else if (r < 6) {
                auto it = live.begin();
                std::advance(it, rng() % live.size());
                size_t nsz = rng() % 400;
                auto old = *it;
                auto *q = static_cast<unsigned char *>(dmm_pool_front_realloc(f, it->first, nsz));
                if (!q && nsz)
                    continue; // unchanged
                live.erase(it);
                if (q) {
                    for (size_t k = 0; k < std::min(nsz, old.second.first); k++)
                        ASSERT_EQ(q[k], old.second.second);
                    unsigned char fill = static_cast<unsigned char>(rng());
                    std::memset(q, fill, nsz);
                    live[q] = {nsz, fill};
                }
            } else {
                auto it = live.begin();
                std::advance(it, rng() % live.size());
                for (size_t k = 0; k < it->second.first; k++)
                    ASSERT_EQ(it->first[k], it->second.second);
                dmm_pool_front_free(f, it->first);
                live.erase(it);
            }
            const char *d = nullptr;
            ASSERT_EQ(dmm_pool_front_check(f, &d), DMM_OK) << d << " seed " << seed << " op " << op;
        }
        dmm_pool_front_stats st = dmm_pool_front_get_stats(f);
        if (fc.nclasses) {
            EXPECT_GT(st.pool_allocs, 0u);
            EXPECT_GT(st.heap_allocs, 0u);
        } else {
            EXPECT_EQ(st.pool_allocs, 0u);
        }
        for (auto &kv : live)
            dmm_pool_front_free(f, kv.first);
        dmm_pool_front_destroy(f);
    }
}

TEST(PoolFront, AlignedRequestsAndBadInit)
{
    dmm_pool_front_config fc{};
    fc.pool = cfg_of(1, 32);
    fc.classes[0] = {64, 4};
    fc.nclasses = 1;
    fc.heap = dmm_heap_preset_config(DMM_PRESET_TLSF);
    Buf b(65536);
    dmm_pool_front *f = nullptr;
    ASSERT_EQ(dmm_pool_front_init(&f, b.p, 65536, &fc), DMM_OK);
    void *a = dmm_pool_front_aligned_alloc(f, 32, 50);
    ASSERT_TRUE(dmm_pool_set_owner(dmm_pool_front_set(f), a));
    void *h = dmm_pool_front_aligned_alloc(f, 256, 50); // stricter than the pools: the heap
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(h) % 256, 0u);
    EXPECT_EQ(dmm_pool_set_owner(dmm_pool_front_set(f), h), nullptr);
    dmm_pool_front_free(f, a);
    dmm_pool_front_free(f, h);
    fc.nclasses = DMM_POOL_SET_MAX + 1;
    EXPECT_EQ(dmm_pool_front_init(&f, b.p, 65536, &fc), DMM_E_CONFIG);
    fc.nclasses = 1;
    fc.classes[0] = {64, 100000};
    EXPECT_EQ(dmm_pool_front_init(&f, b.p, 65536, &fc), DMM_E_TOO_SMALL);
}

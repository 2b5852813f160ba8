// tests/heap/test_bad_input.cpp - documented results for bad or extreme
// input: size 0, sizes near SIZE_MAX, calloc overflow, bad alignments,
// NULL / tiny / misaligned buffers, the exact minimum buffer, overlapping
// regions.  After each, the heap must still pass its checker and earlier
// blocks must keep their contents.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <set>

#include "dmm_test_support.h"

using namespace dmmt;

namespace {

constexpr unsigned kBits = sizeof(size_t) * CHAR_BIT;

// A heap on an owned buffer, with a few patterned blocks to prove that
// failed calls corrupt nothing.
struct Fixture {
    explicit Fixture(const dmm_heap_config &c, size_t size = 64 * 1024, size_t misalign = 0)
        : cfg(c), buf(size, misalign) {
        errs.attach(&cfg);
        status = dmm_heap_init(&h, buf.data(), buf.size(), &cfg);
    }
    ~Fixture() {
        if (h)
            dmm_heap_destroy(h);
    }
    void add_witnesses() {
        for (size_t n : {24u, 100u, 7u, 300u}) {
            void *p = dmm_heap_malloc(h, n);
            ASSERT_NE(p, nullptr);
            fill_pattern(p, 0, n, witnesses.size() + 1);
            witnesses.push_back({p, n});
        }
    }
    // Checker passes, witnesses intact, no misuse reported.
    ::testing::AssertionResult healthy() {
        dmm_heap_check_report rep{};
        if (dmm_heap_check(h, &rep) != DMM_OK)
            return ::testing::AssertionFailure() << "check: " << report_str(rep) << "; config "
                                                 << cfg_str(cfg);
        for (size_t i = 0; i < witnesses.size(); ++i)
            if (find_pattern_mismatch(witnesses[i].first, 0, witnesses[i].second, i + 1) != SIZE_MAX)
                return ::testing::AssertionFailure() << "witness " << i << " corrupted; config "
                                                     << cfg_str(cfg);
        if (!errs.errors.empty())
            return ::testing::AssertionFailure()
                   << "error callback fired: " << err_name(errs.errors[0].kind);
        if (!buf.guards_intact())
            return ::testing::AssertionFailure() << "bytes outside the buffer written";
        return ::testing::AssertionSuccess();
    }
    uint64_t failed() { return dmm_heap_get_stats(h).failed_count; }

    dmm_heap_config cfg;
    Buffer buf;
    ErrorLog errs;
    dmm_heap *h = nullptr;
    dmm_status status = DMM_E_CONFIG;
    std::vector<std::pair<void *, size_t>> witnesses;
};

std::vector<NamedConfig> test_configs() {
    std::vector<NamedConfig> v;
    for (int p = 0; p < DMM_PRESET_COUNT; ++p)
        v.push_back({dmm_heap_preset_name((dmm_heap_preset)p), dmm_heap_preset_config((dmm_heap_preset)p)});
    dmm_heap_config c = dmm_heap_default_config();
    c.stats = DMM_STATS_FULL;
    c.harden = DMM_HARDEN_PARANOID;
    c.poison = true;
    v.push_back({"paranoid_full_poison", c});
    c = dmm_heap_default_config();
    c.grow_granularity = 64 * 1024;
    c.release_empty = true;
    v.push_back({"growing", c});
    c = dmm_heap_preset_config(DMM_PRESET_FIRSTFIT);
    c.coalesce = DMM_COALESCE_DEFERRED;
    c.links = DMM_LINKS_SINGLY;
    v.push_back({"firstfit_singly_deferred", c});
    return v;
}

class BadInput : public ::testing::TestWithParam<NamedConfig> {};

std::string cfg_name(const ::testing::TestParamInfo<NamedConfig> &i) { return i.param.name; }

} // namespace

TEST_P(BadInput, MallocZeroGivesUniquePointers) {
    Fixture f(GetParam().cfg);
    ASSERT_EQ(f.status, DMM_OK);
    f.add_witnesses();
    std::set<void *> seen;
    std::vector<void *> ps;
    for (int i = 0; i < 64; ++i) {
        void *p = dmm_heap_malloc(f.h, 0);
        ASSERT_NE(p, nullptr) << "malloc(0) #" << i << "; " << cfg_str(f.cfg);
        EXPECT_EQ((uintptr_t)p % DMM_HEAP_ALIGN, 0u);
        EXPECT_TRUE(seen.insert(p).second) << "malloc(0) returned " << p << " twice";
        ps.push_back(p);
    }
    ASSERT_TRUE(f.healthy());
    for (void *p : ps)
        dmm_heap_free(f.h, p);
    ASSERT_TRUE(f.healthy());
    // calloc with a zero count or size behaves as malloc(0).
    void *a = dmm_heap_calloc(f.h, 0, 16);
    void *b = dmm_heap_calloc(f.h, 16, 0);
    EXPECT_NE(a, nullptr);
    EXPECT_NE(b, nullptr);
    EXPECT_NE(a, b);
    dmm_heap_free(f.h, a);
    dmm_heap_free(f.h, b);
    ASSERT_TRUE(f.healthy());
}

TEST_P(BadInput, HugeSizesFailCleanly) {
    Fixture f(GetParam().cfg);
    ASSERT_EQ(f.status, DMM_OK);
    f.add_witnesses();
    std::vector<size_t> sizes = {SIZE_MAX, SIZE_MAX / 2, SIZE_MAX / 2 + 1, SIZE_MAX / 2 - 1,
                                 (size_t)1 << (kBits - 2), SIZE_MAX / 4 * 3};
    for (size_t k = 1; k <= 80; ++k)
        sizes.push_back(SIZE_MAX - k);
    bool counters = f.cfg.stats != DMM_STATS_OFF;
    void *q = dmm_heap_malloc(f.h, 64);
    ASSERT_NE(q, nullptr);
    fill_pattern(q, 0, 64, 999);
    for (size_t n : sizes) {
        SCOPED_TRACE("size " + std::to_string(n) + "; config " + cfg_str(f.cfg));
        uint64_t before = f.failed();
        EXPECT_EQ(dmm_heap_malloc(f.h, n), nullptr);
        if (counters) {
            EXPECT_EQ(f.failed(), before + 1) << "malloc failure not counted";
        }
        EXPECT_EQ(dmm_heap_calloc(f.h, 1, n), nullptr);
        EXPECT_EQ(dmm_heap_aligned_alloc(f.h, 64, n), nullptr);
        EXPECT_EQ(dmm_heap_realloc(f.h, q, n), nullptr);
        EXPECT_EQ(dmm_heap_realloc_aligned(f.h, q, DMM_HEAP_ALIGN, n), nullptr);
        if (counters) {
            EXPECT_EQ(f.failed(), before + 5) << "failures not counted";
        }
        EXPECT_EQ(find_pattern_mismatch(q, 0, 64, 999), SIZE_MAX) << "failed realloc touched ptr";
        ASSERT_TRUE(f.healthy());
    }
    EXPECT_GE(dmm_heap_usable_size(f.h, q), 64u);
    dmm_heap_free(f.h, q);
    ASSERT_TRUE(f.healthy());
}

TEST_P(BadInput, CallocOverflowReturnsNull) {
    Fixture f(GetParam().cfg);
    ASSERT_EQ(f.status, DMM_OK);
    f.add_witnesses();
    const size_t half = (size_t)1 << (kBits / 2);
    const std::pair<size_t, size_t> cases[] = {
        {SIZE_MAX / 2 + 1, 2}, {2, SIZE_MAX / 2 + 1}, {half, half},     {half + 1, half - 1 + 2},
        {SIZE_MAX, SIZE_MAX},  {3, SIZE_MAX / 3 + 1}, {SIZE_MAX / 16 + 1, 16}, {SIZE_MAX, 2},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(std::to_string(c.first) + " x " + std::to_string(c.second));
        uint64_t before = f.failed();
        EXPECT_EQ(dmm_heap_calloc(f.h, c.first, c.second), nullptr);
        if (f.cfg.stats != DMM_STATS_OFF) {
            EXPECT_EQ(f.failed(), before + 1);
        }
        ASSERT_TRUE(f.healthy());
    }
    // A product that does not wrap but is larger than the heap fails
    // (unless the heap may grow from OS pages).
    if (f.cfg.grow_granularity == 0) {
        EXPECT_EQ(dmm_heap_calloc(f.h, 1u << 20, 1u << 10), nullptr);
    }
    // Small products succeed and are zeroed.
    unsigned char *p = static_cast<unsigned char *>(dmm_heap_calloc(f.h, 37, 3));
    ASSERT_NE(p, nullptr);
    for (int i = 0; i < 111; ++i)
        ASSERT_EQ(p[i], 0) << i;
    dmm_heap_free(f.h, p);
    ASSERT_TRUE(f.healthy());
}

TEST_P(BadInput, BadAlignmentsReturnNull) {
    Fixture f(GetParam().cfg);
    ASSERT_EQ(f.status, DMM_OK);
    f.add_witnesses();
    std::vector<size_t> bad = {0, 3, 5, 6, 7, 12, 24, 48, 96, 100, 1000, 4097, 65535,
                               (size_t)1 << (kBits - 1), ((size_t)1 << (kBits - 1)) + 1,
                               (size_t)1 << (kBits - 2), SIZE_MAX, SIZE_MAX - 1};
    for (size_t a : bad) {
        SCOPED_TRACE("align " + std::to_string(a) + "; " + cfg_str(f.cfg));
        uint64_t before = f.failed();
        EXPECT_EQ(dmm_heap_aligned_alloc(f.h, a, 32), nullptr);
        if (f.cfg.stats != DMM_STATS_OFF) {
            EXPECT_EQ(f.failed(), before + 1) << "failed aligned_alloc not counted";
        }
        ASSERT_TRUE(f.healthy());
    }
    // realloc_aligned with a bad alignment fails and leaves ptr alone.
    void *p = dmm_heap_malloc(f.h, 40);
    ASSERT_NE(p, nullptr);
    fill_pattern(p, 0, 40, 4242);
    for (size_t a : {(size_t)0, (size_t)3, (size_t)24, (size_t)1 << (kBits - 1)}) {
        EXPECT_EQ(dmm_heap_realloc_aligned(f.h, p, a, 80), nullptr) << "align " << a;
        EXPECT_EQ(find_pattern_mismatch(p, 0, 40, 4242), SIZE_MAX);
        ASSERT_TRUE(f.healthy());
    }
    dmm_heap_free(f.h, p);
    // Small powers of two are valid and give DMM_HEAP_ALIGN-aligned blocks.
    for (size_t a = 1; a <= DMM_HEAP_ALIGN; a <<= 1) {
        void *q = dmm_heap_aligned_alloc(f.h, a, 10);
        ASSERT_NE(q, nullptr) << "align " << a;
        EXPECT_EQ((uintptr_t)q % DMM_HEAP_ALIGN, 0u);
        dmm_heap_free(f.h, q);
    }
    ASSERT_TRUE(f.healthy());
}

TEST_P(BadInput, LargePowerOfTwoAlignmentsWork) {
    Fixture f(GetParam().cfg, 512 * 1024, 3);
    ASSERT_EQ(f.status, DMM_OK);
    f.add_witnesses();
    std::vector<std::pair<void *, size_t>> got;
    for (size_t a : {(size_t)4096, (size_t)65536, (size_t)256, (size_t)4096, (size_t)8192,
                     (size_t)65536}) {
        size_t n = a == 65536 ? 1000 : 3 * a + 5;
        void *p = dmm_heap_aligned_alloc(f.h, a, n);
        ASSERT_NE(p, nullptr) << "aligned_alloc(" << a << ", " << n << "); " << cfg_str(f.cfg);
        EXPECT_EQ((uintptr_t)p % a, 0u) << p << " not aligned to " << a;
        EXPECT_GE(dmm_heap_usable_size(f.h, p), n);
        fill_pattern(p, 0, n, 7000 + got.size());
        got.push_back({p, n});
        ASSERT_TRUE(f.healthy());
    }
    // realloc_aligned keeps the alignment.
    void *p = got[1].first;
    void *q = dmm_heap_realloc_aligned(f.h, p, 65536, 20000);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ((uintptr_t)q % 65536, 0u);
    EXPECT_EQ(find_pattern_mismatch(q, 0, got[1].second, 7001), SIZE_MAX) << "prefix lost";
    got[1].first = q;
    for (size_t i = 0; i < got.size(); ++i) {
        if (i != 1) {
            EXPECT_EQ(find_pattern_mismatch(got[i].first, 0, got[i].second, 7000 + i), SIZE_MAX);
        }
        dmm_heap_free(f.h, got[i].first);
        ASSERT_TRUE(f.healthy());
    }
}

INSTANTIATE_TEST_SUITE_P(Configs, BadInput, ::testing::ValuesIn(test_configs()), cfg_name);

// ---- init --------------------------------------------------------------------

TEST(Init, NullArguments) {
    alignas(16) static unsigned char buf[16384];
    dmm_heap *h = reinterpret_cast<dmm_heap *>(&h);
    EXPECT_EQ(dmm_heap_init(nullptr, buf, sizeof buf, nullptr), DMM_E_NULL);
    EXPECT_EQ(dmm_heap_init(&h, nullptr, sizeof buf, nullptr), DMM_E_NULL);
    EXPECT_EQ(h, nullptr);
    dmm_heap_config c = dmm_heap_default_config();
    h = reinterpret_cast<dmm_heap *>(&h);
    EXPECT_EQ(dmm_heap_init(&h, nullptr, 0, &c), DMM_E_NULL);
    EXPECT_EQ(h, nullptr);
}

TEST(Init, NullConfigMeansDefault) {
    Buffer b(16384, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), nullptr), DMM_OK);
    dmm_heap_config got = dmm_heap_get_config(h);
    dmm_heap_config def = dmm_heap_default_config();
    EXPECT_EQ(got.org, def.org);
    EXPECT_EQ(got.fit, def.fit);
    EXPECT_EQ(got.harden, def.harden);
    void *p = dmm_heap_malloc(h, 10);
    EXPECT_NE(p, nullptr);
    EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
    dmm_heap_destroy(h);
}

TEST(Init, TooSmallBuffersAreRefusedUntouched) {
    for (int p = 0; p <= DMM_PRESET_COUNT; ++p) {
        dmm_heap_config c = p < DMM_PRESET_COUNT ? dmm_heap_preset_config((dmm_heap_preset)p)
                                                 : dmm_heap_default_config();
        size_t minb = dmm_heap_min_buffer(&c);
        ASSERT_GT(minb, 0u) << cfg_str(c);
        for (size_t size : {(size_t)0, (size_t)1, (size_t)8, (size_t)16, (size_t)64, minb / 2,
                            minb - DMM_HEAP_ALIGN, minb - 1}) {
            SCOPED_TRACE("size " + std::to_string(size) + "; " + cfg_str(c));
            std::vector<unsigned char> buf(minb + 64, 0x6B);
            dmm_heap *h = reinterpret_cast<dmm_heap *>(&buf);
            // Align the start so "minb - 1" is exactly one byte short.
            unsigned char *start = buf.data() + ((16 - ((uintptr_t)buf.data() % 16)) % 16);
            EXPECT_EQ(dmm_heap_init(&h, start, size, &c), DMM_E_TOO_SMALL);
            EXPECT_EQ(h, nullptr);
            for (size_t i = 0; i < buf.size(); ++i)
                if (buf[i] != 0x6B) {
                    ADD_FAILURE() << "refused init wrote byte " << i;
                    break;
                }
        }
    }
}

TEST(Init, MinBufferIsExactlySufficient) {
    std::vector<dmm_heap_config> cfgs;
    for (const NamedConfig &n : test_configs())
        cfgs.push_back(n.cfg);
    dmm_heap_config c = dmm_heap_default_config();
    c.quick_max = 256;
    c.stats = DMM_STATS_FULL;
    c.harden = DMM_HARDEN_CANARY;
    cfgs.push_back(c);
    c.max_block_log2 = 24;
    cfgs.push_back(c);
    c = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    c.org = DMM_ORG_SEG_EXACT;
    c.exact_max = 4096;
    c.sl_bits = 5;
    cfgs.push_back(c);
    // Regression (heap v2 issue): a max_block_log2 whose bins exceed what the
    // bitmap holds (here 4096 exact bins + 32 per power of two up to 2^63)
    // is clamped by init; min_buffer must be exact for the clamped range too
    // (it reported 91,264 bytes while init succeeded in 67,008).  The
    // largest valid max_block_log2 is one below the bits of size_t (63 on
    // 64-bit targets, 31 on 32-bit ones, where 63 is a bad config).
    c.exact_max = 65536;
    c.max_block_log2 = kBits - 1;
    cfgs.push_back(c);
    // Regression (found by fuzz_config_parse): with poisoning, formatting the
    // first region poisoned from the top block's payload + the node words to
    // its end; under org=addrtree (the firstfit preset) the node words (3)
    // exceed a minimum block's payload, so at min_buffer the length went
    // negative and the memset ran off the buffer.  Every preset, poisoned.
    for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
        c = dmm_heap_preset_config(static_cast<dmm_heap_preset>(p));
        c.poison = true;
        cfgs.push_back(c);
        c.harden = DMM_HARDEN_PARANOID;
        cfgs.push_back(c);
    }
    for (const dmm_heap_config &cfg : cfgs) {
        SCOPED_TRACE(cfg_str(cfg));
        size_t minb = dmm_heap_min_buffer(&cfg);
        ASSERT_GT(minb, 0u);
        {
            Buffer b(minb, 0);
            dmm_heap *h = nullptr;
            ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &cfg), DMM_OK) << "at min_buffer " << minb;
            void *p = dmm_heap_malloc(h, 1);
            EXPECT_NE(p, nullptr) << "one malloc(1) must fit a min_buffer heap";
            if (p) {
                *static_cast<unsigned char *>(p) = 0x5A;
                EXPECT_GE(dmm_heap_usable_size(h, p), 1u);
            }
            EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
            dmm_heap_free(h, p);
            EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
            dmm_heap_destroy(h);
            EXPECT_TRUE(b.guards_intact());
        }
        {
            Buffer b(minb - 1, 0);
            dmm_heap *h = nullptr;
            EXPECT_EQ(dmm_heap_init(&h, b.data(), b.size(), &cfg), DMM_E_TOO_SMALL)
                << "one byte below min_buffer " << minb;
        }
        // Misaligned buffers need at most DMM_HEAP_ALIGN - 1 more bytes.
        for (size_t mis = 1; mis < DMM_HEAP_ALIGN; mis += 2) {
            Buffer b(minb + DMM_HEAP_ALIGN - 1, mis);
            dmm_heap *h = nullptr;
            ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &cfg), DMM_OK) << "misalign " << mis;
            void *p = dmm_heap_malloc(h, 1);
            EXPECT_NE(p, nullptr) << "misalign " << mis;
            EXPECT_EQ((uintptr_t)p % DMM_HEAP_ALIGN, 0u);
            dmm_heap_destroy(h);
            EXPECT_TRUE(b.guards_intact());
        }
    }
}

TEST(Init, MisalignedBuffersGiveAlignedPayloads) {
    for (size_t mis : {(size_t)1, (size_t)3, (size_t)7, (size_t)8, (size_t)13}) {
        for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
            RunSpec spec;
            spec.cfg = dmm_heap_preset_config((dmm_heap_preset)p);
            spec.seed = mix64(base_seed(), 77 + mis * 8 + p);
            spec.ops = scaled_ops(300);
            spec.buf_size = 12 * 1024 + 3;
            spec.misalign = mis;
            RunResult r = run_random(spec);
            ASSERT_TRUE(r.ok) << "misalign " << mis << ": " << r.message;
        }
    }
}

// ---- regions --------------------------------------------------------------------

TEST(Regions, AddRegionErrors) {
    // The added region must outlive the heap (destroy reads the region list).
    Buffer other(16 * 1024, 0);
    dmm_heap_config cfg = dmm_heap_default_config();
    Fixture f(cfg, 32 * 1024);
    ASSERT_EQ(f.status, DMM_OK);
    f.add_witnesses();

    EXPECT_EQ(dmm_heap_add_region(f.h, nullptr, 4096), DMM_E_NULL);
    EXPECT_EQ(dmm_heap_add_region(f.h, other.data(), 0), DMM_E_TOO_SMALL);
    EXPECT_EQ(dmm_heap_add_region(f.h, other.data(), 16), DMM_E_TOO_SMALL);
    EXPECT_EQ(dmm_heap_add_region(f.h, other.data(), dmm_heap_region_overhead()), DMM_E_TOO_SMALL);
    ASSERT_TRUE(f.healthy());

    // Any overlap with the first buffer (control block or region).
    EXPECT_EQ(dmm_heap_add_region(f.h, f.buf.data(), 4096), DMM_E_OVERLAP);
    EXPECT_EQ(dmm_heap_add_region(f.h, f.buf.data() + 8192, 4096), DMM_E_OVERLAP);
    EXPECT_EQ(dmm_heap_add_region(f.h, f.buf.data() + f.buf.size() - 100, 4096), DMM_E_OVERLAP);
    ASSERT_TRUE(f.healthy());

    ASSERT_EQ(dmm_heap_add_region(f.h, other.data(), other.size()), DMM_OK);
    ASSERT_TRUE(f.healthy());
    EXPECT_EQ(dmm_heap_add_region(f.h, other.data(), other.size()), DMM_E_OVERLAP);
    EXPECT_EQ(dmm_heap_add_region(f.h, other.data() + 100, 4096), DMM_E_OVERLAP);
    // A buffer that starts before and ends inside the added region.
    EXPECT_EQ(dmm_heap_add_region(f.h, other.data() - 1024, 2048), DMM_E_OVERLAP);
    ASSERT_TRUE(f.healthy());

    // The added region is usable: fill the heap until it spills over.
    std::vector<void *> ps;
    bool used_other = false;
    for (int i = 0; i < 2000; ++i) {
        void *p = dmm_heap_malloc(f.h, 200);
        if (!p)
            break;
        if (other.contains(p, 200))
            used_other = true;
        ps.push_back(p);
    }
    EXPECT_TRUE(used_other) << "no block came from the added region";
    ASSERT_TRUE(f.healthy());
    for (void *p : ps)
        dmm_heap_free(f.h, p);
    ASSERT_TRUE(f.healthy());
    EXPECT_TRUE(other.guards_intact());
}

// tests/annotate/test_annotate.cpp - with DMM_ANNOTATE the heap tells
// AddressSanitizer which bytes of a dmm heap the program may touch, so a
// user's bugs inside a dmm heap are caught by ASan (label "annotate"; built
// only when DMM_ANNOTATE is ON in an ASan build: this code is instrumented,
// the library is not).
#include <gtest/gtest.h>

#include <cstring>

#include "dmm_test_support.h"

using namespace dmmt;

namespace {

std::vector<NamedConfig> annotate_configs() {
    std::vector<NamedConfig> v;
    for (int p = 0; p < DMM_PRESET_COUNT; ++p)
        v.push_back({dmm_heap_preset_name((dmm_heap_preset)p), dmm_heap_preset_config((dmm_heap_preset)p)});
    dmm_heap_config c = dmm_heap_default_config();
    c.harden = DMM_HARDEN_CANARY;
    c.stats = DMM_STATS_FULL;
    c.poison = true;
    v.push_back({"canary_full_poison", c});
    return v;
}

class Annotate : public ::testing::TestWithParam<NamedConfig> {
protected:
    void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

std::string name_of(const ::testing::TestParamInfo<NamedConfig> &i) { return i.param.name; }

// Prevents the compiler from removing the bad access.
template <class T> T launder_read(const volatile T *p) { return *p; }

} // namespace

TEST_P(Annotate, ReadAfterFreeIsCaught) {
    const dmm_heap_config cfg = GetParam().cfg;
    EXPECT_DEATH(
        {
            Buffer b(64 * 1024, 0);
            dmm_heap *h = nullptr;
            if (dmm_heap_init(&h, b.data(), b.size(), &cfg) != DMM_OK)
                std::exit(0);
            unsigned char *keep = static_cast<unsigned char *>(dmm_heap_malloc(h, 64));
            unsigned char *p = static_cast<unsigned char *>(dmm_heap_malloc(h, 100));
            std::memset(p, 1, 100);
            std::memset(keep, 2, 64);
            dmm_heap_free(h, p);
            std::fprintf(stderr, "%d\n", (int)launder_read(p + 40));
        },
        "AddressSanitizer");
}

TEST_P(Annotate, WriteOnePastTheRequestIsCaught) {
    const dmm_heap_config cfg = GetParam().cfg;
    for (size_t n : {(size_t)13, (size_t)16, (size_t)100}) {
        EXPECT_DEATH(
            {
                Buffer b(64 * 1024, 0);
                dmm_heap *h = nullptr;
                if (dmm_heap_init(&h, b.data(), b.size(), &cfg) != DMM_OK)
                    std::exit(0);
                unsigned char *p = static_cast<unsigned char *>(dmm_heap_malloc(h, n));
                std::memset(p, 3, n); // all requested bytes are fine
                volatile unsigned char *v = p;
                v[n] = 4;             // one past the request
            },
            "AddressSanitizer")
            << "request " << n;
    }
}

TEST_P(Annotate, ReadOfAFreeBlocksLinksIsCaught) {
    // The first payload words of a free block hold the heap's list links.
    const dmm_heap_config cfg = GetParam().cfg;
    EXPECT_DEATH(
        {
            Buffer b(64 * 1024, 0);
            dmm_heap *h = nullptr;
            if (dmm_heap_init(&h, b.data(), b.size(), &cfg) != DMM_OK)
                std::exit(0);
            void *a = dmm_heap_malloc(h, 500);
            void *c = dmm_heap_malloc(h, 500);
            (void)c;
            dmm_heap_free(h, a);
            std::fprintf(stderr, "%p\n", launder_read(static_cast<void *volatile *>(a)));
        },
        "AddressSanitizer");
}

TEST_P(Annotate, HeaderWriteIsCaught) {
    const dmm_heap_config cfg = GetParam().cfg;
    EXPECT_DEATH(
        {
            Buffer b(64 * 1024, 0);
            dmm_heap *h = nullptr;
            if (dmm_heap_init(&h, b.data(), b.size(), &cfg) != DMM_OK)
                std::exit(0);
            unsigned char *p = static_cast<unsigned char *>(dmm_heap_malloc(h, 32));
            volatile unsigned char *v = p;
            v[-1] = 0; // the block header
        },
        "AddressSanitizer");
}

TEST_P(Annotate, CorrectUseRaisesNothing) {
    // Negative control: the shadow-model random run (which touches only the
    // requested bytes in this build) must not trip ASan, including after
    // realloc in place, calloc, aligned allocation, quick lists and reset.
    for (int v = 0; v < 3; ++v) {
        RunSpec spec;
        spec.cfg = GetParam().cfg;
        spec.seed = mix64(base_seed(), 0xA770 + v);
        spec.ops = scaled_ops(800);
        spec.misalign = (size_t)v * 5;
        if (v == 2)
            spec.extra_regions = {8192};
        RunResult r = run_random(spec);
        ASSERT_TRUE(r.ok) << r.message;
    }
}

TEST_P(Annotate, ReallocKeepsTheDataAccessible) {
    const dmm_heap_config cfg = GetParam().cfg;
    Buffer b(64 * 1024, 0);
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &cfg), DMM_OK);
    unsigned char *p = static_cast<unsigned char *>(dmm_heap_malloc(h, 10));
    ASSERT_NE(p, nullptr);
    fill_pattern(p, 0, 10, 1);
    for (size_t n : {(size_t)30, (size_t)5, (size_t)2000, (size_t)64}) {
        unsigned char *q = static_cast<unsigned char *>(dmm_heap_realloc(h, p, n));
        ASSERT_NE(q, nullptr);
        // Reading and writing every requested byte is allowed.
        EXPECT_EQ(find_pattern_mismatch(q, 0, std::min<size_t>(n, 5), 1), SIZE_MAX);
        fill_pattern(q, 0, n, 1);
        p = q;
    }
    dmm_heap_free(h, p);
    EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
    dmm_heap_destroy(h);
}

INSTANTIATE_TEST_SUITE_P(Configs, Annotate, ::testing::ValuesIn(annotate_configs()), name_of);

// ---- pools: blocks carry no header, and ASan still sees their edges ---------

#include "dmm/pool.h"

namespace {

dmm_pool *annotated_pool(std::vector<unsigned char> &mem, size_t block, size_t align)
{
    dmm_pool_config c = dmm_pool_default_config();
    c.block_size = block;
    c.align = align;
    mem.resize(dmm_pool_buffer_size(&c, 8));
    dmm_pool *p = nullptr;
    if (dmm_pool_init(&p, mem.data(), mem.size(), &c) != DMM_OK)
        return nullptr;
    return p;
}

} // namespace

TEST(AnnotatePool, ReadAfterFreeIsCaught)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            std::vector<unsigned char> mem;
            dmm_pool *p = annotated_pool(mem, 64, 64);
            auto *b = static_cast<unsigned char *>(dmm_pool_alloc(p));
            dmm_pool_free(p, b);
            (void)launder_read(b + 3);
        },
        "use-after-poison");
}

TEST(AnnotatePool, ReadPastTheBlockIntoItsPaddingIsCaught)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            std::vector<unsigned char> mem;
            dmm_pool *p = annotated_pool(mem, 40, 64);
            auto *b = static_cast<unsigned char *>(dmm_pool_alloc(p));
            (void)launder_read(b + 40);
        },
        "use-after-poison");
}

TEST(AnnotatePool, CorrectUseRaisesNothing)
{
    std::vector<unsigned char> mem;
    dmm_pool *p = annotated_pool(mem, 40, 64);
    ASSERT_NE(p, nullptr);
    std::vector<unsigned char *> v;
    for (int i = 0; i < 8; i++) {
        auto *b = static_cast<unsigned char *>(dmm_pool_calloc(p));
        ASSERT_NE(b, nullptr);
        std::memset(b, i, 40);
        v.push_back(b);
    }
    for (auto *b : v)
        dmm_pool_free(p, b);
    dmm_pool_check_report r{};
    EXPECT_EQ(dmm_pool_check(p, &r), DMM_OK) << r.detail;
}

// tests/vec/test_vec.cpp - the vector routines (dmm/vec.h): every
// implementation this build and CPU have, selected in turn, against a byte
// loop on every size the contract allows up to 4 KB and every 16-byte offset
// in a 128-byte window, with guard bytes around the destination; the
// selection API.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dmm/vec.h"

namespace {

constexpr size_t kMaxSize = 4096 + 256;  // every size 0..kMaxSize step 16
constexpr size_t kWindow = 128;          // offsets 0, 16, .., 112
constexpr size_t kGuard = 192;           // guard bytes each side (> widest vector * 2)

std::vector<const dmm_vec_impl *> impls()
{
    unsigned n = dmm_vec_impls(nullptr, 0);
    std::vector<const dmm_vec_impl *> v(n);
    EXPECT_EQ(dmm_vec_impls(v.data(), n), n);
    return v;
}

// A buffer aligned to 64 bytes: [guard | window + size | guard].
struct Arena {
    std::vector<unsigned char> raw;
    unsigned char *base;  // 64-aligned start of the guard
    size_t len;
    explicit Arena(size_t bytes) : raw(bytes + 64), len(bytes)
    {
        uintptr_t a = reinterpret_cast<uintptr_t>(raw.data());
        base = raw.data() + ((64 - a % 64) % 64);
    }
};

// Deterministic pattern, different for each buffer (seed) and never the fill byte 0x5a repeated.
void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = 2463534242u ^ seed;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = static_cast<unsigned char>(x);
    }
}

// Index of the first byte where a and b differ, or -1.
long first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return static_cast<long>(i);
    return -1;
}

std::string where(const dmm_vec_impl *impl, size_t off, size_t n)
{
    return std::string(impl->name) + " offset " + std::to_string(off) + " size " + std::to_string(n);
}

class VecImpl : public ::testing::Test {
protected:
    void TearDown() override { EXPECT_EQ(dmm_vec_select(nullptr), DMM_OK); }
};

TEST_F(VecImpl, MemsetEverySizeAndOffset)
{
    const size_t total = 2 * kGuard + kWindow + kMaxSize;
    Arena buf(total), ref(total);
    const int fills[] = {0x00, 0xff, 0x5a, 0x1a5};  // 0x1a5: only the low byte counts
    for (const dmm_vec_impl *impl : impls()) {
        ASSERT_EQ(dmm_vec_select(impl->name), DMM_OK) << impl->name;
        ASSERT_STREQ(dmm_vec_name(), impl->name);
        unsigned k = 0;
        for (size_t n = 0; n <= kMaxSize; n += DMM_VEC_GRANULE) {
            for (size_t off = 0; off < kWindow; off += DMM_VEC_GRANULE, k++) {
                int c = fills[k % 4];
                fill_pattern(buf.base, total, static_cast<unsigned>(n + off));
                std::memcpy(ref.base, buf.base, total);
                unsigned char *d = buf.base + kGuard + off;
                for (size_t i = 0; i < n; i++)
                    ref.base[kGuard + off + i] = static_cast<unsigned char>(c);
                // Alternate the direct call and the dispatcher (same implementation).
                if (k % 2)
                    impl->memset(d, c, n);
                else
                    dmm_vec_memset(d, c, n);
                long at = first_diff(buf.base, ref.base, total);
                ASSERT_EQ(at, -1) << where(impl, off, n) << ": byte " << at - static_cast<long>(kGuard + off)
                                  << " relative to dst is wrong";
            }
        }
    }
}

TEST_F(VecImpl, MemcpyEverySizeAndOffset)
{
    const size_t total = 2 * kGuard + kWindow + kMaxSize;
    Arena dst(total), ref(total), src(total), src_copy(total);
    fill_pattern(src.base, total, 99);
    std::memcpy(src_copy.base, src.base, total);
    for (const dmm_vec_impl *impl : impls()) {
        ASSERT_EQ(dmm_vec_select(impl->name), DMM_OK) << impl->name;
        unsigned k = 0;
        for (size_t n = 0; n <= kMaxSize; n += DMM_VEC_GRANULE) {
            for (size_t off = 0; off < kWindow; off += DMM_VEC_GRANULE, k++) {
                // The source offset differs from the destination's, so the two
                // are not aligned alike beyond the granule.
                size_t soff = (off + 48 * (k % 3)) % kWindow;
                fill_pattern(dst.base, total, static_cast<unsigned>(7 * n + off));
                std::memcpy(ref.base, dst.base, total);
                std::memcpy(ref.base + kGuard + off, src.base + kGuard + soff, n);
                unsigned char *d = dst.base + kGuard + off;
                const unsigned char *s = src.base + kGuard + soff;
                if (k % 2)
                    impl->memcpy(d, s, n);
                else
                    dmm_vec_memcpy(d, s, n);
                long at = first_diff(dst.base, ref.base, total);
                ASSERT_EQ(at, -1) << where(impl, off, n) << " (src offset " << soff << "): byte "
                                  << at - static_cast<long>(kGuard + off) << " relative to dst is wrong";
                ASSERT_EQ(first_diff(src.base, src_copy.base, total), -1) << where(impl, off, n) << ": src changed";
            }
        }
    }
}

TEST(VecSelect, ListIsBestFirstWithPortableLast)
{
    auto v = impls();
    ASSERT_GE(v.size(), 1u);
    EXPECT_STREQ(v.back()->name, "portable");
    EXPECT_EQ(v.back()->width, DMM_VEC_GRANULE);
    // Partial lists are prefixes of the full one.
    const dmm_vec_impl *one[1] = {nullptr};
    EXPECT_EQ(dmm_vec_impls(one, 1), v.size());
    EXPECT_EQ(one[0], v.front());
    for (size_t i = 0; i < v.size(); i++) {
        const dmm_vec_impl *x = v[i];
        std::string name = x->name;
        // The width each name implies (dmm/vec.h), and widths never grow down the list.
        size_t want = name == "avx512" ? 64 : name == "avx2" ? 32 : 16;
        EXPECT_TRUE(name == "avx512" || name == "avx2" || name == "neon" || name == "portable") << name;
        EXPECT_EQ(x->width, want) << name;
        EXPECT_EQ(x->width % DMM_VEC_GRANULE, 0u) << name;
        if (i > 0) {
            EXPECT_LE(x->width, v[i - 1]->width) << name;
        }
        EXPECT_NE(x->memset, nullptr);
        EXPECT_NE(x->memcpy, nullptr);
    }
}

TEST(VecSelect, SelectEachThenBest)
{
    auto v = impls();
    for (const dmm_vec_impl *x : v) {
        ASSERT_EQ(dmm_vec_select(x->name), DMM_OK) << x->name;
        EXPECT_STREQ(dmm_vec_name(), x->name);
        EXPECT_EQ(dmm_vec_width(), x->width);
    }
    ASSERT_EQ(dmm_vec_select(nullptr), DMM_OK);
    EXPECT_STREQ(dmm_vec_name(), v.front()->name);
    EXPECT_EQ(dmm_vec_width(), v.front()->width);
}

TEST(VecSelect, UnknownNameChangesNothing)
{
    ASSERT_EQ(dmm_vec_select("portable"), DMM_OK);
    for (const char *bad : {"", "nosuch", "portabl", "portable2", "AVX2", "avx"}) {
        EXPECT_EQ(dmm_vec_select(bad), DMM_E_UNSUPPORTED) << bad;
        EXPECT_STREQ(dmm_vec_name(), "portable") << bad;
    }
    ASSERT_EQ(dmm_vec_select(nullptr), DMM_OK);
}

// The implementations of the other architecture, and those this CPU lacks,
// are refused.
TEST(VecSelect, ForeignImplementationsRefused)
{
    auto v = impls();
    auto listed = [&](const char *name) {
        for (const dmm_vec_impl *x : v)
            if (std::string(x->name) == name)
                return true;
        return false;
    };
    for (const char *name : {"avx512", "avx2", "neon"}) {
        if (!listed(name)) {
            EXPECT_EQ(dmm_vec_select(name), DMM_E_UNSUPPORTED) << name;
        }
    }
#if defined(__aarch64__)
    EXPECT_TRUE(listed("neon")) << "an AArch64 posix build has NEON";
#endif
    ASSERT_EQ(dmm_vec_select(nullptr), DMM_OK);
}

// AVX-512 is tested by the two tests above only on a CPU that has it; say
// so when it is missing (this machine's CPU and QEMU 7.2's TCG have none).
TEST(VecSelect, Avx512Present)
{
#if defined(__x86_64__)
    auto v = impls();
    bool has = false;
    for (const dmm_vec_impl *x : v)
        has = has || std::string(x->name) == "avx512";
#if DMMT_VEC_EMULATED_AVX512
    // dmm_vec_emul512_tests: the avx512 routines built from AVX2 moves must be listed.
    if (__builtin_cpu_supports("avx2")) {
        ASSERT_TRUE(has) << "the emulated avx512 implementation is not listed";
    }
#endif
    if (!has)
        GTEST_SKIP() << "this CPU has no AVX-512F (or the OS does not save its registers): the avx512 "
                        "routines are compiled but not run here";
    EXPECT_STREQ(v.front()->name, "avx512");
#else
    GTEST_SKIP() << "not x86-64: no AVX-512 implementation in this build";
#endif
}

}  // namespace

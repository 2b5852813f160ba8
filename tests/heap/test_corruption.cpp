// tests/heap/test_corruption.cpp - misuse and corruption that the heap must
// detect.
//
// With on_error = REPORT the error callback must receive the right kind,
// operation and pointer, and nothing may be written: every byte of the
// heap's regions (descriptors, headers, links, payloads, canaries,
// sentinels) is snapshotted before the bad call and compared after it, and
// dmm_heap_check must pass afterwards (it verifies the control block's bins,
// bitmaps and accounting against the blocks).  The one write a report makes
// is the control block's error counter, checked through the statistics.
// With on_error = ABORT a death test expects the process to stop after the
// callback ran.
//
// Layout knowledge used (heap.h): a block starts with the two-word header
// [prev_size | size + flags] right before the payload; a free block keeps
// its list links in the first payload words; the canary is the last word of
// a used block.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>

#include "dmm_test_support.h"

using namespace dmmt;

namespace {

constexpr size_t W = sizeof(size_t);

size_t &head_word(void *payload) { return *reinterpret_cast<size_t *>((char *)payload - W); }
size_t &prev_word(void *payload) { return *reinterpret_cast<size_t *>((char *)payload - 2 * W); }

struct Heap {
    explicit Heap(const dmm_heap_config &c, size_t size = 64 * 1024) : cfg(c), buf(size, 0) {
        errs.attach(&cfg);
        status = dmm_heap_init(&h, buf.data(), buf.size(), &cfg);
    }
    ~Heap() {
        if (h)
            dmm_heap_destroy(h);
    }
    void *alloc(size_t n, uint64_t id) {
        void *p = dmm_heap_malloc(h, n);
        if (p)
            fill_pattern(p, 0, n, id);
        return p;
    }
    // Start of the first region (its descriptor): everything from here to
    // the end of the buffer belongs to blocks and region bookkeeping.
    size_t region_offset() {
        std::vector<dmm_heap_block_info> w = walk_all(h);
        uintptr_t first = UINTPTR_MAX;
        for (const auto &b : w)
            if (buf.contains(b.block, 1) && (uintptr_t)b.block < first)
                first = (uintptr_t)b.block;
        return (size_t)(first - (uintptr_t)buf.data()) - (dmm_heap_region_overhead() - 2 * W);
    }
    std::vector<unsigned char> snapshot() {
        return std::vector<unsigned char>(buf.data(), buf.data() + buf.size());
    }
    ::testing::AssertionResult unchanged(const std::vector<unsigned char> &snap, size_t from) {
        for (size_t i = from; i < buf.size(); ++i)
            if (snap[i] != buf.data()[i])
                return ::testing::AssertionFailure()
                       << "byte at buffer offset " << i << " (region offset " << (i - from)
                       << ") changed from 0x" << std::hex << (int)snap[i] << " to 0x"
                       << (int)buf.data()[i] << std::dec << "; config " << cfg_str(cfg);
        return ::testing::AssertionSuccess();
    }
    ::testing::AssertionResult check_ok() {
        dmm_heap_check_report rep{};
        if (dmm_heap_check(h, &rep) == DMM_OK)
            return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << report_str(rep) << "; config " << cfg_str(cfg);
    }
    dmm_heap_check_report check_fail() {
        dmm_heap_check_report rep{};
        EXPECT_EQ(dmm_heap_check(h, &rep), DMM_E_CORRUPT) << "corruption not detected; "
                                                          << cfg_str(cfg);
        EXPECT_NE(rep.detail, nullptr);
        EXPECT_NE(rep.where, nullptr);
        return rep;
    }

    dmm_heap_config cfg;
    Buffer buf;
    ErrorLog errs;
    dmm_heap *h = nullptr;
    dmm_status status = DMM_E_CONFIG;
};

// Runs bad() on a heap whose regions are snapshotted; expects exactly one
// report of `kind` for `op` and `ptr`, no byte of the regions changed, the
// checker passing and the error counter incremented.
void expect_rejected(Heap &x, dmm_error_kind kind, dmm_op op, const void *ptr,
                     const std::function<void()> &bad, const char *what) {
    SCOPED_TRACE(std::string(what) + "; config " + cfg_str(x.cfg));
    ASSERT_TRUE(x.check_ok());
    size_t from = x.region_offset();
    uint64_t errors_before = dmm_heap_get_stats(x.h).error_count;
    std::vector<unsigned char> snap = x.snapshot();
    x.errs.errors.clear();
    bad();
    ASSERT_EQ(x.errs.errors.size(), 1u) << "expected exactly one error report";
    const dmm_error &e = x.errs.errors[0];
    EXPECT_EQ(e.kind, kind) << "got " << err_name(e.kind) << " (" << e.message << "), expected "
                            << err_name(kind);
    EXPECT_EQ(e.op, op);
    EXPECT_EQ(e.ptr, ptr);
    EXPECT_NE(e.message, nullptr);
    EXPECT_TRUE(x.unchanged(snap, from)) << "the rejected call wrote to the heap";
    EXPECT_TRUE(x.check_ok());
    if (x.cfg.stats != DMM_STATS_OFF) {
        EXPECT_EQ(dmm_heap_get_stats(x.h).error_count, errors_before + 1);
    }
    x.errs.errors.clear();
}

struct HParam {
    dmm_heap_preset preset;
    dmm_heap_harden harden;
};

const char *harden_name(dmm_heap_harden h) {
    static const char *const hn[] = {"off", "checked", "canary", "paranoid"};
    return hn[h];
}

void PrintTo(const HParam &p, std::ostream *os) {
    *os << dmm_heap_preset_name(p.preset) << "_" << harden_name(p.harden);
}

dmm_heap_config make_cfg(const HParam &p) {
    dmm_heap_config c = dmm_heap_preset_config(p.preset);
    c.harden = p.harden;
    c.on_error = DMM_ON_ERROR_REPORT;
    // Splitting lets the tests place several blocks side by side (the P2012
    // preset does not split, so one block would take a whole region).
    c.split = true;
    return c;
}

std::vector<HParam> hparams() {
    std::vector<HParam> v;
    for (int p = 0; p < DMM_PRESET_COUNT; ++p)
        for (int hd = DMM_HARDEN_CHECKED; hd <= DMM_HARDEN_PARANOID; ++hd)
            v.push_back({(dmm_heap_preset)p, (dmm_heap_harden)hd});
    return v;
}

std::string hname(const ::testing::TestParamInfo<HParam> &i) {
    return std::string(dmm_heap_preset_name(i.param.preset)) + "_" + harden_name(i.param.harden);
}

class Misuse : public ::testing::TestWithParam<HParam> {};

alignas(64) unsigned char g_global_buffer[256];

} // namespace

TEST_P(Misuse, DoubleFree) {
    Heap x(make_cfg(GetParam()));
    ASSERT_EQ(x.status, DMM_OK);
    void *a = x.alloc(64, 1);
    void *p = x.alloc(64, 2);
    void *b = x.alloc(64, 3);
    ASSERT_TRUE(a && p && b);
    dmm_heap_free(x.h, p);
    ASSERT_TRUE(x.check_ok());
    expect_rejected(x, DMM_ERR_DOUBLE_FREE, DMM_OP_FREE, p, [&] { dmm_heap_free(x.h, p); },
                    "double free");
    expect_rejected(x, DMM_ERR_DOUBLE_FREE, DMM_OP_REALLOC, p,
                    [&] { EXPECT_EQ(dmm_heap_realloc(x.h, p, 100), nullptr); }, "realloc after free");
    EXPECT_EQ(find_pattern_mismatch(a, 0, 64, 1), SIZE_MAX);
    EXPECT_EQ(find_pattern_mismatch(b, 0, 64, 3), SIZE_MAX);
    // A large block too (no quick list).
    void *big = x.alloc(3000, 4);
    ASSERT_NE(big, nullptr);
    dmm_heap_free(x.h, big);
    // After a merge the old pointer may be interior to a larger free block:
    // then it is reported as invalid; either way it is refused.
    x.errs.errors.clear();
    std::vector<unsigned char> snap = x.snapshot();
    size_t from = x.region_offset();
    dmm_heap_free(x.h, big);
    ASSERT_EQ(x.errs.errors.size(), 1u);
    EXPECT_TRUE(x.errs.errors[0].kind == DMM_ERR_DOUBLE_FREE ||
                x.errs.errors[0].kind == DMM_ERR_INVALID_POINTER)
        << err_name(x.errs.errors[0].kind);
    EXPECT_TRUE(x.unchanged(snap, from));
    EXPECT_TRUE(x.check_ok());
}

TEST_P(Misuse, ForeignPointers) {
    Heap x(make_cfg(GetParam()));
    ASSERT_EQ(x.status, DMM_OK);
    void *a = x.alloc(100, 1);
    ASSERT_NE(a, nullptr);
    alignas(64) unsigned char stack_buf[256];
    std::memset(stack_buf, 0, sizeof stack_buf);
    void *s = stack_buf + 64;
    expect_rejected(x, DMM_ERR_FOREIGN_POINTER, DMM_OP_FREE, s, [&] { dmm_heap_free(x.h, s); },
                    "stack pointer");
    void *g = g_global_buffer + 64;
    expect_rejected(x, DMM_ERR_FOREIGN_POINTER, DMM_OP_FREE, g, [&] { dmm_heap_free(x.h, g); },
                    "global pointer");
    expect_rejected(x, DMM_ERR_FOREIGN_POINTER, DMM_OP_REALLOC, g,
                    [&] { EXPECT_EQ(dmm_heap_realloc(x.h, g, 10), nullptr); }, "realloc global");

    // A block of another heap.
    Heap other(make_cfg(GetParam()));
    ASSERT_EQ(other.status, DMM_OK);
    void *o = other.alloc(100, 9);
    ASSERT_NE(o, nullptr);
    expect_rejected(x, DMM_ERR_FOREIGN_POINTER, DMM_OP_FREE, o, [&] { dmm_heap_free(x.h, o); },
                    "another heap's block");
    EXPECT_EQ(find_pattern_mismatch(o, 0, 100, 9), SIZE_MAX);
    EXPECT_TRUE(other.check_ok());
    // A pointer into this heap's control block is not in any region.
    void *c = x.buf.data() + 64;
    expect_rejected(x, DMM_ERR_FOREIGN_POINTER, DMM_OP_FREE, c, [&] { dmm_heap_free(x.h, c); },
                    "control block pointer");
    // usable_size of a foreign pointer is 0.
    x.errs.errors.clear();
    EXPECT_EQ(dmm_heap_usable_size(x.h, g), 0u);
    x.errs.errors.clear();
    EXPECT_EQ(find_pattern_mismatch(a, 0, 100, 1), SIZE_MAX);
}

TEST_P(Misuse, InteriorPointers) {
    Heap x(make_cfg(GetParam()));
    ASSERT_EQ(x.status, DMM_OK);
    void *a = x.alloc(64, 1);
    unsigned char *p = static_cast<unsigned char *>(dmm_heap_malloc(x.h, 512));
    void *b = x.alloc(64, 3);
    ASSERT_TRUE(a && p && b);
    std::memset(p, 0, 512);
    for (size_t off : {(size_t)DMM_HEAP_ALIGN, (size_t)64, (size_t)256, (size_t)496}) {
        void *q = p + off;
        expect_rejected(x, DMM_ERR_INVALID_POINTER, DMM_OP_FREE, q, [&] { dmm_heap_free(x.h, q); },
                        ("interior pointer, zero payload, offset " + std::to_string(off)).c_str());
    }
    fill_pattern(p, 0, 512, 2);
    for (size_t off : {(size_t)32, (size_t)128, (size_t)400}) {
        void *q = p + off;
        expect_rejected(x, DMM_ERR_INVALID_POINTER, DMM_OP_FREE, q, [&] { dmm_heap_free(x.h, q); },
                        ("interior pointer, patterned payload, offset " + std::to_string(off)).c_str());
        expect_rejected(x, DMM_ERR_INVALID_POINTER, DMM_OP_REALLOC, q,
                        [&] { EXPECT_EQ(dmm_heap_realloc(x.h, q, 8), nullptr); }, "realloc interior");
    }
    EXPECT_EQ(find_pattern_mismatch(p, 0, 512, 2), SIZE_MAX);
    dmm_heap_free(x.h, p);
    EXPECT_TRUE(x.errs.errors.empty());
    EXPECT_TRUE(x.check_ok());
}

TEST_P(Misuse, MisalignedPointers) {
    Heap x(make_cfg(GetParam()));
    ASSERT_EQ(x.status, DMM_OK);
    unsigned char *p = static_cast<unsigned char *>(x.alloc(200, 1));
    ASSERT_NE(p, nullptr);
    for (size_t off = 1; off < DMM_HEAP_ALIGN; off += (off < 4 ? 1 : 3)) {
        void *q = p + off;
        expect_rejected(x, DMM_ERR_MISALIGNED_POINTER, DMM_OP_FREE, q,
                        [&] { dmm_heap_free(x.h, q); },
                        ("misaligned by " + std::to_string(off)).c_str());
    }
    void *q = p + 3;
    expect_rejected(x, DMM_ERR_MISALIGNED_POINTER, DMM_OP_REALLOC, q,
                    [&] { EXPECT_EQ(dmm_heap_realloc(x.h, q, 400), nullptr); }, "realloc misaligned");
    EXPECT_EQ(find_pattern_mismatch(p, 0, 200, 1), SIZE_MAX);
}

TEST(Paranoid, CraftedFakeHeaderIsRefused) {
    // An interior pointer behind a plausible fake header (consistent sizes,
    // boundary tags and canary) passes the O(1) checks of CHECKED and
    // CANARY; PARANOID hardening walks the region and must refuse it.
    for (int preset = 0; preset < DMM_PRESET_COUNT; ++preset) {
        dmm_heap_config cfg = make_cfg({(dmm_heap_preset)preset, DMM_HARDEN_PARANOID});
        cfg.cookie = 0x5EC12E7;
        Heap x(cfg);
        ASSERT_EQ(x.status, DMM_OK);
        unsigned char *p = static_cast<unsigned char *>(dmm_heap_malloc(x.h, 1024));
        void *after = x.alloc(64, 5);
        ASSERT_TRUE(p && after);
        std::memset(p, 0, 1024);
        // fake0 header at p+16 (payload p+32), size 64; fake1 at p+80
        // (payload p+96), prev 64, size 128; fake1's successor at p+208
        // with prev 128.
        auto put = [&](size_t off, size_t v) { std::memcpy(p + off, &v, W); };
        put(16, 0x1000);       // fake0 prev: anything non-zero inside
        put(16 + W, 64 | 1);   // fake0 head: 64, used
        put(80, 64);           // fake1 prev
        put(80 + W, 128 | 1);  // fake1 head: 128, used
        put(208, 128);         // successor prev tag
        put(208 + W, 64 | 1);
        uintptr_t canary = (uintptr_t)0x5EC12E7 ^ (uintptr_t)(p + 80);
        put(80 + 128 - W, canary); // fake1's canary (last word)
        void *fake = p + 96;
        expect_rejected(x, DMM_ERR_INVALID_POINTER, DMM_OP_FREE, fake,
                        [&] { dmm_heap_free(x.h, fake); }, "crafted interior block");
    }
}

TEST_P(Misuse, OverflowIntoNextBlock) {
    HParam hp = GetParam();
    Heap x(make_cfg(hp));
    ASSERT_EQ(x.status, DMM_OK);
    void *a = x.alloc(40, 1);
    unsigned char *p = static_cast<unsigned char *>(x.alloc(40, 2));
    void *b = x.alloc(40, 3);
    ASSERT_TRUE(a && p && b);
    size_t usable = dmm_heap_usable_size(x.h, p);
    ASSERT_GE(usable, 40u);
    fill_pattern(p, 0, usable, 2);
    ASSERT_TRUE(x.check_ok()) << "writing the whole usable size is allowed";
    unsigned char saved = p[usable];
    p[usable] = (unsigned char)~saved; // one byte past the usable size
    dmm_heap_check_report rep = x.check_fail();
    dmm_error_kind want;
    if (hp.harden >= DMM_HARDEN_CANARY) {
        // The canary sits right behind the usable bytes.
        EXPECT_EQ(rep.invariant, DMM_INV_CANARY) << report_str(rep);
        want = DMM_ERR_CANARY;
    } else {
        // Without a canary the next block's prev_size tag is hit.
        EXPECT_EQ(rep.invariant, DMM_INV_BOUNDARY_TAG) << report_str(rep);
        want = DMM_ERR_HEADER;
    }
    // free detects it before writing anything.
    size_t from = x.region_offset();
    std::vector<unsigned char> snap = x.snapshot();
    x.errs.errors.clear();
    dmm_heap_free(x.h, p);
    ASSERT_EQ(x.errs.errors.size(), 1u) << "overflow not reported by free; " << cfg_str(x.cfg);
    EXPECT_EQ(x.errs.errors[0].kind, want) << err_name(x.errs.errors[0].kind);
    EXPECT_EQ(x.errs.errors[0].op, DMM_OP_FREE);
    EXPECT_EQ(x.errs.errors[0].ptr, p);
    EXPECT_TRUE(x.unchanged(snap, from));
    // realloc too.
    x.errs.errors.clear();
    EXPECT_EQ(dmm_heap_realloc(x.h, p, 500), nullptr);
    ASSERT_EQ(x.errs.errors.size(), 1u);
    EXPECT_EQ(x.errs.errors[0].kind, want);
    EXPECT_EQ(x.errs.errors[0].op, DMM_OP_REALLOC);
    EXPECT_TRUE(x.unchanged(snap, from));
    // Repair: everything is fine again and the block can be freed.
    p[usable] = saved;
    x.errs.errors.clear();
    EXPECT_TRUE(x.check_ok());
    dmm_heap_free(x.h, p);
    EXPECT_TRUE(x.errs.errors.empty());
    EXPECT_TRUE(x.check_ok());
    EXPECT_EQ(find_pattern_mismatch(a, 0, 40, 1), SIZE_MAX);
    EXPECT_EQ(find_pattern_mismatch(b, 0, 40, 3), SIZE_MAX);
}

TEST_P(Misuse, HeaderSmashing) {
    Heap x(make_cfg(GetParam()));
    ASSERT_EQ(x.status, DMM_OK);
    void *a = x.alloc(100, 1);
    void *b = x.alloc(100, 2);
    void *c = x.alloc(100, 3);
    void *d = x.alloc(100, 4);
    ASSERT_TRUE(a && b && c && d);
    const size_t head = head_word(b);
    const size_t bsz = head & ~(size_t)(DMM_HEAP_ALIGN - 1);

    struct Smash {
        const char *what;
        size_t *word;
        size_t value;
    } smashes[] = {
        {"size word garbage", &head_word(b), (size_t)0x7},
        {"size word too large", &head_word(b), (bsz + 3 * DMM_HEAP_ALIGN) | (head & (DMM_HEAP_ALIGN - 1))},
        {"size word too small", &head_word(b), (bsz - DMM_HEAP_ALIGN) | (head & (DMM_HEAP_ALIGN - 1))},
        {"size word huge", &head_word(b), ((size_t)1 << (W * 8 - 2)) | (head & (DMM_HEAP_ALIGN - 1))},
        {"prev_size tag of the next block", &prev_word(c), prev_word(c) + DMM_HEAP_ALIGN},
        {"prev_size tag zeroed", &prev_word(c), 0},
    };
    for (const Smash &s : smashes) {
        SCOPED_TRACE(s.what);
        const size_t saved = *s.word;
        *s.word = s.value;
        dmm_heap_check_report rep = x.check_fail();
        EXPECT_TRUE(rep.invariant == DMM_INV_BLOCK_SIZE || rep.invariant == DMM_INV_BOUNDARY_TAG)
            << report_str(rep);
        // Freeing the damaged block is refused without writes.
        void *victim = (s.word == &head_word(b)) ? b : c;
        size_t from = x.region_offset();
        std::vector<unsigned char> snap = x.snapshot();
        x.errs.errors.clear();
        dmm_heap_free(x.h, victim);
        ASSERT_EQ(x.errs.errors.size(), 1u) << "smashed header not reported by free";
        dmm_error_kind k = x.errs.errors[0].kind;
        EXPECT_TRUE(k == DMM_ERR_HEADER || k == DMM_ERR_INVALID_POINTER || k == DMM_ERR_CANARY)
            << err_name(k);
        EXPECT_TRUE(x.unchanged(snap, from));
        *s.word = saved;
        x.errs.errors.clear();
        ASSERT_TRUE(x.check_ok()) << "repair failed";
    }
    for (void *p : {a, b, c, d})
        dmm_heap_free(x.h, p);
    EXPECT_TRUE(x.errs.errors.empty());
    EXPECT_TRUE(x.check_ok());
}

INSTANTIATE_TEST_SUITE_P(Presets, Misuse, ::testing::ValuesIn(hparams()), hname);

// ---- the checker on free-list and poison damage ------------------------------

namespace {

dmm_heap_config list_cfg(dmm_heap_org org, dmm_heap_links links) {
    dmm_heap_config c = dmm_heap_default_config();
    c.org = org;
    c.links = links;
    c.order = DMM_ORDER_LIFO;
    c.fit = org == DMM_ORG_SINGLE ? DMM_FIT_FIRST : DMM_FIT_GOOD;
    c.split = true;
    c.coalesce = DMM_COALESCE_OFF;
    c.quick_max = 0;
    c.poison = false;
    c.harden = DMM_HARDEN_CHECKED;
    return c;
}

} // namespace

class ListLinks : public ::testing::TestWithParam<std::pair<dmm_heap_org, dmm_heap_links>> {};

TEST_P(ListLinks, CorruptedLinksAreReported) {
    Heap x(list_cfg(GetParam().first, GetParam().second));
    ASSERT_EQ(x.status, DMM_OK) << cfg_str(x.cfg);
    void *blocks[6];
    for (int i = 0; i < 6; ++i) {
        blocks[i] = x.alloc(96, i + 1);
        ASSERT_NE(blocks[i], nullptr);
    }
    // Two free blocks of the same size, separated by used ones.
    dmm_heap_free(x.h, blocks[1]);
    dmm_heap_free(x.h, blocks[3]);
    ASSERT_TRUE(x.check_ok());
    void **link = static_cast<void **>(blocks[3]); // first payload word: next link
    void *const saved = *link;
    const void *used_block = (char *)blocks[4] - 2 * W;
    alignas(16) static unsigned char outside[64];
    struct Bad {
        const char *what;
        void *value;
    } bads[] = {
        {"next points at a used block", const_cast<void *>(used_block)},
        {"next points outside the heap", outside},
        {"next is misaligned", (void *)((uintptr_t)saved + 1)},
        {"next points into a payload", (char *)blocks[2] + 32},
        {"next points at its own node (cycle)", (char *)blocks[3] - 2 * W},
    };
    for (const Bad &b : bads) {
        if (saved == nullptr && std::strstr(b.what, "misaligned"))
            continue;
        SCOPED_TRACE(b.what);
        *link = b.value;
        dmm_heap_check_report rep = x.check_fail();
        EXPECT_EQ(rep.invariant, DMM_INV_LIST_LINK) << report_str(rep) << "; " << cfg_str(x.cfg);
        *link = saved;
        ASSERT_TRUE(x.check_ok());
    }
    if (x.cfg.links == DMM_LINKS_DOUBLY) {
        void **prev = link + 1;
        void *const sp = *prev;
        *prev = (char *)blocks[5] - 2 * W;
        dmm_heap_check_report rep = x.check_fail();
        EXPECT_EQ(rep.invariant, DMM_INV_LIST_LINK) << "prev link: " << report_str(rep);
        *prev = sp;
        ASSERT_TRUE(x.check_ok());
    }
}

INSTANTIATE_TEST_SUITE_P(
    Orgs, ListLinks,
    ::testing::Values(std::make_pair(DMM_ORG_SINGLE, DMM_LINKS_SINGLY),
                      std::make_pair(DMM_ORG_SINGLE, DMM_LINKS_DOUBLY),
                      std::make_pair(DMM_ORG_TLSF, DMM_LINKS_SINGLY),
                      std::make_pair(DMM_ORG_TLSF, DMM_LINKS_DOUBLY),
                      std::make_pair(DMM_ORG_SEG_EXACT, DMM_LINKS_DOUBLY),
                      std::make_pair(DMM_ORG_SEG_GEOMETRIC, DMM_LINKS_SINGLY)),
    [](const ::testing::TestParamInfo<std::pair<dmm_heap_org, dmm_heap_links>> &i) {
        return std::string(org_name(i.param.first)) + links_name(i.param.second);
    });

TEST(Poison, WriteAfterFreeIsReported) {
    for (int p = 0; p < DMM_PRESET_COUNT; ++p) {
        dmm_heap_config cfg = dmm_heap_preset_config((dmm_heap_preset)p);
        cfg.poison = true;
        cfg.split = true;
        Heap x(cfg);
        SCOPED_TRACE(cfg_str(x.cfg));
        ASSERT_EQ(x.status, DMM_OK);
        void *a = x.alloc(64, 1);
        unsigned char *q = static_cast<unsigned char *>(x.alloc(1024, 2));
        void *b = x.alloc(64, 3);
        ASSERT_TRUE(a && q && b);
        dmm_heap_free(x.h, q);
        ASSERT_TRUE(x.check_ok());
        const unsigned char saved = q[512];
        q[512] = (unsigned char)~saved; // write after free
        dmm_heap_check_report rep = x.check_fail();
        EXPECT_EQ(rep.invariant, DMM_INV_POISON) << report_str(rep);
        EXPECT_EQ(rep.where, q + 512) << "the checker should point at the changed byte";
        // The allocation path verifies the pattern when it hands the block out.
        x.errs.errors.clear();
        void *again = dmm_heap_malloc(x.h, 1024);
        ASSERT_NE(again, nullptr);
        if (again == q) {
            ASSERT_FALSE(x.errs.errors.empty()) << "poisoned block handed out without a report";
            EXPECT_EQ(x.errs.errors[0].kind, DMM_ERR_POISON);
            EXPECT_EQ(x.errs.errors[0].op, DMM_OP_MALLOC);
        }
        x.errs.errors.clear();
    }
}

TEST(Poison, QuickListBlocksArePoisonedToo) {
    dmm_heap_config cfg = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    cfg.poison = true;
    ASSERT_GE(cfg.quick_max, 48u);
    Heap x(cfg);
    ASSERT_EQ(x.status, DMM_OK);
    void *a = x.alloc(16, 1);
    unsigned char *q = static_cast<unsigned char *>(x.alloc(48, 2));
    void *b = x.alloc(16, 3);
    ASSERT_TRUE(a && q && b);
    dmm_heap_free(x.h, q);
    ASSERT_TRUE(x.check_ok());
    q[40] ^= 0xFF;
    dmm_heap_check_report rep = x.check_fail();
    EXPECT_EQ(rep.invariant, DMM_INV_POISON) << report_str(rep);
}

TEST(Checker, WritesNothing) {
    // The checker and the walker are read-only, even on a corrupt heap.
    dmm_heap_config cfg = dmm_heap_default_config();
    cfg.harden = DMM_HARDEN_CANARY;
    cfg.stats = DMM_STATS_FULL;
    Heap x(cfg);
    ASSERT_EQ(x.status, DMM_OK);
    void *a = x.alloc(50, 1);
    unsigned char *p = static_cast<unsigned char *>(x.alloc(50, 2));
    ASSERT_TRUE(a && p);
    p[dmm_heap_usable_size(x.h, p) + W] ^= 0x40; // break the canary (after the requested-size word)
    std::vector<unsigned char> snap = x.snapshot();
    dmm_heap_check_report rep{};
    EXPECT_EQ(dmm_heap_check(x.h, &rep), DMM_E_CORRUPT);
    EXPECT_EQ(rep.invariant, DMM_INV_CANARY) << report_str(rep);
    walk_all(x.h);
    dmm_heap_get_stats(x.h);
    EXPECT_TRUE(x.unchanged(snap, 0)) << "check/walk/stats wrote to the buffer";
}

// ---- ABORT policy: death tests ------------------------------------------------

namespace {

void print_error(void *, const dmm_error *e) {
    std::fprintf(stderr, "dmm-test-error kind=%d op=%d\n", (int)e->kind, (int)e->op);
    std::fflush(stderr);
}

dmm_heap_config abort_cfg(dmm_heap_harden hd) {
    dmm_heap_config c = dmm_heap_default_config();
    c.harden = hd;
    c.on_error = DMM_ON_ERROR_ABORT;
    c.error_fn = print_error;
    return c;
}

} // namespace

TEST(AbortPolicy, DoubleFreeStopsTheProgram) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            Buffer b(16384, 0);
            dmm_heap *h = nullptr;
            dmm_heap_config c = abort_cfg(DMM_HARDEN_CHECKED);
            if (dmm_heap_init(&h, b.data(), b.size(), &c) != DMM_OK)
                std::exit(0);
            void *p = dmm_heap_malloc(h, 32);
            dmm_heap_malloc(h, 32);
            dmm_heap_free(h, p);
            dmm_heap_free(h, p);
        },
        "dmm-test-error kind=4 op=4");
}

TEST(AbortPolicy, ForeignPointerStopsTheProgram) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            Buffer b(16384, 0);
            dmm_heap *h = nullptr;
            dmm_heap_config c = abort_cfg(DMM_HARDEN_CHECKED);
            if (dmm_heap_init(&h, b.data(), b.size(), &c) != DMM_OK)
                std::exit(0);
            dmm_heap_free(h, g_global_buffer + 16);
        },
        "dmm-test-error kind=1 op=4");
}

TEST(AbortPolicy, CanaryStopsTheProgram) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            Buffer b(16384, 0);
            dmm_heap *h = nullptr;
            dmm_heap_config c = abort_cfg(DMM_HARDEN_CANARY);
            if (dmm_heap_init(&h, b.data(), b.size(), &c) != DMM_OK)
                std::exit(0);
            unsigned char *p = static_cast<unsigned char *>(dmm_heap_malloc(h, 24));
            dmm_heap_malloc(h, 24);
            p[dmm_heap_usable_size(h, p)] ^= 1;
            dmm_heap_free(h, p);
        },
        "dmm-test-error kind=5 op=4");
}

TEST(AbortPolicy, ReportPolicyDoesNotStop) {
    // The same misuse under REPORT returns normally (the death tests above
    // are therefore about the policy, not about a crash).
    Buffer b(16384, 0);
    dmm_heap *h = nullptr;
    dmm_heap_config c = abort_cfg(DMM_HARDEN_CHECKED);
    c.on_error = DMM_ON_ERROR_REPORT;
    ErrorLog log;
    log.attach(&c);
    ASSERT_EQ(dmm_heap_init(&h, b.data(), b.size(), &c), DMM_OK);
    void *p = dmm_heap_malloc(h, 32);
    dmm_heap_malloc(h, 32);
    dmm_heap_free(h, p);
    dmm_heap_free(h, p);
    EXPECT_EQ(log.errors.size(), 1u);
    EXPECT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
    dmm_heap_destroy(h);
}

TEST(HardenOff, TrustsPointersButStillWorks) {
    // Hardening OFF: no validation (misuse is undefined), valid use works.
    RunSpec spec;
    spec.cfg = dmm_heap_default_config();
    spec.cfg.harden = DMM_HARDEN_OFF;
    spec.seed = mix64(base_seed(), 31337);
    spec.ops = scaled_ops(600);
    RunResult r = run_random(spec);
    ASSERT_TRUE(r.ok) << r.message;
}

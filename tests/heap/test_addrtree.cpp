// tests/heap/test_addrtree.cpp - org=addrtree (src/heap/engine/addrtree.h),
// the firstfit preset's organisation.
//
//   Placement  the address tree puts every block exactly where the
//              address-ordered list (org=single,order=address,fit=first)
//              does: both forms replay every bundled trace (bench/traces)
//              and seeded random malloc/free/realloc/aligned sequences side
//              by side, every result is compared as an offset from the
//              heap's first region, and dmm_heap_check runs on both after
//              every operation.
//   Damage     a tree node's link, balance bit or subtree maximum
//              overwritten is found by the checker, and malloc/free report a
//              forged link (FREE_LIST) without handing out a used block or a
//              block twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <string>
#include <vector>

#include "dmm/heap.h"
#include "dmm/trace.h"
#include "dmm_test_support.h"

extern "C" uintptr_t dmm__heap_link_encode(dmm_heap *h, const void *slot_payload, const void *target_payload);

using namespace dmmt;

namespace {

constexpr size_t W = sizeof(size_t);

dmm_heap_config tree_cfg() { return dmm_heap_preset_config(DMM_PRESET_FIRSTFIT); }
dmm_heap_config list_of(dmm_heap_config c) {
    c.org = DMM_ORG_SINGLE;
    c.links = DMM_LINKS_DOUBLY;
    return c;
}

// One heap of a pair: its buffer sized and placed so that its first region
// has exactly `region` bytes and starts on a 4 KiB boundary whatever its
// control block takes (aligned allocations depend on the address).
struct Side {
    dmm_heap_config cfg;
    ErrorLog errs;
    std::vector<unsigned char> raw;
    dmm_heap *h = nullptr;
    char *base = nullptr; // the first region
    Side(const dmm_heap_config &c, size_t region) : cfg(c) {
        errs.attach(&cfg);
        std::vector<unsigned char> probe(64 * 1024 + 64);
        dmm_heap *ph = nullptr;
        unsigned char *pa = probe.data() + ((64 - (uintptr_t)probe.data() % 64) % 64);
        EXPECT_EQ(dmm_heap_init(&ph, pa, 64 * 1024, &cfg), DMM_OK) << cfg_str(cfg);
        size_t ctrl = ph ? dmm_heap_control_overhead(ph) : 0;
        if (ph)
            dmm_heap_destroy(ph);
        raw.assign(ctrl + region + 8192, 0);
        unsigned char *a = raw.data() + ((8192 - ((uintptr_t)raw.data() + ctrl) % 4096) % 4096);
        EXPECT_EQ(dmm_heap_init(&h, a, ctrl + region, &cfg), DMM_OK);
        base = h ? (char *)h + dmm_heap_control_overhead(h) : nullptr;
    }
    ~Side() {
        if (h)
            dmm_heap_destroy(h);
    }
    long long off(const void *p) const { return p ? (long long)((const char *)p - base) : -1; }
};

// The list form and the tree form side by side.
struct Twin {
    Side list, tree;
    std::vector<void *> lp, tp; // live objects by slot
    size_t ops = 0, failed = 0;
    Twin(const dmm_heap_config &tcfg, size_t region, size_t slots)
        : list(list_of(tcfg), region), tree(tcfg, region), lp(slots), tp(slots) {}

    bool ready() const { return list.h && tree.h; }

    // After each operation: same offset (or both NULL), both heaps intact,
    // nothing reported.
    ::testing::AssertionResult same(const char *what, void *a, void *b) {
        ++ops;
        if (!a)
            ++failed;
        if (list.off(a) != tree.off(b))
            return ::testing::AssertionFailure() << "op #" << ops << " (" << what << "): list form at offset "
                                                 << list.off(a) << ", tree form at " << tree.off(b);
        return checked();
    }
    ::testing::AssertionResult checked() {
        dmm_heap_check_report r{};
        if (dmm_heap_check(list.h, &r) != DMM_OK)
            return ::testing::AssertionFailure() << "op #" << ops << ": list form: " << report_str(r);
        if (dmm_heap_check(tree.h, &r) != DMM_OK)
            return ::testing::AssertionFailure() << "op #" << ops << ": tree form: " << report_str(r);
        if (!list.errs.errors.empty() || !tree.errs.errors.empty())
            return ::testing::AssertionFailure() << "op #" << ops << ": an error was reported";
        return ::testing::AssertionSuccess();
    }

    ::testing::AssertionResult malloc_(size_t slot, size_t n) {
        lp[slot] = dmm_heap_malloc(list.h, n);
        tp[slot] = dmm_heap_malloc(tree.h, n);
        return same("malloc", lp[slot], tp[slot]);
    }
    ::testing::AssertionResult calloc_(size_t slot, size_t k, size_t n) {
        lp[slot] = dmm_heap_calloc(list.h, k, n);
        tp[slot] = dmm_heap_calloc(tree.h, k, n);
        return same("calloc", lp[slot], tp[slot]);
    }
    ::testing::AssertionResult aligned_(size_t slot, size_t align, size_t n) {
        lp[slot] = dmm_heap_aligned_alloc(list.h, align, n);
        tp[slot] = dmm_heap_aligned_alloc(tree.h, align, n);
        return same("aligned", lp[slot], tp[slot]);
    }
    ::testing::AssertionResult realloc_(size_t slot, size_t n) {
        void *a = dmm_heap_realloc(list.h, lp[slot], n), *b = dmm_heap_realloc(tree.h, tp[slot], n);
        if (a || n == 0) {
            lp[slot] = n ? a : nullptr;
        }
        if (b || n == 0) {
            tp[slot] = n ? b : nullptr;
        }
        if (n == 0) {
            ++ops;
            return checked();
        }
        return same("realloc", a, b);
    }
    ::testing::AssertionResult free_(size_t slot) {
        dmm_heap_free(list.h, lp[slot]);
        dmm_heap_free(tree.h, tp[slot]);
        lp[slot] = tp[slot] = nullptr;
        ++ops;
        return checked();
    }
};

std::vector<std::string> bundled_traces() {
    std::vector<std::string> v;
    if (DIR *d = opendir(DMMT_TRACES_DIR)) {
        while (struct dirent *e = readdir(d)) {
            std::string n = e->d_name;
            if (n.size() > 6 && n.compare(n.size() - 6, 6, ".trace") == 0)
                v.push_back(std::string(DMMT_TRACES_DIR) + "/" + n);
        }
        closedir(d);
    }
    std::sort(v.begin(), v.end());
    return v;
}

} // namespace

// ---- placement equivalence --------------------------------------------------

TEST(AddrTreePlacement, TheTracesAreThere) {
    EXPECT_GE(bundled_traces().size(), 10u) << "bench/traces not found at " << DMMT_TRACES_DIR;
}

class Traces : public ::testing::TestWithParam<std::string> {};

TEST_P(Traces, LandWhereTheListPutsThem) {
    {
        const std::string path = GetParam();
        dmm_trace t;
        dmm_trace_error err{};
        dmm_trace_init(&t);
        ASSERT_EQ(dmm_trace_load(&t, path.c_str(), &err), 0) << err.reason;
        dmm_trace_summary s{};
        std::vector<uint64_t> slot(t.n);
        ASSERT_EQ(dmm_trace_summarize(&t, &s, slot.data(), &err), 0) << err.reason;
        // slots are object incarnations (dmm_trace_summarize); the region
        // holds the trace's peak with room to fragment (32 MiB at most)
        const size_t region = (size_t)std::min<uint64_t>(2 * s.peak_live + (64u << 10), 32u << 20);
        Twin x(tree_cfg(), region, (size_t)s.objects + 1);
        ASSERT_TRUE(x.ready());
        // Both heaps are checked whole after every operation, so a trace
        // costs O(operations x live blocks).  DMM_TEST_TRACE_OPS replays
        // only a prefix (the sanitizer test presets set it; the debug and
        // release runs replay every trace whole).
        const size_t n = (size_t)std::min<uint64_t>(t.n, env_u64("DMM_TEST_TRACE_OPS", t.n));
        for (size_t i = 0; i < n; ++i) {
            const dmm_trace_op &op = t.ops[i];
            const size_t k = (size_t)slot[i];
            switch (op.kind) {
            case DMM_T_MALLOC:
                ASSERT_TRUE(x.malloc_(k, (size_t)op.size));
                break;
            case DMM_T_CALLOC:
                ASSERT_TRUE(op.arg ? x.calloc_(k, (size_t)op.arg, (size_t)(op.size / op.arg)) : x.malloc_(k, 0));
                break;
            case DMM_T_REALLOC:
                ASSERT_TRUE(x.realloc_(k, (size_t)op.size));
                break;
            case DMM_T_ALIGNED:
                ASSERT_TRUE(x.aligned_(k, op.arg >= 16 ? (size_t)op.arg : 16, (size_t)op.size));
                break;
            case DMM_T_FREE:
                ASSERT_TRUE(x.free_(k));
                break;
            default:
                break;
            }
        }
        std::printf("[ note     ] %s: %zu operations (%zu of the trace's %zu records), %zu found no block in "
                    "either form\n",
                    path.substr(path.rfind('/') + 1).c_str(), x.ops, n, (size_t)t.n, x.failed);
        dmm_trace_free(&t);
    }
}

INSTANTIATE_TEST_SUITE_P(AddrTreePlacement, Traces, ::testing::ValuesIn(bundled_traces()),
                         [](const ::testing::TestParamInfo<std::string> &i) {
                             std::string n = i.param.substr(i.param.rfind('/') + 1);
                             n = n.substr(0, n.size() - 6);
                             for (char &ch : n)
                                 if (!isalnum((unsigned char)ch))
                                     ch = '_';
                             return n;
                         });

// Seeded random sequences under every policy the tree form takes besides its
// organisation: coalescing, splitting, quick lists, hardening, statistics.
TEST(AddrTreePlacement, RandomSequencesLandWhereTheListPutsThem) {
    struct Knob {
        dmm_heap_coalesce coalesce;
        bool split;
        size_t quick_max;
        dmm_heap_harden harden;
        dmm_heap_stats_level stats;
        bool poison;
    } knobs[] = {
        {DMM_COALESCE_IMMEDIATE, true, 0, DMM_HARDEN_CHECKED, DMM_STATS_COUNTERS, false}, // the preset
        {DMM_COALESCE_IMMEDIATE, true, 0, DMM_HARDEN_OFF, DMM_STATS_OFF, false},          // lean
        {DMM_COALESCE_IMMEDIATE, true, 64, DMM_HARDEN_PARANOID, DMM_STATS_FULL, true},
        {DMM_COALESCE_DEFERRED, true, 0, DMM_HARDEN_CHECKED, DMM_STATS_COUNTERS, false},
        {DMM_COALESCE_OFF, true, 0, DMM_HARDEN_CANARY, DMM_STATS_COUNTERS, true},
        {DMM_COALESCE_IMMEDIATE, false, 0, DMM_HARDEN_CHECKED, DMM_STATS_FULL, false},
        {DMM_COALESCE_DEFERRED, false, 128, DMM_HARDEN_OFF, DMM_STATS_COUNTERS, true},
    };
    const size_t nops = scaled_ops(12000);
    for (const Knob &k : knobs) {
        for (uint64_t run = 0; run < 3; ++run) {
            dmm_heap_config c = tree_cfg();
            c.coalesce = k.coalesce;
            c.split = k.split;
            c.quick_max = k.quick_max;
            c.harden = k.harden;
            c.stats = k.stats;
            c.poison = k.poison;
            const uint64_t seed = mix64(base_seed(), 0xADD7 + run);
            SCOPED_TRACE(cfg_str(c) + " seed " + std::to_string(seed));
            const size_t slots = 200;
            Twin x(c, 96 * 1024, slots);
            ASSERT_TRUE(x.ready());
            Rng r(seed);
            for (size_t i = 0; i < nops; ++i) {
                size_t s = (size_t)r.below(slots);
                size_t n;
                unsigned kind = (unsigned)r.below(100);
                if (kind < 45)
                    n = (size_t)r.range(1, 40); // many minimum blocks: the second tree
                else if (kind < 90)
                    n = (size_t)1 << r.range(3, 11), n += (size_t)r.below(n);
                else
                    n = (size_t)r.range(2048, 12000);
                if (x.lp[s] == nullptr && x.tp[s] == nullptr) {
                    if (r.chance(5))
                        ASSERT_TRUE(x.aligned_(s, (size_t)32 << r.below(4), n));
                    else
                        ASSERT_TRUE(x.malloc_(s, n));
                } else if (r.chance(25)) {
                    ASSERT_TRUE(x.realloc_(s, r.chance(3) ? 0 : n));
                } else {
                    ASSERT_TRUE(x.free_(s));
                }
            }
            for (size_t s = 0; s < slots; ++s)
                ASSERT_TRUE(x.free_(s));
            // everything free: with coalescing one block again (the top)
            ASSERT_TRUE(x.malloc_(0, 80 * 1024));
            if (k.coalesce != DMM_COALESCE_OFF) {
                EXPECT_NE(x.lp[0], nullptr);
            }
            EXPECT_GT(x.ops - x.failed, x.ops / 3) << "the heap should not be full most of the time";
        }
    }
}

// A node pool: minimum blocks freed one at a time and taken back. Each free
// leaves one node in the small tree and none in the big one, so malloc takes
// the inline path for a lone node (at_take). First fit must give back the
// block just freed, and the heap must check clean after every operation, in
// the shipped and the lean form.
TEST(AddrTreePlacement, ANodePoolTakesBackTheBlockItFreed) {
    for (dmm_heap_harden hd : {DMM_HARDEN_CHECKED, DMM_HARDEN_OFF}) {
        dmm_heap_config c = tree_cfg();
        c.harden = hd;
        SCOPED_TRACE(cfg_str(c));
        Buffer buf{64 * 1024, 0};
        dmm_heap *h = nullptr;
        ASSERT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &c), DMM_OK);
        std::vector<void *> v(64);
        for (void *&p : v) {
            p = dmm_heap_malloc(h, 8);
            ASSERT_NE(p, nullptr);
        }
        Rng r(mix64(base_seed(), 0x9001));
        for (int i = 0; i < 2000; ++i) {
            size_t k = (size_t)r.below(v.size());
            void *was = v[k];
            dmm_heap_free(h, was);
            dmm_heap_check_report rep{};
            ASSERT_EQ(dmm_heap_check(h, &rep), DMM_OK) << report_str(rep);
            v[k] = dmm_heap_malloc(h, 8);
            ASSERT_EQ(v[k], was) << "first fit takes the only free block";
            ASSERT_EQ(dmm_heap_check(h, &rep), DMM_OK) << report_str(rep);
        }
        dmm_heap_destroy(h);
    }
}

// ---- damage to the tree -------------------------------------------------------

namespace {

uintptr_t &word(void *payload, size_t i) { return ((uintptr_t *)payload)[i]; }

// A firstfit heap (checked) with three free blocks a < b < c of one size
// class, kept apart by used guards, freed a, b, c: AVL makes b the root
// with a and c as its children.
struct Three {
    dmm_heap_config cfg = tree_cfg();
    ErrorLog errs;
    Buffer buf{64 * 1024, 0};
    dmm_heap *h = nullptr;
    size_t req;
    void *g[4] = {}, *a = nullptr, *b = nullptr, *c = nullptr;
    explicit Three(size_t request) : req(request) {
        errs.attach(&cfg);
        EXPECT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &cfg), DMM_OK);
        g[0] = dmm_heap_malloc(h, req);
        a = dmm_heap_malloc(h, req);
        g[1] = dmm_heap_malloc(h, req);
        b = dmm_heap_malloc(h, req);
        g[2] = dmm_heap_malloc(h, req);
        c = dmm_heap_malloc(h, req);
        g[3] = dmm_heap_malloc(h, req);
        for (int i = 0; i < 4; ++i)
            fill_pattern(g[i], 0, req, 100 + i);
        dmm_heap_free(h, a);
        dmm_heap_free(h, b);
        dmm_heap_free(h, c);
    }
    ~Three() {
        if (h)
            dmm_heap_destroy(h);
    }
    uintptr_t enc(void *slot, const void *target) { return dmm__heap_link_encode(h, slot, target); }
    // b is the root, a its left and c its right child, all balanced
    bool shape_ok() {
        return word(b, 0) == enc(b, a) && word(b, 1) == enc(b, c) && word(a, 0) == enc(a, nullptr) &&
               word(a, 1) == enc(a, nullptr) && word(c, 0) == enc(c, nullptr) && word(c, 1) == enc(c, nullptr);
    }
    dmm_heap_check_report check() {
        dmm_heap_check_report r{};
        (void)dmm_heap_check(h, &r);
        return r;
    }
    bool guards_intact(int n = 4) {
        for (int i = 0; i < n; ++i)
            if (find_pattern_mismatch(g[i], 0, req, 100 + i) != SIZE_MAX)
                return false;
        return true;
    }
    bool only_free_list_reports() {
        for (const dmm_error &e : errs.errors)
            if (e.kind != DMM_ERR_FREE_LIST)
                return false;
        return !errs.errors.empty();
    }
};

// the requests of the two trees: a 256-byte block, and a minimum block
const size_t kBig = 200, kMin = 8;

} // namespace

TEST(AddrTreeDamage, SubtreeMaximumOverwrittenIsFound) {
    Three x(kBig);
    ASSERT_TRUE(x.shape_ok());
    ASSERT_EQ(x.check().invariant, DMM_INV_NONE);
    word(x.b, 2) = 2 * W * 2; // the root claims its subtree holds nothing above 32 bytes
    dmm_heap_check_report r = x.check();
    EXPECT_EQ(r.invariant, DMM_INV_LIST_LINK) << report_str(r);
    EXPECT_NE(std::string(r.detail).find("maximum"), std::string::npos) << report_str(r);
    EXPECT_EQ(r.where, (const void *)((char *)x.b - 2 * W));
}

TEST(AddrTreeDamage, BalanceBitOverwrittenIsFound) {
    for (size_t req : {kBig, kMin}) {
        Three x(req);
        ASSERT_TRUE(x.shape_ok()) << req;
        // a's empty left link now says "left subtree taller" (bit 0)
        word(x.a, 0) = x.enc(x.a, (const char *)nullptr + 2 * W + 1);
        dmm_heap_check_report r = x.check();
        EXPECT_EQ(r.invariant, DMM_INV_LIST_LINK) << report_str(r);
        EXPECT_NE(std::string(r.detail).find("balance"), std::string::npos) << report_str(r);
    }
}

// An empty link holds the node itself (with its balance bit) from checked
// up. A valid tree never sets the balance bit on an empty link (the taller
// side is not empty), so "empty | balance bit" in that form is damage the
// checker must name, and the hot paths must survive without handing out a
// block twice or touching a used one.
TEST(AddrTreeDamage, EmptyLinkWithBalanceBitIsFound) {
    for (size_t req : {kBig, kMin}) {
        Three x(req);
        ASSERT_TRUE(x.shape_ok()) << req;
        word(x.a, 0) = x.enc(x.a, (const char *)x.a + 1); // a itself | the balance bit
        dmm_heap_check_report r = x.check();
        EXPECT_EQ(r.invariant, DMM_INV_LIST_LINK) << report_str(r);
        EXPECT_NE(std::string(r.detail).find("balance"), std::string::npos) << report_str(r);
        std::vector<void *> got;
        for (int i = 0; i < 4; ++i)
            got.push_back(dmm_heap_malloc(x.h, req));
        for (size_t i = 0; i < got.size(); ++i) {
            for (void *gi : x.g)
                EXPECT_NE(got[i], gi) << "a used block was handed out";
            for (size_t j = i + 1; j < got.size(); ++j)
                if (got[i]) {
                    EXPECT_NE(got[i], got[j]) << "a block was handed out twice";
                }
        }
        for (const dmm_error &e : x.errs.errors)
            EXPECT_EQ(e.kind, DMM_ERR_FREE_LIST);
        EXPECT_TRUE(x.guards_intact());
    }
}

// The empty-link form: a node's empty link is the node itself, encoded, so
// a link overwritten with the plain "empty" value 0 of an unhardened heap is
// not read as empty but reported.
TEST(AddrTreeDamage, ZeroedLinkIsNotReadAsEmpty) {
    for (size_t req : {kBig, kMin}) {
        Three x(req);
        ASSERT_TRUE(x.shape_ok()) << req;
        ASSERT_EQ(word(x.a, 0), x.enc(x.a, nullptr)) << "an empty link is the node itself, encoded";
        ASSERT_NE(word(x.a, 0), (uintptr_t)0);
        word(x.b, 1) = 0; // the root's right link (to c) zeroed by a write after free
        EXPECT_NE(x.check().invariant, DMM_INV_NONE);
        void *p = dmm_heap_malloc(x.h, req), *q = dmm_heap_malloc(x.h, req);
        EXPECT_TRUE(x.only_free_list_reports()) << req;
        EXPECT_NE(p, q);
        EXPECT_TRUE(x.guards_intact());
    }
}

TEST(AddrTreeDamage, LostSubtreeIsFoundByCheckAndFree) {
    for (size_t req : {kBig, kMin}) {
        Three x(req);
        ASSERT_TRUE(x.shape_ok()) << req;
        word(x.b, 0) = x.enc(x.b, nullptr); // a valid encoding of "no left child": a is lost
        dmm_heap_check_report r = x.check();
        EXPECT_TRUE(r.invariant == DMM_INV_LIST_LINK || r.invariant == DMM_INV_FREE_COUNT) << report_str(r);
        // freeing a's neighbour must not merge with a block the tree does not hold
        dmm_heap_free(x.h, x.g[0]);
        EXPECT_TRUE(x.only_free_list_reports());
    }
}

// The inline path for a lone node of the small tree (at_take) must read the
// node's header as the search does: a lone free minimum block whose header
// now says "used" (a forged or stale header) is reported, not handed out.
TEST(AddrTreeDamage, LoneSmallNodeWithAUsedHeaderIsNotHandedOut) {
    dmm_heap_config cfg = tree_cfg();
    ErrorLog errs;
    errs.attach(&cfg);
    Buffer buf{64 * 1024, 0};
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &cfg), DMM_OK);
    void *g0 = dmm_heap_malloc(h, kMin), *a = dmm_heap_malloc(h, kMin), *g1 = dmm_heap_malloc(h, kMin);
    ASSERT_TRUE(g0 && a && g1);
    dmm_heap_free(h, a); // the small tree is a alone, the big tree is empty
    ASSERT_EQ(word(a, 0), dmm__heap_link_encode(h, a, nullptr));
    ASSERT_EQ(word(a, 1), dmm__heap_link_encode(h, a, nullptr));
    ASSERT_TRUE(errs.errors.empty());
    ((uintptr_t *)a)[-1] = ((uintptr_t *)g1)[-1]; // a's header: g1's (used, the same size)
    void *p = dmm_heap_malloc(h, kMin);
    EXPECT_NE(p, a) << "a block whose header says used was handed out";
    EXPECT_FALSE(errs.errors.empty());
    for (const dmm_error &e : errs.errors)
        EXPECT_EQ(e.kind, DMM_ERR_FREE_LIST);
    dmm_heap_destroy(h);
}

TEST(AddrTreeDamage, ForgedLinkToAUsedBlockIsRefused) {
    for (size_t req : {kBig, kMin}) {
        Three x(req);
        ASSERT_TRUE(x.shape_ok()) << req;
        // a's left link names guard g0 (used, below a: in address order),
        // encoded with the heap's own keys
        word(x.a, 0) = x.enc(x.a, x.g[0]);
        EXPECT_NE(x.check().invariant, DMM_INV_NONE);
        void *p = dmm_heap_malloc(x.h, req), *q = dmm_heap_malloc(x.h, req);
        EXPECT_TRUE(x.only_free_list_reports()) << req;
        for (void *v : {p, q})
            for (void *gi : x.g)
                EXPECT_NE(v, gi) << "a used block was handed out";
        EXPECT_NE(p, q);
        EXPECT_TRUE(x.guards_intact());
    }
}

TEST(AddrTreeDamage, ForgedLinkOutOfAddressOrderIsRefused) {
    for (size_t req : {kBig, kMin}) {
        Three x(req);
        ASSERT_TRUE(x.shape_ok()) << req;
        // a's left link names c, a real free node of the same tree, but above a:
        // following it would make c reachable twice
        word(x.a, 0) = x.enc(x.a, x.c);
        dmm_heap_check_report r = x.check();
        EXPECT_TRUE(r.invariant == DMM_INV_LIST_ORDER || r.invariant == DMM_INV_LIST_LINK) << report_str(r);
        std::vector<void *> got;
        for (int i = 0; i < 6; ++i)
            got.push_back(dmm_heap_malloc(x.h, req));
        EXPECT_TRUE(x.only_free_list_reports()) << req;
        for (size_t i = 0; i < got.size(); ++i)
            for (size_t j = i + 1; j < got.size(); ++j)
                if (got[i]) {
                    EXPECT_NE(got[i], got[j]) << "a block was handed out twice";
                }
        EXPECT_TRUE(x.guards_intact());
    }
}

TEST(AddrTreeDamage, GarbageLinkIsRefused) {
    for (size_t req : {kBig, kMin}) {
        Three x(req);
        ASSERT_TRUE(x.shape_ok()) << req;
        word(x.b, 1) = (uintptr_t)0x4141414141414141ull; // a write after free over the root's right link
        EXPECT_NE(x.check().invariant, DMM_INV_NONE);
        void *p = dmm_heap_malloc(x.h, req), *q = dmm_heap_malloc(x.h, req), *s = dmm_heap_malloc(x.h, req);
        dmm_heap_free(x.h, x.g[3]); // c's neighbour: c is behind the bad link
        EXPECT_TRUE(x.only_free_list_reports()) << req;
        EXPECT_TRUE(p && q && s);
        EXPECT_TRUE(x.guards_intact(3)); // g3 was freed
    }
}

// A descent checks each decoded child's order and region only; the header
// of a node is read where the operation writes the node (or hands it out).
// Here a forged link, in address order and inside the region, leads an
// insertion to a used block: the insertion would write its subtree maximum
// and its link to the new node into that block's payload. The write must
// be refused with a report, and the used block left as it was.
TEST(AddrTreeDamage, InsertionThroughForgedLinkDoesNotWriteAUsedBlock) {
    Three x(kBig);
    ASSERT_TRUE(x.shape_ok());
    // two large blocks from the top, after g3: freeing the first merges with
    // nothing (g3 and the second are used), so it is inserted by a descent
    // root b -> right c -> right (forged) g3
    void *big1 = dmm_heap_malloc(x.h, 2000), *big2 = dmm_heap_malloc(x.h, 2000);
    ASSERT_TRUE(big1 && big2);
    ASSERT_GT(big1, x.g[3]);
    ASSERT_TRUE(x.errs.errors.empty());
    word(x.c, 1) = x.enc(x.c, x.g[3]); // c's empty right link now names guard g3, above c
    dmm_heap_free(x.h, big1);
    EXPECT_TRUE(x.only_free_list_reports()) << "the forged link must be reported";
    EXPECT_TRUE(x.guards_intact()) << "the insertion wrote into a used block";
    EXPECT_NE(x.check().invariant, DMM_INV_NONE);
}

// The same for a removal. The root's left link is forged to name guard g1
// (between a and b, so in address order), and g1's payload to read as a node
// whose left child is a (a forger with the keys; the words are valid links).
// Taking a (the first fit) unlinks it from its parent on the path, g1: that
// write must be refused with a report, and g1's words left as they were.
TEST(AddrTreeDamage, RemovalThroughForgedLinkDoesNotWriteAUsedBlock) {
    for (size_t req : {kBig, kMin}) {
        Three x(req);
        ASSERT_TRUE(x.shape_ok()) << req;
        void *g1 = x.g[1];
        ASSERT_TRUE(x.a < g1 && g1 < x.b);
        word(g1, 0) = x.enc(g1, x.a);
        word(g1, 1) = x.enc(g1, nullptr);
        if (req == kBig)
            word(g1, 2) = 4096; // its "subtree maximum": the search goes down to a
        const uintptr_t w0 = word(g1, 0), w1 = word(g1, 1);
        word(x.b, 0) = x.enc(x.b, g1);
        void *p = dmm_heap_malloc(x.h, req);
        EXPECT_TRUE(x.only_free_list_reports()) << req;
        EXPECT_EQ(word(g1, 0), w0) << "the removal wrote into a used block (" << req << ")";
        EXPECT_EQ(word(g1, 1), w1) << req;
        for (void *gi : x.g)
            EXPECT_NE(p, gi) << "a used block was handed out";
        EXPECT_TRUE(x.guards_intact(1)) << req;
    }
}

// A split malloc lowers the subtree maxima on its path (at_lower), reading
// the other child of each node it lowers for its maximum only: that read
// takes the region test alone, no order test (it writes nothing and follows
// nothing). A forged link there is then reported by the next walk that
// follows it, and nothing is written through it or handed out twice.
TEST(AddrTreeDamage, ForgedLinkBesideALoweredPath) {
    Three x(kBig);
    ASSERT_TRUE(x.shape_ok());
    // b's right link (to c) now names a: below b, out of address order
    word(x.b, 1) = x.enc(x.b, x.a);
    // the first fit is a; a 64-byte request splits it, its tail takes a's
    // node, and b's maximum (a's size) is recomputed from b's other child
    void *p = dmm_heap_malloc(x.h, 64);
    ASSERT_EQ(p, x.a);
    fill_pattern(p, 0, 64, 7);
    EXPECT_NE(x.check().invariant, DMM_INV_NONE);
    // freeing g3 merges it with c, whose descent by address from b goes
    // right, through the forged link
    dmm_heap_free(x.h, x.g[3]);
    EXPECT_TRUE(x.only_free_list_reports()) << "the forged link must be reported when a walk follows it";
    void *q = dmm_heap_malloc(x.h, kBig), *r = dmm_heap_malloc(x.h, kBig);
    for (void *v : {q, r}) {
        EXPECT_NE(v, p) << "a used block was handed out";
        for (int i = 0; i < 3; ++i)
            EXPECT_NE(v, x.g[i]) << "a used block was handed out";
    }
    if (q && r) {
        EXPECT_NE(q, r) << "a block was handed out twice";
    }
    EXPECT_EQ(find_pattern_mismatch(p, 0, 64, 7), SIZE_MAX) << "a write went through the forged link";
    EXPECT_TRUE(x.guards_intact(3));
    EXPECT_TRUE(x.only_free_list_reports());
}

// A child outside a descent's window (here a node in another region) is
// checked against the bounds its ancestors set, derived from the path on
// that slow path: not against its parent alone. Two regions, region one
// below region two: a1 < a2 free in region one, X (larger) free in region
// two, so the tree is a2 with a1 on its left and X on its right. X's left
// link forged to name a1 is in order for X alone (a1 < X), but a1 lies
// below X's ancestor a2, so a descent into X's left must report it, and
// take nothing through it.
TEST(AddrTreeDamage, ForgedLinkAcrossRegionsIsCheckedAgainstTheAncestors) {
    dmm_heap_config cfg = tree_cfg();
    ErrorLog errs;
    errs.attach(&cfg);
    Buffer b1(16 * 1024, 0), b2(16 * 1024, 0);
    Buffer &one = b1.data() < b2.data() ? b1 : b2, &two = b1.data() < b2.data() ? b2 : b1;
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, one.data(), one.size(), &cfg), DMM_OK);
    void *g0 = dmm_heap_malloc(h, kBig), *a1 = dmm_heap_malloc(h, kBig), *g1 = dmm_heap_malloc(h, kBig),
         *a2 = dmm_heap_malloc(h, kBig), *g2 = dmm_heap_malloc(h, kBig);
    ASSERT_TRUE(g0 && a1 && g1 && a2 && g2);
    ASSERT_EQ(dmm_heap_add_region(h, two.data(), two.size()), DMM_OK);
    std::vector<void *> fill; // what is left of region one, so that the next blocks come from region two
    void *xg0 = nullptr;
    for (int i = 0; i < 400 && !xg0; ++i) {
        void *v = dmm_heap_malloc(h, kBig);
        ASSERT_NE(v, nullptr);
        if (two.contains(v, kBig))
            xg0 = v;
        else
            fill.push_back(v);
    }
    ASSERT_NE(xg0, nullptr);
    void *X = dmm_heap_malloc(h, 600), *xg1 = dmm_heap_malloc(h, kBig);
    ASSERT_TRUE(X && xg1 && two.contains(X, 600) && two.contains(xg1, kBig));
    void *guards[] = {g0, g1, g2, xg0, xg1};
    for (int i = 0; i < 5; ++i)
        fill_pattern(guards[i], 0, kBig, 200 + i);
    dmm_heap_free(h, a2);
    dmm_heap_free(h, a1);
    dmm_heap_free(h, X);
    ASSERT_TRUE(errs.errors.empty());
    {
        dmm_heap_check_report r{};
        ASSERT_EQ(dmm_heap_check(h, &r), DMM_OK) << report_str(r);
    }
    ASSERT_EQ(word(a2, 0), dmm__heap_link_encode(h, a2, a1)) << "a2 is the root, a1 its left child";
    ASSERT_EQ(word(a2, 1), dmm__heap_link_encode(h, a2, X)) << "X is a2's right child";
    ASSERT_EQ(word(X, 0), dmm__heap_link_encode(h, X, nullptr));
    word(X, 0) = dmm__heap_link_encode(h, X, a1); // in order for X, not for a2
    {
        dmm_heap_check_report r{};
        EXPECT_NE(dmm_heap_check(h, &r), DMM_OK);
    }
    // 300 bytes: neither a1 nor a2 fits, X does; the search goes right at
    // a2 and then reads X's left link
    void *p = dmm_heap_malloc(h, 300);
    EXPECT_FALSE(errs.errors.empty()) << "a link below an ancestor's bound was followed without a report";
    for (const dmm_error &e : errs.errors)
        EXPECT_EQ(e.kind, DMM_ERR_FREE_LIST);
    EXPECT_NE(p, a1);
    for (int i = 0; i < 5; ++i) {
        EXPECT_NE(p, guards[i]) << "a used block was handed out";
        EXPECT_EQ(find_pattern_mismatch(guards[i], 0, kBig, 200 + i), SIZE_MAX) << "guard " << i;
    }
    for (void *v : fill)
        EXPECT_NE(p, v) << "a used block was handed out";
    dmm_heap_destroy(h);
}

// A descent checks a child in one compare against a window cut from the
// region of the last look-up; a node in another region of the heap falls
// outside it and is checked against its ancestors' bounds instead. Two
// regions fragmented alike put nodes of both in each tree, so descents cross
// between them all the time: no false report, and the checker agrees.
TEST(AddrTreeHardening, NodesInTwoRegionsAreNotReported) {
    dmm_heap_config cfg = tree_cfg();
    ASSERT_GE(cfg.harden, DMM_HARDEN_CHECKED);
    ErrorLog errs;
    errs.attach(&cfg);
    Buffer one(20 * 1024, 0), two(20 * 1024, 0); // the live set (~25 KiB) needs both
    dmm_heap *h = nullptr;
    ASSERT_EQ(dmm_heap_init(&h, one.data(), one.size(), &cfg), DMM_OK);
    ASSERT_EQ(dmm_heap_add_region(h, two.data(), two.size()), DMM_OK);
    Rng rng(0x2f2f);
    std::vector<void *> live(160, nullptr);
    size_t in_two = 0, in_one = 0;
    for (int op = 0; op < 20000; ++op) {
        void *&slot = live[rng.below(live.size())];
        if (slot) {
            dmm_heap_free(h, slot);
            slot = nullptr;
        } else {
            size_t n = rng.chance(30) ? (size_t)rng.range(1, 16) : (size_t)rng.range(17, 900);
            slot = dmm_heap_malloc(h, n);
            if (slot) {
                (two.contains(slot, n) ? in_two : in_one)++;
            }
        }
        if (op % 64 == 0) {
            dmm_heap_check_report r{};
            ASSERT_EQ(dmm_heap_check(h, &r), DMM_OK) << "op " << op << ": " << report_str(r);
        }
    }
    EXPECT_GT(in_one, 1000u);
    EXPECT_GT(in_two, 1000u) << "the second region should serve many requests";
    EXPECT_TRUE(errs.errors.empty()) << errs.errors.size() << " reports, the first: " << errs.errors[0].message;
    dmm_heap_destroy(h);
}

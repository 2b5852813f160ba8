// tests/heap/test_victim.cpp - the designated victim (victim=on, issue 25
// item 3; src/heap/engine/victim.h).
//
//   VictimConfig    the knob's text form, its one-line parse error and the
//                   cross-field rule (segregated bins and split).
//   VictimPlacement a small request whose exact bin is empty is carved from
//                   the last split's remainder, where best fit alone takes a
//                   smaller block elsewhere; a freed neighbour merges into it;
//                   the fast-path leaves place every block where the full
//                   path does (poison=on, which turns them off, as reference).
//   VictimDamage    the checker refuses a victim whose header was overwritten,
//                   and malloc and free report such a victim (and never hand
//                   out or merge through it) at every hardening level.
//   VictimRandom    seeded random sequences (malloc, calloc, realloc,
//                   aligned, free) on victim configurations with the shadow
//                   model and dmm_heap_check after every operation.
// Linked against the level-1 library like the corruption suite: the damage
// tests break the heap on purpose.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dmm_test_support.h"

using namespace dmmt;

namespace {

constexpr size_t W = sizeof(size_t);
constexpr size_t FLAG_MASK = DMM_HEAP_ALIGN - 1;

dmm_heap_config parsed(const char *text) {
    dmm_heap_config c = dmm_heap_default_config();
    const char *err = nullptr;
    EXPECT_EQ(dmm_heap_config_parse(text, &c, &err), DMM_OK) << text << ": " << (err ? err : "?");
    return c;
}

// The block (foot word) address of a payload, and its header word.
char *block_of(void *payload) { return static_cast<char *>(payload) - 2 * W; }
size_t &head_at(char *block) { return *reinterpret_cast<size_t *>(block + W); }

// A heap laid out so that victim=on and victim=off place the second small
// request differently:
//   [A 1000 B][g][C 130 B][g] ... top, A and C freed;
//   p1 = malloc(200), a small request: its exact bin is empty and C is too
//   small, so best fit splits A and A's remainder becomes the victim;
//   p2 = malloc(100): its exact bin is empty.  With the victim it is carved
//   from A's remainder, right after p1; best fit alone takes C, the
//   smallest block that fits.
struct Scene {
    dmm_heap_config cfg;
    ErrorLog errs;
    Buffer buf{64 * 1024, 0};
    dmm_heap *h = nullptr;
    void *a = nullptr, *c = nullptr, *p1 = nullptr;
    std::vector<void *> guards;

    explicit Scene(dmm_heap_config base) : cfg(base) {
        errs.attach(&cfg);
        EXPECT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &cfg), DMM_OK) << cfg_str(cfg);
        a = dmm_heap_malloc(h, 1000);
        guards.push_back(dmm_heap_malloc(h, 100));
        c = dmm_heap_malloc(h, 130);
        guards.push_back(dmm_heap_malloc(h, 100));
        dmm_heap_free(h, a);
        dmm_heap_free(h, c);
        p1 = dmm_heap_malloc(h, 200);
    }
    // The free block right after p1's block: A's remainder.
    char *remainder() const { return block_of(p1) + dmm_heap_block_size(&cfg, 200); }
    bool checks() { return dmm_heap_check(h, nullptr) == DMM_OK; }
};

} // namespace

// ---- the knob -------------------------------------------------------------------

TEST(VictimConfig, TextFormAndPreset) {
    dmm_heap_config d = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    EXPECT_TRUE(d.victim) << "the dlmalloc preset keeps dlmalloc's designated victim";
    EXPECT_NE(cfg_str(d).find(",victim=on,"), std::string::npos) << cfg_str(d);
    for (int p = 1; p < DMM_PRESET_COUNT; ++p)
        EXPECT_FALSE(dmm_heap_preset_config((dmm_heap_preset)p).victim) << dmm_heap_preset_name((dmm_heap_preset)p);
    dmm_heap_config off = parsed("preset=dlmalloc,victim=off");
    EXPECT_FALSE(off.victim);
    EXPECT_EQ(dmm_heap_config_check(&off, nullptr), DMM_OK);
    dmm_heap_config t = parsed("preset=tlsf,victim=on");
    EXPECT_TRUE(t.victim);
    EXPECT_EQ(dmm_heap_config_check(&t, nullptr), DMM_OK);
}

TEST(VictimConfig, BadValueIsOneLineError) {
    dmm_heap_config c = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    const dmm_heap_config before = c;
    const char *err = nullptr;
    ASSERT_EQ(dmm_heap_config_parse("victim=maybe", &c, &err), DMM_E_CONFIG);
    ASSERT_NE(err, nullptr);
    EXPECT_GT(std::strlen(err), 5u);
    EXPECT_EQ(std::strchr(err, '\n'), nullptr) << err;
    EXPECT_NE(std::string(err).find("victim"), std::string::npos) << err;
    std::string diff;
    EXPECT_TRUE(cfg_equal(c, before, &diff)) << "a refused parse changed " << diff;
}

TEST(VictimConfig, NeedsSegregatedBinsAndSplit) {
    const char *refused[] = {
        "preset=p2012,victim=on",                  // org=single
        "preset=firstfit,victim=on",               // org=addrtree
        "preset=firstfit,org=single,victim=on",    // the list form
        "preset=dlmalloc,split=off",               // no split, no remainder
    };
    for (const char *t : refused) {
        dmm_heap_config c = parsed(t);
        const char *reason = nullptr;
        EXPECT_EQ(dmm_heap_config_check(&c, &reason), DMM_E_CONFIG) << t;
        ASSERT_NE(reason, nullptr) << t;
        EXPECT_STREQ(reason, "victim=on needs segregated bins (org exact, geometric or tlsf) and split=on") << t;
        std::vector<unsigned char> buf(8192);
        dmm_heap *h = nullptr;
        EXPECT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &c), DMM_E_CONFIG) << t;
    }
    for (const char *t : {"preset=halffit,victim=on", "preset=tlsf,victim=on,coalesce=deferred",
                          "preset=dlmalloc,coalesce=off", "preset=dlmalloc,fit=first,order=lifo"}) {
        dmm_heap_config c = parsed(t);
        EXPECT_EQ(dmm_heap_config_check(&c, nullptr), DMM_OK) << t;
    }
}

// ---- placement ------------------------------------------------------------------------

TEST(VictimPlacement, SmallRequestTakesTheLastSplitsRemainder) {
    for (dmm_heap_harden hd : {DMM_HARDEN_OFF, DMM_HARDEN_CHECKED, DMM_HARDEN_PARANOID}) {
        for (bool victim : {true, false}) {
            dmm_heap_config base = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
            base.victim = victim;
            base.harden = hd;
            Scene s(base);
            SCOPED_TRACE(cfg_str(s.cfg));
            ASSERT_EQ(s.p1, s.a) << "best fit splits A for the first request";
            ASSERT_TRUE(s.checks());
            void *p2 = dmm_heap_malloc(s.h, 100);
            ASSERT_NE(p2, nullptr);
            if (victim)
                EXPECT_EQ(block_of(p2), s.remainder()) << "carved from the victim, right after p1";
            else
                EXPECT_EQ(p2, s.c) << "best fit takes C, the smallest block that fits";
            EXPECT_TRUE(s.checks());
            // A run of small requests keeps carving the victim in address order.
            void *p3 = dmm_heap_malloc(s.h, 100);
            if (victim)
                EXPECT_EQ(block_of(p3), block_of(p2) + dmm_heap_block_size(&s.cfg, 100));
            EXPECT_TRUE(s.checks());
            EXPECT_TRUE(s.errs.errors.empty());
        }
    }
}

TEST(VictimPlacement, FreedNeighboursMergeIntoTheVictim) {
    dmm_heap_config base = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
    Scene s(base);
    char *rem = s.remainder();
    // p1 borders the victim: freeing it makes one free block from A's start,
    // still the victim, so the next small request lands at A again.
    dmm_heap_free(s.h, s.p1);
    ASSERT_TRUE(s.checks());
    void *q = dmm_heap_malloc(s.h, 100);
    EXPECT_EQ(q, s.a) << "the merged victim starts at A";
    ASSERT_TRUE(s.checks());
    // Requests larger than any bin's block are served from the victim
    // before the top.
    void *big = dmm_heap_malloc(s.h, 500);
    EXPECT_EQ(block_of(big), block_of(q) + dmm_heap_block_size(&s.cfg, 100));
    EXPECT_LT(block_of(big), rem + 1000);
    EXPECT_TRUE(s.checks());
    EXPECT_TRUE(s.errs.errors.empty());
}

// ---- damage ---------------------------------------------------------------------------

TEST(VictimDamage, CheckerRefusesAnOverwrittenVictim) {
    for (size_t bad : {(size_t)DMM_HEAP_ALIGN * 64, (size_t)1}) {
        Scene s(dmm_heap_preset_config(DMM_PRESET_DLMALLOC));
        ASSERT_TRUE(s.checks());
        char *v = s.remainder();
        size_t &hw = head_at(v);
        // a larger size, or the used bit: either way no longer the free
        // block its neighbours describe
        hw = bad == 1 ? hw | 1u : (hw & FLAG_MASK) | ((hw & ~FLAG_MASK) + bad);
        dmm_heap_check_report rep{};
        EXPECT_EQ(dmm_heap_check(s.h, &rep), DMM_E_CORRUPT);
        EXPECT_NE(rep.invariant, DMM_INV_NONE);
    }
}

TEST(VictimDamage, MallocAndFreeReportAnOverwrittenVictim) {
    for (dmm_heap_harden hd : {DMM_HARDEN_CHECKED, DMM_HARDEN_CANARY, DMM_HARDEN_PARANOID}) {
        for (int via_free = 0; via_free <= 1; ++via_free) {
            dmm_heap_config base = dmm_heap_preset_config(DMM_PRESET_DLMALLOC);
            base.harden = hd;
            Scene s(base);
            SCOPED_TRACE(cfg_str(s.cfg) + (via_free ? " (free of its neighbour)" : " (malloc)"));
            char *v = s.remainder();
            size_t &hw = head_at(v);
            const size_t real = hw & ~FLAG_MASK;
            const size_t forged = real + 16 * 1024; // reaches into the top
            hw = (hw & FLAG_MASK) | forged;
            if (via_free) {
                dmm_heap_free(s.h, s.p1); // would merge with the victim
            } else {
                void *p = dmm_heap_malloc(s.h, 100);
                ASSERT_NE(p, nullptr) << "C still serves the request";
                EXPECT_TRUE((char *)p < v || (char *)p >= v + real) << "handed out from the withheld victim";
                EXPECT_EQ(p, s.c);
            }
            ASSERT_EQ(s.errs.errors.size(), 1u);
            EXPECT_EQ(s.errs.errors[0].kind, DMM_ERR_HEADER);
            EXPECT_EQ(s.errs.errors[0].op, via_free ? DMM_OP_FREE : DMM_OP_MALLOC);
            EXPECT_EQ(s.errs.errors[0].ptr, (const void *)v);
            // Withheld: no later call reports it again or hands out its bytes.
            for (int i = 0; i < 8; ++i) {
                void *p = dmm_heap_malloc(s.h, 100);
                EXPECT_TRUE(p == nullptr || (char *)p < v || (char *)p >= v + real);
            }
            EXPECT_EQ(s.errs.errors.size(), 1u);
        }
    }
}

// The leaves (engine/entry.h: the top leaf, the quick leaves, the victim
// leaf) must place every block where the full path would.  poison=on turns
// every leaf off (each needs !P_POISON) and changes no placement decision,
// so a heap with it is the full path's reference: the same seeded sequence
// (an allocate-first phase that the top leaf serves, then frees and
// allocations of small and large sizes that the quick lists, the victim and
// the bins serve) must return the same offsets on both.
TEST(VictimPlacement, LeavesPlaceAsTheFullPathDoes) {
    const char *texts[] = {
        "preset=dlmalloc",
        "preset=dlmalloc,stats=off,harden=off",
        "preset=dlmalloc,quick_max=0",
        "preset=tlsf,victim=on",
        "preset=p2012,quick_max=4096,stats=off,harden=off",
    };
    for (const char *t : texts) {
        for (unsigned seed = 1; seed <= 3; ++seed) {
            dmm_heap_config cfg[2] = {parsed(t), parsed(t)};
            cfg[1].poison = true;
            ErrorLog errs[2];
            Buffer buf[2] = {Buffer(256 * 1024, 0), Buffer(256 * 1024, 0)};
            dmm_heap *h[2] = {nullptr, nullptr};
            for (int k = 0; k < 2; ++k) {
                errs[k].attach(&cfg[k]);
                ASSERT_EQ(dmm_heap_init(&h[k], buf[k].data(), buf[k].size(), &cfg[k]), DMM_OK) << t;
            }
            std::vector<void *> live[2];
            uint64_t x = mix64(0x6c656166ull /* "leaf" */, seed);
            auto next = [&x]() { return x = mix64(x, 0x9e3779b97f4a7c15ull); };
            auto size_of = [&next]() -> size_t {
                uint64_t r = next();
                return (r & 3) ? 8 + r % 120 : 128 + (r >> 8) % 3000; // mostly small, some large
            };
            auto step = [&](bool alloc, size_t n, size_t victim_index, unsigned op) {
                for (int k = 0; k < 2; ++k) {
                    if (alloc) {
                        void *p = dmm_heap_malloc(h[k], n);
                        live[k].push_back(p);
                    } else {
                        dmm_heap_free(h[k], live[k][victim_index]);
                        live[k][victim_index] = live[k].back();
                        live[k].pop_back();
                    }
                }
                void *a = live[0].empty() ? nullptr : (alloc ? live[0].back() : nullptr);
                void *b = live[1].empty() ? nullptr : (alloc ? live[1].back() : nullptr);
                if (alloc) {
                    ASSERT_EQ(a == nullptr, b == nullptr) << t << " seed " << seed << " op " << op;
                    if (a)
                        ASSERT_EQ(static_cast<unsigned char *>(a) - buf[0].data(),
                                  static_cast<unsigned char *>(b) - buf[1].data())
                            << t << " seed " << seed << " op " << op << ": malloc(" << n << ")";
                }
            };
            unsigned op = 0;
            // a victim and no listed block: a large request the victim can
            // serve must come from it, not from the top
            step(true, 1000, 0, op++);
            step(true, 100, 0, op++);
            step(false, 0, 0, op++);
            step(true, 200, 0, op++); // splits the freed block: its remainder is the victim
            step(true, 300, 0, op++);
            for (unsigned i = 0; i < 200; ++i, ++op) // allocate first: the top leaf
                step(true, size_of(), 0, op);
            for (unsigned i = 0; i < 3000; ++i, ++op) {
                uint64_t r = next();
                if (!live[0].empty() && (r & 1))
                    step(false, 0, (r >> 1) % live[0].size(), op);
                else
                    step(true, size_of(), 0, op);
                if (HasFatalFailure())
                    return;
            }
            for (int k = 0; k < 2; ++k) {
                EXPECT_EQ(dmm_heap_check(h[k], nullptr), DMM_OK) << t;
                EXPECT_TRUE(errs[k].errors.empty()) << t;
            }
        }
    }
}

// ---- seeded random sequences -------------------------------------------------------------

TEST(VictimRandom, SeededSequencesWithChecker) {
    const char *texts[] = {
        "preset=dlmalloc",
        "preset=dlmalloc,stats=full,harden=paranoid,poison=on",
        "preset=dlmalloc,quick_max=0,harden=canary",
        "preset=dlmalloc,coalesce=deferred",
        "preset=dlmalloc,coalesce=off",
        "preset=dlmalloc,coalesce_max=1024",
        "preset=dlmalloc,split_min=64,quick_max=128,quick_limit=4",
        "preset=dlmalloc,grow=4096,release_empty=on",
        "preset=dlmalloc,links=singly,order=address,fit=first",
        "preset=tlsf,victim=on",
        "preset=halffit,victim=on,poison=on",
        "preset=dlmalloc,org=geometric,sl_bits=2,fit=exact,order=size",
    };
    unsigned i = 0;
    for (const char *t : texts) {
        for (unsigned rep = 0; rep < 3; ++rep, ++i) {
            RunSpec spec;
            spec.cfg = parsed(t);
            ASSERT_EQ(dmm_heap_config_check(&spec.cfg, nullptr), DMM_OK) << t;
            ASSERT_TRUE(spec.cfg.victim) << t;
            spec.seed = mix64(base_seed() ^ 0x76696374ull /* "vict" */, i);
            spec.ops = scaled_ops(1500);
            spec.buf_size = rep == 2 ? 12 * 1024 : 48 * 1024; // a small heap runs full: flushes, sweeps, failures
            if (rep == 1)
                spec.extra_regions = {6 * 1024, 9 * 1024};
            RunResult r = run_random(spec);
            ASSERT_TRUE(r.ok) << t << ": " << r.message;
            EXPECT_GT(r.allocs_ok, spec.ops / 4) << t;
        }
    }
}

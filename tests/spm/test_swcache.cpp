// tests/spm/test_swcache.cpp - the software-cache baseline (label unit):
// configurations refused, seeded random read / write / map / realloc /
// free sequences over several objects against a host-side shadow with
// tiny caches (constant evictions), write-back and write-through, static
// and dynamic global memory; flush makes data visible to the main core;
// bad input reported with nothing lost; stats that add up.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "dmm/spm.h"
#include "dmm/swcache.h"
}

namespace {

struct Mem {
    unsigned char *p;
    size_t n;
    explicit Mem(size_t bytes) : n(bytes)
    {
        p = static_cast<unsigned char *>(std::aligned_alloc(4096, (bytes + 4095) & ~size_t(4095)));
        std::memset(p, 0x5A, n);
    }
    ~Mem() { std::free(p); }
    Mem(const Mem &) = delete;
    Mem &operator=(const Mem &) = delete;
};

struct Errs {
    int count = 0;
    dmm_error_kind last{};
};

void on_err(void *ctx, const dmm_error *e)
{
    auto *x = static_cast<Errs *>(ctx);
    x->count++;
    x->last = e->kind;
}

// One global memory, its host port and one core's cache.
struct Rig {
    Mem gmem{1 << 20};
    Mem local;
    dmm_spm_global *g = nullptr;
    dmm_spm_hostport hp{};
    dmm_swc *c = nullptr;
    Errs errs;
    Rig(dmm_spm_mode mode, dmm_swc_config cfg, size_t local_size = 4096) : local(local_size)
    {
        dmm_spm_global_config gc = dmm_spm_global_default_config();
        gc.mode = mode;
        gc.cores = 1;
        EXPECT_EQ(dmm_spm_global_create(&g, gmem.p, gmem.n, &gc), DMM_OK);
        dmm_spm_hostport_init(&hp, g, nullptr);
        cfg.error_fn = on_err;
        cfg.error_ctx = &errs;
        EXPECT_EQ(dmm_swc_create(&c, local.p, local.n, &cfg, g, 0, &hp.port), DMM_OK);
    }
    ~Rig()
    {
        if (c) {
            dmm_swc_destroy(c);
        }
        if (g) {
            dmm_spm_global_destroy(g);
        }
    }
};

dmm_swc_config tiny(size_t line, unsigned ways, unsigned sets, bool wb)
{
    dmm_swc_config c = dmm_swc_default_config();
    c.line = line;
    c.ways = ways;
    c.sets = sets;
    c.write_back = wb;
    c.bounce = 256;
    return c;
}

void expect_stats_consistent(const dmm_swc_stats &s)
{
    EXPECT_EQ(s.hits + s.misses, s.lookups);
    EXPECT_EQ(s.misses, s.lines_fetched);
    EXPECT_LE(s.evictions, s.misses);
}

TEST(SwCache, ConfigErrorsRefused)
{
    Mem gm(1 << 16);
    dmm_spm_global_config gc = dmm_spm_global_default_config();
    gc.mode = DMM_SPM_STATIC;
    dmm_spm_global *g = nullptr;
    ASSERT_EQ(dmm_spm_global_create(&g, gm.p, gm.n, &gc), DMM_OK);
    dmm_spm_hostport hp;
    dmm_spm_hostport_init(&hp, g, nullptr);
    Mem loc(8192);
    dmm_swc *c = nullptr;
    dmm_swc_config k = dmm_swc_default_config();
    k.line = 48;
    EXPECT_EQ(dmm_swc_create(&c, loc.p, loc.n, &k, g, 0, &hp.port), DMM_E_CONFIG);
    k = dmm_swc_default_config();
    k.line = 8;
    EXPECT_EQ(dmm_swc_create(&c, loc.p, loc.n, &k, g, 0, &hp.port), DMM_E_CONFIG);
    k = dmm_swc_default_config();
    k.line = 32768; // above the port's max_transfer
    EXPECT_EQ(dmm_swc_create(&c, loc.p, loc.n, &k, g, 0, &hp.port), DMM_E_CONFIG);
    k = dmm_swc_default_config();
    k.ways = 0;
    EXPECT_EQ(dmm_swc_create(&c, loc.p, loc.n, &k, g, 0, &hp.port), DMM_E_CONFIG);
    k = dmm_swc_default_config();
    k.bounce = 24;
    EXPECT_EQ(dmm_swc_create(&c, loc.p, loc.n, &k, g, 0, &hp.port), DMM_E_CONFIG);
    k = dmm_swc_default_config();
    EXPECT_EQ(dmm_swc_create(&c, loc.p + 8, loc.n - 8, &k, g, 0, &hp.port), DMM_E_CONFIG);
    EXPECT_EQ(dmm_swc_create(&c, loc.p, 600, &k, g, 0, &hp.port), DMM_E_TOO_SMALL);
    k.sets = 64; // 64 * 4 * 128 bytes of lines do not fit in 8 KiB
    EXPECT_EQ(dmm_swc_create(&c, loc.p, loc.n, &k, g, 0, &hp.port), DMM_E_TOO_SMALL);
    EXPECT_EQ(dmm_swc_create(nullptr, loc.p, loc.n, &k, g, 0, &hp.port), DMM_E_NULL);
    EXPECT_EQ(c, nullptr);
    // Derived sets: as many as fit, everything inside the buffer.
    k = dmm_swc_default_config();
    ASSERT_EQ(dmm_swc_create(&c, loc.p, loc.n, &k, g, 0, &hp.port), DMM_OK);
    dmm_swc_layout l = dmm_swc_get_layout(c);
    EXPECT_GE(l.sets, 1u);
    EXPECT_EQ(l.ways, 4u);
    EXPECT_EQ(l.line_bytes, size_t(l.sets) * 4 * 128);
    EXPECT_LE(l.control_bytes + l.tag_bytes + l.line_bytes + l.bounce_bytes, loc.n);
    dmm_swc_destroy(c);
    dmm_spm_global_destroy(g);
}

struct Param {
    dmm_spm_mode mode;
    bool wb;
    size_t line;
    unsigned ways, sets;
};

class SwShadow : public ::testing::TestWithParam<Param> {};

TEST_P(SwShadow, RandomAgainstShadow)
{
    const Param p = GetParam();
    Rig r(p.mode, tiny(p.line, p.ways, p.sets, p.wb));
    ASSERT_NE(r.c, nullptr);
    std::mt19937 rng(1234u + unsigned(p.line) * 7u + p.ways * 3u + p.sets + (p.wb ? 100u : 0u));
    struct Obj {
        dmm_gaddr a;
        std::vector<unsigned char> d;
    };
    std::vector<Obj> objs;
    auto rnd = [&](size_t lo, size_t hi) { return lo + size_t(rng() % (hi - lo + 1)); };
    auto check_host = [&]() {
        ASSERT_EQ(dmm_swc_flush(r.c), DMM_OK);
        for (const Obj &o : objs) {
            auto *h = static_cast<const unsigned char *>(dmm_spm_global_host(r.g, o.a, o.d.size()));
            ASSERT_NE(h, nullptr);
            ASSERT_EQ(std::memcmp(h, o.d.data(), o.d.size()), 0) << "object at " << o.a;
        }
    };
    for (int step = 0; step < 3000; step++) {
        unsigned op = rng() % 100;
        if (objs.size() < 2 || (op < 8 && objs.size() < 10)) {
            size_t n = rnd(1, 200);
            bool zero = rng() % 2;
            dmm_gaddr a = zero ? dmm_swc_calloc(r.c, 1, n) : dmm_swc_malloc(r.c, n);
            ASSERT_NE(a, DMM_GNULL);
            ASSERT_EQ(a % 16, 0u);
            Obj o{a, std::vector<unsigned char>(n, 0)};
            if (!zero) {
                for (auto &b : o.d) {
                    b = static_cast<unsigned char>(rng());
                }
                ASSERT_EQ(dmm_swc_write(r.c, a, o.d.data(), n), DMM_OK);
            }
            objs.push_back(std::move(o));
            continue;
        }
        Obj &o = objs[rng() % objs.size()];
        size_t off = rnd(0, o.d.size() - 1), n = rnd(1, o.d.size() - off);
        if (op < 14) { // free
            size_t i = size_t(&o - objs.data());
            dmm_swc_free(r.c, o.a);
            ASSERT_EQ(dmm_swc_last_status(r.c), DMM_OK);
            objs.erase(objs.begin() + long(i));
        } else if (op < 20) { // realloc
            size_t nn = rnd(1, 300);
            dmm_gaddr b = dmm_swc_realloc(r.c, o.a, nn);
            ASSERT_NE(b, DMM_GNULL);
            size_t keep = std::min(nn, o.d.size());
            o.d.resize(nn, 0);
            o.a = b;
            std::vector<unsigned char> got(keep);
            ASSERT_EQ(dmm_swc_read(r.c, b, got.data(), keep), DMM_OK);
            ASSERT_EQ(std::memcmp(got.data(), o.d.data(), keep), 0);
            ASSERT_EQ(dmm_swc_write(r.c, b, o.d.data(), nn), DMM_OK); // grown tail defined
            ASSERT_EQ(dmm_swc_size(r.c, b), nn);
        } else if (op < 45) { // write
            std::vector<unsigned char> src(n);
            for (auto &b : src) {
                b = static_cast<unsigned char>(rng());
            }
            ASSERT_EQ(dmm_swc_write(r.c, o.a + off, src.data(), n), DMM_OK);
            std::memcpy(o.d.data() + off, src.data(), n);
        } else if (op < 75) { // read (crosses lines often)
            std::vector<unsigned char> got(n);
            ASSERT_EQ(dmm_swc_read(r.c, o.a + off, got.data(), n), DMM_OK);
            ASSERT_EQ(std::memcmp(got.data(), o.d.data() + off, n), 0) << "step " << step;
        } else { // map, read or write
            bool w = rng() % 2;
            n = std::min<size_t>(n, 256); // the bounce buffer's size
            auto *m = static_cast<unsigned char *>(dmm_swc_map(r.c, o.a + off, n, w));
            ASSERT_NE(m, nullptr);
            ASSERT_EQ(std::memcmp(m, o.d.data() + off, n), 0) << "step " << step;
            if (w) {
                for (size_t i = 0; i < n; i++) {
                    m[i] = static_cast<unsigned char>(rng());
                    o.d[off + i] = m[i];
                }
            }
        }
        if (step % 500 == 499) {
            check_host();
        }
    }
    check_host();
    dmm_swc_stats s = dmm_swc_get_stats(r.c);
    expect_stats_consistent(s);
    EXPECT_GT(s.evictions, 100u); // the tiny cache really evicts
    EXPECT_GT(s.bounce_maps, 0u);
    EXPECT_EQ(s.live_objects, objs.size());
    EXPECT_EQ(s.errors, 0u);
    EXPECT_EQ(r.errs.count, 0);
    if (!p.wb) {
        EXPECT_EQ(s.writebacks, 0u); // write-through never holds dirty data
    }
    if (p.mode == DMM_SPM_DYNAMIC) {
        EXPECT_GT(s.mailbox_words, 0u);
        EXPECT_EQ(s.mailbox_words, r.hp.mailbox_words);
    } else {
        EXPECT_EQ(s.mailbox_words, 0u);
    }
    for (const auto &o : objs) {
        dmm_swc_free(r.c, o.a);
    }
    EXPECT_EQ(dmm_swc_get_stats(r.c).live_objects, 0u);
    dmm_spm_global_stats gs = dmm_spm_global_get_stats(r.g);
    EXPECT_EQ(gs.allocs, gs.frees);
    EXPECT_EQ(gs.errors, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Tiny, SwShadow,
    ::testing::Values(Param{DMM_SPM_STATIC, true, 16, 1, 1}, Param{DMM_SPM_STATIC, false, 16, 1, 1},
                      Param{DMM_SPM_STATIC, true, 32, 2, 1}, Param{DMM_SPM_STATIC, false, 64, 1, 2},
                      Param{DMM_SPM_STATIC, true, 64, 2, 2}, Param{DMM_SPM_DYNAMIC, true, 16, 2, 2},
                      Param{DMM_SPM_DYNAMIC, false, 32, 1, 2}, Param{DMM_SPM_DYNAMIC, true, 64, 1, 1},
                      Param{DMM_SPM_DYNAMIC, false, 64, 2, 2}));

TEST(SwCache, FlushMakesDataVisibleAndWriteBackWaits)
{
    Rig r(DMM_SPM_STATIC, tiny(64, 2, 2, true));
    dmm_gaddr a = dmm_swc_malloc(r.c, 100);
    ASSERT_NE(a, DMM_GNULL);
    unsigned char src[100];
    for (int i = 0; i < 100; i++) {
        src[i] = static_cast<unsigned char>(i * 3 + 1);
    }
    ASSERT_EQ(dmm_swc_write(r.c, a, src, sizeof src), DMM_OK);
    auto *h = static_cast<unsigned char *>(dmm_spm_global_host(r.g, a, 100));
    ASSERT_NE(h, nullptr);
    EXPECT_NE(std::memcmp(h, src, 100), 0); // still only in the cache
    ASSERT_EQ(dmm_swc_flush(r.c), DMM_OK);
    EXPECT_EQ(std::memcmp(h, src, 100), 0);
    EXPECT_GT(dmm_swc_get_stats(r.c).writebacks, 0u);
    dmm_swc_free(r.c, a);
}

TEST(SwCache, BadInputReportedNothingLost)
{
    for (dmm_spm_mode mode : {DMM_SPM_STATIC, DMM_SPM_DYNAMIC}) {
        Rig r(mode, tiny(32, 1, 2, true));
        dmm_gaddr a = dmm_swc_malloc(r.c, 40);
        ASSERT_NE(a, DMM_GNULL);
        unsigned char src[40];
        std::memset(src, 0x77, sizeof src);
        ASSERT_EQ(dmm_swc_write(r.c, a, src, 40), DMM_OK);
        // zero-size malloc
        EXPECT_EQ(dmm_swc_malloc(r.c, 0), DMM_GNULL);
        EXPECT_EQ(dmm_swc_last_status(r.c), DMM_E_RANGE);
        // accesses outside global memory
        unsigned char tmp[8];
        EXPECT_EQ(dmm_swc_read(r.c, dmm_gaddr(r.gmem.n), tmp, 8), DMM_E_RANGE);
        EXPECT_EQ(dmm_swc_write(r.c, 0, tmp, 8), DMM_E_RANGE);
        EXPECT_EQ(dmm_swc_map(r.c, a, 0, false), nullptr);
        EXPECT_EQ(dmm_swc_map(r.c, a, 300, false), nullptr); // crosses lines, > bounce
        // free of an unknown address: reported here and by the global heap
        dmm_gaddr bogus = a + 4096;
        dmm_swc_free(r.c, bogus);
        EXPECT_EQ(dmm_swc_last_status(r.c), DMM_E_RANGE);
        EXPECT_EQ(r.errs.count, 1);
        EXPECT_EQ(r.errs.last, DMM_ERR_INVALID_POINTER);
        dmm_spm_global_stats gs = dmm_spm_global_get_stats(r.g);
        EXPECT_EQ(gs.errors, 1u);
        // double free: the spoiled header catches it
        dmm_gaddr b = dmm_swc_malloc(r.c, 16);
        ASSERT_NE(b, DMM_GNULL);
        dmm_swc_free(r.c, b);
        dmm_swc_free(r.c, b);
        EXPECT_EQ(r.errs.count, 2);
        EXPECT_EQ(dmm_swc_realloc(r.c, bogus, 10), DMM_GNULL);
        EXPECT_EQ(r.errs.count, 3);
        // nothing lost
        unsigned char got[40];
        ASSERT_EQ(dmm_swc_read(r.c, a, got, 40), DMM_OK);
        EXPECT_EQ(std::memcmp(got, src, 40), 0);
        EXPECT_EQ(dmm_swc_size(r.c, a), 40u);
        dmm_swc_stats s = dmm_swc_get_stats(r.c);
        EXPECT_EQ(s.errors, 3u);
        EXPECT_EQ(s.live_objects, 1u);
        expect_stats_consistent(s);
        dmm_swc_free(r.c, a);
    }
}

TEST(SwCache, MailboxWordsPerRoundTrip)
{
    Rig r(DMM_SPM_DYNAMIC, tiny(64, 2, 2, true));
    dmm_gaddr a = dmm_swc_malloc(r.c, 10);
    ASSERT_NE(a, DMM_GNULL);
    EXPECT_EQ(dmm_swc_get_stats(r.c).mailbox_words, 5u); // request 3 + reply 2
    dmm_swc_free(r.c, a);
    EXPECT_EQ(dmm_swc_get_stats(r.c).mailbox_words, 8u); // + one-way free 3
    dmm_swc_stats s = dmm_swc_get_stats(r.c);
    EXPECT_EQ(s.calls[DMM_SWC_FN_MALLOC], 1u);
    EXPECT_EQ(s.calls[DMM_SWC_FN_FREE], 1u);
    EXPECT_GE(s.sim_cycles[DMM_SWC_FN_MALLOC], 5u * dmm_spm_cell_cost().mailbox_word);
    char js[2048];
    size_t n = dmm_swc_stats_json(&s, js, sizeof js);
    ASSERT_LT(n, sizeof js);
    std::string j(js);
    EXPECT_NE(j.find("\"mailbox_words\":8"), std::string::npos);
    EXPECT_NE(j.find("\"calls\":{\"malloc\":1,"), std::string::npos);
    EXPECT_EQ(j.front(), '{');
    EXPECT_EQ(j.back(), '}');
}

} // namespace

// tests/spm/test_spm_global.cpp - the scratchpad heap's global memory and
// host port (label unit): both modes created and destroyed, bad
// configurations refused with the buffer untouched, allocation through the
// manager with the data checked through dmm_spm_global_host, exhaustion and
// recovery, refused frees counted and ignored, mailbox words counted, the
// serve/stop loop without the library's thread, the host port's rules (an
// illegal transfer stops the program) and its cost arithmetic.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

extern "C" {
#include "dmm/spm.h"
}

namespace {

// A 4 KiB-aligned buffer (global addresses keep the buffer's alignment).
struct Buf {
    unsigned char *p;
    size_t n;
    explicit Buf(size_t bytes) : n(bytes)
    {
        p = static_cast<unsigned char *>(std::aligned_alloc(4096, (bytes + 4095) & ~size_t(4095)));
        std::memset(p, 0xA5, n);
    }
    ~Buf() { std::free(p); }
    Buf(const Buf &) = delete;
    Buf &operator=(const Buf &) = delete;
    bool untouched() const
    {
        for (size_t i = 0; i < n; i++) {
            if (p[i] != 0xA5) {
                return false;
            }
        }
        return true;
    }
};

dmm_spm_global_config cfg_of(dmm_spm_mode mode, unsigned cores, bool thread = true, unsigned depth = 4)
{
    dmm_spm_global_config c = dmm_spm_global_default_config();
    c.mode = mode;
    c.cores = cores;
    c.manager_thread = thread;
    c.mailbox_depth = depth;
    return c;
}

void fill(dmm_spm_global *g, dmm_gaddr a, size_t n, unsigned seed)
{
    auto *h = static_cast<unsigned char *>(dmm_spm_global_host(g, a, n));
    ASSERT_NE(h, nullptr);
    for (size_t i = 0; i < n; i++) {
        h[i] = static_cast<unsigned char>(seed * 31u + i);
    }
}

bool intact(dmm_spm_global *g, dmm_gaddr a, size_t n, unsigned seed)
{
    auto *h = static_cast<unsigned char *>(dmm_spm_global_host(g, a, n));
    if (!h) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (h[i] != static_cast<unsigned char>(seed * 31u + i)) {
            return false;
        }
    }
    return true;
}

} // namespace

TEST(SpmGlobal, DefaultConfig)
{
    dmm_spm_global_config c = dmm_spm_global_default_config();
    EXPECT_EQ(c.mode, DMM_SPM_DYNAMIC);
    EXPECT_EQ(c.cores, 1u);
    EXPECT_EQ(c.heap, nullptr);
    EXPECT_EQ(c.mailbox_depth, 4u);
    EXPECT_TRUE(c.manager_thread);
}

TEST(SpmGlobal, DynamicRoundTripsWithDataAndWords)
{
    Buf b(256 * 1024);
    dmm_spm_global *g = nullptr;
    dmm_spm_global_config c = cfg_of(DMM_SPM_DYNAMIC, 2);
    ASSERT_EQ(dmm_spm_global_create(&g, b.p, b.n, &c), DMM_OK);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(dmm_spm_global_mode(g), DMM_SPM_DYNAMIC);
    EXPECT_EQ(dmm_spm_global_size(g), b.n);
    EXPECT_EQ(dmm_spm_global_host(g, 0, 1), nullptr); // the control block is no object
    EXPECT_EQ(dmm_spm_global_host(g, b.n - 16, 32), nullptr);

    unsigned w = 99;
    dmm_gaddr a1 = dmm_spm_global_alloc(g, 0, 100, 16, &w);
    EXPECT_EQ(w, 5u);
    dmm_gaddr a2 = dmm_spm_global_alloc(g, 1, 3000, 16, &w);
    EXPECT_EQ(w, 5u);
    ASSERT_NE(a1, DMM_GNULL);
    ASSERT_NE(a2, DMM_GNULL);
    EXPECT_EQ(a1 % 16, 0u);
    EXPECT_EQ(a2 % 16, 0u);
    fill(g, a1, 112, 1); // rounded to the DMA granule: the padding is the object's
    fill(g, a2, 3008, 2);
    dmm_gaddr a3 = dmm_spm_global_alloc(g, 0, 64, 256, nullptr);
    ASSERT_NE(a3, DMM_GNULL);
    EXPECT_EQ(a3 % 256, 0u);
    fill(g, a3, 64, 3);
    EXPECT_TRUE(intact(g, a1, 112, 1));
    EXPECT_TRUE(intact(g, a2, 3008, 2));

    dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
    EXPECT_EQ(s.allocs, 3u);
    EXPECT_GE(s.bytes_in_use, 112u + 3008u + 64u);
    EXPECT_EQ(s.peak_bytes, s.bytes_in_use);

    dmm_spm_global_free(g, 0, a1, &w);
    EXPECT_EQ(w, 3u);
    dmm_spm_global_free(g, 1, a2, &w);
    dmm_spm_global_free(g, 0, a3, &w);
    s = dmm_spm_global_get_stats(g); // waits for the one-way frees
    EXPECT_EQ(s.allocs, 3u);
    EXPECT_EQ(s.frees, 3u);
    EXPECT_EQ(s.failures, 0u);
    EXPECT_EQ(s.errors, 0u);
    EXPECT_EQ(s.words_in, 3u * 3u + 3u * 3u);
    EXPECT_EQ(s.words_out, 3u * 2u);
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_GE(s.peak_bytes, 112u + 3008u + 64u);
    dmm_spm_global_destroy(g);
}

TEST(SpmGlobal, StaticSlicesNeedNoWords)
{
    Buf b(256 * 1024);
    dmm_spm_global *g = nullptr;
    dmm_spm_global_config c = cfg_of(DMM_SPM_STATIC, 4);
    ASSERT_EQ(dmm_spm_global_create(&g, b.p, b.n, &c), DMM_OK);
    EXPECT_EQ(dmm_spm_global_mode(g), DMM_SPM_STATIC);
    dmm_gaddr a[4];
    for (unsigned k = 0; k < 4; k++) {
        unsigned w = 99;
        a[k] = dmm_spm_global_alloc(g, k, 1000, 16, &w);
        EXPECT_EQ(w, 0u);
        ASSERT_NE(a[k], DMM_GNULL);
        fill(g, a[k], 1008, k);
    }
    // Each core's slice is its own quarter: addresses grow with the core.
    for (unsigned k = 1; k < 4; k++) {
        EXPECT_GT(a[k], a[k - 1] + 1008);
        EXPECT_GE(a[k] - a[k - 1], (b.n - 4096) / 4 - 4096);
    }
    for (unsigned k = 0; k < 4; k++) {
        EXPECT_TRUE(intact(g, a[k], 1008, k));
    }
    // Another core's address is not this core's to free: refused, kept.
    unsigned w = 99;
    dmm_spm_global_free(g, 1, a[0], &w);
    EXPECT_EQ(w, 0u);
    dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
    EXPECT_EQ(s.errors, 1u);
    EXPECT_EQ(s.frees, 0u);
    EXPECT_TRUE(intact(g, a[0], 1008, 0));
    for (unsigned k = 0; k < 4; k++) {
        dmm_spm_global_free(g, k, a[k], nullptr);
    }
    s = dmm_spm_global_get_stats(g);
    EXPECT_EQ(s.allocs, 4u);
    EXPECT_EQ(s.frees, 4u);
    EXPECT_EQ(s.words_in, 0u);
    EXPECT_EQ(s.words_out, 0u);
    EXPECT_EQ(s.bytes_in_use, 0u);
    dmm_spm_global_destroy(g);
}

TEST(SpmGlobal, BadConfigsRefusedAndBufferUntouched)
{
    Buf b(64 * 1024);
    dmm_spm_global *g = reinterpret_cast<dmm_spm_global *>(0x1);
    struct Case {
        dmm_spm_global_config c;
        size_t size;
        dmm_status want;
    };
    std::vector<Case> cases;
    cases.push_back({cfg_of(DMM_SPM_DYNAMIC, 0), b.n, DMM_E_CONFIG});
    cases.push_back({cfg_of(DMM_SPM_STATIC, 0), b.n, DMM_E_CONFIG});
    cases.push_back({cfg_of(DMM_SPM_DYNAMIC, DMM_SPM_MAX_CORES + 1), b.n, DMM_E_CONFIG});
    cases.push_back({cfg_of(DMM_SPM_DYNAMIC, 1, true, 0), b.n, DMM_E_CONFIG});
    cases.push_back({cfg_of(DMM_SPM_DYNAMIC, 1, true, 100000), b.n, DMM_E_CONFIG});
    dmm_spm_global_config m = cfg_of(DMM_SPM_DYNAMIC, 1);
    m.mode = static_cast<dmm_spm_mode>(7);
    cases.push_back({m, b.n, DMM_E_CONFIG});
    cases.push_back({cfg_of(DMM_SPM_DYNAMIC, 1), 64, DMM_E_TOO_SMALL});
    cases.push_back({cfg_of(DMM_SPM_DYNAMIC, 1), 1024, DMM_E_TOO_SMALL});
    cases.push_back({cfg_of(DMM_SPM_STATIC, 64), 8 * 1024, DMM_E_TOO_SMALL});
    dmm_spm_global_config h = cfg_of(DMM_SPM_DYNAMIC, 1);
    h.heap = "fit=bogus";
    cases.push_back({h, b.n, DMM_E_CONFIG});
    h.heap = "nonsense";
    cases.push_back({h, b.n, DMM_E_CONFIG});
    h.heap = "org=tlsf,fit=next"; // parses, but next fit needs one list
    cases.push_back({h, b.n, DMM_E_CONFIG});
    for (size_t i = 0; i < cases.size(); i++) {
        g = reinterpret_cast<dmm_spm_global *>(0x1);
        EXPECT_EQ(dmm_spm_global_create(&g, b.p, cases[i].size, &cases[i].c), cases[i].want) << "case " << i;
        EXPECT_EQ(g, nullptr) << "case " << i;
        EXPECT_TRUE(b.untouched()) << "case " << i;
    }
    dmm_spm_global_config ok = cfg_of(DMM_SPM_DYNAMIC, 1);
    EXPECT_EQ(dmm_spm_global_create(nullptr, b.p, b.n, &ok), DMM_E_NULL);
    EXPECT_EQ(dmm_spm_global_create(&g, nullptr, b.n, &ok), DMM_E_NULL);
    EXPECT_EQ(dmm_spm_global_create(&g, b.p + 8, b.n - 8, &ok), DMM_E_CONFIG); // not on the DMA granule
    EXPECT_TRUE(b.untouched());
    // The same buffer still takes a good configuration afterwards.
    ASSERT_EQ(dmm_spm_global_create(&g, b.p, b.n, &ok), DMM_OK);
    dmm_spm_global_destroy(g);
}

TEST(SpmGlobal, ExhaustionReturnsZeroAndRecovers)
{
    for (dmm_spm_mode mode : {DMM_SPM_DYNAMIC, DMM_SPM_STATIC}) {
        Buf b(64 * 1024);
        dmm_spm_global *g = nullptr;
        dmm_spm_global_config c = cfg_of(mode, 1);
        ASSERT_EQ(dmm_spm_global_create(&g, b.p, b.n, &c), DMM_OK);
        std::vector<dmm_gaddr> live;
        for (;;) {
            dmm_gaddr a = dmm_spm_global_alloc(g, 0, 1024, 16, nullptr);
            if (a == DMM_GNULL) {
                break;
            }
            fill(g, a, 1024, static_cast<unsigned>(live.size()));
            live.push_back(a);
            ASSERT_LT(live.size(), 64u);
        }
        ASSERT_GT(live.size(), 40u); // most of 64 KiB is usable
        dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
        EXPECT_EQ(s.failures, 1u);
        EXPECT_EQ(s.allocs, live.size());
        // Free every other block: requests of that size fit again.
        size_t freed = 0;
        for (size_t i = 0; i < live.size(); i += 2) {
            EXPECT_TRUE(intact(g, live[i], 1024, static_cast<unsigned>(i)));
            dmm_spm_global_free(g, 0, live[i], nullptr);
            live[i] = DMM_GNULL;
            freed++;
        }
        size_t again = 0;
        while (dmm_spm_global_alloc(g, 0, 1000, 16, nullptr) != DMM_GNULL) {
            again++;
            ASSERT_LE(again, freed);
        }
        EXPECT_EQ(again, freed);
        for (size_t i = 1; i < live.size(); i += 2) {
            EXPECT_TRUE(intact(g, live[i], 1024, static_cast<unsigned>(i)));
        }
        s = dmm_spm_global_get_stats(g);
        EXPECT_EQ(s.failures, 2u);
        EXPECT_EQ(s.errors, 0u);
        dmm_spm_global_destroy(g);
    }
}

TEST(SpmGlobal, BadRequestsFailWithoutSending)
{
    Buf b(64 * 1024);
    dmm_spm_global *g = nullptr;
    dmm_spm_global_config c = cfg_of(DMM_SPM_DYNAMIC, 2);
    ASSERT_EQ(dmm_spm_global_create(&g, b.p, b.n, &c), DMM_OK);
    unsigned w = 99;
    EXPECT_EQ(dmm_spm_global_alloc(g, 0, 0, 16, &w), DMM_GNULL);
    EXPECT_EQ(w, 0u);
    EXPECT_EQ(dmm_spm_global_alloc(g, 2, 16, 16, &w), DMM_GNULL); // no core 2
    EXPECT_EQ(dmm_spm_global_alloc(g, 0, 16, 48, &w), DMM_GNULL); // not a power of two
    EXPECT_EQ(dmm_spm_global_alloc(g, 0, 1u << 20, 16, &w), DMM_GNULL); // larger than all
    EXPECT_EQ(w, 5u);                                                    // that one asked
    dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
    EXPECT_EQ(s.failures, 4u);
    EXPECT_EQ(s.allocs, 0u);
    EXPECT_EQ(s.words_in, 3u);
    dmm_spm_global_destroy(g);
}

TEST(SpmGlobal, BadFreesReportedAndIgnored)
{
    for (dmm_spm_mode mode : {DMM_SPM_DYNAMIC, DMM_SPM_STATIC}) {
        Buf b(64 * 1024);
        dmm_spm_global *g = nullptr;
        dmm_spm_global_config c = cfg_of(mode, 1);
        ASSERT_EQ(dmm_spm_global_create(&g, b.p, b.n, &c), DMM_OK);
        dmm_gaddr a = dmm_spm_global_alloc(g, 0, 200, 16, nullptr);
        dmm_gaddr keep = dmm_spm_global_alloc(g, 0, 200, 16, nullptr);
        ASSERT_NE(a, DMM_GNULL);
        ASSERT_NE(keep, DMM_GNULL);
        fill(g, keep, 208, 7);
        size_t in_use = dmm_spm_global_get_stats(g).bytes_in_use;
        dmm_gaddr bad[] = {16, b.n + 4096, ~dmm_gaddr(0) - 15, a + 16, a + 8};
        uint64_t errors = 0;
        for (dmm_gaddr x : bad) {
            dmm_spm_global_free(g, 0, x, nullptr);
            dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
            EXPECT_EQ(s.errors, ++errors) << "address " << x;
            EXPECT_EQ(s.bytes_in_use, in_use);
            EXPECT_EQ(s.frees, 0u);
        }
        dmm_spm_global_free(g, 0, a, nullptr);
        dmm_spm_global_free(g, 0, a, nullptr); // double free
        dmm_spm_global_free(g, 0, DMM_GNULL, nullptr); // like free(NULL): nothing
        dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
        EXPECT_EQ(s.errors, errors + 1);
        EXPECT_EQ(s.frees, 1u);
        EXPECT_TRUE(intact(g, keep, 208, 7));
        dmm_gaddr again = dmm_spm_global_alloc(g, 0, 200, 16, nullptr);
        EXPECT_NE(again, DMM_GNULL);
        dmm_spm_global_free(g, 0, again, nullptr);
        dmm_spm_global_free(g, 0, keep, nullptr);
        s = dmm_spm_global_get_stats(g);
        EXPECT_EQ(s.bytes_in_use, 0u);
        EXPECT_EQ(s.frees, 3u);
        dmm_spm_global_destroy(g);
    }
}

TEST(SpmGlobal, ServeAndStopWithoutTheThread)
{
    Buf b(128 * 1024);
    dmm_spm_global *g = nullptr;
    dmm_spm_global_config c = cfg_of(DMM_SPM_DYNAMIC, 1, false, 1);
    ASSERT_EQ(dmm_spm_global_create(&g, b.p, b.n, &c), DMM_OK);

    // stop before serve: the next serve returns at once (nothing pending).
    dmm_spm_global_stop(g);
    dmm_spm_global_serve(g);

    // A core whose 3-word request meets a 1-word inbound box with nobody
    // serving blocks on the full box (counted) until the manager runs.
    std::atomic<dmm_gaddr> got{DMM_GNULL};
    std::thread core([&] { got = dmm_spm_global_alloc(g, 0, 500, 16, nullptr); });
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (dmm_spm_global_get_stats(g).mailbox_full_waits == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_GE(dmm_spm_global_get_stats(g).mailbox_full_waits, 1u);
    EXPECT_EQ(got.load(), DMM_GNULL);
    std::thread manager([&] { dmm_spm_global_serve(g); });
    core.join();
    ASSERT_NE(got.load(), DMM_GNULL);
    for (int i = 0; i < 50; i++) {
        dmm_gaddr a = dmm_spm_global_alloc(g, 0, 16 + 32 * static_cast<size_t>(i), 16, nullptr);
        ASSERT_NE(a, DMM_GNULL);
        dmm_spm_global_free(g, 0, a, nullptr);
    }
    dmm_spm_global_free(g, 0, got.load(), nullptr);
    dmm_spm_global_stop(g);
    manager.join(); // serve drained the box and returned
    dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
    EXPECT_EQ(s.allocs, 51u);
    EXPECT_EQ(s.frees, 51u);
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_EQ(s.words_in, 51u * 3u + 51u * 3u);
    EXPECT_EQ(s.words_out, 51u * 2u);
    dmm_spm_global_destroy(g);
}

// ---- the host port ----------------------------------------------------------

class HostPort : public ::testing::Test {
protected:
    Buf b{128 * 1024};
    dmm_spm_global *g = nullptr;
    void SetUp() override
    {
        GTEST_FLAG_SET(death_test_style, "threadsafe");
        dmm_spm_global_config c = cfg_of(DMM_SPM_STATIC, 1);
        ASSERT_EQ(dmm_spm_global_create(&g, b.p, b.n, &c), DMM_OK);
    }
    void TearDown() override { dmm_spm_global_destroy(g); }
};

TEST_F(HostPort, InitAndCellCost)
{
    dmm_spm_cost cell = dmm_spm_cell_cost();
    EXPECT_EQ(cell.issue, 10u);
    EXPECT_EQ(cell.latency, 400u);
    EXPECT_EQ(cell.bytes_per_cycle, 8u);
    EXPECT_EQ(cell.mailbox_word, 100u);
    dmm_spm_hostport hp;
    dmm_spm_hostport_init(&hp, g, nullptr);
    EXPECT_EQ(hp.port.align, 16u);
    EXPECT_EQ(hp.port.max_transfer, 16384u);
    EXPECT_EQ(hp.port.ctx, &hp);
    EXPECT_EQ(hp.global, g);
    EXPECT_EQ(hp.cost.latency, 400u);
    EXPECT_EQ(hp.cycles, 0u);
    EXPECT_EQ(hp.port.clock(hp.port.ctx), 0u);
}

TEST_F(HostPort, CopiesAndChargesExactly)
{
    dmm_spm_hostport hp;
    dmm_spm_hostport_init(&hp, g, nullptr);
    dmm_gaddr a = dmm_spm_global_alloc(g, 0, 16384, 16, nullptr);
    ASSERT_NE(a, DMM_GNULL);
    alignas(16) static unsigned char local[16384];
    for (size_t i = 0; i < sizeof local; i++) {
        local[i] = static_cast<unsigned char>(i * 7 + 1);
    }
    dmm_spm_port &p = hp.port;
    p.put(p.ctx, a, local, 16384, 0);        // 10 + 400 + 2048
    EXPECT_EQ(hp.cycles, 2458u);
    std::memset(local, 0, sizeof local);
    p.get(p.ctx, local, a + 32, 32, 3);      // 10 + 400 + 4
    EXPECT_EQ(hp.cycles, 2458u + 414u);
    for (size_t i = 0; i < 32; i++) {
        ASSERT_EQ(local[i], static_cast<unsigned char>((i + 32) * 7 + 1));
    }
    p.wait(p.ctx, 1u << 3);                  // free
    p.mailbox(p.ctx, 5);                     // 5 * 100
    EXPECT_EQ(p.clock(p.ctx), 2458u + 414u + 500u);
    EXPECT_EQ(hp.gets, 1u);
    EXPECT_EQ(hp.puts, 1u);
    EXPECT_EQ(hp.bytes_in, 32u);
    EXPECT_EQ(hp.bytes_out, 16384u);
    EXPECT_EQ(hp.waits, 1u);
    EXPECT_EQ(hp.mailbox_words, 5u);
    // Another model: a partial last cycle is a whole cycle.
    dmm_spm_cost odd = {1, 2, 3, 4};
    dmm_spm_hostport hq;
    dmm_spm_hostport_init(&hq, g, &odd);
    hq.port.get(hq.port.ctx, local, a, 16, 0); // 1 + 2 + ceil(16 / 3) = 9
    hq.port.mailbox(hq.port.ctx, 2);           // 8
    EXPECT_EQ(hq.cycles, 17u);
    dmm_spm_global_free(g, 0, a, nullptr);
}

TEST_F(HostPort, IllegalTransfersStop)
{
    dmm_spm_hostport hp;
    dmm_spm_hostport_init(&hp, g, nullptr);
    dmm_gaddr a = dmm_spm_global_alloc(g, 0, 32768, 16, nullptr);
    ASSERT_NE(a, DMM_GNULL);
    alignas(16) static unsigned char local[32768];
    dmm_spm_port p = hp.port;
    // 16 KiB + 16 must be split by the caller into legal transfers.
    EXPECT_DEATH(p.get(p.ctx, local, a, 16384 + 16, 0), "max_transfer");
    EXPECT_DEATH(p.put(p.ctx, a + 8, local, 16, 0), "alignment");
    EXPECT_DEATH(p.get(p.ctx, local + 8, a, 16, 0), "alignment");
    EXPECT_DEATH(p.get(p.ctx, local, a, 24, 0), "size is not a multiple");
    EXPECT_DEATH(p.put(p.ctx, b.n - 16, local, 32, 0), "outside the global memory");
    EXPECT_DEATH(p.get(p.ctx, local, 0, 16, 0), "outside the global memory");
    EXPECT_DEATH(p.get(p.ctx, local, a, 16, 32), "tag");
    // The split the caller must do is legal and moves every byte.
    p.get(p.ctx, local, a, 16384, 0);
    p.get(p.ctx, local + 16384, a + 16384, 16, 0);
    EXPECT_EQ(hp.gets, 2u);
    EXPECT_EQ(hp.bytes_in, 16400u);
    dmm_spm_global_free(g, 0, a, nullptr);
}

// An alignment the buffer itself lacks (global addresses are offsets, the
// heap aligns host addresses): the object is placed at an aligned offset
// inside a larger block; its data, its free, a refused interior free and a
// double free behave as for any other object.
TEST(SpmGlobal, AlignmentBeyondTheBuffersOwn)
{
    for (dmm_spm_mode mode : {DMM_SPM_DYNAMIC, DMM_SPM_STATIC}) {
        Buf raw(512 * 1024 + 4096);
        unsigned char *buf = raw.p + 4096 + 16; // 16-aligned, not 32-aligned
        size_t size = 512 * 1024 - 16;
        dmm_spm_global *g = nullptr;
        dmm_spm_global_config c = cfg_of(mode, 1);
        ASSERT_EQ(dmm_spm_global_create(&g, buf, size, &c), DMM_OK);
        std::vector<dmm_gaddr> segs;
        unsigned seed = 0;
        for (size_t align : {size_t(32), size_t(256), size_t(4096), size_t(16384)}) {
            dmm_gaddr a = dmm_spm_global_alloc(g, 0, 16384, align, nullptr);
            ASSERT_NE(a, DMM_GNULL) << align;
            EXPECT_EQ(a % align, 0u) << align;
            fill(g, a, 16384, seed++);
            segs.push_back(a);
        }
        seed = 0;
        for (dmm_gaddr a : segs) {
            EXPECT_TRUE(intact(g, a, 16384, seed++));
        }
        dmm_spm_global_free(g, 0, segs[3] + 16, nullptr); // interior: refused
        dmm_spm_global_stats s = dmm_spm_global_get_stats(g);
        EXPECT_EQ(s.errors, 1u);
        EXPECT_EQ(s.frees, 0u);
        EXPECT_TRUE(intact(g, segs[3], 16384, 3));
        for (dmm_gaddr a : segs) {
            dmm_spm_global_free(g, 0, a, nullptr);
        }
        dmm_spm_global_free(g, 0, segs[2], nullptr); // double free: refused
        s = dmm_spm_global_get_stats(g);
        EXPECT_EQ(s.frees, 4u);
        EXPECT_EQ(s.errors, 2u);
        EXPECT_EQ(s.bytes_in_use, 0u);
        // Segments aligned to their size, as the per-core heap asks for
        // them, until the memory is exhausted; then all given back.
        segs.clear();
        for (;;) {
            dmm_gaddr a = dmm_spm_global_alloc(g, 0, 16384, 16384, nullptr);
            if (a == DMM_GNULL) {
                break;
            }
            EXPECT_EQ(a % 16384, 0u);
            fill(g, a, 16384, static_cast<unsigned>(a >> 14));
            segs.push_back(a);
            ASSERT_LT(segs.size(), 40u);
        }
        EXPECT_GE(segs.size(), 10u); // each costs at most 2 x 16 KiB + 32 of 512 KiB
        for (dmm_gaddr a : segs) {
            EXPECT_TRUE(intact(g, a, 16384, static_cast<unsigned>(a >> 14)));
            dmm_spm_global_free(g, 0, a, nullptr);
        }
        s = dmm_spm_global_get_stats(g);
        EXPECT_EQ(s.bytes_in_use, 0u);
        EXPECT_EQ(s.errors, 2u);
        dmm_spm_global_destroy(g);
    }
}

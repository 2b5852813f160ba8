// tests/spm/test_spm.cpp - the per-core scratchpad heap (label unit):
// seeded random malloc/calloc/realloc/free/p2s/p2s_ro/s2p/pin/unpin
// sequences against a shadow copy of every object, in static and dynamic
// (manager thread) mode, on tiny local memories so units are evicted and
// table pages swapped all the time, with dmm_spm_check after every op; bad
// addresses reported with nothing changed; the paranoid local-address rule;
// flush making data visible to the main core; the config text form.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "dmm/spm.h"
}

namespace {

struct Errors {
    int count = 0;
    dmm_error_kind kind{};
    dmm_op op{};
    const void *ptr = nullptr;
};

void on_error(void *ctx, const dmm_error *e)
{
    auto *er = static_cast<Errors *>(ctx);
    er->count++;
    er->kind = e->kind;
    er->op = e->op;
    er->ptr = e->ptr;
}

struct SpmSetup {
    dmm_spm_mode mode;
    size_t local;
    const char *text; // dmm_spm_config text
};

// One core's heap over a global memory and the host port.
struct Rig {
    unsigned char *gbuf = nullptr;
    unsigned char *lbuf = nullptr;
    dmm_spm_global *g = nullptr;
    dmm_spm_hostport hp{};
    dmm_spm *s = nullptr;
    Errors err;
    dmm_spm_config cfg{};

    Rig(const SpmSetup &su, size_t gbytes = 1u << 20)
    {
        gbuf = static_cast<unsigned char *>(std::aligned_alloc(4096, gbytes));
        lbuf = static_cast<unsigned char *>(std::aligned_alloc(16, su.local));
        dmm_spm_global_config gc = dmm_spm_global_default_config();
        gc.mode = su.mode;
        gc.cores = 1;
        EXPECT_EQ(dmm_spm_global_create(&g, gbuf, gbytes, &gc), DMM_OK);
        dmm_spm_hostport_init(&hp, g, nullptr);
        cfg = dmm_spm_default_config();
        const char *why = nullptr;
        EXPECT_EQ(dmm_spm_config_parse(su.text, &cfg, &why), DMM_OK) << (why ? why : "");
        cfg.error_fn = on_error;
        cfg.error_ctx = &err;
        EXPECT_EQ(dmm_spm_create(&s, lbuf, su.local, &cfg, g, 0, &hp.port), DMM_OK);
    }
    ~Rig()
    {
        if (s) {
            dmm_spm_destroy(s);
        }
        if (g) {
            dmm_spm_global_destroy(g);
        }
        std::free(lbuf);
        std::free(gbuf);
    }
    bool ok()
    {
        const char *why = nullptr;
        dmm_status st = dmm_spm_check(s, &why);
        if (st != DMM_OK) {
            ADD_FAILURE() << "check: " << (why ? why : "?");
        }
        return st == DMM_OK;
    }
};

using Shadow = std::map<dmm_gaddr, std::vector<unsigned char>>;

bool same(const unsigned char *p, const std::vector<unsigned char> &v)
{
    for (size_t i = 0; i < v.size(); i++) {
        if (p[i] != v[i]) {
            ADD_FAILURE() << "byte " << i << " of " << v.size() << ": " << int(p[i]) << " != " << int(v[i]);
            return false;
        }
    }
    return true;
}

// Every object's bytes read back through p2s_ro.
// With an object pinned, a large one may not fit beside it: that is the
// documented refusal (DMM_E_UNSUPPORTED), not a lost object.
bool all_match(Rig &r, const Shadow &sh, bool pinned = false)
{
    for (const auto &kv : sh) {
        const auto *p = static_cast<const unsigned char *>(dmm_spm_p2s_ro(r.s, kv.first));
        if (!p && pinned && dmm_spm_last_status(r.s) == DMM_E_UNSUPPORTED) {
            continue;
        }
        if (!p || !same(p, kv.second)) {
            ADD_FAILURE() << "object " << kv.first << " differs";
            return false;
        }
    }
    return true;
}

void random_run(const SpmSetup &su, unsigned seed, int ops)
{
    Rig r(su);
    ASSERT_NE(r.s, nullptr);
    dmm_spm_layout lay = dmm_spm_get_layout(r.s);
    ASSERT_GT(lay.max_object, 256u);
    std::mt19937 rng(seed);
    Shadow sh;
    std::vector<dmm_gaddr> keys;
    auto pick = [&]() -> dmm_gaddr {
        auto it = sh.begin();
        std::advance(it, rng() % sh.size());
        return it->first;
    };
    auto size_of = [&]() -> size_t {
        unsigned k = rng() % 20;
        if (k == 0) {
            return 1 + rng() % lay.max_object; // up to the largest
        }
        if (k < 4) {
            return 1 + rng() % 400;
        }
        return 1 + rng() % 64;
    };
    dmm_gaddr pinned = 0;
    unsigned char *pinned_at = nullptr;
    for (int op = 0; op < ops; op++) {
        unsigned k = rng() % 100;
        if (sh.empty() || k < 30) {
            size_t n = size_of();
            bool zero = rng() % 4 == 0;
            dmm_gaddr a = zero ? dmm_spm_calloc(r.s, 1, n) : dmm_spm_malloc(r.s, n);
            if (!a) {
                // only a pinned object may stand in the way
                ASSERT_TRUE(pinned != 0) << "malloc " << n << " failed, status "
                                         << dmm_spm_last_status(r.s);
                continue;
            }
            ASSERT_EQ(sh.count(a), 0u);
            ASSERT_GE(dmm_spm_size(r.s, a), n);
            auto *p = static_cast<unsigned char *>(dmm_spm_p2s(r.s, a));
            ASSERT_NE(p, nullptr);
            std::vector<unsigned char> v(n);
            for (size_t i = 0; i < n; i++) {
                if (zero) {
                    ASSERT_EQ(p[i], 0) << "calloc byte " << i;
                }
                v[i] = static_cast<unsigned char>(rng());
                p[i] = v[i];
            }
            sh[a] = v;
        } else if (k < 50) {
            dmm_gaddr a = pick();
            if (a == pinned) {
                continue;
            }
            dmm_spm_free(r.s, a);
            sh.erase(a);
        } else if (k < 60) {
            dmm_gaddr a = pick();
            if (a == pinned) {
                continue;
            }
            size_t n = size_of();
            dmm_gaddr b = dmm_spm_realloc(r.s, a, n);
            if (!b) {
                ASSERT_TRUE(pinned != 0);
                continue;
            }
            std::vector<unsigned char> v = sh[a];
            sh.erase(a);
            auto *p = static_cast<unsigned char *>(dmm_spm_p2s(r.s, b));
            if (!p) {
                // cannot be made resident beside the pinned object: let it go
                ASSERT_TRUE(pinned != 0 && dmm_spm_last_status(r.s) == DMM_E_UNSUPPORTED);
                dmm_spm_free(r.s, b);
                continue;
            }
            // the kept prefix survived the move
            for (size_t i = 0; i < n && i < v.size(); i++) {
                ASSERT_EQ(p[i], v[i]) << "realloc byte " << i;
            }
            size_t old = v.size();
            v.resize(n);
            for (size_t i = old; i < n; i++) {
                v[i] = static_cast<unsigned char>(rng());
                p[i] = v[i];
            }
            sh[b] = v;
        } else if (k < 75) {
            dmm_gaddr a = pick();
            const auto &v = sh[a];
            size_t off = rng() % v.size();
            if (rng() % 2) {
                const auto *p = static_cast<const unsigned char *>(dmm_spm_p2s_ro(r.s, a + off));
                if (!p) {
                    ASSERT_TRUE(pinned != 0 && dmm_spm_last_status(r.s) == DMM_E_UNSUPPORTED);
                    continue;
                }
                ASSERT_TRUE(same(p - off, v));
                ASSERT_EQ(dmm_spm_s2p(r.s, p), a + off);
            } else {
                auto *p = static_cast<unsigned char *>(dmm_spm_p2s(r.s, a + off));
                if (!p) {
                    ASSERT_TRUE(pinned != 0 && dmm_spm_last_status(r.s) == DMM_E_UNSUPPORTED);
                    continue;
                }
                ASSERT_TRUE(same(p - off, v));
                p[0] = static_cast<unsigned char>(rng());
                sh[a][off] = p[0];
            }
        } else if (k < 82) {
            if (!pinned) {
                pinned = pick();
                pinned_at = static_cast<unsigned char *>(dmm_spm_pin(r.s, pinned));
                if (!pinned_at) {
                    pinned = 0;
                    continue;
                }
                ASSERT_TRUE(same(pinned_at, sh[pinned]));
            } else {
                // still where it was, with its bytes
                ASSERT_TRUE(same(pinned_at, sh[pinned]));
                pinned_at[0] ^= 0x5a;
                sh[pinned][0] = pinned_at[0];
                dmm_spm_unpin(r.s, pinned);
                pinned = 0;
            }
        } else if (k < 84) {
            ASSERT_EQ(dmm_spm_flush(r.s), DMM_OK);
            for (const auto &kv : sh) {
                const auto *h =
                    static_cast<const unsigned char *>(dmm_spm_global_host(r.g, kv.first, kv.second.size()));
                ASSERT_NE(h, nullptr);
                ASSERT_TRUE(same(h, kv.second));
            }
        } else {
            ASSERT_TRUE(all_match(r, sh, pinned != 0));
        }
        ASSERT_TRUE(r.ok()) << "op " << op;
        if (getenv("SPM_DEBUG")) {
            ASSERT_TRUE(all_match(r, sh, pinned != 0)) << "op " << op << " k " << k;
        }
        ASSERT_EQ(dmm_spm_get_stats(r.s).live_objects, sh.size());
        ASSERT_EQ(r.err.count, 0);
    }
    if (pinned) {
        dmm_spm_unpin(r.s, pinned);
    }
    ASSERT_TRUE(all_match(r, sh));
    dmm_spm_stats st = dmm_spm_get_stats(r.s);
    EXPECT_GT(st.unit_evictions, 0u);
    EXPECT_GT(st.page_fetches, 0u);
    EXPECT_GT(st.calls[DMM_SPM_FN_MALLOC], 0u);
    EXPECT_GT(st.sim_cycles[DMM_SPM_FN_P2S], 0u);
    for (const auto &kv : sh) {
        dmm_spm_free(r.s, kv.first);
    }
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(dmm_spm_get_stats(r.s).live_objects, 0u);
    // every segment went back to the main core
    EXPECT_EQ(dmm_spm_global_get_stats(r.g).bytes_in_use, 0u);
}

const SpmSetup kSetups[] = {
    {DMM_SPM_STATIC, 4096, "table=256,frames=1,gran=1,unit=256,segment=2048"},
    {DMM_SPM_STATIC, 4096, "table=256,frames=2,gran=4,unit=256,segment=2048"},
    {DMM_SPM_DYNAMIC, 4096, "table=256,frames=1,gran=4,unit=128,segment=4096"},
    {DMM_SPM_DYNAMIC, 3072, "table=256,frames=2,gran=1,unit=256,segment=1024"},
    {DMM_SPM_STATIC, 4096, "table=256,frames=1,gran=4,unit=256,segment=2048,harden=paranoid"},
};

class SpmRandom : public ::testing::TestWithParam<int> {};

TEST_P(SpmRandom, ShadowModelSeeds)
{
    const SpmSetup &su = kSetups[GetParam()];
    for (unsigned seed = 1; seed <= 3; seed++) {
        SCOPED_TRACE(std::string(su.text) + " seed " + std::to_string(seed));
        random_run(su, seed * 7919u + static_cast<unsigned>(GetParam()), 1500);
        if (HasFatalFailure()) {
            return;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Configs, SpmRandom, ::testing::Range(0, 5));

} // namespace

// tests/annotate/test_annotate_spm.cpp - the scratchpad heap's local-address
// rule under AddressSanitizer (label "annotate": this code is instrumented,
// the library is not and carries DMM_ANNOTATE).  With harden=paranoid every
// moving call evicts the unpinned units into a quarantine that is filled
// with 0xA5 and poisoned, so a local address kept past the next p2s is an
// ASan report, not a silent read of a newer unit.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "dmm/spm.h"
}

namespace {

template <class T> T launder_read(const volatile T *p) { return *p; }

struct SpmRig {
    unsigned char *gbuf = static_cast<unsigned char *>(std::aligned_alloc(4096, 1u << 18));
    alignas(16) unsigned char local[16384];
    dmm_spm_global *g = nullptr;
    dmm_spm_hostport hp{};
    dmm_spm *s = nullptr;

    explicit SpmRig(const char *text)
    {
        dmm_spm_global_config gc = dmm_spm_global_default_config();
        gc.mode = DMM_SPM_STATIC;
        if (dmm_spm_global_create(&g, gbuf, 1u << 18, &gc) != DMM_OK)
            std::exit(3);
        dmm_spm_hostport_init(&hp, g, nullptr);
        dmm_spm_config c = dmm_spm_default_config();
        if (dmm_spm_config_parse(text, &c, nullptr) != DMM_OK ||
            dmm_spm_create(&s, local, sizeof local, &c, g, 0, &hp.port) != DMM_OK)
            std::exit(3);
    }
    ~SpmRig()
    {
        dmm_spm_destroy(s);
        dmm_spm_global_destroy(g);
        std::free(gbuf);
    }
};

} // namespace

TEST(AnnotateSpm, StaleLocalAddressIsCaught)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            SpmRig r("table=512,frames=1,gran=1,unit=256,segment=2048,harden=paranoid");
            dmm_gaddr a = dmm_spm_malloc(r.s, 64);
            dmm_gaddr b = dmm_spm_malloc(r.s, 64);
            auto *pa = static_cast<unsigned char *>(dmm_spm_p2s(r.s, a));
            std::memset(pa, 1, 64);
            auto *pb = static_cast<unsigned char *>(dmm_spm_p2s(r.s, b)); // pa is stale now
            std::memset(pb, 2, 64);
            std::fprintf(stderr, "%d\n", (int)launder_read(pa + 8));
        },
        "AddressSanitizer");
}

// The same sequence kept to the rule reads its data back: no false report.
TEST(AnnotateSpm, KeptToTheRuleIsClean)
{
    SpmRig r("table=512,frames=1,gran=1,unit=256,segment=2048,harden=paranoid");
    dmm_gaddr a = dmm_spm_malloc(r.s, 64);
    dmm_gaddr b = dmm_spm_malloc(r.s, 64);
    std::memset(dmm_spm_p2s(r.s, a), 1, 64);
    std::memset(dmm_spm_p2s(r.s, b), 2, 64);
    const auto *pa = static_cast<const unsigned char *>(dmm_spm_p2s_ro(r.s, a));
    ASSERT_NE(pa, nullptr);
    EXPECT_EQ(pa[8], 1);
    const auto *pb = static_cast<const unsigned char *>(dmm_spm_p2s_ro(r.s, b));
    ASSERT_NE(pb, nullptr);
    EXPECT_EQ(pb[63], 2);
    const char *why = nullptr;
    EXPECT_EQ(dmm_spm_check(r.s, &why), DMM_OK) << (why ? why : "");
    dmm_spm_free(r.s, a);
    dmm_spm_free(r.s, b);
}

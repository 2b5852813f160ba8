// tests/heap/test_links.cpp - the link encoding against an attacker who
// has leaked a link (issue 25, item 1; docs/heap.md, "Link encoding").
//
// The attacker knows the word stored in one link slot, the slot's block
// and the block it names, but not the keys.  From these it forges a link
// to a block of its choice (a fake free block it built inside a live
// allocation, so that every range check passes) by the manipulations that
// defeat a plain XOR or additive encoding, and writes it over the leaked
// slot.  The heap must report the forged link when it meets it (FREE_LIST)
// and never hand out the fake block.  Linked with level-1 assertions like
// the corruption suite (the heap is corrupted on purpose).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "dmm_test_support.h"

// Internal test helper (src/heap/check.c): the encoded word naming
// target_payload in the slot of slot_payload.  Used only to tell which of
// two free blocks heads their list (bookkeeping, not attacker knowledge).
extern "C" uintptr_t dmm__heap_link_encode(dmm_heap *h, const void *slot_payload, const void *target_payload);

using namespace dmmt;

namespace {

constexpr size_t W = sizeof(size_t);
constexpr uintptr_t HDR = 2 * W; // block start to payload
uintptr_t &next_link(void *payload) { return *(uintptr_t *)payload; }
uintptr_t &prev_link(void *payload) { return *((uintptr_t *)payload + 1); }
uintptr_t blk_of(const void *payload) { return (uintptr_t)payload - HDR; }

enum Forge { XOR_DELTA, ADD_DELTA, SUB_DELTA, RAW_TARGET, FORGE_COUNT };
const char *forge_name(int f) {
    static const char *n[] = {"xor delta", "add delta", "sub delta", "raw target"};
    return n[f];
}

// A forged link naming block `target`, from the leaked word `leak` that
// names block `known`.
uintptr_t forge(int how, uintptr_t leak, uintptr_t known, uintptr_t target) {
    switch (how) {
    case XOR_DELTA:
        return leak ^ known ^ target; // a plain XOR encoding forges like this
    case ADD_DELTA:
        return leak + (target - known); // an additive one like this
    case SUB_DELTA:
        return leak - (known - target) * 2; // (a scaled delta)
    default:
        return target;
    }
}

} // namespace

TEST(LinkForging, LeakedLinkDoesNotForgeAnother) {
    const size_t req = 100; // exact/linear bins in every preset below; above dlmalloc's quick lists
    for (dmm_heap_preset p : {DMM_PRESET_TLSF, DMM_PRESET_DLMALLOC, DMM_PRESET_HALFFIT, DMM_PRESET_FIRSTFIT,
                              DMM_PRESET_P2012}) {
        for (int how = 0; how < FORGE_COUNT; ++how) {
            dmm_heap_config cfg = dmm_heap_preset_config(p);
            cfg.harden = DMM_HARDEN_CHECKED;
            // firstfit's list form: this test reads list links; the address
            // tree (the preset's organisation) has its own forged-link tests
            // in test_addrtree.cpp
            if (p == DMM_PRESET_FIRSTFIT)
                cfg.org = DMM_ORG_SINGLE;
            ErrorLog errs;
            errs.attach(&cfg);
            Buffer buf(64 * 1024, 0);
            dmm_heap *h = nullptr;
            ASSERT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &cfg), DMM_OK);
            SCOPED_TRACE(std::string(dmm_heap_preset_name(p)) + ", " + forge_name(how));
            void *g0 = dmm_heap_malloc(h, req), *a = dmm_heap_malloc(h, req), *g1 = dmm_heap_malloc(h, req);
            void *b = dmm_heap_malloc(h, req), *g2 = dmm_heap_malloc(h, req);
            char *v = (char *)dmm_heap_malloc(h, 600); // the attacker's live allocation
            void *g3 = dmm_heap_malloc(h, req);
            ASSERT_TRUE(g0 && a && g1 && b && g2 && v && g3);
            dmm_heap_free(h, a);
            dmm_heap_free(h, b);
            ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
            // which of a, b heads the two-block list (the leaked link names the other)
            void *head = next_link(a) == dmm__heap_link_encode(h, a, b) ? a : b;
            void *other = head == a ? b : a;
            ASSERT_EQ(next_link(head), dmm__heap_link_encode(h, head, other)) << "a and b are not one list";
            const uintptr_t leak = next_link(head);
            // the fake free block inside v: a header claiming a free block of
            // a's size, its links the leaked word, its size tag behind it
            const size_t bs = *(size_t *)((char *)a - W) & ~(size_t)(DMM_HEAP_ALIGN - 1);
            uintptr_t fake = ((uintptr_t)v + 4 * DMM_HEAP_ALIGN) & ~(uintptr_t)(DMM_HEAP_ALIGN - 1);
            ASSERT_LE(fake + bs + 2 * W, (uintptr_t)v + 600);
            *(size_t *)(fake + W) = bs | 2;          // head: free, previous used
            next_link((void *)(fake + HDR)) = leak;   // whatever the attacker can write
            prev_link((void *)(fake + HDR)) = leak;
            *(size_t *)(fake + bs) = bs;              // the size tag (next block's foot)
            std::memset((void *)(fake + bs + W), 0, W);
            next_link(head) = forge(how, leak, blk_of(other), fake);
            // allocate until the heap is exhausted: the forged link is met
            // (the head is taken first, or scanned through)
            std::vector<char *> got;
            for (int i = 0; i < 2000; ++i) {
                char *q = (char *)dmm_heap_malloc(h, req);
                if (!q)
                    break;
                got.push_back(q);
                EXPECT_FALSE((uintptr_t)q + req > fake && (uintptr_t)q < fake + bs)
                    << "the fake block was handed out: the forged link passed";
                EXPECT_FALSE((uintptr_t)q + req > (uintptr_t)v && (uintptr_t)q < (uintptr_t)v + 600)
                    << "a live allocation was handed out again";
            }
            // good fit over power-of-two classes (halffit) never takes from
            // the request's own class: freeing the blocks between a and b
            // merges them, and the unlinks meet the forged link
            dmm_heap_free(h, g1);
            dmm_heap_free(h, g0);
            dmm_heap_free(h, g2);
            ASSERT_FALSE(errs.errors.empty()) << "the forged link was not reported";
            EXPECT_EQ(errs.errors[0].kind, DMM_ERR_FREE_LIST);
            EXPECT_TRUE(errs.errors[0].op == DMM_OP_MALLOC || errs.errors[0].op == DMM_OP_FREE);
            dmm_heap_destroy(h);
            if (HasFailure())
                return;
        }
    }
}

TEST(LinkForging, BackLinkNamingItsOwnBlockIsReported) {
    // The back-link checks compare the decoded word with the block they
    // expect without mapping a word that names its own block to NULL
    // (engine/bins.h, k_names).  Such a word (what kenc writes for "no
    // predecessor", here copied from a list head onto a block in the
    // middle of its list) must still fail the check that expects a real
    // predecessor: the free that merges with the list head and unlinks it
    // reports the damaged back link, and nothing is written through it.
    // With the back-link check of the unlink removed, this fails.
    const size_t req = 100;
    for (dmm_heap_preset p : {DMM_PRESET_TLSF, DMM_PRESET_DLMALLOC, DMM_PRESET_HALFFIT, DMM_PRESET_P2012}) {
        dmm_heap_config cfg = dmm_heap_preset_config(p);
        cfg.harden = DMM_HARDEN_CHECKED;
        if (cfg.links != DMM_LINKS_DOUBLY)
            continue;
        SCOPED_TRACE(dmm_heap_preset_name(p));
        ErrorLog errs;
        errs.attach(&cfg);
        Buffer buf(64 * 1024, 0);
        dmm_heap *h = nullptr;
        ASSERT_EQ(dmm_heap_init(&h, buf.data(), buf.size(), &cfg), DMM_OK);
        void *g0 = dmm_heap_malloc(h, req), *a = dmm_heap_malloc(h, req), *g1 = dmm_heap_malloc(h, req);
        void *b = dmm_heap_malloc(h, req), *g2 = dmm_heap_malloc(h, req);
        ASSERT_TRUE(g0 && a && g1 && b && g2);
        dmm_heap_free(h, a);
        dmm_heap_free(h, b);
        ASSERT_EQ(dmm_heap_check(h, nullptr), DMM_OK);
        void *head = next_link(a) == dmm__heap_link_encode(h, a, b) ? a : b;
        void *second = head == a ? b : a;
        if (next_link(head) != dmm__heap_link_encode(h, head, second) ||
            prev_link(second) != dmm__heap_link_encode(h, second, head)) {
            dmm_heap_destroy(h);
            continue; // a and b are not one doubly linked list in this preset
        }
        ASSERT_TRUE(errs.errors.empty());
        prev_link(second) = dmm__heap_link_encode(h, second, nullptr); // "no predecessor"
        dmm_heap_free(h, g1); // merges with a and b: unlinks the head, whose successor's back link lies
        ASSERT_FALSE(errs.errors.empty()) << "a back link naming its own block passed as the head's";
        EXPECT_EQ(errs.errors[0].kind, DMM_ERR_FREE_LIST);
        EXPECT_EQ(errs.errors[0].op, DMM_OP_FREE);
        // the heap goes on: what the report left is still usable
        for (int i = 0; i < 100; ++i) {
            void *q = dmm_heap_malloc(h, req);
            if (!q)
                break;
            EXPECT_FALSE((char *)q + req > (char *)g0 && (char *)q < (char *)g0 + req) << "a live block handed out";
            EXPECT_FALSE((char *)q + req > (char *)g2 && (char *)q < (char *)g2 + req) << "a live block handed out";
        }
        dmm_heap_destroy(h);
        if (HasFailure())
            return;
    }
}

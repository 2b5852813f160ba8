// tests/trace/test_trace_semantics.cpp - object discipline (validate),
// derived synchronisation (add_syncs) and the seed-001 randomised-free
// transform (randomize_frees).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "trace_test_util.h"

using namespace dmmt;

namespace {

// Builds a trace from a compact text (dmm text form without the header).
void from_text(dmm_trace *t, const std::string &body)
{
    std::string s = "dmmtrace 1\n" + body;
    dmm_trace_error e;
    if (dmm_trace_read_text(t, s.data(), s.size(), &e) != 0) {
        ADD_FAILURE() << "bad test trace: " << err_str(e);
        dmm_trace_init(t);
    }
}

std::string body(const dmm_trace *t)
{
    std::string s = to_bytes(t, true);
    size_t nl = s.find('\n');
    return s.substr(nl + 1);
}

// Expects validate to fail at op index `at` with a reason containing `why`.
void expect_invalid(const std::string &text, uint64_t at, const char *why)
{
    Trace t;
    from_text(t.get(), text);
    dmm_trace_error e;
    std::memset(&e, 0, sizeof e);
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), -1) << text;
    EXPECT_EQ(e.offset, at) << text << " -> " << err_str(e);
    EXPECT_EQ(e.is_line, 0);
    EXPECT_NE(std::string(e.reason).find(why), std::string::npos) << "reason: " << e.reason;
}

} // namespace

// ---- validate -------------------------------------------------------------------

TEST(TraceValidate, AcceptsWellFormedTraces)
{
    Trace t;
    from_text(t.get(), "0 m 1 8\n0 r 1 16\n0 c 2 2 8\n0 a 3 64 1 aligned_alloc\n0 f 1\n0 f 2\n0 f 3\n"
                       "0 m 1 8\n0 r 1 0\n0 m 1 4\n");
    dmm_trace_error e;
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);
    // objects still live at the end are fine (a program may exit without freeing)
    Trace u;
    from_text(u.get(), "0 m 1 8\n0 m 2 8\n");
    EXPECT_EQ(dmm_trace_validate(u.get(), &e), 0) << err_str(e);
    Trace empty;
    EXPECT_EQ(dmm_trace_validate(empty.get(), &e), 0);
}

TEST(TraceValidate, CatchesDoubleFree) { expect_invalid("0 m 1 8\n0 f 1\n0 m 2 8\n0 f 1\n", 3, "free"); }
TEST(TraceValidate, CatchesFreeOfUnknownId) { expect_invalid("0 m 1 8\n0 f 7\n", 1, "not live"); }
TEST(TraceValidate, CatchesReallocOfUnknownOrFreedId)
{
    expect_invalid("0 r 5 10\n", 0, "realloc");
    expect_invalid("0 m 5 10\n0 f 5\n0 r 5 20\n", 2, "realloc");
    expect_invalid("0 m 5 10\n0 r 5 0\n0 f 5\n", 2, "not live"); // realloc(p, 0) freed it
}
TEST(TraceValidate, CatchesAllocationOfLiveId)
{
    expect_invalid("0 m 1 8\n0 c 1 1 8\n", 1, "still live");
    expect_invalid("0 m 1 8\n1 a 1 16 8 memalign\n", 1, "still live");
}
TEST(TraceValidate, CatchesBadAlignment)
{
    expect_invalid("0 a 1 24 8 posix_memalign\n", 0, "power of two");
    expect_invalid("0 a 1 0 8 memalign\n", 0, "power of two");
}
TEST(TraceValidate, CatchesBadSyncs)
{
    // thread 3 does not exist (only 0 and 1)
    expect_invalid("0 m 1 8\n1 s 3 1\n1 f 1\n", 1, "thread");
    // a thread waiting for itself
    expect_invalid("0 m 1 8\n0 s 0 1\n", 1, "itself");
    // waiting for an operation its thread has not done yet in trace order:
    // thread 0 has done 1 operation at that point
    expect_invalid("0 m 1 8\n1 s 0 2\n0 m 2 8\n1 f 1\n", 1, "not done yet");
    // exactly the count done is fine
    Trace ok;
    from_text(ok.get(), "0 m 1 8\n0 m 2 8\n1 s 0 2\n1 f 1\n");
    dmm_trace_error e;
    EXPECT_EQ(dmm_trace_validate(ok.get(), &e), 0) << err_str(e);
}

TEST(TraceValidate, SyncCountsIgnoreSyncOperations)
{
    // thread 0 performs a sync and one allocation: its count is 1, not 2
    expect_invalid("1 m 9 8\n0 s 1 1\n0 m 1 8\n1 s 0 2\n", 3, "not done yet");
}

// ---- add_syncs --------------------------------------------------------------------

TEST(TraceAddSyncs, InsertsExactlyTheNeededSyncsForTwoThreads)
{
    Trace t;
    from_text(t.get(),
              "0 m 1 16\n"  // T0 #1
              "0 m 2 32\n"  // T0 #2
              "1 m 3 8\n"   // T1 #1
              "1 f 1\n"     // T1 frees T0's object 1: wait for T0 #1
              "0 r 3 64\n"  // T0 resizes T1's object 3: wait for T1 #1
              "0 f 2\n"     // same thread: nothing
              "1 f 3\n"     // object 3 last touched by T0 (#3, the realloc): wait for T0 #3
              "1 m 1 24\n"  // id 1 reused by the thread that freed it: nothing
              "0 f 1\n"     // T0 frees T1's new object 1 (T1 #4): wait for T1 #4
              "0 m 4 8\n"   // nothing
              "0 f 4\n");   // nothing
    ASSERT_EQ(dmm_trace_add_syncs(t.get()), 0);
    EXPECT_EQ(body(t.get()),
              "0 m 1 16\n"
              "0 m 2 32\n"
              "1 m 3 8\n"
              "1 s 0 1\n"
              "1 f 1\n"
              "0 s 1 1\n"
              "0 r 3 64\n"
              "0 f 2\n"
              "1 s 0 3\n"
              "1 f 3\n"
              "1 m 1 24\n"
              "0 s 1 4\n"
              "0 f 1\n"
              "0 m 4 8\n"
              "0 f 4\n");
    dmm_trace_error e;
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);

    // idempotent: existing syncs are removed and derived again
    std::string once = body(t.get());
    ASSERT_EQ(dmm_trace_add_syncs(t.get()), 0);
    EXPECT_EQ(body(t.get()), once);
}

TEST(TraceAddSyncs, AllocationOfAnIdFreedByAnotherThreadWaitsForTheFree)
{
    Trace t;
    from_text(t.get(), "0 m 7 8\n0 f 7\n1 m 7 8\n1 f 7\n");
    ASSERT_EQ(dmm_trace_add_syncs(t.get()), 0);
    EXPECT_EQ(body(t.get()), "0 m 7 8\n0 f 7\n1 s 0 2\n1 m 7 8\n1 f 7\n");
}

TEST(TraceAddSyncs, ReplacesWrongSyncsAndAddsNoneForOneThread)
{
    Trace t;
    from_text(t.get(), "0 m 1 8\n1 s 0 1\n0 r 1 9\n0 f 1\n");
    ASSERT_EQ(dmm_trace_add_syncs(t.get()), 0);
    EXPECT_EQ(body(t.get()), "0 m 1 8\n0 r 1 9\n0 f 1\n");
}

TEST(TraceAddSyncs, KeepsTimestampsAndMakesRandomTracesValid)
{
    Shape s;
    s.threads = 6;
    s.time = true;
    s.ops = 3000;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        Trace t;
        random_trace(t.get(), seed, s); // calls add_syncs
        dmm_trace_error e;
        ASSERT_EQ(dmm_trace_validate(t.get(), &e), 0) << "seed " << seed << ": " << err_str(e);
        // every operation on an object last touched by another thread is
        // immediately preceded by a sync on that thread; no other syncs
        std::map<uint64_t, uint32_t> last;
        size_t syncs = 0, needed = 0;
        for (size_t i = 0; i < t->n; i++) {
            const dmm_trace_op &op = t->ops[i];
            if (op.kind == DMM_T_SYNC) {
                syncs++;
                ASSERT_LT(i + 1, t->n);
                const dmm_trace_op &nx = t->ops[i + 1];
                EXPECT_EQ(op.tid, nx.tid);
                EXPECT_EQ(op.t_ns, nx.t_ns);
                ASSERT_TRUE(last.count(nx.id));
                EXPECT_EQ(op.arg, last[nx.id]);
                continue;
            }
            auto it = last.find(op.id);
            if (it != last.end() && it->second != op.tid) {
                needed++;
                ASSERT_GT(i, 0u);
                EXPECT_EQ(t->ops[i - 1].kind, DMM_T_SYNC) << "op " << i << " " << op_str(op);
            }
            last[op.id] = op.tid;
        }
        EXPECT_EQ(syncs, needed);
        EXPECT_GT(needed, 100u);
    }
}

// ---- randomize_frees ------------------------------------------------------------

namespace {

struct RfCheck {
    size_t frees_in = 0, frees_out = 0, allocs = 0;
    double mean_rel = 0; // mean relative free point (0 = right after last alloc/realloc, 1 = end)
};

// Checks every property of the transform; returns summary numbers.
RfCheck check_randomized(const dmm_trace *in, const dmm_trace *out)
{
    RfCheck c;
    dmm_trace_error e;
    EXPECT_EQ(dmm_trace_validate(out, &e), 0) << err_str(e);
    EXPECT_EQ(out->threads <= 1u, true);

    // the allocation subsequence (everything but frees, syncs and realloc-to-0),
    // with ids renamed consistently
    std::vector<dmm_trace_op> a_in, a_out;
    std::set<uint64_t> live_in;
    for (size_t i = 0; i < in->n; i++) {
        const dmm_trace_op &op = in->ops[i];
        if (op.kind == DMM_T_SYNC)
            continue;
        if (op.kind == DMM_T_FREE || (op.kind == DMM_T_REALLOC && op.size == 0)) {
            c.frees_in++;
            continue;
        }
        a_in.push_back(op);
    }
    for (size_t i = 0; i < out->n; i++) {
        const dmm_trace_op &op = out->ops[i];
        EXPECT_EQ(op.tid, 0u);
        EXPECT_NE(op.kind, DMM_T_SYNC);
        if (op.kind == DMM_T_FREE)
            c.frees_out++;
        else
            a_out.push_back(op);
    }
    EXPECT_EQ(c.frees_in, c.frees_out);
    EXPECT_EQ(a_in.size(), a_out.size());
    c.allocs = a_in.size();
    std::map<uint64_t, uint64_t> in_to_out; // current mapping (ids are reused in the input)
    for (size_t i = 0; i < a_in.size() && i < a_out.size(); i++) {
        const dmm_trace_op &x = a_in[i], &y = a_out[i];
        EXPECT_EQ(x.kind, y.kind) << i;
        EXPECT_EQ(x.size, y.size) << i;
        EXPECT_EQ(x.arg, y.arg) << i;
        EXPECT_EQ(x.sub, y.sub) << i;
        if (x.kind == DMM_T_REALLOC) {
            // a realloc chain stays one object
            EXPECT_EQ(in_to_out[x.id], y.id) << "realloc " << i << " moved to another object";
        } else {
            in_to_out[x.id] = y.id;
        }
    }
    // each free comes after the object's last alloc/realloc; measure where
    std::map<uint64_t, size_t> last_touch; // out id -> index in allocation subsequence
    size_t k = 0;
    double sum = 0;
    size_t nf = 0;
    for (size_t i = 0; i < out->n; i++) {
        const dmm_trace_op &op = out->ops[i];
        if (op.kind == DMM_T_FREE) {
            auto it = last_touch.find(op.id);
            EXPECT_NE(it, last_touch.end()) << "free before allocation at " << i;
            if (it != last_touch.end() && c.allocs > it->second + 1) {
                sum += double(k - 1 - it->second) / double(c.allocs - 1 - it->second);
                nf++;
            }
            continue;
        }
        last_touch[op.id] = k++;
    }
    c.mean_rel = nf ? sum / double(nf) : 0.5;
    return c;
}

} // namespace

TEST(TraceRandomizeFrees, KeepsAllocationsAndRedrawsFreePoints)
{
    Shape s;
    s.threads = 3;
    s.ops = 4000;
    s.time = true;
    s.meta = true;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        Trace in, out, again, other;
        random_trace(in.get(), seed, s);
        ASSERT_EQ(dmm_trace_randomize_frees(in.get(), out.get(), 1000 + seed), 0);
        RfCheck c = check_randomized(in.get(), out.get());
        EXPECT_GT(c.frees_out, 500u);
        // uniform between the last touch and the end: mean relative point ~ 0.5
        EXPECT_GT(c.mean_rel, 0.42);
        EXPECT_LT(c.mean_rel, 0.58);
        EXPECT_STREQ(out->meta, in->meta);
        EXPECT_EQ(out->has_time, in->has_time);

        // deterministic per seed, different across seeds
        ASSERT_EQ(dmm_trace_randomize_frees(in.get(), again.get(), 1000 + seed), 0);
        EXPECT_EQ(to_bytes(out.get(), false), to_bytes(again.get(), false));
        ASSERT_EQ(dmm_trace_randomize_frees(in.get(), other.get(), 2000 + seed), 0);
        EXPECT_NE(dmm_trace_hash(out.get()), dmm_trace_hash(other.get()));
    }
}

TEST(TraceRandomizeFrees, HandMadeReallocChain)
{
    // object 1 is resized twice; it must be freed after the second resize.
    Trace in;
    from_text(in.get(), "0 m 1 8\n0 m 2 8\n0 r 1 16\n0 f 2\n0 m 3 8\n0 r 1 32\n0 m 4 8\n0 f 1\n0 f 3\n");
    for (uint64_t seed = 1; seed <= 50; seed++) {
        Trace out;
        ASSERT_EQ(dmm_trace_randomize_frees(in.get(), out.get(), seed), 0);
        check_randomized(in.get(), out.get());
        // object 4 is never freed in the input: never freed in the output
        size_t frees = 0, pos_r32 = 0, pos_f1 = 0;
        uint64_t id1 = out->ops[0].id;
        for (size_t i = 0; i < out->n; i++) {
            const dmm_trace_op &op = out->ops[i];
            if (op.kind == DMM_T_FREE) {
                frees++;
                if (op.id == id1)
                    pos_f1 = i;
            }
            if (op.kind == DMM_T_REALLOC && op.size == 32)
                pos_r32 = i;
        }
        EXPECT_EQ(frees, 3u);
        EXPECT_GT(pos_f1, pos_r32);
    }
}

TEST(TraceRandomizeFrees, RefusesAnInvalidTrace)
{
    Trace in, out;
    from_text(in.get(), "0 m 1 8\n0 r 2 16\n");
    EXPECT_EQ(dmm_trace_randomize_frees(in.get(), out.get(), 1), -1);
    EXPECT_EQ(out->n, 0u);
}

// ---- thread numbering ----------------------------------------------------------------

// A hostile trace names thread 65535 only: readers renumber it, so nothing
// downstream sizes anything by the largest id (the old replayer started
// 65,536 threads for this).
TEST(TraceCompactThreads, ReadersNumberThreadsDensely)
{
    Trace t;
    from_text(t.get(), "65535 m 1 8\n65535 f 1\n");
    EXPECT_EQ(t->threads, 1u);
    EXPECT_EQ(body(t.get()), "0 m 1 8\n0 f 1\n");

    std::string bin = to_bytes(t.get(), false);
    Trace b;
    dmm_trace_error e;
    ASSERT_EQ(read_bin(b.get(), bin, &e), 0) << err_str(e);
    EXPECT_EQ(b->threads, 1u);
}

TEST(TraceCompactThreads, KeepsOrderAndRenumbersSyncs)
{
    Trace t;
    // threads 7 and 3 (and 40000): 3 -> 0, 7 -> 1, 40000 -> 2
    from_text(t.get(), "7 m 1 8\n3 s 7 1\n3 f 1\n40000 m 2 4\n7 m 3 8\n40000 f 2\n");
    EXPECT_EQ(t->threads, 3u);
    EXPECT_EQ(body(t.get()), "1 m 1 8\n0 s 1 1\n0 f 1\n2 m 2 4\n1 m 3 8\n2 f 2\n");
    dmm_trace_error e;
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);
}

TEST(TraceCompactThreads, SyncOnAThreadWithNoOperationsStaysInvalid)
{
    Trace t;
    from_text(t.get(), "5 m 1 8\n5 s 9 1\n5 f 1\n");
    EXPECT_EQ(t->threads, 1u);
    dmm_trace_error e;
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), -1);
    EXPECT_NE(std::string(e.reason).find("sync names a thread"), std::string::npos) << e.reason;
}

// ---- summary -------------------------------------------------------------------------

TEST(TraceSummarize, PeakLiveObjectsAndIncarnations)
{
    Trace t;
    from_text(t.get(), "0 m 1 100\n0 m 2 50\n0 r 1 300\n0 f 2\n0 m 2 10\n0 r 1 0\n0 m 1 5\n");
    dmm_trace_summary s;
    dmm_trace_error e;
    std::vector<uint64_t> slot(t->n);
    ASSERT_EQ(dmm_trace_summarize(t.get(), &s, slot.data(), &e), 0) << err_str(e);
    EXPECT_EQ(s.ops, 7u);
    EXPECT_EQ(s.objects, 4u); // 1, 2, 2 again, 1 again
    EXPECT_EQ(s.peak_live, 350u);
    EXPECT_EQ(s.peak_index, 2u);
    EXPECT_EQ(s.peak_objects, 2u);
    EXPECT_EQ(s.total_requested, 100u + 50u + 200u + 10u + 5u);
    EXPECT_EQ(s.max_request, 300u);
    EXPECT_EQ(s.end_live, 15u);
    EXPECT_EQ(s.end_objects, 2u);
    EXPECT_EQ(s.impossible, 0u);
    std::vector<uint64_t> want = {0, 1, 0, 1, 2, 0, 3};
    EXPECT_EQ(slot, want);
}

// A request no address space can hold fails everywhere: it adds nothing to
// live bytes (no overflow, no absurd peak), and is counted.
TEST(TraceSummarize, ImpossibleRequestsAddNoLiveBytes)
{
    Trace t;
    from_text(t.get(), "0 m 1 18446744073709551615\n0 m 2 100\n0 m 3 9223372036854775807\n"
                       "0 r 2 9223372036854775000\n0 f 1\n0 f 2\n0 f 3\n");
    dmm_trace_summary s;
    dmm_trace_error e;
    ASSERT_EQ(dmm_trace_summarize(t.get(), &s, nullptr, &e), 0) << err_str(e);
    // m 1 and m 3 cannot be granted; the realloc of 2 keeps live bytes at
    // PTRDIFF_MAX or below, so it counts (and fails in any real replay)
    EXPECT_EQ(s.impossible, 2u);
    EXPECT_EQ(s.peak_live, 9223372036854775000ull);
    EXPECT_EQ(s.end_live, 0u);
    EXPECT_EQ(s.max_request, 18446744073709551615ull);
}

// ---- synchronisation cover -------------------------------------------------------------

TEST(TraceSyncsCover, DirectSyncCoversCrossThreadFree)
{
    Trace covered, missing;
    from_text(covered.get(), "0 m 1 8\n1 s 0 1\n1 f 1\n");
    from_text(missing.get(), "0 m 1 8\n1 m 2 8\n1 f 1\n");
    EXPECT_EQ(dmm_trace_syncs_cover(covered.get()), 1);
    EXPECT_EQ(dmm_trace_syncs_cover(missing.get()), 0);
    ASSERT_EQ(dmm_trace_add_syncs(missing.get()), 0);
    EXPECT_EQ(dmm_trace_syncs_cover(missing.get()), 1);
}

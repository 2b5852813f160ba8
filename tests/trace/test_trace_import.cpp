// tests/trace/test_trace_import.cpp - the CS:APP malloc-lab .rep importer and
// the glibc mtrace() importer (on a log made by a real program, run here).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_test_util.h"

using namespace dmmt;

namespace {

std::string body(const dmm_trace *t)
{
    std::string s = to_bytes(t, true);
    return s.substr(s.find('\n') + 1);
}

int import_rep(dmm_trace *t, const std::string &s, dmm_trace_error *e)
{
    return dmm_trace_import_rep(t, s.data(), s.size(), e);
}
int import_mtrace(dmm_trace *t, const std::string &s, dmm_trace_error *e)
{
    return dmm_trace_import_mtrace(t, s.data(), s.size(), e);
}

} // namespace

// ---- CS:APP .rep --------------------------------------------------------------------

TEST(TraceImportRep, HandMadeFile)
{
    // In the malloc-lab layout: suggested heap size, number of ids, number
    // of operations, weight; then one operation per line.
    const std::string rep = "20000\n"
                            "3\n"
                            "8\n"
                            "1\n"
                            "a 0 2040\n"
                            "a 1 2040\n"
                            "f 1\n"
                            "r 0 4072\n"
                            "a 2 48\n"
                            "\n"
                            "  f 0\n"
                            "f 2\r\n"
                            "a 1 0\n";
    Trace t;
    dmm_trace_error e;
    ASSERT_EQ(import_rep(t.get(), rep, &e), 0) << err_str(e);
    EXPECT_EQ(body(t.get()), "meta source=rep\n"
                             "meta rep_free_null=0\n"
                             "meta rep_realloc_null=0\n"
                             "0 m 0 2040\n"
                             "0 m 1 2040\n"
                             "0 f 1\n"
                             "0 r 0 4072\n"
                             "0 m 2 48\n"
                             "0 f 0\n"
                             "0 f 2\n"
                             "0 m 1 0\n");
    EXPECT_EQ(t->threads, 1u);
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);
}

// Later malloc-lab trace sets free NULL ("f -1") and open objects with
// realloc(NULL) ("r" on an id that is not live).  Both import: the first as
// nothing, the second as the allocation it is; the result validates.
TEST(TraceImportRep, FreeNullAndReallocNull)
{
    const std::string rep = "1\n2\n3\n1\n"
                            "r 0 8\n"      // realloc(NULL, 8)
                            "f -1\n"       // free(NULL)
                            "r 0 24\n"     // a real realloc now
                            "f 0\n"
                            "r 0 16\n"     // freed: realloc(NULL) again
                            "r 0 0\n"      // realloc(p, 0) frees
                            "f -1\n";
    Trace t;
    dmm_trace_error e;
    ASSERT_EQ(import_rep(t.get(), rep, &e), 0) << err_str(e);
    EXPECT_EQ(body(t.get()), "meta source=rep\n"
                             "meta rep_free_null=2\n"
                             "meta rep_realloc_null=2\n"
                             "0 m 0 8\n"
                             "0 r 0 24\n"
                             "0 f 0\n"
                             "0 m 0 16\n"
                             "0 r 0 0\n");
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);
}

TEST(TraceImportRep, ErrorsNameTheLine)
{
    struct Bad {
        const char *text;
        uint64_t line;
        const char *why;
    } bad[] = {
        {"20000\n3\nx\n1\n", 3, "header"},
        {"20000\n3\n", 2, "truncated"},
        {"20000\n3\n8\n1\na 0\n", 5, "takes an id (a number >= 0) and a size"},
        {"20000\n3\n8\n1\na 0 10\nf\n", 6, "'f' takes an id"},
        {"20000\n3\n8\n1\na 0 10\nx 0\n", 6, "unknown"},
        {"20000\n3\n8\n1\na 0 10\na 1 -5\n", 6, "takes an id (a number >= 0) and a size"},
        {"20000\n3\n8\n1\na 0 10\nf -2\n", 6, "or -1 for NULL"},
        {"20000\n3\n8\n1\na 0 10\nf 1\n", 6, "id 1 is not allocated"},
        {"20000\n3\n8\n1\na 0 10\na 0 10\n", 6, "id 0 is already allocated"},
        {"20000\n3\n8\n1\na 0 10\na 1 5 7\n", 6, "expected"},
        {"20000\n3\n8\n1\n\n\na 0 99999999999999999999\n", 7, "takes an id (a number >= 0) and a size"},
    };
    for (const Bad &b : bad) {
        Trace t;
        dmm_trace_error e;
        std::memset(&e, 0, sizeof e);
        EXPECT_EQ(import_rep(t.get(), b.text, &e), -1) << b.text;
        EXPECT_TRUE(e.is_line) << b.text;
        EXPECT_EQ(e.offset, b.line) << b.text << " -> " << err_str(e);
        EXPECT_NE(std::string(e.reason).find(b.why), std::string::npos) << b.text << " -> " << e.reason;
        EXPECT_EQ(t->n, 0u);
    }
}

// ---- glibc mtrace -------------------------------------------------------------------

#ifdef DMMT_MTRACE_PROG

namespace {

// Runs mtrace_prog with MALLOC_TRACE set; returns the log ("" if mtrace did
// not work on this C library).
std::string run_mtrace_prog(const char *mode)
{
    std::string log = ::testing::TempDir() + "/dmm_mtrace_" + std::to_string(getpid()) + "_" + mode + ".log";
    std::remove(log.c_str());
    pid_t pid = fork();
    if (pid == 0) {
        setenv("MALLOC_TRACE", log.c_str(), 1);
        // glibc >= 2.34 keeps mtrace in libc_malloc_debug.so; older ones
        // have it in libc (the loader then ignores the missing preload).
        setenv("LD_PRELOAD", "libc_malloc_debug.so.0", 1);
        execl(DMMT_MTRACE_PROG, DMMT_MTRACE_PROG, mode, (char *)nullptr);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        ADD_FAILURE() << "mtrace_prog " << mode << " failed, status " << st;
        return "";
    }
    std::ifstream f(log, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::remove(log.c_str());
    return ss.str();
}

// What mtrace_prog.c does, as the importer must see it.
const char *kExpected = "meta source=mtrace\n"
                        "0 m 1 16\n0 m 2 32\n0 r 1 100\n0 m 3 5\n0 m 4 128\n0 m 5 40\n"
                        "0 f 1\n0 f 2\n0 f 3\n0 f 4\n0 f 5\n"
                        "0 m 6 24\n0 m 7 48\n0 m 8 72\n0 m 9 96\n0 m 10 120\n0 m 11 144\n0 m 12 168\n0 m 13 192\n"
                        "0 f 13\n0 f 12\n0 f 11\n0 f 10\n0 f 9\n0 f 8\n0 f 7\n0 f 6\n";

} // namespace

TEST(TraceImportMtrace, LogOfARealProgram)
{
    std::string log = run_mtrace_prog("plain");
    if (log.find("@ ") == std::string::npos)
        GTEST_SKIP() << "mtrace() produced no records on this C library";
    ASSERT_EQ(log.compare(0, 7, "= Start"), 0) << log.substr(0, 200);
    Trace t;
    dmm_trace_error e;
    ASSERT_EQ(import_mtrace(t.get(), log, &e), 0) << err_str(e) << "\n" << log;
    EXPECT_EQ(body(t.get()), kExpected) << log;
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);
    // the same through dmm_trace_load's detection
    std::string p = ::testing::TempDir() + "/dmm_mtrace_load_" + std::to_string(getpid()) + ".log";
    {
        std::ofstream f(p, std::ios::binary);
        f << log;
    }
    Trace l;
    ASSERT_EQ(dmm_trace_load(l.get(), p.c_str(), &e), 0) << err_str(e);
    EXPECT_EQ(dmm_trace_hash(l.get()), dmm_trace_hash(t.get()));
    std::remove(p.c_str());
}

// glibc logs a failed realloc as "! OLD SIZE" and a failed malloc as
// "+ (nil) SIZE".  Neither changes the heap, so the import must be the same
// as without them.
TEST(TraceImportMtrace, FailedAllocationsAreNotOperations)
{
    std::string log = run_mtrace_prog("fail");
    if (log.find("@ ") == std::string::npos)
        GTEST_SKIP() << "mtrace() produced no records on this C library";
    ASSERT_NE(log.find(" ! "), std::string::npos) << log;
    ASSERT_NE(log.find("(nil)"), std::string::npos) << log;
    Trace t;
    dmm_trace_error e;
    ASSERT_EQ(import_mtrace(t.get(), log, &e), 0) << err_str(e);
    EXPECT_EQ(body(t.get()), kExpected);
}

#endif // DMMT_MTRACE_PROG

TEST(TraceImportMtrace, HandWrittenRecords)
{
    const std::string log = "= Start\n"
                            "@ ./a.out:[0x4005d6] + 0x602010 0x64\n"
                            "@ [0x7f00] + 0x602080 0x10\n"
                            "@ ./a.out:(main+0x1c)[0x4005e2] < 0x602010\n"
                            "@ ./a.out:(main+0x1c)[0x4005e2] > 0x603000 0xc8\n"
                            "@ ./a.out:[0x4005f0] - 0x603000\n"
                            "@ ./a.out:[0x4005f1] - 0x7777\n"  // not allocated while tracing: skipped
                            "@ ./a.out:[0x4005f2] + 0x602080 0x20\n" // address reused without a free: old object ends
                            "@ ./a.out:[0x4005f3] < 0x602080\n"
                            "@ ./a.out:[0x4005f3] - 0x602080\n" // '<' without '>': the object is gone
                            "= End\n";
    Trace t;
    dmm_trace_error e;
    ASSERT_EQ(import_mtrace(t.get(), log, &e), 0) << err_str(e);
    EXPECT_EQ(body(t.get()), "meta source=mtrace\n"
                             "0 m 1 100\n"
                             "0 m 2 16\n"
                             "0 r 1 200\n"
                             "0 f 1\n"
                             "0 f 2\n"
                             "0 m 3 32\n"
                             "0 f 3\n");
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);
}

TEST(TraceImportMtrace, ErrorsNameTheLine)
{
    struct Bad {
        const char *text;
        uint64_t line;
    } bad[] = {
        {"= Start\nhello world\n", 2},
        {"= Start\n@ ./a:[0x1] + 0x10\n", 2},         // no size
        {"= Start\n@ ./a:[0x1] + zz 0x10\n", 2},      // bad address
        {"= Start\n@ ./a:[0x1] * 0x10 0x10\n", 2},    // unknown op
        {"= Start\n\n@ ./a:[0x1] + 0x10 0x8\n@ x\n", 4},
        {"= Start\n= End\n", 2}, // no records at all
    };
    for (const Bad &b : bad) {
        Trace t;
        dmm_trace_error e;
        std::memset(&e, 0, sizeof e);
        EXPECT_EQ(import_mtrace(t.get(), b.text, &e), -1) << b.text;
        EXPECT_TRUE(e.is_line) << b.text;
        EXPECT_EQ(e.offset, b.line) << b.text << " -> " << err_str(e);
        EXPECT_NE(e.reason[0], '\0');
        EXPECT_EQ(t->n, 0u);
    }
}

// The caller part may contain spaces (an executable path with a space), so
// the operation is found from the end of the line; a line with absurdly many
// fields is an error, never a crash or an out-of-bounds read.
TEST(TraceImportMtrace, CallersWithSpacesAndTooManyFields)
{
    Trace t;
    dmm_trace_error e;
    const std::string ok = "@ /my dir/a b:[0x1] + 0x10 0x8\n"
                           "@ /my dir/a b:(f g+0x1)[0x2] < 0x10\n"
                           "@ /my dir/a b:(f g+0x1)[0x2] > 0x20 0x18\n"
                           "@ /my dir/a b:[0x3] - 0x20\n"
                           "@ [0x4] - (nil)\n"; // free(NULL)
    ASSERT_EQ(import_mtrace(t.get(), ok, &e), 0) << err_str(e);
    EXPECT_EQ(body(t.get()), "meta source=mtrace\n0 m 1 8\n0 r 1 24\n0 f 1\n");

    std::string many = "@";
    for (int i = 0; i < 40; i++)
        many += " x";
    many += " + 0x10 0x8\n";
    Trace u;
    std::memset(&e, 0, sizeof e);
    EXPECT_EQ(import_mtrace(u.get(), "= Start\n" + many, &e), -1);
    EXPECT_TRUE(e.is_line);
    EXPECT_EQ(e.offset, 2u) << err_str(e);
    EXPECT_NE(std::string(e.reason).find("fields"), std::string::npos) << err_str(e);

    // '<' takes only an address: a stray size is an error, on its line
    Trace w;
    std::memset(&e, 0, sizeof e);
    EXPECT_EQ(import_mtrace(w.get(), "@ a + 0x10 0x8\n@ a b c < 0x10 0x20\n", &e), -1);
    EXPECT_EQ(e.offset, 2u) << err_str(e);
}

TEST(TraceImportMtrace, MissedFreesAndReallocToZero)
{
    // '>' onto an address that is still live ends the old object first;
    // '<' not followed by '>' is a realloc that freed the object
    const std::string log = "@ a + 0x10 0x8\n"
                            "@ a + 0x20 0x8\n"
                            "@ a < 0x10\n"
                            "@ a > 0x20 0x40\n" // 0x20 was still object 2
                            "@ a < 0x20\n"
                            "@ a + 0x30 0x4\n"; // the '<' freed object 1
    Trace t;
    dmm_trace_error e;
    ASSERT_EQ(import_mtrace(t.get(), log, &e), 0) << err_str(e);
    EXPECT_EQ(body(t.get()), "meta source=mtrace\n0 m 1 8\n0 m 2 8\n0 f 2\n0 r 1 64\n0 f 1\n0 m 3 4\n");
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);
}

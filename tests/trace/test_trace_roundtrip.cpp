// tests/trace/test_trace_roundtrip.cpp - binary <-> text <-> binary on seeded
// random traces; the hash identifies a trace in every form; load/save pick
// the right reader and writer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "trace_test_util.h"

using namespace dmmt;

namespace {

uint64_t base_seed()
{
    const char *s = std::getenv("DMM_TEST_SEED");
    return s ? std::strtoull(s, nullptr, 0) : 20240611ull;
}

struct Case {
    const char *name;
    Shape shape;
};

std::vector<Case> cases()
{
    std::vector<Case> v;
    Shape s;
    v.push_back({"single", s});
    s.threads = 4;
    v.push_back({"threads4", s});
    s.time = true;
    v.push_back({"threads4_time", s});
    s.meta = true;
    v.push_back({"threads4_time_meta", s});
    s.huge_values = true;
    s.threads = 300; // thread ids above one varint byte
    v.push_back({"huge_values", s});
    Shape e;
    e.ops = 0;
    v.push_back({"empty", e});
    e.time = true;
    e.meta = true;
    v.push_back({"empty_time_meta", e});
    return v;
}

} // namespace

TEST(TraceRoundTrip, BinaryTextBinaryOnRandomTraces)
{
    for (const Case &c : cases()) {
        for (uint64_t k = 0; k < 6; k++) {
            uint64_t seed = base_seed() + k;
            SCOPED_TRACE(std::string(c.name) + " seed " + std::to_string(seed));
            Trace orig;
            random_trace(orig.get(), seed, c.shape);
            dmm_trace_error e;
            ASSERT_EQ(dmm_trace_validate(orig.get(), &e), 0) << err_str(e);
            // readers number threads densely; the random shapes use sparse ids
            ASSERT_EQ(dmm_trace_compact_threads(orig.get()), 0);
            ASSERT_EQ(dmm_trace_validate(orig.get(), &e), 0) << err_str(e);

            std::string bin = to_bytes(orig.get(), false);
            Trace b;
            ASSERT_EQ(read_bin(b.get(), bin, &e), 0) << err_str(e);
            EXPECT_EQ(first_diff(orig.get(), b.get()), -1);
            EXPECT_EQ(b->has_time, orig->has_time);
            EXPECT_EQ(b->threads, orig->threads);
            EXPECT_STREQ(b->meta ? b->meta : "", orig->meta ? orig->meta : "");

            std::string txt = to_bytes(b.get(), true);
            Trace x;
            ASSERT_EQ(read_txt(x.get(), txt, &e), 0) << err_str(e) << "\n" << txt.substr(0, 400);
            EXPECT_EQ(first_diff(orig.get(), x.get()), -1);
            EXPECT_EQ(x->has_time, orig->has_time);
            EXPECT_STREQ(x->meta ? x->meta : "", orig->meta ? orig->meta : "");

            // and back: byte-identical binary, byte-identical text
            EXPECT_EQ(to_bytes(x.get(), false), bin);
            EXPECT_EQ(to_bytes(x.get(), true), txt);

            uint64_t h = dmm_trace_hash(orig.get());
            EXPECT_EQ(dmm_trace_hash(b.get()), h);
            EXPECT_EQ(dmm_trace_hash(x.get()), h);
            if (c.shape.ops > 0) {
                EXPECT_NE(h, 0xcbf29ce484222325ull);
            }
        }
    }
}

TEST(TraceRoundTrip, HashIgnoresTimeAndMetaButNotOperations)
{
    Shape s;
    s.threads = 2;
    s.time = true;
    s.meta = true;
    Trace a, b;
    random_trace(a.get(), 7, s);
    random_trace(b.get(), 7, s);
    uint64_t h = dmm_trace_hash(a.get());
    ASSERT_EQ(dmm_trace_hash(b.get()), h);
    for (size_t i = 0; i < b->n; i++)
        b->ops[i].t_ns += 12345;
    dmm_trace_set_meta(b.get(), "other=1\n");
    b->has_time = 0;
    EXPECT_EQ(dmm_trace_hash(b.get()), h) << "timestamps and metadata are not part of a trace's identity";

    // every field of an operation is
    size_t mid = b->n / 2;
    b->ops[mid].size ^= 1;
    EXPECT_NE(dmm_trace_hash(b.get()), h);
    b->ops[mid].size ^= 1;
    b->ops[mid].tid ^= 1;
    EXPECT_NE(dmm_trace_hash(b.get()), h);
    b->ops[mid].tid ^= 1;
    b->ops[mid].id += 1;
    EXPECT_NE(dmm_trace_hash(b.get()), h);
    b->ops[mid].id -= 1;
    b->ops[mid].arg += 1;
    EXPECT_NE(dmm_trace_hash(b.get()), h);
    b->ops[mid].arg -= 1;
    EXPECT_EQ(dmm_trace_hash(b.get()), h);
    // order matters
    std::swap(b->ops[0], b->ops[1]);
    EXPECT_NE(dmm_trace_hash(b.get()), h);
}

TEST(TraceRoundTrip, KnownBinaryEncoding)
{
    // The exact bytes of docs/trace-format.md's worked example.
    Trace t;
    push(t.get(), make_op(DMM_T_MALLOC, 0, 1, 300, 0, 0, 0));
    push(t.get(), make_op(DMM_T_FREE, 1, 1, 0, 0, 0, 0));
    push(t.get(), make_op(DMM_T_SYNC, 1, 0, 1, 0, 0, 0));
    push(t.get(), make_op(DMM_T_ALIGNED, 1, 2, 64, 16, DMM_TA_MEMALIGN, 0));
    std::string bin = to_bytes(t.get(), false);
    const unsigned char want[] = {'D', 'M', 'M', 'T', 'R', 'A', 'C', 'E', 1, 0, 0, 0,
                                  0x00,                   // metadata length
                                  0x04,                   // 4 operations
                                  0x01, 0x01, 0xac, 0x02, // MALLOC id 1 size 300
                                  0x15, 0x01, 0x01,       // FREE, new thread 1, id 1
                                  0x06, 0x00, 0x01,       // SYNC thread 0 count 1
                                  0x04, 0x02, 0x02, 0x10, 0x40}; // ALIGNED memalign id 2 align 16 size 64
    ASSERT_EQ(bin.size(), sizeof want);
    EXPECT_EQ(0, std::memcmp(bin.data(), want, sizeof want));

    // with timestamps: 0x20 on every op, zigzag deltas (down by 5 = 9)
    Trace tt;
    tt->has_time = 1;
    push(tt.get(), make_op(DMM_T_MALLOC, 0, 1, 8, 0, 0, 10));
    push(tt.get(), make_op(DMM_T_FREE, 0, 1, 0, 0, 0, 5));
    std::string b2 = to_bytes(tt.get(), false);
    const unsigned char want2[] = {'D', 'M', 'M', 'T', 'R', 'A', 'C', 'E', 1, 1, 0, 0, 0x00, 0x02,
                                   0x21, 0x14, 0x01, 0x08, // MALLOC, +10 -> 20, id 1, size 8
                                   0x25, 0x09, 0x01};      // FREE, -5 -> 9, id 1
    ASSERT_EQ(b2.size(), sizeof want2);
    EXPECT_EQ(0, std::memcmp(b2.data(), want2, sizeof want2));
    std::string txt = to_bytes(tt.get(), true);
    EXPECT_EQ(txt, "dmmtrace 1\ntime on\n0 m 1 8 @10\n0 f 1 @5\n");
}

TEST(TraceRoundTrip, TextFormAsDocumented)
{
    const char *doc = "dmmtrace 1\n"
                      "# a comment\n"
                      "meta program=demo\n"
                      "\n"
                      "0 m 1 24\r\n"
                      "0 c 2 4 64\n"
                      "1\ts 0 2\n"
                      "1 r 1 100\n"
                      "1 a 3 64 256 posix_memalign\n"
                      "1 a 4 4096 10 pvalloc\n"
                      "0 s 1 3\n"
                      "0 f 1\n"
                      "0 f 2\n";
    Trace t;
    dmm_trace_error e;
    ASSERT_EQ(dmm_trace_read_text(t.get(), doc, std::strlen(doc), &e), 0) << err_str(e);
    ASSERT_EQ(t->n, 9u);
    EXPECT_EQ(t->threads, 2u);
    EXPECT_STREQ(t->meta, "program=demo\n");
    EXPECT_EQ(op_str(t->ops[1]), op_str(make_op(DMM_T_CALLOC, 0, 2, 64, 4)));
    EXPECT_EQ(op_str(t->ops[2]), op_str(make_op(DMM_T_SYNC, 1, 0, 2, 0)));
    EXPECT_EQ(op_str(t->ops[4]), op_str(make_op(DMM_T_ALIGNED, 1, 3, 256, 64, DMM_TA_POSIX_MEMALIGN)));
    EXPECT_EQ(op_str(t->ops[5]), op_str(make_op(DMM_T_ALIGNED, 1, 4, 10, 4096, DMM_TA_PVALLOC)));
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);
}

class TraceFiles : public ::testing::Test {
protected:
    std::string dir = ::testing::TempDir();
    std::string path(const char *name) { return dir + "/dmm_trace_test_" + std::to_string(getpid()) + "_" + name; }
    static void write_file(const std::string &p, const std::string &data)
    {
        std::ofstream f(p, std::ios::binary);
        f << data;
    }
    static std::string read_file(const std::string &p)
    {
        std::ifstream f(p, std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }
};

TEST_F(TraceFiles, SaveChoosesFormatByExtensionAndLoadDetectsIt)
{
    Shape s;
    s.threads = 3;
    s.time = true;
    s.meta = true;
    Trace t;
    random_trace(t.get(), 99, s);
    std::string pb = path("a.dmmt"), pt = path("a.txt");
    ASSERT_EQ(dmm_trace_save(t.get(), pb.c_str()), 0);
    ASSERT_EQ(dmm_trace_save(t.get(), pt.c_str()), 0);
    EXPECT_EQ(read_file(pb).compare(0, 8, "DMMTRACE"), 0);
    EXPECT_EQ(read_file(pt).compare(0, 11, "dmmtrace 1\n"), 0);
    for (const std::string &p : {pb, pt}) {
        Trace l;
        dmm_trace_error e;
        ASSERT_EQ(dmm_trace_load(l.get(), p.c_str(), &e), 0) << p << ": " << err_str(e);
        EXPECT_EQ(first_diff(t.get(), l.get()), -1) << p;
        EXPECT_EQ(dmm_trace_hash(l.get()), dmm_trace_hash(t.get())) << p;
        std::remove(p.c_str());
    }
}

TEST_F(TraceFiles, LoadDetectsRepAndMtraceAndRejectsUnknown)
{
    std::string pr = path("x.rep"), pm = path("x.mtrace"), pu = path("x.bin"), pe = path("empty");
    write_file(pr, "1000\n2\n4\n1\na 0 10\na 1 20\nf 0\nf 1\n");
    write_file(pm, "= Start\n@ ./p:[0x1] + 0x10 0x8\n@ ./p:[0x2] - 0x10\n= End\n");
    write_file(pu, std::string("\x7f" "ELF\x02\x01\x01", 7));
    write_file(pe, "");
    Trace r, m, u, z;
    dmm_trace_error e;
    ASSERT_EQ(dmm_trace_load(r.get(), pr.c_str(), &e), 0) << err_str(e);
    EXPECT_EQ(r->n, 4u);
    ASSERT_EQ(dmm_trace_load(m.get(), pm.c_str(), &e), 0) << err_str(e);
    EXPECT_EQ(m->n, 2u);
    EXPECT_EQ(dmm_trace_load(u.get(), pu.c_str(), &e), -1);
    EXPECT_NE(std::string(e.reason).find("unknown trace format"), std::string::npos) << e.reason;
    EXPECT_EQ(dmm_trace_load(z.get(), pe.c_str(), &e), -1);
    std::string missing = path("does_not_exist");
    EXPECT_EQ(dmm_trace_load(z.get(), missing.c_str(), &e), -1);
    EXPECT_NE(std::string(e.reason).find("cannot open"), std::string::npos) << e.reason;
    for (const std::string &p : {pr, pm, pu, pe})
        std::remove(p.c_str());
}

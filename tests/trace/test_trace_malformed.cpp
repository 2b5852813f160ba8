// tests/trace/test_trace_malformed.cpp - hostile and broken input: every
// truncation and every single-byte corruption of a valid binary file,
// crafted headers (huge counts, overlong varints, bad version), and text
// errors that must name the line.  Run under ASan/UBSan in the asan preset.
#include <gtest/gtest.h>

#include "trace_test_util.h"

using namespace dmmt;

namespace {

// A small binary trace that uses every operation kind, two threads with
// syncs, timestamps (including a step back), metadata and multi-byte varints.
std::string small_binary()
{
    Trace t;
    t->has_time = 1;
    dmm_trace_set_meta(t.get(), "program=tiny\n");
    push(t.get(), make_op(DMM_T_MALLOC, 0, 1, 300, 0, 0, 100));
    push(t.get(), make_op(DMM_T_CALLOC, 0, 2, 64, 4, 0, 250));
    push(t.get(), make_op(DMM_T_ALIGNED, 1, 3, 100, 64, DMM_TA_POSIX_MEMALIGN, 240));
    push(t.get(), make_op(DMM_T_SYNC, 1, 0, 0, 1, 0, 260));
    push(t.get(), make_op(DMM_T_REALLOC, 1, 1, 70000, 0, 0, 300));
    push(t.get(), make_op(DMM_T_FREE, 0, 2, 0, 0, 0, 400));
    push(t.get(), make_op(DMM_T_SYNC, 0, 0, 2, 1, 0, 410));
    push(t.get(), make_op(DMM_T_FREE, 0, 3, 0, 0, 0, 500));
    return to_bytes(t.get(), false);
}

// Header bytes followed by a metadata length of 0 and the given body.
std::string with_header(const std::string &after_magic, const std::string &rest)
{
    return std::string("DMMTRACE", 8) + after_magic + rest;
}

void expect_binary_error(const std::string &data, uint64_t offset, const char *why)
{
    Trace t;
    dmm_trace_error e;
    std::memset(&e, 0, sizeof e);
    EXPECT_EQ(read_bin(t.get(), data, &e), -1);
    EXPECT_FALSE(e.is_line);
    EXPECT_EQ(e.offset, offset) << err_str(e);
    EXPECT_NE(std::string(e.reason).find(why), std::string::npos) << err_str(e);
    EXPECT_EQ(t->n, 0u);
    EXPECT_EQ(t->ops, nullptr);
    EXPECT_EQ(t->meta, nullptr);
}

void expect_text_error(const std::string &text, uint64_t line, const char *why)
{
    Trace t;
    dmm_trace_error e;
    std::memset(&e, 0, sizeof e);
    EXPECT_EQ(read_txt(t.get(), text, &e), -1) << text;
    EXPECT_TRUE(e.is_line) << text;
    EXPECT_EQ(e.offset, line) << text << " -> " << err_str(e);
    EXPECT_NE(std::string(e.reason).find(why), std::string::npos) << text << " -> " << err_str(e);
    EXPECT_EQ(t->n, 0u);
    EXPECT_EQ(t->meta, nullptr);
}

} // namespace

TEST(TraceMalformed, EveryTruncationIsAnErrorWithAnOffset)
{
    std::string full = small_binary();
    ASSERT_GT(full.size(), 40u);
    {
        Trace ok;
        dmm_trace_error e;
        ASSERT_EQ(read_bin(ok.get(), full, &e), 0) << err_str(e);
        ASSERT_EQ(ok->n, 8u);
    }
    for (size_t len = 0; len < full.size(); len++) {
        // a private copy, so ASan sees any read past the end
        std::vector<uint8_t> buf(full.begin(), full.begin() + (long)len);
        Trace t;
        dmm_trace_error e;
        std::memset(&e, 0, sizeof e);
        int rc = dmm_trace_read_binary(t.get(), buf.data(), buf.size(), &e);
        EXPECT_EQ(rc, -1) << "prefix of " << len << " bytes accepted";
        EXPECT_FALSE(e.is_line);
        EXPECT_LE(e.offset, len) << err_str(e);
        EXPECT_NE(e.reason[0], '\0') << len;
        EXPECT_EQ(t->n, 0u);
        if (len >= 14) { // after the header and metadata length: the reason says what is missing
            EXPECT_TRUE(std::string(e.reason).find("truncated") != std::string::npos ||
                        std::string(e.reason).find("exceeds the file") != std::string::npos ||
                        std::string(e.reason).find("larger than the file") != std::string::npos)
                << len << ": " << err_str(e);
        }
    }
}

TEST(TraceMalformed, EveryCorruptedByteParsesOrFails)
{
    std::string full = small_binary();
    size_t accepted = 0, rejected = 0;
    for (size_t i = 0; i < full.size(); i++) {
        for (uint8_t x : {0x01, 0x80, 0xff, 0x7f}) {
            std::vector<uint8_t> buf(full.begin(), full.end());
            buf[i] ^= x;
            Trace t;
            dmm_trace_error e;
            std::memset(&e, 0, sizeof e);
            int rc = dmm_trace_read_binary(t.get(), buf.data(), buf.size(), &e);
            if (rc == 0) {
                accepted++;
                // whatever it parsed is a trace the writer can reproduce
                std::string again = to_bytes(t.get(), false);
                Trace u;
                ASSERT_EQ(read_bin(u.get(), again, &e), 0) << "byte " << i << " ^ " << int(x) << ": " << err_str(e);
                EXPECT_EQ(first_diff(t.get(), u.get()), -1);
                dmm_trace_validate(t.get(), &e); // must not crash
            } else {
                rejected++;
                EXPECT_EQ(rc, -1);
                EXPECT_LE(e.offset, buf.size()) << err_str(e);
                EXPECT_NE(e.reason[0], '\0');
                EXPECT_EQ(t->n, 0u);
            }
        }
    }
    EXPECT_GT(rejected, full.size()); // most flips are caught
    EXPECT_GT(accepted, 0u);          // and some (ids, sizes) are just other valid traces
}

TEST(TraceMalformed, CraftedHeaders)
{
    const std::string v1("\x01\x00\x00\x00", 4);
    expect_binary_error("", 0, "magic");
    expect_binary_error("DMMTRACX" + v1 + std::string("\0\0", 2), 0, "magic");
    expect_binary_error(with_header(std::string("\x02\x00\x00\x00", 4), std::string("\0\0", 2)), 8, "version");
    expect_binary_error(with_header(std::string("\x00\x00\x00\x00", 4), std::string("\0\0", 2)), 8, "version");
    expect_binary_error(with_header(std::string("\x01\x02\x00\x00", 4), std::string("\0\0", 2)), 9, "flags");
    // metadata longer than the file
    expect_binary_error(with_header(v1, std::string("\x10" "abc", 4)), 12, "metadata length");
    // metadata length that does not fit in 64 bits / is overlong
    expect_binary_error(with_header(v1, std::string(10, '\xff') + std::string("\x01", 1)), 12, "64 bits");
    expect_binary_error(with_header(v1, std::string(9, '\x80') + std::string("\x81\x00", 2)), 12, "10 bytes");
    expect_binary_error(with_header(v1, std::string(5, '\x80')), 12, "truncated");
}

TEST(TraceMalformed, HugeOperationCountsAreRefusedBeforeAllocating)
{
    const std::string v1("\x01\x00\x00\x00", 4);
    // The count varint starts at offset 13 and is 10 bytes long here; the
    // reader names an offset inside [13, 23] (today: the byte after it).
    auto expect_count_error = [](const std::string &data, const char *why) {
        Trace t;
        dmm_trace_error e;
        std::memset(&e, 0, sizeof e);
        EXPECT_EQ(read_bin(t.get(), data, &e), -1);
        EXPECT_GE(e.offset, 13u) << err_str(e);
        EXPECT_LE(e.offset, 23u) << err_str(e);
        EXPECT_NE(std::string(e.reason).find(why), std::string::npos) << err_str(e);
        EXPECT_EQ(t->ops, nullptr);
    };
    // 2^63 - 1 operations announced in a 26-byte file
    expect_count_error(with_header(v1, std::string("\x00", 1) + std::string(9, '\xff') + std::string("\x00", 1) +
                                           std::string("\x01\x01\x08", 3)),
                       "operation count");
    // 2^64 - 1
    expect_count_error(with_header(v1, std::string("\x00", 1) + std::string(9, '\xff') + std::string("\x01", 1)),
                       "operation count");
    // an 11-byte varint: named at its first byte
    expect_binary_error(with_header(v1, std::string("\x00", 1) + std::string(10, '\x80') + std::string("\x00", 1)),
                        13, "operation count");
    // a count one larger than what follows (3 ops present, 4 announced)
    std::string ops("\x01\x01\x08\x01\x02\x08\x05\x01", 8);
    expect_binary_error(with_header(v1, std::string("\x00\x04", 2) + ops), 22, "truncated");
    // and exactly right parses
    Trace t;
    dmm_trace_error e;
    EXPECT_EQ(read_bin(t.get(), with_header(v1, std::string("\x00\x03", 2) + ops), &e), 0) << err_str(e);
    EXPECT_EQ(t->n, 3u);
}

TEST(TraceMalformed, CraftedOperations)
{
    const std::string h = with_header(std::string("\x01\x00\x00\x00", 4), std::string("\x00", 1));
    const std::string ht = with_header(std::string("\x01\x01\x00\x00", 4), std::string("\x00", 1));
    // operation bytes start at offset 14
    expect_binary_error(h + std::string("\x01\x00\x00", 3), 14, "unknown kind");  // kind 0
    expect_binary_error(h + std::string("\x01\x07\x00", 3), 14, "unknown kind");  // kind 7
    expect_binary_error(h + std::string("\x01\x4f\x00", 3), 14, "unknown flag");  // bit 6
    expect_binary_error(h + std::string("\x01\x21\x00\x01\x08", 5), 14, "timestamp flag"); // time bit, no header flag
    expect_binary_error(ht + std::string("\x01\x01\x01\x08", 4), 14, "timestamp flag");    // header flag, no time bit
    // thread id 65536 (the limit) and an overlong thread id
    expect_binary_error(h + std::string("\x01\x11\x80\x80\x04\x01\x08", 7), 14, "thread id");
    expect_binary_error(h + std::string("\x01\x11", 2) + std::string(10, '\x80') + std::string("\x00\x01\x08", 3), 15,
                        "thread id");
    // aligned with an unknown API byte, and truncated right after the op byte
    expect_binary_error(h + std::string("\x01\x04\x05\x01\x10\x08", 6), 14, "aligned API");
    expect_binary_error(h + std::string("\x01\x04", 2), 13, "larger than the file"); // names the count itself
    // a size that overflows 64 bits: the error names the varint's offset
    expect_binary_error(h + std::string("\x01\x01\x01", 3) + std::string(9, '\xff') + std::string("\x02", 1), 16,
                        "size");
    // trailing data after the last operation
    expect_binary_error(h + std::string("\x01\x05\x01\x00", 4), 16, "trailing");
    // the maximum 64-bit values are legal
    Trace t;
    dmm_trace_error e;
    std::string maxv = std::string(9, '\xff') + std::string("\x01", 1);
    ASSERT_EQ(read_bin(t.get(), h + std::string("\x01\x01", 2) + maxv + maxv, &e), 0) << err_str(e);
    EXPECT_EQ(t->ops[0].id, UINT64_MAX);
    EXPECT_EQ(t->ops[0].size, UINT64_MAX);
    // non-canonical (overlong but within 10 bytes) varints are accepted;
    // the writer then produces the canonical form
    Trace o;
    ASSERT_EQ(read_bin(o.get(), h + std::string("\x01\x05\x81\x80\x00", 5), &e), 0) << err_str(e);
    EXPECT_EQ(o->ops[0].id, 1u);
    EXPECT_EQ(to_bytes(o.get(), false), h + std::string("\x01\x05\x01", 3));
}

TEST(TraceMalformed, TextErrorsNameTheLine)
{
    expect_text_error("", 1, "empty");
    expect_text_error("# only a comment\n\n", 1, "empty");
    expect_text_error("dmmtrace\n", 1, "first line");
    expect_text_error("hello 1\n", 1, "first line");
    expect_text_error("\n# c\ndmmtrace 2\n", 3, "version");
    expect_text_error("dmmtrace 1\n0 m 1 8\n0 x 1 8\n", 3, "unknown operation");
    expect_text_error("dmmtrace 1\n0 m 1 8\n0 mm 1 8\n", 3, "unknown operation");
    expect_text_error("dmmtrace 1\n0 m 1\n", 2, "takes 2 arguments");
    expect_text_error("dmmtrace 1\n0 f 1 2\n", 2, "takes 1 arguments");
    expect_text_error("dmmtrace 1\n0 m 1 8 9 9 9 9\n", 2, "expected");
    expect_text_error("dmmtrace 1\n0 m\n", 2, "expected");
    expect_text_error("dmmtrace 1\n\n\n0 m 1 -8\n", 4, "bad number");
    expect_text_error("dmmtrace 1\n0 m 1 18446744073709551616\n", 2, "bad number");
    expect_text_error("dmmtrace 1\n0 m 1 0x10\n", 2, "bad number");
    expect_text_error("dmmtrace 1\n65536 m 1 8\n", 2, "thread id");
    expect_text_error("dmmtrace 1\nx m 1 8\n", 2, "thread id");
    expect_text_error("dmmtrace 1\n0 a 1 16 8 mmap\n", 2, "aligned API");
    expect_text_error("dmmtrace 1\n0 m 1 8 @5\n", 2, "time on");
    expect_text_error("dmmtrace 1\ntime on\n0 m 1 8 @5\n0 f 1\n", 4, "missing timestamp");
    expect_text_error("dmmtrace 1\ntime on\n0 m 1 8 @x\n", 3, "timestamp");
    expect_text_error("dmmtrace 1\nmeta a=1\n0 m 1 8\ngarbage\n", 4, "expected");
    // a line count over many lines stays exact (CRLF files too)
    std::string big = "dmmtrace 1\r\n";
    for (int i = 0; i < 1000; i++)
        big += "0 m " + std::to_string(i) + " 8\r\n";
    big += "0 q 1\r\n";
    expect_text_error(big, 1002, "unknown operation");
}

TEST(TraceMalformed, TextReaderHandlesNoFinalNewlineAndBinaryGarbage)
{
    Trace t;
    dmm_trace_error e;
    std::string s = "dmmtrace 1\n0 m 1 8\n0 f 1";
    ASSERT_EQ(read_txt(t.get(), s, &e), 0) << err_str(e);
    EXPECT_EQ(t->n, 2u);
    // the text reader on a binary file, the binary reader on a text file
    std::string bin = small_binary();
    Trace a, b;
    EXPECT_EQ(read_txt(a.get(), bin, &e), -1);
    EXPECT_TRUE(e.is_line);
    EXPECT_EQ(e.offset, 1u);
    EXPECT_EQ(read_bin(b.get(), s, &e), -1);
    EXPECT_EQ(e.offset, 0u);
}

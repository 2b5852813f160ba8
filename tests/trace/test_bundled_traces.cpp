// tests/trace/test_bundled_traces.cpp - the traces bundled in bench/traces/
// (made by scripts/make_traces.sh) load, validate, and match their
// manifest: operation count, threads, hash, size.  Randomised-free variants
// are recomputed from their source trace and must give the same hash.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>

#include "trace_test_util.h"

using namespace dmmt;

#ifndef DMMT_TRACES_DIR
#error "DMMT_TRACES_DIR must name bench/traces"
#endif

namespace {

struct Row {
    std::string file, hash, det, checksum, command;
    uint64_t ops = 0, threads = 0, bytes = 0;
};

std::vector<std::string> split_tabs(const std::string &line)
{
    std::vector<std::string> v;
    std::string cur;
    std::istringstream ss(line);
    while (std::getline(ss, cur, '\t'))
        v.push_back(cur);
    return v;
}

bool read_manifest(std::vector<Row> *rows, std::string *why)
{
    std::ifstream f(std::string(DMMT_TRACES_DIR) + "/manifest.tsv");
    if (!f) {
        *why = "no manifest.tsv";
        return false;
    }
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#')
            continue;
        std::vector<std::string> c = split_tabs(line);
        if (c.size() != 8) {
            *why = "bad manifest line: " + line;
            return false;
        }
        Row r;
        r.file = c[0];
        r.ops = std::stoull(c[1]);
        r.threads = std::stoull(c[2]);
        r.hash = c[3];
        r.bytes = std::stoull(c[4]);
        r.det = c[5];
        r.checksum = c[6];
        r.command = c[7];
        rows->push_back(r);
    }
    return true;
}

std::string hex(uint64_t h)
{
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", (unsigned long long)h);
    return b;
}

} // namespace

TEST(BundledTraces, MatchTheirManifest)
{
    std::vector<Row> rows;
    std::string why;
    struct stat st;
    if (stat(DMMT_TRACES_DIR, &st) != 0)
        GTEST_SKIP() << DMMT_TRACES_DIR << " does not exist";
    ASSERT_TRUE(read_manifest(&rows, &why)) << why;
    ASSERT_GE(rows.size(), 12u);
    uint64_t total = 0;
    std::map<std::string, uint64_t> hashes;
    for (const Row &r : rows) {
        SCOPED_TRACE(r.file);
        std::string path = std::string(DMMT_TRACES_DIR) + "/" + r.file;
        ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
        EXPECT_EQ((uint64_t)st.st_size, r.bytes);
        total += (uint64_t)st.st_size;
        Trace t;
        dmm_trace_error e;
        ASSERT_EQ(dmm_trace_load(t.get(), path.c_str(), &e), 0) << err_str(e);
        EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << err_str(e);
        EXPECT_EQ(t->n, r.ops);
        EXPECT_EQ(t->threads, r.threads);
        EXPECT_EQ(hex(dmm_trace_hash(t.get())), r.hash);
        hashes[r.file] = dmm_trace_hash(t.get());
        if (r.threads > 1) {
            // recorded/generated multi-threaded traces carry their syncs:
            // deriving them again changes nothing
            std::string before = to_bytes(t.get(), false);
            ASSERT_EQ(dmm_trace_add_syncs(t.get()), 0);
            EXPECT_EQ(to_bytes(t.get(), false), before) << "syncs are not the derived ones";
        }
    }
    EXPECT_LT(total, 3u * 1024 * 1024) << "bundled traces must stay small";

    // randomised-free variants: recompute from the source trace
    for (const Row &r : rows) {
        std::istringstream ss(r.command);
        std::string tool, verb, in, out, opt;
        uint64_t seed = 0;
        ss >> tool >> verb >> in >> out >> opt >> seed;
        if (tool != "dmm-trace" || verb != "randomize")
            continue;
        SCOPED_TRACE(r.command);
        ASSERT_EQ(opt, "--seed");
        Trace src, rf;
        dmm_trace_error e;
        std::string p = std::string(DMMT_TRACES_DIR) + "/" + in;
        ASSERT_EQ(dmm_trace_load(src.get(), p.c_str(), &e), 0) << err_str(e);
        ASSERT_EQ(dmm_trace_randomize_frees(src.get(), rf.get(), seed), 0);
        EXPECT_EQ(hex(dmm_trace_hash(rf.get())), r.hash);
    }
}

// tests/core/test_fields.cpp - the field-table machinery (src/core/fields.h)
// on a toy component, the way a later component (pool, multiheap) would use
// it: its own config struct, its own table, its own "extra" key, its own
// statistics struct.  Exact outputs are spelled out, so a change of format
// shows up here.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/fields.h"
#include "json_mini.h"

using namespace dmmt;

namespace {

enum toy_mode { TOY_SLOW = 0, TOY_FAST, TOY_AUTO };

struct toy_cfg {
    toy_mode mode;
    bool verbose;
    size_t bytes;
    unsigned count;
    uint8_t tiny;
    unsigned short word;
    uintptr_t key;
    void *not_in_text; // members without a text form are simply not listed
};

const char *const mode_names[] = {"slow", "fast", "auto"};
const char *const mode_consts[] = {"TOY_SLOW", "TOY_FAST", "TOY_AUTO"};

const dmm_field toy_fields[] = {
    DMM_FIELD_ENUM_INIT(toy_cfg, mode, "mode", mode_names, mode_consts, DMM_FIELD_FROZEN_FIXED, "TOY_FROZEN_MODE",
                        "how fast"),
    DMM_FIELD_BOOL_INIT(toy_cfg, verbose, "verbose", DMM_FIELD_FROZEN_FIXED, "TOY_FROZEN_VERBOSE", nullptr),
    DMM_FIELD_NUM_INIT(toy_cfg, bytes, "bytes", DMM_FIELD_SIZE, SIZE_MAX, 1u << 20, "bytes must be at most 1m",
                       DMM_FIELD_FROZEN_ONOFF, "TOY_FROZEN_BYTES", "a size"),
    DMM_FIELD_NUM_INIT(toy_cfg, count, "count", DMM_FIELD_UNSIGNED, 1000, 100, "count must be at most 100",
                       DMM_FIELD_FROZEN_VALUE, "TOY_FROZEN_COUNT", nullptr),
    // parse_max above the member's width: the width wins (255)
    DMM_FIELD_NUM_INIT(toy_cfg, tiny, "tiny", DMM_FIELD_UNSIGNED, 100000, 255, nullptr, DMM_FIELD_RUNTIME, nullptr,
                       nullptr),
    DMM_FIELD_NUM_INIT(toy_cfg, word, "word", DMM_FIELD_UNSIGNED, 65535, 65535, nullptr, DMM_FIELD_RUNTIME, nullptr,
                       nullptr),
    DMM_FIELD_NUM_INIT(toy_cfg, key, "key", DMM_FIELD_UINTPTR, UINTPTR_MAX, UINTPTR_MAX, nullptr, DMM_FIELD_RUNTIME,
                       nullptr, nullptr),
};
const unsigned N = sizeof toy_fields / sizeof toy_fields[0];

toy_cfg toy_default() {
    toy_cfg c{};
    c.mode = TOY_FAST;
    c.verbose = false;
    c.bytes = 4096;
    c.count = 7;
    c.tiny = 3;
    c.word = 1000;
    c.key = 0;
    c.not_in_text = nullptr;
    return c;
}

bool same(const toy_cfg &a, const toy_cfg &b) {
    return a.mode == b.mode && a.verbose == b.verbose && a.bytes == b.bytes && a.count == b.count &&
           a.tiny == b.tiny && a.word == b.word && a.key == b.key && a.not_in_text == b.not_in_text;
}

std::string fmt(const toy_cfg &c) {
    std::string s(dmm_fields_format(toy_fields, N, &c, nullptr, 0) + 1, '\0');
    dmm_fields_format(toy_fields, N, &c, &s[0], s.size());
    s.pop_back();
    return s;
}

// "profile=big" sets several fields at once (like the heap's "preset=").
const char *toy_extra(void *ctx, void *obj, const char *k, size_t kn, const char *v, size_t vn) {
    ++*static_cast<int *>(ctx);
    toy_cfg *c = static_cast<toy_cfg *>(obj);
    if (!(kn == 7 && std::memcmp(k, "profile", 7) == 0))
        return dmm_fields_unknown_key;
    if (vn == 3 && std::memcmp(v, "big", 3) == 0) {
        c->bytes = 1u << 20;
        c->count = 100;
        return nullptr;
    }
    return "unknown profile (big)";
}

// Parses into a copy and keeps it only on success, as components do.
const char *parse(const char *text, toy_cfg *c, int *extra_calls = nullptr) {
    int dummy = 0;
    toy_cfg tmp = *c;
    const char *why = dmm_fields_parse(toy_fields, N, text, &tmp, toy_extra, extra_calls ? extra_calls : &dummy);
    if (!why)
        *c = tmp;
    return why;
}

// Any snprintf-like writer: full length whatever cap, NUL-terminated
// prefix, never a byte past cap (cap 0: nothing written at all).
template <class F> void expect_snprintf_like(F write, const std::string &full) {
    EXPECT_EQ(write(nullptr, 0), full.size());
    std::vector<size_t> caps = {0, 1, 2, 3, full.size() / 2, full.size() - 1, full.size(), full.size() + 1,
                                full.size() + 10};
    for (size_t cap : caps) {
        std::vector<char> buf(cap + 8, '#');
        EXPECT_EQ(write(buf.data(), cap), full.size()) << "cap " << cap;
        if (cap == 0) {
            EXPECT_EQ(buf[0], '#') << "cap 0 wrote";
            continue;
        }
        size_t written = std::min(cap - 1, full.size());
        EXPECT_EQ(std::string(buf.data(), written), full.substr(0, written)) << "cap " << cap;
        EXPECT_EQ(buf[written], '\0') << "cap " << cap;
        EXPECT_EQ(buf[cap], '#') << "wrote past cap " << cap;
    }
}

} // namespace

TEST(Fields, FormatWritesEveryFieldInTableOrder) {
    toy_cfg c = toy_default();
    EXPECT_EQ(fmt(c), "mode=fast,verbose=off,bytes=4096,count=7,tiny=3,word=1000,key=0");
    c.mode = TOY_AUTO;
    c.verbose = true;
    c.key = UINTPTR_MAX;
    c.word = 65535;
    EXPECT_EQ(fmt(c), "mode=auto,verbose=on,bytes=4096,count=7,tiny=3,word=65535,key=" + std::to_string(UINTPTR_MAX));
    c.mode = (toy_mode)9; // out of range: written as "?", which the parser refuses
    EXPECT_EQ(fmt(c).substr(0, 7), "mode=?,");
    EXPECT_EQ(dmm_fields_format(toy_fields, N, nullptr, nullptr, 0), 0u);
}

TEST(Fields, ParseRoundTripsAndKeepsUnnamedFields) {
    toy_cfg c = toy_default();
    c.not_in_text = &c;
    ASSERT_EQ(parse("  mode = slow ,, verbose=on,bytes=2k , count=0,tiny=255,word=7,key=12345 ", &c), nullptr);
    EXPECT_EQ(c.mode, TOY_SLOW);
    EXPECT_TRUE(c.verbose);
    EXPECT_EQ(c.bytes, 2048u);
    EXPECT_EQ(c.count, 0u);
    EXPECT_EQ(c.tiny, 255u);
    EXPECT_EQ(c.word, 7u);
    EXPECT_EQ(c.key, (uintptr_t)12345);
    EXPECT_EQ(c.not_in_text, &c) << "a member outside the table was touched";
    toy_cfg back = toy_default();
    ASSERT_EQ(parse(fmt(c).c_str(), &back), nullptr);
    back.not_in_text = &c;
    EXPECT_TRUE(same(c, back)) << fmt(back);
    // Fields not named keep their value; the empty text changes nothing.
    toy_cfg d = c;
    ASSERT_EQ(parse("count=5", &d), nullptr);
    EXPECT_EQ(d.count, 5u);
    EXPECT_EQ(d.bytes, c.bytes);
    ASSERT_EQ(parse("", &d), nullptr);
    ASSERT_EQ(parse(" , ,", &d), nullptr);
    EXPECT_EQ(d.count, 5u);
}

TEST(Fields, EveryEnumAndBoolValueRoundTrips) {
    for (unsigned i = 0; i < 3; ++i) {
        toy_cfg c = toy_default();
        ASSERT_EQ(parse(("mode=" + std::string(mode_names[i])).c_str(), &c), nullptr);
        EXPECT_EQ((unsigned)c.mode, i);
        EXPECT_STREQ(dmm_field_value_name(&toy_fields[0], i), mode_names[i]);
    }
    EXPECT_EQ(dmm_field_value_name(&toy_fields[0], 3), nullptr);
    for (const char *b : {"off", "on"}) {
        toy_cfg c = toy_default();
        c.verbose = !std::strcmp(b, "off");
        ASSERT_EQ(parse(("verbose=" + std::string(b)).c_str(), &c), nullptr);
        EXPECT_EQ(c.verbose, !std::strcmp(b, "on"));
    }
}

TEST(Fields, ParseErrorsNameTheKey) {
    struct {
        const char *text, *err;
    } cases[] = {
        {"mode=warp", "bad value for mode"},
        {"mode=", "bad value for mode"},
        {"mode=SLOW", "bad value for mode"}, // names are case-sensitive
        {"verbose=yes", "bad value for verbose (on or off)"},
        {"count=1001", "bad number for count"}, // above parse_max
        {"count=-1", "bad number for count"},
        {"count=1x", "bad number for count"},
        {"tiny=256", "bad number for tiny"}, // above the member's width
        {"word=65536", "bad number for word"},
        {"bytes=99999999999999999999999", "bad number for bytes"},
        {"nope=1", "unknown key"},
        {"count", "expected key=value"},
        {"count=1,mode", "expected key=value"},
        {"profile=small", "unknown profile (big)"},
        {"count=3,bogus=1", "unknown key"},
    };
    for (auto &k : cases) {
        SCOPED_TRACE(k.text);
        toy_cfg c = toy_default();
        const toy_cfg before = c;
        const char *err = parse(k.text, &c);
        ASSERT_NE(err, nullptr);
        EXPECT_STREQ(err, k.err);
        EXPECT_TRUE(same(c, before)) << "config changed on error";
    }
    // Without an extra hook every unknown key is "unknown key".
    toy_cfg c = toy_default();
    EXPECT_STREQ(dmm_fields_parse(toy_fields, N, "profile=big", &c, nullptr, nullptr), "unknown key");
}

TEST(Fields, ExtraKeysGoThroughTheHookOnlyWhenNotInTheTable) {
    toy_cfg c = toy_default();
    int calls = 0;
    ASSERT_EQ(parse("mode=slow,profile=big,count=3", &c, &calls), nullptr);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(c.bytes, 1u << 20);
    EXPECT_EQ(c.count, 3u) << "pairs apply left to right";
    EXPECT_EQ(c.mode, TOY_SLOW);
}

TEST(Fields, CheckFindsTheFirstFieldOutOfRange) {
    toy_cfg c = toy_default();
    EXPECT_EQ(dmm_fields_check(toy_fields, N, &c), nullptr);
    c.count = 100;
    c.bytes = 1u << 20;
    EXPECT_EQ(dmm_fields_check(toy_fields, N, &c), nullptr) << "the bounds are inclusive";
    c.count = 101;
    const dmm_field *f = dmm_fields_check(toy_fields, N, &c);
    ASSERT_NE(f, nullptr);
    EXPECT_STREQ(f->name, "count");
    EXPECT_STREQ(f->range, "count must be at most 100");
    c.bytes = (1u << 20) + 1;
    f = dmm_fields_check(toy_fields, N, &c);
    ASSERT_NE(f, nullptr);
    EXPECT_STREQ(f->name, "bytes") << "table order";
    c = toy_default();
    c.mode = (toy_mode)3;
    f = dmm_fields_check(toy_fields, N, &c);
    ASSERT_NE(f, nullptr);
    EXPECT_STREQ(f->range, "mode out of range");
}

TEST(Fields, GetAndSetHonourTheMemberWidth) {
    toy_cfg c = toy_default();
    c.word = 0x1234;
    EXPECT_EQ(dmm_field_get(&toy_fields[5], &c), 0x1234u);
    dmm_field_set(&toy_fields[5], &c, 0xABCDEFu); // truncated to 16 bits
    EXPECT_EQ(c.word, 0xCDEFu);
    EXPECT_EQ(c.tiny, 3u) << "neighbour touched";
    dmm_field_set(&toy_fields[1], &c, 42); // a bool stores 0 or 1
    EXPECT_TRUE(c.verbose);
    EXPECT_EQ(dmm_field_get(&toy_fields[1], &c), 1u);
    EXPECT_EQ(dmm_fields_find(toy_fields, N, "key", 3), 6);
    EXPECT_EQ(dmm_fields_find(toy_fields, N, "keys", 4), -1);
    EXPECT_EQ(dmm_fields_find(toy_fields, N, "ke", 2), -1);
}

TEST(Fields, HeaderDefinesTheFrozenFields) {
    toy_cfg c = toy_default();
    c.verbose = true;
    c.count = 42;
    const std::string want = "/* toy.h - a toy frozen\n"
                             " * on two lines\n"
                             " * config: mode=fast,verbose=on,bytes=4096,count=42,tiny=3,word=1000,key=0 */\n"
                             "#define TOY_FROZEN_MODE TOY_FAST\n"
                             "#define TOY_FROZEN_VERBOSE 1\n"
                             "#define TOY_FROZEN_BYTES 4096\n"
                             "#define TOY_FROZEN_COUNT 42\n";
    auto write = [&](char *b, size_t cap) {
        return dmm_fields_header(toy_fields, N, &c, "toy.h", "a toy frozen\non two lines", b, cap);
    };
    std::string got(write(nullptr, 0) + 1, '\0');
    write(&got[0], got.size());
    got.pop_back();
    EXPECT_EQ(got, want);
    expect_snprintf_like(write, want);
}

TEST(Fields, HeaderCommentCannotBeClosedByTheName) {
    toy_cfg c = toy_default();
    char buf[1024];
    ASSERT_LT(dmm_fields_header(toy_fields, N, &c, "evil*/ #error x\n*/", nullptr, buf, sizeof buf), sizeof buf);
    std::string s(buf);
    size_t end = s.find("*/");
    ASSERT_NE(end, std::string::npos);
    ASSERT_NE(s.find("#error"), std::string::npos);
    EXPECT_LT(s.find("#error"), end) << "only inside the comment";
    EXPECT_EQ(s.substr(end, 3), "*/\n") << "the first comment end must be the writer's own: " << s;
    EXPECT_EQ(s.find("#define"), end + 3);
}

TEST(Fields, HeaderRefusesOutOfRangeFields) {
    toy_cfg c = toy_default();
    c.mode = (toy_mode)5;
    char buf[64] = "untouched";
    EXPECT_EQ(dmm_fields_header(toy_fields, N, &c, "x", nullptr, buf, sizeof buf), 0u);
    EXPECT_STREQ(buf, "");
    c = toy_default();
    c.count = 1000; // parses, but above check_max
    EXPECT_EQ(dmm_fields_header(toy_fields, N, &c, "x", nullptr, buf, sizeof buf), 0u);
    EXPECT_EQ(dmm_fields_header(toy_fields, N, nullptr, "x", nullptr, buf, sizeof buf), 0u);
}

TEST(Fields, FieldListAsJson) {
    toy_cfg d = toy_default();
    auto write = [&](char *b, size_t cap) { return dmm_fields_json(toy_fields, N, &d, b, cap); };
    std::string s(write(nullptr, 0) + 1, '\0');
    write(&s[0], s.size());
    s.pop_back();
    expect_snprintf_like(write, s);
    JsonValue v;
    std::string err;
    ASSERT_TRUE(json_parse(s, &v, &err)) << err << "\n" << s;
    const JsonValue *fields = v.get("fields");
    ASSERT_NE(fields, nullptr);
    ASSERT_EQ(fields->items.size(), N);
    const JsonValue &mode = fields->items[0];
    EXPECT_EQ(mode.get("name")->text, "mode");
    EXPECT_EQ(mode.get("kind")->text, "enum");
    ASSERT_EQ(mode.get("values")->items.size(), 3u);
    EXPECT_EQ(mode.get("values")->items[2].text, "auto");
    EXPECT_EQ(mode.get("default")->text, "fast");
    EXPECT_EQ(mode.get("frozen")->text, "fixed");
    EXPECT_EQ(mode.get("macro")->text, "TOY_FROZEN_MODE");
    EXPECT_EQ(mode.get("help")->text, "how fast");
    const JsonValue &verbose = fields->items[1];
    EXPECT_EQ(verbose.get("kind")->text, "bool");
    EXPECT_EQ(verbose.get("default")->text, "off");
    EXPECT_EQ(verbose.get("help"), nullptr);
    const JsonValue &count = fields->items[3];
    EXPECT_EQ(count.get("kind")->text, "unsigned");
    EXPECT_EQ(count.get("default")->text, "7");
    EXPECT_EQ(count.get("max")->text, "100");
    EXPECT_EQ(count.get("parse_max")->text, "1000");
    EXPECT_EQ(count.get("frozen")->text, "value");
    const JsonValue &tiny = fields->items[4];
    EXPECT_EQ(tiny.get("parse_max")->text, "255") << "clamped to the member's width";
    EXPECT_EQ(tiny.get("frozen")->text, "runtime");
    EXPECT_EQ(tiny.get("macro"), nullptr);
    EXPECT_EQ(fields->items[2].get("kind")->text, "size");
    EXPECT_EQ(fields->items[6].get("kind")->text, "uintptr");
    // Without defaults there is no "default".
    std::string nd(dmm_fields_json(toy_fields, N, nullptr, nullptr, 0) + 1, '\0');
    dmm_fields_json(toy_fields, N, nullptr, &nd[0], nd.size());
    nd.pop_back();
    ASSERT_TRUE(json_parse(nd, &v, &err)) << err;
    EXPECT_EQ(v.get("fields")->items[0].get("default"), nullptr);
}

TEST(Fields, JsonStringsAreEscaped) {
    char buf[64];
    dmm_text t;
    dmm_text_init(&t, buf, sizeof buf);
    dmm_text_json_str(&t, "a\"b\\c\nd\x01");
    EXPECT_STREQ(buf, "\"a\\\"b\\\\c\\u000ad\\u0001\"");
}

// ---- statistics ---------------------------------------------------------------

namespace {
struct toy_stats {
    uint64_t ops;
    uint32_t small;
    size_t bytes;
    uint64_t hist[3];
    uint16_t tail;
};
const dmm_stat toy_stats_table[] = {
    DMM_STAT_INIT(toy_stats, ops, "ops"),
    DMM_STAT_INIT(toy_stats, small, "small"),
    DMM_STAT_INIT(toy_stats, bytes, "bytes"),
    DMM_STAT_ARRAY_INIT(toy_stats, hist, "hist"),
    DMM_STAT_INIT(toy_stats, tail, "tail"),
};
} // namespace

TEST(Stats, GenericJsonWriter) {
    EXPECT_EQ(toy_stats_table[3].count, 3u);
    EXPECT_EQ(toy_stats_table[3].width, 8u);
    EXPECT_EQ(toy_stats_table[1].width, 4u);
    toy_stats st{};
    st.ops = UINT64_MAX;
    st.small = 4000000000u;
    st.bytes = 12;
    st.hist[0] = 1;
    st.hist[2] = 3;
    st.tail = 65535;
    const std::string want = "{\"ops\":18446744073709551615,\"small\":4000000000,\"bytes\":12,\"hist\":[1,0,3],"
                             "\"tail\":65535}";
    auto write = [&](char *b, size_t cap) { return dmm_stats_json(toy_stats_table, 5, &st, b, cap); };
    std::string got(write(nullptr, 0) + 1, '\0');
    write(&got[0], got.size());
    got.pop_back();
    EXPECT_EQ(got, want);
    expect_snprintf_like(write, want);
    JsonValue v;
    std::string err;
    EXPECT_TRUE(json_parse(got, &v, &err)) << err;
    EXPECT_EQ(dmm_stats_json(toy_stats_table, 0, &st, nullptr, 0), 2u) << "{}";
}

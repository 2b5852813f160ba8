// tests/support/json_mini.h - a strict little JSON reader for checking the
// library's JSON output (RFC 8259 syntax; numbers kept as text).
#ifndef DMM_TEST_JSON_MINI_H
#define DMM_TEST_JSON_MINI_H

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dmmt {

struct JsonValue {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool b = false;
    std::string text;                           // number text or string contents
    std::vector<JsonValue> items;               // Array
    std::vector<std::pair<std::string, JsonValue>> members; // Object, in order

    const JsonValue *get(const std::string &key) const;
};

// Parses the whole of s (only whitespace may follow the value).  On error
// returns false and sets *err to a description with the byte offset.
bool json_parse(const std::string &s, JsonValue *out, std::string *err);

} // namespace dmmt

#endif

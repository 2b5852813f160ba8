// tests/support/json_mini.cpp - recursive-descent JSON syntax checker.
#include "json_mini.h"

#include <cctype>
#include <cstdio>

namespace dmmt {

const JsonValue *JsonValue::get(const std::string &key) const {
    for (const auto &m : members)
        if (m.first == key)
            return &m.second;
    return nullptr;
}

namespace {

class Parser {
public:
    explicit Parser(const std::string &s) : s_(s) {}
    bool document(JsonValue *v) {
        ws();
        if (!value(v, 0))
            return false;
        ws();
        if (i_ != s_.size())
            return error("trailing characters");
        return true;
    }
    std::string err;

private:
    bool error(const char *what) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s at offset %zu", what, i_);
        err = buf;
        return false;
    }
    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
            ++i_;
    }
    bool lit(const char *w) {
        size_t n = 0;
        while (w[n])
            ++n;
        if (s_.compare(i_, n, w) != 0)
            return error("bad literal");
        i_ += n;
        return true;
    }
    bool value(JsonValue *v, int depth) {
        if (depth > 64)
            return error("nesting too deep");
        if (i_ >= s_.size())
            return error("unexpected end");
        char c = s_[i_];
        if (c == '{')
            return object(v, depth);
        if (c == '[')
            return array(v, depth);
        if (c == '"') {
            v->kind = JsonValue::String;
            return string(&v->text);
        }
        if (c == 't') {
            v->kind = JsonValue::Bool;
            v->b = true;
            return lit("true");
        }
        if (c == 'f') {
            v->kind = JsonValue::Bool;
            return lit("false");
        }
        if (c == 'n') {
            v->kind = JsonValue::Null;
            return lit("null");
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            v->kind = JsonValue::Number;
            return number(&v->text);
        }
        return error("unexpected character");
    }
    static bool digit(char c) { return c >= '0' && c <= '9'; }
    bool number(std::string *out) {
        size_t st = i_;
        if (s_[i_] == '-')
            ++i_;
        if (i_ >= s_.size() || !digit(s_[i_]))
            return error("bad number");
        if (s_[i_] == '0')
            ++i_;
        else
            while (i_ < s_.size() && digit(s_[i_]))
                ++i_;
        if (i_ < s_.size() && s_[i_] == '.') {
            ++i_;
            if (i_ >= s_.size() || !digit(s_[i_]))
                return error("bad fraction");
            while (i_ < s_.size() && digit(s_[i_]))
                ++i_;
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            ++i_;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-'))
                ++i_;
            if (i_ >= s_.size() || !digit(s_[i_]))
                return error("bad exponent");
            while (i_ < s_.size() && digit(s_[i_]))
                ++i_;
        }
        *out = s_.substr(st, i_ - st);
        return true;
    }
    bool string(std::string *out) {
        ++i_; // opening quote
        out->clear();
        while (i_ < s_.size()) {
            char c = s_[i_++];
            if (c == '"')
                return true;
            if ((unsigned char)c < 0x20)
                return error("control character in string");
            if (c == '\\') {
                if (i_ >= s_.size())
                    return error("bad escape");
                char e = s_[i_++];
                switch (e) {
                case '"': case '\\': case '/': out->push_back(e); break;
                case 'b': out->push_back('\b'); break;
                case 'f': out->push_back('\f'); break;
                case 'n': out->push_back('\n'); break;
                case 'r': out->push_back('\r'); break;
                case 't': out->push_back('\t'); break;
                case 'u':
                    for (int k = 0; k < 4; ++k, ++i_)
                        if (i_ >= s_.size() || !std::isxdigit((unsigned char)s_[i_]))
                            return error("bad \\u escape");
                    out->push_back('?');
                    break;
                default: return error("bad escape");
                }
            } else {
                out->push_back(c);
            }
        }
        return error("unterminated string");
    }
    bool array(JsonValue *v, int depth) {
        v->kind = JsonValue::Array;
        ++i_;
        ws();
        if (i_ < s_.size() && s_[i_] == ']') {
            ++i_;
            return true;
        }
        for (;;) {
            JsonValue item;
            ws();
            if (!value(&item, depth + 1))
                return false;
            v->items.push_back(std::move(item));
            ws();
            if (i_ >= s_.size())
                return error("unterminated array");
            if (s_[i_] == ',') {
                ++i_;
                continue;
            }
            if (s_[i_] == ']') {
                ++i_;
                return true;
            }
            return error("expected , or ]");
        }
    }
    bool object(JsonValue *v, int depth) {
        v->kind = JsonValue::Object;
        ++i_;
        ws();
        if (i_ < s_.size() && s_[i_] == '}') {
            ++i_;
            return true;
        }
        for (;;) {
            ws();
            if (i_ >= s_.size() || s_[i_] != '"')
                return error("expected key");
            std::string key;
            if (!string(&key))
                return false;
            for (const auto &m : v->members)
                if (m.first == key)
                    return error("duplicate key");
            ws();
            if (i_ >= s_.size() || s_[i_] != ':')
                return error("expected :");
            ++i_;
            ws();
            JsonValue item;
            if (!value(&item, depth + 1))
                return false;
            v->members.emplace_back(key, std::move(item));
            ws();
            if (i_ >= s_.size())
                return error("unterminated object");
            if (s_[i_] == ',') {
                ++i_;
                continue;
            }
            if (s_[i_] == '}') {
                ++i_;
                return true;
            }
            return error("expected , or }");
        }
    }

    const std::string &s_;
    size_t i_ = 0;
};

} // namespace

bool json_parse(const std::string &s, JsonValue *out, std::string *err) {
    Parser p(s);
    *out = JsonValue();
    if (p.document(out))
        return true;
    if (err)
        *err = p.err;
    return false;
}

} // namespace dmmt

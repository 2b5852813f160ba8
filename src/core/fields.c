/* src/core/fields.c - see fields.h. */
#include "fields.h"

const char *const dmm_field_bool_names[2] = {"off", "on"};
const char dmm_fields_unknown_key[] = "unknown key";

/* ---- member access ------------------------------------------------------
 * Members are read and written byte by byte into an integer of the same
 * width (character access may alias anything), so the table works for any
 * member type of 1, 2, 4 or 8 bytes, whatever integer type the platform
 * uses for size_t, uintptr_t or an enum. */

static void copy_bytes(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    while (n--)
        *d++ = *s++;
}

static uint64_t load(const void *p, unsigned width)
{
    switch (width) {
    case 1: {
        uint8_t v;
        copy_bytes(&v, p, 1);
        return v;
    }
    case 2: {
        uint16_t v;
        copy_bytes(&v, p, 2);
        return v;
    }
    case 4: {
        uint32_t v;
        copy_bytes(&v, p, 4);
        return v;
    }
    default: {
        uint64_t v;
        copy_bytes(&v, p, 8);
        return v;
    }
    }
}

static void store(void *p, unsigned width, uint64_t x)
{
    switch (width) {
    case 1: {
        uint8_t v = (uint8_t)x;
        copy_bytes(p, &v, 1);
        break;
    }
    case 2: {
        uint16_t v = (uint16_t)x;
        copy_bytes(p, &v, 2);
        break;
    }
    case 4: {
        uint32_t v = (uint32_t)x;
        copy_bytes(p, &v, 4);
        break;
    }
    default:
        copy_bytes(p, &x, 8);
        break;
    }
}

uint64_t dmm_field_get(const dmm_field *f, const void *obj)
{
    return load((const char *)obj + f->offset, f->width);
}

void dmm_field_set(const dmm_field *f, void *obj, uint64_t v)
{
    if (f->kind == DMM_FIELD_BOOL)
        v = v != 0;
    store((char *)obj + f->offset, f->width, v);
}

/* Largest value a member of width w holds. */
static uint64_t width_max(unsigned w) { return w >= 8 ? UINT64_MAX : ((uint64_t)1 << (8u * w)) - 1u; }

int dmm_fields_find(const dmm_field *t, unsigned n, const char *k, size_t kn)
{
    for (unsigned i = 0; i < n; i++)
        if (dmm_token_eq(k, kn, t[i].name))
            return (int)i;
    return -1;
}

const char *dmm_field_value_name(const dmm_field *f, uint64_t v)
{
    if ((f->kind != DMM_FIELD_ENUM && f->kind != DMM_FIELD_BOOL) || v >= f->nvalues)
        return NULL;
    return f->values[v];
}

const char *dmm_field_parse_value(const dmm_field *f, const char *v, size_t vn, uint64_t *out)
{
    if (f->kind == DMM_FIELD_ENUM || f->kind == DMM_FIELD_BOOL) {
        for (unsigned i = 0; i < f->nvalues; i++)
            if (dmm_token_eq(v, vn, f->values[i])) {
                *out = i;
                return NULL;
            }
        return f->bad;
    }
    {
        uint64_t x;
        uint64_t max = f->parse_max < width_max(f->width) ? f->parse_max : width_max(f->width);
        if (dmm_parse_size(v, vn, &x) || x > max)
            return f->bad;
        *out = x;
        return NULL;
    }
}

void dmm_field_format_value(dmm_text *t, const dmm_field *f, const void *obj)
{
    uint64_t v = dmm_field_get(f, obj);
    if (f->kind == DMM_FIELD_ENUM || f->kind == DMM_FIELD_BOOL) {
        const char *s = dmm_field_value_name(f, v);
        dmm_text_str(t, s ? s : "?");
    } else {
        dmm_text_u64(t, v);
    }
}

/* ---- text form ------------------------------------------------------------ */

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

const char *dmm_fields_parse(const dmm_field *t, unsigned n, const char *text, void *obj, dmm_fields_extra_fn extra,
                             void *ctx)
{
    const char *s = text;
    while (*s) {
        const char *k, *v, *end, *why;
        size_t kn, vn;
        int i;
        while (is_space(*s) || *s == ',')
            s++;
        if (!*s)
            break;
        k = s;
        while (*s && *s != '=' && *s != ',')
            s++;
        if (*s != '=')
            return "expected key=value";
        end = s;
        while (end > k && is_space(end[-1]))
            end--;
        kn = (size_t)(end - k);
        s++;
        while (is_space(*s))
            s++;
        v = s;
        while (*s && *s != ',')
            s++;
        end = s;
        while (end > v && is_space(end[-1]))
            end--;
        vn = (size_t)(end - v);
        i = dmm_fields_find(t, n, k, kn);
        if (i >= 0) {
            uint64_t x = 0;
            why = dmm_field_parse_value(&t[i], v, vn, &x);
            if (!why)
                dmm_field_set(&t[i], obj, x);
        } else {
            why = extra ? extra(ctx, obj, k, kn, v, vn) : dmm_fields_unknown_key;
        }
        if (why)
            return why;
    }
    return NULL;
}

void dmm_fields_format_text(dmm_text *out, const dmm_field *t, unsigned n, const void *obj)
{
    for (unsigned i = 0; i < n; i++) {
        if (out->len)
            dmm_text_char(out, ',');
        dmm_text_str(out, t[i].name);
        dmm_text_char(out, '=');
        dmm_field_format_value(out, &t[i], obj);
    }
}

size_t dmm_fields_format(const dmm_field *t, unsigned n, const void *obj, char *buf, size_t cap)
{
    dmm_text out;
    dmm_text_init(&out, buf, cap);
    if (!t || !obj)
        return 0;
    dmm_fields_format_text(&out, t, n, obj);
    return out.len;
}

/* ---- checks --------------------------------------------------------------- */

static int in_range(const dmm_field *f, uint64_t v)
{
    if (f->kind == DMM_FIELD_ENUM || f->kind == DMM_FIELD_BOOL)
        return v < f->nvalues;
    return v <= f->check_max;
}

const dmm_field *dmm_fields_check(const dmm_field *t, unsigned n, const void *obj)
{
    for (unsigned i = 0; i < n; i++)
        if (!in_range(&t[i], dmm_field_get(&t[i], obj)))
            return &t[i];
    return NULL;
}

/* ---- frozen header -------------------------------------------------------- */

/* Appends s inside a C comment: "*" "/" is broken up by a space, a newline
 * continues the comment on a " * " line, other control characters become
 * spaces. */
static void comment_str(dmm_text *t, const char *s)
{
    char prev = 0;
    for (; *s; s++) {
        char c = *s;
        if (c == '\n') {
            dmm_text_str(t, "\n * ");
            prev = ' ';
            continue;
        }
        if ((unsigned char)c < 0x20 || c == 0x7f)
            c = ' ';
        if (c == '/' && prev == '*')
            dmm_text_char(t, ' ');
        dmm_text_char(t, c);
        prev = c;
    }
}

static void format_pair(dmm_text *t, const dmm_field *f, const void *obj)
{
    dmm_text_str(t, f->name);
    dmm_text_char(t, '=');
    dmm_field_format_value(t, f, obj);
}

size_t dmm_fields_header(const dmm_field *t, unsigned n, const void *obj, const char *name, const char *note,
                         char *buf, size_t cap)
{
    dmm_text out;
    size_t col;
    dmm_text_init(&out, buf, cap);
    if (!t || !obj || dmm_fields_check(t, n, obj))
        return 0;
    dmm_text_str(&out, "/* ");
    comment_str(&out, name ? name : "frozen configuration");
    if (note) {
        dmm_text_str(&out, " - ");
        comment_str(&out, note);
    }
    /* the text form, wrapped at commas so that no line gets long */
    dmm_text_str(&out, "\n * config: ");
    col = 11;
    for (unsigned i = 0; i < n; i++) {
        dmm_text len;
        dmm_text_init(&len, NULL, 0);
        format_pair(&len, &t[i], obj);
        if (i) {
            dmm_text_char(&out, ',');
            col++;
            if (col + len.len > 78) {
                dmm_text_str(&out, "\n *   ");
                col = 5;
            }
        }
        format_pair(&out, &t[i], obj);
        col += len.len;
    }
    dmm_text_str(&out, " */\n");
    for (unsigned i = 0; i < n; i++) {
        const dmm_field *f = &t[i];
        uint64_t v;
        if (!f->macro || f->frozen == DMM_FIELD_RUNTIME)
            continue;
        v = dmm_field_get(f, obj);
        dmm_text_str(&out, "#define ");
        dmm_text_str(&out, f->macro);
        dmm_text_char(&out, ' ');
        if (f->kind == DMM_FIELD_ENUM && f->consts)
            dmm_text_str(&out, f->consts[v]);
        else
            dmm_text_u64(&out, v);
        dmm_text_char(&out, '\n');
    }
    return out.len;
}

/* ---- JSON ------------------------------------------------------------------ */

void dmm_text_json_str(dmm_text *t, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    dmm_text_char(t, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            dmm_text_char(t, '\\');
            dmm_text_char(t, (char)c);
        } else if (c < 0x20) {
            dmm_text_str(t, "\\u00");
            dmm_text_char(t, hex[c >> 4]);
            dmm_text_char(t, hex[c & 15u]);
        } else {
            dmm_text_char(t, (char)c);
        }
    }
    dmm_text_char(t, '"');
}

const char *dmm_field_kind_name(unsigned kind)
{
    static const char *const names[] = {"enum", "bool", "size", "unsigned", "uintptr"};
    return kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

const char *dmm_field_frozen_name(unsigned frozen)
{
    static const char *const names[] = {"runtime", "value", "fixed", "onoff"};
    return frozen < sizeof names / sizeof names[0] ? names[frozen] : "?";
}

static void json_key(dmm_text *t, const char *k)
{
    dmm_text_json_str(t, k);
    dmm_text_char(t, ':');
}

void dmm_fields_json_text(dmm_text *out, const dmm_field *t, unsigned n, const void *defaults)
{
    dmm_text_char(out, '[');
    for (unsigned i = 0; i < n; i++) {
        const dmm_field *f = &t[i];
        int named = f->kind == DMM_FIELD_ENUM || f->kind == DMM_FIELD_BOOL;
        if (i)
            dmm_text_char(out, ',');
        dmm_text_char(out, '{');
        json_key(out, "name");
        dmm_text_json_str(out, f->name);
        dmm_text_char(out, ',');
        json_key(out, "kind");
        dmm_text_json_str(out, dmm_field_kind_name(f->kind));
        if (named) {
            dmm_text_char(out, ',');
            json_key(out, "values");
            dmm_text_char(out, '[');
            for (unsigned j = 0; j < f->nvalues; j++) {
                if (j)
                    dmm_text_char(out, ',');
                dmm_text_json_str(out, f->values[j]);
            }
            dmm_text_char(out, ']');
        }
        if (defaults) {
            dmm_text_char(out, ',');
            json_key(out, "default");
            if (named) {
                const char *s = dmm_field_value_name(f, dmm_field_get(f, defaults));
                dmm_text_json_str(out, s ? s : "?");
            } else {
                dmm_text_u64(out, dmm_field_get(f, defaults));
            }
        }
        if (!named) {
            uint64_t pmax = f->parse_max < width_max(f->width) ? f->parse_max : width_max(f->width);
            dmm_text_char(out, ',');
            json_key(out, "max");
            dmm_text_u64(out, f->check_max < pmax ? f->check_max : pmax);
            dmm_text_char(out, ',');
            json_key(out, "parse_max");
            dmm_text_u64(out, pmax);
        }
        dmm_text_char(out, ',');
        json_key(out, "frozen");
        dmm_text_json_str(out, dmm_field_frozen_name(f->frozen));
        if (f->macro) {
            dmm_text_char(out, ',');
            json_key(out, "macro");
            dmm_text_json_str(out, f->macro);
        }
        if (f->help) {
            dmm_text_char(out, ',');
            json_key(out, "help");
            dmm_text_json_str(out, f->help);
        }
        dmm_text_char(out, '}');
    }
    dmm_text_char(out, ']');
}

size_t dmm_fields_json(const dmm_field *t, unsigned n, const void *defaults, char *buf, size_t cap)
{
    dmm_text out;
    dmm_text_init(&out, buf, cap);
    if (!t)
        return 0;
    dmm_text_str(&out, "{\"fields\":");
    dmm_fields_json_text(&out, t, n, defaults);
    dmm_text_char(&out, '}');
    return out.len;
}

/* ---- statistics ------------------------------------------------------------ */

void dmm_stats_json_text(dmm_text *out, const dmm_stat *t, unsigned n, const void *obj)
{
    dmm_text_char(out, '{');
    for (unsigned i = 0; i < n; i++) {
        const char *p = (const char *)obj + t[i].offset;
        if (i)
            dmm_text_char(out, ',');
        json_key(out, t[i].name);
        if (t[i].count == 0) {
            dmm_text_u64(out, load(p, t[i].width));
            continue;
        }
        dmm_text_char(out, '[');
        for (unsigned j = 0; j < t[i].count; j++) {
            if (j)
                dmm_text_char(out, ',');
            dmm_text_u64(out, load(p + (size_t)j * t[i].width, t[i].width));
        }
        dmm_text_char(out, ']');
    }
    dmm_text_char(out, '}');
}

size_t dmm_stats_json(const dmm_stat *t, unsigned n, const void *obj, char *buf, size_t cap)
{
    dmm_text out;
    dmm_text_init(&out, buf, cap);
    if (!t || !obj)
        return 0;
    dmm_stats_json_text(&out, t, n, obj);
    return out.len;
}

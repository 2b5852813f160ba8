/* src/core/text.c - see text.h. */
#include "text.h"

void dmm_text_init(dmm_text *t, char *buf, size_t cap)
{
    t->buf = buf;
    t->cap = buf ? cap : 0;
    t->len = 0;
    if (t->cap)
        t->buf[0] = '\0';
}

void dmm_text_char(dmm_text *t, char c)
{
    if (t->len + 1 < t->cap) {
        t->buf[t->len] = c;
        t->buf[t->len + 1] = '\0';
    }
    t->len++;
}

void dmm_text_str(dmm_text *t, const char *s)
{
    while (*s)
        dmm_text_char(t, *s++);
}

void dmm_text_u64(dmm_text *t, uint64_t v)
{
    char digits[21];
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(v % 10u));
        v /= 10u;
    } while (v);
    while (n)
        dmm_text_char(t, digits[--n]);
}

size_t dmm_strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

int dmm_streq(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

int dmm_token_eq(const char *s, size_t n, const char *word)
{
    size_t i = 0;
    for (; i < n; i++)
        if (word[i] == '\0' || word[i] != s[i])
            return 0;
    return word[i] == '\0';
}

int dmm_parse_size(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    if (n == 0)
        return -1;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10u)
            return -1;
        v = v * 10u + d;
    }
    if (i == 0)
        return -1;
    if (i < n) {
        unsigned shift;
        switch (s[i]) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return -1;
        }
        if (v > (UINT64_MAX >> shift))
            return -1;
        v <<= shift;
        i++;
        if (i < n && (s[i] == 'i' || s[i] == 'I'))
            i++;
        if (i < n && (s[i] == 'b' || s[i] == 'B'))
            i++;
    }
    if (i != n)
        return -1;
    *out = v;
    return 0;
}

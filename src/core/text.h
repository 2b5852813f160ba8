/*
 * src/core/text.h - a tiny freestanding text builder (no stdio in the
 * core): appends to a caller buffer, always NUL-terminates, counts the full
 * length like snprintf so callers can size a second attempt.
 */
#ifndef DMM_CORE_TEXT_H
#define DMM_CORE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dmm_text {
    char *buf;
    size_t cap;
    size_t len; /* length the full text needs, may exceed cap */
} dmm_text;

void dmm_text_init(dmm_text *t, char *buf, size_t cap);
void dmm_text_str(dmm_text *t, const char *s);
void dmm_text_u64(dmm_text *t, uint64_t v);
void dmm_text_char(dmm_text *t, char c);

/* String helpers the core needs instead of <string.h>. */
size_t dmm_strlen(const char *s);
int dmm_streq(const char *a, const char *b);
/* Compare a counted token [s, s+n) with a NUL-terminated word. */
int dmm_token_eq(const char *s, size_t n, const char *word);
/* Parse an unsigned decimal (optionally with k/K, m/M, g/G suffix for
 * 2^10/2^20/2^30); 0 on success, -1 on syntax error or overflow. */
int dmm_parse_size(const char *s, size_t n, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif

/*
 * src/core/text.h - a tiny freestanding text builder (no stdio in the
 * core): appends to a caller buffer, always NUL-terminates, counts the full
 * length like snprintf so callers can size a second attempt.
 */
#ifndef DMM_CORE_TEXT_H
#define DMM_CORE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "dmm/common.h"

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
/* dmm_parse_size is public (dmm/common.h). */

#ifdef __cplusplus
}
#endif
#endif

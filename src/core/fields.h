/*
 * src/core/fields.h - configuration and statistics structs described by
 * tables, so that every component (heap, pool, multiheap, ...) gets a text
 * form, range checks, a frozen header and a JSON form of its statistics
 * from one list of its fields instead of hand-written code per field.
 *
 * A component declares
 *   - a dmm_field table: one entry per configurable field of its config
 *     struct (the key of the text form, the kind, where the member lives,
 *     the enum value names, bounds, the DMM_FROZEN_* macro, whether a frozen
 *     build fixes it);
 *   - a dmm_stat table: one entry per member of its statistics struct;
 * usually by expanding its own X-macro list with the DMM_FIELD_* and
 * DMM_STAT_* initialiser macros below (see src/heap/heap_fields.h), and
 * then calls the generic functions here.  A toy table in
 * tests/core/test_fields.cpp shows the smallest such component.
 *
 * Freestanding: no stdio, no libc beyond what the compiler may emit for
 * small copies.  Every writer is snprintf-like: it NUL-terminates within
 * cap bytes (when cap > 0) and returns the length the full text needs.
 * Every error is a static string.
 */
#ifndef DMM_CORE_FIELDS_H
#define DMM_CORE_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "text.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a field is stored and spelt.  Numbers are unsigned integers of their
 * member's width (1, 2, 4 or 8 bytes); an enum is an unsigned integer whose
 * value indexes the value-name array; a bool is spelt on/off. */
typedef enum dmm_field_kind {
    DMM_FIELD_ENUM = 0,
    DMM_FIELD_BOOL,
    DMM_FIELD_SIZE,     /* size_t, text form takes k/m/g suffixes */
    DMM_FIELD_UNSIGNED, /* unsigned */
    DMM_FIELD_UINTPTR   /* uintptr_t */
} dmm_field_kind;

/* What a frozen build (a DMM_FROZEN_* header) does with a field. */
typedef enum dmm_field_frozen {
    DMM_FIELD_RUNTIME = 0,  /* run-time value: no macro in the header */
    DMM_FIELD_FROZEN_VALUE, /* the macro gives the frozen build's default;
                               the value may still vary at run time */
    DMM_FIELD_FROZEN_FIXED, /* policy: the build accepts only this value */
    DMM_FIELD_FROZEN_ONOFF  /* policy: the build fixes only whether it is 0 */
} dmm_field_frozen;

typedef struct dmm_field {
    const char *name;           /* key in the text form */
    unsigned char kind;         /* dmm_field_kind */
    unsigned char width;        /* sizeof the member */
    unsigned char frozen;       /* dmm_field_frozen */
    unsigned char nvalues;      /* enum/bool: number of value names */
    size_t offset;              /* offsetof the member */
    const char *const *values;  /* enum/bool: names, index = stored value */
    const char *const *consts;  /* enum: C constant names (frozen header) */
    uint64_t parse_max;         /* numbers: largest value the text accepts */
    uint64_t check_max;         /* numbers: largest valid value */
    const char *bad;            /* parse error for a value of this key */
    const char *range;          /* check error when out of range */
    const char *macro;          /* DMM_FROZEN_* name, NULL when DMM_FIELD_RUNTIME */
    const char *help;           /* one line for tools (may be NULL) */
} dmm_field;

/* The names every bool field uses, index = value. */
extern const char *const dmm_field_bool_names[2];

#define DMM__FIELD_COUNT(a) ((unsigned char)(sizeof(a) / sizeof((a)[0])))
#define DMM__FIELD_WIDTH(type, member) ((unsigned char)sizeof(((type *)0)->member))

/* Initialisers for one dmm_field.  KEY must be a string literal (the error
 * messages are built from it at compile time); NAMES/CONSTS are arrays;
 * FROZEN is a dmm_field_frozen; MACRO a string literal or NULL. */
#define DMM_FIELD_ENUM_INIT(type, member, KEY, NAMES, CONSTS, FROZEN, MACRO, HELP)                          \
    {KEY, DMM_FIELD_ENUM, DMM__FIELD_WIDTH(type, member), FROZEN, DMM__FIELD_COUNT(NAMES),                  \
     offsetof(type, member), NAMES, CONSTS, 0, 0, "bad value for " KEY, KEY " out of range", MACRO, HELP}
#define DMM_FIELD_BOOL_INIT(type, member, KEY, FROZEN, MACRO, HELP)                                          \
    {KEY, DMM_FIELD_BOOL, DMM__FIELD_WIDTH(type, member), FROZEN, 2, offsetof(type, member),                \
     dmm_field_bool_names, NULL, 1, 1, "bad value for " KEY " (on or off)", KEY " out of range", MACRO,     \
     HELP}
/* KIND: DMM_FIELD_SIZE, DMM_FIELD_UNSIGNED or DMM_FIELD_UINTPTR.  RANGE is
 * the check error for values above CHECK_MAX (NULL when CHECK_MAX is the
 * member's whole range). */
#define DMM_FIELD_NUM_INIT(type, member, KEY, KIND, PARSE_MAX, CHECK_MAX, RANGE, FROZEN, MACRO, HELP)        \
    {KEY, KIND, DMM__FIELD_WIDTH(type, member), FROZEN, 0, offsetof(type, member), NULL, NULL,              \
     (uint64_t)(PARSE_MAX), (uint64_t)(CHECK_MAX), "bad number for " KEY, RANGE, MACRO, HELP}

/* ---- one field ------------------------------------------------------- */

/* The member of f in obj, widened to 64 bits. */
uint64_t dmm_field_get(const dmm_field *f, const void *obj);
/* Stores v (truncated to the member's width; a bool stores v != 0). */
void dmm_field_set(const dmm_field *f, void *obj, uint64_t v);
/* Index of the field whose key is [k, k+kn), or -1. */
int dmm_fields_find(const dmm_field *t, unsigned n, const char *k, size_t kn);
/* Name of an enum/bool value, or NULL when out of range. */
const char *dmm_field_value_name(const dmm_field *f, uint64_t v);
/* Parses [v, v+vn) for field f into *out.  NULL on success, else f->bad. */
const char *dmm_field_parse_value(const dmm_field *f, const char *v, size_t vn, uint64_t *out);
/* Appends the text form of f's value in obj ("?" for an enum out of range). */
void dmm_field_format_value(dmm_text *t, const dmm_field *f, const void *obj);

/* ---- the whole table ------------------------------------------------- */

/* Called for a key that is not in the table (for example "preset=", which
 * resets every field).  Returns NULL when it applied the pair, else an
 * error (dmm_fields_unknown_key for a key it does not know either). */
typedef const char *(*dmm_fields_extra_fn)(void *ctx, void *obj, const char *k, size_t kn, const char *v,
                                           size_t vn);
extern const char dmm_fields_unknown_key[];

/* Parses "key=value,key=value" (whitespace around tokens and empty pairs
 * are ignored) into obj, field by field, left to right.  Returns NULL on
 * success, else a static error ("expected key=value", "unknown key", or a
 * field's bad-value message); obj then holds the pairs applied before the
 * error, so parse into a copy and keep it only on success. */
const char *dmm_fields_parse(const dmm_field *t, unsigned n, const char *text, void *obj, dmm_fields_extra_fn extra,
                             void *ctx);

/* Appends "key=value,..." for every field, in table order (after a ','
 * when the text is not empty). */
void dmm_fields_format_text(dmm_text *out, const dmm_field *t, unsigned n, const void *obj);
size_t dmm_fields_format(const dmm_field *t, unsigned n, const void *obj, char *buf, size_t cap);

/* First field whose value is out of range (enum/bool beyond its names,
 * number above check_max), or NULL when all are in range. */
const dmm_field *dmm_fields_check(const dmm_field *t, unsigned n, const void *obj);

/* Writes a frozen config header: a comment "NAME - NOTE" followed by the
 * text form, then "#define MACRO VALUE" for every field that has a macro,
 * in table order; enum values as their C constant names, bools as 1/0,
 * numbers in decimal.  Returns 0 and writes "" when a field is out of range
 * (dmm_fields_check).  name and note may be NULL; they cannot end the
 * comment ("*" "/" is broken up) and a newline in them starts a " * " line. */
size_t dmm_fields_header(const dmm_field *t, unsigned n, const void *obj, const char *name, const char *note,
                         char *buf, size_t cap);

/* The table as a JSON array, one object per field:
 *   {"name":..,"kind":"enum|bool|size|unsigned|uintptr",
 *    "values":[..] (enum, bool), "default":.. (a value name or a number,
 *    read from `defaults`; left out when defaults is NULL), "max":..,
 *    "parse_max":.. (numbers), "frozen":"runtime|value|fixed|onoff",
 *    "macro":.. (when frozen), "help":.. (when set)}
 * dmm_fields_json wraps it as {"fields":[...]}. */
void dmm_fields_json_text(dmm_text *out, const dmm_field *t, unsigned n, const void *defaults);
size_t dmm_fields_json(const dmm_field *t, unsigned n, const void *defaults, char *buf, size_t cap);

/* Kind and frozen treatment as the JSON and the tools spell them. */
const char *dmm_field_kind_name(unsigned kind);
const char *dmm_field_frozen_name(unsigned frozen);

/* ---- statistics ------------------------------------------------------- */

typedef struct dmm_stat {
    const char *name;    /* JSON key */
    size_t offset;       /* offsetof the member */
    unsigned char width; /* bytes of one element: 4 or 8 (or 1, 2) */
    unsigned short count;/* 0: a scalar; > 0: an array of count elements */
} dmm_stat;

#define DMM_STAT_INIT(type, member, KEY) {KEY, offsetof(type, member), DMM__FIELD_WIDTH(type, member), 0}
#define DMM_STAT_ARRAY_INIT(type, member, KEY)                                                               \
    {KEY, offsetof(type, member), (unsigned char)sizeof(((type *)0)->member[0]),                             \
     (unsigned short)(sizeof(((type *)0)->member) / sizeof(((type *)0)->member[0]))}

/* One JSON object {"name":N,...,"array":[N,...]} with the members in table
 * order, numbers in decimal. */
void dmm_stats_json_text(dmm_text *out, const dmm_stat *t, unsigned n, const void *obj);
size_t dmm_stats_json(const dmm_stat *t, unsigned n, const void *obj, char *buf, size_t cap);

/* ---- JSON helpers shared by the writers ------------------------------- */

/* Appends s as a JSON string (quotes, escapes). */
void dmm_text_json_str(dmm_text *t, const char *s);

#ifdef __cplusplus
}
#endif
#endif

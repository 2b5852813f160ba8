/*
 * src/trace/trace_io.c - trace files: the binary and text forms
 * (docs/trace-format.md), the CS:APP .rep and glibc mtrace importers, and
 * load/save by content.  Every reader is bounded by its input: malformed,
 * truncated or hostile data gives an error with an offset, never a crash or
 * an unbounded allocation.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dmm/trace.h"
#include "idmap.h"

static const char MAGIC[8] = {'D', 'M', 'M', 'T', 'R', 'A', 'C', 'E'};
#define F_TIME 1u
#define OP_NEWTID 0x10u
#define OP_TIME 0x20u
#define OP_KIND 0x0fu

static int fail_at(dmm_trace_error *err, uint64_t off, int is_line, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->offset = off;
        err->is_line = is_line;
        va_start(ap, fmt);
        vsnprintf(err->reason, sizeof err->reason, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ======================================================================
 * binary
 * ====================================================================== */

static int put_varint(FILE *f, uint64_t v)
{
    unsigned char b[10];
    int n = 0;
    do {
        b[n] = (unsigned char)(v & 0x7fu);
        v >>= 7;
        if (v)
            b[n] |= 0x80u;
        n++;
    } while (v);
    return fwrite(b, 1, (size_t)n, f) == (size_t)n ? 0 : -1;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1u); }

int dmm_trace_write_binary(const dmm_trace *t, FILE *f)
{
    size_t mlen = t->meta ? strlen(t->meta) : 0;
    uint32_t tid = 0;
    uint64_t last_t = 0;
    unsigned char hdr[4] = {(unsigned char)DMM_TRACE_VERSION, t->has_time ? F_TIME : 0u, 0, 0};
    if (fwrite(MAGIC, 1, 8, f) != 8 || fwrite(hdr, 1, 4, f) != 4 || put_varint(f, mlen) ||
        (mlen && fwrite(t->meta, 1, mlen, f) != mlen) || put_varint(f, t->n))
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *op = &t->ops[i];
        unsigned char b = (unsigned char)(op->kind & OP_KIND);
        int e = 0;
        if (op->tid != tid)
            b |= OP_NEWTID;
        if (t->has_time)
            b |= OP_TIME;
        if (fputc(b, f) == EOF)
            return -1;
        if (op->tid != tid) {
            e |= put_varint(f, op->tid);
            tid = op->tid;
        }
        if (t->has_time) {
            e |= put_varint(f, zigzag((int64_t)(op->t_ns - last_t)));
            last_t = op->t_ns;
        }
        switch (op->kind) {
        case DMM_T_MALLOC:
        case DMM_T_REALLOC:
            e |= put_varint(f, op->id) | put_varint(f, op->size);
            break;
        case DMM_T_CALLOC:
            e |= put_varint(f, op->id) | put_varint(f, op->arg) | put_varint(f, op->size);
            break;
        case DMM_T_ALIGNED:
            e |= fputc(op->sub, f) == EOF ? -1 : 0;
            e |= put_varint(f, op->id) | put_varint(f, op->arg) | put_varint(f, op->size);
            break;
        case DMM_T_FREE:
            e |= put_varint(f, op->id);
            break;
        case DMM_T_SYNC:
            e |= put_varint(f, op->arg) | put_varint(f, op->size);
            break;
        default:
            return -1;
        }
        if (e)
            return -1;
    }
    return 0;
}

typedef struct rd {
    const uint8_t *p;
    size_t len, pos;
} rd;

static int get_varint(rd *r, uint64_t *v, dmm_trace_error *err, const char *what)
{
    uint64_t x = 0;
    size_t start = r->pos;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b;
        if (r->pos >= r->len)
            return fail_at(err, start, 0, "truncated: %s runs past the end of the file", what);
        b = r->p[r->pos++];
        if (shift == 63 && (b & 0x7eu))
            return fail_at(err, start, 0, "%s does not fit in 64 bits", what);
        x |= (uint64_t)(b & 0x7fu) << shift;
        if (!(b & 0x80u))
            break;
        if (shift >= 63)
            return fail_at(err, start, 0, "%s is longer than 10 bytes", what);
    }
    *v = x;
    return 0;
}

int dmm_trace_read_binary(dmm_trace *t, const uint8_t *data, size_t len, dmm_trace_error *err)
{
    rd r = {data, len, 0};
    uint64_t mlen, count, last_t = 0, v;
    uint32_t tid = 0;
    int has_time;
    dmm_trace_init(t);
    if (len == 0 || memcmp(data, MAGIC, len < 8 ? len : 8) != 0)
        return fail_at(err, 0, 0, "not a dmm binary trace (missing DMMTRACE magic)");
    if (len < 12)
        return fail_at(err, len, 0, "truncated header (%zu of 12 bytes)", len);
    if (data[8] != DMM_TRACE_VERSION)
        return fail_at(err, 8, 0, "unsupported trace version %u (this reader knows %u)", data[8], DMM_TRACE_VERSION);
    if (data[9] & ~F_TIME)
        return fail_at(err, 9, 0, "unknown header flags 0x%02x", data[9]);
    has_time = (data[9] & F_TIME) != 0;
    r.pos = 12;
    if (get_varint(&r, &mlen, err, "metadata length"))
        return -1;
    if (mlen > len - r.pos)
        return fail_at(err, 12, 0, "metadata length %" PRIu64 " exceeds the file", mlen);
    if (mlen) {
        char *m = malloc((size_t)mlen + 1);
        if (!m)
            return fail_at(err, r.pos, 0, "out of memory");
        memcpy(m, data + r.pos, (size_t)mlen);
        m[mlen] = '\0';
        t->meta = m;
        r.pos += (size_t)mlen;
    }
    {
        size_t count_at = r.pos;
        if (get_varint(&r, &count, err, "operation count"))
            goto bad;
        if (count > (len - r.pos) / 2) { /* every operation takes at least 2 bytes */
            fail_at(err, count_at, 0, "operation count %" PRIu64 " is larger than the file can hold", count);
            goto bad;
        }
    }
    t->has_time = has_time;
    for (uint64_t i = 0; i < count; i++) {
        dmm_trace_op op;
        size_t at = r.pos;
        uint8_t b;
        memset(&op, 0, sizeof op);
        if (r.pos >= r.len) {
            fail_at(err, at, 0, "truncated: %" PRIu64 " of %" PRIu64 " operations present", i, count);
            goto bad;
        }
        b = r.p[r.pos++];
        if (b & ~(OP_KIND | OP_NEWTID | OP_TIME)) {
            fail_at(err, at, 0, "operation %" PRIu64 ": unknown flag bits 0x%02x", i, b);
            goto bad;
        }
        if (((b & OP_TIME) != 0) != has_time) {
            fail_at(err, at, 0, "operation %" PRIu64 ": timestamp flag disagrees with the header", i);
            goto bad;
        }
        op.kind = b & OP_KIND;
        if (b & OP_NEWTID) {
            if (get_varint(&r, &v, err, "thread id"))
                goto bad;
            if (v >= DMM_TRACE_MAX_THREADS) {
                fail_at(err, at, 0, "operation %" PRIu64 ": thread id %" PRIu64 " too large", i, v);
                goto bad;
            }
            tid = (uint32_t)v;
        }
        op.tid = tid;
        if (has_time) {
            if (get_varint(&r, &v, err, "time delta"))
                goto bad;
            last_t += (uint64_t)unzigzag(v);
            op.t_ns = last_t;
        }
        switch (op.kind) {
        case DMM_T_MALLOC:
        case DMM_T_REALLOC:
            if (get_varint(&r, &op.id, err, "object id") || get_varint(&r, &op.size, err, "size"))
                goto bad;
            break;
        case DMM_T_CALLOC:
            if (get_varint(&r, &op.id, err, "object id") || get_varint(&r, &op.arg, err, "nmemb") ||
                get_varint(&r, &op.size, err, "size"))
                goto bad;
            break;
        case DMM_T_ALIGNED:
            if (r.pos >= r.len) {
                fail_at(err, at, 0, "truncated aligned operation");
                goto bad;
            }
            op.sub = r.p[r.pos++];
            if (op.sub > DMM_TA_PVALLOC) {
                fail_at(err, at, 0, "operation %" PRIu64 ": unknown aligned API %u", i, op.sub);
                goto bad;
            }
            if (get_varint(&r, &op.id, err, "object id") || get_varint(&r, &op.arg, err, "alignment") ||
                get_varint(&r, &op.size, err, "size"))
                goto bad;
            break;
        case DMM_T_FREE:
            if (get_varint(&r, &op.id, err, "object id"))
                goto bad;
            break;
        case DMM_T_SYNC:
            if (get_varint(&r, &op.arg, err, "sync thread") || get_varint(&r, &op.size, err, "sync count"))
                goto bad;
            break;
        default:
            fail_at(err, at, 0, "operation %" PRIu64 ": unknown kind %u", i, op.kind);
            goto bad;
        }
        if (dmm_trace_push(t, &op)) {
            fail_at(err, at, 0, "out of memory");
            goto bad;
        }
    }
    if (r.pos != r.len) {
        fail_at(err, r.pos, 0, "%zu bytes of trailing data after the last operation", r.len - r.pos);
        goto bad;
    }
    if (dmm_trace_compact_threads(t)) {
        fail_at(err, 0, 0, "out of memory");
        goto bad;
    }
    return 0;
bad:
    dmm_trace_free(t);
    return -1;
}

/* ======================================================================
 * text
 * ====================================================================== */

static const char *api_names[] = {"posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc"};

int dmm_trace_write_text(const dmm_trace *t, FILE *f)
{
    fprintf(f, "dmmtrace %u\n", DMM_TRACE_VERSION);
    if (t->meta) {
        const char *m = t->meta;
        while (*m) {
            const char *e = strchr(m, '\n');
            size_t n = e ? (size_t)(e - m) : strlen(m), w = n;
            while (w && m[w - 1] == '\r') /* the reader drops one: keep none */
                w--;
            if (w)
                fprintf(f, "meta %.*s\n", (int)w, m);
            m += n + (e ? 1 : 0);
        }
    }
    if (t->has_time)
        fprintf(f, "time on\n");
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *op = &t->ops[i];
        fprintf(f, "%" PRIu32 " ", op->tid);
        switch (op->kind) {
        case DMM_T_MALLOC:
            fprintf(f, "m %" PRIu64 " %" PRIu64, op->id, op->size);
            break;
        case DMM_T_CALLOC:
            fprintf(f, "c %" PRIu64 " %" PRIu64 " %" PRIu64, op->id, op->arg, op->size);
            break;
        case DMM_T_REALLOC:
            fprintf(f, "r %" PRIu64 " %" PRIu64, op->id, op->size);
            break;
        case DMM_T_ALIGNED:
            fprintf(f, "a %" PRIu64 " %" PRIu64 " %" PRIu64 " %s", op->id, op->arg, op->size,
                    op->sub <= DMM_TA_PVALLOC ? api_names[op->sub] : "?");
            break;
        case DMM_T_FREE:
            fprintf(f, "f %" PRIu64, op->id);
            break;
        case DMM_T_SYNC:
            fprintf(f, "s %" PRIu64 " %" PRIu64, op->arg, op->size);
            break;
        default:
            return -1;
        }
        if (t->has_time)
            fprintf(f, " @%" PRIu64, op->t_ns);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

/* A line cursor over a text buffer (no NUL needed). */
typedef struct lines {
    const char *p, *end;
    uint64_t no;
} lines;

static int next_line(lines *L, const char **s, size_t *n)
{
    const char *e;
    if (L->p >= L->end)
        return 0;
    e = memchr(L->p, '\n', (size_t)(L->end - L->p));
    if (!e)
        e = L->end;
    *s = L->p;
    *n = (size_t)(e - L->p);
    if (*n && (*s)[*n - 1] == '\r')
        (*n)--;
    L->p = e < L->end ? e + 1 : e;
    L->no++;
    return 1;
}

/* Splits a line into at most max whitespace-separated tokens. */
static int tokens(const char *s, size_t n, const char **tok, size_t *len, int max)
{
    int k = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i >= n)
            break;
        if (k == max)
            return max + 1;
        tok[k] = s + i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        len[k] = (size_t)(s + i - tok[k]);
        k++;
    }
    return k;
}

static int parse_u64(const char *s, size_t n, uint64_t *v, int base)
{
    uint64_t x = 0;
    size_t i = 0;
    if (base == 16 && n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        i = 2;
    if (i >= n)
        return -1;
    for (; i < n; i++) {
        unsigned d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (base == 16 && c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return -1;
        if (x > (UINT64_MAX - d) / (uint64_t)base)
            return -1;
        x = x * (uint64_t)base + d;
    }
    *v = x;
    return 0;
}

static int tok_is(const char *s, size_t n, const char *w) { return strlen(w) == n && memcmp(s, w, n) == 0; }

static int append_meta(dmm_trace *t, const char *s, size_t n)
{
    size_t old = t->meta ? strlen(t->meta) : 0;
    char *m = realloc(t->meta, old + n + 2);
    if (!m)
        return -1;
    memcpy(m + old, s, n);
    m[old + n] = '\n';
    m[old + n + 1] = '\0';
    t->meta = m;
    return 0;
}

int dmm_trace_read_text(dmm_trace *t, const char *text, size_t len, dmm_trace_error *err)
{
    lines L = {text, text + len, 0};
    const char *s;
    size_t n;
    int seen_header = 0;
    dmm_trace_init(t);
    while (next_line(&L, &s, &n)) {
        const char *tok[8];
        size_t tl[8];
        int k;
        uint64_t v[4] = {0, 0, 0, 0};
        dmm_trace_op op;
        int nargs, has_t = 0;
        if (n == 0 || s[0] == '#')
            continue;
        if (!seen_header) {
            k = tokens(s, n, tok, tl, 2);
            if (k != 2 || !tok_is(tok[0], tl[0], "dmmtrace"))
                return fail_at(err, L.no, 1, "not a dmm text trace (first line must be 'dmmtrace 1')");
            if (!tok_is(tok[1], tl[1], "1"))
                return fail_at(err, L.no, 1, "unsupported text trace version '%.*s'", (int)tl[1], tok[1]);
            seen_header = 1;
            continue;
        }
        if (n > 5 && memcmp(s, "meta ", 5) == 0) {
            if (append_meta(t, s + 5, n - 5)) {
                fail_at(err, L.no, 1, "out of memory");
                goto bad;
            }
            continue;
        }
        k = tokens(s, n, tok, tl, 7);
        if (k == 2 && tok_is(tok[0], tl[0], "time") && tok_is(tok[1], tl[1], "on")) {
            t->has_time = 1;
            continue;
        }
        if (k < 3 || k > 7) {
            fail_at(err, L.no, 1, "expected '<thread> <op> <args>'");
            goto bad;
        }
        memset(&op, 0, sizeof op);
        if (tl[k - 1] > 1 && tok[k - 1][0] == '@') {
            if (!t->has_time || parse_u64(tok[k - 1] + 1, tl[k - 1] - 1, &op.t_ns, 10)) {
                fail_at(err, L.no, 1, "bad timestamp (or 'time on' missing)");
                goto bad;
            }
            has_t = 1;
            k--;
        }
        if (parse_u64(tok[0], tl[0], &v[0], 10) || v[0] >= DMM_TRACE_MAX_THREADS) {
            fail_at(err, L.no, 1, "bad thread id '%.*s'", (int)tl[0], tok[0]);
            goto bad;
        }
        op.tid = (uint32_t)v[0];
        if (tl[1] != 1) {
            fail_at(err, L.no, 1, "unknown operation '%.*s'", (int)tl[1], tok[1]);
            goto bad;
        }
        switch (tok[1][0]) {
        case 'm': op.kind = DMM_T_MALLOC; nargs = 2; break;
        case 'c': op.kind = DMM_T_CALLOC; nargs = 3; break;
        case 'r': op.kind = DMM_T_REALLOC; nargs = 2; break;
        case 'a': op.kind = DMM_T_ALIGNED; nargs = 4; break;
        case 'f': op.kind = DMM_T_FREE; nargs = 1; break;
        case 's': op.kind = DMM_T_SYNC; nargs = 2; break;
        default:
            fail_at(err, L.no, 1, "unknown operation '%c'", tok[1][0]);
            goto bad;
        }
        if (k - 2 != nargs) {
            fail_at(err, L.no, 1, "operation '%c' takes %d arguments, got %d", tok[1][0], nargs, k - 2);
            goto bad;
        }
        for (int a = 0; a < nargs; a++) {
            if (op.kind == DMM_T_ALIGNED && a == 3) {
                int found = 0;
                for (unsigned x = 0; x <= DMM_TA_PVALLOC; x++)
                    if (tok_is(tok[2 + a], tl[2 + a], api_names[x])) {
                        op.sub = (uint8_t)x;
                        found = 1;
                    }
                if (!found) {
                    fail_at(err, L.no, 1, "unknown aligned API '%.*s'", (int)tl[2 + a], tok[2 + a]);
                    goto bad;
                }
            } else if (parse_u64(tok[2 + a], tl[2 + a], &v[a], 10)) {
                fail_at(err, L.no, 1, "bad number '%.*s'", (int)tl[2 + a], tok[2 + a]);
                goto bad;
            }
        }
        switch (op.kind) {
        case DMM_T_MALLOC: case DMM_T_REALLOC: op.id = v[0]; op.size = v[1]; break;
        case DMM_T_CALLOC: op.id = v[0]; op.arg = v[1]; op.size = v[2]; break;
        case DMM_T_ALIGNED: op.id = v[0]; op.arg = v[1]; op.size = v[2]; break;
        case DMM_T_FREE: op.id = v[0]; break;
        case DMM_T_SYNC: op.arg = v[0]; op.size = v[1]; break;
        }
        if (t->has_time && !has_t) {
            fail_at(err, L.no, 1, "missing timestamp ('time on' was given)");
            goto bad;
        }
        if (dmm_trace_push(t, &op)) {
            fail_at(err, L.no, 1, "out of memory");
            goto bad;
        }
    }
    if (!seen_header)
        return fail_at(err, 1, 1, "empty text trace");
    if (dmm_trace_compact_threads(t)) {
        fail_at(err, 0, 0, "out of memory");
        goto bad;
    }
    return 0;
bad:
    dmm_trace_free(t);
    return -1;
}

/* ======================================================================
 * importers
 * ====================================================================== */

/* CS:APP malloc-lab: 4 header numbers (suggested heap size, ids, ops,
 * weight), then "a id size", "r id size", "f id".  Later trace sets free
 * NULL ("f -1") and open an object with realloc(NULL) ("r" on an id that is
 * not live): the first is a no-op and is dropped, the second becomes the
 * allocation it is.  Both are counted in the metadata. */
int dmm_trace_import_rep(dmm_trace *t, const char *text, size_t len, dmm_trace_error *err)
{
    lines L = {text, text + len, 0};
    const char *s;
    size_t n;
    int header = 0;
    uint64_t free_null = 0, realloc_null = 0;
    dmm_idmap live;
    dmm_trace_init(t);
    if (dmm_idmap_init(&live, 1024))
        return fail_at(err, 0, 1, "out of memory");
    while (next_line(&L, &s, &n)) {
        const char *tok[4];
        size_t tl[4];
        int k = tokens(s, n, tok, tl, 3);
        dmm_trace_op op;
        uint64_t a = 0, b = 0, v;
        if (k == 0)
            continue;
        if (header < 4) {
            if (k != 1 || parse_u64(tok[0], tl[0], &a, 10)) {
                fail_at(err, L.no, 1, ".rep header line %d must be one number", header + 1);
                goto bad;
            }
            header++;
            continue;
        }
        memset(&op, 0, sizeof op);
        if (tl[0] != 1 || k > 3) {
            fail_at(err, L.no, 1, "expected 'a id size', 'r id size' or 'f id', got '%.*s'", (int)(n > 60 ? 60 : n),
                    s);
            goto bad;
        }
        switch (tok[0][0]) {
        case 'a':
        case 'r':
            if (k != 3 || parse_u64(tok[1], tl[1], &a, 10) || parse_u64(tok[2], tl[2], &b, 10)) {
                fail_at(err, L.no, 1, "'%c' takes an id (a number >= 0) and a size (a number >= 0)", tok[0][0]);
                goto bad;
            }
            op.kind = DMM_T_MALLOC;
            if (tok[0][0] == 'r') {
                if (dmm_idmap_get(&live, a, &v) == 0)
                    op.kind = DMM_T_REALLOC;
                else
                    realloc_null++; /* realloc(NULL, size) */
            } else if (dmm_idmap_get(&live, a, &v) == 0) {
                fail_at(err, L.no, 1, "'a %" PRIu64 "': id %" PRIu64 " is already allocated", a, a);
                goto bad;
            }
            op.id = a;
            op.size = b;
            if (op.kind == DMM_T_REALLOC && b == 0)
                dmm_idmap_del(&live, a); /* realloc(p, 0) frees, as the replay does */
            else if (dmm_idmap_put(&live, a, 1)) {
                fail_at(err, L.no, 1, "out of memory");
                goto bad;
            }
            break;
        case 'f':
            if (k == 2 && tl[1] == 2 && tok[1][0] == '-' && tok[1][1] == '1') {
                free_null++; /* free(NULL): nothing to replay */
                continue;
            }
            if (k != 2 || parse_u64(tok[1], tl[1], &a, 10)) {
                fail_at(err, L.no, 1, "'f' takes an id (a number >= 0, or -1 for NULL)");
                goto bad;
            }
            if (dmm_idmap_get(&live, a, &v) != 0) {
                fail_at(err, L.no, 1, "'f %" PRIu64 "': id %" PRIu64 " is not allocated", a, a);
                goto bad;
            }
            dmm_idmap_del(&live, a);
            op.kind = DMM_T_FREE;
            op.id = a;
            break;
        default:
            fail_at(err, L.no, 1, "unknown .rep operation '%c' (expected a, r or f)", tok[0][0]);
            goto bad;
        }
        if (dmm_trace_push(t, &op)) {
            fail_at(err, L.no, 1, "out of memory");
            goto bad;
        }
    }
    dmm_idmap_free(&live);
    if (header < 4)
        return fail_at(err, L.no, 1, "truncated .rep header (%d of 4 numbers)", header);
    {
        char meta[128];
        snprintf(meta, sizeof meta, "source=rep\nrep_free_null=%" PRIu64 "\nrep_realloc_null=%" PRIu64 "\n",
                 free_null, realloc_null);
        if (dmm_trace_set_meta(t, meta)) {
            dmm_trace_free(t);
            return fail_at(err, 0, 1, "out of memory");
        }
    }
    return 0;
bad:
    dmm_idmap_free(&live);
    dmm_trace_free(t);
    return -1;
}

/* glibc mtrace(): "@ caller + ADDR SIZE", "@ caller - ADDR", "@ caller < OLD"
 * followed by "@ caller > NEW SIZE" for realloc, "@ caller ! ADDR SIZE" for a
 * failed realloc, "(nil)" for the address of a failed allocation, and
 * "= Start"/"= End" lines.  The caller part may contain spaces, so the
 * operation is found from the end of the line.  Addresses become object
 * ids; realloc keeps the object. */
#define MT_MAX_TOKENS 32
int dmm_trace_import_mtrace(dmm_trace *t, const char *text, size_t len, dmm_trace_error *err)
{
    lines L = {text, text + len, 0};
    const char *s;
    size_t n;
    dmm_idmap live; /* address -> object id */
    uint64_t next_id = 1, pending_old = 0;
    int pending = 0, any = 0;
    dmm_trace_init(t);
    if (dmm_idmap_init(&live, 1024))
        return fail_at(err, 0, 1, "out of memory");
    while (next_line(&L, &s, &n)) {
        const char *tok[MT_MAX_TOKENS];
        size_t tl[MT_MAX_TOKENS];
        int k, i, nil;
        char opc;
        dmm_trace_op op;
        uint64_t addr = 0, size = 0, id;
        if (n == 0 || s[0] == '=')
            continue;
        k = tokens(s, n, tok, tl, MT_MAX_TOKENS);
        if (k > MT_MAX_TOKENS) {
            fail_at(err, L.no, 1, "mtrace line has more than %d fields", MT_MAX_TOKENS);
            goto bad;
        }
        if (k < 3 || !tok_is(tok[0], tl[0], "@")) {
            fail_at(err, L.no, 1, "not an mtrace line (expected '@ caller OP ADDR [SIZE]')");
            goto bad;
        }
        /* OP is the second or third token from the end */
        i = -1;
        for (int back = 2; back <= 3 && i < 0; back++) {
            int j = k - back;
            if (j >= 1 && tl[j] == 1 && tok[j][0] != '\0' && strchr("+-<>!", tok[j][0]))
                i = j;
        }
        if (i < 0) {
            fail_at(err, L.no, 1, "mtrace line without an operation and address");
            goto bad;
        }
        opc = tok[i][0];
        nil = tok_is(tok[i + 1], tl[i + 1], "(nil)");
        if (!nil && parse_u64(tok[i + 1], tl[i + 1], &addr, 16)) {
            fail_at(err, L.no, 1, "bad mtrace address '%.*s'", (int)tl[i + 1], tok[i + 1]);
            goto bad;
        }
        if (opc == '+' || opc == '>' || opc == '!') {
            if (i + 2 >= k || parse_u64(tok[i + 2], tl[i + 2], &size, 16)) {
                fail_at(err, L.no, 1, "mtrace '%c' without a size", opc);
                goto bad;
            }
        } else if (i + 2 != k) {
            fail_at(err, L.no, 1, "mtrace '%c' takes only an address", opc);
            goto bad;
        }
        memset(&op, 0, sizeof op);
        any = 1;
        if (pending && opc != '>') {
            /* "<" without ">": the realloc freed the object (size 0) */
            if (dmm_idmap_get(&live, pending_old, &id) == 0) {
                op.kind = DMM_T_FREE;
                op.id = id;
                dmm_idmap_del(&live, pending_old);
                if (dmm_trace_push(t, &op))
                    goto oom;
                memset(&op, 0, sizeof op);
            }
            pending = 0;
        }
        if (nil && opc != '-')
            continue; /* failed allocation: nothing happened */
        switch (opc) {
        case '!':
            continue; /* failed realloc: the object is unchanged */
        case '+':
        case '>':
            if (opc == '>' && pending && dmm_idmap_get(&live, pending_old, &id) == 0) {
                dmm_idmap_del(&live, pending_old);
                op.kind = DMM_T_REALLOC;
                op.id = id;
            } else {
                op.kind = DMM_T_MALLOC;
                op.id = next_id++;
            }
            pending = 0;
            {
                uint64_t old;
                if (dmm_idmap_get(&live, addr, &old) == 0 && old != op.id) {
                    /* missed free (memory released by an untraced path) */
                    dmm_trace_op fr;
                    memset(&fr, 0, sizeof fr);
                    fr.kind = DMM_T_FREE;
                    fr.id = old;
                    if (dmm_trace_push(t, &fr))
                        goto oom;
                }
            }
            op.size = size;
            if (dmm_idmap_put(&live, addr, op.id) || dmm_trace_push(t, &op))
                goto oom;
            break;
        case '-':
            if (nil || dmm_idmap_get(&live, addr, &id) != 0)
                continue; /* free(NULL) or memory allocated before tracing */
            op.kind = DMM_T_FREE;
            op.id = id;
            dmm_idmap_del(&live, addr);
            if (dmm_trace_push(t, &op))
                goto oom;
            break;
        case '<':
            pending = 1;
            pending_old = addr;
            break;
        }
    }
    dmm_idmap_free(&live);
    if (!any) {
        dmm_trace_free(t);
        return fail_at(err, L.no, 1, "no mtrace records found");
    }
    return dmm_trace_set_meta(t, "source=mtrace\n");
oom:
    fail_at(err, L.no, 1, "out of memory");
bad:
    dmm_idmap_free(&live);
    dmm_trace_free(t);
    return -1;
}

/* ======================================================================
 * load / save
 * ====================================================================== */

static int looks_like_rep(const char *p, size_t n)
{
    /* four lines of digits at the start */
    lines L = {p, p + n, 0};
    const char *s;
    size_t l;
    for (int i = 0; i < 4; i++) {
        if (!next_line(&L, &s, &l) || l == 0)
            return 0;
        for (size_t j = 0; j < l; j++)
            if ((s[j] < '0' || s[j] > '9') && s[j] != ' ' && s[j] != '\t' && s[j] != '.')
                return 0;
    }
    return 1;
}

int dmm_trace_load(dmm_trace *t, const char *path, dmm_trace_error *err)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc;
    dmm_trace_init(t);
    if (!f)
        return fail_at(err, 0, 0, "cannot open %s: %s", path, strerror(errno));
    for (;;) {
        size_t got;
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 65536;
            unsigned char *p = realloc(buf, nc);
            if (!p) {
                fclose(f);
                free(buf);
                return fail_at(err, len, 0, "out of memory reading %s", path);
            }
            buf = p;
            cap = nc;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        fclose(f);
        free(buf);
        return fail_at(err, len, 0, "read error on %s", path);
    }
    fclose(f);
    if (len >= 8 && memcmp(buf, MAGIC, 8) == 0)
        rc = dmm_trace_read_binary(t, buf, len, err);
    else if (len >= 8 && memcmp(buf, "dmmtrace", 8) == 0)
        rc = dmm_trace_read_text(t, (const char *)buf, len, err);
    else if (len >= 2 && (memcmp(buf, "= ", 2) == 0 || memcmp(buf, "@ ", 2) == 0))
        rc = dmm_trace_import_mtrace(t, (const char *)buf, len, err);
    else if (looks_like_rep((const char *)buf, len))
        rc = dmm_trace_import_rep(t, (const char *)buf, len, err);
    else
        rc = fail_at(err, 0, 0, "%s: unknown trace format (not dmm binary/text, .rep or mtrace)", path);
    free(buf);
    return rc;
}

/* dmm_trace_save: trace_finish.c (temporary file, then rename). */

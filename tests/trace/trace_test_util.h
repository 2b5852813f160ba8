// tests/trace/trace_test_util.h - helpers shared by the trace tests:
// seeded random traces, in-memory writers, comparisons.
#ifndef DMM_TESTS_TRACE_UTIL_H
#define DMM_TESTS_TRACE_UTIL_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dmm/trace.h"

namespace dmmt {

// Owns a dmm_trace (freed on scope exit).
struct Trace {
    dmm_trace t;
    Trace() { dmm_trace_init(&t); }
    ~Trace() { dmm_trace_free(&t); }
    Trace(const Trace &) = delete;
    Trace &operator=(const Trace &) = delete;
    dmm_trace *operator->() { return &t; }
    const dmm_trace *operator->() const { return &t; }
    dmm_trace *get() { return &t; }
    const dmm_trace *get() const { return &t; }
};

struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
    uint64_t next()
    {
        // splitmix64
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t below(uint64_t n) { return n ? next() % n : 0; }
    bool chance(unsigned pct) { return below(100) < pct; }
};

inline dmm_trace_op make_op(uint8_t kind, uint32_t tid, uint64_t id, uint64_t size = 0, uint64_t arg = 0,
                            uint8_t sub = 0, uint64_t t_ns = 0)
{
    dmm_trace_op op;
    std::memset(&op, 0, sizeof op);
    op.kind = kind;
    op.tid = tid;
    op.id = id;
    op.size = size;
    op.arg = arg;
    op.sub = sub;
    op.t_ns = t_ns;
    return op;
}

inline void push(dmm_trace *t, const dmm_trace_op &op)
{
    if (dmm_trace_push(t, &op) != 0)
        std::abort();
}

// Options for random_trace.
struct Shape {
    size_t ops = 500;
    uint32_t threads = 1;
    bool time = false;
    bool meta = false;
    bool huge_values = false; // sizes/ids/alignments up to 2^63 (varint coverage)
    bool reuse_ids = true;    // allocate freed ids again
};

// A valid trace (validates after dmm_trace_add_syncs) drawn from a seed:
// every kind of operation, cross-thread frees and reallocs, id reuse.
inline void random_trace(dmm_trace *t, uint64_t seed, const Shape &sh)
{
    Rng r(seed);
    struct Obj {
        uint64_t id;
    };
    std::vector<Obj> live;
    std::vector<uint64_t> freed;
    uint64_t next_id = 1 + r.below(3), now = 1000;
    dmm_trace_init(t);
    t->has_time = sh.time;
    if (sh.meta) {
        std::string m = "program=random\nseed=" + std::to_string(seed) + "\nthreads=" + std::to_string(sh.threads) + "\n";
        if (dmm_trace_set_meta(t, m.c_str()))
            std::abort();
    }
    for (size_t i = 0; i < sh.ops; i++) {
        uint32_t tid = (uint32_t)r.below(sh.threads);
        uint64_t size = sh.huge_values && r.chance(10) ? (r.next() >> r.below(64)) : 1 + r.below(r.chance(10) ? 70000 : 300);
        if (sh.time) {
            // mostly increasing, sometimes back in time (another thread's clock)
            if (r.chance(5))
                now -= r.below(now / 2 + 1);
            else
                now += r.below(r.chance(5) ? 1000000000ull : 5000);
        }
        unsigned pick = (unsigned)r.below(100);
        if (live.empty() || pick < 45) {
            uint64_t id;
            if (sh.reuse_ids && !freed.empty() && r.chance(30)) {
                size_t k = (size_t)r.below(freed.size());
                id = freed[k];
                freed[k] = freed.back();
                freed.pop_back();
            } else {
                id = next_id;
                next_id += sh.huge_values && r.chance(5) ? (r.next() >> 2) : 1 + r.below(2);
            }
            unsigned kind = (unsigned)r.below(10);
            if (kind < 6) {
                push(t, make_op(DMM_T_MALLOC, tid, id, size, 0, 0, now));
            } else if (kind < 8) {
                uint64_t nmemb = 1 + r.below(16);
                push(t, make_op(DMM_T_CALLOC, tid, id, nmemb * size, nmemb, 0, now));
            } else {
                uint8_t api = (uint8_t)r.below(DMM_TA_PVALLOC + 1);
                uint64_t align = api >= DMM_TA_VALLOC ? 4096 : (uint64_t)1 << (3 + r.below(sh.huge_values ? 60 : 10));
                push(t, make_op(DMM_T_ALIGNED, tid, id, size, align, api, now));
            }
            live.push_back({id});
        } else if (pick < 65) {
            size_t k = (size_t)r.below(live.size());
            push(t, make_op(DMM_T_REALLOC, tid, live[k].id, size, 0, 0, now));
        } else {
            size_t k = (size_t)r.below(live.size());
            push(t, make_op(DMM_T_FREE, tid, live[k].id, 0, 0, 0, now));
            freed.push_back(live[k].id);
            live[k] = live.back();
            live.pop_back();
        }
    }
    if (sh.threads > 1 && dmm_trace_add_syncs(t))
        std::abort();
}

// Serialises with a writer into a string.
inline std::string to_bytes(const dmm_trace *t, bool text)
{
    char *buf = nullptr;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        std::abort();
    int rc = text ? dmm_trace_write_text(t, f) : dmm_trace_write_binary(t, f);
    std::fclose(f);
    std::string s(buf ? buf : "", n);
    std::free(buf);
    if (rc != 0)
        return std::string("<writer failed>");
    return s;
}

inline int read_bin(dmm_trace *t, const std::string &s, dmm_trace_error *e)
{
    return dmm_trace_read_binary(t, reinterpret_cast<const uint8_t *>(s.data()), s.size(), e);
}
inline int read_txt(dmm_trace *t, const std::string &s, dmm_trace_error *e)
{
    return dmm_trace_read_text(t, s.data(), s.size(), e);
}

// First index where the operations differ, or -1 when equal (t_ns compared
// only when both have timestamps).
inline long first_diff(const dmm_trace *a, const dmm_trace *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    bool tm = a->has_time && b->has_time;
    for (size_t i = 0; i < n; i++) {
        const dmm_trace_op &x = a->ops[i], &y = b->ops[i];
        if (x.kind != y.kind || x.sub != y.sub || x.tid != y.tid || x.id != y.id || x.size != y.size ||
            x.arg != y.arg || (tm && x.t_ns != y.t_ns))
            return (long)i;
    }
    return a->n == b->n ? -1 : (long)n;
}

inline std::string op_str(const dmm_trace_op &o)
{
    char b[160];
    std::snprintf(b, sizeof b, "{kind %u sub %u tid %u id %llu size %llu arg %llu t %llu}", o.kind, o.sub, o.tid,
                  (unsigned long long)o.id, (unsigned long long)o.size, (unsigned long long)o.arg,
                  (unsigned long long)o.t_ns);
    return b;
}

inline std::string err_str(const dmm_trace_error &e)
{
    return std::string(e.is_line ? "line " : "offset ") + std::to_string(e.offset) + ": " + e.reason;
}

} // namespace dmmt

#endif

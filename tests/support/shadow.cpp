// tests/support/shadow.cpp - the seeded random run with a shadow model.
//
// After EVERY operation the run verifies:
//   - dmm_heap_check passes and no error callback fired;
//   - a returned block is DMM_HEAP_ALIGN-aligned and aligned to the
//     requested alignment, usable_size >= request, it lies inside a caller
//     buffer (or, with growth, outside all of them and known to the walker),
//     and it overlaps no other live block (ordered map of intervals);
//   - calloc memory is zero; realloc keeps the prefix;
//   - the fill pattern of the touched block and of a sample of live blocks.
// Every few operations, and at the end, it also verifies every live
// block's pattern, cross-checks the walker (address order, contiguity, the
// set of used blocks equals the shadow set, usable sizes agree) and the
// statistics (live count, failures, live bytes in blocks and, at FULL,
// requested bytes).  At the end it frees everything, expects one large
// allocation to succeed when coalescing is unlimited, resets and destroys.
#include <algorithm>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <unistd.h>

#include "dmm_test_support.h"

namespace dmmt {
namespace {

// ---- crash notes ---------------------------------------------------------------
// When the library stops the process (dmm_port_abort at assertion level 3,
// or a crash), gtest cannot print the failure; a signal handler prints the
// configuration, the seed and the operation index of the run in progress.
// Per thread: several runs may go on at once (tests/heap/test_threads.cpp).
thread_local char g_note[1024];
thread_local volatile size_t g_note_op = 0;
thread_local volatile sig_atomic_t g_note_active = 0;

void write_str(const char *s) {
    size_t n = std::strlen(s);
    while (n > 0) {
        ssize_t w = ::write(2, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

extern "C" void crash_note_handler(int sig) {
    if (g_note_active) {
        char num[32];
        size_t v = g_note_op, i = sizeof num - 1;
        num[i] = '\0';
        do {
            num[--i] = (char)('0' + v % 10);
            v /= 10;
        } while (v && i > 0);
        write_str("\n*** dmm test: the process stopped inside a random run\n    ");
        write_str(g_note);
        write_str("\n    at op #");
        write_str(num + i);
        write_str("\n");
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DMMT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DMMT_SANITIZED 1
#endif
#endif

void install_crash_note(const std::string &note) {
    static std::once_flag once;
    std::call_once(once, [] {
        std::signal(SIGABRT, crash_note_handler);
        std::signal(SIGTRAP, crash_note_handler);
        std::signal(SIGILL, crash_note_handler);
#ifndef DMMT_SANITIZED
        std::signal(SIGSEGV, crash_note_handler); // sanitizers print their own report
        std::signal(SIGBUS, crash_note_handler);
#endif
    });
    std::snprintf(g_note, sizeof g_note, "%s", note.c_str());
    g_note_op = 0;
    g_note_active = 1;
}

enum OpKind {
    OP_MALLOC,
    OP_MALLOC0,
    OP_CALLOC,
    OP_REALLOC,
    OP_REALLOC_NULL,
    OP_REALLOC_ZERO,
    OP_ALIGNED,
    OP_REALLOC_ALIGNED,
    OP_FREE,
    OP_FREE_NULL,
    OP_FREE_ALL,
    OP_BIG,
    OP_RESET
};

const char *op_name(int k) {
    static const char *const names[] = {"malloc",         "malloc(0)",         "calloc",
                                        "realloc",        "realloc(NULL,n)",   "realloc(p,0)",
                                        "aligned_alloc",  "realloc_aligned",   "free",
                                        "free(NULL)",     "free-all",          "big-malloc",
                                        "reset"};
    return names[k];
}

struct OpRec {
    size_t index;
    int kind;
    void *ptr;
    size_t a, b; // size / n,size / align,size
    void *result;
};

struct Block {
    void *p;
    size_t req;
    size_t usable;
    size_t align;
    size_t filled;
    uint64_t id;
};

#ifdef DMM_TEST_ANNOTATE
constexpr bool kAnnotate = true;
#else
constexpr bool kAnnotate = false;
#endif

class Runner {
public:
    explicit Runner(const RunSpec &spec)
        : spec_(spec), cfg_(spec.cfg), rng_(spec.seed), main_(spec.buf_size, spec.misalign) {
        errs_.attach(&cfg_);
        max_req_ = spec.max_request ? spec.max_request : std::max<size_t>(spec.buf_size / 4, 256);
    }

    RunResult run();

private:
    // -- failure bookkeeping
    bool fail(const std::string &what);
    std::string recent() const;
    void note(int kind, void *ptr, size_t a, size_t b, void *res);

    // -- model
    size_t draw_size();
    size_t draw_align();
    bool accept_new(void *p, size_t req, size_t align, uint64_t id, size_t keep, const char *who);
    void remove_at(size_t i);
    bool verify(const Block &b, const char *when);
    bool post_op(long touched);
    bool cross_check();
    bool check_stats(const std::vector<dmm_heap_block_info> &w);
    bool in_caller_buffers(const void *p, size_t n) const;
    bool touches_caller_buffers(const void *p, size_t n) const;

    // -- operations
    bool op_malloc(size_t n, int kind);
    bool op_calloc();
    bool op_realloc(int kind);
    bool op_aligned();
    bool op_free(size_t i);
    bool free_all();
    bool big_alloc();
    bool reset_and_reuse();

    const RunSpec &spec_;
    dmm_heap_config cfg_;
    Rng rng_;
    Buffer main_;
    std::vector<std::unique_ptr<Buffer>> extras_;
    dmm_heap *h_ = nullptr;
    ErrorLog errs_;
    size_t max_req_;

    std::vector<Block> live_;
    std::map<uintptr_t, uintptr_t> iv_; // start -> end of live payload intervals
    uint64_t next_id_ = 1;
    size_t op_index_ = 0;

    // expected statistics
    uint64_t exp_failed_ = 0, n_malloc_ = 0, n_calloc_ = 0, n_realloc_ = 0, n_aligned_ = 0,
             n_free_ = 0;

    OpRec ring_[12]{};
    size_t ring_n_ = 0;

    RunResult res_;
};

bool Runner::fail(const std::string &what) {
    if (!res_.ok)
        return false;
    res_.ok = false;
    char head[128];
    std::snprintf(head, sizeof head, "\n  at op #%zu of %zu (live blocks %zu): ", op_index_,
                  spec_.ops, live_.size());
    res_.message = describe(cfg_, spec_.seed) + head + what + "\n  recent ops:\n" + recent();
    return false;
}

std::string Runner::recent() const {
    std::string s;
    size_t n = std::min<size_t>(ring_n_, 12);
    for (size_t k = 0; k < n; ++k) {
        const OpRec &r = ring_[(ring_n_ - n + k) % 12];
        char line[200];
        std::snprintf(line, sizeof line, "    #%zu %s ptr=%p a=%zu b=%zu -> %p\n", r.index,
                      op_name(r.kind), r.ptr, r.a, r.b, r.result);
        s += line;
    }
    return s;
}

void Runner::note(int kind, void *ptr, size_t a, size_t b, void *res) {
    ring_[ring_n_ % 12] = OpRec{op_index_, kind, ptr, a, b, res};
    ++ring_n_;
}

size_t Runner::draw_size() {
    uint64_t u = rng_.below(1000);
    if (u < 15)
        return 0;
    if (u < 550)
        return (size_t)rng_.range(1, 64);
    if (u < 800)
        return (size_t)rng_.range(65, 512);
    if (u < 960)
        return (size_t)rng_.range(513, std::max<size_t>(max_req_ / 8, 514));
    if (u < 990 || cfg_.grow_granularity == 0)
        return (size_t)rng_.range(max_req_ / 8, max_req_);
    // With growth: requests beyond the first buffer force new regions.
    return (size_t)rng_.range(spec_.buf_size / 2, spec_.buf_size * 2);
}

size_t Runner::draw_align() {
    static const std::vector<size_t> small = {1, 2, 4, 8, 16, 32, 64};
    static const std::vector<size_t> large = {128, 256, 512, 1024, 4096};
    return rng_.chance(75) ? rng_.pick(small) : rng_.pick(large);
}

bool Runner::in_caller_buffers(const void *p, size_t n) const {
    if (main_.contains(p, n))
        return true;
    for (const auto &b : extras_)
        if (b->contains(p, n))
            return true;
    return false;
}

bool Runner::touches_caller_buffers(const void *p, size_t n) const {
    // True when [p, p+n) intersects any caller buffer at all.
    auto hits = [&](const Buffer &b) {
        uintptr_t lo = (uintptr_t)const_cast<Buffer &>(b).data();
        uintptr_t hi = lo + b.size();
        uintptr_t a = (uintptr_t)p;
        return a < hi && a + n > lo;
    };
    if (hits(main_))
        return true;
    for (const auto &b : extras_)
        if (hits(*b))
            return true;
    return false;
}

bool Runner::accept_new(void *p, size_t req, size_t align, uint64_t id, size_t keep,
                        const char *who) {
    char msg[256];
    uintptr_t a = (uintptr_t)p;
    if (a % DMM_HEAP_ALIGN != 0) {
        std::snprintf(msg, sizeof msg, "%s returned %p, not aligned to DMM_HEAP_ALIGN=%zu", who, p,
                      (size_t)DMM_HEAP_ALIGN);
        return fail(msg);
    }
    if (align > 1 && a % align != 0) {
        std::snprintf(msg, sizeof msg, "%s returned %p, not aligned to the requested %zu", who, p,
                      align);
        return fail(msg);
    }
    size_t usable = dmm_heap_usable_size(h_, p);
    if (usable < req) {
        std::snprintf(msg, sizeof msg, "%s(%zu) returned %p with usable_size %zu < request", who,
                      req, p, usable);
        return fail(msg);
    }
    size_t extent = std::max<size_t>(usable, 1);
    if (!in_caller_buffers(p, extent)) {
        if (cfg_.grow_granularity == 0 || touches_caller_buffers(p, extent)) {
            std::snprintf(msg, sizeof msg,
                          "%s returned [%p, +%zu) which is outside the heap's buffers", who, p,
                          extent);
            return fail(msg);
        }
    }
    uintptr_t end = a + extent;
    auto it = iv_.upper_bound(a);
    if (it != iv_.begin()) {
        auto pr = std::prev(it);
        if (pr->second > a) {
            std::snprintf(msg, sizeof msg, "%s returned [%p,+%zu) overlapping live block [%p,%p)",
                          who, p, extent, (void *)pr->first, (void *)pr->second);
            return fail(msg);
        }
    }
    if (it != iv_.end() && it->first < end) {
        std::snprintf(msg, sizeof msg, "%s returned [%p,+%zu) overlapping live block [%p,%p)", who,
                      p, extent, (void *)it->first, (void *)it->second);
        return fail(msg);
    }
    iv_[a] = end;
    Block b;
    b.p = p;
    b.req = req;
    b.usable = usable;
    b.align = align;
    b.id = id;
    bool full = spec_.fill_usable && !kAnnotate && (id % 4 == 0);
    b.filled = full ? usable : req;
    if (keep > b.filled)
        keep = b.filled;
    fill_pattern(p, keep, b.filled, id);
    live_.push_back(b);
    res_.peak_live = std::max(res_.peak_live, live_.size());
    return true;
}

void Runner::remove_at(size_t i) {
    iv_.erase((uintptr_t)live_[i].p);
    live_[i] = live_.back();
    live_.pop_back();
}

bool Runner::verify(const Block &b, const char *when) {
    size_t off = find_pattern_mismatch(b.p, 0, b.filled, b.id);
    if (off == SIZE_MAX)
        return true;
    char msg[300];
    std::snprintf(msg, sizeof msg,
                  "%s: block id %" PRIu64 " at %p (req %zu, usable %zu, filled %zu) corrupted at "
                  "offset %zu: 0x%02x, expected 0x%02x",
                  when, b.id, b.p, b.req, b.usable, b.filled, off,
                  static_cast<const unsigned char *>(b.p)[off], pattern_byte(b.id, off));
    return fail(msg);
}

bool Runner::post_op(long touched) {
    dmm_heap_check_report rep{};
    dmm_status st = dmm_heap_check(h_, &rep);
    if (st != DMM_OK)
        return fail(std::string("dmm_heap_check failed: ") + dmm_status_str(st) + ", " +
                    report_str(rep));
    if (!errs_.errors.empty()) {
        const dmm_error &e = errs_.errors.front();
        char msg[256];
        std::snprintf(msg, sizeof msg, "unexpected error callback: kind %s op %d ptr %p: %s",
                      err_name(e.kind), (int)e.op, e.ptr, e.message);
        return fail(msg);
    }
    if (touched >= 0 && (size_t)touched < live_.size() &&
        !verify(live_[(size_t)touched], "after the operation"))
        return false;
    if (!live_.empty()) {
        for (int k = 0; k < 3; ++k)
            if (!verify(live_[rng_.below(live_.size())], "sampled after the operation"))
                return false;
    }
    if (op_index_ % 32 == 31) {
        for (const Block &b : live_)
            if (!verify(b, "full sweep"))
                return false;
        if (!main_.guards_intact())
            return fail("bytes around the first buffer were written");
        for (const auto &x : extras_)
            if (!x->guards_intact())
                return fail("bytes around an added region were written");
    }
    if (op_index_ % 8 == 7 && !cross_check())
        return false;
    return true;
}

bool Runner::cross_check() {
    int rc = 0;
    std::vector<dmm_heap_block_info> w = walk_all(h_, &rc);
    char msg[300];
    if (rc != 0) {
        std::snprintf(msg, sizeof msg, "dmm_heap_walk returned %d on a heap the checker accepts",
                      rc);
        return fail(msg);
    }
    std::map<uintptr_t, const dmm_heap_block_info *> used;
    for (size_t i = 0; i < w.size(); ++i) {
        const dmm_heap_block_info &b = w[i];
        if ((uintptr_t)b.payload % DMM_HEAP_ALIGN != 0 || b.block_size % DMM_HEAP_ALIGN != 0 ||
            (uintptr_t)b.payload <= (uintptr_t)b.block ||
            (uintptr_t)b.payload + b.usable > (uintptr_t)b.block + b.block_size) {
            std::snprintf(msg, sizeof msg,
                          "walker block %zu inconsistent: block %p payload %p size %zu usable %zu",
                          i, b.block, b.payload, b.block_size, b.usable);
            return fail(msg);
        }
        if (!in_caller_buffers(b.block, b.block_size) &&
            (cfg_.grow_granularity == 0 || touches_caller_buffers(b.block, b.block_size))) {
            std::snprintf(msg, sizeof msg, "walker block %p (+%zu) lies outside the heap's buffers",
                          b.block, b.block_size);
            return fail(msg);
        }
        if (i > 0) {
            const dmm_heap_block_info &a = w[i - 1];
            if (b.region < a.region) {
                std::snprintf(msg, sizeof msg, "walker region index went back from %u to %u",
                              a.region, b.region);
                return fail(msg);
            }
            if (b.region == a.region &&
                (uintptr_t)a.block + a.block_size != (uintptr_t)b.block) {
                std::snprintf(msg, sizeof msg,
                              "walker blocks not contiguous in region %u: %p+%zu then %p", b.region,
                              a.block, a.block_size, b.block);
                return fail(msg);
            }
        }
        if (b.state == DMM_BLOCK_USED)
            used[(uintptr_t)b.payload] = &b;
    }
    if (used.size() != live_.size()) {
        std::snprintf(msg, sizeof msg, "walker sees %zu used blocks, the shadow has %zu live",
                      used.size(), live_.size());
        return fail(msg);
    }
    for (const Block &s : live_) {
        auto it = used.find((uintptr_t)s.p);
        if (it == used.end()) {
            std::snprintf(msg, sizeof msg, "live block %p (req %zu) is not a used block in the walk",
                          s.p, s.req);
            return fail(msg);
        }
        const dmm_heap_block_info &b = *it->second;
        if (b.usable != s.usable) {
            std::snprintf(msg, sizeof msg, "walker usable %zu != usable_size %zu for %p", b.usable,
                          s.usable, s.p);
            return fail(msg);
        }
        if (cfg_.stats == DMM_STATS_FULL && b.requested != s.req) {
            std::snprintf(msg, sizeof msg, "walker requested %zu != %zu for %p at FULL stats",
                          b.requested, s.req, s.p);
            return fail(msg);
        }
    }
    return check_stats(w);
}

bool Runner::check_stats(const std::vector<dmm_heap_block_info> &w) {
    dmm_heap_stats st = dmm_heap_get_stats(h_);
    char msg[300];
    size_t used_bytes = 0, free_bytes = 0, top_bytes = 0, largest = 0;
    for (const auto &b : w) {
        if (b.state == DMM_BLOCK_USED)
            used_bytes += b.block_size;
        else
            free_bytes += b.block_size;
        if (b.state == DMM_BLOCK_TOP)
            top_bytes += b.block_size;
        if ((b.state == DMM_BLOCK_FREE || b.state == DMM_BLOCK_TOP) && b.block_size > largest)
            largest = b.block_size;
    }
    if (st.footprint == 0)
        return fail("stats footprint is 0");
    if (st.peak_footprint < st.footprint)
        return fail("stats peak_footprint < footprint");
    // Kept at every level: top bytes and the extent.
    if (st.top_bytes != top_bytes) {
        std::snprintf(msg, sizeof msg, "stats top_bytes %zu != walked top blocks %zu", st.top_bytes,
                      top_bytes);
        return fail(msg);
    }
    if (st.extent != st.footprint - st.top_bytes || st.peak_extent < st.extent) {
        std::snprintf(msg, sizeof msg, "stats extent %zu / peak %zu inconsistent with footprint %zu - top %zu",
                      st.extent, st.peak_extent, st.footprint, st.top_bytes);
        return fail(msg);
    }
    if (st.free_bytes != free_bytes || st.largest_free != largest) {
        std::snprintf(msg, sizeof msg,
                      "stats free_bytes %zu / largest_free %zu != walked free+quick+top %zu / largest %zu",
                      st.free_bytes, st.largest_free, free_bytes, largest);
        return fail(msg);
    }
    {
        // dmm_heap_get_counters: the same snapshot without the walk.
        dmm_heap_stats c = dmm_heap_get_counters(h_);
        if (c.free_bytes != 0 || c.largest_free != 0 || c.footprint != st.footprint ||
            c.top_bytes != st.top_bytes || c.extent != st.extent || c.live_count != st.live_count ||
            c.malloc_count != st.malloc_count || c.live_block_bytes != st.live_block_bytes)
            return fail("dmm_heap_get_counters differs from dmm_heap_get_stats");
    }
    if (cfg_.stats == DMM_STATS_OFF) {
        if (st.malloc_count != 0 || st.live_count != 0 || st.free_count != 0) {
            std::snprintf(msg, sizeof msg,
                          "stats OFF but counters are kept: malloc %" PRIu64 " live %zu free %" PRIu64,
                          st.malloc_count, st.live_count, st.free_count);
            return fail(msg);
        }
        return true;
    }
    if (st.live_count != live_.size()) {
        std::snprintf(msg, sizeof msg, "stats live_count %zu != shadow live blocks %zu",
                      st.live_count, live_.size());
        return fail(msg);
    }
    if (st.failed_count != exp_failed_) {
        std::snprintf(msg, sizeof msg, "stats failed_count %" PRIu64 " != observed failures %" PRIu64,
                      st.failed_count, exp_failed_);
        return fail(msg);
    }
    if (st.error_count != 0)
        return fail("stats error_count != 0 in a run without misuse");
    if (st.calloc_count != n_calloc_) {
        std::snprintf(msg, sizeof msg, "stats calloc_count %" PRIu64 " != %" PRIu64,
                      st.calloc_count, n_calloc_);
        return fail(msg);
    }
    if (st.malloc_count < n_malloc_ || st.realloc_count < n_realloc_ ||
        st.aligned_count < n_aligned_ || st.free_count < n_free_) {
        std::snprintf(msg, sizeof msg,
                      "stats counts too low: malloc %" PRIu64 "/%" PRIu64 " realloc %" PRIu64
                      "/%" PRIu64 " aligned %" PRIu64 "/%" PRIu64 " free %" PRIu64 "/%" PRIu64,
                      st.malloc_count, n_malloc_, st.realloc_count, n_realloc_, st.aligned_count,
                      n_aligned_, st.free_count, n_free_);
        return fail(msg);
    }
    if (st.live_block_bytes != used_bytes) {
        std::snprintf(msg, sizeof msg, "stats live_block_bytes %zu != walked used bytes %zu",
                      st.live_block_bytes, used_bytes);
        return fail(msg);
    }
    if (st.peak_block_bytes < st.live_block_bytes)
        return fail("stats peak_block_bytes < live_block_bytes");
    if (cfg_.stats == DMM_STATS_FULL) {
        size_t req = 0;
        for (const Block &b : live_)
            req += b.req;
        if (st.live_requested != req) {
            std::snprintf(msg, sizeof msg, "stats live_requested %zu != shadow sum %zu",
                          st.live_requested, req);
            return fail(msg);
        }
        if (st.peak_requested < st.live_requested)
            return fail("stats peak_requested < live_requested");
        uint64_t hist = 0;
        for (uint64_t x : st.size_hist)
            hist += x;
        if (hist < n_malloc_)
            return fail("stats size histogram counts fewer requests than successful mallocs");
    }
    // reset restarts the counters: keep the largest values seen.
    res_.grow_count = std::max<uint64_t>(res_.grow_count, st.grow_count);
    res_.release_count = std::max<uint64_t>(res_.release_count, st.release_count);
    if (st.release_count > st.grow_count)
        return fail("stats release_count > grow_count");
    return true;
}

bool Runner::op_malloc(size_t n, int kind) {
    void *p = dmm_heap_malloc(h_, n);
    note(kind, nullptr, n, 0, p);
    if (p == nullptr) {
        ++exp_failed_;
        ++res_.allocs_failed;
        if (n == 0 && cfg_.grow_granularity == 0 && live_.empty())
            return fail("malloc(0) failed on an empty heap");
        return post_op(-1);
    }
    ++n_malloc_;
    ++res_.allocs_ok;
    if (!accept_new(p, n, 1, next_id_++, 0, "malloc"))
        return false;
    return post_op((long)live_.size() - 1);
}

bool Runner::op_calloc() {
    size_t total = draw_size();
    size_t n = 1, sz = total;
    if (total > 0 && rng_.chance(50)) {
        static const std::vector<size_t> el = {2, 3, 4, 8, 12, 16};
        sz = rng_.pick(el);
        n = std::max<size_t>(total / sz, 1);
    }
    void *p = dmm_heap_calloc(h_, n, sz);
    note(OP_CALLOC, nullptr, n, sz, p);
    if (p == nullptr) {
        ++exp_failed_;
        ++res_.allocs_failed;
        return post_op(-1);
    }
    ++n_calloc_;
    ++res_.allocs_ok;
    const unsigned char *b = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n * sz; ++i)
        if (b[i] != 0) {
            char msg[160];
            std::snprintf(msg, sizeof msg, "calloc(%zu, %zu) = %p: byte %zu is 0x%02x, not zero", n,
                          sz, p, i, b[i]);
            return fail(msg);
        }
    if (!accept_new(p, n * sz, 1, next_id_++, 0, "calloc"))
        return false;
    return post_op((long)live_.size() - 1);
}

bool Runner::op_realloc(int kind) {
    if (kind == OP_REALLOC_NULL) {
        size_t n = draw_size();
        if (n == 0)
            n = 1;
        void *p = dmm_heap_realloc(h_, nullptr, n);
        note(kind, nullptr, n, 0, p);
        if (p == nullptr) {
            ++exp_failed_;
            ++res_.allocs_failed;
            return post_op(-1);
        }
        ++res_.allocs_ok;
        if (!accept_new(p, n, 1, next_id_++, 0, "realloc(NULL, n)"))
            return false;
        return post_op((long)live_.size() - 1);
    }
    size_t i = rng_.below(live_.size());
    Block old = live_[i];
    if (!verify(old, "before realloc"))
        return false;
    if (kind == OP_REALLOC_ZERO) {
        void *q = dmm_heap_realloc(h_, old.p, 0);
        note(kind, old.p, 0, 0, q);
        if (q != nullptr)
            return fail("realloc(p, 0) returned non-NULL (documented: frees p, returns NULL)");
        remove_at(i);
        ++res_.frees;
        return post_op(-1);
    }
    size_t n;
    uint64_t u = rng_.below(10);
    if (u < 3)
        n = (size_t)rng_.range(1, std::max<size_t>(old.req, 1)); // shrink
    else if (u < 6)
        n = old.req + (size_t)rng_.range(1, 96); // small growth: in place if possible
    else
        n = std::max<size_t>(draw_size(), 1);
    size_t align = DMM_HEAP_ALIGN;
    void *q;
    if (kind == OP_REALLOC_ALIGNED) {
        // An alignment ptr already satisfies, sometimes larger than the block's own.
        std::vector<size_t> ok;
        for (size_t a = 1; a <= 4096; a <<= 1)
            if ((uintptr_t)old.p % a == 0)
                ok.push_back(a);
        align = rng_.pick(ok);
        q = dmm_heap_realloc_aligned(h_, old.p, align, n);
        note(kind, old.p, align, n, q);
    } else {
        q = dmm_heap_realloc(h_, old.p, n);
        note(kind, old.p, n, 0, q);
    }
    if (q == nullptr) {
        ++exp_failed_;
        ++res_.allocs_failed;
        // ptr stays valid and untouched.
        return post_op((long)i);
    }
    ++res_.allocs_ok;
    if (kind == OP_REALLOC)
        ++n_realloc_;
    size_t keep = std::min(old.filled, n);
    size_t off = find_pattern_mismatch(q, 0, keep, old.id);
    if (off != SIZE_MAX) {
        char msg[200];
        std::snprintf(msg, sizeof msg,
                      "realloc %p (req %zu, filled %zu) -> %p (size %zu) lost the prefix at offset %zu",
                      old.p, old.req, old.filled, q, n, off);
        return fail(msg);
    }
    remove_at(i);
    if (!accept_new(q, n, align, old.id, keep, kind == OP_REALLOC ? "realloc" : "realloc_aligned"))
        return false;
    return post_op((long)live_.size() - 1);
}

bool Runner::op_aligned() {
    size_t align = draw_align();
    size_t n = draw_size();
    void *p = dmm_heap_aligned_alloc(h_, align, n);
    note(OP_ALIGNED, nullptr, align, n, p);
    if (p == nullptr) {
        ++exp_failed_;
        ++res_.allocs_failed;
        return post_op(-1);
    }
    ++n_aligned_;
    ++res_.allocs_ok;
    if (!accept_new(p, n, align, next_id_++, 0, "aligned_alloc"))
        return false;
    return post_op((long)live_.size() - 1);
}

bool Runner::op_free(size_t i) {
    Block b = live_[i];
    if (!verify(b, "before free"))
        return false;
    dmm_heap_free(h_, b.p);
    note(OP_FREE, b.p, b.req, 0, nullptr);
    remove_at(i);
    ++n_free_;
    ++res_.frees;
    return post_op(-1);
}

bool Runner::free_all() {
    while (!live_.empty()) {
        ++op_index_;
        g_note_op = op_index_;
        if (!op_free(rng_.below(live_.size())))
            return false;
    }
    return cross_check();
}

bool Runner::big_alloc() {
    // After everything is freed, coalescing without a size cap must rebuild
    // large blocks (after flushing quick lists or a deferred sweep).
    if (cfg_.coalesce == DMM_COALESCE_OFF || cfg_.coalesce_max != 0 || !spec_.final_big_alloc)
        return true;
    std::vector<dmm_heap_block_info> w = walk_all(h_);
    std::map<unsigned, size_t> per_region;
    for (const auto &b : w)
        if (in_caller_buffers(b.block, b.block_size))
            per_region[b.region] += b.block_size;
    size_t total = 0;
    for (const auto &kv : per_region)
        total = std::max(total, kv.second);
    size_t overhead = dmm_heap_block_overhead(&cfg_);
    size_t want = cfg_.fit == DMM_FIT_GOOD ? total / 2 : total;
    if (want <= overhead + 2 * DMM_HEAP_ALIGN)
        return true;
    want -= overhead + DMM_HEAP_ALIGN;
    ++op_index_;
    g_note_op = op_index_;
    void *p = dmm_heap_malloc(h_, want);
    note(OP_BIG, nullptr, want, total, p);
    if (p == nullptr) {
        char msg[200];
        std::snprintf(msg, sizeof msg,
                      "after freeing everything malloc(%zu) failed although a region holds %zu bytes "
                      "of blocks (block overhead %zu)",
                      want, total, overhead);
        return fail(msg);
    }
    ++n_malloc_;
    if (!accept_new(p, want, 1, next_id_++, 0, "big malloc"))
        return false;
    if (!post_op((long)live_.size() - 1))
        return false;
    return op_free(live_.size() - 1);
}

bool Runner::reset_and_reuse() {
    ++op_index_;
    g_note_op = op_index_;
    dmm_heap_reset(h_);
    note(OP_RESET, nullptr, 0, 0, nullptr);
    live_.clear();
    iv_.clear();
    exp_failed_ = n_malloc_ = n_calloc_ = n_realloc_ = n_aligned_ = n_free_ = 0;
    if (!post_op(-1) || !cross_check())
        return false;
    for (int k = 0; k < 8; ++k) {
        ++op_index_;
        g_note_op = op_index_;
        if (!op_malloc((size_t)rng_.range(1, 200), OP_MALLOC))
            return false;
    }
    return cross_check();
}

RunResult Runner::run() {
    dmm_status st = dmm_heap_init(&h_, main_.data(), main_.size(), &cfg_);
    if (st != DMM_OK || h_ == nullptr) {
        const char *reason = nullptr;
        dmm_heap_config_check(&cfg_, &reason);
        fail(std::string("dmm_heap_init failed: ") + dmm_status_str(st) +
             (reason ? std::string(" (config_check: ") + reason + ")" : std::string()));
        return res_;
    }
    {
        dmm_heap_config got = dmm_heap_get_config(h_);
        if (got.org != cfg_.org || got.links != cfg_.links || got.order != cfg_.order ||
            got.fit != cfg_.fit || got.split != cfg_.split || got.coalesce != cfg_.coalesce ||
            got.stats != cfg_.stats || got.harden != cfg_.harden || got.poison != cfg_.poison ||
            got.lock != cfg_.lock) {
            fail("dmm_heap_get_config differs from the config given to init: \"" + cfg_str(got) +
                 "\"");
            return res_;
        }
    }
    for (size_t k = 0; k < spec_.extra_regions.size(); ++k) {
        size_t mis = (k % 2) ? (size_t)rng_.range(1, 15) : 0;
        extras_.emplace_back(new Buffer(spec_.extra_regions[k], mis));
        Buffer &b = *extras_.back();
        dmm_status s = dmm_heap_add_region(h_, b.data(), b.size());
        if (s != DMM_OK) {
            fail(std::string("dmm_heap_add_region(") + std::to_string(b.size()) +
                 ") failed: " + dmm_status_str(s));
            return res_;
        }
    }
    if (!post_op(-1) || !cross_check())
        return res_;

    for (op_index_ = 0; op_index_ < spec_.ops; ++op_index_) {
        g_note_op = op_index_;
        bool ok;
        bool alloc_phase = ((op_index_ / 64) % 2) == 0;
        unsigned free_pct = alloc_phase ? 22 : 52;
        if (live_.empty() || !rng_.chance(free_pct)) {
            uint64_t u = rng_.below(100);
            if (u < 38)
                ok = op_malloc(draw_size(), OP_MALLOC);
            else if (u < 40)
                ok = op_malloc(0, OP_MALLOC0);
            else if (u < 50)
                ok = op_calloc();
            else if (u < 58)
                ok = op_aligned();
            else if (u < 60) {
                dmm_heap_free(h_, nullptr);
                note(OP_FREE_NULL, nullptr, 0, 0, nullptr);
                ok = post_op(-1);
            } else if (u < 63)
                ok = op_realloc(OP_REALLOC_NULL);
            else if (live_.empty())
                ok = op_malloc(draw_size(), OP_MALLOC);
            else if (u < 85)
                ok = op_realloc(OP_REALLOC);
            else if (u < 95)
                ok = op_realloc(OP_REALLOC_ALIGNED);
            else
                ok = op_realloc(OP_REALLOC_ZERO);
        } else {
            ok = op_free(rng_.below(live_.size()));
        }
        if (!ok)
            break;
        res_.ops_done = op_index_ + 1;
    }
    if (res_.ok) {
        for (const Block &b : live_)
            if (!verify(b, "final sweep"))
                break;
    }
    if (res_.ok && cross_check() && free_all() && big_alloc() && reset_and_reuse() &&
        free_all()) {
        if (!main_.guards_intact())
            fail("bytes around the first buffer were written");
    }
    dmm_heap_destroy(h_);
    h_ = nullptr;
    return res_;
}

} // namespace

RunResult run_random(const RunSpec &spec) {
    install_crash_note(describe(spec.cfg, spec.seed));
    Runner r(spec);
    RunResult res = r.run();
    g_note_active = 0;
    return res;
}

} // namespace dmmt

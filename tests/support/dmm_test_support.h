// tests/support/dmm_test_support.h - helpers shared by the heap test binaries.
//
// Everything here talks to the heap only through the public header
// <dmm/heap.h>, so the same helpers serve the normal library, the frozen
// builds (library sources compiled into the test) and the thread tests.
#ifndef DMM_TEST_SUPPORT_H
#define DMM_TEST_SUPPORT_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "dmm/heap.h"

namespace dmmt {

// ---- small utilities ---------------------------------------------------

// Deterministic 64-bit generator (splitmix64): the same seed gives the same
// operation sequence on every platform and standard library.
class Rng {
public:
    explicit Rng(uint64_t seed) : s_(seed) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, n); n > 0.
    uint64_t below(uint64_t n) { return next() % n; }
    // Uniform in [lo, hi].
    uint64_t range(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }
    bool chance(unsigned percent) { return below(100) < percent; }
    template <class T> const T &pick(const std::vector<T> &v) { return v[below(v.size())]; }

private:
    uint64_t s_;
};

uint64_t mix64(uint64_t a, uint64_t b);

// Reads a positive integer from the environment, or returns dflt.
uint64_t env_u64(const char *name, uint64_t dflt);

// Operation count for a random run: base scaled by DMM_TEST_OPS (an
// absolute count) when set.
size_t scaled_ops(size_t base);

// Base seed of every seeded test: DMM_TEST_SEED or a fixed default.
uint64_t base_seed();

// ---- configuration helpers -----------------------------------------------

// The configuration as dmm_heap_config_format writes it (never truncated).
std::string cfg_str(const dmm_heap_config &cfg);

// Field-by-field equality of every field config_format can express
// (function pointers and contexts are compared too).  On mismatch *diff
// names the first field that differs.
bool cfg_equal(const dmm_heap_config &a, const dmm_heap_config &b, std::string *diff);

const char *org_name(dmm_heap_org o);
const char *links_name(dmm_heap_links l);
const char *order_name(dmm_heap_order o);
const char *fit_name(dmm_heap_fit f);
const char *coalesce_name(dmm_heap_coalesce c);
const char *inv_name(dmm_heap_invariant inv);
const char *err_name(dmm_error_kind k);

// One point of the policy cartesian product the brief enumerates.
struct Combo {
    dmm_heap_org org;
    dmm_heap_links links;
    dmm_heap_order order;
    dmm_heap_fit fit;
    bool split;
    dmm_heap_coalesce coalesce;
    bool victim;    // the designated victim (valid with segregated bins and split)
    unsigned index; // position in all_combos()
    std::string name() const;
};

// gtest prints parameters with PrintTo (and gtest_discover_tests puts the
// text into ctest's test names): keep it short.
inline void PrintTo(const Combo &c, std::ostream *os) { *os << c.name(); }

// A configuration with a short name, as a test parameter.
struct NamedConfig {
    std::string name;
    dmm_heap_config cfg;
};
inline void PrintTo(const NamedConfig &n, std::ostream *os) { *os << n.name; }

// Every (org x links x order x fit x split x coalesce x victim) tuple; the
// victim=off half comes first (its indices, hence its seeds, are those of
// the product before the victim knob existed).
std::vector<Combo> all_combos();

// The default configuration with the combo's six fields set, plus the
// orthogonal knobs that every org needs to be meaningful (sl_bits,
// exact_max).  Whether it is valid is decided by dmm_heap_config_check.
dmm_heap_config combo_config(const Combo &c);

// Combos whose combo_config() dmm_heap_config_check accepts.
std::vector<Combo> valid_combos();

// Orthogonal knobs chosen by seeded random choice for one combo.
struct Knobs {
    size_t quick_max = 0;
    unsigned quick_limit = 0;
    dmm_heap_stats_level stats = DMM_STATS_COUNTERS;
    dmm_heap_harden harden = DMM_HARDEN_CHECKED;
    bool poison = false;
    size_t split_min = 0;
    size_t coalesce_max = 0;
    unsigned sl_bits = 0;
    size_t exact_max = 0;
    dmm_heap_lock lock = DMM_LOCK_NONE;
    size_t grow_granularity = 0;
    bool release_empty = false;
    unsigned extra_regions = 0;
    size_t buf_size = 0;
    size_t misalign = 0;
};

// Draws knobs for a combo from seed and applies them to cfg; retries a few
// draws when the knobs make the config invalid and finally falls back to
// the combo's plain config.  Returns the knobs actually applied.
Knobs choose_knobs(const Combo &c, uint64_t seed, dmm_heap_config *cfg);

// ---- fill patterns ---------------------------------------------------------

// Byte i of block id's pattern: a hash of (id, i), never constant over a
// block, different for every id.
inline uint8_t pattern_byte(uint64_t id, size_t i) {
    uint64_t x = (id + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i >> 3) * 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 29;
    return (uint8_t)(x >> ((i & 7u) * 8u));
}
void fill_pattern(void *p, size_t from, size_t to, uint64_t id);
// Returns the first offset in [from, to) that differs, or SIZE_MAX.
size_t find_pattern_mismatch(const void *p, size_t from, size_t to, uint64_t id);

// ---- buffers ---------------------------------------------------------------

// A heap buffer with a chosen misalignment: data() is `misalign` bytes past
// a 64-byte boundary.  Guard bytes on both sides are filled with a pattern
// and checked by guards_intact().
class Buffer {
public:
    Buffer(size_t size, size_t misalign);
    unsigned char *data() { return base_ + kGuard + misalign_; }
    size_t size() const { return size_; }
    bool contains(const void *p, size_t n) const;
    bool guards_intact() const;

private:
    static constexpr size_t kGuard = 64;
    std::unique_ptr<unsigned char[]> raw_;
    unsigned char *base_;
    size_t size_;
    size_t misalign_;
};

// ---- walking ---------------------------------------------------------------

std::vector<dmm_heap_block_info> walk_all(dmm_heap *h, int *rc = nullptr);

// Describes a check report.
std::string report_str(const dmm_heap_check_report &r);

// ---- error recorder --------------------------------------------------------

struct ErrorLog {
    std::vector<dmm_error> errors;
    static void callback(void *ctx, const dmm_error *e);
    void attach(dmm_heap_config *cfg) {
        cfg->error_fn = &ErrorLog::callback;
        cfg->error_ctx = this;
    }
};

// ---- the shadow-model random run ------------------------------------------

struct RunSpec {
    dmm_heap_config cfg{};
    uint64_t seed = 1;
    size_t ops = 400;
    size_t buf_size = 32 * 1024;
    size_t misalign = 0;
    std::vector<size_t> extra_regions; // sizes of regions added after init
    size_t max_request = 0;            // 0 = derived from buf_size
    bool fill_usable = true;           // pattern-fill up to usable size on some blocks
    bool final_big_alloc = true;       // after freeing everything, expect a large block
};

struct RunResult {
    bool ok = true;
    std::string message; // first failure, with config, seed, op index and recent ops
    size_t ops_done = 0;
    size_t allocs_ok = 0;
    size_t allocs_failed = 0;
    size_t frees = 0;
    size_t peak_live = 0;
    uint64_t grow_count = 0;
    uint64_t release_count = 0;
};

// Runs spec.ops random operations against a fresh heap with the checker and
// the shadow model after every operation (see shadow.cpp for the full list
// of properties verified).
RunResult run_random(const RunSpec &spec);

// Header text for failure messages.
std::string describe(const dmm_heap_config &cfg, uint64_t seed);

} // namespace dmmt

#endif

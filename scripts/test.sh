#!/usr/bin/env bash
# scripts/test.sh - THE test command of dmmkit: installs what is missing, then
# builds and runs every test configuration.  Works from a fresh clone.
#
#   scripts/test.sh                 every stage, in order
#   scripts/test.sh debug install   only the named stages
#   scripts/test.sh --list          list the stages
#
# Stages
#   setup     scripts/setup.sh --tests (apt packages with the test-only ones,
#             .venv; nothing to do when present)
#   debug     preset debug: all tests, assertions at level 3 (+ Valgrind tests)
#   asan      preset asan: all tests under AddressSanitizer + UBSan
#   tsan      preset tsan: tests labelled "threads" under ThreadSanitizer
#   annotate  preset annotate: tests labelled "annotate" (heap annotated for
#             ASan, tests instrumented, library not)
#   fuzz      preset fuzz (clang): tests labelled "fuzz" (short libFuzzer runs)
#   release   preset release: all tests at -O3 without assertions, and the
#             benchmark smoke tests (label "bench"; too slow in Debug)
#   install   cmake --install (release build) into a temporary prefix; check
#             what it holds; build and run the README's pkg-config example and
#             the consumers of tests/install (pkg-config and find_package);
#             pip install the front end into the prefix and run record,
#             analyse, compare, explore and generate from it, outside the
#             source tree
#   size      scripts/size_report.sh: freestanding builds for Cortex-M4 and rv32imac,
#             sizes per component and preset, link probes, per-block overhead
#             under qemu-user -> build/results/embedded_size.{md,json} (a
#             scratch copy; `scripts/size_report.sh --update` rewrites the
#             committed bench/results/embedded_size.*)
#   results   scripts/check_results.py: the results registry (bench/results/
#             manifest.json) matches the directory and every current file
#             carries its provenance; the checker detects an altered figure;
#             then the short subset of the deterministic figures (embedded
#             sizes for Cortex-M4, the mesh simulator's cycles, the pool's
#             callgrind counts) is regenerated into build/results-check and
#             compared with the committed files within the manifest's
#             tolerances (40 s once built, 2 min with its builds on a loaded
#             2-core machine; builds what it needs)
#   results-full  the same for every deterministic figure (not in the
#             default run: the heap and libdmm callgrind tables and the
#             frozen-vs-runtime ranking: about 15 minutes in all); also run by
#             the results stage when DMM_RESULTS_FULL=1.  Groups that need a
#             binary built outside the repository (seed001: the dlmalloc
#             harness, DMM_DLMALLOC_HARNESS) are skipped, saying so, unless
#             it is given; the heap anchors' rows are compared only as far
#             as the repository regenerates them
#   baremetal embedded/: the bare-metal demo (seeded heap + pool workload,
#             checkers, per-op instruction counts) built for qemu-system-arm
#             mps2-an386 (Cortex-M4, semihosting) and qemu-system-riscv32 virt
#             (rv32imac, UART) and run there under -icount; each run must exit
#             0 and print DMM-DEMO PASS, and a run without -icount must fail
#   python    python/run_tests.sh: the front end's pytest suite (venv at .venv)
#   aarch64   cross build for AArch64 Linux (cmake/toolchain-aarch64.cmake,
#             build/aarch64, -O2 without -g, no benchmarks): the programs of
#             the tests labelled "unit" (NEON vector routines included), run
#             by ctest under qemu-aarch64
#   arm32     the same for 32-bit ARM Linux (cmake/toolchain-armhf.cmake,
#             build/arm32) under qemu-arm: 32-bit and alignment assumptions
#   x86_32    the same for 32-bit x86 Linux (cmake/toolchain-i686.cmake,
#             build/x86_32, Debian's i686 cross compiler), run natively
#
# The tsan, annotate and fuzz stages build only the programs their label's
# tests run (found in the generated CTest files after configuring; see
# label_outputs), or everything when that cannot be worked out.
#
# The test command never modifies the source tree: after the last stage it
# compares `git status` and the diff of tracked files with what they were
# before the first, and fails (a "tree" line in the summary) when a stage
# changed a tracked file or left an untracked one outside the ignored build
# directories.
#
# Every stage prints its name and duration.  The last line of the output is
# "<N> passed, <M> failed" (N, M count stages; a changed tree counts as a
# failed one); the exit status is non-zero
# when any stage failed.  Environment: DMM_JOBS (parallel jobs, default 2).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=${DMM_JOBS:-2}
export DMM_JOBS=$JOBS

ALL_STAGES=(setup debug asan tsan annotate fuzz release install size results baremetal python aarch64 arm32 x86_32)
# Stages run only when named.
OPT_STAGES=(results-full)

# Sanitizer run-time options (the CTest presets carry the same).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
export CTEST_OUTPUT_ON_FAILURE=1

run() {
    printf '+ %s\n' "$*"
    "$@"
}

# Build outputs (paths relative to build/<preset>) that the tests carrying
# <label> use, read from a configured (not necessarily built) tree:
#  - gtest_discover_tests() programs: their generated *_include.cmake names
#    the executable and the labels every discovered test gets;
#  - plain add_test() tests (CTestTestfile.cmake): every word of the command
#    and of the test's properties that is a build output (so "valgrind
#    <program>" and LD_PRELOAD=<library> count too).
# Prints nothing when it cannot tell (then the caller builds everything).
label_outputs() {
    local preset=$1 label=$2 exclude=${3:-}
    command -v python3 >/dev/null 2>&1 || return 0
    local dir="$ROOT/build/$preset" outputs
    # linked programs and libraries only (rules *_LINKER__<target>_<config>)
    outputs=$(ninja -C "$dir" -t targets all 2>/dev/null | sed -n 's/^\(.*\): [A-Z_]*LINKER__[^ ]*$/\1/p') || return 0
    DMM_OUTPUTS="$outputs" DMM_EXCLUDE="$exclude" python3 - "$dir" "$label" <<'PY' || true
import glob, os, re, sys
d, label = sys.argv[1], sys.argv[2]
exclude = re.compile(os.environ["DMM_EXCLUDE"]) if os.environ.get("DMM_EXCLUDE") else None
outputs = set(os.environ["DMM_OUTPUTS"].split("\n"))
want = set()
def has_label(text):
    # as ctest -L: a regular expression matched against each label (the
    # MallocThreads cases are labelled malloc_threads, run by -L threads)
    return any(re.search(label, l) for l in text.split(";"))
def scan(text):
    for word in re.split(r'[\s"=;:]+', text):
        if os.path.isabs(word):
            word = os.path.relpath(word, d)
        if word in outputs:
            want.add(word)
for f in glob.glob(os.path.join(d, "**", "*_include.cmake"), recursive=True):
    text = open(f, errors="replace").read()
    exe = re.search(r"TEST_EXECUTABLE \[==\[(.*?)\]==\]", text)
    props = re.search(r"TEST_PROPERTIES \[==\[(.*?)\]==\]", text)
    if exe and props and has_label(props.group(1)):
        scan(exe.group(1) + " " + props.group(1))
for f in glob.glob(os.path.join(d, "**", "CTestTestfile.cmake"), recursive=True):
    cmds, props = {}, {}
    for line in open(f, errors="replace"):
        m = re.match(r"(add_test|set_tests_properties)\(\[=\[(.*?)\]=\]\s*(.*)\)\s*$", line)
        if m:
            (cmds if m.group(1) == "add_test" else props)[m.group(2)] = m.group(3)
    for name, p in props.items():
        if exclude and exclude.search(name):
            continue  # ctest -E leaves it out: what only it runs need not be built
        labels = re.search(r'\bLABELS "([^"]*)"', p)
        if labels and has_label(labels.group(1)):
            scan(cmds.get(name, "") + " " + p)
print("\n".join(sorted(want)))
PY
}

# Build what the tests labelled <label> need, or everything.
build_for_label() {
    local preset=$1 label=$2 outs
    outs=$(label_outputs "$preset" "$label")
    if [ -z "$outs" ]; then
        echo "note: cannot tell which programs the '$label' tests need; building everything"
        run cmake --build --preset "$preset" -j "$JOBS"
        return
    fi
    # shellcheck disable=SC2086  # one output path per line, no spaces
    run cmake --build --preset "$preset" -j "$JOBS" --target $outs
}

# configure + build + ctest of one preset; extra arguments go to ctest.
preset_stage() {
    local preset=$1
    shift
    run cmake --preset "$preset"
    run cmake --build --preset "$preset" -j "$JOBS"
    run ctest --preset "$preset" -j "$JOBS" --output-on-failure "$@"
}

stage_setup() {
    run "$ROOT/scripts/setup.sh" --tests
}

stage_debug() { preset_stage debug; }
stage_asan() { preset_stage asan; }

stage_tsan() {
    run cmake --preset tsan
    build_for_label tsan threads
    # Older TSan runtimes cannot map their shadow memory under the address
    # space randomisation of recent kernels; running without ASLR avoids that.
    local wrap=()
    if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
        wrap=(setarch "$(uname -m)" -R)
    fi
    run "${wrap[@]}" ctest --preset tsan -j "$JOBS" --output-on-failure -L threads
}

# configure + build what <label> needs + ctest -L <label> (the test preset
# filters on the same label).
label_stage() {
    local preset=$1 label=$2
    run cmake --preset "$preset"
    build_for_label "$preset" "$label"
    run ctest --preset "$preset" -j "$JOBS" --output-on-failure -L "$label"
}

stage_annotate() { label_stage annotate annotate; }
stage_fuzz() { label_stage fuzz fuzz; }
stage_release() { preset_stage release; }

# The fenced block that follows the line "<!-- scripts/test.sh install runs
# this example: NAME -->" in README.md, with /opt/dmmkit replaced by $2.
readme_example() {
    local name=$1 prefix=$2
    awk -v want="<!-- scripts/test.sh install runs this example: $name -->" '
        $0 == want { armed = 1; next }
        armed == 1 && /^```/ { armed = 2; next }
        armed == 2 && /^```/ { found = 1; exit }
        armed == 2 { print }
        END { if (!found) exit 1 }' "$ROOT/README.md" | sed "s|/opt/dmmkit|$prefix|g"
}

# Installs the Python front end into the prefix as README.md says (a venv
# made there, pip install ./python).  Its dependencies (click, rich,
# matplotlib) come from the project's .venv when that has them for the same
# Python, so only pip's build backend (setuptools) is fetched; otherwise pip
# fetches them all.  Works on a copy of python/ so the source tree gets no
# build/ or egg-info.
install_frontend() {
    local prefix=$1 work=$2 py=${PYTHON:-python3}
    run "$py" -m venv "$prefix"
    cp -r "$ROOT/python" "$work/python-src"
    rm -rf "$work/python-src/build" "$work/python-src"/*.egg-info
    local deps="" ver
    ver=$("$prefix/bin/python" -c 'import sys; print(sys.version_info[:2])')
    if [ -x "$ROOT/.venv/bin/python" ] \
        && [ "$("$ROOT/.venv/bin/python" -c 'import sys; print(sys.version_info[:2])')" = "$ver" ] \
        && "$ROOT/.venv/bin/python" -c 'import click, rich, matplotlib' 2>/dev/null; then
        deps=$("$ROOT/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
    fi
    if [ -n "$deps" ]; then
        echo "front end dependencies (click, rich, matplotlib): from $deps"
        local site
        site=$("$prefix/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
        # A .pth line only appends the directory to sys.path: the prefix's
        # own site-packages (with the dmmkit installed here) comes first.
        echo "$deps" >"$site/dmmkit-test-deps.pth"
        run "$prefix/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$work/python-src"
    else
        echo "front end dependencies: from the package index (no usable $ROOT/.venv)"
        run "$prefix/bin/python" -m pip install -q --disable-pip-version-check "$work/python-src"
    fi
    local where
    where=$("$prefix/bin/python" -c 'import dmmkit; print(dmmkit.__file__)')
    case "$where" in
        "$prefix"/*) echo "dmmkit package: $where" ;;
        *) echo "the prefix's python imports dmmkit from $where, not from $prefix"; return 1 ;;
    esac
}

# Every front end command from the prefix, in a directory outside the source
# tree, with nothing pointing at the tree (no DMMKIT_ROOT / DMMKIT_TOOLS /
# PYTHONPATH, a PATH of system directories only): the tools, the recorder
# and share/dmmkit must all be found from the prefix.
run_frontend() {
    local prefix=$1 dir=$2
    mkdir -p "$dir"
    cat >"$dir/prog.c" <<'C'
#include <stdlib.h>
#include <string.h>
int main(void)
{
    void *p[64];
    int i, round;
    for (round = 0; round < 8; round++) {
        for (i = 0; i < 64; i++) {
            p[i] = malloc(16 + 40 * (size_t)i);
            if (p[i] == NULL)
                return 1;
            memset(p[i], i, 16);
        }
        for (i = 0; i < 64; i += 2)
            free(p[i]);
        for (i = 1; i < 64; i += 2)
            p[i] = realloc(p[i], 100);
        for (i = 1; i < 64; i += 2)
            free(p[i]);
    }
    return 0;
}
C
    (
        cd "$dir" || exit 1
        # shellcheck disable=SC2030  # the subshell's own environment
        export PATH=/usr/local/bin:/usr/bin:/bin
        unset DMMKIT_ROOT DMMKIT_TOOLS DMMKIT_CMAKE PYTHONPATH VIRTUAL_ENV DMM_REC_LIB LD_PRELOAD
        local dmmkit="$prefix/bin/dmmkit"
        run cc -std=c11 -O1 prog.c -o prog
        run "$dmmkit" record -o prog.trace -- ./prog
        [ -s prog.trace ] || { echo "dmmkit record wrote no prog.trace"; exit 1; }
        run "$dmmkit" analyse prog.trace
        run "$dmmkit" compare prog.trace -a dmm:tlsf,glibc --reps 1 --no-pictures --results compare.json
        [ -s compare.json ] || { echo "dmmkit compare wrote no compare.json"; exit 1; }
        # One configuration, one timing rep, re-measured on a dmm-replay built
        # frozen from share/dmmkit/source (into the cache, never into the
        # prefix).
        run "$dmmkit" explore prog.trace --grid none --config tlsf --reference tlsf --reps 1 --frozen-max 1 \
            --no-pictures --results explore.json --cache cache -j "$JOBS"
        [ -s explore.json ] || { echo "dmmkit explore wrote no explore.json"; exit 1; }
        ls -d cache/builds/frozen-*/tools/dmm-replay >/dev/null 2>&1 \
            || { echo "dmmkit explore built no frozen dmm-replay under cache/builds"; exit 1; }
        run "$dmmkit" generate tlsf -o gen --trace prog.trace -j "$JOBS"
        [ -f gen/build/libdmmgen.a ] && [ -f gen/build/libdmmgen_malloc.so ] \
            || { echo "dmmkit generate built no libdmmgen.a / libdmmgen_malloc.so"; exit 1; }
        if [ -e "$prefix/share/dmmkit/source/build" ]; then
            echo "a front end command built inside $prefix/share/dmmkit/source"; exit 1
        fi
    )
}

stage_install() {
    # The release build (already built by the release stage) is installed.
    run cmake --preset release >/dev/null
    run cmake --build --preset release -j "$JOBS"
    local work
    work=$(mktemp -d "${TMPDIR:-/tmp}/dmmkit-install.XXXXXX")
    # shellcheck disable=SC2064  # expand now: $work is local
    trap "rm -rf '$work'" EXIT
    local prefix="$work/prefix"
    run cmake --install build/release --prefix "$prefix"

    echo "installed files (share/dmmkit/source: $(find "$prefix/share/dmmkit/source" -type f | wc -l) files):"
    (cd "$prefix" && find . \( -type f -o -type l \) -not -path './share/dmmkit/source/*' | sort | sed 's/^\.\//  /')
    local f
    for f in include/dmm/common.h include/dmm/heap.h include/dmm/trace.h \
             bin/dmm-replay bin/dmm-analyse bin/dmm-trace bin/dmm-config \
             share/dmmkit/source/CMakeLists.txt share/dmmkit/source/include/dmm/heap.h \
             share/dmmkit/source/scripts/record.sh; do
        [ -f "$prefix/$f" ] || { echo "missing $f"; return 1; }
    done
    local pc cfg libdir
    pc=$(find "$prefix" -name dmmkit.pc | head -n 1)
    cfg=$(find "$prefix" -name dmmkitConfig.cmake | head -n 1)
    [ -n "$pc" ] || { echo "dmmkit.pc not installed"; return 1; }
    [ -f "$(dirname "$pc")/dmmkit-trace.pc" ] || { echo "dmmkit-trace.pc not installed"; return 1; }
    [ -n "$cfg" ] || { echo "dmmkitConfig.cmake not installed"; return 1; }
    [ -f "$(dirname "$cfg")/dmmkitConfigVersion.cmake" ] || { echo "dmmkitConfigVersion.cmake not installed"; return 1; }
    libdir=$(dirname "$(dirname "$pc")")
    for f in libdmm_heap.a libdmm_heap.so libdmm_trace.a libdmmrec.so; do
        [ -e "$libdir/$f" ] || { echo "missing $libdir/$f"; return 1; }
    done
    # Every function a public header declares is defined by the installed
    # library that carries it: dmm/heap.h by both heap libraries (the name
    # libdmm is the drop-in malloc's), dmm/trace.h by the trace library.
    local lib hdr nmopt fn missing defined
    for lib in libdmm_heap.a:heap libdmm_heap.so:heap libdmm_trace.a:trace; do
        hdr=${lib#*:} lib=${lib%%:*} missing=""
        case $lib in *.so) nmopt=-D ;; *) nmopt=-g ;; esac
        defined=$(nm "$nmopt" --defined-only "$libdir/$lib")
        for fn in $(sed -n "s/^[a-z0-9_ ]*[ *]\\(dmm_${hdr}_[a-z0-9_]*\\)(.*/\\1/p" "$prefix/include/dmm/$hdr.h"); do
            grep -qw "T $fn" <<<"$defined" || missing="$missing $fn"
        done
        [ -z "$missing" ] || { echo "declared in dmm/$hdr.h, not defined in $lib:$missing"; return 1; }
    done

    echo "--- the README's pkg-config example, as printed"
    mkdir -p "$work/readme"
    readme_example app.c "$prefix" >"$work/readme/app.c" || { echo "README.md: app.c example not found"; return 1; }
    readme_example build.sh "$prefix" >"$work/readme/build.sh" || { echo "README.md: build.sh example not found"; return 1; }
    cat "$work/readme/build.sh"
    (cd "$work/readme" && env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH bash -euo pipefail build.sh) \
        >"$work/readme/out.txt" || { cat "$work/readme/out.txt"; echo "the README's example failed"; return 1; }
    cat "$work/readme/out.txt"
    [ "$(grep -c '^hello from a dmm heap$' "$work/readme/out.txt")" = 2 ] \
        || { echo "the README's programs did not print their line"; return 1; }
    ldd "$work/readme/app" | grep -F "$libdir/libdmm_heap.so" \
        || { echo "the README's app does not load $libdir/libdmm_heap.so"; return 1; }

    echo "--- consumers through pkg-config ($(dirname "$pc"))"
    export PKG_CONFIG_PATH
    PKG_CONFIG_PATH=$(dirname "$pc")
    local cflags libs
    cflags=$(pkg-config --cflags dmmkit)
    libs=$(pkg-config --libs dmmkit)
    # shellcheck disable=SC2086
    run cc -std=c11 -Wall -Wextra -Werror $cflags tests/install/consumer.c $libs \
        -Wl,-rpath,"$(pkg-config --variable=libdir dmmkit)" -o "$work/consumer_pkgconfig"
    run env -u LD_LIBRARY_PATH "$work/consumer_pkgconfig"
    # The program must really use the installed shared library.
    ldd "$work/consumer_pkgconfig" | grep -F "$libdir/libdmm_heap.so" \
        || { echo "consumer_pkgconfig does not load $libdir/libdmm_heap.so"; return 1; }
    # shellcheck disable=SC2046
    run cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags dmmkit-trace) tests/install/trace_consumer.c \
        $(pkg-config --libs dmmkit-trace) -o "$work/trace_consumer_pkgconfig"
    run "$work/trace_consumer_pkgconfig" "$work/pkgconfig.trace"

    echo "--- consumers through find_package(dmmkit)"
    run cmake -S tests/install -B "$work/consumer-build" -G Ninja \
        -DCMAKE_BUILD_TYPE=Debug -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="-Werror"
    run cmake --build "$work/consumer-build" -j "$JOBS"
    run ctest --test-dir "$work/consumer-build" --output-on-failure --no-tests=error
    # dmmkit::dmm_heap_shared is the installed libdmm_heap.so.
    ldd "$work/consumer-build/consumer_shared" | grep -F "$libdir/libdmm_heap.so" \
        || { echo "consumer_shared (dmmkit::dmm_heap_shared) does not load $libdir/libdmm_heap.so"; return 1; }

    echo "--- the front end from the prefix, outside the source tree"
    install_frontend "$prefix" "$work"
    run_frontend "$prefix" "$work/run"
}

stage_size() {
    run "$ROOT/scripts/size_report.sh"
}

# The committed figures: registry and provenance, the checker's own check,
# then the deterministic figures regenerated and compared (scripts/
# check_results.py; bench/results/README.md).
stage_results() {
    local mode=--short
    [ "${DMM_RESULTS_FULL:-0}" = 1 ] && mode=--full
    run python3 "$ROOT/scripts/check_results.py" --lint
    run python3 "$ROOT/scripts/check_results.py" --selftest
    run python3 "$ROOT/scripts/check_results.py" "$mode"
}
stage_results-full() {
    run python3 "$ROOT/scripts/check_results.py" --lint
    run python3 "$ROOT/scripts/check_results.py" --full
}

# The bare-metal demo (embedded/README.md) on both emulated boards.  QEMU
# runs with -icount so that the demo's counter counts instructions; its
# output is kept in build/bare-<board>/demo.out.
baremetal_run() { # <expect: pass|fail> <elf> <out> <qemu command...>
    local expect=$1 elf=$2 out=$3 rc
    shift 3
    printf '+ %s -kernel %s\n' "$*" "$elf"
    timeout 120 "$@" -kernel "$elf" </dev/null >"$out" 2>&1
    rc=$?
    tr -d '\r' <"$out" >"$out.tmp" && mv "$out.tmp" "$out"
    if [ "$expect" = pass ]; then
        cat "$out"
        [ "$rc" -eq 0 ] || { echo "the demo exited with status $rc (expected 0)"; return 1; }
        grep -qx 'DMM-DEMO PASS' "$out" || { echo "no 'DMM-DEMO PASS' line"; return 1; }
        grep -q 'probe_64_nops=64$' "$out" || { echo "the instruction counter is not exact"; return 1; }
        grep -Eq '^insns malloc calls=[1-9][0-9]* min=[0-9]+ avg=[0-9]+ max=[1-9]' "$out" \
            || { echo "no malloc instruction counts"; return 1; }
        grep -q '^heap end .* live_blocks=0 ' "$out" || { echo "no final heap statistics"; return 1; }
        grep -q '^pool end ' "$out" || { echo "no pool statistics"; return 1; }
    else
        # Without -icount the counter is not exact: the demo must say so and
        # exit non-zero (the exit status really carries a failure).
        grep -q '^DMM-DEMO FAIL' "$out" && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] \
            || { echo "expected a failing run (status $rc):"; cat "$out"; return 1; }
        echo "(failing run as expected: status $rc, $(grep -c '^CHECK FAILED' "$out") check(s) failed)"
    fi
}

stage_baremetal() {
    local t arm="$ROOT/build/bare-mps2" rv="$ROOT/build/bare-riscv"
    for t in arm-none-eabi-gcc riscv64-unknown-elf-gcc qemu-system-arm qemu-system-riscv32; do
        command -v "$t" >/dev/null || { echo "$t not found (scripts/setup.sh installs it)"; return 1; }
    done
    run cmake -S "$ROOT/embedded" -B "$arm" -G Ninja -DDMM_BOARD=mps2 \
        -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/arm-none-eabi.cmake" || return 1
    run cmake --build "$arm" -j "$JOBS" || return 1
    run cmake -S "$ROOT/embedded" -B "$rv" -G Ninja -DDMM_BOARD=riscv-virt \
        -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/riscv32-elf.cmake" -DDMM_RISCV_EXTRA_FLAGS=-mcmodel=medany || return 1
    run cmake --build "$rv" -j "$JOBS" || return 1
    local qarm=(qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none
                -semihosting-config enable=on,target=native)
    local qrv=(qemu-system-riscv32 -M virt -bios none -nographic -monitor none)
    baremetal_run pass "$arm/dmm_demo.elf" "$arm/demo.out" "${qarm[@]}" -icount shift=8 || return 1
    baremetal_run pass "$rv/dmm_demo.elf" "$rv/demo.out" "${qrv[@]}" -icount shift=0 || return 1
    baremetal_run fail "$arm/dmm_demo.elf" "$arm/demo-noicount.out" "${qarm[@]}" || return 1
    baremetal_run fail "$rv/dmm_demo.elf" "$rv/demo-noicount.out" "${qrv[@]}" || return 1
}

# The Python front end: venv, pip install, pytest (uses the release build).
stage_python() {
    run "$ROOT/python/run_tests.sh"
}

# Unit tests that cannot run under qemu-user without binfmt_misc (which a
# container rarely has): the "threadsafe" death tests (these and the host
# port's HostPort.IllegalTransfersStop) re-execute the test
# program with execv(), which the host kernel refuses for an AArch64 binary,
# and frozen_header_*, mhsim_{determinism,badopts,json,offline} and the managed
# programs' spm_programs.* run a tool (dmm-config, dmm-mhsim, bench/spm's
# programs) from a CMake script, outside the emulator; so do the spm compiler
# pass's corpus, seed-program and translation-count runs spmcc.<program>.<run> (its refusal
# tests run on the host's Python and stay).  Everything else labelled "unit"
# runs.
AARCH64_EXCLUDE='^(AbortPolicy\.(DoubleFree|ForeignPointer|Canary)StopsTheProgram|ForgedLinks\.CycleDoesNotHangMalloc|HostPort\.IllegalTransfersStop|frozen_header_.*|mhsim_(determinism|badopts|json|offline)|spm_programs\..*|spmcc\.[a-z_]+\.(paranoid|frames|[a-z_]*_fails|translations|dynamic|static|pieces))$'

# cross_stage <name> <toolchain file> <exclude regex> [<check> [<tool>...]]:
# configure build/<name> with cmake/<toolchain file> (RelWithDebInfo's -O2
# without -g: debug information made the cross compilers take half as long
# again on the heap's variant files; no benchmarks, fuzzers or shared
# libraries), build the programs of the tests
# labelled "unit", run the function <check> (with the build directory as its
# argument; "" for none), then the "unit" tests with ctest (through the
# toolchain's emulator, if it sets one) except those matching <exclude
# regex>.  The <tool>s must be on PATH.
cross_stage() {
    local name=$1 toolchain=$2 exclude=$3 check=${4:-} t
    shift $(($# < 4 ? $# : 4))
    local dir="$ROOT/build/$name"
    for t in "$@"; do
        command -v "$t" >/dev/null || { echo "$t not found (scripts/setup.sh installs it)"; return 1; }
    done
    run cmake -S "$ROOT" -B "$dir" -G Ninja \
        -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/$toolchain" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
        -DDMM_BUILD_TESTS=ON -DDMM_BUILD_BENCH=OFF -DDMM_BUILD_FUZZ=OFF -DDMM_BUILD_SHARED=OFF
    local outs
    outs=$(label_outputs "$name" unit "$exclude")
    if [ -z "$outs" ]; then
        echo "note: cannot tell which programs the 'unit' tests need; building everything"
        run cmake --build "$dir" -j "$JOBS"
    else
        # shellcheck disable=SC2086  # one output path per line, no spaces
        run cmake --build "$dir" -j "$JOBS" --target $outs
    fi
    if [ -n "$check" ]; then
        "$check" "$dir" || return 1
    fi
    local ex=()
    [ -z "$exclude" ] || ex=(-E "$exclude")
    run ctest --test-dir "$dir" -j "$JOBS" --output-on-failure --no-tests=error -L unit "${ex[@]}"
}

# The AArch64 library really has the NEON routines (not only the portable
# loop).  (A here-string, not a pipe: grep -q quitting early would fail nm
# under pipefail.)
aarch64_has_neon() {
    grep -q ' T dmm__vec_arch_impls$' <<<"$(nm "$1/lib/libdmm_heap.a")" \
        || { echo "libdmm_heap.a (aarch64) has no dmm__vec_arch_impls: vec_neon.c not built"; return 1; }
}

stage_aarch64() {
    cross_stage aarch64 toolchain-aarch64.cmake "$AARCH64_EXCLUDE" aarch64_has_neon \
        aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ qemu-aarch64
}

# 32-bit ARM runs under qemu-arm: the same tests as on AArch64 cannot run.
stage_arm32() {
    cross_stage arm32 toolchain-armhf.cmake "$AARCH64_EXCLUDE" "" \
        arm-linux-gnueabihf-gcc arm-linux-gnueabihf-g++ qemu-arm
}

# 32-bit x86 programs run natively (cmake/toolchain-i686.cmake), so every
# other "unit" test runs, death tests and CMake-script tests included, except
# the spm compiler pass's program runs: its runtime tells a heap pointer from
# a host one by a bias in the top quarter of the address space
# (tools/spmcc/runtime/spmcc_rt.h, SPMCC_BIAS), where a 32-bit process's
# stack lies, so the runtime refuses to start there (its own check, with a
# one-line message); the rewritten programs need a 64-bit host.
X86_32_EXCLUDE='^spmcc\.[a-z_]+\.(paranoid|frames|[a-z_]*_fails|translations|dynamic|static|pieces)$'
# libdmm's tests are not "unit" tests (threads, forks, child processes);
# they run here as one binary, because their answers depend on the word size
# (malloc's 16-byte alignment where the heap's own is 8; an overflow of a
# block's last word that reaches the next header; hundreds of threads in a
# 32-bit address space).
x86_32_malloc() {
    run cmake --build "$1" -j "$JOBS" --target dmm_malloc_tests
    run "$1/tests/malloc/dmm_malloc_tests" --gtest_brief=1
}

stage_x86_32() {
    cross_stage x86_32 toolchain-i686.cmake "$X86_32_EXCLUDE" x86_32_malloc i686-linux-gnu-gcc i686-linux-gnu-g++
}

# ---------------------------------------------------------------------------
stages=()
for a in "$@"; do
    case "$a" in
        --list) printf '%s\n' "${ALL_STAGES[@]}" "${OPT_STAGES[@]}"; exit 0 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *)
            if [[ " ${ALL_STAGES[*]} ${OPT_STAGES[*]} " == *" $a "* ]]; then
                stages+=("$a")
            else
                echo "test.sh: unknown stage '$a' (known: ${ALL_STAGES[*]} ${OPT_STAGES[*]})" >&2
                exit 2
            fi
            ;;
    esac
done
[ ${#stages[@]} -gt 0 ] || stages=("${ALL_STAGES[@]}")

# CPU seconds (user + sys) used so far by the finished children of this shell
# (`times` must run in this shell, not in a command substitution).
CPU_FILE=$(mktemp "${TMPDIR:-/tmp}/dmmkit-test-cpu.XXXXXX")
trap 'rm -f "$CPU_FILE"' EXIT
child_cpu() {
    times >"$CPU_FILE"
    CPU_NOW=$(awk 'NR == 2 {
        n = split($0, f, " "); s = 0
        for (i = 1; i <= n; i++) { m = f[i]; sub(/s$/, "", m); split(m, p, "m"); s += p[1] * 60 + p[2] }
        printf "%d\n", s }' "$CPU_FILE")
}

# What `git status` and the tracked files' diff are now (compared at the end).
tree_state() {
    git -C "$ROOT" status --porcelain=v1 --untracked-files=all 2>/dev/null
    git -C "$ROOT" diff HEAD 2>/dev/null | sha1sum
}
TREE_BEFORE=$(tree_state)

passed=0
failed=0
results=()
t_all=$(date +%s)
i=0
for s in "${stages[@]}"; do
    i=$((i + 1))
    echo
    echo "==== [$i/${#stages[@]}] stage $s ($(date -u +%H:%M:%S) UTC)"
    t0=$(date +%s)
    child_cpu
    c0=$CPU_NOW
    ( set -e; "stage_$s" )
    rc=$?
    dt=$(( $(date +%s) - t0 ))
    child_cpu
    cpu=$(( CPU_NOW - c0 ))
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        verdict=PASS
    else
        failed=$((failed + 1))
        verdict="FAIL (exit $rc)"
    fi
    results+=("$(printf '%-9s %-14s %5d s wall %6d s cpu' "$s" "$verdict" "$dt" "$cpu")")
    echo "==== stage $s: $verdict in ${dt} s (cpu ${cpu} s)"
done

TREE_AFTER=$(tree_state)
if [ "$TREE_AFTER" = "$TREE_BEFORE" ]; then
    results+=("$(printf '%-9s %-14s %s' tree PASS "git status and tracked files as before the run")")
else
    failed=$((failed + 1))
    echo
    echo "==== the run changed the source tree (git status before -> after):"
    diff <(echo "$TREE_BEFORE") <(echo "$TREE_AFTER") | sed 's/^/  /'
    results+=("$(printf '%-9s %-14s %s' tree FAIL "a stage modified a tracked file or left an untracked one")")
fi

echo
echo "==== summary (total $(( $(date +%s) - t_all )) s)"
printf '  %s\n' "${results[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# scripts/make_traces.sh - regenerate the bundled traces in bench/traces/.
#
#   scripts/make_traces.sh [--build DIR] [--out DIR] [--check]
#
#   --build DIR  build tree holding the workload programs
#                (bench/workloads/programs), gen-larson (bench/workloads/gen),
#                dmm-trace (tools) and lib/libdmmrec.so; default build/release
#   --out DIR    where the traces and manifest.tsv go; default bench/traces
#   --check      regenerate into a temporary directory and compare every
#                deterministic trace's hash and operation count with
#                bench/traces/manifest.tsv; exit 1 on any difference
#
# Needs the recorder (scripts/record.sh, libdmmrec.so): build it, the tools
# and the programs first, e.g.
#   cmake --preset release && cmake --build --preset release
# (targets dmmrec, dmm-trace, gen-larson, workload_programs).  Overrides:
# DMM_REC_LIB (the recorder), DMM_WL_BIN (directory of the programs),
# DMM_GEN_LARSON, DMM_TRACE_TOOL.
#
# Every trace is recorded from a real run (or generated), validated with
# `dmm-trace validate`, and described in manifest.tsv: file, operations,
# threads, hash, bytes, determinism, the program's checksum line, command.
# The recorder's metadata (pid, start time) differs between runs; the hash
# (operations only, docs/trace-format.md) does not, except for traces of
# multi-threaded runs, marked "nondeterministic".
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf 'make_traces: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

build="$ROOT/build/release"
out="$ROOT/bench/traces"
check=0
while [ $# -gt 0 ]; do
    case "$1" in
        --build) [ $# -ge 2 ] || die "--build needs a directory"; build=$2; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out=$2; shift 2 ;;
        --check) check=1; shift ;;
        -h|--help) sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) say "unknown option '$1'"; exit 2 ;;
    esac
done
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac

wl=${DMM_WL_BIN:-$build/bench/workloads/programs}
gen=${DMM_GEN_LARSON:-$build/bench/workloads/gen/gen-larson}
tool=${DMM_TRACE_TOOL:-$build/tools/dmm-trace}
export DMM_REC_LIB=${DMM_REC_LIB:-$build/lib/libdmmrec.so}
for f in "$wl/rbtree" "$wl/fast" "$gen" "$tool" "$DMM_REC_LIB"; do
    [ -e "$f" ] || die "missing $f (build targets workload_programs, gen-larson, dmm-trace, dmmrec; or see --help)"
done

if [ "$check" -eq 1 ]; then
    reference="$out/manifest.tsv"
    [ -f "$reference" ] || die "no $reference to check against"
    out=$(mktemp -d "${TMPDIR:-/tmp}/dmm-traces.XXXXXX")
    trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
manifest="$out/manifest.tsv.new"
printf '# file\tops\tthreads\thash\tbytes\tdeterministic\tchecksum\tcommand\n' > "$manifest"

info_field() { # info_field FILE KEY -> value from `dmm-trace info`
    "$tool" info "$1" | awk -v k="$2" '$1 == k { print $2; exit }'
}

add() { # add FILE DETERMINISTIC CHECKSUM COMMAND...
    local file=$1 det=$2 sum=$3
    shift 3
    "$tool" validate "$out/$file" > /dev/null || die "$file does not validate"
    local ops threads hash bytes
    ops=$(info_field "$out/$file" ops)
    threads=$(info_field "$out/$file" threads)
    hash=$(info_field "$out/$file" hash)
    bytes=$(wc -c < "$out/$file" | tr -d ' ')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$file" "$ops" "$threads" "$hash" "$bytes" "$det" "$sum" "$*" >> "$manifest"
    say "$file: $ops ops, $threads thread(s), hash $hash, $bytes bytes"
}

record() { # record FILE DETERMINISTIC PROGRAM ARGS...
    local file=$1 det=$2 prog=$3
    shift 3
    local stdout sum
    stdout=$("$ROOT/scripts/record.sh" -o "$out/$file" -- "$wl/$prog" "$@" 2> "$out/.record.log") ||
        { cat "$out/.record.log" >&2; die "recording $prog failed"; }
    sum=$(printf '%s\n' "$stdout" | sed -n 's/^checksum=//p')
    [ -n "$sum" ] || die "$prog printed no checksum"
    add "$file" "$det" "$sum" "$prog $*"
}

write_readme() { # write_readme README MANIFEST TOTAL
    local libc recver
    libc=$(ldd --version 2>/dev/null | head -n 1 | sed 's/^ldd //')
    recver=$("$tool" info "$out/rbtree.trace" | awk '$1 ~ /^recorder_version=/ { sub(/^recorder_version=/, "", $1); print $1; exit }')
    # the compiler and build type of the programs, from their build tree's cache
    local d=$wl cc="" bt=""
    while [ "$d" != / ] && [ ! -f "$d/CMakeCache.txt" ]; do d=$(dirname "$d"); done
    if [ -f "$d/CMakeCache.txt" ]; then
        cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$d/CMakeCache.txt" | head -n 1)
        [ -n "$cc" ] && cc="$("$cc" --version 2>/dev/null | head -n 1)"
        bt=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$d/CMakeCache.txt" | head -n 1)
    fi
    {
        cat <<'EOT'
# Bundled allocation traces

Small traces recorded from the workload programs in
`bench/workloads/programs/` (with the LD_PRELOAD recorder,
`scripts/record.sh`) or generated (`gen-larson`, `dmm-trace randomize`), so
the benchmarks and tests run with no recording step. Binary format,
`docs/trace-format.md`. **This file and `manifest.tsv` are written by
`scripts/make_traces.sh`**; do not edit them by hand. Regenerate with

    scripts/make_traces.sh            # needs the release build: dmmrec, dmm-trace,
                                      # gen-larson, workload_programs
    scripts/make_traces.sh --check    # regenerate elsewhere, compare hashes

`tests/trace` (BundledTraces) checks that every file loads, validates and
matches its row below (operations, threads, hash, size), and recomputes the
randomised-free variants from their sources.

Commands are run from the build's program directory under
`scripts/record.sh -o FILE -- PROGRAM ARGS`; "checksum" is the program's
own result line, the proof that the run computed what it should. The hash
(`dmm_trace_hash`, also printed by `dmm-trace info`) covers the operations
only, not the recorder's metadata (pid, start time), so re-recording a
deterministic program gives the same hash.

| file | operations | threads | hash | bytes | checksum | command |
|---|---:|---:|---|---:|---|---|
EOT
        awk -F'\t' '!/^#/ { d = ($6 == "yes") ? "" : " (" $6 ")"; printf "| `%s` | %s | %s | `%s`%s | %s | %s | `%s` |\n", $1, $2, $3, $4, d, $5, $7, $8 }' "$2"
        cat <<EOT

Total: $3 bytes. Recorder version ${recver:-?}; C library: ${libc:-unknown};
programs built with ${cc:-an unknown compiler} (${bt:-unknown build type}). The
programs call malloc through volatile function pointers, so no compiler can
elide or merge their allocations: gcc 12 -O3 and -O0 and clang 14 -O3 builds
record the same hashes (the "checksum" column never depends on the build).

Notes
- \`fft\` and \`fft_inv\` have the same hash: the inverse transform allocates
  exactly as the forward one (the seed's Table I gives both the same heap
  size, 16,416 bytes); both are kept because the seed lists both.
- \`fast-t4\` is FAST with 4 worker threads: the corner records are made by
  the workers and freed by the master, so the trace has cross-thread frees
  and SYNC operations. The interleaving of the threads differs between runs,
  so its hash is not reproducible (marked nondeterministic).
- The seed-001 kernels are one application run each (a few hundred to a few
  thousand operations), as in the seed; \`--runs N\` records N back-to-back
  runs.
- Sizes were chosen to keep the whole directory well under 3 MB; the
  programs' defaults (and the seed's 65,536-node rbTree) are larger.
EOT
    } > "$1"
}

# ---- seed 000 programs ---------------------------------------------------------
record rbtree.trace yes rbtree -n 8000 --seed 1
record dijkstra.trace yes dijkstra -n 1000 -d 4 --sources 8 --seed 1
record fft.trace yes fft -n 1024 -b 64 --seed 1
record fft_inv.trace yes fft_inv -n 1024 -b 64 --seed 1
record stringsearch.trace yes stringsearch -n 200 -t 150 --seed 1
record dfs.trace yes dfs -n 5000 -r 2 --seed 1
record mst.trace yes mst -n 1000 -r 2 --seed 1
# ---- seed 001 kernels (one application run each, master runs the jobs) ---------
record integral.trace yes integral --seed 1
record gaussian.trace yes gaussian --seed 1
record fast.trace yes fast --seed 1
record matmul.trace yes matmul --seed 1
# the FAST kernel with 4 worker threads: corner records made by workers and
# freed by the master (cross-thread frees, syncs); the order of the threads'
# operations varies from run to run
record fast-t4.trace nondeterministic fast --threads 4 --seed 1
# ---- generated ---------------------------------------------------------------------
"$gen" --threads 4 --rounds 2000 --chunks 300 --min 8 --max 512 --seed 1 -o "$out/larson.trace" > /dev/null
add larson.trace yes - gen-larson --threads 4 --rounds 2000 --chunks 300 --min 8 --max 512 --seed 1
# ---- seed 001 section 5.3: randomised free points of FAST and Matrix ---------------
"$tool" randomize "$out/fast.trace" "$out/fast-rf.trace" --seed 1
add fast-rf.trace yes - dmm-trace randomize fast.trace fast-rf.trace --seed 1
"$tool" randomize "$out/matmul.trace" "$out/matmul-rf.trace" --seed 1
add matmul-rf.trace yes - dmm-trace randomize matmul.trace matmul-rf.trace --seed 1

rm -f "$out/.record.log"
mv "$manifest" "$out/manifest.tsv"
total=$(awk -F'\t' '!/^#/ { s += $5 } END { print s }' "$out/manifest.tsv")
say "total $total bytes in $out"
write_readme "$out/README.md" "$out/manifest.tsv" "$total"

if [ "$check" -eq 1 ]; then
    bad=0
    while IFS=$'\t' read -r file ops threads hash bytes det sum cmd; do
        case "$file" in '#'*) continue ;; esac
        [ "$det" = yes ] || continue
        new=$(awk -F'\t' -v f="$file" '$1 == f { print $2 " " $4 " " $7 }' "$out/manifest.tsv")
        if [ "$new" != "$ops $hash $sum" ]; then
            say "DIFFERS: $file: bundled '$ops $hash $sum', regenerated '$new'"
            bad=1
        fi
    done < "$reference"
    [ "$bad" -eq 0 ] || exit 1
    say "every deterministic trace regenerates with the bundled hash and operation count"
fi

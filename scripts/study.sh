#!/usr/bin/env bash
# scripts/study.sh - the many-core heap study of issue 10 (docs/study.md):
# builds what it needs (release preset: the native tools, the recorder,
# libdmm.so, the mt-* programs), then runs `dmmkit study` into
# bench/results/study_mt/ (or DIR): a thread sweep 1,2,4,8 of every mt
# program and every real workload under glibc, jemalloc, mimalloc, tcmalloc,
# tbbmalloc and libdmm, 5 interleaved repetitions, with the request-pattern
# analysis of each workload beside the results.
#
#   scripts/study.sh [-o DIR] [dmmkit study options...]
#
# Other options go to `dmmkit study` unchanged (--reps, --threads,
# --workloads, --alloc, --quick, ...; see `dmmkit study --help`).  The full
# study takes a long time (minutes to tens of minutes, mostly the real
# programs): run it on a quiet machine.  Writes DIR/study.json (schema
# dmm-study/1), DIR/study.md and DIR/*.png; this command line (or
# $DMMKIT_STUDY_SCRIPT, set by a script that drives this one) is recorded in
# both, in scripts/provenance.py's record.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
T0=$(date +%s)
say() { printf '[study %3ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
JOBS=${DMM_JOBS:-2}
OUT="$ROOT/bench/results/study_mt"
ARGS=()
CMDLINE="scripts/study.sh"
for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./,=:+-]+$ ]]; then CMDLINE+=" $a"; else CMDLINE+=" $(printf '%q' "$a")"; fi
done
while [ $# -gt 0 ]; do
    case "$1" in
        -o|--output)
            [ $# -ge 2 ] || { echo "study: $1 needs a directory" >&2; exit 2; }
            OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) ARGS+=("$1"); shift ;;
    esac
done

if [ -x scripts/setup.sh ]; then
    say "scripts/setup.sh (installs missing packages; a no-op when all are present)"
    scripts/setup.sh
fi
say "building (release): tools, recorder, libdmm.so, mt programs"
cmake --preset release >/dev/null
cmake --build --preset release -j "$JOBS" --target dmm-replay dmm-analyse dmm-trace dmmrec dmm_malloc_shared \
    mt_programs >/dev/null
if [ ! -x .venv/bin/python ]; then
    say "creating .venv"
    python3 -m venv .venv
fi
if ! .venv/bin/python -c 'import dmmkit, click, rich, matplotlib' 2>/dev/null; then
    say "pip install -e ./python"
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ./python
fi
say "dmmkit study -o $OUT ${ARGS[*]}"
DMMKIT_STUDY_SCRIPT="${DMMKIT_STUDY_SCRIPT:-$CMDLINE}" DMMKIT_TOOLS="$ROOT/build/release/tools" DMMKIT_ROOT="$ROOT" \
    .venv/bin/python -m dmmkit study -o "$OUT" "${ARGS[@]}"
say "done: $OUT/study.md"

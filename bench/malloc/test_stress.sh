#!/usr/bin/env bash
# bench/malloc/test_stress.sh - mimalloc's test/test-stress.c (threads that
# allocate, check, free and hand blocks to each other, re-created every
# iteration) built with -DUSE_STD_MALLOC (plain malloc/free, assertions on)
# and run with the release libdmm.so preloaded and DMM_ABORT_ON_ERROR=1 (a
# report aborts the run) in the default mode, with DMM_SECURE=1 and with
# DMM_MEDIUM=org=tlsf,poison=on,harden=canary (the strictest), and under
# glibc for reference; argument sets: the defaults, "8 50 50", "4 100 20".
#
#   bench/malloc/test_stress.sh MIMALLOC_SRC [OUT]
#
# MIMALLOC_SRC is a clone of https://github.com/microsoft/mimalloc the user
# has, or a bare git directory of one (its $MIMALLOC_REV, default HEAD);
# only test/test-stress.c is read (nothing of mimalloc is in this
# repository and nothing here downloads it).  Writes
# bench/results/libdmm_test_stress.{json,md} (or into OUT).  A run passes
# on exit status 0; each runs under a timeout of $DMM_STRESS_TIMEOUT s
# (default 300).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
USAGE="usage: bench/malloc/test_stress.sh MIMALLOC_SRC [OUT] (MIMALLOC_SRC: a mimalloc source tree or a bare git directory of one)"
[ $# -ge 1 ] && [ $# -le 2 ] && [ -n "$1" ] || { echo "$USAGE" >&2; exit 2; }
SRC=$1
OUT=${2:-$ROOT/bench/results}
[ -d "$SRC" ] || { echo "test_stress.sh: $SRC: no such directory; $USAGE" >&2; exit 2; }
SRC=$(cd "$SRC" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -f "$SRC/test/test-stress.c" ] && [ -f "$SRC/include/mimalloc.h" ]; then
    cp "$SRC/test/test-stress.c" "$work/"
    if [ "$(git -C "$SRC" rev-parse --show-toplevel 2>/dev/null)" = "$SRC" ]; then
        COMMIT=$(git -C "$SRC" rev-parse HEAD)
    else
        COMMIT=unknown
    fi
elif REV=${MIMALLOC_REV:-HEAD} && git --git-dir="$SRC" cat-file -e "$REV:test/test-stress.c" 2>/dev/null &&
     git --git-dir="$SRC" cat-file -e "$REV:include/mimalloc.h" 2>/dev/null; then
    git --git-dir="$SRC" show "$REV:test/test-stress.c" > "$work/test-stress.c"
    COMMIT=$(git --git-dir="$SRC" rev-parse "$REV^{commit}")
else
    echo "test_stress.sh: $SRC is not a mimalloc source tree (no test/test-stress.c and include/mimalloc.h); $USAGE" >&2
    exit 2
fi
# $DMM_LIBDMM: another libdmm.so to preload (bench/malloc/pick_libdmm.sh)
# shellcheck source=bench/malloc/pick_libdmm.sh
. "$ROOT/bench/malloc/pick_libdmm.sh"
pick_libdmm test_stress.sh
CC=${CC:-cc}
# no -DNDEBUG: test-stress checks every block's contents with assert
nice -n 10 "$CC" -O2 -g -DUSE_STD_MALLOC -w "$work/test-stress.c" -o "$work/test-stress" -lpthread

: > "$work/all"
for args in "" "8 50 50" "4 100 20"; do
    name="test-stress${args:+ $args}"
    for mode in glibc libdmm libdmm-secure libdmm-strict; do
        case $mode in
            glibc) envs=() ;;
            libdmm) envs=(DMM_ABORT_ON_ERROR=1 LD_PRELOAD="$LIBDMM") ;;
            libdmm-secure) envs=(DMM_ABORT_ON_ERROR=1 DMM_SECURE=1 LD_PRELOAD="$LIBDMM") ;;
            libdmm-strict) envs=(DMM_ABORT_ON_ERROR=1 DMM_MEDIUM=org=tlsf,poison=on,harden=canary LD_PRELOAD="$LIBDMM") ;;
        esac
        start=$(date +%s.%N)
        set +e
        # shellcheck disable=SC2086 # the arguments are meant to split
        env "${envs[@]}" timeout --kill-after=10 "${DMM_STRESS_TIMEOUT:-300}" nice -n 10 "$work/test-stress" $args \
            > "$work/out" 2>&1
        rc=$?
        set -e
        secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then st=timeout
        elif [ $rc -eq 0 ] && ! grep -aq '^libdmm: ' "$work/out"; then st=pass
        else st=fail; fi
        tail=$(grep -a -m3 '^libdmm: ' "$work/out" | cut -c1-200 | tr '\t\n' '  ' || true)
        [ -n "$tail" ] || tail=$(tail -n 2 "$work/out" | cut -c1-200 | tr '\t\n' '  ')
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$st" "$secs" "exit $rc: $tail" >> "$work/all"
        echo "$name $mode: $st (${secs} s)"
    done
done

PROV=(--command "${DMM_LIBDMM:+DMM_LIBDMM=LIB }${MIMALLOC_REV:+MIMALLOC_REV=$MIMALLOC_REV }bench/malloc/test_stress.sh MIMALLOC_SRC${2:+ $2}"
      --cmake-build "$ROOT/build/release"
      --impl "$IMPL; mimalloc's test/test-stress.c (commit $COMMIT) built with $CC -O2 -DUSE_STD_MALLOC")
pj=$(python3 "$ROOT/scripts/provenance.py" --json "${PROV[@]}")
pm=$(python3 "$ROOT/scripts/provenance.py" --md "${PROV[@]}")
python3 "$ROOT/bench/malloc/suite_report.py" test_stress "$work/all" "$OUT" "$COMMIT" "$pj" "$pm" \
    "$(getconf GNU_LIBC_VERSION 2>/dev/null || echo "glibc unknown")"

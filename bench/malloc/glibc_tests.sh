#!/usr/bin/env bash
# bench/malloc/glibc_tests.sh - glibc's portable malloc tests (issue 27's
# list: tst-malloc ... tst-free-errno) built against dmmkit's stand-in for
# glibc's test driver (bench/malloc/glibc_support: support/check.h,
# support/test-driver.c, ... written here from their documented meaning),
# each run under glibc itself (the reference), with the release libdmm.so
# preloaded (default mode) and with DMM_SECURE=1.
#
#   bench/malloc/glibc_tests.sh GLIBC_SRC [OUT]
#
# GLIBC_SRC is a glibc source tree the user has (nothing of glibc is in
# this repository and nothing here downloads it): a clone of
# https://sourceware.org/git/glibc.git (or its GitHub mirror), or a bare
# git directory of one (the revision $GLIBC_REV of it, default HEAD: e.g.
# GLIBC_REV=glibc-2.36 for the tests of the installed glibc's version).
# Only its malloc/tst-* files are read, copied into a scratch directory.
# Writes bench/results/libdmm_glibc_tests.{json,md} (or into OUT).  The
# reference is the installed glibc: a test newer than it may test
# behaviour it lacks (the report names its version).
#
# A test passes on exit status 0; 77 is unsupported; the driver's own
# timeout (the test's TIMEOUT, default 20 s, times $TIMEOUTFACTOR, which the
# command line recorded in the results names when it is set: on a loaded
# machine the fork tests can need more) or the
# outer one ($DMM_GLIBC_TIMEOUT s, default 300) is a timeout; anything else
# fails.  A test the stand-in cannot build is listed as not built, with the
# compiler's first error.  A test that fails under glibc too points at the
# stand-in or at a test newer than the installed glibc, not at libdmm: the
# report says so.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
USAGE="usage: bench/malloc/glibc_tests.sh GLIBC_SRC [OUT] (GLIBC_SRC: a glibc source tree or a bare git directory of one)"
[ $# -ge 1 ] && [ $# -le 2 ] && [ -n "$1" ] || { echo "$USAGE" >&2; exit 2; }
SRC=$1
OUT=${2:-$ROOT/bench/results}
[ -d "$SRC" ] || { echo "glibc_tests.sh: $SRC: no such directory; $USAGE" >&2; exit 2; }
SRC=$(cd "$SRC" && pwd)
SUP="$ROOT/bench/malloc/glibc_support"
# issue 27's list; tst-aligned-alloc-static is tst-aligned-alloc linked
# statically, which no preloaded library can replace (listed, not run)
TESTS=(tst-malloc tst-calloc tst-realloc tst-reallocarray tst-valloc tst-pvalloc tst-memalign
       tst-posix_memalign tst-aligned-alloc tst-aligned-alloc-random tst-aligned-alloc-random-thread
       tst-aligned-alloc-random-thread-cross tst-aligned-alloc-static tst-mallocalign1
       tst-malloc-too-large tst-mallocfork tst-mallocfork2 tst-mallocfork3 tst-malloc-fork-deadlock
       tst-malloc-thread-fail tst-malloc-thread-exit tst-malloc-tcache-leak tst-mallinfo2
       tst-malloc-stats-cancellation tst-malloc_info tst-mallopt tst-trim1 tst-free-errno)
# $DMM_GLIBC_TESTS: a subset to run (names from the list, space-separated)
if [ -n "${DMM_GLIBC_TESTS:-}" ]; then read -ra TESTS <<< "$DMM_GLIBC_TESTS"; fi
declare -A NOT_RUN=([tst-aligned-alloc-static]="links statically (-static): a preloaded malloc cannot replace glibc's in it")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/malloc" "$work/bin" "$work/tmp" "$work/log"
# the tests, from a work tree or a bare git directory; anything else is refused before anything is built or written
if [ -f "$SRC/malloc/tst-malloc.c" ] && [ -f "$SRC/malloc/malloc.c" ]; then
    find "$SRC/malloc" -maxdepth 1 -type f -name 'tst-*' -exec cp {} "$work/src/malloc/" \;
    # the commit only when SRC is a clone's top (not a copy inside another repository)
    if [ "$(git -C "$SRC" rev-parse --show-toplevel 2>/dev/null)" = "$SRC" ]; then
        COMMIT=$(git -C "$SRC" rev-parse HEAD)
    else
        COMMIT=unknown
    fi
elif REV=${GLIBC_REV:-HEAD} && git --git-dir="$SRC" cat-file -e "$REV:malloc/tst-malloc.c" 2>/dev/null &&
     git --git-dir="$SRC" cat-file -e "$REV:malloc/malloc.c" 2>/dev/null; then
    git --git-dir="$SRC" archive "$REV" malloc | tar -x -C "$work/src" --wildcards 'malloc/tst-*'
    COMMIT=$(git --git-dir="$SRC" rev-parse "$REV^{commit}")
else
    echo "glibc_tests.sh: $SRC is not a glibc source tree (no malloc/tst-malloc.c and malloc/malloc.c); $USAGE" >&2
    exit 2
fi
# "../test-skeleton.c" (the older tests' driver) resolves next to malloc/
ln -s "$SUP/test-skeleton.c" "$work/src/test-skeleton.c"

# $DMM_LIBDMM: another libdmm.so to preload (bench/malloc/pick_libdmm.sh)
# shellcheck source=bench/malloc/pick_libdmm.sh
. "$ROOT/bench/malloc/pick_libdmm.sh"
pick_libdmm glibc_tests.sh
CC=${CC:-cc}
CFLAGS=(-std=gnu11 -O2 -g -D_GNU_SOURCE -fno-builtin -w -include "$SUP/internal.h" -I"$SUP" -I"$work/src/malloc")
nice -n 10 "$CC" "${CFLAGS[@]}" -c "$SUP/support.c" -o "$work/support.o"

: > "$work/all"
for t in "${TESTS[@]}"; do
    if [ -n "${NOT_RUN[$t]:-}" ]; then
        printf '%s\t-\tnot-run\t0\t%s\n' "$t" "${NOT_RUN[$t]}" >> "$work/all"
        continue
    fi
    if [ ! -f "$work/src/malloc/$t.c" ]; then
        printf '%s\t-\tnot-built\t0\t%s\n' "$t" "no malloc/$t.c in this glibc" >> "$work/all"
        continue
    fi
    if ! nice -n 10 "$CC" "${CFLAGS[@]}" "$work/src/malloc/$t.c" "$work/support.o" -o "$work/bin/$t" -lpthread \
            > "$work/log/$t.build" 2>&1; then
        why=$(grep -m1 -E 'error|undefined' "$work/log/$t.build" | sed "s|$work/src/||g; s|$SUP/||g" | tr '\t' ' ' || true)
        printf '%s\t-\tnot-built\t0\t%s\n' "$t" "${why:-the compiler failed}" >> "$work/all"
        echo "$t: not built: ${why:-the compiler failed}"
        continue
    fi
    for mode in glibc libdmm libdmm-secure; do
        case $mode in
            glibc) envs=() ;;
            libdmm) envs=(LD_PRELOAD="$LIBDMM") ;;
            libdmm-secure) envs=(DMM_SECURE=1 LD_PRELOAD="$LIBDMM") ;;
        esac
        start=$(date +%s.%N)
        set +e
        (cd "$work/tmp" && env TMPDIR="$work/tmp" "${envs[@]}" \
             timeout --kill-after=10 "${DMM_GLIBC_TIMEOUT:-300}" "$work/bin/$t") > "$work/log/$t.$mode" 2>&1
        rc=$?
        set -e
        secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
        if [ $rc -eq 0 ]; then st=pass
        elif [ $rc -eq 77 ]; then st=unsupported
        elif [ $rc -eq 124 ] || [ $rc -eq 137 ] || grep -aq '^Timed out: killed the child process' "$work/log/$t.$mode"; then st=timeout
        else st=fail; fi
        tail=$(tail -n 3 "$work/log/$t.$mode" | sed "s|$work/src/||g" | cut -c1-200 | tr '\t\n' '  ')
        printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$mode" "$st" "$secs" "exit $rc: $tail" >> "$work/all"
        echo "$t $mode: $st (${secs} s)"
    done
done

GLIBC_VERSION=$(getconf GNU_LIBC_VERSION 2>/dev/null || echo "glibc unknown")
PROV=(--command "${TIMEOUTFACTOR:+TIMEOUTFACTOR=$TIMEOUTFACTOR }${DMM_GLIBC_TESTS:+DMM_GLIBC_TESTS='$DMM_GLIBC_TESTS' }${DMM_LIBDMM:+DMM_LIBDMM=LIB }${GLIBC_REV:+GLIBC_REV=$GLIBC_REV }bench/malloc/glibc_tests.sh GLIBC_SRC${2:+ $2}" --cmake-build "$ROOT/build/release"
      --impl "$IMPL; glibc's malloc tests (commit $COMMIT) built with $CC and bench/malloc/glibc_support")
pj=$(python3 "$ROOT/scripts/provenance.py" --json "${PROV[@]}")
pm=$(python3 "$ROOT/scripts/provenance.py" --md "${PROV[@]}")
python3 "$ROOT/bench/malloc/suite_report.py" glibc_tests "$work/all" "$OUT" "$COMMIT" "$pj" "$pm" "$GLIBC_VERSION"

#!/usr/bin/env bash
# tests/malloc/preload_run.sh LIB NAME [THREADS] - runs the real-program
# workload NAME of bench/workloads/real/real.sh once on the C library's malloc
# and once with LIB (libdmm) preloaded, and fails unless both succeed with
# the same output and libdmm really served the program: with DMM_SHOW_STATS=1
# its exit statistics ("libdmm statistics: mapped ...") must appear on the
# workload's stderr (for redis: on the private server's stderr).
# Exit 77 = skipped (the program is not installed).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: preload_run.sh LIB NAME [THREADS]" >&2; exit 2; }
lib=$1 name=$2 threads=${3:-2}
real=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../bench/workloads/real" && pwd)/real.sh
[ -f "$lib" ] || { echo "FAIL: $lib does not exist"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/preload_run.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

mode=$(bash "$real" --list | sed -n "s/^$name //p")
[ -n "$mode" ] || { echo "FAIL: real.sh has no workload $name"; exit 1; }
args=()
[ "$mode" = threaded ] && args=(--threads "$threads")

ref=$(bash "$real" "$name" "${args[@]}" --workdir "$work/glibc" 2>"$work/glibc.err")
rc=$?
[ $rc -eq 77 ] && { echo "$ref"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: $name fails on the C library's malloc (exit $rc): $ref"; cat "$work/glibc.err"; exit 1; }
got=$(DMM_SHOW_STATS=1 LD_PRELOAD="$lib" bash "$real" "$name" "${args[@]}" --workdir "$work/libdmm" 2>"$work/libdmm.err")
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: $name under libdmm (exit $rc): $got"; cat "$work/libdmm.err"; exit 1; }
if [ "$ref" != "$got" ]; then
    echo "FAIL: $name output differs under libdmm"; echo "--- glibc:"; echo "$ref"; echo "--- libdmm:"; echo "$got"
    exit 1
fi
# proof that libdmm served the program that does the work
proof=$work/libdmm.err
[ "$name" = redis ] && proof=$work/libdmm/redis-server.err
# (the shell running real.sh reports too: for the others, at least two
# processes must report, the shell and the program it started)
need=2
[ "$name" = redis ] && need=1
if [ "$(grep -c "libdmm statistics: mapped" "$proof")" -lt $need ]; then
    echo "FAIL: fewer than $need libdmm statistics lines in $(basename "$proof"): libdmm did not serve $name"
    cat "$proof"
    exit 1
fi
echo "$got"
echo "ok: $name, same output with libdmm preloaded; $(grep -c 'libdmm statistics: mapped' "$proof") processes reported libdmm statistics"

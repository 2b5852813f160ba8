#!/bin/sh
# run_mt.sh - runs one multi-threaded stress program for ctest and judges it
# (bench/workloads/mt/README.md).
#
#   run_mt.sh [options] -- PROGRAM ARGS...
#     --expect ok|fail    ok (default): exit 0, the result line ends in OK and
#                         the JSON line has schema dmm-mtbench/1 and the
#                         thread count asked for.  fail: a non-zero exit with
#                         "CHECK FAILED" in the output (the program caught the
#                         allocator; a crash does not count).
#     --preload LIB       run under LD_PRELOAD=LIB; skip (exit 77) when LIB is
#                         "-", empty or missing
#     --env VAR=VALUE     set in the program's environment (repeatable)
#     --proof REGEX       the output (stdout + stderr) must match REGEX
#                         (grep -E): shows the preloaded allocator ran
#     --sanitized yes|no  yes: skip (exit 77) runs that need LD_PRELOAD
#                         (sanitizer run-times own malloc)
#     --repeat            run twice; both checksums must be equal
#     --known-bug REGEX   a failed check whose message matches REGEX is a
#                         known bug of the preloaded allocator: reported, and
#                         the test is skipped (exit 77), not passed
set -u
expect=ok preload="" proof="" sanitized=no repeat=0 envs="" known=""
while [ $# -gt 0 ]; do
    case "$1" in
        --expect) expect=$2; shift 2 ;;
        --preload) preload=$2; [ -n "$preload" ] || preload=-; shift 2 ;;  # "-": none
        --env) envs="$envs $2"; shift 2 ;;
        --proof) proof=$2; shift 2 ;;
        --sanitized) sanitized=$2; shift 2 ;;
        --repeat) repeat=1; shift ;;
        --known-bug) known=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "run_mt.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "run_mt.sh: no program" >&2; exit 2; }
prog=$1
shift

if [ -n "$preload" ]; then
    if [ "$sanitized" = yes ]; then
        echo "SKIP: LD_PRELOAD of a malloc does not mix with a sanitizer build"
        exit 77
    fi
    if [ "$preload" = - ] || [ ! -f "$preload" ]; then
        echo "SKIP: allocator library not installed (${preload#-})"
        exit 77
    fi
fi

threads=1
prev=""
for a in "$@"; do
    if [ "$prev" = --threads ] || [ "$prev" = -t ]; then threads=$a; fi
    prev=$a
done

out=$(mktemp "${TMPDIR:-/tmp}/run_mt.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT

run_once() {
    if [ -n "$preload" ]; then
        # shellcheck disable=SC2086  # VAR=VALUE words
        env $envs LD_PRELOAD="$preload" "$prog" "$@" --json >"$out" 2>&1
    else
        # shellcheck disable=SC2086
        env $envs "$prog" "$@" --json >"$out" 2>&1
    fi
}

sums=""
runs=1
[ "$repeat" = 1 ] && runs=2
i=0
while [ $i -lt $runs ]; do
    i=$((i + 1))
    run_once "$@"
    rc=$?
    echo "--- run $i: $prog $* --json${preload:+ (LD_PRELOAD=$preload)}: exit $rc"
    cat "$out"
    if [ "$expect" = fail ]; then
        if [ $rc -eq 0 ]; then
            echo "FAIL: the program passed its checks under a broken allocator"
            exit 1
        fi
        if ! grep -q "CHECK FAILED" "$out"; then
            echo "FAIL: exit $rc without a CHECK FAILED message"
            exit 1
        fi
        echo "PASS: the broken allocator was caught"
        exit 0
    fi
    if [ $rc -ne 0 ] && [ -n "$known" ] && grep -Eq "CHECK FAILED: .*$known" "$out"; then
        echo "SKIP: known allocator bug caught (the check works; the allocator is wrong)"
        exit 77
    fi
    [ $rc -eq 0 ] || { echo "FAIL: exit $rc"; exit 1; }
    grep -Eq "^[a-z-]+: threads=$threads .* checksum=[0-9a-f]{16} OK\$" "$out" \
        || { echo "FAIL: no result line ending in OK for threads=$threads"; exit 1; }
    grep -Eq "^\{\"schema\":\"dmm-mtbench/1\",.*\"threads\":$threads,.*\"wall_ns\":[0-9]+,\"peak_rss_kb\":[0-9]+," "$out" \
        || { echo "FAIL: no dmm-mtbench/1 JSON line"; exit 1; }
    if [ -n "$proof" ] && ! grep -Eq "$proof" "$out"; then
        echo "FAIL: the output does not match '$proof' (did the allocator run?)"
        exit 1
    fi
    sums="$sums $(sed -n 's/.*checksum=\([0-9a-f]*\) OK$/\1/p' "$out")"
done
if [ "$repeat" = 1 ]; then
    set -- $sums
    [ "$1" = "$2" ] || { echo "FAIL: checksum $1 then $2: not deterministic"; exit 1; }
fi
echo PASS

#!/usr/bin/env bash
# scripts/record.sh - record the allocation trace of a dynamically linked
# program with the LD_PRELOAD recorder (libdmmrec.so, docs/recorder.md).
#
#   scripts/record.sh [options] -o OUT.trace -- PROGRAM [ARGS...]
#
# Options
#   -o FILE          trace file (default: dmm-<pid>.trace in the current
#                    directory); a name ending in .txt gets the text form
#   --time           record a CLOCK_MONOTONIC timestamp per operation
#   --follow-fork    forked children record their own trace (FILE.<pid>)
#   --signal SIG     write a snapshot FILE.<n> each time SIG (USR1, USR2...)
#                    arrives
#   -h, --help       this text
#
# Builds nothing.  The library is $DMM_REC_LIB if set, else the first of
# build/release/lib/libdmmrec.so and build/debug/lib/libdmmrec.so.  Programs
# the recorded one executes (exec) record too, into FILE.<pid>.
# Everything this script prints goes to stderr; the program's output and exit
# status are its own (exit 1 if the program succeeded but a trace was not
# written, 2 on bad usage, 127 if the program is not found).  When the
# recorder cannot write a trace it says why (path and cause, e.g. "No space
# left on device"), and that one line is what this script prints.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

say() { printf 'record: %s\n' "$*" >&2; }
usage() { sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }

out=""
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        -o) [ $# -ge 2 ] || { say "-o needs a file name"; exit 2; }; out=$2; shift 2 ;;
        -o*) out=${1#-o}; shift ;;
        --time) extra+=(DMM_TRACE_TIME=1); shift ;;
        --follow-fork) extra+=(DMM_TRACE_FORK=follow); shift ;;
        --signal) [ $# -ge 2 ] || { say "--signal needs a signal name"; exit 2; }
                  extra+=("DMM_TRACE_SIGNAL=$2"); shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        *) say "unknown option '$1' (the program goes after --)"; usage; exit 2 ;;
    esac
done
if [ $# -eq 0 ]; then
    say "no program given"
    usage
    exit 2
fi

lib=""
if [ -n "${DMM_REC_LIB:-}" ]; then
    lib=$DMM_REC_LIB
    [ -f "$lib" ] || { say "DMM_REC_LIB=$lib: no such file"; exit 1; }
else
    for c in "$ROOT/build/release/lib/libdmmrec.so" "$ROOT/build/debug/lib/libdmmrec.so"; do
        if [ -f "$c" ]; then lib=$c; break; fi
    done
    if [ -z "$lib" ]; then
        say "libdmmrec.so not found in build/release/lib or build/debug/lib;"
        say "build it first (cmake --preset release && cmake --build --preset release) or set DMM_REC_LIB"
        exit 1
    fi
fi
case "$lib" in /*) ;; *) lib="$PWD/$lib" ;; esac

prog=$1
if ! path=$(command -v -- "$prog" 2>/dev/null) || [ -z "$path" ]; then
    say "program not found: $prog"
    exit 127
fi
if [ -f "$path" ] && command -v ldd >/dev/null 2>&1; then
    if LC_ALL=C ldd "$path" 2>&1 | grep -q "not a dynamic executable"; then
        say "warning: $path is statically linked; LD_PRELOAD cannot record it"
    fi
fi

summary=$(mktemp "${TMPDIR:-/tmp}/dmmrec-summary.XXXXXX") || { say "mktemp failed"; exit 1; }
trap 'rm -f "$summary"' EXIT

envs=(-u DMM_TRACE_ROOT "LD_PRELOAD=$lib${LD_PRELOAD:+:$LD_PRELOAD}" "DMM_TRACE_SUMMARY=$summary")
[ -n "$out" ] && envs+=("DMM_TRACE_OUT=$out")

env "${envs[@]}" "${extra[@]}" "$@"
rc=$?
# Under a file size limit, writing past it raises SIGXFSZ, which would kill
# this script in the middle of a message: ignore it from here on (only after
# the program ran: an ignored signal is inherited by the programs started).
trap '' XFSZ

# The recorder appends one line per trace it tried to write to the summary
# file (docs/recorder.md, "Status lines"):
#   dmmrec: /abs/path: N ops (...) ...              written
#   dmmrec: cannot write /abs/path: CAUSE (trace not written)
# Anything else (a line cut short by a full disk) is ignored.
fail_mark='(trace not written)'
ok_lines=$(grep -E '^dmmrec: .*: [0-9]+ ops \(' "$summary" | grep -vF -- "$fail_mark" || true)
fail_lines=$(grep -F -- "$fail_mark" "$summary" | grep -E '^dmmrec: .*\(trace not written\)$' || true)

if [ -n "$fail_lines" ]; then
    # the recorder's own words: which file, and the real cause
    printf '%s\n' "$fail_lines" | sed 's/^dmmrec: /record: /' >&2
    [ "$rc" -eq 0 ] && rc=1
fi

if [ -z "$ok_lines" ]; then
    if [ -z "$fail_lines" ]; then
        # The recorder reported nothing.  If it could not even write the
        # summary file (the same full disk or file size limit), it said why
        # on stderr itself: do not guess at other causes.
        if ! err=$( { printf '\n' >>"$summary"; } 2>&1 ); then
            err=${err##*: }
            say "no trace was reported: the status file $summary cannot be written either (${err:-write failed}); the recorder's own message, if any, is above"
        elif [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then
            say "no trace was written: the program was ended by signal $((rc - 128)) before exit (the recorder writes at exit; --signal takes snapshots)"
        else
            say "no trace was written (statically linked program, _exit/abort/kill before exit, or DMM_TRACE_DISABLE set)"
        fi
    fi
    [ "$rc" -eq 0 ] && rc=1
    exit "$rc"
fi
n=$(printf '%s\n' "$ok_lines" | wc -l)
main=""
if [ -n "$out" ]; then
    abs=$out
    case "$abs" in /*) ;; *) abs="$PWD/$out" ;; esac
    main=$(printf '%s\n' "$ok_lines" | grep -F "dmmrec: $abs: " | grep -v ', snapshot' | tail -n 1 || true)
fi
[ -n "$main" ] || main=$(printf '%s\n' "$ok_lines" | head -n 1)
tracefile=${main#dmmrec: }
tracefile=${tracefile%%: *}
say "trace written to $tracefile"
say "${main#dmmrec: }"
if [ "$n" -gt 1 ]; then
    say "$((n - 1)) more trace(s) from child processes or snapshots:"
    printf '%s\n' "$ok_lines" | grep -vxF -- "$main" | sed 's/^dmmrec: /record:   /' >&2
fi
exit "$rc"

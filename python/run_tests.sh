#!/usr/bin/env bash
# python/run_tests.sh - the Python front end's tests (pytest), for scripts/test.sh.
#
#   python/run_tests.sh [pytest args...]
#
# Creates (or reuses) the virtual environment .venv at the repository root,
# installs the package with its test extras (pip install -e './python[test]'),
# tries to install ray for the Ray executor test (the test is skipped, with
# the reason, when ray cannot be installed for this Python), makes sure the
# release build of the native tools exists (dmm-replay, dmm-analyse,
# dmm-trace, libdmmrec.so; and for `dmmkit study`'s tests libdmm.so and the
# mt-* programs), then runs pytest.
# Exit status: pytest's; "no tests collected" (pytest status 5) is a failure.
# Environment: PYTHON (default python3), DMM_JOBS (build jobs, default 2),
# DMMKIT_SKIP_RAY=1 (do not try to install ray).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=${PYTHON:-python3}
JOBS=${DMM_JOBS:-2}
say() { printf 'run_tests: %s\n' "$*"; }

if [ ! -x .venv/bin/python ]; then
    say "creating .venv"
    "$PY" -m venv .venv || { say "cannot create a venv (apt install python3-venv)"; exit 1; }
fi
PIPLOG=$(mktemp "${TMPDIR:-/tmp}/dmmkit-pip.XXXXXX")
trap 'rm -f "$PIPLOG"' EXIT
say "pip install -e ./python[test]"
.venv/bin/python -m pip install -q --disable-pip-version-check -e "./python[test]" >"$PIPLOG" 2>&1 || {
    cat "$PIPLOG"; say "pip install failed"; exit 1; }
if [ "${DMMKIT_SKIP_RAY:-0}" != 1 ] && ! .venv/bin/python -c 'import ray' 2>/dev/null; then
    say "pip install ray (optional; its test is skipped if this fails)"
    .venv/bin/python -m pip install -q --disable-pip-version-check "ray>=2.9" >"$PIPLOG" 2>&1 \
        || say "ray could not be installed for this Python: the Ray executor test will be skipped"
fi

need_build=0
for f in build/release/tools/dmm-replay build/release/tools/dmm-analyse build/release/tools/dmm-trace \
         build/release/lib/libdmmrec.so build/release/lib/libdmm.so build/release/bench/workloads/mt/mt-larson; do
    [ -e "$f" ] || need_build=1
done
# rebuild when a tool source is newer than dmm-replay (the front end relies on its options)
if [ "$need_build" = 0 ] && [ -n "$(find tools src -newer build/release/tools/dmm-replay -name '*.[ch]' 2>/dev/null | head -n 1)" ]; then
    need_build=1
fi
if [ "$need_build" = 1 ]; then
    say "building the native tools (release preset)"
    cmake --preset release >/dev/null && \
        cmake --build --preset release -j "$JOBS" --target dmm-replay dmm-analyse dmm-trace dmmrec \
            dmm_malloc_shared mt_programs >/dev/null || {
        say "native build failed"; exit 1; }
fi

cd python
"$ROOT/.venv/bin/python" -m pytest -q -p no:cacheprovider tests "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
    say "pytest collected no tests: failing"
    exit 1
fi
exit "$rc"

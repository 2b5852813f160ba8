# bench/malloc/pick_libdmm.sh - sourced by the scripts that run other
# projects' suites against libdmm (glibc_tests.sh, test_stress.sh): which
# libdmm.so they preload.
#
#   pick_libdmm NAME    sets LIBDMM (the library's absolute path) and IMPL
#                       (how the results file names it); NAME starts the
#                       error line.  Needs ROOT (the repository).
#
# $DMM_LIBDMM names another libdmm.so (e.g. one built from an older commit,
# for a before/after); by default the release build of this tree, built here.
pick_libdmm() {
    if [ -n "${DMM_LIBDMM:-}" ]; then
        LIBDMM=$(cd "$(dirname "$DMM_LIBDMM")" && pwd)/$(basename "$DMM_LIBDMM")
        IMPL="libdmm $LIBDMM (DMM_LIBDMM)"
    else
        cmake --preset release >/dev/null
        nice -n 10 cmake --build --preset release -j2 --target dmm_malloc_shared >/dev/null
        LIBDMM="$ROOT/build/release/lib/libdmm.so"
        IMPL="libdmm from build/release"
    fi
    [ -f "$LIBDMM" ] || { echo "$1: $LIBDMM was not built" >&2; exit 1; }
}

#!/usr/bin/env bash
# scripts/setup.sh - install what dmmkit needs on Debian 12 (bookworm), in two
# levels, and make the Python virtual environment .venv.
#
#   scripts/setup.sh             the main job (scripts/main.sh) and `dmmkit
#                                advise`: build tools, valgrind, the allocators
#                                compared, GNU time, python3-venv; then .venv
#                                with the front end (pip install -e ./python)
#   scripts/setup.sh --tests     also what only the tests need (scripts/test.sh):
#                                GoogleTest, clang/LLVM, cross compilers, qemu,
#                                sqlite3 and redis; .venv with the test extras
#   scripts/setup.sh --check [--tests]   only report; exit 1 if something is missing
#
# Idempotent: packages already installed are not touched, and when every
# package is present apt is not run at all.  Needs root (or sudo) only when
# something is missing.  When another process holds apt's or dpkg's locks
# (apt-get update's lists lock is not covered by DPkg::Lock::Timeout), apt
# is retried every 10 s (DMM_APT_RETRY_S), with a message, for up to
# DMM_APT_WAIT seconds (default 600).  Environment: PYTHON (default
# python3), DMM_SETUP_NO_VENV=1 (packages only).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

MAIN_PACKAGES=(
    # build
    build-essential cmake ninja-build pkg-config git
    # explore's instruction counts (callgrind)
    valgrind
    # allocators the main job and advise compare against
    libjemalloc2 libjemalloc-dev libmimalloc2.0 libmimalloc-dev
    libgoogle-perftools4 libtcmalloc-minimal4 libtbbmalloc2
    # Python front end
    python3 python3-venv
    # peak RSS of the real program (advise's end-to-end check, the study):
    # GNU time as the parent of each run
    time
)

TEST_PACKAGES=(
    # GoogleTest, clang + libFuzzer/sanitizer runtimes
    libgtest-dev googletest clang llvm libclang-rt-dev
    # Cortex-M4 cross build and size report
    gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi
    # AArch64 cross build, its tests under qemu-user (scripts/test.sh aarch64)
    gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
    # bare-metal demo (scripts/test.sh baremetal): the boards under
    # qemu-system-arm (mps2-an386) and qemu-system-riscv32 (virt, in -misc);
    # the RV32 compiler (its rv32imac/ilp32 libgcc; no C library used) also
    # serves the size report's rv32imac build (scripts/size_report.sh; its
    # overhead probe runs under qemu-user's qemu-riscv32, listed above)
    qemu-system-arm qemu-system-misc gcc-riscv64-unknown-elf
    # 32-bit builds and their unit tests (scripts/test.sh arm32 x86_32): ARM
    # under qemu-user (above), x86 through Debian's i686 cross compiler (not
    # gcc-multilib, which conflicts with the AArch64 cross compiler)
    gcc-arm-linux-gnueabihf g++-arm-linux-gnueabihf libc6-dev-armhf-cross
    gcc-i686-linux-gnu g++-i686-linux-gnu libc6-dev-i386-cross
    # the scratchpad heap's compiler pass (tools/spmcc, dmm-spmcc): libclang's Python bindings
    python3-clang-14
    # real programs under LD_PRELOAD (the recorder's tests, libdmm's preload
    # tests and the study: bench/workloads/real/real.sh); redis-server's
    # packaged service is never used, real.sh starts a private server
    sqlite3 redis-server redis-tools
)

check_only=0
tests=0
for a in "$@"; do
    case "$a" in
        --check) check_only=1 ;;
        --tests) tests=1 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup: unknown argument '$a' (see --help)" >&2; exit 2 ;;
    esac
done

say() { printf 'setup: %s\n' "$*"; }

PACKAGES=("${MAIN_PACKAGES[@]}")
[ "$tests" -eq 1 ] && PACKAGES+=("${TEST_PACKAGES[@]}")
LEVEL=$([ "$tests" -eq 1 ] && echo "main job + tests" || echo "main job")

installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

# apt_retry CMD...: runs an apt command; while it fails because another
# process holds one of apt's or dpkg's locks, says so and retries every 10 s
# (up to DMM_APT_WAIT seconds).  Its output is shown as it comes.
APT_WAIT=${DMM_APT_WAIT:-600}
APT_EVERY=${DMM_APT_RETRY_S:-10}
apt_retry() {
    local out rc waited=0
    out=$(mktemp "${TMPDIR:-/tmp}/dmm-setup-apt.XXXXXX")
    while :; do
        rc=0
        "$@" 2>&1 | tee "$out" || rc=${PIPESTATUS[0]}
        if [ "$rc" -eq 0 ]; then
            rm -f "$out"
            return 0
        fi
        if ! grep -qE 'Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock directory|is another process using it' "$out"; then
            rm -f "$out"
            return "$rc"
        fi
        if [ "$waited" -ge "$APT_WAIT" ]; then
            say "another process still holds apt's lock after ${waited} s; giving up (DMM_APT_WAIT raises the wait)"
            rm -f "$out"
            return "$rc"
        fi
        say "another process holds apt's lock ($(grep -m1 -oE '/var/[^ ]*lock[^ ]*' "$out" | tr -d "'\"" || echo "dpkg/lists")); retrying in ${APT_EVERY} s (waited ${waited} s of ${APT_WAIT})"
        sleep "$APT_EVERY"
        waited=$((waited + APT_EVERY))
    done
}

install_packages() {
    if ! command -v dpkg-query >/dev/null 2>&1; then
        say "this is not a Debian-like system (no dpkg); install by hand: ${PACKAGES[*]}"
        return 1
    fi
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        installed "$p" || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        say "all ${#PACKAGES[@]} packages ($LEVEL) already installed, nothing to do"
        return 0
    fi
    say "missing packages ($LEVEL): ${missing[*]}"
    if [ "$check_only" -eq 1 ]; then
        return 1
    fi
    local SUDO=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            SUDO=(sudo)
            say "not root: using sudo"
        else
            say "not root and no sudo: run as root, or install the packages above by hand"
            return 1
        fi
    fi
    local APT_OPTS=(-y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=60 --no-install-recommends)
    say "running: apt-get update"
    apt_retry "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=60 update
    say "running: apt-get install ${missing[*]}"
    if ! apt_retry "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${APT_OPTS[@]}" "${missing[@]}"; then
        say "apt-get install failed; retrying once in 10 s"
        sleep 10
        apt_retry "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${APT_OPTS[@]}" "${missing[@]}"
    fi
    local still=()
    for p in "${missing[@]}"; do
        installed "$p" || still+=("$p")
    done
    if [ ${#still[@]} -ne 0 ]; then
        say "still missing after apt-get: ${still[*]}"
        return 1
    fi
    say "installed ${#missing[@]} package(s); all ${#PACKAGES[@]} ($LEVEL) present"
}

make_venv() {
    local py=${PYTHON:-python3} extra=""
    [ "$tests" -eq 1 ] && extra="[test]"
    if [ ! -x "$ROOT/.venv/bin/python" ]; then
        say "creating .venv"
        "$py" -m venv "$ROOT/.venv" || { say "cannot create .venv (apt install python3-venv)"; return 1; }
    fi
    # the front end from this checkout (editable: the code here is what runs)
    if "$ROOT/.venv/bin/python" -c 'import dmmkit' 2>/dev/null && [ "$tests" -eq 0 ]; then
        say ".venv has the front end (dmmkit), nothing to do"
        return 0
    fi
    say "pip install -e ./python$extra into .venv"
    "$ROOT/.venv/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT/python$extra"
}

install_packages
if [ "$check_only" -eq 1 ]; then
    if [ ! -x "$ROOT/.venv/bin/python" ]; then
        say ".venv is missing"
        exit 1
    fi
    exit 0
fi
if [ "${DMM_SETUP_NO_VENV:-0}" != 1 ]; then
    make_venv
fi

#!/usr/bin/env bash
# scripts/setup.sh - install everything dmmkit needs on Debian 12 (bookworm).
#
# Idempotent: packages already installed are not touched, and when every
# package is present nothing is run through apt at all.  Needs root (or sudo)
# only when something is missing.
#
#   scripts/setup.sh            install what is missing
#   scripts/setup.sh --check    only report; exit 1 if something is missing
set -euo pipefail

PACKAGES=(
    # build
    build-essential cmake ninja-build pkg-config git
    # tests: GoogleTest, clang + libFuzzer/sanitizer runtimes, Valgrind
    libgtest-dev googletest clang llvm libclang-rt-dev valgrind
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
    # allocators the benchmarks compare against
    libjemalloc2 libjemalloc-dev libmimalloc2.0 libmimalloc-dev
    libgoogle-perftools4 libtcmalloc-minimal4 libtbbmalloc2
    # Python front end
    python3 python3-venv
    # the scratchpad heap's compiler pass (tools/spmcc, dmm-spmcc): libclang's Python bindings
    python3-clang-14
    # real programs under LD_PRELOAD (the recorder's tests, libdmm's preload
    # tests and the study: bench/workloads/real/real.sh); redis-server's
    # packaged service is never used, real.sh starts a private server
    sqlite3 redis-server redis-tools
    # the study's peak-RSS measurement (GNU time as the parent of each run,
    # so a run does not inherit the Python front end's resident set)
    time
)

check_only=0
case "${1:-}" in
    --check) check_only=1 ;;
    "") ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup: unknown argument '$1'" >&2; exit 2 ;;
esac

say() { printf 'setup: %s\n' "$*"; }

installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
    say "this is not a Debian-like system (no dpkg); install by hand: ${PACKAGES[*]}"
    exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
    installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    say "all ${#PACKAGES[@]} packages already installed, nothing to do"
    exit 0
fi

say "missing packages: ${missing[*]}"
if [ "$check_only" -eq 1 ]; then
    exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
        say "not root: using sudo"
    else
        say "not root and no sudo: run as root, or install the packages above by hand"
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=300 --no-install-recommends)

say "running: apt-get update"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 update

say "running: apt-get install ${missing[*]}"
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${APT_OPTS[@]}" "${missing[@]}"; then
    say "apt-get install failed; retrying once in 10 s"
    sleep 10
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${APT_OPTS[@]}" "${missing[@]}"
fi

still=()
for p in "${missing[@]}"; do
    installed "$p" || still+=("$p")
done
if [ ${#still[@]} -ne 0 ]; then
    say "still missing after apt-get: ${still[*]}"
    exit 1
fi
say "installed ${#missing[@]} package(s); all ${#PACKAGES[@]} present"

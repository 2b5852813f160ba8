#!/usr/bin/env bash
# scripts/size_report.sh - code size and per-block overhead of the dmmkit
# library on 32-bit bare-metal targets, per component and per heap preset,
# and proof that the library is freestanding.
#
# Targets: cortex-m4 (Debian's gcc-arm-none-eabi, -mcpu=cortex-m4 -mthumb,
# cmake/arm-none-eabi.cmake) and rv32imac (gcc-riscv64-unknown-elf,
# -march=rv32imac -mabi=ilp32, cmake/riscv32-elf.cmake).  For each target the
# static library libdmm_heap.a (src/core, src/heap, src/pool, src/multiheap,
# src/spm + the freestanding port) is built once runtime-configurable and once
# per frozen preset (configs/frozen/<preset>.h), all -Os -ffreestanding
# -ffunction-sections -fdata-sections, MinSizeRel, DMM_PORT=freestanding.
# Then, per build:
#   1. the archive's undefined symbols that no member defines must be
#      memcpy / memset / memmove or libgcc helpers, else it fails;
#   2. .text / .rodata / .data / .bss summed per component (the object files
#      of src/core, src/heap, src/pool, src/multiheap, src/spm, src/port);
#   3. link probes (-nostdlib -Wl,--gc-sections, only libgcc): the bytes an
#      empty image gains for heap init+malloc+free, for init+malloc+calloc+
#      realloc+free, for a pool (init, alloc, free), a multi-heap (init,
#      malloc, free; built-in spin locks, no threads) and a scratchpad heap
#      (static global memory, one core, a dummy DMA port given by the probe);
#   4. the per-block overhead, measured: a probe program (Linux system calls,
#      no C library) run under qemu-user (qemu-arm -cpu any runs the
#      Cortex-M4 Thumb-2 code; qemu-riscv32) allocates 64 blocks of each
#      request size on a fresh heap and divides the growth of the heap's
#      extent by 64; it also prints the library's own layout query
#      (dmm_heap_block_overhead) and a pool's layout.
# Prints markdown tables and writes embedded_size.{md,json} into a scratch
# directory (build/results by default), never into the source tree unless
# asked: --update writes the committed bench/results/embedded_size.{md,json}.
#
#   scripts/size_report.sh                     all targets and variants -> build/results
#   scripts/size_report.sh runtime p2012       some variants
#   scripts/size_report.sh mine=path/to/frozen.h   a variant frozen to any header
#   scripts/size_report.sh --out DIR ...       write DIR/embedded_size.{md,json}
#   scripts/size_report.sh --update            regenerate bench/results/embedded_size.*
# Environment: DMM_JOBS (default 2), DMM_SIZE_BUILD_DIR (default build/embedded),
#   DMM_SIZE_TARGETS (default "cortex-m4 rv32imac").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${DMM_SIZE_BUILD_DIR:-$ROOT/build/embedded}
OUT_DIR=$ROOT/build/results
ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --update) OUT_DIR=$ROOT/bench/results; shift ;;
        --out) OUT_DIR=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
        --out=*) OUT_DIR=$(mkdir -p "${1#--out=}" && cd "${1#--out=}" && pwd); shift ;;
        -*) echo "size_report.sh: unknown option '$1' (--update, --out DIR)" >&2; exit 2 ;;
        *) ARGS+=("$1"); shift ;;
    esac
done
set -- ${ARGS[@]+"${ARGS[@]}"}
# The exact command that regenerates the committed files.
CMD="scripts/size_report.sh --update${ARGS[*]:+ ${ARGS[*]}}"
[ -z "${DMM_SIZE_TARGETS:-}" ] || CMD="DMM_SIZE_TARGETS='$DMM_SIZE_TARGETS' $CMD"
JOBS=${DMM_JOBS:-2}
SECTION_FLAGS="-ffunction-sections -fdata-sections"
# lean/<preset>: configs/frozen/lean/<preset>.h, the preset with stats and
# hardening off (the smallest firmware builds; docs/heap.md).
ALL_VARIANTS=(runtime dlmalloc tlsf halffit firstfit p2012
              lean/dlmalloc lean/tlsf lean/halffit lean/firstfit lean/p2012)
read -r -a TARGETS <<<"${DMM_SIZE_TARGETS:-cortex-m4 rv32imac}"
COMPONENTS=(core heap pool multiheap spm port)
PROBES=(heap_min heap_full pool mh spm)
REQUESTS=(1 8 16 24 32 64 100)

# NAME=HEADER: a variant frozen to any header (e.g. `dmm-config header CONFIG`).
declare -A HEADER
if [ $# -gt 0 ]; then
    VARIANTS=()
    for v in "$@"; do
        if [[ $v == *=* ]]; then
            HEADER[${v%%=*}]=$(cd "$(dirname "${v#*=}")" && pwd)/$(basename "${v#*=}")
            v=${v%%=*}
        fi
        VARIANTS+=("$v")
    done
else
    VARIANTS=("${ALL_VARIANTS[@]}")
fi

say() { printf 'size: %s\n' "$*"; }
START=$(date +%s)
elapsed() { echo "$(( $(date +%s) - START ))s"; }

# Per target: tool prefix, CPU flags, toolchain file and its cache variables,
# extra link flags for the run probe, the emulator.
target_setup() {
    case "$1" in
        cortex-m4)
            TOOL=arm-none-eabi-
            CPU_FLAGS="-mcpu=cortex-m4 -mthumb"
            TOOLCHAIN=$ROOT/cmake/arm-none-eabi.cmake
            CMAKE_TARGET_ARGS=(-DDMM_ARM_CPU_FLAGS="$CPU_FLAGS" -DDMM_ARM_EXTRA_FLAGS="$SECTION_FLAGS")
            RUN_LDFLAGS=()
            EMU=(qemu-arm -cpu any) ;;
        rv32imac)
            TOOL=riscv64-unknown-elf-
            CPU_FLAGS="-march=rv32imac -mabi=ilp32"
            TOOLCHAIN=$ROOT/cmake/riscv32-elf.cmake
            CMAKE_TARGET_ARGS=(-DDMM_RISCV_ARCH_FLAGS="$CPU_FLAGS" -DDMM_RISCV_EXTRA_FLAGS="$SECTION_FLAGS")
            # The run probe has no start-up code to set gp: no gp relaxation.
            RUN_LDFLAGS=(-Wl,--no-relax)
            EMU=(qemu-riscv32) ;;
        *)  say "unknown target '$1' (cortex-m4, rv32imac)"; exit 1 ;;
    esac
}

for tg in "${TARGETS[@]}"; do
    target_setup "$tg"
    for t in gcc nm size; do
        if ! command -v "${TOOL}$t" >/dev/null 2>&1; then
            say "${TOOL}$t not found: run scripts/setup.sh --tests first"
            exit 1
        fi
    done
done

mkdir -p "$BUILD"

# ---- the probes -------------------------------------------------------------
PROBE="$BUILD/size_probe.c"
cat > "$PROBE" <<'EOF_PROBE'
/* Generated by scripts/size_report.sh.  One source, several probes picked by
 * -DPROBE_<name>; all are linked with -nostdlib and only libgcc.
 *   BASE       the empty image: entry, mem* loops, arena
 *   HEAP_MIN   + dmm_heap_init, malloc, free
 *   HEAP_FULL  + calloc, realloc
 *   POOL       + dmm_pool_init, alloc, free (no heap calls)
 *   MH         + dmm_mh_init, malloc, free (built-in spin locks, no threads)
 *   SPM        + a static-mode global memory and one core's scratchpad heap
 *                over a dummy DMA port (plain copies), malloc, p2s, free
 *   RUN        a program for qemu-user (Linux system calls, no C library)
 *              that measures the heap's per-block overhead and prints it. */
#include <stddef.h>
#include <stdint.h>
#include "dmm/heap.h"
#include "dmm/pool.h"
#include "dmm/multiheap.h"
#include "dmm/spm.h"

#ifdef PROBE_RUN
static unsigned char arena[32768] __attribute__((aligned(16)));
#else
static unsigned char arena[4096] __attribute__((aligned(16)));
#endif
volatile size_t dmm_size_probe_sink;

__attribute__((weak)) void *memcpy(void *d, const void *s, size_t n)
{ unsigned char *a = d; const unsigned char *b = s; while (n--) *a++ = *b++; return d; }
__attribute__((weak)) void *memmove(void *d, const void *s, size_t n)
{ unsigned char *a = d; const unsigned char *b = s;
  if (a < b) { while (n--) *a++ = *b++; } else { while (n--) a[n] = b[n]; } return d; }
__attribute__((weak)) void *memset(void *d, int c, size_t n)
{ unsigned char *a = d; while (n--) *a++ = (unsigned char)c; return d; }

#if defined(PROBE_SPM)
/* The dummy DMA port: global memory is addressable, transfers are copies. */
static void port_get(void *ctx, void *local, dmm_gaddr src, size_t n, unsigned tag)
{ (void)tag; memcpy(local, dmm_spm_global_host((dmm_spm_global *)ctx, src, n), n); }
static void port_put(void *ctx, dmm_gaddr dst, const void *local, size_t n, unsigned tag)
{ (void)tag; memcpy(dmm_spm_global_host((dmm_spm_global *)ctx, dst, n), local, n); }
static void port_wait(void *ctx, uint32_t mask) { (void)ctx; (void)mask; }
#endif

#ifndef PROBE_RUN
void dmm_size_probe(void)
{
#if defined(PROBE_BASE)
    void *volatile keep[3] = { (void *)memcpy, (void *)memmove, (void *)memset };
    arena[dmm_size_probe_sink] = 1;
    dmm_size_probe_sink = (size_t)keep[0] + (size_t)keep[1] + (size_t)keep[2];
#elif defined(PROBE_HEAP_MIN) || defined(PROBE_HEAP_FULL)
    dmm_heap *h;
    void *a;
    if (dmm_heap_init(&h, arena, sizeof arena, (const dmm_heap_config *)0) != DMM_OK)
        return;
    a = dmm_heap_malloc(h, dmm_size_probe_sink);
#if defined(PROBE_HEAP_FULL)
    a = dmm_heap_realloc(h, a, dmm_size_probe_sink + 24);
    dmm_heap_free(h, dmm_heap_calloc(h, 3, dmm_size_probe_sink));
#endif
    dmm_heap_free(h, a);
#elif defined(PROBE_POOL)
    dmm_pool *p;
    dmm_pool_config cfg = dmm_pool_default_config();
    cfg.block_size = 32;
    cfg.align = 8;
    if (dmm_pool_init(&p, arena, sizeof arena, &cfg) != DMM_OK)
        return;
    dmm_pool_free(p, dmm_pool_alloc(p));
#elif defined(PROBE_MH)
    dmm_mh *mh;
    dmm_mh_config cfg = dmm_mh_default_config(2);
    if (dmm_mh_init(&mh, arena, sizeof arena, &cfg) != DMM_OK)
        return;
    dmm_mh_free(mh, 1, dmm_mh_malloc(mh, 0, dmm_size_probe_sink));
#elif defined(PROBE_SPM)
    static unsigned char local[8192] __attribute__((aligned(16)));
    dmm_spm_global *g;
    dmm_spm *s;
    dmm_gaddr x;
    dmm_spm_global_config gc = dmm_spm_global_default_config();
    dmm_spm_config sc = dmm_spm_default_config();
    dmm_spm_port port = { 0 };
    gc.mode = DMM_SPM_STATIC;
    gc.manager_thread = false;
    if (dmm_spm_global_create(&g, arena, sizeof arena, &gc) != DMM_OK)
        return;
    port.ctx = g; port.get = port_get; port.put = port_put; port.wait = port_wait;
    port.align = 16; port.max_transfer = 4096;
    if (dmm_spm_create(&s, local, sizeof local, &sc, g, 0, &port) != DMM_OK)
        return;
    x = dmm_spm_malloc(s, dmm_size_probe_sink);
    dmm_size_probe_sink = (size_t)dmm_spm_p2s(s, x);
    dmm_spm_free(s, x);
#else
#error "no PROBE_ selected"
#endif
}
#else /* PROBE_RUN */
static long sys3(long n, long a, long b, long c)
{
#if defined(__arm__)
    register long r7 __asm__("r7") = n;
    register long r0 __asm__("r0") = a;
    register long r1 __asm__("r1") = b;
    register long r2 __asm__("r2") = c;
    __asm__ volatile("svc #0" : "+r"(r0) : "r"(r7), "r"(r1), "r"(r2) : "memory");
    return r0;
#elif defined(__riscv)
    register long a7 __asm__("a7") = n;
    register long a0 __asm__("a0") = a;
    register long a1 __asm__("a1") = b;
    register long a2 __asm__("a2") = c;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a7), "r"(a1), "r"(a2) : "memory");
    return a0;
#else
#error "PROBE_RUN: Arm or RISC-V only"
#endif
}
#if defined(__arm__)
enum { SYS_WRITE = 4, SYS_EXIT = 1 };
#else
enum { SYS_WRITE = 64, SYS_EXIT = 93 };
#endif
static char line[160];
static size_t line_len;
static void put_s(const char *s) { while (*s && line_len < sizeof line) line[line_len++] = *s++; }
static void put_u(size_t v)
{
    char b[24];
    int n = 0;
    do { b[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n && line_len < sizeof line) line[line_len++] = b[--n];
}
static void end_line(void)
{
    put_s("\n");
    sys3(SYS_WRITE, 1, (long)line, (long)line_len);
    line_len = 0;
}
static __attribute__((noreturn)) void quit(int code)
{
    for (;;) sys3(SYS_EXIT, code, 0, 0);
}

/* Bytes the heap consumes per block: n blocks of `request` bytes carved
 * from a fresh heap, divided into the growth of the heap's extent (the
 * bytes it has used of its region: blocks, headers, tails); without
 * statistics, the distance between neighbouring blocks. */
static int per_block(size_t request, size_t *consumed)
{
    enum { N = 64 };
    dmm_heap *h;
    dmm_heap_stats before, after;
    size_t i;
    if (dmm_heap_init(&h, arena, sizeof arena, (const dmm_heap_config *)0) != DMM_OK)
        return 0;
    unsigned char *p[N];
    before = dmm_heap_get_stats(h);
    for (i = 0; i < N; i++) {
        p[i] = (unsigned char *)dmm_heap_malloc(h, request);
        if (!p[i])
            return 0;
    }
    after = dmm_heap_get_stats(h);
    if (after.live_count == 0 && before.live_count == 0) {
        /* stats=off (the lean presets): a fresh heap carves its blocks one
         * after the other, so the distance between neighbours is what one
         * block consumes; every distance must agree */
        size_t d = (size_t)(p[1] - p[0]);
        for (i = 1; i < N; i++)
            if (p[i] <= p[i - 1] || (size_t)(p[i] - p[i - 1]) != d)
                return 0;
        *consumed = d;
        return 1;
    }
    if (after.live_count != before.live_count + N || after.extent <= before.extent ||
        (after.extent - before.extent) % N != 0)
        return 0;
    *consumed = (after.extent - before.extent) / N;
    return 1;
}

void _start(void)
{
    static const size_t req[] = { 1, 8, 16, 24, 32, 64, 100 };
    size_t i, c;
    dmm_heap *h;
    dmm_heap_config cfg;
    dmm_pool *p;
    dmm_pool_config pc = dmm_pool_default_config();
    dmm_pool_layout lay;

    put_s("ptr "); put_u(sizeof(void *)); end_line();
    if (dmm_heap_init(&h, arena, sizeof arena, (const dmm_heap_config *)0) != DMM_OK) {
        put_s("error heap_init"); end_line(); quit(2);
    }
    cfg = dmm_heap_get_config(h);
    put_s("layout_overhead "); put_u(dmm_heap_block_overhead(&cfg)); end_line();
    for (i = 0; i < sizeof req / sizeof req[0]; i++) {
        if (!per_block(req[i], &c)) {
            put_s("error per_block "); put_u(req[i]); end_line(); quit(3);
        }
        put_s("consumed "); put_u(req[i]); put_s(" "); put_u(c);
        put_s(" "); put_u(dmm_heap_block_size(&cfg, req[i])); end_line();
    }
    pc.block_size = 32;
    pc.align = 8;
    if (dmm_pool_init(&p, arena, sizeof arena, &pc) != DMM_OK) {
        put_s("error pool_init"); end_line(); quit(4);
    }
    lay = dmm_pool_get_layout(p);
    put_s("pool "); put_u(lay.blocks); put_s(" "); put_u(lay.block_size); put_s(" ");
    put_u(lay.stride); put_s(" "); put_u(lay.control_bytes); put_s(" "); put_u(lay.meta_bytes);
    end_line();
    quit(0);
}
#endif
EOF_PROBE

# Undefined symbols the library may leave to the C library / libgcc.
allowed_symbol() {
    case "$1" in
        memcpy|memset|memmove) return 0 ;;
        __aeabi_*) return 0 ;;  # Arm EABI run-time helpers (libgcc)
    esac
    # libgcc integer helpers: __udivsi3 __divdi3 __umoddi3 __clzsi2 __ctzdi2
    # __popcountsi2 __ffssi2 __paritysi2 __bswapsi2 __ashldi3 __lshrdi3 ...
    [[ "$1" =~ ^__(u?(div|mod|divmod)|mul|neg|ashl|ashr|lshr|u?cmp|clz|ctz|popcount|ffs|parity|bswap)[sdt]i[0-9]$ ]]
}

# text data bss of an image (size -B: .text includes .rodata)
image_size() { "${TOOL}size" -B "$1" | awk 'NR==2 {print $1, $2, $3}'; }

# Keys are "<target>:<variant>" (and ":<component>" / ":<probe>").
declare -A R_CONFIG SEC PRB OVH RUNINFO
failed=0
ok_keys=()
declare -A GCC_VERSION

for tg in "${TARGETS[@]}"; do
    target_setup "$tg"
    GCC_VERSION[$tg]=$("${TOOL}gcc" -dumpfullversion 2>/dev/null || "${TOOL}gcc" -dumpversion)
    tdir="$BUILD/$tg"
    mkdir -p "$tdir"
    PROBE_CFLAGS=(-Os $CPU_FLAGS -ffreestanding $SECTION_FLAGS -fno-tree-loop-distribute-patterns
                  -std=c11 -Wall -Wextra -I"$ROOT/include")
    PROBE_LDFLAGS=($CPU_FLAGS -nostdlib -nostartfiles -Wl,--gc-sections -Wl,-e,dmm_size_probe
                   -Wl,--no-warn-rwx-segments)
    say "[$(elapsed)] $tg: compiling the probes (${TOOL}gcc ${GCC_VERSION[$tg]})"
    for p in base "${PROBES[@]}" run; do
        P=$(tr '[:lower:]' '[:upper:]' <<<"$p")
        "${TOOL}gcc" "${PROBE_CFLAGS[@]}" -DPROBE_$P -c "$PROBE" -o "$tdir/probe_$p.o"
    done
    "${TOOL}gcc" "${PROBE_LDFLAGS[@]}" "$tdir/probe_base.o" -lgcc -o "$tdir/probe_base.elf"
    read -r BASE_TEXT BASE_DATA BASE_BSS < <(image_size "$tdir/probe_base.elf")

    for v in "${VARIANTS[@]}"; do
        k="$tg:$v"
        if [ "$v" = runtime ]; then
            frozen=""
            R_CONFIG[$v]="runtime (config struct)"
        elif [ -n "${HEADER[$v]:-}" ]; then
            frozen=${HEADER[$v]}
            R_CONFIG[$v]=$frozen
        else
            frozen="$ROOT/configs/frozen/$v.h"
            R_CONFIG[$v]="configs/frozen/$v.h"
            if [ ! -f "$frozen" ]; then
                say "FAIL $k: $frozen does not exist"
                failed=1
                continue
            fi
        fi
        dir="$tdir/$v"
        log="$tdir/$v.log"
        mkdir -p "$(dirname "$log")"
        say "[$(elapsed)] $tg: building $v -> $dir"
        if ! { cmake -S "$ROOT" -B "$dir" -G Ninja \
                  -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
                  -DCMAKE_BUILD_TYPE=MinSizeRel \
                  "${CMAKE_TARGET_ARGS[@]}" \
                  -DDMM_PORT=freestanding \
                  -DDMM_FROZEN_CONFIG="$frozen" \
                  -DDMM_ANNOTATE=OFF \
                  -DDMM_BUILD_TESTS=OFF -DDMM_BUILD_BENCH=OFF -DDMM_BUILD_SHARED=OFF \
               && cmake --build "$dir" --target dmm_heap -j "$JOBS"; } >"$log" 2>&1; then
            say "FAIL $k: build failed; log $log:"
            tail -n 40 "$log" | sed 's/^/    /'
            failed=1
            continue
        fi
        # The flags really used (guards against a toolchain-file mix-up).
        for f in $CPU_FLAGS -ffreestanding $SECTION_FLAGS -Os; do
            if ! grep -q -e " $f " -e " $f\$" "$dir/build.ninja"; then
                say "FAIL $k: $f is missing from the compile flags (see $dir/build.ninja)"
                failed=1
                continue 2
            fi
        done
        lib="$dir/lib/libdmm_heap.a"
        if [ ! -f "$lib" ]; then
            say "FAIL $k: $lib was not produced"
            failed=1
            continue
        fi

        # 1. undefined symbols not defined inside the archive
        defined=$("${TOOL}nm" -P -g --defined-only "$lib" 2>/dev/null | awk 'NF >= 2 && $1 !~ /:$/ {print $1}' | sort -u)
        undefined=$("${TOOL}nm" -P -g -u "$lib" 2>/dev/null | awk 'NF >= 2 && $1 !~ /:$/ {print $1 " " $2}' | sort -u)
        bad=()
        weak=()
        while read -r sym type; do
            [ -n "$sym" ] || continue
            if grep -qxF "$sym" <<<"$defined"; then continue; fi
            if allowed_symbol "$sym"; then continue; fi
            if [ "$type" = w ] || [ "$type" = v ]; then weak+=("$sym"); continue; fi
            bad+=("$sym")
        done <<<"$undefined"
        if [ ${#weak[@]} -gt 0 ]; then
            say "note $k: weak undefined symbols (resolve to 0 if absent): ${weak[*]}"
        fi
        if [ ${#bad[@]} -gt 0 ]; then
            say "FAIL $k: the freestanding library needs symbols it does not define: ${bad[*]}"
            for s in "${bad[@]}"; do
                "${TOOL}nm" -A -u "$lib" 2>/dev/null | awk -v s="$s" '$NF == s {print "      used by " $1}' | sed 's/:$//'
            done
            failed=1
            continue
        fi

        # 2. section sizes per component, from the object files (the archive
        # has two members called config.c.obj: heap's and pool's).  They are
        # compiled in the library's object groups (cmake/DmmLibrary.cmake:
        # dmm_objs_{heap,pool,base}_<hash>; this build has one library).
        objdirs=()
        for o in "$dir"/CMakeFiles/dmm_objs_*.dir/src; do
            [ -d "$o" ] && objdirs+=("$o")
        done
        for c in "${COMPONENTS[@]}"; do
            objs=()
            for o in "${objdirs[@]}"; do
                if [ -d "$o/$c" ]; then
                    mapfile -t -O "${#objs[@]}" objs < <(find "$o/$c" -name '*.obj' -o -name '*.o' | sort)
                fi
            done
            if [ "$c" != port ] && [ ${#objs[@]} -eq 0 ]; then
                say "FAIL $k: no object files for src/$c in $dir/CMakeFiles/dmm_objs_*.dir/src"
                failed=1
                continue 2
            fi
            if [ ${#objs[@]} -eq 0 ]; then SEC[$k:$c]="0 0 0 0"; continue; fi
            SEC[$k:$c]=$("${TOOL}size" -A "${objs[@]}" | awk '
                $1 ~ /^\.text/   { t += $2 }
                $1 ~ /^\.rodata/ || $1 ~ /^\.srodata/ { r += $2 }
                $1 ~ /^\.data/   || $1 ~ /^\.sdata/   { d += $2 }
                $1 ~ /^\.bss/    || $1 ~ /^\.sbss/    { b += $2 }
                END { print t + 0, r + 0, d + 0, b + 0 }')
        done

        # 3. linked probes (fail if anything outside libgcc is still missing)
        for p in "${PROBES[@]}"; do
            if ! "${TOOL}gcc" "${PROBE_LDFLAGS[@]}" "$tdir/probe_$p.o" "$lib" -lgcc \
                    -o "$dir/probe_$p.elf" >"$dir/probe_$p.log" 2>&1; then
                say "FAIL $k: the $p probe does not link without a C library:"
                sed 's/^/    /' "$dir/probe_$p.log" | tail -n 20
                failed=1
                continue 2
            fi
            read -r lt ld lb < <(image_size "$dir/probe_$p.elf")
            PRB[$k:$p]="$((lt - BASE_TEXT)) $((ld - BASE_DATA)) $((lb - BASE_BSS))"
        done

        # 4. per-block overhead, run under qemu-user
        if ! "${TOOL}gcc" $CPU_FLAGS -nostdlib -nostartfiles -Wl,--gc-sections -Wl,--no-warn-rwx-segments \
                "${RUN_LDFLAGS[@]}" "$tdir/probe_run.o" "$lib" -lgcc -o "$dir/probe_run.elf" \
                >"$dir/probe_run.log" 2>&1; then
            say "FAIL $k: the overhead probe does not link:"
            sed 's/^/    /' "$dir/probe_run.log" | tail -n 20
            failed=1
            continue
        fi
        if ! command -v "${EMU[0]}" >/dev/null 2>&1; then
            say "FAIL $k: ${EMU[0]} not found (qemu-user; run scripts/setup.sh --tests)"
            failed=1
            continue
        fi
        if ! out=$(timeout 60 "${EMU[@]}" "$dir/probe_run.elf" 2>&1); then
            say "FAIL $k: the overhead probe failed under ${EMU[*]}:"
            sed 's/^/    /' <<<"$out" | tail -n 20
            failed=1
            continue
        fi
        ptr=$(awk '$1 == "ptr" {print $2}' <<<"$out")
        if [ "$ptr" != 4 ]; then
            say "FAIL $k: the overhead probe says sizeof(void *) is '$ptr', not 4"
            failed=1
            continue
        fi
        OVH[$k:layout]=$(awk '$1 == "layout_overhead" {print $2}' <<<"$out")
        bad_probe=0
        for r in "${REQUESTS[@]}"; do
            read -r consumed predicted < <(awk -v r="$r" '$1 == "consumed" && $2 == r {print $3, $4}' <<<"$out")
            if [ -z "${consumed:-}" ]; then bad_probe=1; break; fi
            OVH[$k:$r]=$consumed
            # The library's own prediction must match what the heap did.
            if [ "$consumed" != "$predicted" ]; then
                say "note $k: a $r B request consumed $consumed B, dmm_heap_block_size says $predicted"
            fi
        done
        if [ "$bad_probe" -ne 0 ]; then
            say "FAIL $k: the overhead probe's output is incomplete:"
            sed 's/^/    /' <<<"$out"
            failed=1
            continue
        fi
        RUNINFO[$k:pool]=$(awk '$1 == "pool" {print $2, $3, $4, $5, $6}' <<<"$out")
        ok_keys+=("$k")
        say "ok $k: heap $(cut -d' ' -f1 <<<"${SEC[$k:heap]}") B .text; init+malloc+free $(cut -d' ' -f1 <<<"${PRB[$k:heap_min]}") B; per-block consumption at N=1,8,16,24,32,64,100: $(for r in "${REQUESTS[@]}"; do printf '%s ' "${OVH[$k:$r]}"; done)B"
    done
done

# ---- report -------------------------------------------------------------------
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit-dirty"
fi
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
compilers=$(for tg in "${TARGETS[@]}"; do target_setup "$tg"; printf '%s, ' "${TOOL}gcc ${GCC_VERSION[$tg]:-?}"; done)
PROV_ARGS=(--command "$CMD" --compiler "${compilers%, }"
           --flags="-Os -ffreestanding $SECTION_FLAGS + per-target CPU flags (cortex-m4: -mcpu=cortex-m4 -mthumb; rv32imac: -march=rv32imac -mabi=ilp32)")
PROV_MD=$(python3 "$ROOT/scripts/provenance.py" --md "${PROV_ARGS[@]}")
PROV_JSON=$(python3 "$ROOT/scripts/provenance.py" --json "${PROV_ARGS[@]}")

# min over the requests of (bytes consumed - N): the header alone, where N
# plus the header needs no rounding to the heap's alignment.
least_overhead() {
    local k=$1 r m=""
    for r in "${REQUESTS[@]}"; do
        if [ -z "$m" ] || [ $((OVH[$k:$r] - r)) -lt "$m" ]; then m=$((OVH[$k:$r] - r)); fi
    done
    echo "$m"
}
first() { cut -d' ' -f"${2:-1}" <<<"$1"; }
# Issue 25's Cortex-M4 goals: heap init+malloc+free (-Os) of a variant at or
# below an anchor's figure.  "variant limit anchor".
GOALS=("lean/firstfit 588 FreeRTOS heap_4" "lean/halffit 826 o1heap 2.2" "lean/tlsf 1951 TLSF 3.1"
       "tlsf 2500 the checked tlsf budget")
# goal_rows TARGET: one line per goal, "variant limit measured|- met|missed|unmeasured margin anchor"
goal_rows() {
    local g v lim anchor got
    for g in "${GOALS[@]}"; do
        read -r v lim anchor <<<"$g"
        got=${PRB[$1:$v:heap_min]:-}
        if [ -z "$got" ]; then
            echo "$v $lim - unmeasured 0 $anchor"
        else
            got=$(first "$got")
            if [ "$got" -le "$lim" ]; then echo "$v $lim $got met $((lim - got)) $anchor"
            else echo "$v $lim $got missed $((got - lim)) $anchor"; fi
        fi
    done
}
sum_sections() { awk '{print $1 + $2}' <<<"$1"; }

tables=$(
    for tg in "${TARGETS[@]}"; do
        target_setup "$tg"
        keys=()
        for k in "${ok_keys[@]}"; do [[ $k == "$tg:"* ]] && keys+=("$k"); done
        [ ${#keys[@]} -gt 0 ] || continue
        echo "### $tg ($("${TOOL}gcc" -dumpmachine) gcc ${GCC_VERSION[$tg]}, \`-Os $CPU_FLAGS -ffreestanding $SECTION_FLAGS\`)"
        echo
        echo "Linked path: bytes (.text+.rodata) an empty image gains."
        echo
        echo "| variant | heap init+malloc+free | + calloc+realloc | pool init+alloc+free | multi-heap init+malloc+free | spm create+malloc+p2s+free |"
        echo "|---|---:|---:|---:|---:|---:|"
        for k in "${keys[@]}"; do
            echo "| ${k#*:} | $(first "${PRB[$k:heap_min]}") | $(first "${PRB[$k:heap_full]}") | $(first "${PRB[$k:pool]}") | $(first "${PRB[$k:mh]}") | $(first "${PRB[$k:spm]}") |"
        done
        echo
        echo "Per component, whole library (.text/.rodata/.data/.bss):"
        echo
        echo "| variant | core | heap | pool | multiheap | spm | port | total .text+.rodata |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|"
        for k in "${keys[@]}"; do
            row="| ${k#*:} |"
            tot=0
            for c in "${COMPONENTS[@]}"; do
                read -r t r d b <<<"${SEC[$k:$c]}"
                row="$row $t/$r/$d/$b |"
                tot=$((tot + t + r))
            done
            echo "$row $tot |"
        done
        echo
        echo "Per-block overhead, measured under ${EMU[*]} (bytes a block consumes for a request of N bytes; 64 blocks on a fresh heap):"
        echo
        echo "| variant | layout query (header) | $(for r in "${REQUESTS[@]}"; do printf 'N=%s | ' "$r"; done)least overhead |"
        echo "|---|---:|$(for r in "${REQUESTS[@]}"; do printf -- '---:|'; done)---:|"
        for k in "${keys[@]}"; do
            echo "| ${k#*:} | ${OVH[$k:layout]} | $(for r in "${REQUESTS[@]}"; do printf '%s | ' "${OVH[$k:$r]}"; done)$(least_overhead "$k") |"
        done
        k=${keys[0]}
        read -r pb pbs pst pctl pmeta <<<"${RUNINFO[$k:pool]}"
        echo
        echo "Pool (block 32, align 8, default hardening checked) on a 32 KiB buffer: $pb blocks, stride $pst, control block $pctl B, free list + bitmap $pmeta B = $(awk -v m="$pmeta" -v n="$pb" 'BEGIN {printf "%.2f", m / n}') B per block outside the blocks."
        echo
        if [ "$tg" = cortex-m4 ]; then
            echo "Issue 25's Cortex-M4 goals (heap init+malloc+free, the first column of the linked-path table):"
            echo
            echo "| goal variant | limit (B) | measured (B) | verdict |"
            echo "|---|---:|---:|---|"
            while read -r v lim got verdict by anchor; do
                case $verdict in
                    met) what="met ($by B to spare)" ;;
                    missed) what="missed by $by B ($(awk -v a="$got" -v b="$lim" 'BEGIN {printf "%.2f", a / b}')x the limit)" ;;
                    *) what="not built in this run" ;;
                esac
                echo "| $v (limit: $anchor) | $lim | $got | $what |"
            done < <(goal_rows "$tg")
            echo
        fi
    done
)

echo
echo "$tables"

if [ "$failed" -ne 0 ]; then
    say "[$(elapsed)] FAILED (results files not written)"
    exit 1
fi

mkdir -p "$OUT_DIR"
{
    echo "# Embedded code size and per-block overhead"
    echo
    echo "$PROV_MD"
    echo
    echo "Sizes are exact and deterministic for a given compiler (scripts/check_results.py compares them); docs/embedded-size.md explains the columns."
    echo "CMake build type MinSizeRel, DMM_PORT=freestanding; sizes in bytes; per-target compiler and flags in each heading."
    echo
    echo "$tables"
} > "$OUT_DIR/embedded_size.md"

{
    echo "{"
    echo "  \"schema\": \"dmmkit.size_report/2\","
    echo "  \"provenance\": $PROV_JSON,"
    echo "  \"context\": {\"date\": \"$date_utc\", \"commit\": \"$commit\", \"build_type\": \"MinSizeRel\","
    echo "              \"port\": \"freestanding\", \"units\": \"bytes\", \"per_block_requests\": [$(IFS=,; echo "${REQUESTS[*]}")]},"
    if [[ " ${TARGETS[*]} " == *" cortex-m4 "* ]]; then
        gl=""
        while read -r v lim got verdict by anchor; do
            [ "$got" = - ] && got=null
            gl="$gl${gl:+, }{\"variant\": \"$v\", \"anchor\": \"$anchor\", \"limit\": $lim, \"measured\": $got, \"verdict\": \"$verdict\", \"margin\": $by}"
        done < <(goal_rows cortex-m4)
        echo "  \"goals_cortex_m4_init_malloc_free\": [$gl],"
    fi
    echo "  \"variants\": ["
    n=${#ok_keys[@]}
    i=0
    for k in "${ok_keys[@]}"; do
        i=$((i + 1))
        tg=${k%%:*}; v=${k#*:}
        target_setup "$tg"
        if [ "$v" = runtime ]; then cfg=null; else cfg="\"${R_CONFIG[$v]}\""; fi
        sep=","; [ "$i" -eq "$n" ] && sep=""
        at=0; ar=0; ad=0; ab=0
        comps=""
        for c in "${COMPONENTS[@]}"; do
            read -r t r d b <<<"${SEC[$k:$c]}"
            at=$((at + t)); ar=$((ar + r)); ad=$((ad + d)); ab=$((ab + b))
            comps="$comps${comps:+, }\"$c\": {\"text\": $t, \"rodata\": $r, \"data\": $d, \"bss\": $b}"
        done
        probes=""
        for p in "${PROBES[@]}"; do
            read -r lt ld lb <<<"${PRB[$k:$p]}"
            probes="$probes${probes:+, }\"$p\": {\"text\": $lt, \"data\": $ld, \"bss\": $lb}"
        done
        consumed=$(for r in "${REQUESTS[@]}"; do printf '%s,' "${OVH[$k:$r]}"; done)
        read -r pb pbs pst pctl pmeta <<<"${RUNINFO[$k:pool]}"
        echo "    {\"name\": \"$v\", \"target\": \"$tg\", \"compiler\": \"${TOOL}gcc ${GCC_VERSION[$tg]}\","
        echo "     \"flags\": \"-Os $CPU_FLAGS -ffreestanding $SECTION_FLAGS\", \"frozen_config\": $cfg,"
        echo "     \"archive\": {\"text\": $at, \"rodata\": $ar, \"data\": $ad, \"bss\": $ab},"
        echo "     \"components\": {$comps},"
        echo "     \"linked_malloc_free_path\": {\"text\": $(first "${PRB[$k:heap_full]}"), \"data\": $(first "${PRB[$k:heap_full]}" 2), \"bss\": $(first "${PRB[$k:heap_full]}" 3)},"
        echo "     \"probes\": {$probes},"
        echo "     \"per_block\": {\"layout_overhead\": ${OVH[$k:layout]}, \"consumed\": [${consumed%,}], \"least_overhead\": $(least_overhead "$k"),"
        echo "                   \"pool_32_align8\": {\"blocks\": $pb, \"stride\": $pst, \"control\": $pctl, \"meta\": $pmeta}}}$sep"
    done
    echo "  ]"
    echo "}"
} > "$OUT_DIR/embedded_size.json"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$OUT_DIR/embedded_size.json" 2>/dev/null \
    || { command -v python3 >/dev/null && { say "FAIL: embedded_size.json is not valid JSON"; exit 1; }; }
say "[$(elapsed)] wrote $OUT_DIR/embedded_size.md and $OUT_DIR/embedded_size.json"

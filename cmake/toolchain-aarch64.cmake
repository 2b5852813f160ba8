# cmake/toolchain-aarch64.cmake - cross-compile dmmkit for AArch64 Linux with
# Debian's cross toolchain (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu,
# libc6-dev-arm64-cross) and run the results under qemu-user:
#
#   cmake -S . -B build/aarch64 -G Ninja \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake -DDMM_BUILD_TESTS=ON
#   ctest --test-dir build/aarch64 -L unit
#
# (scripts/test.sh aarch64 does exactly that.)  The port stays posix: the
# system name is Linux.  CTest and gtest_discover_tests run every target
# program through CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(DMM_CROSS_PREFIX "aarch64-linux-gnu-" CACHE STRING "Cross tool prefix")
set(DMM_CROSS_SYSROOT "/usr/aarch64-linux-gnu" CACHE PATH "Target libraries (qemu -L)")
set(DMM_CROSS_QEMU qemu-aarch64)
include("${CMAKE_CURRENT_LIST_DIR}/cross-linux.cmake")

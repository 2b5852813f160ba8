# cmake/toolchain-armhf.cmake - cross-compile dmmkit for 32-bit ARM Linux
# (ARMv7, hard float) with Debian's cross toolchain (gcc-arm-linux-gnueabihf,
# g++-arm-linux-gnueabihf, libc6-dev-armhf-cross) and run the results under
# qemu-user:
#
#   cmake -S . -B build/arm32 -G Ninja \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake -DDMM_BUILD_TESTS=ON
#   ctest --test-dir build/arm32 -L unit
#
# (scripts/test.sh arm32 does that.)  Pointers and size_t are 32 bits wide,
# and the ABI aligns 8-byte types to 8: the build catches code that assumes
# a 64-bit word.  The port stays posix (system name Linux); CTest and
# gtest_discover_tests run every target program through
# CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_PROCESSOR arm)
set(DMM_CROSS_PREFIX "arm-linux-gnueabihf-" CACHE STRING "Cross tool prefix")
set(DMM_CROSS_SYSROOT "/usr/arm-linux-gnueabihf" CACHE PATH "Target libraries (qemu -L)")
set(DMM_CROSS_QEMU qemu-arm)
include("${CMAKE_CURRENT_LIST_DIR}/cross-linux.cmake")

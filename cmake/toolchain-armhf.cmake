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
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(DMM_CROSS_PREFIX "arm-linux-gnueabihf-" CACHE STRING "Cross tool prefix")
set(CMAKE_C_COMPILER "${DMM_CROSS_PREFIX}gcc")
set(CMAKE_CXX_COMPILER "${DMM_CROSS_PREFIX}g++")

set(DMM_CROSS_SYSROOT "/usr/arm-linux-gnueabihf" CACHE PATH "Target libraries (qemu -L)")
find_program(DMM_QEMU_ARM qemu-arm)
if(DMM_QEMU_ARM)
    set(CMAKE_CROSSCOMPILING_EMULATOR "${DMM_QEMU_ARM};-L;${DMM_CROSS_SYSROOT}")
endif()

# Libraries and headers of the target only; programs of the host.
set(CMAKE_FIND_ROOT_PATH "${DMM_CROSS_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# cmake/toolchain-i686.cmake - build dmmkit for 32-bit x86 Linux with
# Debian's cross toolchain (gcc-i686-linux-gnu, g++-i686-linux-gnu,
# libc6-dev-i386-cross) instead of gcc -m32: Debian's gcc-multilib, which -m32
# needs, conflicts with the AArch64 cross compiler.
#
#   cmake -S . -B build/x86_32 -G Ninja \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-i686.cmake -DDMM_BUILD_TESTS=ON
#   ctest --test-dir build/x86_32 -L unit
#
# (scripts/test.sh x86_32 does that.)  Pointers and size_t are 32 bits wide
# and the i386 ABI aligns 8-byte types to only 4 inside structs, so the
# build catches both 64-bit-word and alignment assumptions.
#
# An x86-64 kernel runs i386 programs itself; only the loader and libraries
# live in the cross sysroot.  The programs are therefore linked with that
# sysroot's loader as their interpreter and its libraries on their run path,
# and run natively, no emulator (so death tests that re-execute the program,
# and tests that run a tool from a CMake script, work too).  On a host whose
# kernel lacks 32-bit support, set DMM_I686_QEMU=ON to run them under
# qemu-i386 instead.
set(CMAKE_SYSTEM_PROCESSOR i686)
set(DMM_CROSS_PREFIX "i686-linux-gnu-" CACHE STRING "Cross tool prefix")
set(DMM_CROSS_SYSROOT "/usr/i686-linux-gnu" CACHE PATH "Target libraries")
set(CMAKE_EXE_LINKER_FLAGS_INIT
    "-Wl,--dynamic-linker=${DMM_CROSS_SYSROOT}/lib/ld-linux.so.2 -Wl,-rpath,${DMM_CROSS_SYSROOT}/lib")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath,${DMM_CROSS_SYSROOT}/lib")
option(DMM_I686_QEMU "Run the i686 programs under qemu-i386 instead of natively" OFF)
if(DMM_I686_QEMU)
    set(DMM_CROSS_QEMU qemu-i386)
endif()
include("${CMAKE_CURRENT_LIST_DIR}/cross-linux.cmake")

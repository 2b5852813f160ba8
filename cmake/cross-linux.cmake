# cmake/cross-linux.cmake - what the Linux cross toolchain files share
# (toolchain-aarch64.cmake, toolchain-armhf.cmake, toolchain-i686.cmake
# include it after setting DMM_CROSS_PREFIX, DMM_CROSS_SYSROOT and, when the
# programs run under qemu-user, DMM_CROSS_QEMU: the emulator's name).
# Debian's cross compilers, the target's libraries and headers only from
# the sysroot, the host's programs; CTest and gtest_discover_tests run every
# target program through CMAKE_CROSSCOMPILING_EMULATOR when one is set.
set(CMAKE_SYSTEM_NAME Linux)

set(CMAKE_C_COMPILER "${DMM_CROSS_PREFIX}gcc")
set(CMAKE_CXX_COMPILER "${DMM_CROSS_PREFIX}g++")

if(DMM_CROSS_QEMU)
    find_program(DMM_CROSS_QEMU_PATH "${DMM_CROSS_QEMU}")
    if(DMM_CROSS_QEMU_PATH)
        set(CMAKE_CROSSCOMPILING_EMULATOR "${DMM_CROSS_QEMU_PATH};-L;${DMM_CROSS_SYSROOT}")
    endif()
endif()

set(CMAKE_FIND_ROOT_PATH "${DMM_CROSS_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

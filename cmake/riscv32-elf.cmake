# Toolchain file: bare-metal 32-bit RISC-V (rv32imac, ilp32) with Debian's
# gcc-riscv64-unknown-elf (a multilib compiler: -march/-mabi pick the 32-bit
# code generator and the rv32imac/ilp32 libgcc).
#
#   cmake -S . -B build/rv32 -G Ninja \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/riscv32-elf.cmake \
#         -DCMAKE_BUILD_TYPE=MinSizeRel
#
# The port defaults to DMM_PORT=freestanding for this (Generic) system; tests,
# benchmarks and the shared library are off.  Override the ISA with
# -DDMM_RISCV_ARCH_FLAGS="-march=rv32imc -mabi=ilp32", add flags with
# -DDMM_RISCV_EXTRA_FLAGS="-ffunction-sections -fdata-sections" and change
# the tool prefix with -DDMM_RISCV_PREFIX=/opt/riscv/bin/riscv32-unknown-elf-.
# Without gcc-riscv64-unknown-elf, riscv64-linux-gnu-gcc also compiles
# rv32imac/ilp32 code (-DDMM_RISCV_PREFIX=riscv64-linux-gnu-), but it has no
# 32-bit libgcc to link firmware with.
# The ISA flags go into CMAKE_C_FLAGS_INIT, which CMake ignores when
# CMAKE_C_FLAGS is given on the command line: pass them there too then.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)

set(DMM_RISCV_PREFIX "riscv64-unknown-elf-" CACHE STRING "Prefix of the RISC-V bare-metal tools")
set(DMM_RISCV_ARCH_FLAGS "-march=rv32imac -mabi=ilp32" CACHE STRING "Target ISA and ABI flags")
set(DMM_RISCV_EXTRA_FLAGS "" CACHE STRING "More flags for every compilation")

set(CMAKE_C_COMPILER "${DMM_RISCV_PREFIX}gcc")
set(CMAKE_CXX_COMPILER "${DMM_RISCV_PREFIX}g++")
set(CMAKE_ASM_COMPILER "${DMM_RISCV_PREFIX}gcc")
set(CMAKE_AR "${DMM_RISCV_PREFIX}ar" CACHE FILEPATH "Archiver")
set(CMAKE_RANLIB "${DMM_RISCV_PREFIX}ranlib" CACHE FILEPATH "Ranlib")
set(CMAKE_OBJCOPY "${DMM_RISCV_PREFIX}objcopy" CACHE FILEPATH "objcopy")
set(CMAKE_SIZE "${DMM_RISCV_PREFIX}size" CACHE FILEPATH "size")
set(CMAKE_NM "${DMM_RISCV_PREFIX}nm" CACHE FILEPATH "nm")

# No OS to link a test program for: compiler checks build a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CMAKE_C_FLAGS_INIT "${DMM_RISCV_ARCH_FLAGS} ${DMM_RISCV_EXTRA_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${DMM_RISCV_ARCH_FLAGS} ${DMM_RISCV_EXTRA_FLAGS}")
set(CMAKE_ASM_FLAGS_INIT "${DMM_RISCV_ARCH_FLAGS}")

# Look for libraries and headers only in the target environment.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# embedded/riscv/riscv32-none-elf.cmake - toolchain file for bare-metal
# RV32IMAC (ilp32) with Debian's gcc-riscv64-unknown-elf (multilib: the
# rv32imac/ilp32 libgcc comes with it).  Used by the bare-metal demo
# (embedded/CMakeLists.txt); override the ISA with -DDMM_RISCV_FLAGS=...
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)

set(DMM_RISCV_PREFIX "riscv64-unknown-elf-" CACHE STRING "Prefix of the RISC-V bare-metal tools")
set(DMM_RISCV_FLAGS "-march=rv32imac -mabi=ilp32 -mcmodel=medany" CACHE STRING "Target flags")

set(CMAKE_C_COMPILER "${DMM_RISCV_PREFIX}gcc")
set(CMAKE_ASM_COMPILER "${DMM_RISCV_PREFIX}gcc")
set(CMAKE_AR "${DMM_RISCV_PREFIX}ar" CACHE FILEPATH "Archiver")
set(CMAKE_RANLIB "${DMM_RISCV_PREFIX}ranlib" CACHE FILEPATH "Ranlib")
set(CMAKE_OBJCOPY "${DMM_RISCV_PREFIX}objcopy" CACHE FILEPATH "objcopy")
set(CMAKE_SIZE "${DMM_RISCV_PREFIX}size" CACHE FILEPATH "size")
set(CMAKE_NM "${DMM_RISCV_PREFIX}nm" CACHE FILEPATH "nm")

set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_C_FLAGS_INIT "${DMM_RISCV_FLAGS}")
set(CMAKE_ASM_FLAGS_INIT "${DMM_RISCV_FLAGS}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${DMM_RISCV_FLAGS}")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

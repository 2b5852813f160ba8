# Toolchain file: bare-metal Arm Cortex-M4 with Debian's gcc-arm-none-eabi.
#
#   cmake -S . -B build/cm4 -G Ninja \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/arm-none-eabi.cmake \
#         -DCMAKE_BUILD_TYPE=MinSizeRel
#
# The port defaults to DMM_PORT=freestanding for this (Generic) system; tests,
# benchmarks and the shared library are off.  Override the CPU with
# -DDMM_ARM_CPU_FLAGS="-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16",
# add flags with -DDMM_ARM_EXTRA_FLAGS="-ffunction-sections -fdata-sections"
# and change the tool prefix with -DDMM_ARM_PREFIX=/opt/arm/bin/arm-none-eabi-.
# The CPU flags go into CMAKE_C_FLAGS_INIT, which CMake ignores when
# CMAKE_C_FLAGS is given on the command line; the top-level CMakeLists.txt
# then adds them itself.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(DMM_ARM_PREFIX "arm-none-eabi-" CACHE STRING "Prefix of the Arm bare-metal tools")
set(DMM_ARM_CPU_FLAGS "-mcpu=cortex-m4 -mthumb" CACHE STRING "Target CPU flags")
set(DMM_ARM_EXTRA_FLAGS "" CACHE STRING "More flags for every compilation")

set(CMAKE_C_COMPILER "${DMM_ARM_PREFIX}gcc")
set(CMAKE_CXX_COMPILER "${DMM_ARM_PREFIX}g++")
set(CMAKE_ASM_COMPILER "${DMM_ARM_PREFIX}gcc")
set(CMAKE_AR "${DMM_ARM_PREFIX}ar" CACHE FILEPATH "Archiver")
set(CMAKE_RANLIB "${DMM_ARM_PREFIX}ranlib" CACHE FILEPATH "Ranlib")
set(CMAKE_OBJCOPY "${DMM_ARM_PREFIX}objcopy" CACHE FILEPATH "objcopy")
set(CMAKE_SIZE "${DMM_ARM_PREFIX}size" CACHE FILEPATH "size")
set(CMAKE_NM "${DMM_ARM_PREFIX}nm" CACHE FILEPATH "nm")

# No OS to link a test program for: compiler checks build a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CMAKE_C_FLAGS_INIT "${DMM_ARM_CPU_FLAGS} ${DMM_ARM_EXTRA_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${DMM_ARM_CPU_FLAGS} ${DMM_ARM_EXTRA_FLAGS}")
set(CMAKE_ASM_FLAGS_INIT "${DMM_ARM_CPU_FLAGS}")

# Look for libraries and headers only in the target environment.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

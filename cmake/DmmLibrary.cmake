# DmmLibrary.cmake - how one variant of the dmmkit library is built.
#
#   dmm_add_heap_library(<name> STATIC|SHARED|OBJECT
#       [PORT posix|freestanding]      default: DMM_PORT
#       [FROZEN <header>]              freeze the heap config (abs. or relative
#                                      to the source root); empty = runtime
#       [POOL_FROZEN <header>]         freeze the pool config (dmm-config
#                                      pool-header writes one)
#       [ANNOTATE ON|OFF]              default: DMM_ANNOTATE
#       [VARIANTS ON|OFF]              default: DMM_HEAP_VARIANTS (compile the
#                                      preset variants of the hot paths)
#       [ASSERT_LEVEL 0..3]            default: DMM_ASSERT_LEVEL, else 3 in
#                                      Debug and 0 otherwise
#       [EXPORT_NAME <name>])
#
# The top-level CMakeLists.txt builds `dmm_heap` and `dmm_heap_shared` (the
# files libdmm_heap.a and libdmm_heap.so) with it; tests and benchmarks may
# call it for extra variants in the same build tree (for example one static
# library per frozen preset, to compare runtime and compile-time
# configurations).  Every variant compiles the same sources:
# src/core/*.c, src/heap/*.c, src/pool/*.c, src/multiheap/*.c, src/spm/*.c, src/port/vec/ (the vector
# routines for the target's architecture) and src/port/<port>.c.
#
# Compile definitions a variant gets (all PRIVATE: the public headers do not
# depend on them):
#   DMM_ASSERT_LEVEL=<n>
#   DMM_HEAP_CONFIG_HEADER="<abs path>"   when frozen
#   DMM_ANNOTATE=1                       when annotating
#   DMM_ANNOTATE_ASAN=1                  when annotating in an ASan build: the
#       library itself is then compiled with -fno-sanitize=address, so the
#       compiler's own ASan macros (__SANITIZE_ADDRESS__,
#       __has_feature(address_sanitizer)) are off inside it; this macro tells
#       src/port/annotate.h to call the ASan poisoning interface anyway.
include_guard(GLOBAL)
include(GNUInstallDirs)

set(DMM_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." CACHE INTERNAL "dmmkit source root")
get_filename_component(DMM_SOURCE_ROOT "${DMM_SOURCE_ROOT}" ABSOLUTE)

function(dmm_add_heap_library name)
    cmake_parse_arguments(PARSE_ARGV 1 A "STATIC;SHARED;OBJECT"
                          "PORT;FROZEN;POOL_FROZEN;ANNOTATE;ASSERT_LEVEL;EXPORT_NAME;VARIANTS" "")
    if(A_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "dmm_add_heap_library(${name}): unknown arguments ${A_UNPARSED_ARGUMENTS}")
    endif()
    if(A_SHARED)
        set(kind SHARED)
    elseif(A_OBJECT)
        set(kind OBJECT)
    else()
        set(kind STATIC)
    endif()
    if(NOT DEFINED A_PORT OR A_PORT STREQUAL "")
        set(A_PORT "${DMM_PORT}")
    endif()
    if(NOT DEFINED A_ANNOTATE OR A_ANNOTATE STREQUAL "")
        set(A_ANNOTATE "${DMM_ANNOTATE}")
    endif()
    if(NOT DEFINED A_ASSERT_LEVEL OR A_ASSERT_LEVEL STREQUAL "")
        set(A_ASSERT_LEVEL "${DMM_ASSERT_LEVEL}")
    endif()

    set(root "${DMM_SOURCE_ROOT}")
    set(port_src "${root}/src/port/${A_PORT}.c")
    if(NOT EXISTS "${port_src}")
        message(FATAL_ERROR "dmm_add_heap_library(${name}): no port source ${port_src}")
    endif()
    file(GLOB core_srcs CONFIGURE_DEPENDS "${root}/src/core/*.c")
    file(GLOB heap_srcs CONFIGURE_DEPENDS "${root}/src/heap/*.c")
    if(NOT heap_srcs)
        message(WARNING "dmm_add_heap_library(${name}): src/heap/*.c is empty")
    endif()

    file(GLOB pool_srcs CONFIGURE_DEPENDS "${root}/src/pool/*.c" "${root}/src/multiheap/*.c"
                                          "${root}/src/spm/*.c")
    # The vector routines (dmm/vec.h): the portable dispatcher everywhere,
    # plus the SIMD implementations of the target's architecture on a hosted
    # port (src/port/vec/README: which file builds where).
    set(vec_srcs "${root}/src/port/vec/vec.c")
    if(A_PORT STREQUAL "posix")
        if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
            list(APPEND vec_srcs "${root}/src/port/vec/vec_x86.c")
        elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
            list(APPEND vec_srcs "${root}/src/port/vec/vec_neon.c")
        endif()
    endif()
    foreach(_v IN LISTS vec_srcs)
        if(NOT EXISTS "${_v}")
            list(REMOVE_ITEM vec_srcs "${_v}")
        endif()
    endforeach()
    if(vec_srcs MATCHES "vec_x86|vec_neon")
        set(vec_arch ON)
    else()
        set(vec_arch OFF)
    endif()

    add_library(${name} ${kind} ${core_srcs} ${heap_srcs} ${pool_srcs} ${vec_srcs} "${port_src}")
    if(vec_arch)
        target_compile_definitions(${name} PRIVATE DMM_VEC_ARCH=1)
    endif()
    target_include_directories(${name}
        PUBLIC "$<BUILD_INTERFACE:${root}/include>"
               "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>"
        PRIVATE "${root}/src")
    set_target_properties(${name} PROPERTIES
        C_STANDARD 11
        C_STANDARD_REQUIRED ON
        C_EXTENSIONS OFF
        ARCHIVE_OUTPUT_DIRECTORY "${dmmkit_BINARY_DIR}/lib"
        LIBRARY_OUTPUT_DIRECTORY "${dmmkit_BINARY_DIR}/lib"
        RUNTIME_OUTPUT_DIRECTORY "${dmmkit_BINARY_DIR}/bin")
    if(A_EXPORT_NAME)
        set_target_properties(${name} PROPERTIES EXPORT_NAME "${A_EXPORT_NAME}")
    endif()

    # Assertion level
    if(A_ASSERT_LEVEL STREQUAL "")
        target_compile_definitions(${name} PRIVATE "DMM_ASSERT_LEVEL=$<IF:$<CONFIG:Debug>,3,0>")
    else()
        target_compile_definitions(${name} PRIVATE "DMM_ASSERT_LEVEL=${A_ASSERT_LEVEL}")
    endif()

    # Preset variants of the hot paths (src/heap/variant.h)
    if(NOT DEFINED A_VARIANTS OR A_VARIANTS STREQUAL "")
        set(A_VARIANTS "${DMM_HEAP_VARIANTS}")
    endif()
    if(A_VARIANTS)
        target_compile_definitions(${name} PRIVATE DMM_HEAP_VARIANTS=1)
    else()
        target_compile_definitions(${name} PRIVATE DMM_HEAP_VARIANTS=0)
    endif()

    # Frozen configuration
    if(A_FROZEN)
        get_filename_component(frozen "${A_FROZEN}" ABSOLUTE BASE_DIR "${root}")
        if(NOT EXISTS "${frozen}")
            message(FATAL_ERROR "dmm_add_heap_library(${name}): no frozen config ${frozen}")
        endif()
        target_compile_definitions(${name} PRIVATE "DMM_HEAP_CONFIG_HEADER=\"${frozen}\"")
        set_property(TARGET ${name} APPEND PROPERTY OBJECT_DEPENDS "${frozen}")
    endif()

    if(A_POOL_FROZEN)
        get_filename_component(pfrozen "${A_POOL_FROZEN}" ABSOLUTE BASE_DIR "${root}")
        if(NOT EXISTS "${pfrozen}")
            message(FATAL_ERROR "dmm_add_heap_library(${name}): no frozen pool config ${pfrozen}")
        endif()
        target_compile_definitions(${name} PRIVATE "DMM_POOL_CONFIG_HEADER=\"${pfrozen}\"")
        set_property(TARGET ${name} APPEND PROPERTY OBJECT_DEPENDS "${pfrozen}")
    endif()

    # Sanitizer / Valgrind annotations
    if(A_ANNOTATE)
        target_compile_definitions(${name} PRIVATE DMM_ANNOTATE=1)
        if(DMM_ASAN_ON)
            # The heap reads and writes its own poisoned metadata; only the
            # user's code stays instrumented.
            target_compile_options(${name} PRIVATE -fno-sanitize=address)
            target_compile_definitions(${name} PRIVATE DMM_ANNOTATE_ASAN=1)
        endif()
    endif()

    # Port
    if(A_PORT STREQUAL "freestanding")
        target_compile_options(${name} PRIVATE -ffreestanding)
    elseif(A_PORT STREQUAL "posix" AND TARGET Threads::Threads)
        target_link_libraries(${name} PRIVATE Threads::Threads)
    endif()

    # Coverage feedback for libFuzzer (the harness adds -fsanitize=fuzzer).
    if(DMM_BUILD_FUZZ)
        target_compile_options(${name} PRIVATE -fsanitize=fuzzer-no-link)
    endif()

    if(DMM_WERROR)
        target_compile_options(${name} PRIVATE -Werror)
    endif()
endfunction()

# DmmLibrary.cmake - how one variant of the dmmkit library is built.
#
#   dmm_add_heap_library(<name> STATIC|SHARED|OBJECT|OBJECT_LIST
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
#       [EXPORT_NAME <name>]
#       [DEFINES <def>...]             extra compile definitions (all sources)
#       [HEAP_ONLY]                    OBJECT only: core, heap and port alone
#       [HOT <source>...])             OBJECT only: these sources (paths under the
#                                      source root) first, in this order
#
# OBJECT_LIST makes no target: <name> is a variable, set in the caller's
# scope to the position-independent objects of the three groups below
# ($<TARGET_OBJECTS:...>), for another library's sources; they are the
# objects of every other variant with the same settings (libdmm's static
# library takes libdmm_heap.so's).
#
# The top-level CMakeLists.txt builds `dmm_heap` and `dmm_heap_shared` (the
# files libdmm_heap.a and libdmm_heap.so) with it; tests and benchmarks may
# call it for extra variants in the same build tree (for example one static
# library per frozen preset, to compare runtime and compile-time
# configurations).  Every variant holds the same sources: src/core/*.c,
# src/heap/*.c, src/pool/*.c, src/multiheap/*.c, src/spm/*.c, src/port/vec/
# (the vector routines for the target's architecture) and
# src/port/<port>.c.  They are compiled in three groups, each an object
# library shared by every variant whose settings it depends on are the same
# (port, annotation, assertion level, position independence, DEFINES, and):
#   heap   src/heap            + the frozen heap config, VARIANTS
#   pool   src/pool            + the frozen pool config
#   base   core, multiheap, spm, vec, port
# so a frozen preset's library compiles only its heap, and a frozen pool's
# only its pools.  An OBJECT variant compiles every source itself.
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

# How a target of the library's sources is compiled (all PRIVATE).
function(_dmm_lib_compile t port annotate assert_level variants frozen pfrozen vec_arch defines)
    target_include_directories(${t} PRIVATE "${DMM_SOURCE_ROOT}/include" "${DMM_SOURCE_ROOT}/src")
    set_target_properties(${t} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
    if(assert_level STREQUAL "")
        target_compile_definitions(${t} PRIVATE "DMM_ASSERT_LEVEL=$<IF:$<CONFIG:Debug>,3,0>")
    else()
        target_compile_definitions(${t} PRIVATE "DMM_ASSERT_LEVEL=${assert_level}")
    endif()
    # preset variants of the hot paths (src/heap/variant.h; "-": a group
    # without heap sources)
    if(variants STREQUAL "-")
    elseif(variants)
        target_compile_definitions(${t} PRIVATE DMM_HEAP_VARIANTS=1)
    else()
        target_compile_definitions(${t} PRIVATE DMM_HEAP_VARIANTS=0)
    endif()
    if(vec_arch)
        target_compile_definitions(${t} PRIVATE DMM_VEC_ARCH=1)
    endif()
    if(frozen)
        target_compile_definitions(${t} PRIVATE "DMM_HEAP_CONFIG_HEADER=\"${frozen}\"")
        set_property(TARGET ${t} APPEND PROPERTY OBJECT_DEPENDS "${frozen}")
    endif()
    if(pfrozen)
        target_compile_definitions(${t} PRIVATE "DMM_POOL_CONFIG_HEADER=\"${pfrozen}\"")
        set_property(TARGET ${t} APPEND PROPERTY OBJECT_DEPENDS "${pfrozen}")
    endif()
    if(defines)
        target_compile_definitions(${t} PRIVATE ${defines})
    endif()
    # sanitizer / Valgrind annotations
    if(annotate)
        target_compile_definitions(${t} PRIVATE DMM_ANNOTATE=1)
        if(DMM_ASAN_ON)
            # The heap reads and writes its own poisoned metadata; only the
            # user's code stays instrumented.
            target_compile_options(${t} PRIVATE -fno-sanitize=address)
            target_compile_definitions(${t} PRIVATE DMM_ANNOTATE_ASAN=1)
        endif()
    endif()
    if(port STREQUAL "freestanding")
        target_compile_options(${t} PRIVATE -ffreestanding)
    elseif(port STREQUAL "posix")
        # the thread token read inline (src/port/port.h)
        target_compile_definitions(${t} PRIVATE DMM_PORT_INLINE_TOKEN=1)
        if(TARGET Threads::Threads)
            target_link_libraries(${t} PRIVATE Threads::Threads)
        endif()
    endif()
    # coverage feedback for libFuzzer (the harness adds -fsanitize=fuzzer)
    if(DMM_BUILD_FUZZ)
        target_compile_options(${t} PRIVATE -fsanitize=fuzzer-no-link)
    endif()
    if(DMM_WERROR)
        target_compile_options(${t} PRIVATE -Werror)
    endif()
endfunction()

# The object library of one source group for one setting of what it is
# compiled with (named by a hash of it): made by the first variant that needs
# it, reused by the others.  Its name goes to out.
function(_dmm_lib_group out group srcs port annotate assert_level variants frozen pfrozen vec_arch pic defines)
    string(MD5 h "${group}|${port}|${annotate}|${assert_level}|${variants}|${frozen}|${pfrozen}|${vec_arch}|${pic}|${defines}")
    string(SUBSTRING "${h}" 0 12 h)
    set(t "dmm_objs_${group}_${h}")
    if(NOT TARGET ${t})
        add_library(${t} OBJECT ${srcs})
        _dmm_lib_compile(${t} "${port}" "${annotate}" "${assert_level}" "${variants}" "${frozen}" "${pfrozen}"
                         "${vec_arch}" "${defines}")
        set_target_properties(${t} PROPERTIES POSITION_INDEPENDENT_CODE ${pic})
    endif()
    set(${out} ${t} PARENT_SCOPE)
endfunction()

function(dmm_add_heap_library name)
    cmake_parse_arguments(PARSE_ARGV 1 A "STATIC;SHARED;OBJECT;OBJECT_LIST;HEAP_ONLY"
                          "PORT;FROZEN;POOL_FROZEN;ANNOTATE;ASSERT_LEVEL;EXPORT_NAME;VARIANTS" "DEFINES;HOT")
    if(A_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "dmm_add_heap_library(${name}): unknown arguments ${A_UNPARSED_ARGUMENTS}")
    endif()
    if(A_SHARED)
        set(kind SHARED)
    elseif(A_OBJECT)
        set(kind OBJECT)
    elseif(A_OBJECT_LIST)
        set(kind OBJECT_LIST)
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

    file(GLOB pool_srcs CONFIGURE_DEPENDS "${root}/src/pool/*.c")
    file(GLOB base_srcs CONFIGURE_DEPENDS "${root}/src/multiheap/*.c" "${root}/src/spm/*.c")
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

    if(NOT DEFINED A_VARIANTS OR A_VARIANTS STREQUAL "")
        set(A_VARIANTS "${DMM_HEAP_VARIANTS}")
    endif()
    set(frozen "")
    if(A_FROZEN)
        get_filename_component(frozen "${A_FROZEN}" ABSOLUTE BASE_DIR "${root}")
        if(NOT EXISTS "${frozen}")
            message(FATAL_ERROR "dmm_add_heap_library(${name}): no frozen config ${frozen}")
        endif()
    endif()
    set(pfrozen "")
    if(A_POOL_FROZEN)
        get_filename_component(pfrozen "${A_POOL_FROZEN}" ABSOLUTE BASE_DIR "${root}")
        if(NOT EXISTS "${pfrozen}")
            message(FATAL_ERROR "dmm_add_heap_library(${name}): no frozen pool config ${pfrozen}")
        endif()
    endif()
    set(pic OFF)
    if(kind STREQUAL "SHARED" OR kind STREQUAL "OBJECT_LIST" OR CMAKE_POSITION_INDEPENDENT_CODE)
        set(pic ON)
    endif()
    if(kind STREQUAL "OBJECT")
        # an object library cannot hold other object libraries' objects:
        # it compiles every source itself
        if(A_HEAP_ONLY)
            # the heap alone: no pools, multi-heaps, scratchpad or vector routines
            set(srcs ${core_srcs} ${heap_srcs} "${port_src}")
        else()
            set(srcs ${core_srcs} ${heap_srcs} ${pool_srcs} ${base_srcs} ${vec_srcs} "${port_src}")
        endif()
        # HOT: sources (paths under the source root) moved to the front, in
        # the order given.  A library that links these objects right after
        # its own (libdmm.so) then has the code every process runs in a few
        # adjacent pages at the start of its text instead of spread over
        # it: the kernel maps file pages 64 KiB around each one a process
        # touches, so spread code costs resident memory in every process
        # that loads it.
        set(_hot "")
        foreach(_h IN LISTS A_HOT)
            get_filename_component(_h "${_h}" ABSOLUTE BASE_DIR "${root}")
            list(FIND srcs "${_h}" _i)
            if(_i LESS 0)
                message(FATAL_ERROR "dmm_add_heap_library(${name}): HOT source ${_h} is not one of the library's")
            endif()
            list(REMOVE_AT srcs ${_i})
            list(APPEND _hot "${_h}")
        endforeach()
        set(srcs ${_hot} ${srcs})
        add_library(${name} OBJECT ${srcs})
        _dmm_lib_compile(${name} "${A_PORT}" "${A_ANNOTATE}" "${A_ASSERT_LEVEL}" "${A_VARIANTS}"
                         "${frozen}" "${pfrozen}" "${vec_arch}" "${A_DEFINES}")
        target_include_directories(${name} PUBLIC "$<BUILD_INTERFACE:${root}/include>")
        return()
    endif()

    # The sources in three groups, each compiled once per distinct setting of
    # what it depends on and shared by every variant with that setting: the
    # heap (its frozen config and variants), the pools (their frozen config)
    # and the rest (core, multiheap, spm, vector routines, port), which no
    # config changes.  A frozen preset's library then compiles only its heap.
    _dmm_lib_group(heap_objs heap "${heap_srcs}"
                   "${A_PORT}" "${A_ANNOTATE}" "${A_ASSERT_LEVEL}" "${A_VARIANTS}" "${frozen}" "" OFF "${pic}"
                   "${A_DEFINES}")
    set(objs "$<TARGET_OBJECTS:${heap_objs}>")
    if(pool_srcs)
        _dmm_lib_group(pool_objs pool "${pool_srcs}"
                       "${A_PORT}" "${A_ANNOTATE}" "${A_ASSERT_LEVEL}" "-" "" "${pfrozen}" OFF "${pic}"
                       "${A_DEFINES}")
        list(APPEND objs "$<TARGET_OBJECTS:${pool_objs}>")
    endif()
    _dmm_lib_group(base_objs base "${core_srcs};${base_srcs};${vec_srcs};${port_src}"
                   "${A_PORT}" "${A_ANNOTATE}" "${A_ASSERT_LEVEL}" "-" "" "" "${vec_arch}" "${pic}"
                   "${A_DEFINES}")
    list(APPEND objs "$<TARGET_OBJECTS:${base_objs}>")
    if(kind STREQUAL "OBJECT_LIST")
        # no target: the objects, for another library's sources (libdmm's
        # static library takes the same position-independent objects as
        # libdmm_heap.so instead of compiling the whole library once more)
        set(${name} "${objs}" PARENT_SCOPE)
        return()
    endif()

    add_library(${name} ${kind} ${objs})
    target_include_directories(${name}
        PUBLIC "$<BUILD_INTERFACE:${root}/include>"
               "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
    set_target_properties(${name} PROPERTIES
        LINKER_LANGUAGE C
        ARCHIVE_OUTPUT_DIRECTORY "${dmmkit_BINARY_DIR}/lib"
        LIBRARY_OUTPUT_DIRECTORY "${dmmkit_BINARY_DIR}/lib"
        RUNTIME_OUTPUT_DIRECTORY "${dmmkit_BINARY_DIR}/bin")
    if(A_EXPORT_NAME)
        set_target_properties(${name} PROPERTIES EXPORT_NAME "${A_EXPORT_NAME}")
    endif()
    if(A_PORT STREQUAL "posix" AND TARGET Threads::Threads)
        target_link_libraries(${name} PRIVATE Threads::Threads)
    endif()
endfunction()

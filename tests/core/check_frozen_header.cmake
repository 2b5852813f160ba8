# tests/core/check_frozen_header.cmake - fails when a committed frozen
# config header differs from what the library writes for its preset.
#
#   cmake -DTOOL=<dmm-config> -DROOT=<source root> -DPRESET=<name> -P check_frozen_header.cmake
#
# configs/frozen/<PRESET>.h must be byte for byte the output of
#   dmm-config header preset=<PRESET> --name configs/frozen/<PRESET>.h
# (run from the source root to regenerate it).  The presets are the same on
# every target (32- and 64-bit), so the committed files are too.
foreach(_v TOOL ROOT PRESET)
    if(NOT DEFINED ${_v})
        message(FATAL_ERROR "check_frozen_header.cmake: -D${_v}=... missing")
    endif()
endforeach()
# Optional: -DTEXT=<config text> (default preset=<PRESET>) and -DREL=<header
# path from the root> (default configs/frozen/<PRESET>.h), for headers written
# from a preset with other settings (configs/frozen/lean/).
if(NOT DEFINED TEXT)
    set(TEXT "preset=${PRESET}")
endif()
if(DEFINED REL)
    set(_rel "${REL}")
else()
    set(_rel "configs/frozen/${PRESET}.h")
endif()
set(_file "${ROOT}/${_rel}")
if(NOT EXISTS "${_file}")
    message(FATAL_ERROR "${_file} does not exist")
endif()
execute_process(COMMAND "${TOOL}" header "${TEXT}" --name "${_rel}"
                OUTPUT_VARIABLE _want ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "dmm-config header ${TEXT} failed (${_rc}): ${_err}")
endif()
file(READ "${_file}" _have)
if(NOT _have STREQUAL _want)
    file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/frozen_${PRESET}.expected.h" "${_want}")
    message(FATAL_ERROR "${_rel} differs from what the library writes for ${TEXT}.\n"
                        "Expected (also in ${CMAKE_CURRENT_BINARY_DIR}/frozen_${PRESET}.expected.h):\n${_want}\n"
                        "Regenerate from the source root with:\n"
                        "  ${TOOL} header ${TEXT} --name ${_rel} > ${_rel}")
endif()
message(STATUS "${_rel} matches dmm-config header ${TEXT}")

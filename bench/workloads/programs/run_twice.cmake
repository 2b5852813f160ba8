# run_twice.cmake - runs a workload program twice with the same arguments:
# both runs must exit 0, print the same "checksum=" line, and (if CHECKSUM
# is given) that checksum.
#   cmake -DPROG=<exe> "-DARGS=<space-separated>" [-DCHECKSUM=<hex>] -P run_twice.cmake
#   cmake -DPROG=<exe> "-DARGS=..." -DEXPECT_EXIT=<n> -P run_twice.cmake
#     (bad usage: one run must exit with exactly <n>, not crash)
separate_arguments(_args UNIX_COMMAND "${ARGS}")
if(DEFINED EXPECT_EXIT)
    execute_process(COMMAND "${PROG}" ${_args}
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
    if(NOT "${_rc}" STREQUAL "${EXPECT_EXIT}")
        message(FATAL_ERROR "${PROG} ${ARGS}: exit '${_rc}', expected ${EXPECT_EXIT}\n${_out}${_err}")
    endif()
    message(STATUS "${_err}")
    return()
endif()
foreach(_run 1 2)
    execute_process(COMMAND "${PROG}" ${_args}
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "${PROG} ${ARGS}: exit ${_rc}\n${_out}${_err}")
    endif()
    string(REGEX MATCH "checksum=([0-9a-f]+)" _m "${_out}")
    if(NOT _m)
        message(FATAL_ERROR "${PROG} ${ARGS}: no checksum line\n${_out}")
    endif()
    set(_sum${_run} "${CMAKE_MATCH_1}")
endforeach()
if(NOT _sum1 STREQUAL _sum2)
    message(FATAL_ERROR "${PROG} ${ARGS}: not deterministic (${_sum1} then ${_sum2})")
endif()
if(CHECKSUM AND NOT _sum1 STREQUAL CHECKSUM)
    message(FATAL_ERROR "${PROG} ${ARGS}: checksum ${_sum1}, expected ${CHECKSUM}")
endif()
message(STATUS "${_out}")

# tools/spmcc/compare.cmake - runs a corpus program as written (RAW) and as
# rewritten by dmm-spmcc (SPM, on a LOCAL-byte local memory with heap
# configuration CONFIG) and requires the same output and exit status 0.
# ARGS: the programs' arguments (space-separated).
# EXPECT_DIFFERENT=1: the rewritten run must differ or fail (a deliberately
# broken rewrite: shows the check can fail).
# STATIC=1: the rewritten run's global memory in static mode (SPMCC_STATIC).
# REQUIRE_EVICTIONS=1: the rewritten run must have evicted units (its
# statistics, SPMCC_STATS), so that the local memory really was too small.
# REQUIRE_PARTS=1: the rewritten run must have fetched pieces of large
# objects (partial transfers: part_fetches in its statistics).
# MAX_P2S=N: the rewritten run may make at most N translations (p2s, p2s_ro
# and pin calls in its statistics): the pass's region rules must not regress.
separate_arguments(args UNIX_COMMAND "${ARGS}")
# a rewritten program that was never built must not count as one that failed
# (EXPECT_DIFFERENT below would take its missing file for the failure)
if(NOT EXISTS "${SPM}")
    message(FATAL_ERROR "${SPM} does not exist (not built)")
endif()
execute_process(COMMAND "${RAW}" ${args} RESULT_VARIABLE raw_rc OUTPUT_VARIABLE raw_out ERROR_VARIABLE raw_err)
if(NOT raw_rc EQUAL 0)
    message(FATAL_ERROR "${RAW} exited ${raw_rc}:\n${raw_err}")
endif()
set(ENV{SPMCC_LOCAL} "${LOCAL}")
set(ENV{SPMCC_CONFIG} "${CONFIG}")
if(STATIC)
    set(ENV{SPMCC_STATIC} 1)
endif()
if(REQUIRE_EVICTIONS OR MAX_P2S OR REQUIRE_PARTS)
    set(ENV{SPMCC_STATS} 1)
endif()
execute_process(COMMAND "${SPM}" ${args} RESULT_VARIABLE spm_rc OUTPUT_VARIABLE spm_out ERROR_VARIABLE spm_err)
if(EXPECT_DIFFERENT)
    if(spm_rc EQUAL 0 AND spm_out STREQUAL raw_out)
        message(FATAL_ERROR "${SPM} (pins left out) ran like the original under ${CONFIG}: the check cannot fail")
    endif()
    message(STATUS "as expected, the rewrite without pins fails: exit ${spm_rc}")
    return()
endif()
if(NOT spm_rc EQUAL 0)
    message(FATAL_ERROR "${SPM} (SPMCC_LOCAL=${LOCAL} SPMCC_CONFIG=${CONFIG}) exited ${spm_rc}:\n${spm_err}\nstdout:\n${spm_out}")
endif()
if(NOT spm_out STREQUAL raw_out)
    message(FATAL_ERROR "outputs differ\n--- ${RAW}\n${raw_out}--- ${SPM}\n${spm_out}")
endif()
if(REQUIRE_EVICTIONS)
    string(REGEX MATCH "\"unit_evictions\":([0-9]+)" _ev "${spm_err}")
    if(NOT _ev OR CMAKE_MATCH_1 EQUAL 0)
        message(FATAL_ERROR "${SPM} evicted no unit (SPMCC_LOCAL=${LOCAL} SPMCC_CONFIG=${CONFIG}): the local memory "
                            "is not small enough for this test\n${spm_err}")
    endif()
    message(STATUS "unit evictions: ${CMAKE_MATCH_1}")
endif()
if(REQUIRE_PARTS)
    string(REGEX MATCH "\"part_fetches\":([0-9]+)" _pf "${spm_err}")
    if(NOT _pf OR CMAKE_MATCH_1 EQUAL 0)
        message(FATAL_ERROR "${SPM} fetched no piece of a large object (SPMCC_LOCAL=${LOCAL} SPMCC_CONFIG=${CONFIG})\n${spm_err}")
    endif()
    message(STATUS "piece fetches: ${CMAKE_MATCH_1}")
endif()
if(MAX_P2S)
    string(REGEX MATCH "\"p2s\":{\"calls\":([0-9]+)" _p2s "${spm_err}")
    if(NOT _p2s)
        message(FATAL_ERROR "${SPM}: no p2s count in its statistics\n${spm_err}")
    endif()
    if(CMAKE_MATCH_1 GREATER MAX_P2S)
        message(FATAL_ERROR "${SPM} made ${CMAKE_MATCH_1} translations, more than ${MAX_P2S}")
    endif()
    message(STATUS "translations: ${CMAKE_MATCH_1} (at most ${MAX_P2S})")
endif()
message(STATUS "same output:\n${spm_out}")

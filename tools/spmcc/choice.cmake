# tools/spmcc/choice.cmake - checks the text of a rewritten corpus program for
# the pass's choices (spmcc.stream.choice): every regular expression of MUST
# (a ;-list) must match FILE, none of MUST_NOT may.  The rewrite's behaviour is
# checked by compare.cmake; this checks which translation the pass chose where
# both would be correct (a pin of the whole array or element translations).
# With SRC (and PY, SPMCC), the pass first rewrites SRC into FILE.
if(DEFINED SRC)
    execute_process(COMMAND "${PY}" "${SPMCC}" "${SRC}" -o "${FILE}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "dmm-spmcc ${SRC} failed (${rc})")
    endif()
endif()
file(READ "${FILE}" text)
foreach(re IN LISTS MUST)
    if(NOT text MATCHES "${re}")
        message(FATAL_ERROR "${FILE}: the rewrite does not contain /${re}/")
    endif()
endforeach()
foreach(re IN LISTS MUST_NOT)
    if(text MATCHES "${re}")
        message(FATAL_ERROR "${FILE}: the rewrite contains /${re}/")
    endif()
endforeach()
message(STATUS "${FILE}: the pass's choices are as expected")

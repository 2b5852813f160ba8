# bench/replay_smoke.cmake - the benchmark path end to end, quickly:
# gen-workloads writes each workload as a trace, dmm-replay replays it
# (timed, one repetition, cold and warm) once per allocator, and every JSON
# document must parse, carry the dmm-replay schema, and report no failed
# allocation and no heap error.  Nothing asserts a timing.
#
#   cmake -DGEN=<gen-workloads> -DREPLAY=<dmm-replay> -DDIR=<scratch dir>
#         -DWORKLOADS=a,b,...|all -DALLOCS=dmm:tlsf,dmm:p2012,... [-DARENA=64m]
#         [-DPYTHON=<python3> -DREPORT=<bench/report.py>] -P replay_smoke.cmake
# With PYTHON and REPORT, bench/report.py then turns the documents into the
# results files (collect, markdown, table, headline), as scripts/bench.sh does.
# ARENA (dmm-replay --arena) defaults to 64m, the arena scripts/bench.sh
# gives every preset: the default (4 x peak live) is too small for presets
# that never split or coalesce (p2012 on `mixed`), and a failed allocation
# here must mean a regression, not a small arena.
cmake_minimum_required(VERSION 3.21)

foreach(_v GEN REPLAY DIR WORKLOADS ALLOCS)
    if(NOT DEFINED ${_v} OR "${${_v}}" STREQUAL "")
        message(FATAL_ERROR "replay_smoke: -D${_v}=... is required")
    endif()
endforeach()
if(NOT DEFINED ARENA OR ARENA STREQUAL "")
    set(ARENA 64m)
endif()
string(REPLACE "," ";" _workloads "${WORKLOADS}")
if(_workloads STREQUAL "all")
    execute_process(COMMAND "${GEN}" --list RESULT_VARIABLE _rc OUTPUT_VARIABLE _list ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "replay_smoke: gen-workloads --list failed (${_rc}): ${_err}")
    endif()
    string(REGEX REPLACE "([^ \n]+)[^\n]*\n" "\\1;" _workloads "${_list}")
endif()
list(REMOVE_ITEM _workloads "")
string(REPLACE "," ";" _allocs "${ALLOCS}")

file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
execute_process(COMMAND "${GEN}" -o "${DIR}" ${_workloads}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "replay_smoke: gen-workloads failed (${_rc}): ${_err}")
endif()
message(STATUS "${_out}")

set(_runs 0)
foreach(_w IN LISTS _workloads)
    set(_trace "${DIR}/${_w}.dmmt")
    if(NOT EXISTS "${_trace}")
        message(FATAL_ERROR "replay_smoke: gen-workloads wrote no ${_trace}")
    endif()
    foreach(_a IN LISTS _allocs)
        # named as scripts/bench.sh names its runs (bench/report.py reads them)
        string(REGEX REPLACE "^dmm:" "" _tag "${_a}")
        string(REGEX REPLACE "[^A-Za-z0-9_.+-]" "_" _tag "${_tag}")
        set(_json "${DIR}/r1__${_tag}__${_w}.json")
        execute_process(COMMAND "${REPLAY}" "${_trace}" --alloc "${_a}" --arena "${ARENA}" --reps 1 --json "${_json}" --quiet
                        RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
        if(NOT _rc EQUAL 0)
            message(FATAL_ERROR "replay_smoke: dmm-replay ${_w} --alloc ${_a} exited ${_rc}: ${_err}")
        endif()
        file(READ "${_json}" _doc)
        string(JSON _schema ERROR_VARIABLE _jerr GET "${_doc}" schema)
        if(_jerr)
            message(FATAL_ERROR "replay_smoke: ${_json} does not parse as JSON: ${_jerr}")
        endif()
        if(NOT _schema MATCHES "^dmm-replay/")
            message(FATAL_ERROR "replay_smoke: ${_json}: schema '${_schema}', expected dmm-replay/N")
        endif()
        string(JSON _failed ERROR_VARIABLE _jerr GET "${_doc}" failed)
        if(_jerr OR NOT _failed EQUAL 0)
            message(FATAL_ERROR "replay_smoke: ${_w} on ${_a}: failed = '${_failed}' ${_jerr}, expected 0")
        endif()
        string(JSON _ops ERROR_VARIABLE _jerr GET "${_doc}" trace ops)
        if(_jerr OR _ops LESS 1)
            message(FATAL_ERROR "replay_smoke: ${_json}: no trace.ops (${_jerr})")
        endif()
        if(_a MATCHES "^dmm:")
            string(JSON _herr ERROR_VARIABLE _jerr GET "${_doc}" allocator heap_errors)
            if(NOT _jerr AND NOT _herr EQUAL 0)
                message(FATAL_ERROR "replay_smoke: ${_w} on ${_a}: ${_herr} heap error(s)")
            endif()
        endif()
        math(EXPR _runs "${_runs} + 1")
    endforeach()
endforeach()
message(STATUS "replay_smoke: ${_runs} replays, every JSON parsed, no failed allocation")

if(DEFINED PYTHON AND DEFINED REPORT AND NOT PYTHON STREQUAL "" AND NOT REPORT STREQUAL "")
    execute_process(COMMAND "${GEN}" --list OUTPUT_FILE "${DIR}/workloads.list" RESULT_VARIABLE _rc)
    set(_steps
        "collect --runs ${DIR} --list ${DIR}/workloads.list --out ${DIR}/workloads.json --arena ${ARENA}"
        "table --timing ${DIR}/workloads.json"
        "markdown --timing ${DIR}/workloads.json --out ${DIR}/workloads.md --script replay_smoke.cmake"
        "headline --timing ${DIR}/workloads.json")
    foreach(_s IN LISTS _steps)
        separate_arguments(_args UNIX_COMMAND "${_s}")
        execute_process(COMMAND "${PYTHON}" "${REPORT}" ${_args}
                        RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
        if(NOT _rc EQUAL 0)
            message(FATAL_ERROR "replay_smoke: report.py ${_s} exited ${_rc}: ${_err}")
        endif()
    endforeach()
    file(READ "${DIR}/workloads.md" _md)
    if(NOT _md MATCHES "# Workload benchmark results")
        message(FATAL_ERROR "replay_smoke: ${DIR}/workloads.md has no title")
    endif()
    # A damaged results file gets one sentence, not a traceback.
    file(WRITE "${DIR}/damaged.json" "{\"schema\": \"dmmkit.workloads\", \"results\": ")
    execute_process(COMMAND "${PYTHON}" "${REPORT}" table --timing "${DIR}/damaged.json"
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 2 OR NOT _err MATCHES "damaged.json: not valid JSON" OR _err MATCHES "Traceback")
        message(FATAL_ERROR "replay_smoke: report.py on a damaged file: exit ${_rc}, '${_err}'")
    endif()
    file(WRITE "${DIR}/foreign.json" "{\"schema\": \"dmmkit-compare/1\"}")
    execute_process(COMMAND "${PYTHON}" "${REPORT}" table --timing "${DIR}/foreign.json"
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 2 OR NOT _err MATCHES "foreign.json: schema is 'dmmkit-compare/1', expected dmmkit.workloads")
        message(FATAL_ERROR "replay_smoke: report.py on a foreign file: exit ${_rc}, '${_err}'")
    endif()
    message(STATUS "replay_smoke: report.py wrote ${DIR}/workloads.json and workloads.md; refused a damaged and a foreign file")
endif()

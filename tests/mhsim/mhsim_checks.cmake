# tests/mhsim/mhsim_checks.cmake - command-line checks of dmm-mhsim, run by
# ctest as `cmake -DSIM=<dmm-mhsim> -DOUT=<dir> -DMODE=<mode> -P this`.
#
#   determinism  two runs with the same inputs write byte-identical JSON;
#                another seed writes different JSON (so the comparison can fail)
#   badopts      every bad option exits 2 and says what is wrong
#   json         the JSON is self-describing: schema, every parameter echoed
#   offline      a node's heap fails partway through a run (--offline-at):
#                it served its core before, the others serve it after, the
#                frees of its blocks are refused and counted, the checker
#                passes, and no more allocations fail than without the fault
cmake_minimum_required(VERSION 3.25)

function(run_sim out_var rc_var err_var)
    execute_process(COMMAND "${SIM}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    set(${out_var} "${out}" PARENT_SCOPE)
    set(${rc_var} "${rc}" PARENT_SCOPE)
    set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

file(MAKE_DIRECTORY "${OUT}")

if(MODE STREQUAL "determinism")
    foreach(args IN ITEMS "--mesh;3x3;--policy;lazy;--workload;all;--seed;7"
                          "--mesh;2x3;--policy;priority;--remote-free;queue;--workload;fast;--per-node;32k;--seed;7")
        string(MD5 tag "${args}")
        foreach(i 1 2)
            run_sim(o rc e ${args} --quiet --json "${OUT}/det_${tag}_${i}.json")
            if(NOT rc EQUAL 0)
                message(FATAL_ERROR "run ${i} of '${args}' failed (${rc}): ${e}")
            endif()
        endforeach()
        file(READ "${OUT}/det_${tag}_1.json" a)
        file(READ "${OUT}/det_${tag}_2.json" b)
        if(NOT a STREQUAL b)
            message(FATAL_ERROR "two runs of '${args}' wrote different JSON")
        endif()
        string(LENGTH "${a}" n)
        if(n LESS 500)
            message(FATAL_ERROR "'${args}': JSON suspiciously short (${n} bytes)")
        endif()
    endforeach()
    # the comparison can fail: FAST's corner counts depend on the seed
    run_sim(o rc e --mesh 3x3 --workload fast --seed 8 --quiet --json "${OUT}/det_seed8.json")
    run_sim(o rc e --mesh 3x3 --workload fast --seed 7 --quiet --json "${OUT}/det_seed7.json")
    file(READ "${OUT}/det_seed8.json" a)
    file(READ "${OUT}/det_seed7.json" b)
    if(a STREQUAL b)
        message(FATAL_ERROR "seeds 7 and 8 gave the same JSON: the seed is not used")
    endif()
    message(STATUS "determinism: ok")
elseif(MODE STREQUAL "badopts")
    # "arg%arg|expected text on stderr"
    set(cases
        "--mesh%9x9|--mesh: '9x9' is not WxH"
        "--mesh%1x4|--mesh: '1x4' is not WxH"
        "--mesh%4|--mesh: '4' is not WxH"
        "--policy%fastest|unknown policy 'fastest'"
        "--remote-free%maybe|--remote-free: 'maybe' is not locked or queue"
        "--per-node%12q|--per-node: '12q' is not a size"
        "--workload%nbody|unknown workload 'nbody'"
        "--t-hop%-3|--t-hop: '-3' is not a number"
        "--flit-bytes%0|--flit-bytes: '0' is not a number in 1"
        "--sizes%3-9|--sizes: '3-9' is not A-B"
        "--policy%lazy,central|a list needs --sweep"
        "--sweep%--mesh%3x3|--mesh and --sweep exclude each other"
        "--probe-home%9%--workload%probe|--probe-home: node 9 is not on a 2x2 mesh"
        "--offline%4|--offline: node 4 is not on a 2x2 mesh"
        "--offline-at%100|--offline-at needs --offline N"
        "--heap%fit=sideways|--heap: 'fit=sideways'"
        "--frobnicate|unknown option '--frobnicate'"
        "stray|unexpected argument 'stray'")
    foreach(c IN LISTS cases)
        string(REPLACE "|" ";" pw "${c}")
        list(GET pw 1 want)
        list(GET pw 0 parts)
        string(REPLACE "%" ";" parts "${parts}")
        run_sim(o rc e ${parts})
        if(NOT rc EQUAL 2)
            message(FATAL_ERROR "'${parts}': exit ${rc}, expected 2 (stderr: ${e})")
        endif()
        string(FIND "${e}" "${want}" pos)
        if(pos EQUAL -1)
            message(FATAL_ERROR "'${parts}': stderr does not say \"${want}\": ${e}")
        endif()
    endforeach()
    # and a good command line exits 0
    run_sim(o rc e --mesh 2x2 --quiet)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "a good command line exited ${rc}: ${e}")
    endif()
    message(STATUS "badopts: ok")
elseif(MODE STREQUAL "json")
    run_sim(o rc e --mesh 4x2 --policy central --remote-free queue --final-pass --per-node 64k --seed 99
            --t-hop 3 --inject 5 --flit-bytes 8 --msg-bytes 24 --service-alloc 41 --service-free 31
            --workload gaussian --quiet --json -)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "run failed (${rc}): ${e}")
    endif()
    foreach(key_val IN ITEMS "schema|\"dmm-mhsim/1\"" "mesh_width|4" "mesh_height|2" "nodes|8"
                             "policy|\"central\"" "remote_free|\"queue\"" "final_pass|true" "per_node|65536"
                             "seed|99" "t_hop|3" "inject|5" "flit_bytes|8" "msg_bytes|24" "service_alloc|41"
                             "service_free|31" "workload|\"gaussian\"" "check|\"all invariants hold\"")
        string(REPLACE "|" ";" kv "${key_val}")
        list(GET kv 0 k)
        list(GET kv 1 v)
        string(JSON got ERROR_VARIABLE jerr GET "${o}" params ${k})
        if(jerr)
            string(JSON got ERROR_VARIABLE jerr GET "${o}" ${k})
        endif()
        if(jerr)
            string(JSON got ERROR_VARIABLE jerr GET "${o}" params costs ${k})
        endif()
        if(jerr)
            string(JSON got ERROR_VARIABLE jerr GET "${o}" runs 0 results ${k})
        endif()
        if(jerr)
            message(FATAL_ERROR "JSON has no '${k}': ${o}")
        endif()
        string(REGEX REPLACE "^\"(.*)\"$" "\\1" v "${v}")
        if(NOT got STREQUAL v AND NOT (got STREQUAL "ON" AND v STREQUAL "true"))
            message(FATAL_ERROR "JSON '${k}' = '${got}', expected '${v}'")
        endif()
    endforeach()
    string(JSON nn LENGTH "${o}" runs 0 nodes)
    if(NOT nn EQUAL 8)
        message(FATAL_ERROR "JSON lists ${nn} nodes, expected 8")
    endif()
    message(STATUS "json: ok")
elseif(MODE STREQUAL "offline")
    set(common --mesh 3x3 --workload fast --per-node 32k --quiet --json -)
    run_sim(base rc e ${common})
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "run without the fault failed (${rc}): ${e}")
    endif()
    run_sim(o rc e ${common} --offline 4 --offline-at 20000)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "run with the fault failed (${rc}): ${e}")
    endif()
    string(JSON at GET "${o}" runs 0 results offline_time)
    string(JSON chk GET "${o}" runs 0 results check)
    string(JSON fail GET "${o}" runs 0 results failures)
    string(JSON fail0 GET "${base}" runs 0 results failures)
    string(JSON local GET "${o}" runs 0 nodes 4 local_allocs)
    string(JSON local0 GET "${base}" runs 0 nodes 4 local_allocs)
    string(JSON served GET "${o}" runs 0 nodes 4 served_remote)
    string(JSON offfree GET "${o}" runs 0 nodes 4 offline_frees)
    string(JSON offfree0 GET "${base}" runs 0 nodes 4 offline_frees)
    if(at LESS 20000)
        message(FATAL_ERROR "the fault struck at ${at}, before --offline-at 20000")
    endif()
    if(NOT chk STREQUAL "all invariants hold")
        message(FATAL_ERROR "checker after the fault: ${chk}")
    endif()
    if(local EQUAL 0 OR NOT local LESS local0)
        message(FATAL_ERROR "node 4 served ${local} local allocations (${local0} without the fault): "
                            "expected some, but fewer")
    endif()
    if(served EQUAL 0)
        message(FATAL_ERROR "no other node served node 4's core after the fault")
    endif()
    if(offfree EQUAL 0 OR NOT offfree0 EQUAL 0)
        message(FATAL_ERROR "offline frees: ${offfree} with the fault, ${offfree0} without")
    endif()
    if(fail GREATER fail0)
        message(FATAL_ERROR "${fail} allocations failed with the fault, ${fail0} without")
    endif()
    message(STATUS "offline: ok (fault at ${at}; node 4: ${local} local before, ${served} served elsewhere, "
                   "${offfree} frees refused and kept)")
else()
    message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()

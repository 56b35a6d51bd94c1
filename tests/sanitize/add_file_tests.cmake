# Registers clustersim_tests with CTest one test per test source file rather than one per test
# case (tests/CMakeLists.txt: CLUSTERSIM_CTEST_PER_FILE, on in the sanitizer build). Run after the
# binary is linked, as Catch2's catch_discover_tests is: it asks the binary which files hold
# cases (Catch2's -# gives each case the tag [#<file name without .cpp>]) and writes OUTPUT, which
# CTest includes.
#   cases.<file>          the file's cases, hidden ([.]) and "(slow)" ones left out, in one process
#   cases.slow (slow)     every case named "(slow)", in one process; scripts/test.sh --sanitize
#                         skips it with -E '\(slow\)', as it skipped those cases one by one
# Under ASan each process start costs about 0.35 s of CPU (a 190 MB binary, its shadow memory and
# the leak check at exit), two thirds of what the median case takes; docs/building.md has the
# numbers. Each test runs through run_cases.sh, which on a failure runs each case alone and names
# the one that fails (a leak is reported at exit, after the last case).
# Variables: TEST_EXECUTABLE, RUNNER (run_cases.sh), CONFIG_DIR, WORKING_DIR, OUTPUT.
execute_process(COMMAND "${TEST_EXECUTABLE}" "-#" "~[.]~*(slow)*" --list-tags
                OUTPUT_VARIABLE tags_output RESULT_VARIABLE tags_result
                WORKING_DIRECTORY "${WORKING_DIR}")
# Catch2 v2 exits with the number of tags it listed (at most 255): only a crash is an error.
if(NOT tags_result MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${TEST_EXECUTABLE} --list-tags failed (${tags_result}):\n${tags_output}")
endif()
execute_process(COMMAND "${TEST_EXECUTABLE}" "~[.]*(slow)*" --list-test-names-only
                OUTPUT_VARIABLE slow_output RESULT_VARIABLE slow_result
                WORKING_DIRECTORY "${WORKING_DIR}")
if(NOT slow_result MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${TEST_EXECUTABLE} --list-test-names-only failed:\n${slow_output}")
endif()

set(script "")
set(properties "WORKING_DIRECTORY [==[${WORKING_DIR}]==] ENVIRONMENT [==[CLUSTERSIM_CONFIG_DIR=${CONFIG_DIR}]==] FAIL_REGULAR_EXPRESSION [==[No tests ran]==]")
string(REPLACE "\n" ";" tag_lines "${tags_output}")
set(files 0)
foreach(line IN LISTS tag_lines)
    if(line MATCHES "^ *([0-9]+) +\\[#([A-Za-z0-9_]+)\\]$")
        set(count ${CMAKE_MATCH_1})
        set(file ${CMAKE_MATCH_2})
        # COST: ctest -j starts the files with more cases first, so that a long one is not left
        # running alone at the end (a run's measured times replace it afterwards).
        string(APPEND script
            "add_test([==[cases.${file}]==] [==[${RUNNER}]==] [==[${TEST_EXECUTABLE}]==] [==[-#]==] [==[[#${file}]~[.]~*(slow)*]==])\n"
            "set_tests_properties([==[cases.${file}]==] PROPERTIES ${properties} COST ${count})\n")
        math(EXPR files "${files} + 1")
    endif()
endforeach()
if(files EQUAL 0)
    message(FATAL_ERROR "${TEST_EXECUTABLE} -# --list-tags listed no file tags:\n${tags_output}")
endif()
if(slow_output MATCHES "[^\n]")
    string(APPEND script
        "add_test([==[cases.slow (slow)]==] [==[${RUNNER}]==] [==[${TEST_EXECUTABLE}]==] [==[~[.]*(slow)*]==])\n"
        "set_tests_properties([==[cases.slow (slow)]==] PROPERTIES ${properties} COST 1000)\n")
endif()
file(WRITE "${OUTPUT}" "${script}")

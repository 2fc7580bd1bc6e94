# Role: the command line's self-description (cmake -P): `tracecorn --version`
# names tracecorn's version (the project's) and the Unicorn and Capstone it
# runs with (their major.minor equal to what pkg-config reports for the
# installed libraries), and every subcommand that `tracecorn --help` lists has
# a --help with a one-line description and an example of itself.
# Inputs: -DTRACECORN=path -DVERSION=x.y.z -DUNICORN_VERSION=a.b.c -DCAPSTONE_VERSION=a.b.c
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../../cli_checks.cmake)

execute_process(COMMAND ${TRACECORN} --version RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "tracecorn --version: exit status ${status}: ${err}")
endif()
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" uc_major_minor "${UNICORN_VERSION}")
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" cs_major_minor "${CAPSTONE_VERSION}")
string(REPLACE "." "\\." version_re "${VERSION}")
string(REPLACE "." "\\." uc_re "${uc_major_minor}")
string(REPLACE "." "\\." cs_re "${cs_major_minor}")
check_matches("${out}" "^tracecorn ${version_re}\nUnicorn ${uc_re} \\(built against [0-9.]+\\)\nCapstone ${cs_re} \\(built against [0-9.]+\\)\n$"
  "tracecorn --version (project ${VERSION}, pkg-config unicorn ${UNICORN_VERSION}, capstone ${CAPSTONE_VERSION}): ${out}")

execute_process(COMMAND ${TRACECORN} --help RESULT_VARIABLE status OUTPUT_VARIABLE help ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "tracecorn --help: exit status ${status}: ${err}")
endif()
check_contains("${help}" "--version" "tracecorn --help lists --version")
check_contains("${help}" "\nExamples:\n  tracecorn " "tracecorn --help has examples")
# The subcommands it lists: the lines after "Subcommands:", "  NAME   description".
string(FIND "${help}" "Subcommands:" at)
if(at EQUAL -1)
  message(FATAL_ERROR "tracecorn --help lists no subcommands: ${help}")
endif()
string(SUBSTRING "${help}" ${at} -1 listing)
string(FIND "${listing}" "\n\n" end)  # the listing ends at the first empty line
string(SUBSTRING "${listing}" 0 ${end} listing)
string(REGEX MATCHALL "\n  [a-z]+ +[A-Z][^\n]*" rows "${listing}")
set(subcommands "")
foreach(row IN LISTS rows)
  string(REGEX REPLACE "^\n  ([a-z]+) .*" "\\1" name "${row}")
  list(APPEND subcommands ${name})
endforeach()
foreach(expected run record dump replay stat convert recover debug why)
  if(NOT expected IN_LIST subcommands)
    message(FATAL_ERROR "tracecorn --help does not list '${expected}' (it lists: ${subcommands})")
  endif()
endforeach()

foreach(name IN LISTS subcommands)
  execute_process(COMMAND ${TRACECORN} ${name} --help RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "tracecorn ${name} --help: exit status ${status}: ${err}")
  endif()
  # CLI11 prints the description as the first line, then the usage.
  check_matches("${out}" "^[A-Z][^\n]+\nUsage: [^\n]*${name}" "tracecorn ${name} --help: a one-line description, then the usage: ${out}")
  check_matches("${out}" "\nExample:\n +tracecorn ${name} [^\n]+" "tracecorn ${name} --help: an example of '${name}': ${out}")
endforeach()
list(LENGTH subcommands count)
message(STATUS "--version and --help of ${count} subcommands checked")

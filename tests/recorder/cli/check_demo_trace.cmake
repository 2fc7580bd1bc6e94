# Role: the demo's checks (cmake -P): runs scripts/demo_trace.sh, the part of
# scripts/demo.sh that records and reads back (nothing installed or built), on
# the nested_calls sample and checks its output: the UCIR trace exists and is
# not empty, `tracecorn stat` names the sample and counts its write() calls,
# the dump shows the first write() with a call stack through main, the replay
# line says the re-run matches, and the host's environment is not printed.
# Inputs: -DSCRIPT=scripts/demo_trace.sh -DTRACECORN=path -DSAMPLE=path -DWORK_DIR=dir
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../../cli_checks.cmake)

file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND bash "${SCRIPT}" "${TRACECORN}" "${SAMPLE}" "${WORK_DIR}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "demo_trace.sh: exit status ${status}:\n${all}")
endif()

get_filename_component(name "${SAMPLE}" NAME)
set(trace "${WORK_DIR}/${name}.ucir")
if(NOT EXISTS "${trace}")
  message(FATAL_ERROR "demo_trace.sh wrote no ${trace}:\n${all}")
endif()
file(SIZE "${trace}" size)
if(size EQUAL 0)
  message(FATAL_ERROR "${trace} is empty")
endif()

# stat: the header names the sample's mappings; the syscalls table counts write().
check_matches("${out}" "== tracecorn stat [^\n]*\n# UCIR version 0, arch x86_64[^\n]*\n#   map [^\n]*/${name} " "stat names the sample")
check_matches("${out}" "\n  write [1-9][0-9]*\n" "stat counts the sample's write() calls")
# dump: the first write() and its call stack, symbolized, through the sample's main.
check_matches("${out}" "#[0-9]+ syscall 0x[0-9a-f]+ write\\(0x1, [^\n]+\n    regs [^\n]+\n    at 0x[0-9a-f]+ write\\+0x[0-9a-f]+ \\([^\n]*libc[^\n]*\n(    at [^\n]+\n)*    at 0x[0-9a-f]+ main\\+0x[0-9a-f]+ \\([^\n]*/${name}\\)"
  "dump shows the first write() with its call stack")
# replay: the re-run matches the trace.
check_matches("${all}" "tracecorn: [^\n]*${name}\\.ucir: replay matches: [1-9][0-9]* events" "replay matches")
check_contains("${out}" "The trace is ${trace} (${size} bytes)" "the demo says where the trace is")
# Nothing of the host's environment: the guest ran with --clear-env.
foreach(variable PATH HOME)
  if(DEFINED ENV{${variable}} AND NOT "$ENV{${variable}}" STREQUAL "")
    string(FIND "${all}" "${variable}=$ENV{${variable}}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "the demo printed the host's ${variable}")
    endif()
  endif()
endforeach()
message(STATUS "demo: ${trace} (${size} bytes) recorded, read and replayed")

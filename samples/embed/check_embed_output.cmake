# Role: the embed_examples test's driver (cmake -P, run by ctest; see CMakeLists.txt).
# Runs embed_example (C++ API) and embed_example_c (C API) and checks that:
# - both exit 0 and print "sum = 31 (expected 31)";
# - the trace has the loop as sum_snippet.h lists it: 60 instructions, each of
#   the 8 loads (`mov r8, qword ptr [rdi + rcx*8]` at 0x10009) followed by its
#   read of array[i] with the value, each store (0x10010) by its write of the
#   running sum, at the exact pcs (level full), and "# end: ... 0 lost";
# - both traces are the same, line for line, and so are the stats lines;
# - the C callback saw as many events as the trace has, 60 of them instructions.
# Inputs (-D): CPP_EXAMPLE, C_EXAMPLE (paths of the executables).
cmake_minimum_required(VERSION 3.25)

function(fail message)
  message(FATAL_ERROR "embed_examples: ${message}")
endfunction()

# Runs `program`; sets <prefix>_output to its stdout. Fails unless it exits 0.
function(run_example program prefix)
  execute_process(COMMAND "${program}" RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE errors
    TIMEOUT 30)
  if(NOT result EQUAL 0)
    fail("${program} exited with ${result}:\n${errors}\n${output}")
  endif()
  set(${prefix}_output "${output}" PARENT_SCOPE)
endfunction()

# Counts the lines of `text` that match `regex`.
function(count_lines text regex out)
  string(REGEX MATCHALL "(^|\n)${regex}" matches "${text}")
  list(LENGTH matches count)
  set(${out} ${count} PARENT_SCOPE)
endfunction()

# The event lines of a trace (the lines starting with '#'), as one string.
function(trace_lines text out)
  string(REGEX MATCHALL "#[^\n]*" lines "${text}")
  list(JOIN lines "\n" joined)
  set(${out} "${joined}" PARENT_SCOPE)
endfunction()

run_example("${CPP_EXAMPLE}" cpp)
run_example("${C_EXAMPLE}" c)

set(array 3 1 4 1 5 9 2 6)
foreach(name cpp c)
  set(text "${${name}_output}")
  if(NOT text MATCHES "\nsum = 31 \\(expected 31\\)\n")
    fail("${name}: no \"sum = 31 (expected 31)\" in:\n${text}")
  endif()
  if(NOT text MATCHES "\n# end: [0-9]+ events, 60 instructions, 0 lost\n")
    fail("${name}: the trace does not end with 60 instructions and nothing lost")
  endif()
  count_lines("${text}" "#[0-9]+ insn " instructions)
  if(NOT instructions EQUAL 60)
    fail("${name}: ${instructions} instruction events, expected 60")
  endif()
  # Each iteration: the load, its read, the add, the store, its write.
  set(sum 0)
  set(index 0)
  foreach(value IN LISTS array)
    math(EXPR sum "${sum} + ${value}")
    math(EXPR read_address "0x20000 + 8 * ${index}" OUTPUT_FORMAT HEXADECIMAL)
    math(EXPR write_address "0x20100 + 8 * ${index}" OUTPUT_FORMAT HEXADECIMAL)
    math(EXPR hex_value "${value}" OUTPUT_FORMAT HEXADECIMAL)
    math(EXPR hex_sum "${sum}" OUTPUT_FORMAT HEXADECIMAL)
    string(TOLOWER "${read_address}" read_address)
    string(TOLOWER "${write_address}" write_address)
    string(TOLOWER "${hex_value}" hex_value)
    string(TOLOWER "${hex_sum}" hex_sum)
    set(iteration "#[0-9]+ insn 0x10009 mov r8, qword ptr \\[rdi \\+ rcx\\*8\\]\n"
                  "#[0-9]+ read ${read_address} \\[8\\] = ${hex_value} pc 0x10009\n"
                  "#[0-9]+ regs 0x10009 r8=0x0*${value}\n"
                  "#[0-9]+ insn 0x1000d add rax, r8\n"
                  "#[0-9]+ regs 0x1000d [^\n]*rax=0x0*[0-9a-f]*\n"
                  "#[0-9]+ insn 0x10010 mov qword ptr \\[rdx \\+ rcx\\*8\\], rax\n"
                  "#[0-9]+ write ${write_address} \\[8\\] = ${hex_sum} pc 0x10010\n")
    string(JOIN "" iteration ${iteration})
    if(NOT text MATCHES "${iteration}")
      fail("${name}: iteration ${index} (load ${hex_value} from ${read_address}, store ${hex_sum} to "
           "${write_address}) is not in the trace:\n${text}")
    endif()
    math(EXPR index "${index} + 1")
  endforeach()
endforeach()

trace_lines("${cpp_output}" cpp_trace)
trace_lines("${c_output}" c_trace)
if(NOT cpp_trace STREQUAL c_trace)
  fail("the C and C++ examples' traces differ:\n--- C++\n${cpp_trace}\n--- C\n${c_trace}")
endif()
string(REGEX MATCH "\nstats: [^\n]*" cpp_stats "${cpp_output}")
string(REGEX MATCH "\nstats: [^\n]*" c_stats "${c_output}")
if(cpp_stats STREQUAL "" OR NOT cpp_stats STREQUAL c_stats)
  fail("stats differ: C++ \"${cpp_stats}\", C \"${c_stats}\"")
endif()
string(REGEX MATCH "\n# end: ([0-9]+) events" end_line "${c_output}")
set(trace_events "${CMAKE_MATCH_1}")
if(NOT c_output MATCHES "\ncallback: ${trace_events} events: [0-9]+ block, 60 insn, 8 read, 8 write, ")
  fail("the C callback's counts do not match the trace's ${trace_events} events:\n${c_output}")
endif()
message(STATUS "embed_examples: both traces have the loop's 60 instructions, 8 loads and 8 stores; "
               "${trace_events} events")

# Role: behaviour test of the UCIR command line: `tracecorn record --format ucir`
# on a sample (plain, zstd, strict) leaves the guest's behaviour alone, and
# `tracecorn dump` prints the trace: the header line, the initial mappings,
# instructions disassembled from the keyframe's memory, the syscalls and the exit.
# Run by CTest: cmake -DTRACECORN=... -DSAMPLE=... -DWORK_DIR=... -P this file.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

include(${CMAKE_CURRENT_LIST_DIR}/../../cli_checks.cmake)  # check_contains, check_matches


foreach(variant plain zstd strict)
  set(extra)
  if(variant STREQUAL "zstd")
    set(extra --compress zstd)
  elseif(variant STREQUAL "strict")
    set(extra --ucir-strict)
  endif()
  set(trace ${WORK_DIR}/${variant}.ucir)
  execute_process(COMMAND ${TRACECORN} record --format ucir --level insns ${extra} -o ${trace} -- ${SAMPLE}
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 3)
    message(FATAL_ERROR "record (${variant}): exit status ${status}, expected 3; stderr: ${err}")
  endif()
  check_contains("${out}" "hello from a tracecorn guest" "record (${variant}) stdout")
  file(READ ${trace} head LIMIT 4 HEX)
  if(variant STREQUAL "zstd")
    set(magic 28b52ffd)
  else()
    set(magic 55434952)
  endif()
  if(NOT head STREQUAL magic)
    message(FATAL_ERROR "record (${variant}): the file starts with ${head}, expected ${magic}")
  endif()
  execute_process(COMMAND ${TRACECORN} dump ${trace}
    RESULT_VARIABLE status OUTPUT_VARIABLE dump ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "dump (${variant}): exit status ${status}; stderr: ${err}")
  endif()
  check_contains("${dump}" "# UCIR version 0, arch x86_64, os linux" "dump (${variant})")
  # The text segment: named after the program, backed by it from offset 0x1000 (readelf -l: its PT_LOAD's offset).
  check_matches("${dump}" "#   map 0x[0-9a-f]+-0x[0-9a-f]+ prot 5 [^\n]*/hello \\(file [^\n]*/hello offset 0x1000, 0x[0-9a-f]+ bytes\\)\n"
    "dump (${variant})")
  check_matches("${dump}" "#   map 0x[0-9a-f]+-0x[0-9a-f]+ prot 3 \\[stack\\]\n" "dump (${variant})")
  check_matches("${dump}" "# UCIR version 0, arch x86_64, os linux(, zstd)?, pid [1-9][0-9]*;" "dump (${variant})")
  # The entry point's first instruction, disassembled from the keyframe's memory.
  check_matches("${dump}" "#1 insn 0x[0-9a-f]+ xor ebp, ebp\n" "dump (${variant})")
  check_contains("${dump}" " syscall " "dump (${variant})")
  check_contains("${dump}" "write(0x1, " "dump (${variant})")
  check_contains("${dump}" " exit status 3" "dump (${variant})")
endforeach()

# A trace cut short (a killed recording) is dumped up to its last complete frame, then an error (exit 125).
file(READ ${WORK_DIR}/plain.ucir whole HEX)
string(LENGTH "${whole}" hex_length)
math(EXPR keep "${hex_length} / 2 - 1000")
execute_process(COMMAND ${CMAKE_COMMAND} -E echo "" OUTPUT_QUIET)
execute_process(COMMAND head -c ${keep} ${WORK_DIR}/plain.ucir OUTPUT_FILE ${WORK_DIR}/cut.ucir)
execute_process(COMMAND ${TRACECORN} dump ${WORK_DIR}/cut.ucir
  RESULT_VARIABLE status OUTPUT_VARIABLE dump ERROR_VARIABLE err)
if(NOT status EQUAL 125)
  message(FATAL_ERROR "dump (cut): exit status ${status}, expected 125; stderr: ${err}")
endif()
check_contains("${err}" "cut.ucir: the file ends early: the trace ends inside the OP_FRAME" "dump (cut) stderr")

# Not a UCIR file: a clear error, exit status 125.
execute_process(COMMAND ${TRACECORN} dump ${SAMPLE} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 125)
  message(FATAL_ERROR "dump (not UCIR): exit status ${status}, expected 125")
endif()
check_contains("${err}" "not a UCIR file" "dump (not UCIR) stderr")

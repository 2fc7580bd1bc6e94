# Role: behaviour test of the binary trace command line: `tracecorn record
# --format bintrace` on a sample (plain and zstd) leaves the guest's behaviour
# alone and writes a file that starts with the metadata magic; `tracecorn dump`
# picks the binary trace reader by the file's first bytes and prints the
# declarations, disassembled instructions, the syscalls and the exit; a level
# without per-instruction registers is refused.
# Run by CTest: cmake -DTRACECORN=... -DSAMPLE=... -DWORK_DIR=... -P this file.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

include(${CMAKE_CURRENT_LIST_DIR}/../../cli_checks.cmake)  # check_contains, check_matches

foreach(variant none zstd)
  set(trace ${WORK_DIR}/${variant}.bt)
  execute_process(COMMAND ${TRACECORN} record --format bintrace --level full --compress ${variant} -o ${trace} -- ${SAMPLE}
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 3)
    message(FATAL_ERROR "record (${variant}): exit status ${status}, expected 3; stderr: ${err}")
  endif()
  check_contains("${out}" "hello from a tracecorn guest" "record (${variant}) stdout")
  file(READ ${trace} head LIMIT 8 HEX)
  if(NOT head STREQUAL "73726e69626e7672")  # u64 0x72766e62696e7273, little endian
    message(FATAL_ERROR "record (${variant}): the file starts with ${head}, expected the metadata magic")
  endif()
  if(EXISTS ${trace}.events.part)
    message(FATAL_ERROR "record (${variant}): the events spool was left behind")
  endif()
  execute_process(COMMAND ${TRACECORN} dump ${trace}
    RESULT_VARIABLE status OUTPUT_VARIABLE dump ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "dump (${variant}): exit status ${status}; stderr: ${err}")
  endif()
  check_contains("${dump}" "# binary trace 1.0.0 by tracecorn" "dump (${variant})")
  check_contains("${dump}" "static cpuid_max_phy_addr" "dump (${variant})")
  check_contains("${dump}" "insn 0x401570 xor ebp, ebp" "dump (${variant})")
  check_contains("${dump}" "syscall 0x" "dump (${variant})")
  check_contains("${dump}" "exit status 3" "dump (${variant})")
endforeach()

execute_process(COMMAND ${TRACECORN} record --format bintrace --level insns -o ${WORK_DIR}/insns.bt -- ${SAMPLE}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 125)
  message(FATAL_ERROR "record --level insns: exit status ${status}, expected 125")
endif()
check_contains("${err}" "--level regs or full" "record --level insns stderr")

# Role: behaviour test of the BAP frames command line: `tracecorn record
# --format frames` (plain and zstd) leaves the guest's behaviour alone and
# `tracecorn dump` recognises the file by its content and prints it: the header
# and meta lines, instructions, memory, registers, the write syscall. A copy
# cut short (a killed recording: T = 0) dumps what it can, then exits 125
# naming where it ends. Filters that would leave register values stale are refused.
# Run by CTest: cmake -DTRACECORN=... -DSAMPLE=... -DWORK_DIR=... -P this file.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

include(${CMAKE_CURRENT_LIST_DIR}/../../cli_checks.cmake)  # check_contains, check_matches

foreach(variant plain zstd)
  set(extra)
  set(magic 2560af8a)  # 7456879624156307493 = 0x677c28828aaf6025, little endian
  if(variant STREQUAL "zstd")
    set(extra --compress zstd)
    set(magic 28b52ffd)
  endif()
  set(trace ${WORK_DIR}/${variant}.frames)
  execute_process(COMMAND ${TRACECORN} record --format frames ${extra} -o ${trace} -- ${SAMPLE}
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 3)
    message(FATAL_ERROR "record (${variant}): exit status ${status}, expected 3; stderr: ${err}")
  endif()
  check_contains("${out}" "hello from a tracecorn guest" "record (${variant}) stdout")
  file(READ ${trace} head LIMIT 4 HEX)
  if(NOT head STREQUAL magic)
    message(FATAL_ERROR "record (${variant}): the file starts with ${head}, expected ${magic}")
  endif()
  execute_process(COMMAND ${TRACECORN} dump ${trace} RESULT_VARIABLE status OUTPUT_VARIABLE dump ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "dump (${variant}): exit status ${status}; stderr: ${err}")
  endif()
  check_contains("${dump}" "# BAP frames version 3, frame_architecture 9, frame_machine 64 (x86_64)" "dump (${variant})")
  check_contains("${dump}" "# tracer tracecorn" "dump (${variant})")
  check_contains("${dump}" " insn 0x" "dump (${variant})")
  check_contains("${dump}" " write 0x" "dump (${variant})")
  check_contains("${dump}" " regs 0x" "dump (${variant})")
  check_contains("${dump}" "write(0x1, " "dump (${variant})")
  if(NOT err STREQUAL "")
    message(FATAL_ERROR "dump (${variant}): unexpected stderr: ${err}")
  endif()
endforeach()

# Cut short, with n and T still 0 as while recording: read up to the last complete frame.
file(SIZE ${WORK_DIR}/plain.frames size)
math(EXPR keep "${size} / 2")
execute_process(COMMAND head -c ${keep} ${WORK_DIR}/plain.frames OUTPUT_FILE ${WORK_DIR}/cut.frames)
execute_process(COMMAND /usr/bin/python3 -c "import sys; f=open(sys.argv[1],'r+b'); f.seek(32); f.write(bytes(16))"
  ${WORK_DIR}/cut.frames RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "could not clear n and T")
endif()
execute_process(COMMAND ${TRACECORN} dump ${WORK_DIR}/cut.frames RESULT_VARIABLE status OUTPUT_VARIABLE dump ERROR_VARIABLE err)
if(NOT status EQUAL 125)
  message(FATAL_ERROR "dump (cut): exit status ${status}, expected 125 (printed, then an error); stderr: ${err}")
endif()
# (Inside a frame, or, when half the file falls between two frames, after the last one.)
if(NOT err MATCHES "cut\\.frames: the file ends early: (the trace ends inside frame [0-9]+ at offset 0x|the trace has no TOC \\(T = 0: the recording did not finish\\); read its [0-9]+ complete frames, which end at offset 0x)")
  message(FATAL_ERROR "dump (cut) stderr: expected where the frames end, in: ${err}")
endif()

execute_process(COMMAND ${TRACECORN} record --format frames --only-main -o ${WORK_DIR}/x.frames -- ${SAMPLE}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 125)
  message(FATAL_ERROR "record --only-main: exit status ${status}, expected 125")
endif()
check_contains("${err}" "register values would be stale" "record --only-main stderr")

# Role: behaviour test of the commands that read traces back: a sample is
# recorded in each format; `tracecorn replay` matches (exit 0, the guest's
# output not printed again), `stat` counts its syscalls, `convert` to another
# format says what the target cannot carry and the result replays, the drcov
# and chrome exports are written; a trace cut short or damaged gives every
# command (dump, stat, replay, convert to every format and export) a message
# naming the file and a byte offset, and exit status 125; a failed convert or
# export leaves no output (nor a temporary file beside it); stat's hottest
# blocks, dump's blocks and faults are named (symbol+offset (module)).
# Run by CTest: cmake -DTRACECORN=... -DSAMPLE=... -DWORK_DIR=... -P this file.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

include(${CMAKE_CURRENT_LIST_DIR}/../../cli_checks.cmake)  # check_contains, check_matches

foreach(format ucir frames bintrace)
  set(trace ${WORK_DIR}/trace.${format})
  execute_process(COMMAND ${TRACECORN} record --format ${format} --level full -o ${trace} -- ${SAMPLE}
    RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
  if(NOT status EQUAL 3)
    message(FATAL_ERROR "record ${format}: exit status ${status}")
  endif()
  execute_process(COMMAND ${TRACECORN} replay ${trace} -- ${SAMPLE}
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "replay ${format}: exit status ${status}: ${out} ${err}")
  endif()
  check_contains("${out}" "replay matches" "replay ${format}")
  string(FIND "${out}" "hello from a tracecorn guest" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "replay ${format}: the guest's output was printed again")
  endif()
  execute_process(COMMAND ${TRACECORN} stat ${trace} RESULT_VARIABLE status OUTPUT_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "stat ${format}: exit status ${status}")
  endif()
  check_contains("${out}" "  write 2" "stat ${format}")
  check_contains("${out}" "hottest blocks" "stat ${format}")
  # The hottest blocks are named as call stacks are: symbol+offset (module).
  check_matches("${out}" "hottest blocks[^\n]*\n  0x[0-9a-f]+ [0-9]+ [A-Za-z_][A-Za-z0-9_.]*\\+0x[0-9a-f]+ \\(${SAMPLE}\\)\n"
    "stat ${format}: the hottest block named")
  # So are dump's blocks (the first one is the program's entry).
  execute_process(COMMAND ${TRACECORN} dump --kind block --events 0-200 ${trace} RESULT_VARIABLE status OUTPUT_VARIABLE out)
  if(format STREQUAL "ucir")
    check_matches("${out}" "\n#[0-9]+ block 0x[0-9a-f]+ size [0-9]+ insns [0-9]+ _start\\+0x0 \\(${SAMPLE}\\)\n"
      "dump ${format}: the entry block named")
  endif()
  foreach(export drcov chrome)
    execute_process(COMMAND ${TRACECORN} convert ${trace} ${WORK_DIR}/out.${export} --format ${export}
      RESULT_VARIABLE status ERROR_VARIABLE err)
    if(NOT status EQUAL 0)
      message(FATAL_ERROR "convert ${format} to ${export}: exit status ${status}: ${err}")
    endif()
  endforeach()
endforeach()

# BAP frames at the regs level hold register values but neither the memory nor
# what reads got: the re-run's random bytes (AT_RANDOM) would differ, so replay
# refuses it with the reason, naming the file.
execute_process(COMMAND ${TRACECORN} record --format frames --level regs -o ${WORK_DIR}/regs.frames -- ${SAMPLE}
  RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
execute_process(COMMAND ${TRACECORN} replay ${WORK_DIR}/regs.frames RESULT_VARIABLE status ERROR_VARIABLE err OUTPUT_QUIET)
if(status EQUAL 0)
  message(FATAL_ERROR "replay of BAP frames at the regs level: exit status 0")
endif()
check_contains("${err}" "${WORK_DIR}/regs.frames: the trace has register values but neither the initial memory"
  "replay frames regs")
check_contains("${err}" "record it at --level full, or in UCIR" "replay frames regs")

# A fault's pc is named too (BAP frames carry faults): the segfault sample's write through NULL in main.
get_filename_component(samples_dir ${SAMPLE} DIRECTORY)
execute_process(COMMAND ${TRACECORN} record --format frames --level blocks -o ${WORK_DIR}/segfault.frames
  -- ${samples_dir}/segfault RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
execute_process(COMMAND ${TRACECORN} dump --kind fault ${WORK_DIR}/segfault.frames RESULT_VARIABLE status OUTPUT_VARIABLE out)
check_matches("${out}" "\n#[0-9]+ fault pc 0x[0-9a-f]+ [^\n]*SIGSEGV[^\n]*; at main\\+0x[0-9a-f]+ \\(${samples_dir}/segfault\\)\n"
  "dump of a fault: its pc named")

# UCIR to a binary trace: what is lost is said; the result replays.
execute_process(COMMAND ${TRACECORN} convert ${WORK_DIR}/trace.ucir ${WORK_DIR}/converted.bt --format bintrace --compress zstd
  RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "convert: exit status ${status}: ${err}")
endif()
check_contains("${err}" "bintrace cannot carry block events" "convert stderr")
execute_process(COMMAND ${TRACECORN} replay ${WORK_DIR}/converted.bt -- ${SAMPLE} RESULT_VARIABLE status OUTPUT_VARIABLE out)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "replay of the converted trace: exit status ${status}: ${out}")
endif()

# Damaged (runs of 64 bytes of 0xff near the end, over the events) and
# truncated (cut at 60%) copies of each file: every command (dump, stat, replay, convert to
# each format and export) fails with exit status 125 and a message naming the
# file and a byte offset, and a failed convert or export leaves no output; never a
# crash, never a silent success.
foreach(format ucir frames bintrace)
  file(READ ${WORK_DIR}/trace.${format} hex HEX)
  string(LENGTH "${hex}" hex_length)
  # Several runs of 0xff (one may fall where a format cannot tell, such as
  # initial memory bytes or a binary trace's description strings; the others not).
  string(REPEAT "ff" 64 garbage)
  set(damaged_hex "${hex}")
  foreach(per_mille 960 975 990 997)
    math(EXPR at "${hex_length} * ${per_mille} / 1000 / 2 * 2")
    string(SUBSTRING "${damaged_hex}" 0 ${at} before)
    math(EXPR after_at "${at} + 128")
    string(SUBSTRING "${damaged_hex}" ${after_at} -1 after)
    set(damaged_hex "${before}${garbage}${after}")
  endforeach()
  math(EXPR cut "${hex_length} * 6 / 10 / 2 * 2")
  string(SUBSTRING "${hex}" 0 ${cut} truncated_hex)
  # Write the bytes back through a hex file and xxd -r -p (Debian's xxd).
  file(WRITE ${WORK_DIR}/damaged.hex "${damaged_hex}")
  execute_process(COMMAND xxd -r -p ${WORK_DIR}/damaged.hex ${WORK_DIR}/damaged.${format})
  file(WRITE ${WORK_DIR}/truncated.hex "${truncated_hex}")
  execute_process(COMMAND xxd -r -p ${WORK_DIR}/truncated.hex ${WORK_DIR}/truncated.${format})
  foreach(variant damaged truncated)
    set(bad ${WORK_DIR}/${variant}.${format})
    foreach(command dump stat replay ucir frames bintrace drcov chrome)
      if(command MATCHES "^(dump|stat)$")
        set(args ${command} ${bad})
      elseif(command STREQUAL "replay")
        set(args replay ${bad} -- ${SAMPLE})
      else()
        set(out ${WORK_DIR}/${variant}.out.${command})
        file(REMOVE ${out})
        set(args convert ${bad} ${out} --format ${command})
      endif()
      execute_process(COMMAND ${TRACECORN} ${args} RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE err)
      if(NOT status EQUAL 125)
        message(FATAL_ERROR "${args} (a ${variant} ${format} trace): exit status ${status}, expected 125: ${err}")
      endif()
      check_contains("${err}" "${bad}" "${args}: the message names the file")
      check_matches("${err}" "offset (0x[0-9a-f]+|[0-9]+)" "${args}: the message gives a byte offset")
      # A failed conversion or export leaves nothing a reader could take for
      # the converted trace: no output, no temporary file beside it.
      if(args MATCHES "^convert")
        file(GLOB left ${out} ${out}.*)
        if(left)
          message(FATAL_ERROR "${args} failed but left ${left}")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

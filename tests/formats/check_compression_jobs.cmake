# Role: behaviour test of zstd's worker threads and level (--jobs,
# --compress-level) on a real program: busybox sha256sum of 8 KiB recorded at
# the full level (about 10 MB of UCIR: two zstd jobs of 8 MiB). A conversion with
# --jobs 1 and --jobs 4 writes the same bytes (UCIR); every compressed file,
# whatever --jobs (0 included), decompresses to the plain conversion's bytes;
# a binary trace's events are the same with 1 and 4 workers (its header
# carries the time of writing), and so are BAP frames' encoded on 0 and 4
# threads, plain and zstd; a recording with --jobs 3 has the events of
# a plain one; level 12 writes a smaller file than level 1; the default
# level is 1 for a full-level trace and 3 for a blocks-level one; --jobs
# without --compress zstd, or out of range, is refused naming the option.
# Run by CTest: cmake -DTRACECORN=... -DBUSYBOX=... -DZSTD=... -DWORK_DIR=... -P this file.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

include(${CMAKE_CURRENT_LIST_DIR}/../cli_checks.cmake)  # check_contains

# The input: the same 64-byte line, 128 times.
set(line "tracecorn compression input, a line of exactly sixty-four bytes\n")
string(REPEAT "${line}" 128 input)
file(WRITE ${WORK_DIR}/input.txt "${input}")
file(SHA256 ${WORK_DIR}/input.txt digest)

function(run_ok what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what}: exit status ${status}; stderr: ${err}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

# The recording the conversions start from (plain UCIR).
# record(NAME LEVEL [OPTIONS...]): the workload recorded into UCIR.
function(record name level)
  run_ok("record ${name}" ${TRACECORN} record --format ucir --level ${level} ${ARGN} -o ${WORK_DIR}/${name}
         -- ${BUSYBOX} sha256sum ${WORK_DIR}/input.txt)
  check_contains("${run_out}" "${digest}" "record ${name}: the guest's digest")
endfunction()
record(base.ucir full)

# What a compressed file decompresses to, by the zstd CLI (an independent decoder).
function(decompressed_hash file out_var)
  run_ok("zstd -d ${file}" ${ZSTD} -q -d -f ${file} -o ${file}.raw)
  file(SHA256 ${file}.raw hash)
  file(REMOVE ${file}.raw)
  set(${out_var} ${hash} PARENT_SCOPE)
endfunction()

run_ok("convert plain" ${TRACECORN} convert ${WORK_DIR}/base.ucir ${WORK_DIR}/plain.ucir --format ucir)
file(SHA256 ${WORK_DIR}/plain.ucir plain_hash)
foreach(jobs 0 1 4)
  run_ok("convert --jobs ${jobs}" ${TRACECORN} convert ${WORK_DIR}/base.ucir ${WORK_DIR}/jobs${jobs}.ucir
         --format ucir --compress zstd --jobs ${jobs})
  decompressed_hash(${WORK_DIR}/jobs${jobs}.ucir hash)
  if(NOT hash STREQUAL plain_hash)
    message(FATAL_ERROR "convert --jobs ${jobs}: decompresses to other bytes than the plain conversion")
  endif()
endforeach()
file(SHA256 ${WORK_DIR}/jobs1.ucir jobs1_hash)
file(SHA256 ${WORK_DIR}/jobs4.ucir jobs4_hash)
if(NOT jobs1_hash STREQUAL jobs4_hash)
  message(FATAL_ERROR "convert: --jobs 1 and --jobs 4 wrote different bytes")
endif()
# The workers reach zstd: compressing on the writer's thread cuts the stream
# elsewhere than zstd's jobs do.
file(SHA256 ${WORK_DIR}/jobs0.ucir jobs0_hash)
if(jobs0_hash STREQUAL jobs1_hash)
  message(FATAL_ERROR "convert: --jobs 0 and --jobs 1 wrote the same bytes: the workers did not reach zstd")
endif()

# A binary trace: its events (the dump from the first event on) are the same.
foreach(jobs 1 4)
  run_ok("convert bintrace --jobs ${jobs}" ${TRACECORN} convert ${WORK_DIR}/base.ucir ${WORK_DIR}/jobs${jobs}.bt
         --format bintrace --compress zstd --jobs ${jobs})
  run_ok("dump bintrace --jobs ${jobs}" ${TRACECORN} dump --kind syscall,regs ${WORK_DIR}/jobs${jobs}.bt)
  string(FIND "${run_out}" "\n#" first_event)
  string(SUBSTRING "${run_out}" ${first_event} -1 bintrace_events_${jobs})
endforeach()
if(NOT bintrace_events_1 STREQUAL bintrace_events_4)
  message(FATAL_ERROR "convert bintrace: --jobs 1 and --jobs 4 give different events")
endif()
check_contains("${bintrace_events_1}" " syscall " "dump bintrace")

# BAP frames encoded on 4 threads, plain (--jobs needs no zstd there) and
# zstd: the same frames as on the writer's thread (the frames after the meta
# frame, which carries the time of writing: the dump from the first event on).
foreach(variant "0" "4" "4;--compress;zstd")
  list(GET variant 0 jobs)
  string(REPLACE ";" "" name "frames${variant}")
  run_ok("convert frames --jobs ${variant}" ${TRACECORN} convert ${WORK_DIR}/base.ucir ${WORK_DIR}/${name}
         --format frames --jobs ${variant})
  run_ok("dump frames --jobs ${variant}" ${TRACECORN} dump ${WORK_DIR}/${name})
  string(FIND "${run_out}" "\n#0 " first_event)
  string(SUBSTRING "${run_out}" ${first_event} -1 frames_events_${name})
  if(NOT frames_events_${name} STREQUAL frames_events_frames0)
    message(FATAL_ERROR "convert frames --jobs ${variant}: other frames than --jobs 0")
  endif()
endforeach()
check_contains("${frames_events_frames0}" " syscall " "dump frames")
file(SIZE ${WORK_DIR}/frames0 size0)
file(SIZE ${WORK_DIR}/frames4 size4)
if(NOT size0 EQUAL size4)
  message(FATAL_ERROR "convert frames: --jobs 0 wrote ${size0} bytes, --jobs 4 ${size4}")
endif()
run_ok("record frames --jobs 2" ${TRACECORN} record --format frames --level full --jobs 2 -o ${WORK_DIR}/recorded.frames
       -- ${BUSYBOX} sha256sum ${WORK_DIR}/input.txt)
check_contains("${run_out}" "${digest}" "record frames --jobs 2: the guest's digest")
run_ok("stat recorded.frames" ${TRACECORN} stat ${WORK_DIR}/recorded.frames)
check_contains("${run_out}" "insn " "stat of the frames recorded with --jobs 2")

# Recorded directly with 3 workers: as many events of each kind as the
# plain recording (but regs: an instruction that writes a register's own
# value again is no change, and the guest's pid, which differs, flows into
# a few registers).
record(jobs3.ucir full --compress zstd --jobs 3)
foreach(trace base jobs3)
  run_ok("stat ${trace}" ${TRACECORN} stat ${WORK_DIR}/${trace}.ucir)
  string(REGEX MATCHALL "\n[a-z]+ +[0-9]+" kinds_${trace} "${run_out}")
  list(FILTER kinds_${trace} EXCLUDE REGEX "regs")
endforeach()
if(NOT kinds_jobs3 STREQUAL kinds_base)
  message(FATAL_ERROR "record --jobs 3: other events than the plain recording: ${kinds_jobs3} and ${kinds_base}")
endif()
check_contains("${kinds_jobs3}" "\ninsn " "stat of the recording")

# The level reaches zstd: 12 is smaller than 1.
foreach(level 1 12)
  run_ok("convert --compress-level ${level}" ${TRACECORN} convert ${WORK_DIR}/base.ucir ${WORK_DIR}/level${level}.ucir
         --format ucir --compress zstd --compress-level ${level})
  file(SIZE ${WORK_DIR}/level${level}.ucir size_${level})
endforeach()
if(NOT size_12 LESS size_1)
  message(FATAL_ERROR "--compress-level 12 wrote ${size_12} bytes, level 1 ${size_1}: the level did not reach zstd")
endif()

# Without --compress-level, the level follows the trace's detail: 1 with
# every instruction's registers (this full-level trace), 3 without (a
# blocks-level recording of the same program).
record(blocks.ucir blocks)
foreach(trace_level base:1 blocks:3)
  string(REPLACE ":" ";" pair "${trace_level}")
  list(GET pair 0 trace)
  list(GET pair 1 level)
  foreach(given default ${level})
    set(level_args)
    if(NOT given STREQUAL "default")
      set(level_args --compress-level ${given})
    endif()
    run_ok("convert ${trace} level ${given}" ${TRACECORN} convert ${WORK_DIR}/${trace}.ucir
           ${WORK_DIR}/${trace}.${given}.zst.ucir --format ucir --compress zstd --jobs 1 ${level_args})
    file(SHA256 ${WORK_DIR}/${trace}.${given}.zst.ucir hash_${given})
  endforeach()
  if(NOT hash_default STREQUAL hash_${level})
    message(FATAL_ERROR "convert ${trace}: the default level is not ${level}")
  endif()
endforeach()

# Without zstd the options are a mistake, said so (exit 125).
execute_process(COMMAND ${TRACECORN} convert ${WORK_DIR}/base.ucir ${WORK_DIR}/refused.ucir --format ucir --jobs 2
  RESULT_VARIABLE status ERROR_VARIABLE err OUTPUT_QUIET)
if(NOT status EQUAL 125)
  message(FATAL_ERROR "convert --jobs without --compress zstd: exit status ${status}, expected 125")
endif()
check_contains("${err}" "--jobs: needs --compress zstd (or --format frames)" "convert --jobs without zstd")
execute_process(COMMAND ${TRACECORN} record --format ucir --compress-level 5 -o ${WORK_DIR}/refused.ucir -- ${BUSYBOX} true
  RESULT_VARIABLE status ERROR_VARIABLE err OUTPUT_QUIET)
if(NOT status EQUAL 125)
  message(FATAL_ERROR "record --compress-level without --compress zstd: exit status ${status}, expected 125")
endif()
check_contains("${err}" "--compress-level: needs --compress zstd" "record --compress-level without zstd")
# Out of range: refused before anything runs, naming the option (exit 125).
foreach(bad "--jobs;17" "--jobs;-1" "--compress-level;0" "--compress-level;20")
  list(GET bad 0 option)
  execute_process(COMMAND ${TRACECORN} convert ${WORK_DIR}/base.ucir ${WORK_DIR}/refused.ucir --format ucir
                  --compress zstd ${bad} RESULT_VARIABLE status ERROR_VARIABLE err OUTPUT_QUIET)
  if(NOT status EQUAL 125)
    message(FATAL_ERROR "convert ${bad}: exit status ${status}, expected 125")
  endif()
  check_contains("${err}" "${option}" "convert ${bad}")
  if(EXISTS ${WORK_DIR}/refused.ucir)
    message(FATAL_ERROR "convert ${bad}: left ${WORK_DIR}/refused.ucir")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})

# Role: the containment tests (issue 10), run with cmake -P by the ctest entries
# containment.* (tests/recorder/linux/containment_tests.cmake): each MODE runs
# one hostile guest of samples/guest/hostile under `tracecorn run` and checks
#   - what it got against a reference nobody here wrote: the same static
#     binary run natively in a chroot of an identical tree (escape), in a chroot
#     of a read-only bind mount of it (read_only), under `prlimit --as` (memory),
#     or natively (net);
#   - that nothing outside the tree was read (the canary texts, in the tree's
#     parent and at an absolute path, never appear in its output) or changed
#     (a snapshot of the listing, modes, sizes, link targets and SHA-256 of every
#     file outside the tree is identical before and after; under --read-only the
#     tree's own snapshot too);
#   - that each refusal is named on stderr.
# Inputs (-D): TRACECORN, HOSTILE_DIR (build/samples/guest/hostile), WORK_DIR,
# MODE (escape|read_only|memory|spawn|outside_tree|busybox_pipeline|limits|big_write|net),
# VARIANT (static|static-pie|dynamic), BUSYBOX (busybox_pipeline).
# Invariants: every run is bounded (TIMEOUT); WORK_DIR is wiped first; the
# native reference runs only inside a throw-away tree (chroot), never on the
# host's own files; when the host cannot chroot or mount (no privileges), the
# reference comparison is skipped with a message and the other checks still run.
cmake_minimum_required(VERSION 3.20)
include(${CMAKE_CURRENT_LIST_DIR}/../../cli_checks.cmake)

foreach(required TRACECORN HOSTILE_DIR WORK_DIR MODE)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "check_containment: -D${required}= is required")
  endif()
endforeach()
if(NOT DEFINED VARIANT)
  set(VARIANT static)
endif()
set(guest_dir "${HOSTILE_DIR}/${VARIANT}")

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/abs")
string(RANDOM LENGTH 12 nonce)
set(parent_canary "CANARY-PARENT-${nonce}")
set(absolute_canary "CANARY-ABSOLUTE-${nonce}")
set(absolute_canary_path "${WORK_DIR}/abs/canary.txt")
file(WRITE "${WORK_DIR}/canary.txt" "${parent_canary}\n")
file(WRITE "${absolute_canary_path}" "${absolute_canary}\n")

# The tree a hostile guest is confined to (see samples/guest/hostile/*.c for what
# they expect): /inside.txt, /sub/, /fifo, links pointing out, a symlink loop.
function(make_tree dir program)
  file(MAKE_DIRECTORY "${dir}/sub")
  file(WRITE "${dir}/inside.txt" "inside\n")
  file(CREATE_LINK "${absolute_canary_path}" "${dir}/abs_link" SYMBOLIC)
  file(CREATE_LINK "../canary.txt" "${dir}/rel_link" SYMBOLIC)
  file(CREATE_LINK "loop_b" "${dir}/loop_a" SYMBOLIC)
  file(CREATE_LINK "loop_a" "${dir}/loop_b" SYMBOLIC)
  execute_process(COMMAND mkfifo "${dir}/fifo" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mkfifo ${dir}/fifo failed")
  endif()
  file(COPY "${guest_dir}/${program}" DESTINATION "${dir}")
  if(VARIANT STREQUAL "dynamic")
    # The interpreter and libraries the program needs, at the paths ldd names.
    execute_process(COMMAND ldd "${guest_dir}/${program}" OUTPUT_VARIABLE libraries RESULT_VARIABLE rc)
    string(REGEX MATCHALL "(=> )?/[^ \n]+ \\(0x" paths "${libraries}")
    foreach(path IN LISTS paths)
      string(REGEX REPLACE "^(=> )?(/[^ ]+) \\(0x$" "\\2" path "${path}")
      get_filename_component(folder "${path}" DIRECTORY)
      file(MAKE_DIRECTORY "${dir}${folder}")
      file(COPY_FILE "${path}" "${dir}${path}")
    endforeach()
  endif()
endfunction()

# Everything under `dir` (optionally without the entry `prune`, a name relative
# to `dir`): type, mode, size, link target and SHA-256 per entry, sorted, paths
# relative to `dir`.
function(snapshot dir prune out_var)
  set(prune_args)
  if(prune)
    set(prune_args -path "./${prune}" -prune -o)
  endif()
  execute_process(COMMAND find . ${prune_args} -printf "%P %y %m %s %l\n" WORKING_DIRECTORY "${dir}"
                  OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "find ${dir} failed")
  endif()
  execute_process(COMMAND find . ${prune_args} -type f -exec sha256sum {} + WORKING_DIRECTORY "${dir}"
                  OUTPUT_VARIABLE sums RESULT_VARIABLE rc)
  string(REPLACE "\n" ";" listing_lines "${listing}")
  string(REPLACE "\n" ";" sum_lines "${sums}")
  list(SORT listing_lines)
  list(SORT sum_lines)
  set(${out_var} "${listing_lines}\n${sum_lines}" PARENT_SCOPE)
endfunction()

# Runs tracecorn: sets run_rc, run_out, run_err in the caller.
function(run_tracecorn)
  execute_process(COMMAND "${TRACECORN}" run ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
  set(run_rc "${rc}" PARENT_SCOPE)
  set(run_out "${out}" PARENT_SCOPE)
  set(run_err "${err}" PARENT_SCOPE)
endfunction()

# The native reference: `command` run by sh in a throw-away copy; sets ref_ok,
# ref_rc, ref_out; ref_ok is false when the host refused to chroot or mount.
function(run_reference command)
  execute_process(COMMAND sh -c "${command}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
  set(ok TRUE)
  if(err MATCHES "chroot: |mount: |unshare: |prlimit: ")
    message(STATUS "reference unavailable on this host, comparison skipped: ${err}")
    set(ok FALSE)
  endif()
  set(ref_ok "${ok}" PARENT_SCOPE)
  set(ref_rc "${rc}" PARENT_SCOPE)
  set(ref_out "${out}" PARENT_SCOPE)
endfunction()

function(check_equal actual expected what)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}:\n--- expected\n${expected}\n--- actual\n${actual}")
  endif()
endfunction()

function(check_no_canary text what)
  foreach(canary "${parent_canary}" "${absolute_canary}" "CANARY-")
    string(FIND "${text}" "${canary}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${what}: read a canary outside the tree (${canary}): ${text}")
    endif()
  endforeach()
endfunction()

function(check_count text needle count what)
  string(REGEX MATCHALL "${needle}" found "${text}")
  list(LENGTH found n)
  if(NOT n EQUAL count)
    message(FATAL_ERROR "${what}: '${needle}' appears ${n} times, expected ${count}, in: ${text}")
  endif()
endfunction()

set(tree "${WORK_DIR}/tree")
set(reference_dir "${WORK_DIR}.reference")  # outside WORK_DIR: the snapshot never sees it
file(REMOVE_RECURSE "${reference_dir}")

if(MODE STREQUAL "escape")
  make_tree("${tree}" escape)
  make_tree("${reference_dir}/tree" escape)
  snapshot("${WORK_DIR}" tree before)
  run_tracecorn(--rootfs "${tree}" -- "${tree}/escape" "${absolute_canary_path}")
  snapshot("${WORK_DIR}" tree after)
  check_equal("${run_rc}" "0" "escape: exit status (stderr: ${run_err})")
  check_no_canary("${run_out}${run_err}" "escape")
  check_equal("${after}" "${before}" "escape: files outside the tree changed")
  # Facts of Linux in a chroot, checked even without the reference.
  check_contains("${run_out}" "dotdot_of_root: read 'inside'" "escape: .. of the root is the root")
  check_contains("${run_out}" "getcwd_after_chdir_out: /\n" "escape: chdir out stays at the root")
  check_contains("${run_out}" "fstatat_empty_cwd_is_root: yes" "escape: the working directory is the tree's root")
  check_contains("${run_out}" "absolute_symlink: ENOENT" "escape: an absolute symlink resolves inside")
  run_reference("chroot '${reference_dir}/tree' /escape '${absolute_canary_path}'")
  if(ref_ok)
    # fchmodat2 (Linux 6.6) is ENOSYS on older hosts: then only that line may differ.
    if(ref_out MATCHES "fchmodat2_nofollow_made_abs: ENOSYS")
      string(REGEX REPLACE "fchmodat2_nofollow_made_abs: [A-Z]+" "fchmodat2_nofollow_made_abs: -" ref_out "${ref_out}")
      string(REGEX REPLACE "fchmodat2_nofollow_made_abs: [A-Z]+" "fchmodat2_nofollow_made_abs: -" run_out "${run_out}")
    endif()
    check_equal("${run_out}" "${ref_out}" "escape: the guest's view differs from a native run in a chroot")
    snapshot("${reference_dir}/tree" escape reference_tree)
    snapshot("${tree}" escape guest_tree)
    check_equal("${guest_tree}" "${reference_tree}" "escape: the tree differs from the chroot run's")
  endif()

elseif(MODE STREQUAL "read_only")
  make_tree("${tree}" read_only)
  make_tree("${reference_dir}/tree" read_only)
  snapshot("${WORK_DIR}" "" before)
  run_tracecorn(--read-only --rootfs "${tree}" -- "${tree}/read_only")
  snapshot("${WORK_DIR}" "" after)
  check_equal("${run_rc}" "0" "read_only: exit status (stderr: ${run_err})")
  check_equal("${after}" "${before}" "read_only: the file system changed under --read-only")
  check_contains("${run_out}" "read_still_works: read 'inside'" "read_only: reads keep working")
  foreach(name "opening for writing" unlink rmdir rename mkdir link symlink chmod chown truncate utimensat fchmod)
    check_count("${run_err}" "tracecorn: --read-only: ${name} refused with EROFS\n" 1 "read_only: named once")
  endforeach()
  set(ro "${reference_dir}/tree")
  run_reference("unshare -m sh -c \"mount --bind '${ro}' '${ro}' && mount -o remount,bind,ro '${ro}' && chroot '${ro}' /read_only\"")
  if(ref_ok)
    check_equal("${run_out}" "${ref_out}" "read_only: the answers differ from a read-only bind mount's")
  endif()

elseif(MODE STREQUAL "memory")
  foreach(how mmap brk mremap)
    run_tracecorn(--max-memory 64M -- "${guest_dir}/exhaust_memory" ${how})
    check_equal("${run_rc}" "139" "memory ${how}: a careless guest dies of SIGSEGV (stderr: ${run_err})")
    check_contains("${run_out}" "${how}_failure: ENOMEM" "memory ${how}: the failure is ENOMEM")
    check_count("${run_err}" "tracecorn: ${how} refused with ENOMEM: the guest would map more than --max-memory 67108864 bytes" 1
                "memory ${how}: named once")
    check_contains("${run_err}" "tracecorn: killed by SIGSEGV" "memory ${how}: a clean fault")
    # Linux under the same RLIMIT_AS answers the same way (it counts the stack
    # as it grows, tracecorn counts its 8 MiB at once: the MiB differ, not the lines).
    run_reference("prlimit --as=67108864 '${guest_dir}/exhaust_memory' ${how}")
    if(ref_ok)
      check_equal("${run_out}" "${ref_out}" "memory ${how}: stdout differs from Linux under prlimit --as")
      check_equal("${run_rc}" "${ref_rc}" "memory ${how}: status differs from Linux under prlimit --as")
    endif()
  endforeach()
  # The default cap: the guest sees a limit; 16 MiB are no problem.
  run_tracecorn(-- "${guest_dir}/exhaust_memory" mmap 16)
  check_equal("${run_rc}" "0" "memory default: exit status (stderr: ${run_err})")
  check_contains("${run_out}" "rlimit_as_mib: limited" "memory default: a cap by default")
  run_tracecorn(--max-memory 1M -- "${guest_dir}/exhaust_memory" mmap 1)
  check_equal("${run_rc}" "125" "memory 1M: the images do not fit")
  check_contains("${run_err}" "more than --max-memory 1048576" "memory 1M: says why")
  run_tracecorn(--max-memory 12X -- "${guest_dir}/exhaust_memory" mmap 1)
  check_contains("${run_err}" "not a size" "memory: a bad size is refused")
  if(run_rc EQUAL 0)
    message(FATAL_ERROR "memory: --max-memory 12X was accepted")
  endif()

elseif(MODE STREQUAL "spawn")
  # Children run and are followed: the same lines as the native run.
  run_tracecorn(-- "${guest_dir}/spawn")
  check_equal("${run_rc}" "0" "spawn: exit status (stderr: ${run_err})")
  run_reference("'${guest_dir}/spawn'")
  check_equal("${run_out}" "${ref_out}" "spawn: stdout differs from the native run")
  foreach(line "fork_bomb: 10 forks" "vfork: ok" "clone: ok" "exec ran" "execve child: exit status 0"
               "system ran" "system: exit status 0" "popen_read: popen ran")
    check_contains("${run_out}" "${line}\n" "spawn")
  endforeach()
  # --max-processes bounds a fork bomb: the fork past the cap fails with
  # EAGAIN (as under RLIMIT_NPROC), said once on stderr.
  run_tracecorn(--max-processes 4 -- "${guest_dir}/spawn")
  check_equal("${run_rc}" "0" "spawn capped: exit status (stderr: ${run_err})")
  check_contains("${run_out}" "fork_bomb: 3 forks, then EAGAIN\n" "spawn capped: the bomb stops at the cap")
  check_count("${run_err}" "reached --max-processes 4: EAGAIN" 1 "spawn capped: named once")

elseif(MODE STREQUAL "outside_tree")
  # Processes outside the guest's own tree (tracecorn's parent, init, and
  # from a child its grandparent's parent): kill as another user's process,
  # pidfd_open as one that is not there; its own child stays reachable. No
  # native reference: natively these calls reach the test's own parent.
  run_tracecorn(-- "${guest_dir}/outside_tree")
  check_equal("${run_rc}" "0" "outside_tree: exit status (stderr: ${run_err})")
  foreach(line "kill parent 0: EPERM" "kill parent SIGCONT: EPERM" "kill init SIGCONT: EPERM"
               "pidfd_open parent: ESRCH" "pidfd_open init: ESRCH" "child: kill grandparent's parent SIGCONT: EPERM"
               "pidfd_open own child: ok" "pidfd_send_signal own child 0: ok" "wait own child: ok")
    check_contains("${run_out}" "${line}\n" "outside_tree")
  endforeach()

elseif(MODE STREQUAL "busybox_pipeline")
  # busybox sh forks for each side of a pipeline: both run, as natively.
  run_tracecorn(-- "${BUSYBOX}" sh -c "ls / | cat && echo both ran")
  check_equal("${run_rc}" "0" "busybox pipeline: exit status (stderr: ${run_err})")
  run_reference("'${BUSYBOX}' sh -c 'ls / | cat && echo both ran'")
  check_equal("${run_out}" "${ref_out}" "busybox pipeline: stdout differs from the native run")

elseif(MODE STREQUAL "limits")
  run_tracecorn(--max-insns 2000000 -- "${guest_dir}/spin")
  check_equal("${run_rc}" "124" "limits: --max-insns ends an endless loop")
  check_contains("${run_err}" "--max-insns 2000000 reached" "limits: --max-insns named")
  run_tracecorn(--timeout 0.5 -- "${guest_dir}/spin")
  check_equal("${run_rc}" "124" "limits: --timeout ends an endless loop")
  check_contains("${run_err}" "--timeout reached" "limits: --timeout named")

elseif(MODE STREQUAL "big_write")
  execute_process(COMMAND "${TRACECORN}" run -- "${guest_dir}/big_write"
                  RESULT_VARIABLE rc OUTPUT_FILE /dev/null ERROR_VARIABLE err TIMEOUT 30)
  check_equal("${rc}" "0" "big_write: exit status (stderr: ${err})")
  check_contains("${err}" "write: 64 MiB" "big_write: one write is bounded")
  check_contains("${err}" "writev: 64 MiB" "big_write: one writev is bounded")

elseif(MODE STREQUAL "net")
  run_tracecorn(-- "${guest_dir}/net")
  check_equal("${run_rc}" "1" "net: refused by default")
  check_equal("${run_out}" "socket: EACCES\n" "net: refused by default")
  check_count("${run_err}" "tracecorn: network syscall socket refused with EACCES" 1 "net: named once")
  run_tracecorn(--allow-net -- "${guest_dir}/net")
  run_reference("'${guest_dir}/net'")
  check_equal("${ref_rc}" "0" "net: the native run works")
  check_equal("${run_rc}" "0" "net --allow-net: exit status (stderr: ${run_err})")
  check_equal("${run_out}" "${ref_out}" "net --allow-net: differs from the native run")
  string(FIND "${run_err}" "refused" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "net --allow-net: something was refused: ${run_err}")
  endif()

else()
  message(FATAL_ERROR "check_containment: unknown MODE ${MODE}")
endif()

file(REMOVE_RECURSE "${reference_dir}")
message(STATUS "containment ${MODE} (${VARIANT}): ok")

# Sanitizer builds (scripts/asan.sh, scripts/tsan.sh), included last by the
# top-level CMakeLists.txt, once every target exists.
#
# -DTRACECORN_SANITIZE=address,undefined (or thread) compiles and links every
# host target of ours (libraries, the CLI, unit and behaviour tests, benches,
# samples/embed) with -fsanitize=<list> -fno-sanitize-recover=all
# -fno-omit-frame-pointer. The guest samples (samples/CMakeLists.txt, its
# unwinder variants and cross builds) are left alone: they are programs the
# emulator runs, linked static, and must stay what a native run executes; so
# is any other target with the TRACECORN_GUEST_PROGRAM property (bench/'s
# thread_work).
# Empty (the default): nothing changes.
# Invariant: only targets built here are touched (no imported or interface ones).
set(TRACECORN_SANITIZE "" CACHE STRING "Sanitizers for host targets, e.g. address,undefined or thread (empty: none)")

# Every buildsystem target defined in `dir` and below it, into `out`.
function(tracecorn_targets_below dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    tracecorn_targets_below("${subdir}" below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

if(TRACECORN_SANITIZE)
  set(sanitize_flags -fsanitize=${TRACECORN_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  tracecorn_targets_below("${PROJECT_SOURCE_DIR}" all_targets)
  get_property(guest_targets DIRECTORY "${PROJECT_SOURCE_DIR}/samples" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS all_targets)
    get_target_property(type ${target} TYPE)
    get_target_property(guest_program ${target} TRACECORN_GUEST_PROGRAM)
    if(target IN_LIST guest_targets OR guest_program OR NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      continue()
    endif()
    set_property(TARGET ${target} APPEND PROPERTY COMPILE_OPTIONS ${sanitize_flags})
    set_property(TARGET ${target} APPEND PROPERTY LINK_OPTIONS -fsanitize=${TRACECORN_SANITIZE})
  endforeach()
  message(STATUS "tracecorn: host targets built with -fsanitize=${TRACECORN_SANITIZE}")
endif()

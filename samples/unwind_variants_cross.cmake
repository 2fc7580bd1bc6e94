# The unwinder's sample variants cross-built for other architectures (included by
# samples/CMakeLists.txt after cross.cmake, whose TRACECORN_CROSS_CC_<arch> it uses).
# nested_calls is built once per variant into
# ${TRACECORN_UNWIND_SAMPLES_DIR}-<arch>/<variant>/nested_calls, static (ET_EXEC:
# the gdb reference runs under qemu-user, which loads a PIE elsewhere than Linux):
#   sframe-static   -O2 -fomit-frame-pointer -Wa,--gsframe (Debian's gas: SFrame v1)
#   cfi-static      -O2 -fomit-frame-pointer (.eh_frame only)
#   debug_frame     -O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables
#                   -fno-unwind-tables: the program's CFI in .debug_frame only
#                   (aarch64's gcc makes unwind tables unless both are off)
#   exidx-static    arm: -O2 -fomit-frame-pointer -funwind-tables, Thumb-2: the
#                   program's unwind tables in .ARM.exidx/.ARM.extab (EHABI),
#                   like glibc's (armhf gcc makes none for C by default)
#   exidx-marm      arm: the same in ARM code (-marm)
# The variants of each architecture are TRACECORN_UNWIND_CROSS_VARIANTS_<arch>.
# One target per architecture, unwind_samples_<arch>, part of unwind_samples.
# An architecture without its cross compiler is left out (cross.cmake says so).
set(TRACECORN_UNWIND_CROSS_ARCHS aarch64 arm CACHE INTERNAL "Architectures the unwinder's variants are cross-built for")
set(TRACECORN_UNWIND_CROSS_VARIANTS_aarch64 sframe-static cfi-static debug_frame CACHE INTERNAL "aarch64 unwind variants")
set(TRACECORN_UNWIND_CROSS_VARIANTS_arm exidx-static exidx-marm CACHE INTERNAL "arm unwind variants")
foreach(arch IN LISTS TRACECORN_UNWIND_CROSS_ARCHS)
  if(NOT TRACECORN_CROSS_CC_${arch})
    continue()
  endif()
  set(outputs "")
  foreach(variant IN LISTS TRACECORN_UNWIND_CROSS_VARIANTS_${arch})
    if(variant STREQUAL "sframe-static")
      set(flags -fomit-frame-pointer -Wa,--gsframe)
    elseif(variant STREQUAL "cfi-static")
      set(flags -fomit-frame-pointer)
    elseif(variant STREQUAL "exidx-static")
      set(flags -fomit-frame-pointer -funwind-tables)
    elseif(variant STREQUAL "exidx-marm")
      set(flags -marm -fomit-frame-pointer -funwind-tables)
    else()
      set(flags -g -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables)
    endif()
    set(dir "${TRACECORN_UNWIND_SAMPLES_DIR}-${arch}/${variant}")
    set(source "${CMAKE_CURRENT_SOURCE_DIR}/guest/nested_calls.c")
    add_custom_command(
      OUTPUT "${dir}/nested_calls"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${dir}"
      COMMAND ${TRACECORN_CROSS_CC_${arch}} -O2 -Wall -Wextra ${flags} -fno-pie -static -o "${dir}/nested_calls" "${source}"
      DEPENDS "${source}"
      COMMENT "Cross-building the ${arch} unwind variant ${variant}"
      VERBATIM)
    list(APPEND outputs "${dir}/nested_calls")
  endforeach()
  add_custom_target(unwind_samples_${arch} DEPENDS ${outputs})
  add_dependencies(unwind_samples unwind_samples_${arch})
endforeach()

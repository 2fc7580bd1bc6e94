# samples/cross.cmake: the guest samples cross-built for the other architectures
# tracecorn runs, with Debian's cross compilers (scripts/setup.sh installs them).
# Included by samples/CMakeLists.txt after it has globbed `guest_sources`.
#
# Every samples/guest/*.c is built for each architecture in TRACECORN_CROSS_ARCHS,
# unless its "// archs: a b" directive (samples/README.md) leaves that
# architecture out, in the variants TRACECORN_CROSS_VARIANTS_<arch> lists:
#   static      -static -fno-pie      ET_EXEC, no interpreter
#   static-marm -marm -static         arm only: ARM code instead of Thumb-2
#   static-pie  -static-pie           ET_DYN, self-relocating, no interpreter
#                                     (aarch64 only: riscv64's glibc lacks rcrt1.o)
# into ${CMAKE_BINARY_DIR}/samples/guest-<arch>/<variant>/<name> (the host
# samples' folder with "-<arch>" appended). One target per architecture,
# guest_samples_<arch>, part of `all` and of guest_samples.
# An architecture whose compiler is missing is skipped with a message; the
# behaviour tests then fail for it, saying what to install.

set(TRACECORN_CROSS_ARCHS aarch64 riscv64 arm i386 mips mipsel CACHE INTERNAL "Architectures the samples are cross-built for")
set(TRACECORN_CROSS_VARIANTS_aarch64 static static-pie CACHE INTERNAL "Link variants of the aarch64 samples")
# Debian 12's riscv64 glibc has no rcrt1.o: no static-pie there.
set(TRACECORN_CROSS_VARIANTS_riscv64 static CACHE INTERNAL "Link variants of the riscv64 samples")
# Debian 12's armhf glibc has no rcrt1.o either. Its gcc emits Thumb-2 by default;
# static-marm builds the samples' own code as ARM (glibc's stays Thumb-2), so
# both instruction sets and the switches between them run.
set(TRACECORN_CROSS_VARIANTS_arm static static-marm CACHE INTERNAL "Link variants of the arm samples")
set(tracecorn_cross_cc_aarch64 aarch64-linux-gnu-gcc)
set(tracecorn_cross_cc_riscv64 riscv64-linux-gnu-gcc)
set(tracecorn_cross_cc_arm arm-linux-gnueabihf-gcc)
# i386: Debian's i686 compiler (the architecture is named as qemu-i386-static and
# tracecorn name it); its glibc has rcrt1.o, so static-pie too.
set(TRACECORN_CROSS_VARIANTS_i386 static static-pie CACHE INTERNAL "Link variants of the i386 samples")
set(tracecorn_cross_cc_i386 i686-linux-gnu-gcc)
# mips o32, big and little endian (named as qemu-mips-static and qemu-mipsel-static
# name them); Debian 12's mips glibc has no rcrt1.o: static only.
set(TRACECORN_CROSS_VARIANTS_mips static CACHE INTERNAL "Link variants of the mips samples")
set(TRACECORN_CROSS_VARIANTS_mipsel static CACHE INTERNAL "Link variants of the mipsel samples")
set(tracecorn_cross_cc_mips mips-linux-gnu-gcc)
set(tracecorn_cross_cc_mipsel mipsel-linux-gnu-gcc)

# Sets `result` to whether the sample `source` is meant for `arch`: its
# "// archs: a b" directive names it, or it has none (samples/README.md).
function(tracecorn_sample_runs_on source arch result)
  file(STRINGS "${source}" archs_line REGEX "^// archs: ")
  set(runs TRUE)
  if(archs_line)
    string(REGEX REPLACE "^// archs: " "" archs "${archs_line}")
    separate_arguments(archs)
    if(NOT arch IN_LIST archs)
      set(runs FALSE)
    endif()
  endif()
  set(${result} ${runs} PARENT_SCOPE)
endfunction()

foreach(arch IN LISTS TRACECORN_CROSS_ARCHS)
  find_program(TRACECORN_CROSS_CC_${arch} NAMES ${tracecorn_cross_cc_${arch}})
  if(NOT TRACECORN_CROSS_CC_${arch})
    message(STATUS "samples: ${tracecorn_cross_cc_${arch}} not found, no ${arch} samples (run scripts/setup.sh)")
    continue()
  endif()
  set(outputs "")
  foreach(source IN LISTS guest_sources)
    get_filename_component(name "${source}" NAME_WE)
    tracecorn_sample_runs_on("${source}" ${arch} runs)
    if(NOT runs)
      continue()
    endif()
    foreach(variant IN LISTS TRACECORN_CROSS_VARIANTS_${arch})
      set(dir "${TRACECORN_GUEST_SAMPLES_DIR}-${arch}/${variant}")
      if(variant STREQUAL "static")
        set(link_flags -fno-pie -static)
      elseif(variant STREQUAL "static-marm")
        set(link_flags -marm -fno-pie -static)
      else()
        set(link_flags -fPIE -static-pie)
      endif()
      add_custom_command(
        OUTPUT "${dir}/${name}"
        COMMAND ${CMAKE_COMMAND} -E make_directory "${dir}"
        COMMAND ${TRACECORN_CROSS_CC_${arch}} -O2 -g -Wall -Wextra ${link_flags} -o "${dir}/${name}" "${source}" -lm
        DEPENDS "${source}"
        COMMENT "Cross-building ${arch} ${variant} sample ${name}"
        VERBATIM)
      list(APPEND outputs "${dir}/${name}")
    endforeach()
  endforeach()
  add_custom_target(guest_samples_${arch} ALL DEPENDS ${outputs})
  add_dependencies(guest_samples guest_samples_${arch})
endforeach()

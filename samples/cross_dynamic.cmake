# samples/cross_dynamic.cmake: the guest samples cross-built as dynamic PIE
# programs for aarch64, linked against Debian's arm64 glibc from the cross
# toolchain (libc6-dev-arm64-cross), into
# ${TRACECORN_GUEST_SAMPLES_DIR}-aarch64/dynamic/<name>. They run with the
# toolchain's tree as the guest root (/usr/aarch64-linux-gnu: lib/ld-linux-aarch64.so.1,
# lib/libc.so.6, lib/libm.so.6): `tracecorn run --rootfs` and
# `qemu-aarch64-static -L` (tests/behaviour/cross_dynamic_test.cpp).
# Included by samples/CMakeLists.txt after cross.cmake (TRACECORN_CROSS_CC_aarch64,
# guest_sources). Target guest_samples_aarch64_dynamic, part of guest_samples.
# Not in TRACECORN_CROSS_VARIANTS_aarch64: the per-sample behaviour entries
# compare without a rootfs.
if(TRACECORN_CROSS_CC_aarch64)
  set(outputs "")
  foreach(source IN LISTS guest_sources)
    get_filename_component(name "${source}" NAME_WE)
    tracecorn_sample_runs_on("${source}" aarch64 runs)  # (cross.cmake)
    if(NOT runs)
      continue()
    endif()
    set(dir "${TRACECORN_GUEST_SAMPLES_DIR}-aarch64/dynamic")
    add_custom_command(
      OUTPUT "${dir}/${name}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${dir}"
      COMMAND ${TRACECORN_CROSS_CC_aarch64} -O2 -g -Wall -Wextra -fPIE -pie -o "${dir}/${name}" "${source}" -lm
      DEPENDS "${source}"
      COMMENT "Cross-building aarch64 dynamic sample ${name}"
      VERBATIM)
    list(APPEND outputs "${dir}/${name}")
  endforeach()
  add_custom_target(guest_samples_aarch64_dynamic ALL DEPENDS ${outputs})
  add_dependencies(guest_samples guest_samples_aarch64_dynamic)
endif()

# samples/hostile.cmake: the hostile guest programs of samples/guest/hostile/*.c
# (escapes from --rootfs, writes under --read-only, memory exhaustion, process
# creation, endless loops, huge writes, the network), which the containment
# tests (tests/recorder/linux/containment_tests.cmake) run under tracecorn and,
# as a reference, natively inside a chroot of a throw-away tree.
# Included by samples/CMakeLists.txt after tracecorn_add_guest_program is defined.
# They are kept out of samples/guest/*.c on purpose: the behaviour suite runs
# every sample there natively on the host, which a fork bomb must never meet.
# Built in the same three variants into ${CMAKE_BINARY_DIR}/samples/guest/hostile/<variant>/<name>;
# target hostile_samples depends on all of them (and is part of `all`).
set(TRACECORN_HOSTILE_SAMPLES_DIR "${CMAKE_BINARY_DIR}/samples/guest/hostile"
    CACHE INTERNAL "Where the hostile guest binaries go, one folder per variant")
file(GLOB hostile_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/guest/hostile/*.c")
list(SORT hostile_sources)
add_custom_target(hostile_samples ALL)
foreach(source IN LISTS hostile_sources)
  get_filename_component(name "${source}" NAME_WE)
  foreach(variant IN LISTS TRACECORN_GUEST_VARIANTS)
    string(REPLACE "-" "_" variant_id "${variant}")
    tracecorn_add_guest_program(hostile_${name}_${variant_id} "${source}" "${TRACECORN_HOSTILE_SAMPLES_DIR}" ${variant})
    add_dependencies(hostile_samples hostile_${name}_${variant_id})
  endforeach()
endforeach()

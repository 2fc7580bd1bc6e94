# Role: ctest entries containment.* (issue 10): hostile guests (samples/guest/hostile)
# under --rootfs, --read-only, --max-memory, --allow-net and the run limits, each
# checked by check_containment.cmake (see its header for what and against what).
# Included by tests/CMakeLists.txt. Each entry is bounded (a few seconds; TIMEOUT 60).
find_program(TRACECORN_BUSYBOX_STATIC busybox PATHS /bin /usr/bin NO_DEFAULT_PATH)
set(containment_script ${CMAKE_CURRENT_SOURCE_DIR}/recorder/linux/check_containment.cmake)
set(containment_runs
  "escape static" "escape dynamic" "read_only static" "memory static" "memory dynamic" "spawn static"
  "spawn dynamic" "outside_tree static" "busybox_pipeline static" "limits static" "big_write static" "net static")
foreach(run IN LISTS containment_runs)
  separate_arguments(parts UNIX_COMMAND "${run}")
  list(GET parts 0 mode)
  list(GET parts 1 variant)
  set(name containment.${mode}.${variant})
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -DTRACECORN=$<TARGET_FILE:tracecorn>
    -DHOSTILE_DIR=${TRACECORN_HOSTILE_SAMPLES_DIR} -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/containment/${mode}.${variant}
    -DMODE=${mode} -DVARIANT=${variant} -DBUSYBOX=${TRACECORN_BUSYBOX_STATIC} -P ${containment_script})
  set_tests_properties(${name} PROPERTIES TIMEOUT 60 LABELS containment)
endforeach()

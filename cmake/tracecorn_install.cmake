# Role: what `cmake --install` puts in a prefix, so that a program outside this
# tree can embed the recorder (see samples/embed/ and tests/install/):
#   include/tracecorn/...          the public headers, with the tree's paths
#                                  (`#include "recorder/core/recorder.h"`)
#   lib/libtracecorn_*.a           the static libraries the recorder needs
#   lib/cmake/tracecorn/           find_package(tracecorn CONFIG): imported targets
#                                  tracecorn::recorder (C++ API + text sink) and
#                                  tracecorn::capi (C API), plus the libraries
#                                  underneath as tracecorn::core, ::arch, ...
#   lib/pkgconfig/tracecorn.pc     the same for pkg-config (C and C++)
#   bin/tracecorn                  the CLI
# Who includes it: the top-level CMakeLists.txt, after every subdirectory, so
# that every target exists. It only adds install rules and export properties;
# nothing here changes how the tree builds.
# Invariants: the installed tree is relocatable (the CMake files and the .pc
# find their prefix from their own location); the installed headers are
# hermetic: every header they include is installed too (tests/install checks
# by compiling a consumer against the prefix alone).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TRACECORN_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/tracecorn")
set(TRACECORN_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/tracecorn")

# The public headers: the recorder API and everything it includes.
set(TRACECORN_PUBLIC_HEADERS
  arch/arch.h
  arch/arch_engine.h
  arch/arch_info.h
  arch/instruction_decoder.h
  arch/linux_syscall_ids.h
  arch/prologue.h
  arch/signal_frame.h
  recorder/core/recorder.h
  recorder/core/trace_level.h
  recorder/core/stack_provider.h
  recorder/events/event.h
  recorder/support/expected.h
  formats/address_namer.h
  formats/text/text_writer.h
  recorder/capi/tracecorn.h)

# Installed targets and their names under tracecorn:: (link order: users first).
# The C API writes and reads every format: the session's engine recording,
# the format registry and the formats behind it come with it (link-only).
set(TRACECORN_EXPORTED_TARGETS
  tracecorn_recorder tracecorn_capi tracecorn_engine_recording tracecorn_formats tracecorn_format_ucir
  tracecorn_format_bap tracecorn_bap_frames_proto tracecorn_format_bintrace tracecorn_format_text
  tracecorn_format_common tracecorn_core tracecorn_ring tracecorn_events tracecorn_arch_engine tracecorn_arch)
set(TRACECORN_EXPORT_NAMES recorder capi engine_recording formats format_ucir format_bap bap_frames_proto
  format_bintrace format_text format_common core ring events arch_engine arch)

foreach(target export_name IN ZIP_LISTS TRACECORN_EXPORTED_TARGETS TRACECORN_EXPORT_NAMES)
  set_property(TARGET ${target} PROPERTY EXPORT_NAME ${export_name})
  # The targets publish the source root as their include directory; installed,
  # that is include/tracecorn. (The tree's build is unchanged: BUILD_INTERFACE.)
  get_target_property(directories ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(rewritten "")
  if(directories)
    foreach(directory IN LISTS directories)
      if(directory STREQUAL "${PROJECT_SOURCE_DIR}")
        list(APPEND rewritten "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>")
      elseif(directory MATCHES "^${PROJECT_BINARY_DIR}/")  # generated headers (frames.pb.h): link-only once installed
        list(APPEND rewritten "$<BUILD_INTERFACE:${directory}>")
      else()
        list(APPEND rewritten "${directory}")
      endif()
    endforeach()
  endif()
  list(APPEND rewritten "$<INSTALL_INTERFACE:${TRACECORN_INSTALL_INCLUDEDIR}>")
  list(REMOVE_DUPLICATES rewritten)
  set_property(TARGET ${target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${rewritten}")
endforeach()

foreach(header IN LISTS TRACECORN_PUBLIC_HEADERS)
  get_filename_component(directory "${header}" DIRECTORY)
  install(FILES "${PROJECT_SOURCE_DIR}/${header}" DESTINATION "${TRACECORN_INSTALL_INCLUDEDIR}/${directory}")
endforeach()

install(TARGETS ${TRACECORN_EXPORTED_TARGETS} EXPORT tracecorn-targets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(TARGETS tracecorn RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(EXPORT tracecorn-targets NAMESPACE tracecorn:: DESTINATION "${TRACECORN_INSTALL_CMAKEDIR}")

configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/tracecorn-config.cmake.in"
  "${PROJECT_BINARY_DIR}/cmake/tracecorn-config.cmake"
  INSTALL_DESTINATION "${TRACECORN_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/cmake/tracecorn-config-version.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/cmake/tracecorn-config.cmake"
  "${PROJECT_BINARY_DIR}/cmake/tracecorn-config-version.cmake"
  DESTINATION "${TRACECORN_INSTALL_CMAKEDIR}")

# pkg-config: the prefix is found from the .pc file's own folder.
file(RELATIVE_PATH TRACECORN_PC_PREFIX_FROM_PCDIR "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" TRACECORN_PC_PREFIX_FROM_PCDIR "${TRACECORN_PC_PREFIX_FROM_PCDIR}")
# Our libraries are static C++: a C program linking them needs the C++ runtime
# the libraries were built with (what the C++ compiler links and the C one does not).
set(TRACECORN_PC_CXX_RUNTIME "")
foreach(library IN LISTS CMAKE_CXX_IMPLICIT_LINK_LIBRARIES)
  if(NOT library IN_LIST CMAKE_C_IMPLICIT_LINK_LIBRARIES AND NOT library MATCHES "^gcc")
    string(APPEND TRACECORN_PC_CXX_RUNTIME " -l${library}")
  endif()
endforeach()
set(TRACECORN_PC_LIBS "")
foreach(target IN LISTS TRACECORN_EXPORTED_TARGETS)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    string(APPEND TRACECORN_PC_LIBS " -l${target}")
  endif()
endforeach()
configure_file("${CMAKE_CURRENT_LIST_DIR}/tracecorn.pc.in" "${PROJECT_BINARY_DIR}/cmake/tracecorn.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/cmake/tracecorn.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

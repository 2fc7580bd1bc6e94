# Extra builds of the unwinder's guest samples (included by samples/CMakeLists.txt).
# The samples listed below are built once more per unwind variant, into
# ${CMAKE_BINARY_DIR}/samples/unwind/<variant>/<name>:
#   sframe-static, sframe-dynamic   -O2 -fomit-frame-pointer -Wa,--gsframe (SFrame v1
#                                   from Debian's gas; libc itself has none)
#   cfi-static, cfi-dynamic         -O2 -fomit-frame-pointer (DWARF CFI only)
#   debug_frame                     -O2 -g -fno-asynchronous-unwind-tables: the
#                                   program's own CFI is in .debug_frame only
#   fp                              -O2 -fno-omit-frame-pointer (dynamic)
# plus cfi_ops.so (from unwind/cfi_ops.s, below).
# Exported: TRACECORN_UNWIND_SAMPLES_DIR (cache), target unwind_samples.
set(TRACECORN_UNWIND_SAMPLES_DIR "${CMAKE_BINARY_DIR}/samples/unwind"
    CACHE INTERNAL "Where the unwinder's sample variants go")
set(unwind_sample_names nested_calls)
add_custom_target(unwind_samples)
foreach(name IN LISTS unwind_sample_names)
  foreach(variant sframe-static sframe-dynamic cfi-static cfi-dynamic debug_frame fp)
    string(REPLACE "-" "_" variant_id "${variant}")
    set(target "unwind_${name}_${variant_id}")
    add_executable(${target} "${CMAKE_CURRENT_SOURCE_DIR}/guest/${name}.c")
    set_target_properties(${target} PROPERTIES OUTPUT_NAME "${name}"
      RUNTIME_OUTPUT_DIRECTORY "${TRACECORN_UNWIND_SAMPLES_DIR}/${variant}")
    target_compile_options(${target} PRIVATE -O2 -Wall -Wextra)
    if(variant MATCHES "^sframe")
      target_compile_options(${target} PRIVATE -fomit-frame-pointer -Wa,--gsframe)
      if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
        target_compile_options(${target} PRIVATE -fno-integrated-as)  # SFrame comes from GNU as
      endif()
    elseif(variant MATCHES "^cfi")
      target_compile_options(${target} PRIVATE -fomit-frame-pointer)
    elseif(variant STREQUAL "debug_frame")
      target_compile_options(${target} PRIVATE -g -fomit-frame-pointer -fno-asynchronous-unwind-tables)
    else()
      target_compile_options(${target} PRIVATE -fno-omit-frame-pointer)
    endif()
    if(variant MATCHES "static$")
      target_compile_options(${target} PRIVATE -fno-pie)
      target_link_options(${target} PRIVATE -static)
    else()
      target_compile_options(${target} PRIVATE -fPIE)
      target_link_options(${target} PRIVATE -pie)
    endif()
    add_dependencies(unwind_samples ${target})
  endforeach()
endforeach()

# cfi_ops.so: one function whose CFI uses the DW_CFA instructions glibc does
# not (val_offset, val_expression, GNU_args_size, restore_extended, ...), for
# the readelf comparison; assembled and linked by the C compiler driver.
add_custom_command(OUTPUT "${TRACECORN_UNWIND_SAMPLES_DIR}/cfi_ops.so"
  COMMAND ${CMAKE_COMMAND} -E make_directory "${TRACECORN_UNWIND_SAMPLES_DIR}"
  COMMAND ${CMAKE_C_COMPILER} -nostdlib -shared -o "${TRACECORN_UNWIND_SAMPLES_DIR}/cfi_ops.so"
          "${CMAKE_CURRENT_SOURCE_DIR}/unwind/cfi_ops.s"
  DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/unwind/cfi_ops.s"
  COMMENT "Assembling the unwinder's CFI instruction sample")
add_custom_target(unwind_cfi_ops DEPENDS "${TRACECORN_UNWIND_SAMPLES_DIR}/cfi_ops.so")
add_dependencies(unwind_samples unwind_cfi_ops)

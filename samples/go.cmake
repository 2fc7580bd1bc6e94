# samples/go.cmake: the Go samples (samples/go/<name>/, a main package each),
# built with Debian's golang-go (scripts/setup.sh installs it) for every
# architecture tracecorn runs, into ${CMAKE_BINARY_DIR}/samples/go/<GOARCH>/<name>
# (amd64, 386, arm64, arm, mips, mipsle, riscv64). Go's own toolchain
# cross-compiles: static binaries, no cgo, the toolchain's default GOARM
# (which reaches arm's kuser helpers) and GOMIPS. The Go runtime is the
# hardest common guest: its threads, futexes, signal-driven preemption and
# every signal's disposition (tests/behaviour/go_test.cpp).
# Without `go` the target builds nothing and the Go test says what to install.
# Invariants: offline (GOPROXY=off, no module dependencies); the build cache
# and GOPATH stay in the build tree.
find_program(TRACECORN_GO_COMPILER go)
set(go_samples_dir "${CMAKE_BINARY_DIR}/samples/go")
set(go_outputs "")
if(TRACECORN_GO_COMPILER)
  file(GLOB go_sample_dirs LIST_DIRECTORIES true "${CMAKE_CURRENT_SOURCE_DIR}/go/*")
  foreach(dir IN LISTS go_sample_dirs)
    if(NOT IS_DIRECTORY "${dir}")
      continue()
    endif()
    get_filename_component(name "${dir}" NAME)
    file(GLOB go_sources CONFIGURE_DEPENDS "${dir}/*.go" "${dir}/go.mod")
    foreach(goarch amd64 386 arm64 arm mips mipsle riscv64)
      set(output "${go_samples_dir}/${goarch}/${name}")
      add_custom_command(OUTPUT "${output}"
        COMMAND ${CMAKE_COMMAND} -E env GOARCH=${goarch} CGO_ENABLED=0 GOPROXY=off GOENV=off
                GOCACHE=${CMAKE_BINARY_DIR}/go-cache GOPATH=${CMAKE_BINARY_DIR}/go-path
                ${TRACECORN_GO_COMPILER} build -trimpath -o "${output}" .
        WORKING_DIRECTORY "${dir}"
        DEPENDS ${go_sources}
        COMMENT "go build samples/go/${name} for ${goarch}"
        VERBATIM)
      list(APPEND go_outputs "${output}")
    endforeach()
  endforeach()
else()
  message(STATUS "samples: no go compiler (apt-get install golang-go): the Go samples are not built")
endif()
add_custom_target(go_samples ALL DEPENDS ${go_outputs})

# Role: a Debian package of what `cmake --install` puts in a prefix
# (cmake/tracecorn_install.cmake: the CLI, the static libraries, the headers,
# the CMake package and tracecorn.pc), built by `cpack -G DEB` in a build
# folder: build/tracecorn_<version>_<arch>.deb, installed under /usr.
# Its dependencies are the shared libraries the CLI links (Debian's libunicorn2,
# libcapstone4, libzstd1, libprotobuf32, libsnappy1v5, libnettle8, libfmt9...),
# found by dpkg-shlibdeps (package dpkg-dev, which build-essential brings).
# Who includes it: the top-level CMakeLists.txt, after the install rules.
# tests/install/run_deb_test.cmake builds the package and runs it unpacked.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "tracecorn")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "tracecorn")
set(CPACK_PACKAGE_CONTACT "tracecorn developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "record what Linux programs do, inside the Unicorn CPU emulator")
set(CPACK_PACKAGE_DESCRIPTION
  "tracecorn runs Linux programs (x86-64, aarch64, arm, i386, mips, riscv64) under an emulated
Linux syscall layer in Unicorn and records them at the chosen detail (blocks, instructions,
memory, registers) with the call stack at every syscall, into usercorn's UCIR, BAP frames
or binary trace v1.0; it reads them back (dump, stat, convert, replay). The package holds
the tracecorn command and the recorder library (static, with headers, a CMake package and
a pkg-config file) for embedding in a harness that owns its uc_engine.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES OFF)  # the CLI keeps its symbols: its own stacks name functions
include(CPack)

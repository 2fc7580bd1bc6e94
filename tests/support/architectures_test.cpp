// Role: checks that the tests' two tables of guest architectures agree: the
// C++ one (tests/support/architectures.h), which the doctest files iterate,
// and the CMake one (tests/architectures.cmake), which registers the ctest
// entries per architecture and reaches here as TRACECORN_TEST_ARCHITECTURE_TABLE
// ("<arch>:<variant>,<variant>|..."). A row added to one only would leave
// doctest cases without a ctest entry, or entries whose filter selects nothing.
// Who runs it: unit_tests, on the doctest thread.
#include <doctest/doctest.h>

#include <string>

#include "tests/support/architectures.h"

#ifndef TRACECORN_TEST_ARCHITECTURE_TABLE
#error "tests/CMakeLists.txt must define TRACECORN_TEST_ARCHITECTURE_TABLE"
#endif

namespace {

using tracecorn::test_support::GuestArchitecture;
using tracecorn::test_support::kGuestArchitectures;

std::string table_as_cmake_writes_it() {
  std::string text;
  for (const GuestArchitecture& architecture : kGuestArchitectures) {
    if (!text.empty()) text += "|";
    text += std::string(architecture.name) + ":";
    for (std::size_t i = 0; i < architecture.sample_variants.size(); ++i)
      text += (i ? "," : "") + std::string(architecture.sample_variants[i]);
  }
  return text;
}

}  // namespace

TEST_CASE("Architectures: tests/support/architectures.h and tests/architectures.cmake list the same rows and variants") {
  CHECK(table_as_cmake_writes_it() == TRACECORN_TEST_ARCHITECTURE_TABLE);
  // The host comes first in both (the CMake twin names it apart) and is the only one.
  REQUIRE(!kGuestArchitectures.empty());
  CHECK(kGuestArchitectures[0].is_host);
  int hosts = 0;
  for (const GuestArchitecture& architecture : kGuestArchitectures) hosts += architecture.is_host;
  CHECK(hosts == 1);
}

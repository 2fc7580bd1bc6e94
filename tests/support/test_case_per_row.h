// Role: registers one doctest test case per row of a constexpr table (rows of
// tests/support/architectures.h, say), each named from its row, so that a
// case per architecture comes from the table instead of a TEST_CASE written
// out per architecture, and keeps its own name for -tc filters and ctest
// entries ("Samples: aarch64 static"). Used by the doctest files of
// unit_tests and behaviour_tests, at static initialization as TEST_CASE is.
//
//   std::string samples_case_name(const SampleBuild& build);  // the case's name
//   void check_samples(const SampleBuild& build);             // its body
//   TRACECORN_TEST_CASE_PER_ROW(kSampleBuilds, samples_case_name, check_samples);
//
// `rows` must be a constexpr array with static storage (a namespace-scope
// constexpr variable); `name_of` and `body` plain functions. The cases take
// the file and line of the macro, as TEST_CASE's do, and the current
// TEST_SUITE. Built on what DOCTEST_TEST_CASE expands to (doctest 2.4's
// detail::regTest and detail::TestCase).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <doctest/doctest.h>

namespace tracecorn::test_support {

template <const auto& rows, auto name_of, auto body>
class TestCasePerRow {
 public:
  static int register_all(const char* file, unsigned line, const doctest::detail::TestSuite& suite) {
    register_each(file, line, suite, std::make_index_sequence<std::size(rows)>());
    return 0;
  }

 private:
  template <std::size_t index>
  static void run() {
    body(rows[index]);
  }
  // doctest keeps the name's pointer: one string per row, made once.
  template <std::size_t index>
  static const char* name() {
    static const std::string text = name_of(rows[index]);
    return text.c_str();
  }
  template <std::size_t... index>
  static void register_each(const char* file, unsigned line, const doctest::detail::TestSuite& suite,
                            std::index_sequence<index...>) {
    (doctest::detail::regTest(doctest::detail::TestCase(&run<index>, file, line, suite) * name<index>()), ...);
  }
};

}  // namespace tracecorn::test_support

#define TRACECORN_TEST_CASE_PER_ROW(rows, name_of, body)                                              \
  [[maybe_unused]] static const int DOCTEST_ANONYMOUS(tracecorn_test_case_per_row_) =              \
      ::tracecorn::test_support::TestCasePerRow<rows, &name_of, &body>::register_all(         \
          __FILE__, __LINE__, doctest_detail_test_suite_ns::getCurrentTestSuite())

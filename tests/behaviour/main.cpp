// Role: doctest's main for behaviour_tests; the test cases live in *_test.cpp
// beside it. Run `behaviour_tests --help` for doctest's filters; ctest runs
// one entry per sample and variant (see CMakeLists.txt).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

// Role: a main() for fuzz_harness.cpp in builds without libFuzzer (g++, or
// clang without its runtime): runs LLVMFuzzerTestOneInput once on each file
// named on the command line, as `fuzz_harness FILE...` does with libFuzzer.
// A crash reproducer: the fuzz_harness_replays_crash test feeds it
// crash_record_overflow.bin and checks the dumped trace.
// Single-threaded. Exit status: 0 when every input ran (the harness aborts on a
// guest crash), 2 when a file cannot be read.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  for (int i = 1; i < argc; ++i) {
    std::ifstream file(argv[i], std::ios::binary);
    if (!file) {
      std::fprintf(stderr, "fuzz_replay: cannot read %s\n", argv[i]);
      return 2;
    }
    const std::vector<std::uint8_t> input((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "fuzz_replay: running %s (%zu bytes)\n", argv[i], input.size());
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::fprintf(stderr, "fuzz_replay: %d inputs ran without a crash\n", argc - 1);
  return 0;
}

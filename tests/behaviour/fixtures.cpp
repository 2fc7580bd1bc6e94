// Role: implementation of the shared deterministic inputs (see fixtures.h).
#include "fixtures.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

namespace tracecorn::behaviour {

std::string sample_text() {
  return "banana\n"
         "apple\n"
         "Cherry\n"
         "apple\n"
         "10\n"
         "9\n"
         "100\n"
         "banana split\n"
         "banana\n"
         "\n"
         "  leading blanks\n"
         "zebra  with   spaces\n"
         "apple\n";
}

std::string payload(std::size_t bytes) {
  std::string text;
  text.reserve(bytes + 80);
  for (unsigned i = 0; text.size() < bytes; i++) {
    char line[96];
    std::snprintf(line, sizeof line, "%06u the quick brown fox %08x jumps over %u lazy dogs\n", i,
                  i * 2654435761u, i % 97);
    text += line;
  }
  text.resize(bytes);
  return text;
}

void prepare_listing_dir(const std::string& dir) {
  auto check = [](int rc, const std::string& what) {
    if (rc != 0) throw std::system_error(errno, std::generic_category(), what);
  };
  write_file(dir + "/alpha.txt", "alpha\n");
  write_file(dir + "/gamma.sh", "#!/bin/sh\necho gamma\n");
  check(chmod((dir + "/gamma.sh").c_str(), 0755), "chmod gamma.sh");
  check(chmod((dir + "/alpha.txt").c_str(), 0644), "chmod alpha.txt");
  check(mkdir((dir + "/beta").c_str(), 0755), "mkdir beta");
  check(chmod((dir + "/beta").c_str(), 0755), "chmod beta");
  write_file(dir + "/beta/inner.txt", "inner file\nwith two lines\n");
  write_file(dir + "/beta/with space.txt", "");
  check(chmod((dir + "/beta/inner.txt").c_str(), 0644), "chmod inner.txt");
  check(chmod((dir + "/beta/with space.txt").c_str(), 0600), "chmod with space.txt");
  check(symlink("alpha.txt", (dir + "/link").c_str()), "symlink link");
  set_mtime(dir + "/link");
  set_mtime(dir + "/beta");
  set_mtime(dir);
}

}  // namespace tracecorn::behaviour

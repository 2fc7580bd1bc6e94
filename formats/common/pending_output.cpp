// Role: implementation of PendingOutput (see pending_output.h).
#include "formats/common/pending_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tracecorn::formats {

Expected<PendingOutput> PendingOutput::create(const std::string& path) {
  struct stat status {};
  if (path == "-" || (::stat(path.c_str(), &status) == 0 && !S_ISREG(status.st_mode)))
    return PendingOutput(path, path);
  // A fresh name: the process id, and a counter past names left by others.
  const std::string stem = path + ".partial-" + std::to_string(::getpid()) + "-";
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string candidate = stem + std::to_string(attempt);
    const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      return make_error(ErrorCode::kIo, std::string("cannot open for writing: ") + std::strerror(errno), path);
    }
    ::close(fd);
    PendingOutput output(path, std::move(candidate));
    output.pending_ = true;
    return output;
  }
  return make_error(ErrorCode::kIo, "cannot open for writing: no free temporary name beside it (" + stem + "*)", path);
}

PendingOutput::PendingOutput(PendingOutput&& other) noexcept
    : path_(std::move(other.path_)), write_path_(std::move(other.write_path_)), pending_(other.pending_) {
  other.pending_ = false;
}

PendingOutput::~PendingOutput() {
  if (pending_) std::remove(write_path_.c_str());
}

Status PendingOutput::commit() {
  if (!pending_) return ok_status();
  pending_ = false;
  if (std::rename(write_path_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    std::remove(write_path_.c_str());
    return make_error(ErrorCode::kIo, std::string("cannot rename the finished file into place: ") + std::strerror(error),
                      path_);
  }
  return ok_status();
}

}  // namespace tracecorn::formats

// Role: implementation of the meta-frame helpers (see bap_meta.h).
#include "formats/bap/bap_meta.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/md5.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tracecorn::formats {

namespace {

double seconds(const timespec& time) { return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_nsec) * 1e-9; }

}  // namespace

Status collect_host_meta(FramesMeta& meta) {
  if (const passwd* entry = getpwuid(getuid()); entry && entry->pw_name) meta.user = entry->pw_name;
  else if (const char* user = std::getenv("USER")) meta.user = user;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) meta.host = host;
  meta.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

  std::FILE* file = std::fopen(meta.target_path.c_str(), "rb");
  if (!file)
    return make_error(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                      std::string("cannot open: ") + std::strerror(errno), meta.target_path);
  struct stat status {};
  if (fstat(fileno(file), &status) == 0) {
    meta.target_size = status.st_size > INT32_MAX ? INT32_MAX : static_cast<std::int32_t>(status.st_size);
    meta.target_atime = seconds(status.st_atim);
    meta.target_mtime = seconds(status.st_mtim);
    meta.target_ctime = seconds(status.st_ctim);
  }
  md5_ctx context;
  md5_init(&context);
  std::vector<std::uint8_t> chunk(1 << 16);
  std::size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), file)) > 0) md5_update(&context, n, chunk.data());
  const bool failed = std::ferror(file);
  std::fclose(file);
  if (failed) return make_error(ErrorCode::kIo, "read error computing the MD5", meta.target_path);
  meta.target_md5.resize(MD5_DIGEST_SIZE);
  md5_digest(&context, meta.target_md5.size(), meta.target_md5.data());
  return ok_status();
}

}  // namespace tracecorn::formats

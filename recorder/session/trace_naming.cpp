// Role: implementation of TraceNaming (see trace_naming.h).
#include "recorder/session/trace_naming.h"

#include <fmt/format.h>

namespace tracecorn::session {

std::string TraceNaming::path_of(std::uint64_t pid, std::uint64_t image) const {
  if (pid == tree_root && image == 0) return base;
  if (base == "-") return "";  // standard output holds one trace: the first image's
  return image == 0 ? fmt::format("{}.{}", base, pid) : fmt::format("{}.{}.{}", base, pid, image);
}

std::string_view file_name_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace tracecorn::session

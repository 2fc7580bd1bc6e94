// Role: `tracecorn.record(argv, ...)`: a program run under tracecorn's
// emulated Linux and recorded, as `tracecorn record` does it: by that very
// command, the one built or installed beside this module (a guest's fork
// starts a new tracecorn process, and exec images, rootfs and signals are the
// command's business: one implementation). The child's standard streams are
// Python's; the call returns the guest's exit status.
// Threads: Python's; the wait runs with the GIL released.
// Errors: no command beside the module, or one that cannot start, is a
// tracecorn.Error naming where it looked; the command's own refusals (exit
// 125: a bad option, an unreadable program) too, with what it printed.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include "recorder/support/expected.h"

extern char** environ;

namespace py = pybind11;

namespace tracecorn::python {
namespace {

constexpr int kToolError = 125;  // the CLI's exit status for its own errors (docs/commands.md)

bool executable(const std::string& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The tracecorn command beside the module: $TRACECORN_CLI, else the build
// tree's (build/python/ -> build/recorder/cli/tracecorn), else the installed
// one (PREFIX/lib/python3*/dist-packages/ -> PREFIX/bin/tracecorn).
std::string find_cli(const std::string& module_file) {
  if (const char* given = std::getenv("TRACECORN_CLI"); given && *given) return given;
  const std::string directory = module_file.substr(0, module_file.rfind('/'));
  for (const std::string& candidate : {directory + "/../recorder/cli/tracecorn", directory + "/../../../bin/tracecorn"})
    if (executable(candidate)) return candidate;
  throw TracecornError(make_error(ErrorCode::kNotFound,
                                  fmt::format("no tracecorn command beside the module (looked for "
                                              "{0}/../recorder/cli/tracecorn and {0}/../../../bin/tracecorn; "
                                              "set TRACECORN_CLI)",
                                              directory)));
}

// Runs `arguments` (arguments[0] the command) and returns its exit status, or
// -N when signal N ended it (as subprocess does).
int run_command(const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  pid_t child = 0;
  if (const int error = ::posix_spawn(&child, argv[0], nullptr, nullptr, argv.data(), environ); error != 0)
    throw TracecornError(make_error(ErrorCode::kIo, std::string("cannot start: ") + std::strerror(error), arguments[0]));
  int status = 0;
  {
    py::gil_scoped_release released;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

int record(const std::vector<std::string>& program, const std::string& output, const std::string& level,
           const std::string& format, const py::object& compress, const std::vector<std::string>& options) {
  if (program.empty()) throw py::value_error("record() needs the program to run: ['prog', 'arg', ...]");
  const std::string module_file = py::module_::import("tracecorn").attr("__file__").cast<std::string>();
  std::vector<std::string> arguments{find_cli(module_file), "record", "--level", level, "--format", format, "-o",
                                     output};
  if (!compress.is_none()) {
    arguments.push_back("--compress");
    arguments.push_back(compress.cast<std::string>());
  }
  arguments.insert(arguments.end(), options.begin(), options.end());
  arguments.push_back("--");
  arguments.insert(arguments.end(), program.begin(), program.end());
  const int status = run_command(arguments);
  if (status == kToolError)
    throw TracecornError(make_error(ErrorCode::kInvalidArgument,
                                    "tracecorn record refused the recording (exit 125; its message is on stderr)",
                                    output));
  return status;
}

}  // namespace

void bind_program_recording(py::module_& module) {
  module.def("record", &record, py::arg("argv"), py::kw_only(), py::arg("output"), py::arg("level") = "blocks",
             py::arg("format") = "ucir", py::arg("compress") = py::none(),
             py::arg("options") = std::vector<std::string>{},
             "runs argv under tracecorn's emulated Linux and records it into `output`, as `tracecorn record` does "
             "(`options`: more of its options, e.g. ['--rootfs', DIR]); returns the guest's exit status (-N: "
             "killed by signal N)");
}

}  // namespace tracecorn::python

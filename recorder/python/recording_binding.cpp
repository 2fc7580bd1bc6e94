// Role: `tracecorn.attach(uc, ...)`, recording an engine of Debian's
// python3-unicorn (the same libunicorn as tracecorn's: its Uc object's
// handle is the uc_engine*) into a trace file, or as a flight recorder
// dumped on demand; over session::EngineRecording.
// Threads: Python's. uc.emu_start() runs with the GIL released (ctypes), so
// the recorder's hooks, which never touch Python, run freely; the drain thread
// writes the file.
// Invariants: a Recorder keeps its Uc object alive (the engine outlives the
// recording); finish() runs at the latest when the Recorder goes (or at the
// end of a `with` block).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include "recorder/session/engine_recording.h"

namespace py = pybind11;

namespace tracecorn::python {
namespace {

// The uc_engine* of a unicorn.Uc (its ctypes handle `_uch`), or of an int handle.
uc_engine* engine_of(const py::object& uc) {
  py::object handle = py::hasattr(uc, "_uch") ? uc.attr("_uch") : uc;
  if (py::hasattr(handle, "value")) handle = handle.attr("value");  // ctypes.c_void_p
  if (handle.is_none() || !py::isinstance<py::int_>(handle))
    throw py::type_error("attach() takes a unicorn.Uc (python3-unicorn) or its engine handle as an int");
  return reinterpret_cast<uc_engine*>(handle.cast<std::uintptr_t>());
}

core::TraceLevel level_named(const std::string& name) {
  if (auto level = core::parse_trace_level(name)) return *level;
  throw py::value_error(fmt::format("no level '{}' (blocks, insns, mem, regs, full)", name));
}

bool zstd_named(const py::object& compress) {
  if (compress.is_none()) return false;
  const std::string word = compress.cast<std::string>();
  if (word == "zstd") return true;
  if (word == "none") return false;
  throw py::value_error(fmt::format("compress='{}': None, 'none' or 'zstd'", word));
}

class PyRecorder {
 public:
  PyRecorder(py::object uc, std::unique_ptr<session::EngineRecording> recording)
      : uc_(std::move(uc)), recording_(std::move(recording)) {}
  void finish() { std::move(recording_->finish()).value_or_throw(); }
  void dump(const std::string& path, const std::string& format, const py::object& compress) {
    std::move(recording_->dump(path, format, zstd_named(compress))).value_or_throw();
  }
  py::dict stats() const {
    const core::RecorderStats stats = recording_->stats();
    py::dict table;
    table["events"] = stats.events;
    table["records"] = stats.records;
    table["records_overwritten"] = stats.records_overwritten;
    table["records_lost"] = stats.records_lost;
    table["producer_stalls"] = stats.producer_stalls;
    table["blocks_decoded"] = stats.blocks_decoded;
    py::dict by_kind;
    for (std::size_t kind = 1; kind < events::kEventKindCount; ++kind)
      if (stats.events_by_kind[kind])
        by_kind[py::str(std::string(events::event_kind_name(static_cast<events::EventKind>(kind))))] =
            stats.events_by_kind[kind];
    table["events_by_kind"] = by_kind;
    return table;
  }
  void registers_changed() { recording_->recorder().registers_changed(); }
  void code_written(std::uint64_t address, std::uint64_t size) { recording_->recorder().code_written(address, size); }
  void fault(std::uint64_t pc, std::uint64_t address, std::uint32_t signal, const std::string& description) {
    recording_->recorder().fault(pc, address, signal, description);
  }
  void exited(std::int32_t code) { recording_->recorder().exited(false, code, 0); }

 private:
  py::object uc_;  // keeps the engine alive while recording_ uses it
  std::unique_ptr<session::EngineRecording> recording_;
};

std::unique_ptr<PyRecorder> attach(const py::object& uc, const std::string& arch, const std::string& level,
                                   const py::object& output, const std::string& format, const py::object& compress,
                                   bool flight_recorder, std::size_t ring_bytes, const py::object& code_range,
                                   const std::string& program) {
  session::EngineRecordingOptions options;
  options.arch = arch;
  options.level = level_named(level);
  options.policy = flight_recorder ? core::RingPolicy::kFlightRecorder : core::RingPolicy::kLossless;
  options.ring_bytes = ring_bytes;
  if (!code_range.is_none()) {
    const auto [start, end] = code_range.cast<std::pair<std::uint64_t, std::uint64_t>>();
    options.code_range = core::AddressRange{start, end};
  }
  if (!output.is_none()) options.path = output.cast<std::string>();
  options.format = format;
  options.compress_zstd = zstd_named(compress);
  options.program = program;
  auto recording = std::move(session::EngineRecording::attach(engine_of(uc), options)).value_or_throw();
  return std::make_unique<PyRecorder>(uc, std::move(recording));
}

}  // namespace

void bind_recording(py::module_& module) {
  py::class_<PyRecorder>(module, "Recorder", "A recorder attached to a unicorn.Uc (tracecorn.attach).")
      .def("finish", &PyRecorder::finish, py::call_guard<py::gil_scoped_release>(),
           "stops recording and closes the trace file (idempotent)")
      .def("dump", &PyRecorder::dump, py::arg("path"), py::arg("format") = "ucir", py::arg("compress") = py::none(),
           "flight recorder: writes the events the ring holds to `path` in `format`")
      .def_property_readonly("stats", &PyRecorder::stats)
      .def("registers_changed", &PyRecorder::registers_changed,
           "tell the recorder that registers were written with reg_write while attached")
      .def("code_written", &PyRecorder::code_written, py::arg("address"), py::arg("size"),
           "tell the recorder that code was written with mem_write while attached (it decodes it again)")
      .def("fault", &PyRecorder::fault, py::arg("pc"), py::arg("address"), py::arg("signal"),
           py::arg("description") = "", "report that the guest faulted (a fault event; ends the block at pc)")
      .def("exited", &PyRecorder::exited, py::arg("code"), "report that the guest ended with status `code`")
      .def("__enter__", [](PyRecorder& self) -> PyRecorder& { return self; }, py::return_value_policy::reference)
      .def("__exit__", [](PyRecorder& self, const py::args&) { self.finish(); });
  module.def("attach", &attach, py::arg("uc"), py::kw_only(), py::arg("arch"), py::arg("level") = "blocks",
             py::arg("output") = py::none(), py::arg("format") = "ucir", py::arg("compress") = py::none(),
             py::arg("flight_recorder") = false, py::arg("ring_bytes") = std::size_t{64} << 20,
             py::arg("code_range") = py::none(), py::arg("program") = "",
             "records a unicorn.Uc engine into `output` (ucir, frames, bintrace, text, null; compress='zstd'), "
             "or keeps its last events as a flight recorder (dump())");
}

}  // namespace tracecorn::python

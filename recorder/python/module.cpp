// Role: `import tracecorn`, the Python binding (pybind11): tracecorn.open()
// and the Trace, Event, State, Write and Syscall classes over TraceHandle.
// Bindings only: the arguments Python gives are turned into the C++ types
// (Selection, register indices) and everything else runs in C++.
// Threads: Python's; loops that touch no Python object release the GIL.
// Errors: TracecornError becomes tracecorn.Error (the reader's message, with
// the file and the byte offset); a byte or register the trace does not know
// raises tracecorn.UnknownValueError (a tracecorn.Error and a LookupError),
// never reads as zero; bad arguments raise ValueError or TypeError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include "recorder/debug/why.h"
#include "recorder/python/trace_handle.h"

namespace py = pybind11;

namespace tracecorn::python {
namespace {

using events::EventKind;

// The memory a trace's column cache may hold unless open() says otherwise:
// one column of about 110 million events (8 bytes each, a byte for the kind).
constexpr std::uint64_t kDefaultColumnCache = std::uint64_t{1} << 30;
// Events read per call into the module when Python iterates.
constexpr std::size_t kEventBatch = 512;

// A register value (little endian, 1 to 16 bytes) as a Python int.
py::int_ int_of(const events::RegisterValue& value) {
  if (value.size <= 8) return py::int_(value.as_u64());
  PyObject* number = _PyLong_FromByteArray(value.bytes.data(), value.size, /*little_endian=*/1, /*is_signed=*/0);
  if (!number) throw py::error_already_set();
  return py::reinterpret_steal<py::int_>(number);
}

py::dict register_dict(const arch::ArchInfo& arch, std::span<const events::RegisterValue> values) {
  py::dict registers;
  for (const events::RegisterValue& value : values)
    if (value.index < arch.registers.size()) registers[py::str(std::string(arch.registers[value.index].name))] =
        int_of(value);
  return registers;
}

// The table index of the register `name` of `arch`; ValueError for another name.
std::size_t register_index(const arch::ArchInfo& arch, const std::string& name) {
  for (std::size_t i = 0; i < arch.registers.size(); ++i)
    if (arch.registers[i].name == name) return i;
  throw py::value_error(fmt::format("{} has no register '{}'", arch.name, name));
}

// Selection from Python's keyword arguments (None: no condition).
Selection selection_of(const py::object& kinds, const py::object& range, const py::object& window,
                       const py::object& thread) {
  Selection selection;
  if (!kinds.is_none()) {
    std::fill(std::begin(selection.filter.kinds), std::end(selection.filter.kinds), false);
    const auto words = py::isinstance<py::str>(kinds) ? std::vector<std::string>{kinds.cast<std::string>()}
                                                      : kinds.cast<std::vector<std::string>>();
    for (const std::string& word : words) {
      if (word == "mem") {
        selection.filter.kinds[static_cast<std::size_t>(EventKind::kMemoryRead)] = true;
        selection.filter.kinds[static_cast<std::size_t>(EventKind::kMemoryWrite)] = true;
        continue;
      }
      const auto kind = kind_named(word);
      if (!kind) throw py::value_error(fmt::format("no event kind '{}' (block, insn, read, write, mem, regs, "
                                                   "syscall, fault, module, exit, gap, signal, thread, process)",
                                                   word));
      selection.filter.kinds[static_cast<std::size_t>(*kind)] = true;
    }
  }
  if (!range.is_none()) selection.filter.range = range.cast<std::pair<std::uint64_t, std::uint64_t>>();
  if (!window.is_none()) std::tie(selection.first, selection.end) = window.cast<std::pair<std::uint64_t, std::uint64_t>>();
  if (!thread.is_none()) selection.filter.thread = thread.cast<std::uint32_t>();
  return selection;
}

// The kinds a column is read from: those asked for, each of which must have
// the column, or (none asked for) every kind that has it.
void restrict_to_column(Selection& selection, Column column, bool kinds_given, const std::string& name) {
  for (std::size_t kind = 1; kind < events::kEventKindCount; ++kind) {
    const bool defined = column_defined(column, static_cast<EventKind>(kind));
    if (!kinds_given) selection.filter.kinds[kind] = defined;
    else if (selection.filter.kinds[kind] && !defined)
      throw py::value_error(fmt::format("'{}' events have no '{}'", events::event_kind_name(static_cast<EventKind>(kind)), name));
  }
}

py::array_t<std::uint64_t> column_array(TraceHandle& trace, const std::string& name, const py::object& kinds,
                                        const py::object& range, const py::object& window, const py::object& thread) {
  const auto column = column_named(name);
  if (!column) throw py::value_error(fmt::format("no column '{}' (pc, address, size, value, seq, index, thread, kind)", name));
  Selection selection = selection_of(kinds, range, window, thread);
  restrict_to_column(selection, *column, !kinds.is_none(), name);
  auto values = std::make_unique<std::vector<std::uint64_t>>();
  {
    py::gil_scoped_release released;
    *values = trace.column(*column, selection);
  }
  // The array shares the vector's buffer; the capsule frees it with the array.
  auto* raw = values.get();
  py::capsule owner(values.release(), [](void* p) { delete static_cast<std::vector<std::uint64_t>*>(p); });
  return py::array_t<std::uint64_t>({raw->size()}, {sizeof(std::uint64_t)}, raw->data(), owner);
}

std::string event_repr(const EventRecord& event) {
  std::string text = fmt::format("<tracecorn.Event #{} {} thread {}", event.sequence,
                                 events::event_kind_name(event.kind), event.thread);
  if (event.pc) text += fmt::format(" pc=0x{:x}", *event.pc);
  if (event.kind == EventKind::kSyscall) text += fmt::format(" {}() = {}", event.name, *event.result);
  else if (event.address && event.address != event.pc) text += fmt::format(" address=0x{:x}", *event.address);
  if (event.value) text += fmt::format(" value=0x{:x}", *event.value);
  return text + ">";
}

void bind_event(py::module_& module) {
  py::class_<EventRecord>(module, "Event",
                          "One event of a trace. Fields an event does not have are None (never a zero).")
      .def_readonly("index", &EventRecord::index, "its place in the trace (what state_at(n) takes)")
      .def_readonly("seq", &EventRecord::sequence, "its sequence number (what `tracecorn dump` prints after #)")
      .def_readonly("thread", &EventRecord::thread, "the guest thread id")
      .def_property_readonly("kind", [](const EventRecord& e) { return std::string(events::event_kind_name(e.kind)); })
      .def_readonly("pc", &EventRecord::pc, "the instruction concerned (a block's start)")
      .def_readonly("address", &EventRecord::address, "the address accessed, a fault's address, a module's start")
      .def_readonly("size", &EventRecord::size, "bytes (block, insn, read, write, module); a gap's lost events")
      .def_readonly("value", &EventRecord::value, "read, write: the value, as a number")
      .def_readonly("result", &EventRecord::result, "syscall: its result; exit: the status; signal: si_code")
      .def_readonly("number", &EventRecord::number, "syscall: its number; signal, fault, exit: the signal; process: pid")
      .def_readonly("name", &EventRecord::name, "syscall: its name; fault: what; module: its path; process: trace")
      .def_readonly("args", &EventRecord::args, "syscall: its six arguments")
      .def_readonly("stack", &EventRecord::stack, "syscall: its call stack's return addresses, innermost first")
      .def_property_readonly("bytes", [](const EventRecord& e) {
        return py::bytes(reinterpret_cast<const char*>(e.bytes.data()), e.bytes.size());
      }, "block, insn: the code")
      .def_property_readonly("registers", [](const EventRecord& e) { return register_dict(*e.arch, e.registers); },
                             "regs, syscall, signal, thread switch: the registers it changed, {name: value}")
      .def("__repr__", &event_repr);
}

// A byte or register the trace does not know at the state's event.
class UnknownValue : public TracecornError {
 public:
  explicit UnknownValue(std::string message) : TracecornError(make_error(ErrorCode::kNotFound, std::move(message))) {}
};

// The state before event `event` runs (after events 0..event-1), over the
// trace's index; the index is moved back to `event` whenever another state
// moved it.
struct StateView {
  std::shared_ptr<TraceHandle> trace;
  std::uint64_t event = 0;

  replay::TraceIndex& index() const {
    replay::TraceIndex& index = trace->index();
    if (index.position() != event) std::move(index.seek(event)).value_or_throw();
    return index;
  }
  py::dict registers() const {
    replay::TraceIndex& seeked = index();
    std::vector<events::RegisterValue> known;
    for (std::size_t i = 0; i < seeked.arch().registers.size(); ++i)
      if (auto value = seeked.register_value(i)) known.push_back(*value);
    return register_dict(seeked.arch(), known);
  }
  py::int_ register_value(const std::string& name) const {
    replay::TraceIndex& seeked = index();
    auto value = seeked.register_value(register_index(seeked.arch(), name));
    if (!value) throw UnknownValue(fmt::format("{} is not known at event {}", name, event));
    return int_of(*value);
  }
  py::bytes read(std::uint64_t address, std::size_t size) const {
    std::string bytes(size, '\0');
    const std::size_t known =
        index().read_memory(address, std::span(reinterpret_cast<std::uint8_t*>(bytes.data()), size));
    if (known < size)
      throw UnknownValue(fmt::format("memory at 0x{:x} is not known at event {} (of {} bytes from 0x{:x}, {} known)",
                                     address + known, event, size, address, known));
    return py::bytes(bytes);
  }
};

py::object optional_write(std::optional<replay::MemoryWriteRecord> write) {
  return write ? py::cast(std::move(*write)) : py::none();
}

void bind_records(py::module_& module) {
  py::class_<replay::MemoryWriteRecord>(module, "Write", "A write to memory, by an instruction or the kernel.")
      .def_readonly("event", &replay::MemoryWriteRecord::event)
      .def_readonly("address", &replay::MemoryWriteRecord::address)
      .def_property_readonly("data", [](const replay::MemoryWriteRecord& w) {
        return py::bytes(reinterpret_cast<const char*>(w.bytes.data()), w.bytes.size());
      })
      .def("__repr__", [](const replay::MemoryWriteRecord& w) {
        return fmt::format("<tracecorn.Write event {} address=0x{:x} {} bytes>", w.event, w.address, w.bytes.size());
      });
  py::class_<replay::SyscallRecord>(module, "Syscall", "A syscall, with its call stack.")
      .def_readonly("event", &replay::SyscallRecord::event)
      .def_readonly("pc", &replay::SyscallRecord::pc)
      .def_readonly("number", &replay::SyscallRecord::number)
      .def_readonly("name", &replay::SyscallRecord::name)
      .def_property_readonly("args", [](const replay::SyscallRecord& s) {
        return std::vector<std::uint64_t>(std::begin(s.args), std::end(s.args));
      })
      .def_readonly("result", &replay::SyscallRecord::result)
      .def_readonly("stack", &replay::SyscallRecord::call_stack)
      .def("__repr__", [](const replay::SyscallRecord& s) {
        return fmt::format("<tracecorn.Syscall event {} {}() = {}>", s.event, s.name, s.result);
      });
  py::class_<StateView>(module, "State", "The machine state before an event runs (after the events before it).")
      .def_readonly("event", &StateView::event)
      .def_property_readonly("thread", [](const StateView& s) { return s.trace->index().thread_at(s.event); })
      .def_property_readonly("pc", [](const StateView& s) { return s.index().pc(); },
                             "the pc of the last instruction before the event (None before any)")
      .def_property_readonly("registers", &StateView::registers, "the registers known here, {name: value}")
      .def("register", &StateView::register_value, py::arg("name"),
           "a register's value; UnknownValueError when the trace does not know it here")
      .def("read", &StateView::read, py::arg("address"), py::arg("size"),
           "memory as bytes; UnknownValueError when a byte is not known here (never read as zero)");
  // Events reach Python a list at a time, chained by itertools (events_of):
  // one call into the module per kEventBatch events instead of one per event.
  py::class_<EventStream>(module, "EventBatches")
      .def("__iter__", [](EventStream& stream) -> EventStream& { return stream; })
      .def("__next__", [](EventStream& stream) {
        std::vector<EventRecord> batch;
        {
          py::gil_scoped_release released;
          batch = stream.take(kEventBatch);
        }
        if (batch.empty()) throw py::stop_iteration();
        py::list events(batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i) events[i] = py::cast(std::move(batch[i]));
        return events;
      });
}

// An iterator over `stream`'s events (itertools.chain over its batches).
py::object events_of(std::unique_ptr<EventStream> stream) {
  // (Looked up each time: a py::object kept in a static would be released
  // after the interpreter is gone.)
  return py::module_::import("itertools").attr("chain").attr("from_iterable")(py::cast(std::move(stream)));
}

py::dict capabilities_dict(const formats::Capabilities& capabilities) {
  py::dict table;
  py::list kinds;
  for (std::size_t kind = 1; kind < events::kEventKindCount; ++kind)
    if (capabilities.kinds[kind]) kinds.append(std::string(events::event_kind_name(static_cast<EventKind>(kind))));
  table["kinds"] = kinds;
  table["initial_memory"] = capabilities.initial_memory;
  table["initial_registers"] = capabilities.initial_registers;
  table["memory_read_values"] = capabilities.memory_read_values;
  table["exit_code"] = capabilities.exit_code;
  table["syscall_effects"] = capabilities.syscall_effects;
  table["cannot_carry"] = capabilities.cannot_carry;
  return table;
}

py::list history(TraceHandle& trace, const py::object& reg, const py::object& address, std::uint64_t size) {
  if (reg.is_none() == address.is_none()) throw py::value_error("history() takes reg=NAME or addr=ADDRESS");
  replay::TraceIndex& index = trace.index();
  py::list entries;
  if (!reg.is_none()) {
    const std::size_t table_index = register_index(index.arch(), reg.cast<std::string>());
    for (const replay::RegisterWriteRecord& write : std::move(index.register_history(table_index)).value_or_throw())
      entries.append(py::make_tuple(write.event, int_of(write.value)));
    return entries;
  }
  for (replay::MemoryWriteRecord& write :
       std::move(index.memory_history(address.cast<std::uint64_t>(), size)).value_or_throw())
    entries.append(py::cast(std::move(write)));
  return entries;
}

// `tracecorn why` from Python: the tree as dicts (the JSON `tracecorn why
// --json` prints, parsed, code named by the same symbols), for a register (`reg`) or memory bytes (`addr`,
// `size`) as they are at event `at` (default: the end).
py::object why(TraceHandle& trace, const py::object& reg, const py::object& address, std::uint64_t size,
               const py::object& at, unsigned depth) {
  if (reg.is_none() == address.is_none()) throw py::value_error("why() takes reg=NAME or addr=ADDRESS");
  replay::TraceIndex& index = trace.index();
  if (const std::string missing = debug::why_unsupported(index); !missing.empty())
    throw TracecornError(make_error(ErrorCode::kUnsupported, missing, trace.path()));
  debug::WhyTarget target;
  if (!reg.is_none()) {
    target.is_register = true;
    target.register_index = register_index(index.arch(), reg.cast<std::string>());
  } else {
    target.address = address.cast<std::uint64_t>();
    target.length = size;
  }
  auto decoder = std::move(arch::InstructionDecoder::open(index.arch(), true)).value_or_throw();
  debug::WhyOptions options;
  options.depth = depth;
  const std::uint64_t event = at.is_none() ? index.event_count() : at.cast<std::uint64_t>();
  const debug::WhyNode tree =
      std::move(debug::explain(index, *decoder, &trace.namer(), target, event, options)).value_or_throw();
  return py::module_::import("json").attr("loads")(debug::why_json(tree, index.arch()));
}

void bind_trace_queries(py::class_<TraceHandle, std::shared_ptr<TraceHandle>>& trace) {
  trace.def("state_at", [](std::shared_ptr<TraceHandle> self, std::uint64_t event) {
         {
           py::gil_scoped_release released;
           std::move(self->index().seek(event)).value_or_throw();
         }
         return StateView{std::move(self), event};
       }, py::arg("event"), "the state before event `event` runs (0 to len(trace))")
      .def("last_write", [](TraceHandle& self, std::uint64_t address, const py::object& before) {
         replay::TraceIndex& index = self.index();
         const std::uint64_t bound = before.is_none() ? index.event_count() : before.cast<std::uint64_t>();
         return optional_write(std::move(index.last_write(address, bound)).value_or_throw());
       }, py::arg("address"), py::arg("before") = py::none(),
       "the last write to the byte at `address` before event `before` (default: the end), or None")
      .def("history", &history, py::kw_only(), py::arg("reg") = py::none(), py::arg("addr") = py::none(),
           py::arg("size") = 1, "every recorded value of a register, [(event, value)], or every write touching "
           "[addr, addr + size), [Write]")
      .def("syscalls", [](TraceHandle& self) { return self.index().syscalls(); }, "every syscall, in order")
      .def("symbol", &TraceHandle::symbol, py::arg("address"),
           "names a code address from the modules' files as the CLI does (\"main+0x1c (/path/prog)\"); \"\" when "
           "unknown")
      .def("why", &why, py::kw_only(), py::arg("reg") = py::none(), py::arg("addr") = py::none(), py::arg("size") = 1,
           py::arg("at") = py::none(), py::arg("depth") = 16,
           "where a register's or memory's value at event `at` (default: the end) came from, as `tracecorn why "
           "--json` tells it (a full-level trace)");
}

void bind_trace(py::module_& module) {
  py::class_<TraceHandle, std::shared_ptr<TraceHandle>> trace(module, "Trace", "A trace file (tracecorn.open).");
  trace.def_property_readonly("path", &TraceHandle::path)
      .def_property_readonly("format", [](const TraceHandle& t) {
        return std::string(replay::trace_format_name(t.header().format()));
      })
      .def_property_readonly("arch", [](const TraceHandle& t) { return std::string(t.arch().name); })
      .def_property_readonly("byte_order", [](const TraceHandle& t) { return t.arch().little_endian ? "little" : "big"; },
                             "the guest's byte order: memory values are numbers, memory bytes are in this order")
      .def_property_readonly("level", &TraceHandle::level)
      .def_property_readonly("program", [](const TraceHandle& t) { return t.header().info().program; })
      .def_property_readonly("argv", [](const TraceHandle& t) { return t.header().info().argv; })
      .def_property_readonly("capabilities", [](const TraceHandle& t) {
        return capabilities_dict(t.header().capabilities());
      })
      .def_property_readonly("register_names", [](const TraceHandle& t) {
        std::vector<std::string> names;
        for (const auto& info : t.arch().registers) names.emplace_back(info.name);
        return names;
      })
      .def("__len__", [](TraceHandle& self) {
        py::gil_scoped_release released;
        return self.event_count();
      })
      .def("__iter__", [](const TraceHandle& self) { return events_of(self.events(Selection{})); })
      .def("events", [](const TraceHandle& self, const py::object& kinds, const py::object& range,
                        const py::object& window, const py::object& thread) {
         return events_of(self.events(selection_of(kinds, range, window, thread)));
       }, py::kw_only(), py::arg("kinds") = py::none(), py::arg("range") = py::none(), py::arg("events") = py::none(),
       py::arg("thread") = py::none(),
       "the events of the given kinds, touching the address range (start, end), with sequence numbers in "
       "[first, end), of one thread")
      .def("column", &column_array, py::arg("name"), py::kw_only(), py::arg("kinds") = py::none(),
           py::arg("range") = py::none(), py::arg("events") = py::none(), py::arg("thread") = py::none(),
           "one numeric field of the selected events as a NumPy uint64 array")
      .def_property_readonly("column_cache_bytes", &TraceHandle::column_cache_bytes,
                             "the bytes of columns kept in memory (open()'s column_cache)");
  bind_trace_queries(trace);
  module.def("open", &TraceHandle::open, py::arg("path"), py::kw_only(), py::arg("column_cache") = kDefaultColumnCache,
             "opens a trace of any format, plain or zstd; column() keeps up to `column_cache` bytes of columns in "
             "memory (0: none)");
}
// Raises tracecorn.Error (tracecorn.UnknownValueError for UnknownValue) with
// the C++ message, its bytes that are not UTF-8 escaped.
void raise_with_message(std::exception_ptr thrown) {
  try {
    if (thrown) std::rethrow_exception(thrown);
  } catch (const TracecornError& failure) {
    const bool unknown = dynamic_cast<const UnknownValue*>(&failure) != nullptr;
    const py::object type = py::module_::import("tracecorn").attr(unknown ? "UnknownValueError" : "Error");
    const std::string_view message = failure.what();
    PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "backslashreplace");
    if (!text) return;  // the decoding's own error stands
    PyErr_SetObject(type.ptr(), text);
    Py_DECREF(text);
  }
}

}  // namespace

void bind_recording(py::module_& module);          // recording_binding.cpp
void bind_program_recording(py::module_& module);  // program_binding.cpp

}  // namespace tracecorn::python

PYBIND11_MODULE(tracecorn, module) {
  using namespace tracecorn::python;
  module.doc() = "Read tracecorn's traces (UCIR, BAP frames, binary trace; plain or zstd), query the state at "
                 "any event, and record a unicorn.Uc engine.";
  module.attr("__version__") = TRACECORN_VERSION;
  auto& error = py::register_exception<tracecorn::TracecornError>(module, "Error");
  py::register_exception<UnknownValue>(module, "UnknownValueError", error.ptr());
  // Tried before the two above: a message may quote a damaged file's bytes,
  // which are not UTF-8 (shown as \xNN instead of an empty exception).
  py::register_exception_translator(&raise_with_message);
  bind_event(module);
  bind_records(module);
  bind_trace(module);
  bind_recording(module);
  bind_program_recording(module);
}

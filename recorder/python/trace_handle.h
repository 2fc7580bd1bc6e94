// Role: the C++ side of `tracecorn.open(path)`: one trace file, read through
// replay::TraceReader (every format, plain or zstd, chosen by content), with
// its event count, trace index and column cache made on first use. Python
// only holds a handle; every loop over events runs here.
// Threads: one Python thread at a time (the GIL); the loops that touch no
// Python object (count, column, the index's build) run with the GIL released,
// which is safe because a handle is used by one Python thread at a time (the
// binding holds no other lock: two threads sharing one handle must take turns,
// as with a file object).
// Errors: every failure throws TracecornError with the reader's message (the
// file, the byte offset); the binding turns it into tracecorn.Error.
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "recorder/python/column_cache.h"
#include "recorder/python/event_record.h"
#include "recorder/python/selection.h"
#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_reader.h"
#include "recorder/replay/trace_tools.h"
#include "recorder/session/symbol_namer.h"

namespace tracecorn::python {

// Events as EventRecords, one by one or a batch at a time, from a reader of its own.
class EventStream {
 public:
  EventStream(std::unique_ptr<replay::TraceReader> reader, Selection selection)
      : reader_(std::move(reader)), selection_(std::move(selection)) {}
  // The next event the selection keeps; nullopt at the end. Throws
  // TracecornError on a damaged or cut file.
  std::optional<EventRecord> next();
  // The next `most` events the selection keeps, fewer at the end (none after
  // it) and before a damaged or cut part of the file: those events come
  // first, the TracecornError with the next call.
  std::vector<EventRecord> take(std::size_t most);

 private:
  std::unique_ptr<replay::TraceReader> reader_;
  Selection selection_;
  std::deque<EventRecord> pending_;  // kept events of the record read last
  bool ended_ = false;
  std::exception_ptr deferred_;  // the error take() found after some events
};

class TraceHandle {
 public:
  // Opens `path` (throws TracecornError: not found, not a trace, damaged
  // header); column() keeps up to `column_cache_bytes` of columns in memory.
  static std::shared_ptr<TraceHandle> open(const std::string& path, std::uint64_t column_cache_bytes);

  const std::string& path() const { return path_; }
  const replay::TraceReader& header() const { return *header_; }
  const arch::ArchInfo& arch() const { return header_->arch(); }
  // The level the trace says, or the one its events show (one pass) when it says none.
  std::string level();
  // Events in the file (one pass, the first time); throws on a damaged or cut file.
  std::uint64_t event_count();
  std::unique_ptr<EventStream> events(Selection selection) const;
  // `column` of every event `selection` keeps, in order: from the column
  // cache when it holds the column, else by a pass of the reader (which fills
  // the cache in when it reads the whole trace and the budget allows).
  std::vector<std::uint64_t> column(Column column, const Selection& selection);
  // The bytes the column cache holds.
  std::uint64_t column_cache_bytes() const { return columns_.bytes(); }
  // The trace index, built by one pass the first time.
  replay::TraceIndex& index();
  // "main+0x1c (/path/prog)" for a code address, from the modules' files
  // where they are readable here (as the CLI names them); "" when unknown.
  std::string symbol(std::uint64_t address);
  // The namer symbol() and why() use: made, and fed the trace's mappings, the first time.
  formats::AddressNamer& namer();

 private:
  TraceHandle(std::string path, std::unique_ptr<replay::TraceReader> header, std::uint64_t column_cache_bytes)
      : path_(std::move(path)), header_(std::move(header)), columns_(column_cache_bytes) {}
  std::unique_ptr<replay::TraceReader> reopen() const;
  void count_events();

  std::string path_;
  std::unique_ptr<replay::TraceReader> header_;  // opened, never read past its header
  std::optional<std::uint64_t> event_count_;
  std::string level_from_events_;
  std::unique_ptr<replay::TraceIndex> index_;
  std::unique_ptr<session::SymbolNamer> namer_;  // fed the trace's mappings the first time
  ColumnCache columns_;
};

}  // namespace tracecorn::python

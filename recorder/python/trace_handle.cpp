// Role: TraceHandle and EventStream (see trace_handle.h): the loops over a
// trace's events behind the Python package.
#include "recorder/python/trace_handle.h"

namespace tracecorn::python {

std::optional<EventRecord> EventStream::next() {
  if (deferred_) std::rethrow_exception(std::exchange(deferred_, nullptr));
  while (pending_.empty() && !ended_) {
    std::uint64_t index = reader_->index();
    auto more = reader_->next([&](const events::Event& event) {
      if (selection_.matches(event)) pending_.push_back(record_of(event, index, reader_->arch()));
      ++index;
      // Sequence numbers only grow: past the window's end nothing more can match.
      if (event.sequence.value >= selection_.end) ended_ = true;
    });
    if (!more) throw TracecornError(more.error());
    if (!*more) {
      ended_ = true;
      std::move(reader_->check_complete()).value_or_throw();
    }
  }
  if (pending_.empty()) return std::nullopt;
  EventRecord record = std::move(pending_.front());
  pending_.pop_front();
  return record;
}

std::vector<EventRecord> EventStream::take(std::size_t most) {
  std::vector<EventRecord> batch;
  batch.reserve(most);
  try {
    while (batch.size() < most) {
      auto record = next();
      if (!record) break;
      batch.push_back(std::move(*record));
    }
  } catch (const TracecornError&) {
    if (batch.empty()) throw;
    deferred_ = std::current_exception();
  }
  return batch;
}

std::shared_ptr<TraceHandle> TraceHandle::open(const std::string& path, std::uint64_t column_cache_bytes) {
  auto header = std::move(replay::TraceReader::open(path)).value_or_throw();
  return std::shared_ptr<TraceHandle>(new TraceHandle(path, std::move(header), column_cache_bytes));
}

std::unique_ptr<replay::TraceReader> TraceHandle::reopen() const {
  auto reader = std::move(replay::TraceReader::open(path_)).value_or_throw();
  // BAP frames cannot tell mips from mipsel: keep what the first reader resolved.
  reader->resolve_arch(header_->arch());
  return reader;
}

void TraceHandle::count_events() {
  auto reader = reopen();
  bool seen[events::kEventKindCount] = {};
  for (;;) {
    auto more = reader->next([&](const events::Event& event) { seen[static_cast<std::size_t>(event.kind)] = true; });
    if (!more) throw TracecornError(more.error());
    if (!*more) break;
  }
  std::move(reader->check_complete()).value_or_throw();
  event_count_ = reader->index();
  level_from_events_ = replay::level_from_kinds(seen);
}

std::uint64_t TraceHandle::event_count() {
  if (!event_count_) count_events();
  return *event_count_;
}

std::string TraceHandle::level() {
  if (!header_->info().level.empty()) return header_->info().level;
  if (!event_count_) count_events();
  return level_from_events_;
}

std::unique_ptr<EventStream> TraceHandle::events(Selection selection) const {
  return std::make_unique<EventStream>(reopen(), std::move(selection));
}

std::vector<std::uint64_t> TraceHandle::column(Column column, const Selection& selection) {
  if (columns_.answers(column, selection)) return columns_.select(column, selection);
  // A pass that reads every event anyway fills the cache in on the way.
  std::optional<ColumnCache::Filler> filler;
  if (selection.whole_window() && columns_.worth_filling(column)) filler.emplace(columns_, column, event_count_);
  auto reader = reopen();
  std::vector<std::uint64_t> values;
  std::uint64_t index = 0;
  bool past_window = false;
  while (!past_window) {
    auto more = reader->next([&](const events::Event& event) {
      if (selection.matches(event)) values.push_back(column_value(event, index, column));
      if (filler) filler->add(event, index);
      ++index;
      past_window = event.sequence.value >= selection.end;
    });
    if (!more) throw TracecornError(more.error());
    if (!*more) {
      std::move(reader->check_complete()).value_or_throw();
      break;
    }
  }
  if (filler) filler->finish();
  return values;
}

replay::TraceIndex& TraceHandle::index() {
  if (!index_) {
    auto reader = reopen();
    index_ = std::move(replay::TraceIndex::build(*reader)).value_or_throw();
    std::move(reader->check_complete()).value_or_throw();
  }
  return *index_;
}

formats::AddressNamer& TraceHandle::namer() {
  if (!namer_) {
    auto namer = std::make_unique<session::SymbolNamer>("");
    index().name_mappings(*namer);
    namer_ = std::move(namer);
  }
  return *namer_;
}

std::string TraceHandle::symbol(std::uint64_t address) { return namer().name(address); }

}  // namespace tracecorn::python

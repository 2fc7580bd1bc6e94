// Role: the blocks a trace entered, for the readers that count or export them
// (`tracecorn stat`'s hottest blocks, the drcov exporter): a trace's block
// events, or, in a trace without blocks, runs of consecutive instructions (a
// new run starts wherever execution did not fall through, and at a syscall or
// a fault).
// Who calls it: one reader's thread; not thread safe.
#pragma once

#include <cstdint>
#include <variant>

#include "recorder/events/event.h"

namespace tracecorn::formats {

class BlockTracker {
 public:
  // Calls on_block(start, size) for each block `event` ends or is.
  template <typename OnBlock>
  void feed(const events::Event& event, OnBlock on_block) {
    using events::EventKind;
    if (event.kind == EventKind::kBlock) {
      const auto& b = std::get<events::BlockEvent>(event.payload);
      have_blocks_ = true;
      on_block(b.address.value, b.size);
    } else if (event.kind == EventKind::kInstruction && !have_blocks_) {
      const auto& i = std::get<events::InstructionEvent>(event.payload);
      if (!open_ || i.address.value != end_) {
        close(on_block);
        open_ = true, start_ = i.address.value;
      }
      end_ = i.address.value + i.size;
    } else if (event.kind == EventKind::kSyscall || event.kind == EventKind::kFault) {
      close(on_block);  // a syscall ends a block
    }
  }
  // Calls on_block for the run still open (at the end of the trace).
  template <typename OnBlock>
  void close(OnBlock on_block) {
    if (open_) on_block(start_, end_ - start_);
    open_ = false;
  }

 private:
  bool have_blocks_ = false, open_ = false;
  std::uint64_t start_ = 0, end_ = 0;
};

}  // namespace tracecorn::formats

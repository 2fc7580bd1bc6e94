// Role: implementation of RegisterShadow (see register_shadow.h). Emulation thread.
#include "recorder/core/register_shadow.h"

#include <algorithm>

namespace tracecorn::core {

void RegisterShadow::attach(bool derive) {
  for (std::size_t i = 0; i < kMaxWritten; ++i) read_pointers_[i] = read_values_[i];
  slots_.resize(arch_.registers.size());
  read_all(slots_);
  // How many bytes Unicorn writes for each register (reading twice into
  // differently filled buffers): the hot path loads exactly that much.
  unicorn_width_.resize(arch_.registers.size());
  for (std::size_t i = 0; i < arch_.registers.size(); ++i) {
    std::uint8_t first[64], second[64];
    std::memset(first, 0xaa, sizeof first);
    std::memset(second, 0x55, sizeof second);
    uc_reg_read(engine_, arch_.registers[i].uc_id, first);
    uc_reg_read(engine_, arch_.registers[i].uc_id, second);
    std::uint8_t width = 0;
    for (std::uint8_t b = 0; b < 16; ++b)
      if (first[b] == second[b]) width = static_cast<std::uint8_t>(b + 1);
    unicorn_width_[i] = std::min<std::uint8_t>(width, arch_.registers[i].size);
  }
  derive_ = derive;
  derive_now_ = derive;
}

void RegisterShadow::read_all(std::vector<Slot>& out) const noexcept {
  for (std::size_t i = 0; i < arch_.registers.size() && i < out.size(); ++i) {
    std::memset(out[i].bytes, 0, sizeof out[i].bytes);
    uc_reg_read(engine_, arch_.registers[i].uc_id, out[i].bytes);
  }
}

}  // namespace tracecorn::core

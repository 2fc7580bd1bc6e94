// Role: implementation of arch/x86_fxsave.h.
#include "arch/x86_fxsave.h"

#include <cstring>

#include "arch/signal_frames.h"

namespace tracecorn::arch {
void write_fxsave(uc_engine* engine, std::span<std::uint8_t> out, int xmm_registers) {
  FrameWriter writer(out, true);
  writer.put(0, 2, register_value(engine, UC_X86_REG_FPCW));
  writer.put(2, 2, register_value(engine, UC_X86_REG_FPSW));
  const std::uint64_t tags = register_value(engine, UC_X86_REG_FPTAG);
  std::uint64_t abridged = 0;  // one bit per register: 1 = not empty (tag != 3)
  for (int i = 0; i < 8; ++i)
    if (((tags >> (2 * i)) & 3) != 3) abridged |= 1u << i;
  writer.put(4, 1, abridged);
  writer.put(24, 4, register_value(engine, UC_X86_REG_MXCSR));
  writer.put(28, 4, 0xffff);  // MXCSR_MASK
  for (int i = 0; i < 8; ++i) {
    std::uint8_t value[16] = {};
    uc_reg_read(engine, UC_X86_REG_ST0 + i, value);
    writer.put_bytes(32 + 16 * static_cast<std::size_t>(i), std::span(value, 10));
  }
  for (int i = 0; i < xmm_registers; ++i) {
    std::uint8_t value[16] = {};
    uc_reg_read(engine, UC_X86_REG_XMM0 + i, value);
    writer.put_bytes(160 + 16 * static_cast<std::size_t>(i), value);
  }
}

void restore_fxsave(uc_engine* engine, std::span<const std::uint8_t> image, int xmm_registers) {
  if (image.size() < kFxsaveBytes) return;
  const FrameReader reader(image, true);
  std::uint64_t value = reader.get(0, 2);
  uc_reg_write(engine, UC_X86_REG_FPCW, &value);
  value = reader.get(2, 2);
  uc_reg_write(engine, UC_X86_REG_FPSW, &value);
  const std::uint64_t abridged = reader.get(4, 1);
  std::uint64_t tags = 0;
  for (int i = 0; i < 8; ++i)
    if (!(abridged & (1u << i))) tags |= 3u << (2 * i);
  uc_reg_write(engine, UC_X86_REG_FPTAG, &tags);
  value = reader.get(24, 4) & 0xffff;
  uc_reg_write(engine, UC_X86_REG_MXCSR, &value);
  for (int i = 0; i < 8; ++i) {
    std::uint8_t st[16] = {};
    std::memcpy(st, image.data() + 32 + 16 * static_cast<std::size_t>(i), 10);
    uc_reg_write(engine, UC_X86_REG_ST0 + i, st);
  }
  for (int i = 0; i < xmm_registers; ++i) {
    std::uint8_t xmm[16] = {};
    std::memcpy(xmm, image.data() + 160 + 16 * static_cast<std::size_t>(i), 16);
    uc_reg_write(engine, UC_X86_REG_XMM0 + i, xmm);
  }
}

}  // namespace tracecorn::arch

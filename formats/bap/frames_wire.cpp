// Role: implementation of the direct protobuf encoding of std_frame and
// operand_info (see frames_wire.h). Field numbers are frames.proto's.
#include "formats/bap/frames_wire.h"

#include <cassert>

namespace tracecorn::formats::bap {

namespace {

using wire::delimited_field_size;
using wire::key;
using wire::kLengthDelimited;
using wire::kVarint;
using wire::put_delimited_field;
using wire::put_delimited_header;
using wire::put_varint_field;
using wire::varint_field_size;

// frame
constexpr std::uint32_t kFrameStdFrame = key(1, kLengthDelimited);
// std_frame
constexpr std::uint32_t kStdAddress = key(1, kVarint);
constexpr std::uint32_t kStdThreadId = key(2, kVarint);
constexpr std::uint32_t kStdRawbytes = key(3, kLengthDelimited);
constexpr std::uint32_t kStdPreList = key(4, kLengthDelimited);
constexpr std::uint32_t kStdPostList = key(5, kLengthDelimited);
constexpr std::uint32_t kStdMode = key(6, kLengthDelimited);
constexpr std::uint32_t kStdUnattributed = key(1000, kLengthDelimited);
// operand_value_list
constexpr std::uint32_t kListElem = key(1, kLengthDelimited);
// operand_info
constexpr std::uint32_t kOperandSpecific = key(1, kLengthDelimited);
constexpr std::uint32_t kOperandBitLength = key(2, kVarint);
constexpr std::uint32_t kOperandUsage = key(3, kLengthDelimited);
constexpr std::uint32_t kOperandTaint = key(4, kLengthDelimited);
constexpr std::uint32_t kOperandValue = key(5, kLengthDelimited);
// operand_info_specific, mem_operand, reg_operand
constexpr std::uint32_t kSpecificMemOperand = key(1, kLengthDelimited);
constexpr std::uint32_t kSpecificRegOperand = key(2, kLengthDelimited);
constexpr std::uint32_t kMemAddress = key(1, kVarint);
constexpr std::uint32_t kRegName = key(1, kLengthDelimited);
// operand_usage { read 1, written 2, index 3, base 4 }: four one-byte keys and values.
constexpr std::uint8_t kUsageRead = key(1, kVarint), kUsageWritten = key(2, kVarint), kUsageIndex = key(3, kVarint),
                       kUsageBase = key(4, kVarint);
constexpr std::size_t kUsageBytes = 8;
// taint_info { no_taint: true }, as a whole field of operand_info.
constexpr std::uint8_t kNoTaintField[] = {kOperandTaint, 2, key(1, kVarint), 1};

std::size_t std_frame_body_size(const StdFrameFields& fields) {
  std::size_t size = varint_field_size(kStdAddress, fields.address) +
                     varint_field_size(kStdThreadId, fields.thread_id) +
                     delimited_field_size(kStdRawbytes, fields.rawbytes.size()) +
                     delimited_field_size(kStdPreList, fields.operand_pre_list.size());
  if (fields.operand_post_list) size += delimited_field_size(kStdPostList, fields.operand_post_list->size());
  if (fields.mode) size += delimited_field_size(kStdMode, fields.mode->size());
  if (fields.tracecorn_unattributed)
    size += delimited_field_size(kStdUnattributed, fields.tracecorn_unattributed->size());
  return size;
}

std::span<const std::uint8_t> as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

}  // namespace

std::vector<std::uint8_t> register_operand_specific(std::string_view name) {
  const std::size_t reg_operand = delimited_field_size(kRegName, name.size());
  const std::size_t specific = delimited_field_size(kSpecificRegOperand, reg_operand);
  std::vector<std::uint8_t> out(delimited_field_size(kOperandSpecific, specific));
  std::uint8_t* at = put_delimited_header(out.data(), kOperandSpecific, specific);
  at = put_delimited_header(at, kSpecificRegOperand, reg_operand);
  at = put_delimited_field(at, kRegName, as_bytes(name));
  assert(at == out.data() + out.size());
  return out;
}

MemoryOperandSpecific memory_operand_specific(std::uint64_t address) {
  const std::size_t mem_operand = varint_field_size(kMemAddress, address);
  const std::size_t specific = delimited_field_size(kSpecificMemOperand, mem_operand);
  MemoryOperandSpecific out;
  std::uint8_t* at = put_delimited_header(out.bytes, kOperandSpecific, specific);
  at = put_delimited_header(at, kSpecificMemOperand, mem_operand);
  at = put_varint_field(at, kMemAddress, address);
  out.size = static_cast<std::uint8_t>(at - out.bytes);
  return out;
}

void append_operand(ByteBuffer& list, std::span<const std::uint8_t> specific, std::int32_t bit_length,
                    OperandUsage usage, std::span<const std::uint8_t> value) {
  const std::uint32_t zigzag_bits = wire::zigzag32(bit_length);
  const std::size_t operand = specific.size() + varint_field_size(kOperandBitLength, zigzag_bits) +
                              delimited_field_size(kOperandUsage, kUsageBytes) + sizeof kNoTaintField +
                              delimited_field_size(kOperandValue, value.size());
  const std::size_t total = delimited_field_size(kListElem, operand);
  std::uint8_t* const start = list.append(total);
  std::uint8_t* at = put_delimited_header(start, kListElem, operand);
  at = wire::put_bytes(at, specific);
  at = put_varint_field(at, kOperandBitLength, zigzag_bits);
  at = put_delimited_header(at, kOperandUsage, kUsageBytes);
  const std::uint8_t flags[kUsageBytes] = {kUsageRead,  usage.read,  kUsageWritten, usage.written,
                                           kUsageIndex, usage.index, kUsageBase,    usage.base};
  at = wire::put_bytes(at, flags);
  at = wire::put_bytes(at, kNoTaintField);
  at = put_delimited_field(at, kOperandValue, value);
  assert(at == start + total);
  (void)at;
}

RegisterOperandEncoder::RegisterOperandEncoder(std::string_view name, std::size_t value_size) {
  value_size = std::min(value_size, sizeof(Value));
  ByteBuffer encoded;
  const std::vector<std::uint8_t> zeros(value_size);
  append_operand(encoded, register_operand_specific(name), static_cast<std::int32_t>(value_size * 8), {}, zeros);
  size_ = encoded.size();
  encoded_.assign(encoded.bytes().begin(), encoded.bytes().end());
  encoded_.resize(std::max(size_, kCopyBytes));
  value_at_ = size_ - value_size;
  // Back from the value: its length and key, taint_info (4 bytes), then operand_usage's 8 bytes.
  usage_at_ = value_at_ - wire::varint_size(value_size) - 1 - sizeof kNoTaintField - kUsageBytes;
  assert(encoded_[usage_at_] == kUsageRead && encoded_[usage_at_ + 6] == kUsageBase);
}

void RegisterOperandEncoder::append_long(ByteBuffer& list, OperandUsage usage, const Value& value) const {
  std::uint8_t* at = list.append(size_);
  std::memcpy(at, encoded_.data(), size_);
  set_usage(at, usage);
  std::memcpy(at + value_at_, value.data(), size_ - value_at_);
}

StdFrameSizes std_frame_sizes(const StdFrameFields& fields) {
  StdFrameSizes sizes;
  sizes.std_frame = std_frame_body_size(fields);
  sizes.message = delimited_field_size(kFrameStdFrame, sizes.std_frame);
  return sizes;
}

std::uint8_t* write_std_frame(std::uint8_t* at, const StdFrameFields& fields, const StdFrameSizes& sizes) {
  at = put_delimited_header(at, kFrameStdFrame, sizes.std_frame);
  at = put_varint_field(at, kStdAddress, fields.address);
  at = put_varint_field(at, kStdThreadId, fields.thread_id);
  at = put_delimited_field(at, kStdRawbytes, fields.rawbytes);
  at = put_delimited_field(at, kStdPreList, fields.operand_pre_list);
  if (fields.operand_post_list) at = put_delimited_field(at, kStdPostList, *fields.operand_post_list);
  if (fields.mode) at = put_delimited_field(at, kStdMode, as_bytes(*fields.mode));
  if (fields.tracecorn_unattributed) at = put_delimited_field(at, kStdUnattributed, *fields.tracecorn_unattributed);
  return at;
}

}  // namespace tracecorn::formats::bap

// Role: the DW_OP evaluator declared in dwarf_expression.h.
#include "recorder/unwind/dwarf_expression.h"

#include <climits>
#include <cstdio>
#include <string>
#include <utility>

#include "recorder/unwind/byte_reader.h"

namespace tracecorn::unwind {
namespace {

// DWARF 5, section 7.7.1 (the subset that makes sense in CFI).
enum Op : std::uint8_t {
  kAddr = 0x03, kDeref = 0x06, kConst1u = 0x08, kConst1s = 0x09, kConst2u = 0x0a, kConst2s = 0x0b,
  kConst4u = 0x0c, kConst4s = 0x0d, kConst8u = 0x0e, kConst8s = 0x0f, kConstu = 0x10, kConsts = 0x11,
  kDup = 0x12, kDrop = 0x13, kOver = 0x14, kPick = 0x15, kSwap = 0x16, kRot = 0x17, kAbs = 0x19,
  kAnd = 0x1a, kDiv = 0x1b, kMinus = 0x1c, kMod = 0x1d, kMul = 0x1e, kNeg = 0x1f, kNot = 0x20, kOr = 0x21,
  kPlus = 0x22, kPlusUconst = 0x23, kShl = 0x24, kShr = 0x25, kShra = 0x26, kXor = 0x27, kBra = 0x28,
  kEq = 0x29, kGe = 0x2a, kGt = 0x2b, kLe = 0x2c, kLt = 0x2d, kNe = 0x2e, kSkip = 0x2f, kLit0 = 0x30,
  kLit31 = 0x4f, kReg0 = 0x50, kReg31 = 0x6f, kBreg0 = 0x70, kBreg31 = 0x8f, kRegx = 0x90, kBregx = 0x92,
  kDerefSize = 0x94, kNop = 0x96, kStackValue = 0x9f,
};

class Evaluator {
 public:
  Evaluator(std::span<const std::uint8_t> expression, const ExpressionContext& context)
      : in_(expression, context.little_endian),
        context_(context),
        max_stack_(context.limits.max_stack < kStackCapacity ? context.limits.max_stack : kStackCapacity) {}

  Expected<std::uint64_t> run(std::optional<std::uint64_t> initial) {
    if (initial && !push(*initial)) return error_;
    unsigned steps = 0;
    while (!in_.at_end()) {
      if (++steps > context_.limits.max_steps) {
        fail(ErrorCode::kLimit, "more than " + std::to_string(context_.limits.max_steps) + " operations");
        return error_;
      }
      op_offset_ = in_.offset();
      std::uint8_t op = 0;
      in_.u8(op);
      if (!step(op)) return error_;
    }
    if (depth_ == 0) {
      op_offset_ = in_.offset();
      fail(ErrorCode::kBadFormat, "the expression leaves an empty stack");
      return error_;
    }
    return stack_[depth_ - 1];
  }

 private:
  bool step(std::uint8_t op) {
    std::uint64_t a = 0, b = 0;
    std::int64_t s = 0;
    if (op >= kLit0 && op <= kLit31) return push(op - kLit0);
    if (op >= kReg0 && op <= kReg31) return push_register(op - kReg0, 0);
    if (op >= kBreg0 && op <= kBreg31) return operand_s(s) && push_register(op - kBreg0, s);
    switch (op) {
      case kAddr: return operand(context_.address_size, a) && push(a);
      case kDeref: return pop(a) && deref(a, context_.address_size);
      case kDerefSize: {
        std::uint8_t size = 0;
        if (!in_.u8(size)) return truncated();
        if (size == 0 || size > 8) return fail(ErrorCode::kBadFormat, "DW_OP_deref_size of " + std::to_string(size));
        return pop(a) && deref(a, size);
      }
      case kConst1u: return operand(1, a) && push(a);
      case kConst2u: return operand(2, a) && push(a);
      case kConst4u: return operand(4, a) && push(a);
      case kConst8u: return operand(8, a) && push(a);
      case kConst1s: return operand_signed(1, s) && push(static_cast<std::uint64_t>(s));
      case kConst2s: return operand_signed(2, s) && push(static_cast<std::uint64_t>(s));
      case kConst4s: return operand_signed(4, s) && push(static_cast<std::uint64_t>(s));
      case kConst8s: return operand_signed(8, s) && push(static_cast<std::uint64_t>(s));
      case kConstu: return operand_u(a) && push(a);
      case kConsts: return operand_s(s) && push(static_cast<std::uint64_t>(s));
      case kDup: return peek(0, a) && push(a);
      case kDrop: return pop(a);
      case kOver: return peek(1, a) && push(a);
      case kPick: {
        std::uint8_t index = 0;
        if (!in_.u8(index)) return truncated();
        return peek(index, a) && push(a);
      }
      case kSwap:
        if (depth_ < 2) return underflow();
        std::swap(stack_[depth_ - 1], stack_[depth_ - 2]);
        return true;
      case kRot: {
        if (depth_ < 3) return underflow();
        const std::size_t n = depth_;
        const std::uint64_t top = stack_[n - 1];
        stack_[n - 1] = stack_[n - 2];
        stack_[n - 2] = stack_[n - 3];
        stack_[n - 3] = top;
        return true;
      }
      case kAbs: {
        if (!pop(a)) return false;
        const auto v = static_cast<std::int64_t>(a);
        return push(v < 0 ? 0 - a : a);
      }
      case kNeg: return pop(a) && push(0 - a);
      case kNot: return pop(a) && push(~a);
      case kPlusUconst: return operand_u(b) && pop(a) && push(a + b);
      case kAnd: case kDiv: case kMinus: case kMod: case kMul: case kOr: case kPlus: case kShl: case kShr:
      case kShra: case kXor: case kEq: case kGe: case kGt: case kLe: case kLt: case kNe:
        return pop(b) && pop(a) && binary(op, a, b);
      case kSkip: case kBra: {
        std::int64_t delta = 0;
        if (!operand_signed(2, delta)) return false;
        if (op == kBra) {
          if (!pop(a)) return false;
          if (a == 0) return true;
        }
        const std::int64_t target = static_cast<std::int64_t>(in_.offset()) + delta;
        if (target < 0 || static_cast<std::uint64_t>(target) > in_.size())
          return fail(ErrorCode::kBadFormat, "branch outside the expression");
        in_.seek(static_cast<std::uint64_t>(target));
        return true;
      }
      case kRegx: return operand_u(a) && push_register(a, 0);
      case kBregx: return operand_u(a) && operand_s(s) && push_register(a, s);
      case kNop: return true;
      case kStackValue: return true;  // the value on the stack is the result; nothing follows in CFI use
      default: {
        char name[8];
        std::snprintf(name, sizeof name, "0x%02x", op);
        return fail(ErrorCode::kBadFormat, std::string("unsupported DW_OP ") + name);
      }
    }
  }

  bool binary(std::uint8_t op, std::uint64_t a, std::uint64_t b) {
    const auto sa = static_cast<std::int64_t>(a), sb = static_cast<std::int64_t>(b);
    switch (op) {
      case kAnd: return push(a & b);
      case kOr: return push(a | b);
      case kXor: return push(a ^ b);
      case kPlus: return push(a + b);
      case kMinus: return push(a - b);
      case kMul: return push(a * b);
      case kDiv:
        if (b == 0) return fail(ErrorCode::kBadFormat, "division by zero");
        if (sa == INT64_MIN && sb == -1) return push(a);  // the only overflowing case wraps
        return push(static_cast<std::uint64_t>(sa / sb));
      case kMod:
        if (b == 0) return fail(ErrorCode::kBadFormat, "modulo by zero");
        return push(a % b);
      case kShl: return push(b >= 64 ? 0 : a << b);
      case kShr: return push(b >= 64 ? 0 : a >> b);
      case kShra: return push(static_cast<std::uint64_t>(b >= 64 ? (sa < 0 ? -1 : 0) : sa >> b));
      case kEq: return push(sa == sb);
      case kGe: return push(sa >= sb);
      case kGt: return push(sa > sb);
      case kLe: return push(sa <= sb);
      case kLt: return push(sa < sb);
      case kNe: return push(sa != sb);
      default: return fail(ErrorCode::kBadFormat, "internal: not a binary op");
    }
  }

  bool push(std::uint64_t value) {
    if (depth_ >= max_stack_) return fail(ErrorCode::kLimit, "stack deeper than " + std::to_string(max_stack_));
    stack_[depth_++] = value;
    return true;
  }
  bool pop(std::uint64_t& value) {
    if (depth_ == 0) return underflow();
    value = stack_[--depth_];
    return true;
  }
  bool peek(std::size_t depth, std::uint64_t& value) {
    if (depth >= depth_) return underflow();
    value = stack_[depth_ - 1 - depth];
    return true;
  }
  bool push_register(std::uint64_t reg, std::int64_t offset) {
    if (!context_.registers || reg >= kMaxRegisters || !context_.registers->has(static_cast<unsigned>(reg)))
      return fail(ErrorCode::kBadFormat, "register " + std::to_string(reg) + " is not known in this frame");
    return push(context_.registers->value[reg] + static_cast<std::uint64_t>(offset));
  }
  bool deref(std::uint64_t address, unsigned size) {
    std::uint8_t raw[8] = {};
    if (!context_.memory || !context_.memory->read(address, raw, size)) {
      char text[64];
      std::snprintf(text, sizeof text, "cannot read %u bytes at 0x%llx", size, static_cast<unsigned long long>(address));
      return fail(ErrorCode::kIo, text);
    }
    std::uint64_t value = 0;
    for (unsigned i = 0; i < size; ++i)
      value |= static_cast<std::uint64_t>(raw[i]) << (8 * (context_.little_endian ? i : size - 1 - i));
    return push(value);
  }
  bool operand(unsigned size, std::uint64_t& value) { return in_.read_unsigned(size, value) || truncated(); }
  bool operand_signed(unsigned size, std::int64_t& value) { return in_.read_signed(size, value) || truncated(); }
  bool operand_u(std::uint64_t& value) { return in_.uleb128(value) || truncated(); }
  bool operand_s(std::int64_t& value) { return in_.sleb128(value) || truncated(); }
  bool truncated() { return fail(ErrorCode::kTruncated, "the expression ends inside an operand"); }
  bool underflow() { return fail(ErrorCode::kBadFormat, "stack underflow"); }
  bool fail(ErrorCode code, std::string message) {
    error_ = make_error(code, "DW_OP expression: " + std::move(message), {}, context_.section_offset + op_offset_);
    return false;
  }

  detail::ByteReader in_;
  const ExpressionContext& context_;
  static constexpr unsigned kStackCapacity = 256;
  const unsigned max_stack_;
  std::uint64_t stack_[kStackCapacity];
  std::size_t depth_ = 0;
  std::uint64_t op_offset_ = 0;
  Error error_;
};

}  // namespace

Expected<std::uint64_t> evaluate_expression(std::span<const std::uint8_t> expression, const ExpressionContext& context,
                                            std::optional<std::uint64_t> initial) {
  Evaluator evaluator(expression, context);
  return evaluator.run(initial);
}

}  // namespace tracecorn::unwind

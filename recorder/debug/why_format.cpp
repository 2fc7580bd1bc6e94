// Role: the data-flow tree of why.h as text (a tree a person reads, one line
// per value) and as JSON (for tools: one object per node, its inputs nested).
// Pure functions of the tree; no I/O.
#include <fmt/format.h>

#include "recorder/debug/why.h"

namespace tracecorn::debug {
namespace {

using Source = WhyNode::Source;

std::string what(const WhyNode& node, const arch::ArchInfo& arch) {
  if (node.target.is_register) return std::string(arch.registers[node.target.register_index].name);
  return fmt::format("[{:#x}, {} byte{}]", node.target.address, node.target.length, node.target.length == 1 ? "" : "s");
}

// A register's value as a number; memory's bytes in memory order.
std::string value_text(const WhyNode& node) {
  if (node.value.empty()) return "?";
  std::string text;
  if (node.target.is_register) {
    text = "0x";
    for (auto it = node.value.rbegin(); it != node.value.rend(); ++it) text += fmt::format("{:02x}", *it);
    return text;
  }
  for (const std::uint8_t byte : node.value) text += fmt::format("{}{:02x}", text.empty() ? "" : " ", byte);
  if (node.value.size() < node.target.length) text += " ...";
  return text;
}

std::string where(const WhyNode& node) {
  return fmt::format("{:#x}{}: {}", node.pc, node.symbol.empty() ? "" : " " + node.symbol,
                     node.instruction.empty() ? "(not decoded)" : node.instruction);
}

std::string source_text(const WhyNode& node) {
  switch (node.source) {
    case Source::kInstruction: return fmt::format("written by {} (event {})", where(node), node.event);
    case Source::kImmediate: return fmt::format("set by {} (event {}), from no data: an immediate", where(node), node.event);
    case Source::kSyscall: {
      std::string text = fmt::format("written by the kernel in {} (event {})", node.syscall, node.event);
      if (!node.file.empty()) text += " from " + node.file;
      if (node.file_offset) text += fmt::format(" at offset {}", *node.file_offset);
      return text;
    }
    case Source::kSignal: return fmt::format("written by a signal's delivery (event {})", node.event);
    case Source::kThreadStart: return "the value the thread started with (clone)";
    case Source::kInitialImage: return "in the initial memory: " + node.symbol;
    case Source::kInitialMemory: return "in the initial memory (stack or anonymous memory)";
    case Source::kInitialRegister: return "the initial value";
    case Source::kUnknown: return "unknown to the trace";
    case Source::kPieces: return fmt::format("from {} writers:", node.inputs.size());
  }
  return "";
}

void add_text(std::string& out, const WhyNode& node, const arch::ArchInfo& arch, const std::string& indent,
              bool last, bool root) {
  out += root ? "" : indent + (last ? "`- " : "|- ");
  out += fmt::format("{} = {}: {}", what(node, arch), value_text(node), source_text(node));
  if (node.seen_before) out += " (explained above)";
  if (node.cut) out += " (its inputs are deeper than --depth)";
  out += "\n";
  const std::string child_indent = root ? "" : indent + (last ? "   " : "|  ");
  for (std::size_t i = 0; i < node.inputs.size(); ++i)
    add_text(out, node.inputs[i], arch, child_indent, i + 1 == node.inputs.size(), false);
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    else out += c;
  }
  return out + "\"";
}

std::string_view source_name(Source source) {
  switch (source) {
    case Source::kInstruction: return "instruction";
    case Source::kImmediate: return "immediate";
    case Source::kSyscall: return "syscall";
    case Source::kSignal: return "signal";
    case Source::kThreadStart: return "thread-start";
    case Source::kInitialImage: return "initial-image";
    case Source::kInitialMemory: return "initial-memory";
    case Source::kInitialRegister: return "initial-register";
    case Source::kUnknown: return "unknown";
    case Source::kPieces: return "pieces";
  }
  return "unknown";
}

void add_json(std::string& out, const WhyNode& node, const arch::ArchInfo& arch) {
  out += "{";
  if (node.target.is_register) out += "\"register\":" + json_string(arch.registers[node.target.register_index].name);
  else out += fmt::format("\"address\":{},\"size\":{}", node.target.address, node.target.length);
  out += ",\"value\":" + json_string(value_text(node)) + ",\"source\":" + json_string(source_name(node.source));
  if (node.source != Source::kPieces && node.event) out += fmt::format(",\"event\":{}", node.event);
  if (node.source == Source::kInstruction || node.source == Source::kImmediate)
    out += fmt::format(",\"pc\":{},\"instruction\":{}", node.pc, json_string(node.instruction));
  if (!node.symbol.empty()) out += ",\"symbol\":" + json_string(node.symbol);
  if (!node.syscall.empty()) out += ",\"syscall\":" + json_string(node.syscall);
  if (!node.file.empty()) out += ",\"file\":" + json_string(node.file);
  if (node.file_offset) out += fmt::format(",\"offset\":{}", *node.file_offset);
  if (node.seen_before) out += ",\"seen_before\":true";
  if (node.cut) out += ",\"cut\":true";
  if (!node.inputs.empty()) {
    out += ",\"inputs\":[";
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      if (i) out += ",";
      add_json(out, node.inputs[i], arch);
    }
    out += "]";
  }
  out += "}";
}

}  // namespace

std::string why_text(const WhyNode& root, const arch::ArchInfo& arch) {
  std::string out;
  add_text(out, root, arch, "", true, true);
  return out;
}

std::string why_json(const WhyNode& root, const arch::ArchInfo& arch) {
  std::string out;
  add_json(out, root, arch);
  return out + "\n";
}

}  // namespace tracecorn::debug

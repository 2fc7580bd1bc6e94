// Role: the byte level of gdb's remote serial protocol (the gdb manual,
// "Remote Protocol": "Overview" and "Packets"): splitting what a client sends
// into packets, acknowledgements and interrupts, checking each packet's
// checksum and undoing its escapes; and framing the replies. Nothing here
// knows what a packet means (that is GdbSession, gdb_session.h).
// Who calls it: the debug server's connection loop (debug_server.cpp), tests
// and the fuzzer; one thread per parser.
// Untrusted input: every byte the client sends. A packet longer than
// kMaxPacketBytes, a bad checksum or a stray byte becomes an item the session
// answers (a '-', an error), never a crash or unbounded memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tracecorn::debug {

// The largest packet body accepted (what qSupported's PacketSize advertises).
inline constexpr std::size_t kMaxPacketBytes = 16384;

struct ClientItem {
  enum class Kind : std::uint8_t {
    kPacket,       // `payload` holds the packet's body, escapes undone
    kAck,          // '+'
    kNack,         // '-': the client asks for the last reply again
    kInterrupt,    // 0x03 (Ctrl-C)
    kBadChecksum,  // a packet whose checksum does not match (answered with '-')
    kTooLong,      // a packet longer than kMaxPacketBytes (answered with an error)
  };
  Kind kind;
  std::string payload;
};

class PacketParser {
 public:
  // Feeds the next bytes from the client; every complete item is appended to
  // `out`, in order. Bytes outside a packet other than '+', '-' and 0x03 are
  // ignored (as gdbserver does).
  void feed(std::span<const std::uint8_t> bytes, std::vector<ClientItem>& out);

 private:
  enum class State : std::uint8_t { kIdle, kBody, kEscape, kChecksumHigh, kChecksumLow };
  void finish(std::vector<ClientItem>& out, std::uint8_t given);
  State state_ = State::kIdle;
  std::string body_;
  std::uint8_t sum_ = 0;
  std::uint8_t checksum_high_ = 0;
  bool too_long_ = false;
};

// "$" payload "#" checksum, with '$', '#', '}' and '*' escaped.
std::string frame_packet(std::string_view payload);

// Lower-case hex of `bytes`.
std::string to_hex(std::span<const std::uint8_t> bytes);
// Parses hex digits (an even count) into bytes; false on any other character.
bool from_hex(std::string_view text, std::vector<std::uint8_t>& out);
// Parses a hex number (at most 16 digits, no prefix); false when empty or malformed.
bool parse_hex_number(std::string_view text, std::uint64_t& value);

}  // namespace tracecorn::debug

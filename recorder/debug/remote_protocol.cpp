// Role: implementation of the remote protocol's byte level (remote_protocol.h).
#include "recorder/debug/remote_protocol.h"

namespace tracecorn::debug {
namespace {

int hex_digit(std::uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr char kHex[] = "0123456789abcdef";

}  // namespace

void PacketParser::finish(std::vector<ClientItem>& out, std::uint8_t given) {
  if (too_long_) {
    out.push_back({ClientItem::Kind::kTooLong, {}});
  } else if (given != sum_) {
    out.push_back({ClientItem::Kind::kBadChecksum, {}});
  } else {
    out.push_back({ClientItem::Kind::kPacket, std::move(body_)});
  }
  body_.clear();
  state_ = State::kIdle;
}

void PacketParser::feed(std::span<const std::uint8_t> bytes, std::vector<ClientItem>& out) {
  for (const std::uint8_t c : bytes) {
    switch (state_) {
      case State::kIdle:
        if (c == '$') {
          state_ = State::kBody, sum_ = 0, too_long_ = false;
          body_.clear();
        } else if (c == '+') {
          out.push_back({ClientItem::Kind::kAck, {}});
        } else if (c == '-') {
          out.push_back({ClientItem::Kind::kNack, {}});
        } else if (c == 0x03) {
          out.push_back({ClientItem::Kind::kInterrupt, {}});
        }
        break;
      case State::kBody:
      case State::kEscape:
        if (c == '#' && state_ == State::kBody) {
          state_ = State::kChecksumHigh;
          break;
        }
        sum_ = static_cast<std::uint8_t>(sum_ + c);
        if (state_ == State::kBody && c == '}') {
          state_ = State::kEscape;
          break;
        }
        if (body_.size() >= kMaxPacketBytes) {
          too_long_ = true;  // keep reading to the '#': the next packet starts after it
        } else {
          body_.push_back(static_cast<char>(state_ == State::kEscape ? c ^ 0x20 : c));
        }
        state_ = State::kBody;
        break;
      case State::kChecksumHigh:
      case State::kChecksumLow: {
        const int digit = hex_digit(c);
        if (digit < 0) {
          out.push_back({ClientItem::Kind::kBadChecksum, {}});
          body_.clear();
          state_ = State::kIdle;
        } else if (state_ == State::kChecksumHigh) {
          checksum_high_ = static_cast<std::uint8_t>(digit);
          state_ = State::kChecksumLow;
        } else {
          finish(out, static_cast<std::uint8_t>(checksum_high_ << 4 | digit));
        }
        break;
      }
    }
  }
}

std::string frame_packet(std::string_view payload) {
  std::string framed = "$";
  std::uint8_t sum = 0;
  for (const char c : payload) {
    if (c == '$' || c == '#' || c == '}' || c == '*') {
      framed.push_back('}');
      framed.push_back(static_cast<char>(c ^ 0x20));
      sum = static_cast<std::uint8_t>(sum + '}' + (c ^ 0x20));
    } else {
      framed.push_back(c);
      sum = static_cast<std::uint8_t>(sum + static_cast<std::uint8_t>(c));
    }
  }
  framed.push_back('#');
  framed.push_back(kHex[sum >> 4]);
  framed.push_back(kHex[sum & 15]);
  return framed;
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  std::string text;
  text.reserve(bytes.size() * 2);
  for (const std::uint8_t b : bytes) {
    text.push_back(kHex[b >> 4]);
    text.push_back(kHex[b & 15]);
  }
  return text;
}

bool from_hex(std::string_view text, std::vector<std::uint8_t>& out) {
  if (text.size() % 2) return false;
  out.clear();
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int high = hex_digit(static_cast<std::uint8_t>(text[i]));
    const int low = hex_digit(static_cast<std::uint8_t>(text[i + 1]));
    if (high < 0 || low < 0) return false;
    out.push_back(static_cast<std::uint8_t>(high << 4 | low));
  }
  return true;
}

bool parse_hex_number(std::string_view text, std::uint64_t& value) {
  if (text.empty() || text.size() > 16) return false;
  value = 0;
  for (const char c : text) {
    const int digit = hex_digit(static_cast<std::uint8_t>(c));
    if (digit < 0) return false;
    value = value << 4 | static_cast<std::uint64_t>(digit);
  }
  return true;
}

}  // namespace tracecorn::debug

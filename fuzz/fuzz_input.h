#pragma once
// Reading a fuzz input as a sequence of choices, shared by the fuzz targets: each target
// takes its opcodes, masks, chunk sizes and fields from the input front to back. Past the
// input's end every read yields zeros (or empty fields), so every input, even an empty
// one, is a complete and deterministic run, and libFuzzer's mutations of one byte change
// one choice.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tutti::fuzz {

class FuzzInput {
 public:
  explicit FuzzInput(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::uint8_t u8() { return pos_ < bytes_.size() ? bytes_[pos_++] : 0; }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | u8();
    return v;
  }
  std::uint64_t u64() { return (std::uint64_t{u32()} << 32) | u32(); }
  bool flag() { return (u8() & 1) != 0; }

  /// N bytes (zeros past the end).
  template <std::size_t N>
  std::array<std::uint8_t, N> array() {
    std::array<std::uint8_t, N> out{};
    for (std::uint8_t& b : out) b = u8();
    return out;
  }

  /// A length-prefixed field: one length byte, or 0xff then two more giving twice their
  /// value, so that both short fields and ones of a few kilobytes are a mutation away.
  /// Cut at the input's end.
  std::vector<std::uint8_t> field() {
    std::size_t len = u8();
    if (len == 0xff) len = (std::size_t{u8()} << 8 | u8()) * 2;
    len = std::min(len, bytes_.size() - pos_);
    std::vector<std::uint8_t> out(bytes_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                  bytes_.begin() + static_cast<std::ptrdiff_t>(pos_ + len));
    pos_ += len;
    return out;
  }
  std::string text() {
    const std::vector<std::uint8_t> b = field();
    return std::string(b.begin(), b.end());
  }
  /// Up to 255 texts, counted by one byte.
  std::vector<std::string> texts() {
    std::vector<std::string> out(u8());
    for (std::string& t : out) t = text();
    return out;
  }

  /// Whatever the input holds after the choices read so far.
  std::span<const std::uint8_t> rest() const { return bytes_.subspan(pos_); }
  bool exhausted() const { return pos_ >= bytes_.size(); }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

}  // namespace tutti::fuzz

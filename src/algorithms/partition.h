#pragma once
// Splitting `count` elements into `parts` nearly equal contiguous pieces: the first
// count % parts pieces get one element more. Used for ring chunks and for the segments of
// a chunk, so every rank computes the same boundaries.

#include <cstdint>

namespace tutti {

constexpr std::uint64_t partCount(std::uint64_t count, std::uint64_t parts, std::uint64_t index) {
  return count / parts + (index < count % parts ? 1 : 0);
}

constexpr std::uint64_t partOffset(std::uint64_t count, std::uint64_t parts, std::uint64_t index) {
  std::uint64_t base = count / parts;
  std::uint64_t extra = count % parts;
  return index * base + (index < extra ? index : extra);
}

constexpr std::uint64_t ceilDiv(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace tutti

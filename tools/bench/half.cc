#include "bench/half.h"

#include <bit>
#include <cmath>

namespace tutti::bench {
namespace {

constexpr std::uint32_t kFloatExpMask = 0x7f800000u;
constexpr std::uint32_t kFloatAbsMask = 0x7fffffffu;
// |x| >= 65520 (0x477ff000) rounds to infinity: it is the midpoint between the largest
// half (65504, odd mantissa) and 65536, and a tie goes to the even side, which overflows.
constexpr std::uint32_t kHalfOverflow = 0x477ff000u;
// 2^-14, the smallest normal half; below it the result is subnormal or zero.
constexpr std::uint32_t kHalfMinNormal = 0x38800000u;

}  // namespace

float halfToFloat(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) {
    // Infinity, or NaN with its payload moved to the top of the float mantissa.
    const std::uint32_t quiet = mantissa != 0 ? 0x00400000u : 0u;
    return std::bit_cast<float>(sign | kFloatExpMask | quiet | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

std::uint16_t floatToHalf(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & kFloatAbsMask;
  if (magnitude > kFloatExpMask) {
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= kHalfOverflow) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (magnitude < kHalfMinNormal) {
    // Scaling by 2^24 is exact, and nearbyint rounds to nearest-even in the default
    // rounding mode. A result of 1024 is the smallest normal, whose encoding is 0x0400.
    const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)));
  }
  const std::uint32_t exponent = (magnitude >> 23) - 127 + 15;
  const std::uint32_t mantissa = magnitude & 0x7fffffu;
  std::uint32_t half = (exponent << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent; overflow was handled above.
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

float bfloat16ToFloat(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t floatToBfloat16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & kFloatAbsMask) > kFloatExpMask) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  }
  // Adding 0x7fff plus the lowest kept bit rounds half to even; a carry into the exponent
  // is the correct result, up to and including infinity.
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

}  // namespace tutti::bench

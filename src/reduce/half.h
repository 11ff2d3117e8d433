#pragma once
// Scalar float16 / bfloat16 <-> float32 conversions, written branch-free (every case is
// computed and the right one selected) so that GCC can vectorise loops that call them with
// plain SSE2 integer and float instructions. Internal to the reduce layer: the rest of
// tutti uses the out-of-line wrappers declared in reduce/reduce.h.
//
// Conventions shared by all four functions (and by the F16C path, which must agree):
// - rounding is to nearest, ties to even, done once;
// - a NaN stays a NaN: its sign and the top payload bits are kept and the quiet bit is set
//   (this is what x86 VCVTPH2PS/VCVTPS2PH do, so both paths give identical bits);
// - finite values too large for the narrow format become +-infinity;
// - float16 subnormals are produced and consumed exactly (no flush to zero).
// The float16 subnormal cases use one float32 operation each, so they assume the default
// rounding mode (to nearest), which every thread starts with. Flush-to-zero and
// denormals-are-zero do not matter: those operations never produce a float32 subnormal,
// and a float32 subnormal input rounds to a float16 zero either way.

#include <bit>
#include <cstdint>

namespace tutti::reduce::detail {

// float32 bit patterns used below, named so the arithmetic reads as intent.
inline constexpr std::uint32_t kF32AbsMask = 0x7fffffffu;
inline constexpr std::uint32_t kF32Inf = 0x7f800000u;
inline constexpr std::uint32_t kF32QuietBit = 0x00400000u;
// 2^-14: the smallest normal float16, as float32 bits.
inline constexpr std::uint32_t kF32HalfMinNormal = 0x38800000u;
// 65520.0f: halfway between 65504 (largest finite float16, odd mantissa) and 65536, so it
// and everything above it rounds to infinity under ties-to-even.
inline constexpr std::uint32_t kF32HalfOverflow = 0x477ff000u;
// Difference of the exponent biases (127 - 15), already shifted into the exponent field.
inline constexpr std::uint32_t kHalfRebias = 112u << 23;

/// Widens an IEEE binary16 bit pattern to float32 exactly (NaNs are quieted).
inline float halfBitsToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  // Exponent and mantissa moved to their float32 positions, then rebiased: exact for
  // normal numbers.
  const std::uint32_t shifted = static_cast<std::uint32_t>(h & 0x7fffu) << 13;
  const std::uint32_t exp = shifted & 0x0f800000u;
  const std::uint32_t normal = shifted + kHalfRebias;
  // Infinity and NaN (exponent 31): rebias once more to reach exponent 255; a NaN also
  // gets the quiet bit.
  const std::uint32_t quiet = (shifted & 0x007fe000u) != 0 ? kF32QuietBit : 0u;
  const std::uint32_t special = (normal + kHalfRebias) | quiet;
  // Subnormals and zero (exponent 0): read the bits as 2^-14 * (1 + mant/1024) by setting
  // the exponent one above `normal`'s, then subtract 2^-14, leaving mant * 2^-24 exactly.
  const std::uint32_t sub =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(normal + (1u << 23)) - 0x1p-14f);
  const std::uint32_t mag = exp == 0x0f800000u ? special : (exp == 0 ? sub : normal);
  return std::bit_cast<float>(sign | mag);
}

/// Narrows float32 to the nearest binary16 bit pattern (ties to even).
inline std::uint16_t floatToHalfBits(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t abs = bits & kF32AbsMask;
  // Normal results: rebias, then add just under half an ulp plus the ulp's low bit, so that
  // exact ties round up only from an odd mantissa. A carry out of the mantissa correctly
  // bumps the exponent (and abs < kF32HalfOverflow keeps the result below infinity).
  const std::uint32_t normal = (abs - kHalfRebias + 0x0fffu + ((abs >> 13) & 1u)) >> 13;
  // Subnormal results: adding 0.5f forces the sum's ulp to 2^-24, the float16 subnormal
  // step, so the FPU rounds |f| to a multiple of 2^-24 (ties to even) and the low mantissa
  // bits of the sum are that multiple. A result of 0x400 is the smallest normal, which is
  // also its correct encoding.
  const std::uint32_t sub =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(abs) + 0.5f) - 0x3f000000u;
  const std::uint32_t nan = 0x7e00u | ((abs >> 13) & 0x03ffu);
  // Compared as signed (abs < 2^31): SSE2 has signed 32-bit compares only, and emulating
  // unsigned ones would double the instruction count of the vectorised loop.
  const auto sabs = static_cast<std::int32_t>(abs);
  const std::uint32_t mag = sabs > std::int32_t{kF32Inf}              ? nan
                            : sabs >= std::int32_t{kF32HalfOverflow}  ? 0x7c00u
                            : sabs >= std::int32_t{kF32HalfMinNormal} ? normal
                                                                      : sub;
  return static_cast<std::uint16_t>(sign | mag);
}

/// Widens a bfloat16 bit pattern to float32 (exact: bfloat16 is float32's top half). NaNs
/// are quieted, matching the float16 convention.
inline float bfloat16BitsToFloat(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  const bool isNan = (bits & kF32AbsMask) > kF32Inf;
  return std::bit_cast<float>(isNan ? (bits | kF32QuietBit) : bits);
}

/// Narrows float32 to the nearest bfloat16 bit pattern (ties to even). Rounding carries
/// into the exponent naturally, so values past the largest finite bfloat16 become infinity.
inline std::uint16_t floatToBfloat16Bits(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  // Rounding a NaN could carry its payload away, so NaNs are truncated and quieted instead.
  const std::uint32_t nan = bits | kF32QuietBit;
  // The signed shift keeps the value in int16's range, which lets SSE2 narrow 32-bit lanes
  // with fewer shuffles; the low 16 bits are the same as with an unsigned shift.
  const bool isNan = static_cast<std::int32_t>(bits & kF32AbsMask) > std::int32_t{kF32Inf};
  const auto picked = static_cast<std::int32_t>(isNan ? nan : rounded);
  return static_cast<std::uint16_t>(picked >> 16);
}

}  // namespace tutti::reduce::detail

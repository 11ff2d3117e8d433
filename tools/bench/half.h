#pragma once
// float16 and bfloat16 conversions for the benchmark's checker. They are written here, not
// taken from src/reduce, on purpose: the checker must not share code with what it checks.

#include <cstdint>

namespace tutti::bench {

/// Exact widening of an IEEE binary16 bit pattern; NaN payloads are kept (and quieted).
float halfToFloat(std::uint16_t bits);

/// Narrows to binary16 with round-to-nearest-even; values at or above 65520 in magnitude
/// become infinity, tiny values become subnormals or (signed) zero, NaN stays a quiet NaN.
std::uint16_t floatToHalf(float value);

/// Exact widening of a bfloat16 bit pattern (the high half of a float32).
float bfloat16ToFloat(std::uint16_t bits);

/// Narrows to bfloat16 with round-to-nearest-even; overflow gives infinity, NaN stays a
/// quiet NaN.
std::uint16_t floatToBfloat16(float value);

}  // namespace tutti::bench

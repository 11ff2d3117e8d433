#pragma once
// Independent scalar reference for the reduce kernels. It shares no code with src/reduce:
// narrow floats are decoded with exact arithmetic (ldexp) and rounded by searching a
// table of every representable value, and results are computed in double (or 64-bit
// integers) and rounded once to the element type.

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tutti/types.h"

namespace tutti::reduce::ref {

/// Exact value of a binary16 / bfloat16 bit pattern (NaN patterns give a NaN double).
double refHalfToDouble(std::uint16_t h);
double refBfloat16ToDouble(std::uint16_t b);

/// Correctly rounded (nearest, ties to even) binary16 / bfloat16 pattern for `x`; values
/// past the largest finite one round to infinity by the same rule. NaN gives the canonical
/// quiet NaN (tests compare NaNs by NaN-ness only).
std::uint16_t refRoundToHalf(double x);
std::uint16_t refRoundToBfloat16(double x);

/// Element-wise a op b over `count` elements of `dtype` stored as raw bytes.
std::vector<std::uint8_t> refCombine(DataType dtype, ReduceOp op,
                                     const std::vector<std::uint8_t>& a,
                                     const std::vector<std::uint8_t>& b, std::size_t count);

/// kAvg's final step: every element divided by worldSize (see reduce.h for the rules).
std::vector<std::uint8_t> refAverage(DataType dtype, const std::vector<std::uint8_t>& in,
                                     std::size_t count, int worldSize);

/// Element `i` of x and y are equal: integers and non-NaN floats bit for bit, NaN against
/// any NaN. On a difference, `why` (if given) gets both values in readable form.
bool sameElement(DataType dtype, const std::uint8_t* x, const std::uint8_t* y, std::size_t i,
                 std::string* why = nullptr);

/// `count` random elements of `dtype`: integers over their full range (so sums and
/// products wrap), floats as a mix of arbitrary bit patterns (NaN, inf, subnormals) and
/// moderate values whose combinations round in interesting ways.
std::vector<std::uint8_t> randomElements(DataType dtype, std::size_t count, std::mt19937_64& rng);

/// Bytes of one `value` of `dtype` (value converted with the reference rounding; integers
/// truncated by static_cast). For building explicit test cases.
std::vector<std::uint8_t> encode(DataType dtype, double value);

/// The element `i` of `bytes` as a double (exact for every type except 64-bit integers
/// beyond 2^53, which tests do not pass here).
double decode(DataType dtype, const std::uint8_t* bytes, std::size_t i);

/// True for the four floating-point types.
bool isFloating(DataType dtype);

}  // namespace tutti::reduce::ref

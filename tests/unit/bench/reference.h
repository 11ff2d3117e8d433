#pragma once
// Brute-force references for the benchmark's tests: 16-bit float formats decoded with
// ldexp and rounded by searching the table of all their values. Deliberately slow and
// obvious, and sharing no code with tools/bench/half.cc.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tutti::bench::reference {

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;
__extension__ typedef __float128 Quad;

/// A 16-bit binary floating format: 1 sign bit, `expBits` exponent bits, the rest mantissa.
struct Format16 {
  int expBits;
  int mantBits() const { return 15 - expBits; }
  int bias() const { return (1 << (expBits - 1)) - 1; }
  std::uint16_t infBits() const { return static_cast<std::uint16_t>(((1 << expBits) - 1) << mantBits()); }
};

inline constexpr Format16 kHalf{5};
inline constexpr Format16 kBfloat16{8};

/// The value of a bit pattern, computed from the definition of the format.
inline double decode(std::uint16_t bits, Format16 format) {
  const int mantBits = format.mantBits();
  const int exponent = (bits >> mantBits) & ((1 << format.expBits) - 1);
  const int mantissa = bits & ((1 << mantBits) - 1);
  const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (exponent == (1 << format.expBits) - 1) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - format.bias() - mantBits);
  return sign * std::ldexp((1 << mantBits) + mantissa, exponent - format.bias() - mantBits);
}

/// Rounds to the nearest value of the format, ties to the even bit pattern, by a search in
/// the sorted table of every non-negative finite value. Past the largest finite value the
/// next "value" is 2^(emax+1), encoded as infinity (even), so overflow needs no rule.
class Rounder {
 public:
  explicit Rounder(Format16 format) : format_(format) {
    const std::uint16_t inf = format.infBits();
    for (std::uint16_t bits = 0; bits < inf; ++bits) values_.push_back(decode(bits, format));
    values_.push_back(std::ldexp(1.0, format.bias() + 1));  // stands for infinity
  }

  std::uint16_t round(double x) const {
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double magnitude = std::fabs(x);
    if (magnitude >= values_.back()) return static_cast<std::uint16_t>(sign | format_.infBits());
    const auto upper = std::upper_bound(values_.begin(), values_.end(), magnitude);
    const auto hi = static_cast<std::uint16_t>(upper - values_.begin());
    const auto lo = static_cast<std::uint16_t>(hi - 1);
    const double dLo = magnitude - values_[lo];
    const double dHi = values_[hi] - magnitude;
    const std::uint16_t pick = dLo < dHi ? lo : dHi < dLo ? hi : ((lo & 1) == 0 ? lo : hi);
    return static_cast<std::uint16_t>(sign | pick);
  }

 private:
  Format16 format_;
  std::vector<double> values_;
};

}  // namespace tutti::bench::reference

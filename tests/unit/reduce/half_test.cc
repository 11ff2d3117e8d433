// float16 / bfloat16 conversions: exhaustive over every 16-bit pattern, every tie between
// two neighbouring values, named edge cases, random float32 inputs against the reference,
// and the combine kernels' single rounding.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "reduce/kernels.h"
#include "reduce/reduce.h"
#include "unit/reduce/reference.h"

namespace tutti::reduce {
namespace {

float fromBits(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint32_t toBits(float f) { return std::bit_cast<std::uint32_t>(f); }

bool isHalfNan(std::uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool isBf16Nan(std::uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

TEST(HalfConversion, ExhaustiveWideningAndRoundTrip) {
  for (std::uint32_t p = 0; p <= 0xffff; ++p) {
    const auto h = static_cast<std::uint16_t>(p);
    const float f = halfToFloat(h);
    const double expected = ref::refHalfToDouble(h);
    if (isHalfNan(h)) {
      // Sign and payload kept, quiet bit set.
      const std::uint32_t want = (static_cast<std::uint32_t>(h & 0x8000) << 16) | 0x7fc00000u |
                                 (static_cast<std::uint32_t>(h & 0x3ff) << 13);
      ASSERT_EQ(toBits(f), want) << std::hex << "h=0x" << p;
      ASSERT_EQ(floatToHalf(f), h | 0x200) << std::hex << "h=0x" << p;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), expected) << std::hex << "h=0x" << p;
    ASSERT_EQ(std::signbit(f), std::signbit(expected)) << std::hex << "h=0x" << p;
    ASSERT_EQ(floatToHalf(f), h) << std::hex << "h=0x" << p;
  }
}

TEST(Bfloat16Conversion, ExhaustiveWideningAndRoundTrip) {
  for (std::uint32_t p = 0; p <= 0xffff; ++p) {
    const auto b = static_cast<std::uint16_t>(p);
    const float f = bfloat16ToFloat(b);
    if (isBf16Nan(b)) {
      ASSERT_EQ(toBits(f), (p << 16) | 0x00400000u) << std::hex << "b=0x" << p;
      ASSERT_EQ(floatToBfloat16(f), b | 0x40) << std::hex << "b=0x" << p;
      continue;
    }
    const double expected = ref::refBfloat16ToDouble(b);
    ASSERT_EQ(static_cast<double>(f), expected) << std::hex << "b=0x" << p;
    ASSERT_EQ(std::signbit(f), std::signbit(expected)) << std::hex << "b=0x" << p;
    ASSERT_EQ(floatToBfloat16(f), b) << std::hex << "b=0x" << p;
  }
}

// For every pair of neighbouring non-negative values (lo, hi), including the largest
// finite value and infinity: the exact midpoint goes to the even pattern, the floats just
// below and above it go to lo and hi. Same for the negative mirror images.
template <typename Decode, typename Convert>
void checkAllTies(Decode decode, Convert convert, std::uint16_t infPattern, double infValue) {
  for (std::uint32_t lo = 0; lo < infPattern; ++lo) {
    const std::uint32_t hi = lo + 1;
    const double hiValue = hi == infPattern ? infValue : decode(static_cast<std::uint16_t>(hi));
    const double mid = (decode(static_cast<std::uint16_t>(lo)) + hiValue) / 2;
    const auto midF = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(midF), mid) << "midpoint not exact for lo=" << lo;
    const std::uint32_t even = (lo % 2 == 0) ? lo : hi;
    const float below = std::nextafter(midF, 0.0f);
    const float above = std::nextafter(midF, std::numeric_limits<float>::infinity());
    for (std::uint32_t sign : {0u, 0x8000u}) {
      const float s = sign != 0 ? -1.0f : 1.0f;
      ASSERT_EQ(convert(s * midF), sign | even) << std::hex << "tie above 0x" << lo;
      ASSERT_EQ(convert(s * below), sign | lo) << std::hex << "below the tie above 0x" << lo;
      ASSERT_EQ(convert(s * above), sign | hi) << std::hex << "above the tie above 0x" << lo;
    }
  }
}

TEST(HalfConversion, EveryTieRoundsToEven) {
  checkAllTies(&ref::refHalfToDouble, &floatToHalf, 0x7c00, 0x1p16);
}

TEST(Bfloat16Conversion, EveryTieRoundsToEven) {
  checkAllTies(&ref::refBfloat16ToDouble, &floatToBfloat16, 0x7f80, 0x1p128);
}

TEST(HalfConversion, NamedCases) {
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);    // largest finite
  EXPECT_EQ(floatToHalf(65519.996f), 0x7bff);  // just below the overflow tie
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);    // the tie goes to "even" infinity
  EXPECT_EQ(floatToHalf(-1e6f), 0xfc00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(floatToHalf(0x1p-14f), 0x0400);         // smallest normal
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);         // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);         // tie between 0 and 1: to 0
  EXPECT_EQ(floatToHalf(0x1.000002p-25f), 0x0001);  // just above that tie
  EXPECT_EQ(floatToHalf(0x3p-25f), 0x0002);         // tie between 1 and 2: to 2
  EXPECT_EQ(floatToHalf(-0x1p-26f), 0x8000);        // underflow keeps the sign
  EXPECT_EQ(floatToHalf(0x3ffp-24f), 0x03ff);       // largest subnormal
  EXPECT_EQ(floatToHalf(0x7ffp-25f), 0x0400);       // its tie with the smallest normal
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);  // tie: to even (down)
  EXPECT_EQ(floatToHalf(1.0f + 0x3p-11f), 0x3c02);  // tie: to even (up)
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
}

TEST(HalfConversion, NansStayQuietNans) {
  // A signalling NaN whose payload lies entirely in the bits float16 drops must not turn
  // into infinity.
  EXPECT_EQ(floatToHalf(fromBits(0x7f800001u)), 0x7e00);
  EXPECT_EQ(floatToHalf(fromBits(0xff800001u)), 0xfe00);
  EXPECT_EQ(floatToHalf(fromBits(0x7fc00000u)), 0x7e00);
  EXPECT_EQ(floatToHalf(fromBits(0x7fffe000u)), 0x7fff);  // top payload bits kept
  EXPECT_EQ(toBits(halfToFloat(0x7c01)), 0x7fc02000u);    // signalling half -> quiet float
  EXPECT_TRUE(std::isnan(halfToFloat(0xfe00)));
}

TEST(Bfloat16Conversion, NamedCases) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBfloat16(1.0f + 0x1p-8f), 0x3f80);         // tie: to even (down)
  EXPECT_EQ(floatToBfloat16(1.0f + 0x3p-8f), 0x3f82);         // tie: to even (up)
  EXPECT_EQ(floatToBfloat16(fromBits(0x3f808001u)), 0x3f81);  // just above a tie
  EXPECT_EQ(floatToBfloat16(0x1.fep127f), 0x7f7f);            // largest finite
  EXPECT_EQ(floatToBfloat16(fromBits(0x7f7f7fffu)), 0x7f7f);  // just below the overflow tie
  EXPECT_EQ(floatToBfloat16(fromBits(0x7f7f8000u)), 0x7f80);  // the tie: to infinity
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(floatToBfloat16(fromBits(0x00008000u)), 0x0000);  // subnormal tie: to 0
  EXPECT_EQ(floatToBfloat16(fromBits(0x00018000u)), 0x0002);  // subnormal tie: to 2
  EXPECT_EQ(floatToBfloat16(fromBits(0x80000001u)), 0x8000);  // underflow keeps the sign
  EXPECT_EQ(floatToBfloat16(fromBits(0x007fffffu)), 0x0080);  // rounds up to a normal
  EXPECT_EQ(floatToBfloat16(fromBits(0x7f800001u)), 0x7fc0);  // NaN stays (quiet) NaN
  EXPECT_EQ(floatToBfloat16(fromBits(0xff800001u)), 0xffc0);
  EXPECT_EQ(floatToBfloat16(fromBits(0x7fffffffu)), 0x7fff);  // no carry out of a NaN
}

TEST(NarrowConversions, RandomFloatsMatchReference) {
  std::mt19937 rng(2024);
  for (int i = 0; i < 1'000'000; ++i) {
    // Alternate arbitrary patterns with values near float16's range, where most of its
    // rounding cases live.
    const float f = (i % 2 == 0) ? fromBits(rng())
                                 : std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng),
                                              static_cast<int>(rng() % 48) - 30);
    const std::uint16_t h = floatToHalf(f);
    const std::uint16_t b = floatToBfloat16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(isHalfNan(h) && (h & 0x200) != 0) << std::hex << toBits(f);
      ASSERT_TRUE(isBf16Nan(b) && (b & 0x40) != 0) << std::hex << toBits(f);
      continue;
    }
    ASSERT_EQ(h, ref::refRoundToHalf(f)) << std::hex << "f bits 0x" << toBits(f);
    ASSERT_EQ(b, ref::refRoundToBfloat16(f)) << std::hex << "f bits 0x" << toBits(f);
  }
}

// ---- the combine kernels on narrow floats -------------------------------------------------

std::vector<detail::CombineFn> kernels(DataType dtype, ReduceOp op) {
  std::vector<detail::CombineFn> out;
  for (int i = 0; i < detail::kNumIsas; ++i) {
    const auto isa = static_cast<detail::Isa>(i);
    if (detail::isaSupported(isa)) out.push_back(detail::combineKernel(dtype, op, isa));
  }
  return out;
}

// Every pattern through a kernel (x + -0 == x exactly): the vectorised conversions agree
// with the exhaustive scalar round trip above.
TEST(NarrowKernels, EveryPatternSurvivesAddingNegativeZero) {
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    std::vector<std::uint16_t> all(65536);
    for (std::uint32_t p = 0; p <= 0xffff; ++p) all[p] = static_cast<std::uint16_t>(p);
    const std::vector<std::uint16_t> negZero(65536, 0x8000);
    for (detail::CombineFn fn : kernels(dtype, ReduceOp::kSum)) {
      std::vector<std::uint16_t> out(65536);
      fn(out.data(), all.data(), negZero.data(), all.size(), 0);
      for (std::uint32_t p = 0; p <= 0xffff; ++p) {
        const bool nan = dtype == DataType::kFloat16 ? isHalfNan(all[p]) : isBf16Nan(all[p]);
        if (nan) {
          ASSERT_TRUE(dtype == DataType::kFloat16 ? isHalfNan(out[p]) : isBf16Nan(out[p]));
        } else {
          ASSERT_EQ(out[p], all[p]) << dataTypeName(dtype) << std::hex << " 0x" << p;
        }
      }
    }
  }
}

// Every kernel set gives the same bits on random patterns (about one float16 pattern in
// 32 is a NaN or infinity, one bfloat16 pattern in 256), a NaN operand's payload included.
// The one exception: when both operands are NaN, which payload survives depends on the
// order the compiler gives the commutative add (-O0 and -O3 differ), so there the check
// is only that the result is a NaN.
TEST(NarrowKernels, KernelSetsAgreeBitForBit) {
  constexpr std::size_t kN = 100'003;
  std::mt19937 rng(7);
  std::vector<std::uint16_t> a(kN), b(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    a[i] = static_cast<std::uint16_t>(rng());
    b[i] = static_cast<std::uint16_t>(rng());
  }
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
      const std::vector<detail::CombineFn> fns = kernels(dtype, op);
      ASSERT_FALSE(fns.empty());
      std::vector<std::uint16_t> first(kN);
      fns[0](first.data(), a.data(), b.data(), kN, 0);
      const auto isNan = dtype == DataType::kFloat16 ? &isHalfNan : &isBf16Nan;
      for (std::size_t k = 1; k < fns.size(); ++k) {
        std::vector<std::uint16_t> out(kN);
        fns[k](out.data(), a.data(), b.data(), kN, 0);
        for (std::size_t i = 0; i < kN; ++i) {
          const bool bothNan = isNan(a[i]) && isNan(b[i]);
          const bool same = bothNan ? isNan(out[i]) && isNan(first[i]) : out[i] == first[i];
          ASSERT_TRUE(same) << dataTypeName(dtype) << " " << reduceOpName(op) << " set " << k
                            << std::hex << ": 0x" << a[i] << ", 0x" << b[i] << " gave 0x" << out[i]
                            << " and 0x" << first[i];
        }
      }
    }
  }
}

// The exact sum of two float16 values, rounded once. 2^-11 is half an ulp of 1.0, so
// 1 + 2^-11 is a tie (to even: down) and (1 + 2^-10) + 2^-11 is a tie (to even: up);
// adding 2^-11 + 2^-21 is just past the tie and must round up, which a double rounding
// through a too-narrow intermediate would lose.
TEST(NarrowKernels, SumRoundsOnce) {
  struct Case {
    DataType dtype;
    std::uint16_t a, b, expected;
  };
  const Case cases[] = {
      {DataType::kFloat16, 0x3c00, 0x1000, 0x3c00},   // 1 + 2^-11 -> 1
      {DataType::kFloat16, 0x3c01, 0x1000, 0x3c02},   // (1 + 2^-10) + 2^-11 -> 1 + 2^-9
      {DataType::kFloat16, 0x3c00, 0x1001, 0x3c01},   // 1 + 2^-11 + 2^-21 -> 1 + 2^-10
      {DataType::kFloat16, 0x7bff, 0x4c00, 0x7c00},   // 65504 + 16: the overflow tie -> inf
      {DataType::kFloat16, 0x7bff, 0x4bff, 0x7bff},   // 65504 + 15.99 -> 65504
      {DataType::kFloat16, 0x0001, 0x8002, 0x8001},   // subnormals add exactly
      {DataType::kBFloat16, 0x3f80, 0x3b80, 0x3f80},  // 1 + 2^-8 -> 1
      {DataType::kBFloat16, 0x3f81, 0x3b80, 0x3f82},  // (1 + 2^-7) + 2^-8 -> 1 + 2^-6
      {DataType::kBFloat16, 0x3f80, 0x3b81, 0x3f81},  // just past the tie -> up
  };
  constexpr std::size_t kN = 11;  // vector body and tail
  for (const Case& c : cases) {
    for (detail::CombineFn fn : kernels(c.dtype, ReduceOp::kSum)) {
      std::vector<std::uint16_t> a(kN, c.a), b(kN, c.b), out(kN);
      fn(out.data(), a.data(), b.data(), kN, 0);
      for (std::size_t i = 0; i < kN; ++i) {
        EXPECT_EQ(out[i], c.expected)
            << dataTypeName(c.dtype) << std::hex << " 0x" << c.a << " + 0x" << c.b;
      }
      // The reference, which rounds the exact sum, agrees.
      const double exact = c.dtype == DataType::kFloat16
                               ? ref::refHalfToDouble(c.a) + ref::refHalfToDouble(c.b)
                               : ref::refBfloat16ToDouble(c.a) + ref::refBfloat16ToDouble(c.b);
      EXPECT_EQ(c.dtype == DataType::kFloat16 ? ref::refRoundToHalf(exact)
                                              : ref::refRoundToBfloat16(exact),
                c.expected);
    }
  }
}

}  // namespace
}  // namespace tutti::reduce

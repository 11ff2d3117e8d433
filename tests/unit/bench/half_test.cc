#include "bench/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "unit/bench/reference.h"

namespace tutti::bench {
namespace {

using reference::Format16;
using reference::kBfloat16;
using reference::kHalf;

using ToFloat = float (*)(std::uint16_t);
using FromFloat = std::uint16_t (*)(float);

struct Codec {
  const char* name;
  Format16 format;
  ToFloat toFloat;
  FromFloat fromFloat;
};

const Codec kCodecs[] = {{"float16", kHalf, halfToFloat, floatToHalf},
                         {"bfloat16", kBfloat16, bfloat16ToFloat, floatToBfloat16}};

bool isNanBits(std::uint16_t bits, Format16 format) {
  return (bits & format.infBits()) == format.infBits() && (bits & ~format.infBits() & 0x7fff) != 0;
}

TEST(BenchHalf, WideningMatchesTheFormatDefinitionForEveryPattern) {
  for (const Codec& codec : kCodecs) {
    for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
      const auto b = static_cast<std::uint16_t>(bits);
      const double want = reference::decode(b, codec.format);
      const float got = codec.toFloat(b);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << codec.name << " " << bits;
        continue;
      }
      EXPECT_EQ(static_cast<double>(got), want) << codec.name << " " << bits;
      EXPECT_EQ(std::signbit(got), (b & 0x8000) != 0) << codec.name << " " << bits;
    }
  }
}

TEST(BenchHalf, NarrowingRoundTripsEveryValue) {
  for (const Codec& codec : kCodecs) {
    for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
      const auto b = static_cast<std::uint16_t>(bits);
      const std::uint16_t back = codec.fromFloat(codec.toFloat(b));
      if (isNanBits(b, codec.format)) {
        EXPECT_TRUE(isNanBits(back, codec.format)) << codec.name << " " << bits;
      } else {
        EXPECT_EQ(back, b) << codec.name << " " << bits;
      }
    }
  }
}

// Every midpoint between neighbours must go to the even one, and the floats just either
// side of it to the nearer one. Midpoints need one bit more than the format: exact in float.
TEST(BenchHalf, NarrowingRoundsHalfwayCasesToEven) {
  for (const Codec& codec : kCodecs) {
    const std::uint16_t inf = codec.format.infBits();
    for (std::uint16_t lo = 0; lo < inf; ++lo) {
      const auto hi = static_cast<std::uint16_t>(lo + 1);
      const double hiValue = hi == inf ? std::ldexp(1.0, codec.format.bias() + 1)
                                       : reference::decode(hi, codec.format);
      const auto mid = static_cast<float>((reference::decode(lo, codec.format) + hiValue) / 2);
      const std::uint16_t even = (lo & 1) == 0 ? lo : hi;
      EXPECT_EQ(codec.fromFloat(mid), even) << codec.name << " " << lo;
      EXPECT_EQ(codec.fromFloat(-mid), even | 0x8000) << codec.name << " " << lo;
      EXPECT_EQ(codec.fromFloat(std::nextafter(mid, 0.0f)), lo) << codec.name << " " << lo;
      EXPECT_EQ(codec.fromFloat(std::nextafter(mid, std::numeric_limits<float>::infinity())), hi) << codec.name << " " << lo;
    }
  }
}

TEST(BenchHalf, NarrowingMatchesSearchOnRandomFloats) {
  std::mt19937 rng(12345);
  for (const Codec& codec : kCodecs) {
    const reference::Rounder rounder(codec.format);
    for (int i = 0; i < 200000; ++i) {
      // Random bit patterns cover every exponent, subnormals included.
      const auto f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
      if (std::isnan(f)) continue;
      ASSERT_EQ(codec.fromFloat(f), rounder.round(f)) << codec.name << " " << f;
    }
  }
}

TEST(BenchHalf, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(floatToHalf(inf), 0x7c00);
  EXPECT_EQ(floatToHalf(-inf), 0xfc00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie with 0: even
  EXPECT_TRUE(isNanBits(floatToHalf(nan), kHalf));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_EQ(floatToBfloat16(inf), 0x7f80);
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_TRUE(isNanBits(floatToBfloat16(nan), kBfloat16));
  // A signalling NaN whose payload lives only in the low bits must not become infinity.
  EXPECT_TRUE(isNanBits(floatToBfloat16(std::bit_cast<float>(0x7f800001u)), kBfloat16));
  EXPECT_TRUE(isNanBits(floatToHalf(std::bit_cast<float>(0x7f800001u)), kHalf));
}

}  // namespace
}  // namespace tutti::bench

#include "bench/data.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "unit/bench/reference.h"

namespace tutti::bench {
namespace {

using reference::Int128;
using reference::Quad;
using reference::UInt128;

constexpr int kRankCounts[] = {1, 2, 3, 5, 8};
constexpr std::size_t kIndices = 512;

bool isFloating(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

bool isSigned(DataType dtype) {
  return dtype == DataType::kInt8 || dtype == DataType::kInt32 || dtype == DataType::kInt64;
}

int widthBits(DataType dtype) { return static_cast<int>(dataTypeSize(dtype) * 8); }

// The integer an element's bits stand for, signed or not.
Int128 integerOf(const Element& e, DataType dtype) {
  const int width = widthBits(dtype);
  Int128 value = static_cast<Int128>(e.bits);
  if (isSigned(dtype) && ((e.bits >> (width - 1)) & 1) != 0) value -= static_cast<Int128>(1) << width;
  return value;
}

// x modulo 2^width, as the element bits.
std::uint64_t wrapBits(Int128 x, DataType dtype) {
  const Int128 modulus = static_cast<Int128>(1) << widthBits(dtype);
  Int128 r = x % modulus;
  if (r < 0) r += modulus;
  return static_cast<std::uint64_t>(r);
}

// Exactly representable in the floating type (and finite)?
bool representable(long double x, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: {
      static const reference::Rounder rounder(reference::kHalf);
      return reference::decode(rounder.round(static_cast<double>(x)), reference::kHalf) == x;
    }
    case DataType::kBFloat16: {
      static const reference::Rounder rounder(reference::kBfloat16);
      return reference::decode(rounder.round(static_cast<double>(x)), reference::kBfloat16) == x;
    }
    case DataType::kFloat32: return std::fabs(x) <= FLT_MAX && static_cast<float>(x) == x;
    default: return std::fabs(x) <= DBL_MAX && static_cast<double>(x) == x;
  }
}

// The largest L with every integer in [-L, L] representable, from the formats' precision
// (so independent of exactIntegerLimit()): 2^(mantissa bits + 1).
long double exactLimitReference(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: return std::ldexp(1.0L, reference::kHalf.mantBits() + 1);
    case DataType::kBFloat16: return std::ldexp(1.0L, reference::kBfloat16.mantBits() + 1);
    case DataType::kFloat32: return std::ldexp(1.0L, std::numeric_limits<float>::digits);
    default: return std::ldexp(1.0L, std::numeric_limits<double>::digits);
  }
}

double roundFloatToType(float q, DataType dtype) {
  if (dtype == DataType::kFloat16) {
    static const reference::Rounder rounder(reference::kHalf);
    return reference::decode(rounder.round(q), reference::kHalf);
  }
  if (dtype == DataType::kBFloat16) {
    static const reference::Rounder rounder(reference::kBfloat16);
    return reference::decode(rounder.round(q), reference::kBfloat16);
  }
  return q;
}

Element bruteForceInteger(const std::vector<Element>& inputs, DataType dtype, ReduceOp op) {
  const int n = static_cast<int>(inputs.size());
  Int128 acc = integerOf(inputs[0], dtype);
  for (int r = 1; r < n; ++r) {
    const Int128 v = integerOf(inputs[r], dtype);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += v; break;
      case ReduceOp::kProd: {
        // Both factors below 2^64, so the 128-bit product is exact before wrapping.
        const UInt128 product = static_cast<UInt128>(wrapBits(acc, dtype)) * wrapBits(v, dtype);
        acc = static_cast<Int128>(wrapBits(static_cast<Int128>(product % (static_cast<UInt128>(1) << 64)), dtype));
        break;
      }
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
    }
  }
  if (op == ReduceOp::kAvg) {
    const Element wrapped{false, wrapBits(acc, dtype), 0.0};
    acc = integerOf(wrapped, dtype) / n;  // truncates toward zero
  }
  return Element{false, wrapBits(acc, dtype), 0.0};
}

// Accumulates in long double (exact for these inputs: integer sums below 2^56 and products
// of powers of two), checks the exactness bounds that make any order exact, and applies
// the library's avg rule.
Element bruteForceFloating(const std::vector<Element>& inputs, DataType dtype, ReduceOp op) {
  const int n = static_cast<int>(inputs.size());
  long double acc = inputs[0].real;
  long double absSum = 0;
  int nonUnitFactors = 0;
  for (int r = 0; r < n; ++r) {
    const long double v = inputs[r].real;
    absSum += std::fabs(v);
    if (std::fabs(v) != 1) ++nonUnitFactors;
    if (r == 0) continue;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += v; break;
      case ReduceOp::kProd: acc *= v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
    }
  }
  if (op == ReduceOp::kSum || op == ReduceOp::kAvg) {
    // Every partial sum in any order is an integer of magnitude <= absSum.
    EXPECT_LE(absSum, exactLimitReference(dtype));
  }
  if (op == ReduceOp::kProd) {
    // Every partial product in any order is +-2^k with |k| <= nonUnitFactors.
    EXPECT_TRUE(representable(std::ldexp(1.0L, nonUnitFactors), dtype)) << nonUnitFactors;
    EXPECT_TRUE(representable(std::ldexp(1.0L, -nonUnitFactors), dtype)) << nonUnitFactors;
  }
  if (op != ReduceOp::kAvg) return Element{true, 0, static_cast<double>(acc)};
  if (dtype == DataType::kFloat64) {
    // Quad has 113 bits, more than 2 * 53 + 2, so rounding twice equals rounding once.
    return Element{true, 0, static_cast<double>(static_cast<Quad>(acc) / n)};
  }
  // Likewise double (53 bits) for the float32 quotient the library computes.
  const auto q = static_cast<float>(static_cast<double>(acc) / n);
  return Element{true, 0, roundFloatToType(q, dtype)};
}

// Combines in three orders (forward, backward, pairwise tree) and checks that every
// partial result is representable, so no order a library might use can round.
void checkOrdersAreExact(const std::vector<Element>& inputs, DataType dtype, ReduceOp op) {
  auto combine = [&](long double a, long double b) {
    long double c = op == ReduceOp::kProd ? a * b
                    : op == ReduceOp::kMin ? std::min(a, b)
                    : op == ReduceOp::kMax ? std::max(a, b)
                                           : a + b;
    EXPECT_TRUE(representable(c, dtype)) << static_cast<double>(c);
    return c;
  };
  std::vector<long double> level;
  for (const Element& e : inputs) level.push_back(e.real);
  long double forward = level[0];
  for (std::size_t r = 1; r < level.size(); ++r) forward = combine(forward, level[r]);
  long double backward = level.back();
  for (std::size_t r = level.size() - 1; r-- > 0;) backward = combine(level[r], backward);
  while (level.size() > 1) {
    std::vector<long double> next;
    for (std::size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(combine(level[i], level[i + 1]));
    if (level.size() % 2 == 1) next.push_back(level.back());
    level = next;
  }
  EXPECT_EQ(forward, backward);
  EXPECT_EQ(forward, level[0]);
}

// Ranks must differ at the same index whenever the value range allows it; it does not for
// floating products (six factors) with more than six ranks, which still must not agree.
void checkRanksDiffer(const std::vector<Element>& inputs, DataType dtype, ReduceOp op) {
  std::set<std::uint64_t> bits;
  std::set<double> reals;
  for (const Element& e : inputs) {
    bits.insert(e.bits);
    reals.insert(e.real);
  }
  const std::size_t distinct = isFloating(dtype) ? reals.size() : bits.size();
  if (isFloating(dtype) && op == ReduceOp::kProd && inputs.size() > 6) {
    EXPECT_GE(distinct, 2u);
  } else {
    EXPECT_EQ(distinct, inputs.size());
  }
}

class BenchDataTest : public testing::TestWithParam<std::tuple<DataType, ReduceOp, int>> {};

TEST_P(BenchDataTest, ResultIsExactAndMatchesBruteForce) {
  const auto [dtype, op, n] = GetParam();
  std::vector<unsigned char> buffer(dataTypeSize(dtype));
  std::set<double> results;
  std::set<std::uint64_t> resultBits;
  std::set<double> rank0Reals;
  std::set<std::uint64_t> rank0Bits;
  for (std::size_t i = 0; i < kIndices; ++i) {
    std::vector<Element> inputs;
    for (int r = 0; r < n; ++r) {
      const Element v = inputValue(r, i, dtype, op, n);
      ASSERT_EQ(v.floating, isFloating(dtype));
      // Storing in the type and loading back loses nothing: the value is representable.
      storeElement(buffer.data(), 0, dtype, v);
      ASSERT_TRUE(sameElement(loadElement(buffer.data(), 0, dtype), v)) << i << " rank " << r;
      inputs.push_back(v);
    }
    checkRanksDiffer(inputs, dtype, op);
    rank0Reals.insert(inputs[0].real);
    rank0Bits.insert(inputs[0].bits);
    const Element got = expectedAllReduce(i, dtype, op, n);
    Element want;
    if (isFloating(dtype)) {
      checkOrdersAreExact(inputs, dtype, op);
      want = bruteForceFloating(inputs, dtype, op);
    } else {
      want = bruteForceInteger(inputs, dtype, op);
    }
    ASSERT_TRUE(sameElement(got, want))
        << "index " << i << ": got " << got.real << "/" << got.bits << ", want " << want.real
        << "/" << want.bits;
    results.insert(got.real);
    resultBits.insert(got.bits);
  }
  // Inputs and results vary along the index, so a misplaced chunk is seen.
  EXPECT_GE(isFloating(dtype) ? rank0Reals.size() : rank0Bits.size(), 4u);
  EXPECT_GE(isFloating(dtype) ? results.size() : resultBits.size(), 4u);
}

std::vector<DataType> everyType() {
  std::vector<DataType> out;
  for (int i = 0; i < kNumDataTypes; ++i) out.push_back(static_cast<DataType>(i));
  return out;
}

std::vector<ReduceOp> everyOp() {
  std::vector<ReduceOp> out;
  for (int i = 0; i < kNumReduceOps; ++i) out.push_back(static_cast<ReduceOp>(i));
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesOpsAndRanks, BenchDataTest,
    testing::Combine(testing::ValuesIn(everyType()), testing::ValuesIn(everyOp()),
                     testing::ValuesIn(kRankCounts)),
    [](const testing::TestParamInfo<BenchDataTest::ParamType>& param) {
      return std::string(dataTypeName(std::get<0>(param.param))) + "_" +
             reduceOpName(std::get<1>(param.param)) + "_" +
             std::to_string(std::get<2>(param.param));
    });

TEST(BenchData, ManyRanksStayExact) {
  // More ranks than bfloat16 has exact integers per rank, and than float16's exponent
  // budget: sums fall back to a single 1 per index, products to +-1 beyond the budget.
  for (const DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    for (const int n : {20, 300, 5000}) {
      for (std::size_t i = 0; i < 64; ++i) {
        for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd}) {
          std::vector<Element> inputs;
          for (int r = 0; r < n; ++r) inputs.push_back(inputValue(r, i, dtype, op, n));
          ASSERT_TRUE(sameElement(expectedAllReduce(i, dtype, op, n),
                                  bruteForceFloating(inputs, dtype, op)));
        }
      }
    }
  }
}

TEST(BenchData, CountWrongComparesEveryElement) {
  for (const DataType dtype : everyType()) {
    const std::size_t count = 100;
    std::vector<unsigned char> expected(count * dataTypeSize(dtype));
    std::vector<unsigned char> actual(expected.size());
    fillExpectedAllReduce(expected.data(), count, 3, dtype, ReduceOp::kSum);
    actual = expected;
    EXPECT_EQ(countWrong(actual.data(), expected.data(), count, dtype), 0u);
    // Flipping the lowest bit of two elements changes exactly those two values.
    actual[5 * dataTypeSize(dtype)] ^= 1;
    actual[99 * dataTypeSize(dtype)] ^= 1;
    EXPECT_EQ(countWrong(actual.data(), expected.data(), count, dtype), 2u) << dataTypeName(dtype);
    // All-ones bytes (the runner's poison) never match: NaN for floats, and the expected
    // integers of this data are not all -1.
    std::fill(actual.begin(), actual.end(), 0xff);
    EXPECT_GE(countWrong(actual.data(), expected.data(), count, dtype), count - 2) << dataTypeName(dtype);
  }
}

TEST(BenchData, FillInputWritesEachRanksValues) {
  std::vector<unsigned char> buffer(10 * 2);
  fillInput(buffer.data(), 10, 2, 4, DataType::kFloat16, ReduceOp::kMax);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_TRUE(sameElement(loadElement(buffer.data(), i, DataType::kFloat16),
                            inputValue(2, i, DataType::kFloat16, ReduceOp::kMax, 4)));
  }
}

TEST(BenchData, LimitsPerType) {
  EXPECT_EQ(exactIntegerLimit(DataType::kFloat16), 2048u);
  EXPECT_EQ(exactIntegerLimit(DataType::kBFloat16), 256u);
  EXPECT_EQ(exactIntegerLimit(DataType::kFloat32), 1u << 24);
  EXPECT_EQ(exactIntegerLimit(DataType::kFloat64), 1ull << 53);
  EXPECT_EQ(exactIntegerLimit(DataType::kInt32), 0u);
  EXPECT_EQ(productExponentBudget(DataType::kFloat16), 14);
  EXPECT_EQ(productExponentBudget(DataType::kUint8), 0);
  // The limits are what the formats say: L exact, L + 1 not.
  for (const DataType dtype : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                               DataType::kFloat64}) {
    const auto limit = static_cast<long double>(exactIntegerLimit(dtype));
    EXPECT_EQ(limit, exactLimitReference(dtype));
    EXPECT_TRUE(representable(limit, dtype));
    EXPECT_FALSE(representable(limit + 1, dtype));
    const int budget = productExponentBudget(dtype);
    EXPECT_TRUE(representable(std::ldexp(1.0L, budget), dtype));
    EXPECT_TRUE(representable(std::ldexp(1.0L, -budget), dtype));
  }
}

}  // namespace
}  // namespace tutti::bench

// combine() and every kernel set this CPU supports, for every dtype x op, against the
// independent reference in reference.cc: random data, awkward counts, every aliasing
// combination, misaligned starts, and guard bytes around the output.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "reduce/kernels.h"
#include "reduce/reduce.h"
#include "unit/reduce/reference.h"

namespace tutti::reduce {
namespace {

using Bytes = std::vector<std::uint8_t>;
using Kernel = std::function<void(void*, const void*, const void*, std::size_t)>;

constexpr std::size_t kCounts[] = {0, 1, 7, 64, 1000, 4097};
constexpr std::size_t kGuard = 16;  // elements of sentinel after each buffer
constexpr std::uint8_t kSentinel = 0xa5;

enum class Alias { kSeparate, kDstIsA, kDstIsB, kAllSame };
constexpr Alias kAliases[] = {Alias::kSeparate, Alias::kDstIsA, Alias::kDstIsB, Alias::kAllSame};

const char* aliasName(Alias alias) {
  switch (alias) {
    case Alias::kSeparate:
      return "separate";
    case Alias::kDstIsA:
      return "dst==a";
    case Alias::kDstIsB:
      return "dst==b";
    case Alias::kAllSame:
      return "dst==a==b";
  }
  return "?";
}

// Every way the library can run a combine: each supported kernel set through the internal
// dispatch, and the public entry point (which picks the best set itself).
std::vector<std::pair<std::string, Kernel>> kernelsFor(DataType dtype, ReduceOp op) {
  std::vector<std::pair<std::string, Kernel>> out;
  for (int i = 0; i < detail::kNumIsas; ++i) {
    const auto isa = static_cast<detail::Isa>(i);
    if (!detail::isaSupported(isa)) continue;
    detail::CombineFn fn = detail::combineKernel(dtype, op, isa);
    EXPECT_NE(fn, nullptr);
    out.emplace_back("isa " + std::to_string(i), fn);
  }
  out.emplace_back("combine()", [dtype, op](void* d, const void* a, const void* b, std::size_t n) {
    combine(d, a, b, n, dtype, op);
  });
  return out;
}

// A buffer of `offset + count + kGuard` elements filled with the sentinel, with `data`
// copied in at element `offset` (offset 1 makes every vector access unaligned).
Bytes guarded(const Bytes& data, std::size_t elemSize, std::size_t offset, std::size_t count) {
  Bytes buf((offset + count + kGuard) * elemSize, kSentinel);
  if (count > 0) std::memcpy(buf.data() + offset * elemSize, data.data(), count * elemSize);
  return buf;
}

bool guardsIntact(const Bytes& buf, std::size_t elemSize, std::size_t offset, std::size_t count) {
  for (std::size_t i = 0; i < offset * elemSize; ++i) {
    if (buf[i] != kSentinel) return false;
  }
  for (std::size_t i = (offset + count) * elemSize; i < buf.size(); ++i) {
    if (buf[i] != kSentinel) return false;
  }
  return true;
}

// Runs one kernel on one configuration and checks every output element and the guards.
// Returns false (after reporting) on the first mismatch.
bool runCase(DataType dtype, ReduceOp op, const std::string& kernelName, const Kernel& kernel,
             std::size_t count, Alias alias, std::size_t offset, std::mt19937_64& rng) {
  const std::size_t es = dataTypeSize(dtype);
  const Bytes a = ref::randomElements(dtype, count, rng);
  const Bytes b = alias == Alias::kAllSame ? a : ref::randomElements(dtype, count, rng);
  const Bytes expected = ref::refCombine(dtype, op, a, b, count);
  Bytes bufA = guarded(a, es, offset, count);
  Bytes bufB = guarded(b, es, offset, count);
  Bytes bufD = guarded(Bytes(count * es, 0), es, offset, count);
  std::uint8_t* pa = bufA.data() + offset * es;
  std::uint8_t* pb = bufB.data() + offset * es;
  Bytes* out = &bufD;
  switch (alias) {
    case Alias::kSeparate:
      break;
    case Alias::kDstIsA:
      out = &bufA;
      break;
    case Alias::kDstIsB:
      out = &bufB;
      break;
    case Alias::kAllSame:
      out = &bufA;
      pb = pa;
      break;
  }
  kernel(out->data() + offset * es, pa, pb, count);

  const std::string where = std::string(dataTypeName(dtype)) + " " + reduceOpName(op) + " " +
                            kernelName + " count=" + std::to_string(count) + " " +
                            aliasName(alias) + " offset=" + std::to_string(offset);
  const std::uint8_t* got = out->data() + offset * es;
  for (std::size_t i = 0; i < count; ++i) {
    std::string why;
    if (!ref::sameElement(dtype, got, expected.data(), i, &why)) {
      ADD_FAILURE() << where << ": " << why;
      return false;
    }
  }
  if (!guardsIntact(*out, es, offset, count)) {
    ADD_FAILURE() << where << ": wrote outside the output range";
    return false;
  }
  // Inputs that are not the output must be left alone.
  if (alias == Alias::kSeparate && count > 0 &&
      (std::memcmp(pa, a.data(), count * es) != 0 || std::memcmp(pb, b.data(), count * es) != 0)) {
    ADD_FAILURE() << where << ": modified an input";
    return false;
  }
  return true;
}

class CombineTest : public ::testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(CombineTest, MatchesReference) {
  const auto [dtype, op] = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(dtype) * 131 + static_cast<std::uint64_t>(op));
  int cases = 0;
  for (const auto& [name, kernel] : kernelsFor(dtype, op)) {
    for (std::size_t count : kCounts) {
      for (Alias alias : kAliases) {
        for (std::size_t offset : {0, 1}) {
          ASSERT_TRUE(runCase(dtype, op, name, kernel, count, alias, offset, rng));
          ++cases;
        }
      }
    }
  }
  EXPECT_GE(cases, 2 * 6 * 4 * 2);
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<DataType, ReduceOp>>& info) {
  return std::string(dataTypeName(std::get<0>(info.param))) + "_" +
         reduceOpName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesAndOps, CombineTest,
    ::testing::Combine(::testing::Values(DataType::kInt8, DataType::kUint8, DataType::kInt32,
                                         DataType::kUint32, DataType::kInt64, DataType::kUint64,
                                         DataType::kFloat16, DataType::kBFloat16,
                                         DataType::kFloat32, DataType::kFloat64),
                       ::testing::Values(ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin,
                                         ReduceOp::kMax, ReduceOp::kAvg)),
    caseName);

// A large random run on the narrow float formats, where rounding is the risky part.
class NarrowCombineTest : public CombineTest {};

TEST_P(NarrowCombineTest, ManyRandomElements) {
  const auto [dtype, op] = GetParam();
  std::mt19937_64 rng(42);
  for (const auto& [name, kernel] : kernelsFor(dtype, op)) {
    ASSERT_TRUE(runCase(dtype, op, name, kernel, 1 << 18, Alias::kSeparate, 0, rng));
  }
}

INSTANTIATE_TEST_SUITE_P(NarrowFloats, NarrowCombineTest,
                         ::testing::Combine(::testing::Values(DataType::kFloat16,
                                                              DataType::kBFloat16),
                                            ::testing::Values(ReduceOp::kSum, ReduceOp::kProd,
                                                              ReduceOp::kMin, ReduceOp::kMax)),
                         caseName);

// ---- integer wrap-around, written out by hand ---------------------------------------------

// Combines `a` and `b` replicated over 37 elements (a vector body plus a tail) and returns
// the result, after checking that all 37 agree.
template <typename T>
T combineReplicated(DataType dtype, ReduceOp op, T a, T b) {
  constexpr std::size_t kN = 37;
  std::vector<T> va(kN, a), vb(kN, b), out(kN);
  combine(out.data(), va.data(), vb.data(), kN, dtype, op);
  for (std::size_t i = 1; i < kN; ++i) EXPECT_EQ(out[i], out[0]) << "element " << i;
  return out[0];
}

TEST(CombineWrap, SignedAndUnsignedOverflowWraps) {
  using L8 = std::numeric_limits<std::int8_t>;
  using L32 = std::numeric_limits<std::int32_t>;
  using L64 = std::numeric_limits<std::int64_t>;
  EXPECT_EQ(combineReplicated<std::int8_t>(DataType::kInt8, ReduceOp::kSum, L8::max(), 1),
            L8::min());
  EXPECT_EQ(combineReplicated<std::int8_t>(DataType::kInt8, ReduceOp::kSum, L8::min(), -1),
            L8::max());
  EXPECT_EQ(combineReplicated<std::int8_t>(DataType::kInt8, ReduceOp::kProd, 16, 16), 0);
  EXPECT_EQ(combineReplicated<std::int8_t>(DataType::kInt8, ReduceOp::kProd, L8::min(), -1),
            L8::min());
  EXPECT_EQ(combineReplicated<std::int8_t>(DataType::kInt8, ReduceOp::kAvg, 100, 100), -56);
  EXPECT_EQ(combineReplicated<std::uint8_t>(DataType::kUint8, ReduceOp::kSum, 255, 1), 0);
  EXPECT_EQ(combineReplicated<std::uint8_t>(DataType::kUint8, ReduceOp::kProd, 255, 255), 1);
  EXPECT_EQ(combineReplicated<std::int32_t>(DataType::kInt32, ReduceOp::kSum, L32::max(), 1),
            L32::min());
  EXPECT_EQ(combineReplicated<std::int32_t>(DataType::kInt32, ReduceOp::kProd, L32::min(), -1),
            L32::min());
  EXPECT_EQ(combineReplicated<std::int32_t>(DataType::kInt32, ReduceOp::kProd, 65536, 65536), 0);
  EXPECT_EQ(combineReplicated<std::uint32_t>(DataType::kUint32, ReduceOp::kSum, 0xffffffffu, 2),
            1u);
  EXPECT_EQ(combineReplicated<std::uint32_t>(DataType::kUint32, ReduceOp::kProd, 0x80000000u, 2),
            0u);
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kProd, L64::min(), -1),
            L64::min());
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kSum, L64::max(), 1),
            L64::min());
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kProd, L64::max(), 2), -2);
  EXPECT_EQ(combineReplicated<std::uint64_t>(DataType::kUint64, ReduceOp::kSum, ~0ull, ~0ull),
            ~0ull - 1);
  EXPECT_EQ(combineReplicated<std::uint64_t>(DataType::kUint64, ReduceOp::kProd, ~0ull, ~0ull),
            1ull);
}

TEST(CombineWrap, MinMaxUseTheSignedness) {
  EXPECT_EQ(combineReplicated<std::int8_t>(DataType::kInt8, ReduceOp::kMin, -128, 127), -128);
  EXPECT_EQ(combineReplicated<std::uint8_t>(DataType::kUint8, ReduceOp::kMax, 128, 127), 128);
  EXPECT_EQ(combineReplicated<std::int32_t>(DataType::kInt32, ReduceOp::kMax, -1, 0), 0);
  EXPECT_EQ(combineReplicated<std::uint32_t>(DataType::kUint32, ReduceOp::kMax, 0xffffffffu, 0),
            0xffffffffu);
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kMin, -1, 1), -1);
  EXPECT_EQ(combineReplicated<std::uint64_t>(DataType::kUint64, ReduceOp::kMin, ~0ull, 1), 1u);
}

// ---- floating-point special values ----------------------------------------------------------

struct SpecialCase {
  ReduceOp op;
  double a;
  double b;
  double expected;  // NaN means "any NaN"; zeros are checked with their sign
};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const SpecialCase kSpecials[] = {
    {ReduceOp::kMin, kNaN, 1, kNaN},      {ReduceOp::kMin, 1, kNaN, kNaN},
    {ReduceOp::kMin, -kInf, kNaN, kNaN},  {ReduceOp::kMin, kNaN, -kInf, kNaN},
    {ReduceOp::kMin, kNaN, kNaN, kNaN},   {ReduceOp::kMin, -0.0, 0.0, -0.0},
    {ReduceOp::kMin, 0.0, -0.0, -0.0},    {ReduceOp::kMin, 0.0, 0.0, 0.0},
    {ReduceOp::kMin, -kInf, 5, -kInf},    {ReduceOp::kMin, kInf, 5, 5},
    {ReduceOp::kMin, -kInf, kInf, -kInf}, {ReduceOp::kMin, 3, -2, -2},
    {ReduceOp::kMax, kNaN, 1, kNaN},      {ReduceOp::kMax, 1, kNaN, kNaN},
    {ReduceOp::kMax, kInf, kNaN, kNaN},   {ReduceOp::kMax, kNaN, kInf, kNaN},
    {ReduceOp::kMax, -0.0, 0.0, 0.0},     {ReduceOp::kMax, 0.0, -0.0, 0.0},
    {ReduceOp::kMax, -0.0, -0.0, -0.0},   {ReduceOp::kMax, kInf, -kInf, kInf},
    {ReduceOp::kMax, -kInf, -5, -5},      {ReduceOp::kMax, 3, -2, 3},
    {ReduceOp::kSum, kInf, -kInf, kNaN},  {ReduceOp::kSum, -0.0, -0.0, -0.0},
    {ReduceOp::kSum, -0.0, 0.0, 0.0},     {ReduceOp::kSum, kInf, 1, kInf},
    {ReduceOp::kSum, kNaN, 1, kNaN},      {ReduceOp::kAvg, -kInf, -1, -kInf},
    {ReduceOp::kProd, 0.0, kInf, kNaN},   {ReduceOp::kProd, -0.0, 5, -0.0},
    {ReduceOp::kProd, -2, -0.0, 0.0},     {ReduceOp::kProd, kNaN, 0.0, kNaN},
};

TEST(CombineSpecials, NanInfAndSignedZero) {
  constexpr std::size_t kN = 19;  // a vector body and a tail on every kernel set
  for (DataType dtype :
       {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    const std::size_t es = dataTypeSize(dtype);
    for (const SpecialCase& c : kSpecials) {
      Bytes a, b, expected;
      for (std::size_t i = 0; i < kN; ++i) {
        for (auto [vec, value] : {std::pair{&a, c.a}, {&b, c.b}, {&expected, c.expected}}) {
          const Bytes one = ref::encode(dtype, value);
          vec->insert(vec->end(), one.begin(), one.end());
        }
      }
      for (const auto& [name, kernel] : kernelsFor(dtype, c.op)) {
        Bytes out(kN * es);
        kernel(out.data(), a.data(), b.data(), kN);
        for (std::size_t i = 0; i < kN; ++i) {
          std::string why;
          EXPECT_TRUE(ref::sameElement(dtype, out.data(), expected.data(), i, &why))
              << reduceOpName(c.op) << "(" << c.a << ", " << c.b << ") with " << name << ": "
              << why;
        }
      }
    }
  }
}

// ---- argument edge cases --------------------------------------------------------------------

TEST(CombineEdges, ZeroCountTouchesNothing) {
  std::uint32_t a = 1, b = 2, d = 0xdeadbeef;
  combine(&d, &a, &b, 0, DataType::kUint32, ReduceOp::kSum);
  EXPECT_EQ(d, 0xdeadbeefu);
  // With count 0 the pointers are never dereferenced, so null is allowed.
  combine(nullptr, nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kMax);
}

TEST(CombineEdges, BestIsaIsSupportedAndGenericAlwaysIs) {
  EXPECT_TRUE(detail::isaSupported(detail::Isa::kGeneric));
  EXPECT_TRUE(detail::isaSupported(detail::bestIsa()));
  for (int d = 0; d < kNumDataTypes; ++d) {
    for (int o = 0; o < kNumReduceOps; ++o) {
      EXPECT_NE(detail::combineKernel(static_cast<DataType>(d), static_cast<ReduceOp>(o),
                                      detail::Isa::kGeneric),
                nullptr);
    }
  }
}

TEST(CombineEdgesDeathTest, PartialOverlapIsABug) {
  std::vector<float> buf(64, 1.0f);
  EXPECT_DEATH(
      combine(buf.data() + 1, buf.data(), buf.data() + 32, 16, DataType::kFloat32, ReduceOp::kSum),
      "overlapsPartially");
}

}  // namespace
}  // namespace tutti::reduce

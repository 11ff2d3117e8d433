// combine() and every kernel set this CPU supports, for every dtype x op, against the
// independent reference in reference.cc: random data, every tail length, every aliasing
// combination, every start alignment, and guard bytes around the output. Each kernel set
// is also checked bit for bit against the portable kernels. Sets this CPU lacks are
// skipped (and say so).

#include <gtest/gtest.h>

#include <cmath>
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

// A kernel writing a whole output of its own (outputBytes 0: the elements it is given).
Kernel asKernel(detail::CombineFn fn) {
  if (fn == nullptr) return nullptr;
  return [fn](void* d, const void* a, const void* b, std::size_t n) { fn(d, a, b, n, 0); };
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
    out.emplace_back(detail::isaName(isa), asKernel(fn));
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

// ---- every kernel set on its own ------------------------------------------------------------

using IsaParam = std::tuple<detail::Isa, DataType, ReduceOp>;

class IsaCombineTest : public ::testing::TestWithParam<IsaParam> {
 protected:
  void SetUp() override {
    const detail::Isa isa = std::get<0>(GetParam());
    if (!detail::isaSupported(isa)) {
      GTEST_SKIP() << "this CPU (or OS) does not support the " << detail::isaName(isa)
                   << " kernels";
    }
  }
};

// Every count from 0 to 130 (past two AVX-512 registers of bytes, so every tail length of
// every kernel set) in every aliasing mode and at two alignments; then every start
// alignment within a cache line (the kernels first align dst); then a large odd count.
TEST_P(IsaCombineTest, EveryLengthAndAlignmentMatchesReference) {
  const auto [isa, dtype, op] = GetParam();
  const Kernel kernel = asKernel(detail::combineKernel(dtype, op, isa));
  ASSERT_NE(kernel, nullptr);
  const std::string name = detail::isaName(isa);
  std::mt19937_64 rng(static_cast<std::uint64_t>(dtype) * 131 + static_cast<std::uint64_t>(op));
  for (std::size_t count = 0; count <= 130; ++count) {
    for (Alias alias : kAliases) {
      for (std::size_t offset : {0, 1}) {
        ASSERT_TRUE(runCase(dtype, op, name, kernel, count, alias, offset, rng));
      }
    }
  }
  const std::size_t perLine = 64 / dataTypeSize(dtype);
  for (std::size_t offset = 0; offset < perLine; ++offset) {
    for (Alias alias : {Alias::kSeparate, Alias::kDstIsA}) {
      ASSERT_TRUE(runCase(dtype, op, name, kernel, 3 * perLine + 5, alias, offset, rng));
    }
  }
  for (Alias alias : {Alias::kSeparate, Alias::kDstIsB}) {
    ASSERT_TRUE(runCase(dtype, op, name, kernel, 100'003, alias, 3, rng));
  }
}

// The same bits as the portable kernels, NaN payloads included, on data where a quarter
// of the floats are arbitrary bit patterns (NaNs, infinities, subnormals). The one
// freedom: when both operands are NaN, which payload survives.
TEST_P(IsaCombineTest, BitIdenticalToPortableKernels) {
  const auto [isa, dtype, op] = GetParam();
  constexpr std::size_t kN = 10'007;
  const std::size_t es = dataTypeSize(dtype);
  std::mt19937_64 rng(99);
  const Bytes a = ref::randomElements(dtype, kN, rng);
  const Bytes b = ref::randomElements(dtype, kN, rng);
  Bytes got(kN * es), want(kN * es);
  detail::combineKernel(dtype, op, isa)(got.data(), a.data(), b.data(), kN, 0);
  detail::combineKernel(dtype, op, detail::Isa::kGeneric)(want.data(), a.data(), b.data(), kN, 0);
  for (std::size_t i = 0; i < kN; ++i) {
    if (std::memcmp(&got[i * es], &want[i * es], es) == 0) continue;
    const bool bothNan = ref::isFloating(dtype) && std::isnan(ref::decode(dtype, a.data(), i)) &&
                         std::isnan(ref::decode(dtype, b.data(), i));
    std::string why;
    ASSERT_TRUE(bothNan && ref::sameElement(dtype, got.data(), want.data(), i, &why))
        << detail::isaName(isa) << " against generic, element " << i << ": " << why;
  }
}

std::string isaCaseName(const ::testing::TestParamInfo<IsaParam>& info) {
  return std::string(detail::isaName(std::get<0>(info.param))) + "_" +
         dataTypeName(std::get<1>(info.param)) + "_" + reduceOpName(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    EveryIsa, IsaCombineTest,
    ::testing::Combine(::testing::Values(detail::Isa::kGeneric, detail::Isa::kAvxF16c,
                                         detail::Isa::kAvx2, detail::Isa::kAvx512,
                                         detail::Isa::kAvx512Bf16),
                       ::testing::Values(DataType::kInt8, DataType::kUint8, DataType::kInt32,
                                         DataType::kUint32, DataType::kInt64, DataType::kUint64,
                                         DataType::kFloat16, DataType::kBFloat16,
                                         DataType::kFloat32, DataType::kFloat64),
                       ::testing::Values(ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin,
                                         ReduceOp::kMax, ReduceOp::kAvg)),
    isaCaseName);

// Outputs of 8 MiB (reduce::streamingFrom()'s default, kernels_simd.h) and more in a buffer of their own are
// written with non-temporal stores: the same bits as the portable kernels, with dst
// starting off a cache line (the aligned part streams) and a tail.
class IsaStreamingTest : public ::testing::TestWithParam<std::tuple<detail::Isa, DataType>> {};

// Combines `count` elements of arbitrary bits (every value class, NaNs included) with
// `isa`'s sum kernel, `piece` elements per call, each call told the whole output has
// `outputBytes`; compares every element with the portable kernel's and checks the guards.
void expectStreamedSumMatchesPortable(detail::Isa isa, DataType dtype, std::size_t count,
                                      std::size_t piece, std::size_t outputBytes) {
  const std::size_t es = dataTypeSize(dtype);
  std::mt19937_64 rng(5);
  const auto randomBytes = [&rng](std::size_t n) {  // fast: up to 64 MiB of them
    Bytes v(n);
    for (std::size_t i = 0; i + 8 <= n; i += 8) {
      const std::uint64_t x = rng();
      std::memcpy(&v[i], &x, 8);
    }
    return v;
  };
  const Bytes a = randomBytes(count * es);
  const Bytes b = randomBytes(count * es);
  Bytes want(count * es);
  detail::combineKernel(dtype, ReduceOp::kSum, detail::Isa::kGeneric)(want.data(), a.data(),
                                                                        b.data(), count, 0);
  Bytes buf((count + 8) * es, kSentinel);
  std::uint8_t* got = buf.data() + es;  // one element in: not on a cache line
  const detail::CombineFn fn = detail::combineKernel(dtype, ReduceOp::kSum, isa);
  for (std::size_t at = 0; at < count; at += piece) {
    const std::size_t n = std::min(piece, count - at);
    fn(got + at * es, a.data() + at * es, b.data() + at * es, n, outputBytes);
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(got + i * es, &want[i * es], es) == 0) continue;
    const bool bothNan = ref::isFloating(dtype) && std::isnan(ref::decode(dtype, a.data(), i)) &&
                         std::isnan(ref::decode(dtype, b.data(), i));
    std::string why;
    ASSERT_TRUE(bothNan && ref::sameElement(dtype, got, want.data(), i, &why))
        << detail::isaName(isa) << " " << dataTypeName(dtype) << " element " << i << ": " << why;
  }
  ASSERT_TRUE(guardsIntact(buf, es, 1, count)) << "wrote outside the output";
}

TEST_P(IsaStreamingTest, LargeSeparateOutputMatchesPortableKernel) {
  const auto [isa, dtype] = GetParam();
  if (!detail::isaSupported(isa)) {
    GTEST_SKIP() << "this CPU (or OS) does not support the " << detail::isaName(isa)
                 << " kernels";
  }
  // Just past the threshold: the whole output in one call, told nothing of its size.
  const std::size_t count = (std::size_t{8} << 20) / dataTypeSize(dtype) + 77;
  expectStreamedSumMatchesPortable(isa, dtype, count, count, 0);
}

// A message reduced piece by piece as it arrives: the pieces are small, but the whole
// output is large, so each piece streams (outputBytes decides). Pieces start off a cache
// line and end mid-line, so every piece has a head, a streamed middle and a tail.
TEST_P(IsaStreamingTest, PiecesOfALargeOutputMatchPortableKernel) {
  const auto [isa, dtype] = GetParam();
  if (!detail::isaSupported(isa)) {
    GTEST_SKIP() << "this CPU (or OS) does not support the " << detail::isaName(isa)
                 << " kernels";
  }
  const std::size_t es = dataTypeSize(dtype);
  expectStreamedSumMatchesPortable(isa, dtype, (std::size_t{1} << 20) / es + 77,
                                   (std::size_t{64} << 10) / es + 3, std::size_t{64} << 20);
}

INSTANTIATE_TEST_SUITE_P(
    EveryIsa, IsaStreamingTest,
    ::testing::Combine(::testing::Values(detail::Isa::kAvx2, detail::Isa::kAvx512,
                                         detail::Isa::kAvx512Bf16),
                       ::testing::Values(DataType::kInt8, DataType::kUint8, DataType::kInt32,
                                         DataType::kUint32, DataType::kInt64, DataType::kUint64,
                                         DataType::kFloat16, DataType::kBFloat16,
                                         DataType::kFloat32, DataType::kFloat64)),
    [](const ::testing::TestParamInfo<std::tuple<detail::Isa, DataType>>& param) {
      return std::string(detail::isaName(std::get<0>(param.param))) + "_" +
             dataTypeName(std::get<1>(param.param));
    });

// ---- integer wrap-around, written out by hand ---------------------------------------------

// Combines `a` and `b` replicated over 133 elements (on every kernel set, two AVX-512
// registers of bytes and a tail) with every kernel set and combine(), checks that all
// elements of all of them agree, and returns the result.
template <typename T>
T combineReplicated(DataType dtype, ReduceOp op, T a, T b) {
  constexpr std::size_t kN = 133;
  const std::vector<T> va(kN, a), vb(kN, b);
  std::vector<T> first;
  for (const auto& [name, kernel] : kernelsFor(dtype, op)) {
    std::vector<T> out(kN);
    kernel(out.data(), va.data(), vb.data(), kN);
    if (first.empty()) first = out;
    for (std::size_t i = 0; i < kN; ++i) {
      EXPECT_EQ(out[i], first[0]) << name << ", element " << i;
    }
  }
  return first[0];
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

// 64-bit min/max have no AVX2 instruction: the emulation compares signed, with the sign bit
// flipped for unsigned. The extremes and the values either side of the sign bit catch a
// compare of the wrong signedness.
TEST(CombineWrap, MinMaxOfExtremes) {
  using L64 = std::numeric_limits<std::int64_t>;
  using U64 = std::numeric_limits<std::uint64_t>;
  constexpr std::uint64_t kTopBit = 1ull << 63;
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kMin, L64::max(),
                                            L64::min()),
            L64::min());
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kMax, L64::min(),
                                            L64::max()),
            L64::max());
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kMax, L64::min(), -1),
            -1);
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kMin, 0, L64::min() + 1),
            L64::min() + 1);
  EXPECT_EQ(combineReplicated<std::uint64_t>(DataType::kUint64, ReduceOp::kMax, kTopBit,
                                             kTopBit - 1),
            kTopBit);
  EXPECT_EQ(combineReplicated<std::uint64_t>(DataType::kUint64, ReduceOp::kMin, kTopBit,
                                             kTopBit - 1),
            kTopBit - 1);
  EXPECT_EQ(combineReplicated<std::uint64_t>(DataType::kUint64, ReduceOp::kMin, U64::max(), 0),
            0u);
  EXPECT_EQ(combineReplicated<std::uint64_t>(DataType::kUint64, ReduceOp::kMax, 0, U64::max()),
            U64::max());
  EXPECT_EQ(combineReplicated<std::uint32_t>(DataType::kUint32, ReduceOp::kMax, 0x80000000u,
                                             0x7fffffffu),
            0x80000000u);
  EXPECT_EQ(combineReplicated<std::uint8_t>(DataType::kUint8, ReduceOp::kMin, 0x80, 0x7f), 0x7f);
  EXPECT_EQ(combineReplicated<std::int8_t>(DataType::kInt8, ReduceOp::kMax, -128, -127), -127);
}

// Byte products are emulated with 16-bit multiplies on AVX2 and AVX-512: every pair of
// bytes, at every position within a 16-bit lane, on every kernel set.
TEST(CombineWrap, EveryBytePairMultiplies) {
  constexpr std::size_t kN = 65536;
  std::vector<std::uint8_t> a(kN), b(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    a[i] = static_cast<std::uint8_t>(i);
    b[i] = static_cast<std::uint8_t>(i >> 8);
  }
  for (DataType dtype : {DataType::kInt8, DataType::kUint8}) {
    for (const auto& [name, kernel] : kernelsFor(dtype, ReduceOp::kProd)) {
      std::vector<std::uint8_t> out(kN);
      kernel(out.data(), a.data(), b.data(), kN);
      for (std::size_t i = 0; i < kN; ++i) {
        ASSERT_EQ(out[i], static_cast<std::uint8_t>(a[i] * b[i]))
            << name << " " << dataTypeName(dtype) << ": " << int{a[i]} << " * " << int{b[i]};
      }
    }
  }
}

// 64-bit products are emulated from 32-bit halves on AVX2: operands with all four halves
// non-zero, and signs.
TEST(CombineWrap, EmulatedQwordProducts) {
  EXPECT_EQ(combineReplicated<std::uint64_t>(DataType::kUint64, ReduceOp::kProd,
                                             0x123456789abcdef1ull, 0xfedcba9876543211ull),
            0x123456789abcdef1ull * 0xfedcba9876543211ull);
  // -(2^32 + 1) * (2^32 + 1) = -(2^64 + 2^33 + 1), which is -(2^33 + 1) modulo 2^64.
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kProd, -0x100000001ll,
                                            0x100000001ll),
            -0x200000001ll);
  EXPECT_EQ(combineReplicated<std::int64_t>(DataType::kInt64, ReduceOp::kProd, -0xffffffffll,
                                            -0xffffffffll),
            static_cast<std::int64_t>(0xfffffffe00000001ull));
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
    // Subnormals. Operands and expectations are encoded with the reference rounding, so one
    // row means different things per type: 2^-24 is float16's smallest subnormal, 2^-130 a
    // bfloat16 and float32 subnormal (and 0 in float16). The expectation is the exact
    // result, rounded once like the kernels must.
    {ReduceOp::kSum, 0x1p-24, 0x1p-24, 0x1p-23},
    {ReduceOp::kSum, 0x1p-24, -0x1p-23, -0x1p-24},
    {ReduceOp::kSum, 0x1p-130, 0x1p-130, 0x1p-129},
    {ReduceOp::kSum, 0x1p-126, -0x1p-130, 0x1p-126 - 0x1p-130},
    {ReduceOp::kProd, 0x1p-12, 0x1p-13, 0x1p-25},  // a tie in float16: to even, 0
    {ReduceOp::kProd, 0x1p-70, 0x1p-60, 0x1p-130},
    {ReduceOp::kProd, -0x1p-120, 0x1p-15, -0x1p-135},  // below bfloat16's smallest: -0
    {ReduceOp::kMin, 0x1p-130, -0x1p-130, -0x1p-130},
    {ReduceOp::kMax, 0x1p-24, 0x1p-23, 0x1p-23},
    {ReduceOp::kAvg, 0x1p-133, 0x1p-133, 0x1p-132},
    // Overflow to infinity in the narrow formats only.
    {ReduceOp::kSum, 65504, 65504, 131008},
    {ReduceOp::kProd, 0x1p100, 0x1p100, 0x1p200},
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

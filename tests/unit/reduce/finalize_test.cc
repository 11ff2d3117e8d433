// finalize(): kAvg divides by the world size with each type's rules; every other operator
// leaves the buffer alone. Every kernel set's division is checked on its own too.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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

class FinalizeTest : public ::testing::TestWithParam<DataType> {};

TEST_P(FinalizeTest, AverageMatchesReference) {
  const DataType dtype = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(dtype) + 7);
  for (std::size_t count : {1, 7, 1000, 4097}) {
    for (int worldSize : {1, 3, 8}) {
      const Bytes in = ref::randomElements(dtype, count, rng);
      const Bytes expected = ref::refAverage(dtype, in, count, worldSize);
      Bytes buf = in;
      finalize(buf.data(), count, dtype, ReduceOp::kAvg, worldSize);
      for (std::size_t i = 0; i < count; ++i) {
        std::string why;
        ASSERT_TRUE(ref::sameElement(dtype, buf.data(), expected.data(), i, &why))
            << "worldSize " << worldSize << " count " << count << ": " << why;
      }
    }
  }
}

TEST_P(FinalizeTest, OtherOperatorsAreNoOps) {
  const DataType dtype = GetParam();
  std::mt19937_64 rng(3);
  const Bytes in = ref::randomElements(dtype, 100, rng);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
    Bytes buf = in;
    finalize(buf.data(), 100, dtype, op, 8);
    EXPECT_EQ(buf, in) << reduceOpName(op);
  }
  // Nothing to divide: the pointer is not used.
  finalize(nullptr, 0, dtype, ReduceOp::kAvg, 8);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, FinalizeTest,
                         ::testing::Values(DataType::kInt8, DataType::kUint8, DataType::kInt32,
                                           DataType::kUint32, DataType::kInt64, DataType::kUint64,
                                           DataType::kFloat16, DataType::kBFloat16,
                                           DataType::kFloat32, DataType::kFloat64),
                         [](const ::testing::TestParamInfo<DataType>& param) {
                           return std::string(dataTypeName(param.param));
                         });

// ---- every kernel set's division ------------------------------------------------------------

using IsaParam = std::tuple<detail::Isa, DataType>;

class IsaFinalizeTest : public ::testing::TestWithParam<IsaParam> {
 protected:
  void SetUp() override {
    const detail::Isa isa = std::get<0>(GetParam());
    if (!detail::isaSupported(isa)) {
      GTEST_SKIP() << "this CPU (or OS) does not support the " << detail::isaName(isa)
                   << " kernels";
    }
  }

  // Divides `count` random elements, stored `offset` elements into a buffer followed by
  // guard bytes, and checks them against the reference and, bit for bit, against the
  // portable kernel (a NaN divided keeps its payload, so there is no freedom here).
  void check(std::size_t count, std::size_t offset, int worldSize, std::mt19937_64& rng) {
    constexpr std::uint8_t kSentinel = 0x5a;
    const auto [isa, dtype] = GetParam();
    const std::size_t es = dataTypeSize(dtype);
    const Bytes in = ref::randomElements(dtype, count, rng);
    const Bytes expected = ref::refAverage(dtype, in, count, worldSize);
    Bytes portable = in;
    if (count > 0) {
      detail::averageKernel(dtype, detail::Isa::kGeneric)(portable.data(), count, worldSize);
    }
    Bytes buf((offset + count + 8) * es, kSentinel);
    if (count > 0) std::memcpy(buf.data() + offset * es, in.data(), count * es);
    detail::averageKernel(dtype, isa)(buf.data() + offset * es, count, worldSize);
    const std::uint8_t* got = buf.data() + offset * es;
    const std::string where = std::string(detail::isaName(isa)) + " " + dataTypeName(dtype) +
                              " count=" + std::to_string(count) + " offset=" +
                              std::to_string(offset) + " worldSize=" + std::to_string(worldSize);
    for (std::size_t i = 0; i < count; ++i) {
      std::string why;
      ASSERT_TRUE(ref::sameElement(dtype, got, expected.data(), i, &why)) << where << ": " << why;
      ASSERT_EQ(std::memcmp(got + i * es, portable.data() + i * es, es), 0)
          << where << ": differs from the portable kernel at element " << i;
    }
    for (std::size_t i = 0; i < offset * es; ++i) ASSERT_EQ(buf[i], kSentinel) << where;
    for (std::size_t i = (offset + count) * es; i < buf.size(); ++i) {
      ASSERT_EQ(buf[i], kSentinel) << where << ": wrote past the end";
    }
  }
};

// Every count to 130 (every tail), every start alignment in a cache line, a large count.
TEST_P(IsaFinalizeTest, EveryLengthMatchesReferenceAndPortableKernel) {
  const DataType dtype = std::get<1>(GetParam());
  std::mt19937_64 rng(static_cast<std::uint64_t>(dtype) + 11);
  for (std::size_t count = 0; count <= 130; ++count) {
    for (std::size_t offset : {0, 1}) check(count, offset, count % 2 == 0 ? 3 : 8, rng);
  }
  const std::size_t perLine = 64 / dataTypeSize(dtype);
  for (std::size_t offset = 0; offset < perLine; ++offset) check(3 * perLine + 5, offset, 7, rng);
  check(100'003, 3, 1000, rng);
}

INSTANTIATE_TEST_SUITE_P(
    EveryIsa, IsaFinalizeTest,
    ::testing::Combine(::testing::Values(detail::Isa::kGeneric, detail::Isa::kAvxF16c,
                                         detail::Isa::kAvx2, detail::Isa::kAvx512,
                                         detail::Isa::kAvx512Bf16),
                       ::testing::Values(DataType::kInt8, DataType::kUint8, DataType::kInt32,
                                         DataType::kUint32, DataType::kInt64, DataType::kUint64,
                                         DataType::kFloat16, DataType::kBFloat16,
                                         DataType::kFloat32, DataType::kFloat64)),
    [](const ::testing::TestParamInfo<IsaParam>& param) {
      return std::string(detail::isaName(std::get<0>(param.param))) + "_" +
             dataTypeName(std::get<1>(param.param));
    });

template <typename T>
std::vector<T> averaged(DataType dtype, std::vector<T> v, int worldSize) {
  finalize(v.data(), v.size(), dtype, ReduceOp::kAvg, worldSize);
  return v;
}

// Hand-computed values: truncation toward zero, negative sums, and the wrapped sum (not
// the mathematical one) being divided.
TEST(FinalizeByHand, IntegersTruncateTowardZero) {
  using V8 = std::vector<std::int8_t>;
  EXPECT_EQ(averaged<std::int8_t>(DataType::kInt8, {-7, 7, -128, 127, -1, 0}, 3),
            (V8{-2, 2, -42, 42, 0, 0}));
  EXPECT_EQ(averaged<std::int8_t>(DataType::kInt8, {-128, 127, -9}, 8), (V8{-16, 15, -1}));
  EXPECT_EQ(averaged<std::int8_t>(DataType::kInt8, {-128, 127}, 1), (V8{-128, 127}));
  EXPECT_EQ(averaged<std::uint8_t>(DataType::kUint8, {255, 7, 8}, 8),
            (std::vector<std::uint8_t>{31, 0, 1}));
  EXPECT_EQ(averaged<std::int32_t>(DataType::kInt32, {-1, -8, -9, 2147483647}, 8),
            (std::vector<std::int32_t>{0, -1, -1, 268435455}));
  EXPECT_EQ(averaged<std::uint32_t>(DataType::kUint32, {0xffffffffu}, 3),
            (std::vector<std::uint32_t>{0x55555555u}));
  constexpr std::int64_t kMin64 = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(averaged<std::int64_t>(DataType::kInt64, {kMin64, -10, 10}, 3),
            (std::vector<std::int64_t>{kMin64 / 3, -3, 3}));
  EXPECT_EQ(averaged<std::uint64_t>(DataType::kUint64, {~0ull}, 8),
            (std::vector<std::uint64_t>{~0ull >> 3}));
}

TEST(FinalizeByHand, AverageOfAWrappedSum) {
  // Three ranks contribute 100 each as int8: the sum wraps to 44 (300 - 256), and the
  // average is 44 / 3 = 14, not 100.
  std::int8_t acc[1] = {100};
  const std::int8_t contribution[1] = {100};
  combine(acc, acc, contribution, 1, DataType::kInt8, ReduceOp::kAvg);
  combine(acc, acc, contribution, 1, DataType::kInt8, ReduceOp::kAvg);
  EXPECT_EQ(acc[0], 44);
  finalize(acc, 1, DataType::kInt8, ReduceOp::kAvg, 3);
  EXPECT_EQ(acc[0], 14);
}

TEST(FinalizeByHand, FloatsDivideInTheirComputeType) {
  // A true float32 division: multiplying by a rounded reciprocal would differ for some
  // inputs. The expectations are computed by the compiler with the same division.
  EXPECT_EQ(averaged<float>(DataType::kFloat32, {1.0f, -3.0f, 0.1f}, 3),
            (std::vector<float>{1.0f / 3.0f, -1.0f, 0.1f / 3.0f}));
  EXPECT_EQ(averaged<double>(DataType::kFloat64, {1.0, -24.0}, 8),
            (std::vector<double>{0.125, -3.0}));
  // 1/3 in binary16 is 0x3555 (0.333251953125); -6/8 = -0.75 is exact (0xba00).
  EXPECT_EQ(averaged<std::uint16_t>(DataType::kFloat16, {0x3c00}, 3),
            (std::vector<std::uint16_t>{0x3555}));
  EXPECT_EQ(averaged<std::uint16_t>(DataType::kFloat16, {0xc600}, 8),
            (std::vector<std::uint16_t>{0xba00}));
  // 1/3 in bfloat16 is 0x3eab (0.333984375, rounded up from 0x3eaa...).
  EXPECT_EQ(averaged<std::uint16_t>(DataType::kBFloat16, {0x3f80}, 3),
            (std::vector<std::uint16_t>{0x3eab}));
  // The smallest float16 subnormal halves to a tie between 0 and itself: rounds to +0.
  EXPECT_EQ(averaged<std::uint16_t>(DataType::kFloat16, {0x0001, 0x8003}, 2),
            (std::vector<std::uint16_t>{0x0000, 0x8002}));
}

TEST(FinalizeDeathTest, WorldSizeMustBePositive) {
  float x = 1.0f;
  EXPECT_DEATH(finalize(&x, 1, DataType::kFloat32, ReduceOp::kAvg, 0), "worldSize > 0");
}

}  // namespace
}  // namespace tutti::reduce

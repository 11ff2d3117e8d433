#include <gtest/gtest.h>

#include "tutti/types.h"

namespace tutti {
namespace {

TEST(Types, SizesAndNames) {
  EXPECT_EQ(dataTypeSize(DataType::kInt8), 1u);
  EXPECT_EQ(dataTypeSize(DataType::kFloat16), 2u);
  EXPECT_EQ(dataTypeSize(DataType::kBFloat16), 2u);
  EXPECT_EQ(dataTypeSize(DataType::kUint32), 4u);
  EXPECT_EQ(dataTypeSize(DataType::kFloat64), 8u);
  EXPECT_EQ(dataTypeSize(static_cast<DataType>(99)), 0u);
  for (int i = 0; i < kNumDataTypes; ++i) {
    auto t = static_cast<DataType>(i);
    EXPECT_EQ(parseDataType(dataTypeName(t)), t);
  }
  for (int i = 0; i < kNumReduceOps; ++i) {
    auto op = static_cast<ReduceOp>(i);
    EXPECT_EQ(parseReduceOp(reduceOpName(op)), op);
  }
}

TEST(Types, NcclTestsAliases) {
  EXPECT_EQ(parseDataType("half"), DataType::kFloat16);
  EXPECT_EQ(parseDataType("float"), DataType::kFloat32);
  EXPECT_EQ(parseDataType("double"), DataType::kFloat64);
  EXPECT_EQ(parseDataType("bfloat16"), DataType::kBFloat16);
  EXPECT_EQ(parseDataType("float16"), DataType::kFloat16);
  EXPECT_EQ(parseDataType("float32"), DataType::kFloat32);
  EXPECT_EQ(parseDataType("float64"), DataType::kFloat64);
  EXPECT_EQ(parseDataType("quad"), std::nullopt);
  EXPECT_EQ(parseReduceOp("mean"), std::nullopt);
}

}  // namespace
}  // namespace tutti

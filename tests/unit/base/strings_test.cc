#include "base/strings.h"

#include <gtest/gtest.h>

#include "base/net.h"

namespace tutti {
namespace {

TEST(Strings, ParseBytes) {
  EXPECT_EQ(parseBytes("0"), 0u);
  EXPECT_EQ(parseBytes("4096"), 4096u);
  EXPECT_EQ(parseBytes("64K"), 65536u);
  EXPECT_EQ(parseBytes("16M"), 16u << 20);
  EXPECT_EQ(parseBytes("1G"), 1u << 30);
  EXPECT_EQ(parseBytes("2MiB"), 2u << 20);
  EXPECT_EQ(parseBytes("8B"), 8u);
  EXPECT_EQ(parseBytes("k"), std::nullopt);
  EXPECT_EQ(parseBytes("12Q"), std::nullopt);
  EXPECT_EQ(parseBytes("99999999999999999999"), std::nullopt);
  EXPECT_EQ(parseBytes("17179869184T"), std::nullopt);  // overflows 64 bits
}

TEST(Strings, ParseNumbers) {
  EXPECT_EQ(parseInt("42"), 42);
  EXPECT_EQ(parseInt(" -3 "), -3);
  EXPECT_EQ(parseInt("4x"), std::nullopt);
  EXPECT_EQ(parseInt(""), std::nullopt);
  EXPECT_EQ(parseDouble("2.5"), 2.5);
  EXPECT_EQ(parseDouble("abc"), std::nullopt);
}

TEST(Strings, FormatAndSplit) {
  EXPECT_EQ(strFormat("%d-%s", 3, "x"), "3-x");
  EXPECT_EQ(strFormat("%s", ""), "");
  auto parts = splitString("a,b,,c", ',');
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[2], "");
  EXPECT_EQ(humanBytes(512), "512 B");
  EXPECT_EQ(humanBytes(1536), "1.5 KiB");
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
}

TEST(HostPort, ParsesAndPrints) {
  auto hp = parseHostPort("127.0.0.1:29500");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 29500);
  auto v6 = parseHostPort("[::1]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->toString(), "[::1]:80");
  EXPECT_FALSE(parseHostPort("nohost").ok());
  EXPECT_FALSE(parseHostPort("host:0").ok());
  EXPECT_FALSE(parseHostPort("host:70000").ok());
  EXPECT_FALSE(parseHostPort("[::1]80").ok());
}

TEST(FormatRankList, CompressesConsecutiveRuns) {
  EXPECT_EQ(formatRankList({}), "");
  EXPECT_EQ(formatRankList({4}), "4");
  EXPECT_EQ(formatRankList({0, 1}), "0-1");
  EXPECT_EQ(formatRankList({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(formatRankList({1, 3, 5}), "1,3,5");
}

}  // namespace
}  // namespace tutti

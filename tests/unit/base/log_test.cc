#include "base/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tutti {
namespace {

TEST(Log, SubsysMaskParsing) {
  std::uint32_t mask = 0;
  ASSERT_TRUE(log::parseSubsysMask("INIT,TCP", &mask));
  EXPECT_EQ(mask, log::kInit | log::kTcp);
  ASSERT_TRUE(log::parseSubsysMask("ALL", &mask));
  EXPECT_EQ(mask, log::kAll);
  ASSERT_TRUE(log::parseSubsysMask("^TCP", &mask));
  EXPECT_EQ(mask & log::kTcp, 0u);
  EXPECT_NE(mask & log::kInit, 0u);
  EXPECT_FALSE(log::parseSubsysMask("NOPE", &mask));
}

TEST(Log, WritesPrefixedLinesToFileAndFilters) {
  std::string path = "/tmp/tutti-log-test." + std::to_string(getpid()) + ".log";
  std::remove(path.c_str());
  ASSERT_TRUE(log::configure("INFO", "TCP", path));
  log::setRank(3);
  TUTTI_INFO(kTcp, "hello %d", 42);
  TUTTI_INFO(kInit, "filtered by subsystem");
  TUTTI_DEBUG(kTcp, "filtered by level");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  EXPECT_NE(s.find("[rank 3]"), std::string::npos) << s;
  EXPECT_NE(s.find("INFO TCP log_test.cc"), std::string::npos) << s;
  EXPECT_NE(s.find("hello 42"), std::string::npos) << s;
  EXPECT_NE(s.find(":" + std::to_string(getpid()) + ":"), std::string::npos) << s;
  EXPECT_EQ(s.find("filtered"), std::string::npos) << s;
  EXPECT_FALSE(log::configure("LOUD", "ALL", ""));  // falls back to WARN
  log::setRank(-1);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tutti

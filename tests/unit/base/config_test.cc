#include "base/config.h"

#include <gtest/gtest.h>

namespace tutti {
namespace {

TEST(Config, DefaultsWhenNothingIsSet) {
  auto config = Config::fromMap({});
  ASSERT_TRUE(config.ok()) << config.status().toString();
  EXPECT_EQ(config->timeoutSec, 300.0);
  EXPECT_EQ(config->segmentBytes, 512u * 1024u);
  EXPECT_EQ(config->debugLevel, "WARN");
  EXPECT_FALSE(config->isSet("TUTTI_TIMEOUT"));
  EXPECT_TRUE(config->warnings().empty());
}

TEST(Config, ParsesEveryKind) {
  auto config = Config::fromMap({{"TUTTI_TIMEOUT", "2.5"},
                                 {"TUTTI_SPIN_US", "7"},
                                 {"TUTTI_SEGMENT_BYTES", "64K"},
                                 {"TUTTI_DEBUG", "INFO"}});
  ASSERT_TRUE(config.ok()) << config.status().toString();
  EXPECT_EQ(config->timeoutSec, 2.5);
  EXPECT_EQ(config->spinUs, 7);
  EXPECT_EQ(config->segmentBytes, 65536u);
  EXPECT_EQ(config->debugLevel, "INFO");
  EXPECT_TRUE(config->isSet("TUTTI_TIMEOUT"));
  EXPECT_EQ(config->rawValue("TUTTI_SEGMENT_BYTES"), "64K");
  EXPECT_EQ(config->rawValue("TUTTI_MAX_INFLIGHT"), "16");
}

TEST(Config, MalformedValueIsAnErrorNamingTheVariable) {
  auto config = Config::fromMap({{"TUTTI_TIMEOUT", "soon"}});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("TUTTI_TIMEOUT"), std::string::npos);
  EXPECT_NE(config.status().message().find("soon"), std::string::npos);

  auto bytes = Config::fromMap({{"TUTTI_SEGMENT_BYTES", "12Q"}});
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("TUTTI_SEGMENT_BYTES"), std::string::npos);
}

TEST(Config, UnknownTuttiVariableWarnsWithSuggestion) {
  auto config = Config::fromMap({{"TUTTI_TIMEOUTT", "5"}, {"HOME", "/root"}});
  ASSERT_TRUE(config.ok());
  ASSERT_EQ(config->warnings().size(), 1u);
  EXPECT_NE(config->warnings()[0].find("TUTTI_TIMEOUTT"), std::string::npos);
  EXPECT_NE(config->warnings()[0].find("did you mean TUTTI_TIMEOUT?"), std::string::npos);
}

TEST(Config, RegistryRowsAreUniqueAndDocumented) {
  const auto& registry = configRegistry();
  ASSERT_FALSE(registry.empty());
  for (std::size_t i = 0; i < registry.size(); ++i) {
    EXPECT_NE(std::string(registry[i].doc), "") << registry[i].name;
    for (std::size_t j = i + 1; j < registry.size(); ++j)
      EXPECT_NE(std::string(registry[i].name), registry[j].name);
  }
}

TEST(Config, EmptyValueMeansUnsetForTypedKinds) {
  auto config = Config::fromMap({{"TUTTI_TIMEOUT", ""}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->timeoutSec, 300.0);
}

}  // namespace
}  // namespace tutti

#include "base/config.h"

#include <gtest/gtest.h>

#include <string>

#include "base/log.h"

namespace tutti {
namespace {

// The message of the registry's verdict on `value` for `name` ("" when it is accepted).
std::string refusal(const std::string& name, const std::string& value) {
  auto config = Config::fromMap({{name, value}});
  const Status direct = validateConfigValue(name, value);
  EXPECT_EQ(config.ok(), direct.ok()) << name << "=" << value;
  if (config.ok()) return "";
  EXPECT_EQ(config.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(), direct.message());
  return config.status().message();
}

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
                                 {"TUTTI_SHM_CMA_SHARE", "off"},
                                 {"TUTTI_DEBUG", "INFO"}});
  ASSERT_TRUE(config.ok()) << config.status().toString();
  EXPECT_EQ(config->timeoutSec, 2.5);
  EXPECT_EQ(config->spinUs, 7);
  EXPECT_EQ(config->segmentBytes, 65536u);
  EXPECT_FALSE(config->shmCmaShare);
  EXPECT_EQ(config->debugLevel, "INFO");
  EXPECT_TRUE(config->isSet("TUTTI_TIMEOUT"));
  EXPECT_EQ(config->rawValue("TUTTI_SEGMENT_BYTES"), "64K");
  EXPECT_EQ(config->rawValue("TUTTI_MAX_INFLIGHT"), "16");
}

TEST(Config, MalformedValueIsAnErrorNamingTheVariableAndTheKind) {
  EXPECT_EQ(refusal("TUTTI_TIMEOUT", "soon"), "TUTTI_TIMEOUT='soon' is not a number");
  EXPECT_EQ(refusal("TUTTI_SHM_POLL_US", "5.5"), "TUTTI_SHM_POLL_US='5.5' is not an integer");
  EXPECT_EQ(refusal("TUTTI_SEGMENT_BYTES", "12Q"),
            "TUTTI_SEGMENT_BYTES='12Q' is not a byte count such as 4096, 64K or 16M");
  EXPECT_EQ(refusal("TUTTI_SHM_CMA_SHARE", "maybe"),
            "TUTTI_SHM_CMA_SHARE='maybe' is not a boolean: 1 or 0 (also true/false, yes/no, "
            "on/off)");
}

TEST(Config, ValueOutOfRangeIsAnErrorNamingTheRange) {
  EXPECT_EQ(refusal("TUTTI_SHM_POLL_US", "-5"),
            "TUTTI_SHM_POLL_US=-5 is out of range: 0 to 10000000 (microseconds)");
  EXPECT_EQ(refusal("TUTTI_SHM_POLL_US", "10000001"),
            "TUTTI_SHM_POLL_US=10000001 is out of range: 0 to 10000000 (microseconds)");
  EXPECT_EQ(refusal("TUTTI_SHM_POLL_US", "0"), "");
  EXPECT_EQ(refusal("TUTTI_SHM_POLL_US", "10000000"), "");
  // An exclusive lower bound, on a Double; NaN is refused.
  EXPECT_EQ(refusal("TUTTI_TIMEOUT", "0"),
            "TUTTI_TIMEOUT=0 is out of range: more than 0, at most 1000000000 (seconds)");
  EXPECT_NE(refusal("TUTTI_TIMEOUT", "nan"), "");
  EXPECT_NE(refusal("TUTTI_TIMEOUT", "inf"), "");
  EXPECT_EQ(refusal("TUTTI_TIMEOUT", "0.001"), "");
  // No upper bound.
  EXPECT_EQ(refusal("TUTTI_SHM_RUN_AHEAD_MESSAGES", "-1"),
            "TUTTI_SHM_RUN_AHEAD_MESSAGES=-1 is out of range: at least 0 (messages)");
  EXPECT_EQ(refusal("TUTTI_SHM_RUN_AHEAD_MESSAGES", "9000000000"), "");
  // 0 besides a range, on Bytes; the bounds are read as byte counts.
  const std::string slots = " is out of range: 0, or 64 to 64M (bytes)";
  EXPECT_EQ(refusal("TUTTI_SHM_SLOT_BYTES", "32"), "TUTTI_SHM_SLOT_BYTES=32" + slots);
  EXPECT_EQ(refusal("TUTTI_SHM_SLOT_BYTES", "65M"), "TUTTI_SHM_SLOT_BYTES=65M" + slots);
  for (const char* ok : {"0", "64", "64K", "64M", "67108864"})
    EXPECT_EQ(refusal("TUTTI_SHM_SLOT_BYTES", ok), "") << ok;
  EXPECT_EQ(refusal("TUTTI_FLIGHT_RECORDER_SIZE", "1048577"),
            "TUTTI_FLIGHT_RECORDER_SIZE=1048577 is out of range: 0 to 1048576 (operations)");
  EXPECT_EQ(refusal("TUTTI_HANG_REPORT_SEC", "3601"),
            "TUTTI_HANG_REPORT_SEC=3601 is out of range: 0 to 3600 (seconds)");
  EXPECT_EQ(refusal("TUTTI_SPIN_US", "-2"),
            "TUTTI_SPIN_US=-2 is out of range: -1 to 10000000 (microseconds)");
}

TEST(Config, ValueNotAmongTheAllowedIsAnErrorListingThem) {
  EXPECT_EQ(refusal("TUTTI_TRANSPORT", "udp"),
            "TUTTI_TRANSPORT='udp' is not allowed: one of auto, shm, tcp");
  // Exact, as core compares them.
  EXPECT_NE(refusal("TUTTI_TRANSPORT", "SHM"), "");
  EXPECT_NE(refusal("TUTTI_TRANSPORT", " shm"), "");
  EXPECT_EQ(refusal("TUTTI_TRANSPORT", "shm"), "");
  EXPECT_EQ(refusal("TUTTI_ASYNC_PROGRESS", "poll"),
            "TUTTI_ASYNC_PROGRESS='poll' is not allowed: one of auto, thread, wait");
  EXPECT_EQ(refusal("TUTTI_MESSAGE_PATH", "fast"),
            "TUTTI_MESSAGE_PATH='fast' is not allowed: one of learn, rule, buffered, direct, "
            "streamed");
  for (const char* path : {"learn", "rule", "buffered", "direct", "streamed"})
    EXPECT_EQ(refusal("TUTTI_MESSAGE_PATH", path), "") << path;
}

TEST(Config, LogLevelsAndSubsystemsMatchInAnyCaseAsTheLogReadsThem) {
  for (const char* ok : {"info", " Debug ", "NONE", "off", "warning", "TRACE"})
    EXPECT_EQ(refusal("TUTTI_DEBUG", ok), "") << ok;
  EXPECT_EQ(refusal("TUTTI_DEBUG", "verbose"),
            "TUTTI_DEBUG='verbose' is not allowed: one of NONE, OFF, ERROR, WARN, WARNING, INFO, "
            "DEBUG, TRACE (any case)");
  for (const char* ok : {"INIT", "init,shm", "^COLL", "ALL", "Tcp, Shm", "^ALL"})
    EXPECT_EQ(refusal("TUTTI_DEBUG_SUBSYS", ok), "") << ok;
  EXPECT_EQ(refusal("TUTTI_DEBUG_SUBSYS", "INIT,FOO"),
            "TUTTI_DEBUG_SUBSYS='INIT,FOO' is not allowed: a comma-separated list of ALL, INIT, "
            "BOOTSTRAP, TCP, SHM, COLL, TUNE, TOPO, ENV, EXEC, RUN (any case), led by ^ for all "
            "but those");
  // The registry and the log's own parser agree.
  for (const char* text : {"INIT", "init,shm", "^COLL", "Tcp, Shm", "INIT,FOO", "INIT,,SHM", "^",
                           "X", "INIT;SHM"}) {
    std::uint32_t mask = 0;
    EXPECT_EQ(refusal("TUTTI_DEBUG_SUBSYS", text).empty(), log::parseSubsysMask(text, &mask))
        << text;
  }
  std::uint32_t every = 0;
  ASSERT_TRUE(log::parseSubsysMask("INIT,BOOTSTRAP,TCP,SHM,COLL,TUNE,TOPO,ENV,EXEC,RUN", &every));
  EXPECT_EQ(every, (static_cast<std::uint32_t>(log::kRun) << 1) - 1)
      << "a subsystem is missing from TUTTI_DEBUG_SUBSYS's row";
}

TEST(Config, AutoOrAByteCount) {
  for (const char* ok : {"auto", "0", "256K", "2M"}) {
    EXPECT_EQ(refusal("TUTTI_SHM_CMA_BYTES", ok), "") << ok;
    EXPECT_EQ(refusal("TUTTI_SHM_EXCHANGE_BYTES", ok), "") << ok;
  }
  EXPECT_EQ(refusal("TUTTI_SHM_CMA_BYTES", "lots"),
            "TUTTI_SHM_CMA_BYTES='lots' is not allowed: auto, or a byte count such as 4096, 64K "
            "or 16M");
  EXPECT_NE(refusal("TUTTI_SHM_EXCHANGE_BYTES", "Auto"), "");
}

TEST(Config, ApiValuesAreCheckedAgainstTheSameRowUnderTheirOwnName) {
  const Status udp = validateConfigValue("TUTTI_TRANSPORT", "udp", "CommOptions::transport");
  EXPECT_EQ(udp.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(udp.message(), "CommOptions::transport='udp' is not allowed: one of auto, shm, tcp");
  EXPECT_TRUE(validateConfigValue("TUTTI_TRANSPORT", "tcp", "CommOptions::transport").ok());
  EXPECT_TRUE(validateConfigValue("TUTTI_ASYNC_PROGRESS", "", "CommOptions::asyncProgress").ok())
      << "empty is unset";
  EXPECT_EQ(validateConfigValue("TUTTI_NO_SUCH", "1").code(), ErrorCode::kInvalidArgument);
}

TEST(Config, EveryDefaultPassesItsOwnRule) {
  for (const ConfigVarInfo& var : configRegistry()) {
    const Status s = validateConfigValue(var.name, var.defaultValue);
    EXPECT_TRUE(s.ok()) << var.name << ": " << s.message();
  }
  EXPECT_TRUE(Config::fromMap({}).ok());
}

// A rule's shape fits its kind, and its bounds parse as the kind: an inclusive bound is itself
// allowed, an exclusive one refused as out of range (not as malformed).
TEST(Config, EveryRuleFitsItsKindAndItsBoundsParse) {
  using Shape = ConfigRule::Shape;
  for (const ConfigVarInfo& var : configRegistry()) {
    const ConfigRule& rule = var.rule;
    const bool numeric = var.kind == ConfigKind::Int || var.kind == ConfigKind::Double ||
                         var.kind == ConfigKind::Bytes;
    if (rule.shape == Shape::kRange) {
      EXPECT_TRUE(numeric) << var.name;
      EXPECT_TRUE(rule.min != nullptr || rule.max != nullptr) << var.name;
      if (rule.min != nullptr) {
        const Status atMin = validateConfigValue(var.name, rule.min);
        if (rule.minExclusive) {
          EXPECT_NE(atMin.message().find("out of range"), std::string::npos) << var.name;
        } else {
          EXPECT_TRUE(atMin.ok()) << var.name << ": " << atMin.message();
        }
      }
      if (rule.max != nullptr) {
        EXPECT_TRUE(validateConfigValue(var.name, rule.max).ok()) << var.name;
      }
    } else if (rule.shape != Shape::kAny) {
      EXPECT_EQ(var.kind, ConfigKind::String) << var.name;
      EXPECT_NE(std::string(rule.values), "") << var.name;
    }
    if (var.kind == ConfigKind::Double) {
      EXPECT_NE(rule.max, nullptr) << var.name << ": a Double needs a bound against inf";
    }
    if (var.audience == ConfigAudience::Launcher) {
      EXPECT_EQ(rule.shape, Shape::kAny) << var.name;
    }
  }
}

TEST(Config, AllowedValuesReadAsWords) {
  EXPECT_EQ(configAllowedValues(*findConfigVar("TUTTI_TRANSPORT")), "one of auto, shm, tcp");
  EXPECT_EQ(configAllowedValues(*findConfigVar("TUTTI_SHM_CMA_SHARE")),
            "a boolean: 1 or 0 (also true/false, yes/no, on/off)");
  EXPECT_EQ(configAllowedValues(*findConfigVar("TUTTI_TCP_MAX_UNEXPECTED")),
            "a byte count such as 4096, 64K or 16M");
  EXPECT_EQ(configAllowedValues(*findConfigVar("TUTTI_LOG_FILE")), "a file path");
  EXPECT_EQ(configAllowedValues(*findConfigVar("TUTTI_RANK")), "any text");
  EXPECT_EQ(configAllowedValues(*findConfigVar("TUTTI_AUTH_TIMEOUT")),
            "more than 0, at most 86400 (seconds)");
  EXPECT_EQ(findConfigVar("TUTTI_NO_SUCH"), nullptr);
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

TEST(Config, EmptyValueMeansUnsetForEveryKind) {
  auto config = Config::fromMap({{"TUTTI_TIMEOUT", ""}, {"TUTTI_TRANSPORT", ""},
                                 {"TUTTI_SHM_CMA_BYTES", ""}, {"TUTTI_DEBUG", ""}});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->timeoutSec, 300.0);
  EXPECT_EQ(config->transport, "auto");
  EXPECT_EQ(config->shmCmaBytes, "auto");
  EXPECT_EQ(config->debugLevel, "WARN");
  EXPECT_FALSE(config->isSet("TUTTI_TRANSPORT"));
}

TEST(Config, OtherLaunchersVariablesAreNeverRefused) {
  auto config = Config::fromMap({{"RANK", "not-a-number"}, {"SLURM_NTASKS", "x"}});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->torchRank, "not-a-number");
}

}  // namespace
}  // namespace tutti

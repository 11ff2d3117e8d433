// `tutti-run --config`'s table (describeConfig): every variable of the registry, its
// default, audience and allowed values, the environment's value (marked where the registry
// refuses it), and never the job secret.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/config.h"
#include "run/config_report.h"

namespace tutti::run {
namespace {

TEST(ConfigReport, EveryVariableAppearsWithItsDefaultAndDoc) {
  const std::string out = describeConfig({});
  for (const ConfigVarInfo& var : configRegistry()) {
    EXPECT_NE(out.find(std::string(var.name) + " (default "), std::string::npos) << var.name;
    EXPECT_NE(out.find(std::string("    ") + var.doc + "\n"), std::string::npos) << var.name;
  }
  EXPECT_NE(out.find("TUTTI_TIMEOUT (default 300)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("TUTTI_ASYNC_PROGRESS (default auto)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("TUTTI_LOG_FILE (default unset)\n"), std::string::npos) << out;
}

TEST(ConfigReport, EachVariableShowsItsAudienceAndWhatIsAllowed) {
  const std::string out = describeConfig({});
  EXPECT_NE(out.find("TUTTI_TRANSPORT (default auto)\n    user knob: one of auto, shm, tcp\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("TUTTI_SHM_POLL_US (default 5000)\n"
                     "    internal knob: 0 to 10000000 (microseconds)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("TUTTI_RANK (default unset)\n    set by a launcher\n"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("REFUSED"), std::string::npos) << out;
}

TEST(ConfigReport, ASetValueTheRegistryRefusesIsMarked) {
  const std::string out = describeConfig({{"TUTTI_TRANSPORT", "udp"}, {"TUTTI_TIMEOUT", "9"}});
  EXPECT_NE(out.find("TUTTI_TRANSPORT=udp (set; default auto)\n    user knob: one of auto, shm, "
                     "tcp\n    REFUSED: TUTTI_TRANSPORT='udp' is not allowed: one of auto, shm, "
                     "tcp\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("REFUSED: TUTTI_TIMEOUT"), std::string::npos) << out;
}

TEST(ConfigReport, ValuesTheEnvironmentSetsAreShownButNotTheSecret) {
  const std::map<std::string, std::string> env = {
      {"TUTTI_TIMEOUT", "12"}, {"TUTTI_SECRET", "a-secret-value-of-twenty-bytes"}, {"EDITOR", "vi"}};
  const std::string out = describeConfig(env);
  EXPECT_NE(out.find("TUTTI_TIMEOUT=12 (set; default 300)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("TUTTI_SECRET (set, not shown; default unset)\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("a-secret-value"), std::string::npos) << out;
  EXPECT_EQ(out.find("EDITOR"), std::string::npos) << out;  // not a variable tutti reads
}

}  // namespace
}  // namespace tutti::run

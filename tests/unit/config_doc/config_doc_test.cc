// tools/config_doc: docs/config.md and README.md's user-knob table are what the registry
// makes of them (the check that keeps the docs generated), and the generator's pieces.

#include "config_doc/config_doc.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/config.h"

namespace tutti::config_doc {
namespace {

TEST(ConfigDoc, TheCheckedInDocsAreWhatTheRegistryMakes) {
  const Status status = checkDocs(TUTTI_SOURCE_DIR);
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(ConfigDoc, EveryVariableIsInTheReferenceUnderItsAudience) {
  const std::string doc = configMarkdown();
  const std::size_t internal = doc.find("## Internal knobs");
  const std::size_t launcher = doc.find("## Set by launchers");
  ASSERT_NE(internal, std::string::npos);
  ASSERT_NE(launcher, std::string::npos);
  for (const ConfigVarInfo& var : configRegistry()) {
    const std::size_t at = doc.find(std::string("| `") + var.name + "` |");
    ASSERT_NE(at, std::string::npos) << var.name;
    switch (var.audience) {
      case ConfigAudience::User: EXPECT_LT(at, internal) << var.name; break;
      case ConfigAudience::Internal: EXPECT_GT(at, internal) << var.name; break;
      case ConfigAudience::Launcher: EXPECT_GT(at, launcher) << var.name; break;
    }
  }
  EXPECT_NE(doc.find("| `TUTTI_TRANSPORT` | String | `auto` | one of auto, shm, tcp | "),
            std::string::npos);
  EXPECT_NE(doc.find("| `TUTTI_SHM_SLOT_BYTES` | Bytes | `0` | 0, or 64 to 64M (bytes) | "),
            std::string::npos);
}

TEST(ConfigDoc, TheReadmeTableHoldsTheUserKnobsOnly) {
  const std::string table = readmeKnobTable();
  EXPECT_EQ(table.rfind(kReadmeBegin, 0), 0u);
  EXPECT_EQ(table.substr(table.size() - kReadmeEnd.size()), kReadmeEnd);
  for (const ConfigVarInfo& var : configRegistry()) {
    const bool listed = table.find(std::string("| `") + var.name + "` |") != std::string::npos;
    EXPECT_EQ(listed, var.audience == ConfigAudience::User) << var.name;
  }
  EXPECT_NE(table.find("| `TUTTI_LOG_FILE` | unset | a file path | "), std::string::npos);
}

TEST(ConfigDoc, TheReadmeBlockIsReplacedBetweenItsMarkersOnly) {
  const std::string readme = std::string("intro\n") + std::string(kReadmeBegin) + "\nold\n" +
                             std::string(kReadmeEnd) + "\nrest\n";
  auto updated = withReadmeKnobs(readme);
  ASSERT_TRUE(updated.ok()) << updated.status().message();
  EXPECT_EQ(*updated, "intro\n" + readmeKnobTable() + "\nrest\n");
  auto again = withReadmeKnobs(*updated);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *updated);
  auto none = withReadmeKnobs("no markers\n");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "no markers\n");
  EXPECT_FALSE(withReadmeKnobs("x " + std::string(kReadmeBegin) + " y").ok());
  EXPECT_FALSE(withReadmeKnobs(std::string(kReadmeEnd) + std::string(kReadmeBegin)).ok());
}

void writeText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// A scratch source tree (docs/config.md and README.md) under the system's temporary folder.
class ConfigDocTree : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "tutti-doc-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    std::filesystem::create_directory(root_ / "docs");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
};

TEST_F(ConfigDocTree, AStaleTreeFailsTheCheckWithTheCommandAndWriteMakesItCurrent) {
  writeText(root_ / "docs/config.md", "# Configuration\nold\n");
  writeText(root_ / "README.md", "intro\n" + std::string(kReadmeBegin) + "\nold\n" +
                                     std::string(kReadmeEnd) + "\n");
  const Status stale = checkDocs(root_.string());
  EXPECT_EQ(stale.code(), ErrorCode::kMismatch);
  EXPECT_NE(stale.message().find("docs/config.md and README.md's knob table are not what"),
            std::string::npos)
      << stale.message();
  EXPECT_NE(stale.message().find(kRegenerate), std::string::npos) << stale.message();
  ASSERT_TRUE(writeDocs(root_.string()).ok());
  const Status current = checkDocs(root_.string());
  EXPECT_TRUE(current.ok()) << current.message();
}

TEST_F(ConfigDocTree, AReadmeWithoutMarkersIsLeftAlone) {
  writeText(root_ / "docs/config.md", configMarkdown());
  writeText(root_ / "README.md", "a README without the markers\n");
  EXPECT_TRUE(checkDocs(root_.string()).ok());
  ASSERT_TRUE(writeDocs(root_.string()).ok());
  std::ifstream in(root_ / "README.md");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "a README without the markers");
}

TEST_F(ConfigDocTree, AMissingFileIsASystemErrorNamingIt) {
  const Status missing = checkDocs(root_.string());
  EXPECT_EQ(missing.code(), ErrorCode::kSystemError);
  EXPECT_NE(missing.message().find("docs/config.md"), std::string::npos) << missing.message();
}

}  // namespace
}  // namespace tutti::config_doc

// The tuner plugin interface (src/tuning/plugin.h, include/tutti/tuner_plugin.h): a good
// plugin's choice is used and asked once per shape; broken ones (no symbol, another
// version, init failing, getChoice failing, an unknown algorithm, one that does not apply,
// a nonsense segment or index) are refused, naming the problem, and the built-in choice
// stands. The plugins are test_plugin.c, built once per kind.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "tuning/plugin.h"
#include "tuning/tuner.h"
#include "unit/tuning/tuning_models.h"

namespace tutti::tuning {
namespace {

using test::fastModel;
using test::setupFor;
using test::specFor;

std::string pluginPath(const std::string& kind) {
  // Appended piecewise: GCC 12 warns falsely on a chain of + from a literal here.
  std::string path = TUTTI_TEST_PLUGIN_DIR;
  path.append("/tutti_test_tuner_");
  path.append(kind);
  path.append(".so");
  return path;
}

// How many times the loaded plugin `kind` was asked (its testPluginCalls()).
int callsOf(const std::string& kind) {
  void* handle = dlopen(pluginPath(kind).c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return -1;
  auto calls = reinterpret_cast<int (*)()>(dlsym(handle, "testPluginCalls"));
  const int n = calls != nullptr ? calls() : -1;
  dlclose(handle);
  return n;
}

TunerSetup oneHost() { return setupFor(fastModel(), 4, 4, TransportKind::kShm); }

TEST(TunerPlugin, GoodPluginChoosesOncePerShape) {
  const TunerSetup setup = oneHost();
  auto plugin = TunerPlugin::open(pluginPath("good"), setup);
  ASSERT_TRUE(plugin.ok()) << plugin.status().toString();
  EXPECT_EQ((*plugin)->name(), "test");
  Tuner tuner(setup);
  tuner.setPlugin(*plugin);
  const CollectiveSpec spec = specFor(setup, 1 << 20);
  auto explained = tuner.explain(spec);
  ASSERT_TRUE(explained.ok());
  EXPECT_EQ(explained->by, "plugin test");
  const Candidate& slowest = explained->ranking.back();
  const int before = callsOf("good");
  Status error;
  for (int i = 0; i < 3; ++i) {
    const Choice c = tuner.choose(spec, &error);
    EXPECT_EQ(c.algorithm, slowest.algorithm);
    EXPECT_EQ(c.segmentBytes, slowest.segmentBytes);
  }
  EXPECT_EQ(callsOf("good"), before + 1);
}

TEST(TunerPlugin, ChoiceByNameWithASegment) {
  const TunerSetup setup = oneHost();
  auto plugin = TunerPlugin::open(pluginPath("by_name"), setup);
  ASSERT_TRUE(plugin.ok()) << plugin.status().toString();
  auto ranking = rankCandidates(specFor(setup, 16 << 20), setup);
  ASSERT_TRUE(ranking.ok());
  auto chosen = (*plugin)->ask(specFor(setup, 16 << 20), setup, *ranking);
  ASSERT_TRUE(chosen.ok()) << chosen.status().toString();
  EXPECT_STREQ(chosen->algorithm->name, "ring");
  EXPECT_EQ(chosen->segmentBytes, 128u << 10);
}

TEST(TunerPlugin, BrokenLibrariesAreRefusedAtLoad) {
  const TunerSetup setup = oneHost();
  struct Case {
    std::string path;
    std::string problem;
  };
  for (const Case& c : {Case{"/nonexistent/tuner.so", "does not load"},
                        Case{pluginPath("no_symbol"), "lacks the symbol tuttiTunerPlugin_v1"},
                        Case{pluginPath("old_version"), "has version 0"},
                        Case{pluginPath("init_fails"), "init failed (7)"}}) {
    auto plugin = TunerPlugin::open(c.path, setup);
    ASSERT_FALSE(plugin.ok()) << c.path;
    EXPECT_NE(plugin.status().message().find(c.problem), std::string::npos)
        << plugin.status().toString();
    EXPECT_EQ(TunerPlugin::load(c.path, setup), nullptr);  // with a warning
  }
}

TEST(TunerPlugin, NonsenseChoicesAreRefusedAndTheBuiltInChoiceStands) {
  const TunerSetup setup = oneHost();
  const CollectiveSpec spec = specFor(setup, 1 << 20);
  auto ranking = rankCandidates(spec, setup);
  ASSERT_TRUE(ranking.ok());
  struct Case {
    std::string kind;
    std::string problem;
  };
  for (const Case& c : {Case{"unknown", "unknown allreduce algorithm 'warp_drive'"},
                        Case{"not_applicable", "'hier_rs_ag' does not apply"},
                        Case{"bad_segment", "segment of 1 bytes is outside"},
                        Case{"choice_fails", "getChoice failed (5)"},
                        Case{"bad_index", "candidate 999"}}) {
    auto plugin = TunerPlugin::open(pluginPath(c.kind), setup);
    ASSERT_TRUE(plugin.ok()) << c.kind << ": " << plugin.status().toString();
    auto asked = (*plugin)->ask(spec, setup, *ranking);
    ASSERT_FALSE(asked.ok()) << c.kind;
    EXPECT_NE(asked.status().message().find(c.problem), std::string::npos)
        << c.kind << ": " << asked.status().toString();
    Tuner tuner(setup);
    tuner.setPlugin(*plugin);
    Status error;
    const Choice choice = tuner.choose(spec, &error);
    EXPECT_EQ(choice.algorithm, ranking->front().algorithm) << c.kind;
    EXPECT_EQ(choice.segmentBytes, ranking->front().segmentBytes) << c.kind;
  }
}

}  // namespace
}  // namespace tutti::tuning

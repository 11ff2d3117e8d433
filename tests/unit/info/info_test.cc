#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/subprocess.h"
#include "common/test_paths.h"
#include "algorithms/algorithm.h"
#include "info/reports.h"
#include "info/tune_report.h"
#include "topology/view_json.h"
#include "tuning/model_json.h"

namespace tutti::test {
namespace {

constexpr double kBoundSeconds = 60;

ProcessResult info(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {binPath("tutti-info")};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, kBoundSeconds);
}

TEST(TuttiInfo, TopologyOfThisHost) {
  const ProcessResult text = info({"topology"});
  ASSERT_EQ(text.exitCode(), 0) << text.err;
  EXPECT_NE(text.out.find("1 host, 1 rank\nhost 0 '"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank 0: host 0, local rank 0, package "), std::string::npos) << text.out;
  const ProcessResult json = info({"topology", "--json"});
  ASSERT_EQ(json.exitCode(), 0) << json.err;
  auto view = topo::fromJson(json.out);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_GE(view->hosts[0].packages, 1);
  EXPECT_GE(view->hosts[0].cores, 1);
}

TEST(TuttiInfo, TopologyOfAFile) {
  const std::string path = ::testing::TempDir() + "tutti_info_view.json";
  std::ofstream(path) << R"({"format": "tutti-topology", "version": 1,
    "hosts": [{"name": "a", "packages": 2}, {"name": "b"}],
    "ranks": [{"rank": 0, "host": 0, "package": 1}, {"rank": 1, "host": 1}, {"rank": 2, "host": 0}]})";
  const ProcessResult text = info({"topology", "--file", path});
  ASSERT_EQ(text.exitCode(), 0) << text.err;
  EXPECT_NE(text.out.find("2 hosts, 3 ranks\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("host 0 'a' (id a): 2 packages"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  ranks: 0 2\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank 2: host 0, local rank 1, package ?"), std::string::npos) << text.out;
  std::ofstream(path) << "{\"format\": \"tutti-topology\",\n \"version\": true}";
  const ProcessResult bad = info({"topology", "--file", path});
  EXPECT_EQ(bad.exitCode(), 1);
  EXPECT_NE(bad.err.find("line 2: version: an integer expected, found a boolean"),
            std::string::npos) << bad.err;
}

TEST(TuttiInfo, Config) {
  const ProcessResult r = info({"config"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  EXPECT_NE(r.out.find("TUTTI_TOPO_FILE (default "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TUTTI_DEBUG (default WARN)"), std::string::npos) << r.out;
}

TEST(TuttiInfo, Algorithms) {
  const ProcessResult all = info({"algorithms"});
  ASSERT_EQ(all.exitCode(), 0) << all.err;
  EXPECT_NE(all.out.find("allreduce:\n"), std::string::npos);
  EXPECT_NE(all.out.find("  ring "), std::string::npos);
  EXPECT_EQ(all.out.find("[applies"), std::string::npos);  // nothing to apply to
  const ProcessResult four = info({"algorithms", "--ranks", "4", "--hosts", "2"});
  ASSERT_EQ(four.exitCode(), 0) << four.err;
  EXPECT_NE(four.out.find("for 4 ranks on 2 hosts (2 hosts: {0,1} {2,3}):"), std::string::npos)
      << four.out;
  EXPECT_NE(four.out.find("; the default]"), std::string::npos);
  const ProcessResult bad = info({"algorithms", "--ranks", "2", "--hosts", "3"});
  EXPECT_EQ(bad.exitCode(), 1);
  EXPECT_NE(bad.err.find("--hosts 3: between 1 and the 2 ranks"), std::string::npos) << bad.err;
  EXPECT_EQ(info({"nonsense"}).exitCode(), 2);
}

TEST(TuttiInfo, ExplainRanksEveryCandidate) {
  // The model's defaults from a file, so that nothing is probed or read from the cache.
  const std::string model = testing::TempDir() + "explain_model.json";
  ASSERT_TRUE(tuning::writeModelFile(model, tuning::defaults()).ok());
  const ProcessResult r =
      info({"explain", "allreduce", "64M", "--ranks", "8", "--hosts", "2", "--model", model});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  EXPECT_NE(r.out.find("on 8 ranks on 2 hosts"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n   1  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 1.00\n"), std::string::npos) << r.out;  // the best, over itself
  EXPECT_NE(r.out.find("hier_rs_ag"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nchosen: "), std::string::npos) << r.out;
  const ProcessResult bad = info({"explain", "allreduce", "64M", "--ranks", "8", "--hosts", "3",
                                  "--model", model});
  EXPECT_NE(bad.exitCode(), 0);
  EXPECT_NE(bad.err.find("--hosts 3 must divide --ranks 8"), std::string::npos) << bad.err;
}

TEST(TuttiInfo, ExplainAsJsonWithTheCommunicatorsSegmentAndFlatRoom) {
  const std::string model = testing::TempDir() + "explain_json_model.json";
  ASSERT_TRUE(tuning::writeModelFile(model, tuning::defaults()).ok());
  // A fixed segment: every candidate runs with it, none is chosen.
  const ProcessResult fixed =
      info({"explain", "allreduce", "4M", "--ranks", "4", "--model", model, "--segment", "64K",
            "--fixed-segment", "--flat-room", "4096", "--json"});
  ASSERT_EQ(fixed.exitCode(), 0) << fixed.err;
  EXPECT_EQ(fixed.out.find('\n'), fixed.out.size() - 1) << "one line: " << fixed.out;
  EXPECT_EQ(fixed.out.rfind("{\"collective\": \"allreduce\", \"bytes\": 4194304, "
                            "\"count\": 1048576, \"dtype\": \"float32\", \"ranks\": 4, "
                            "\"hosts\": 1, \"transport\": \"shm\", \"network\": \"flat\", ",
                            0),
            0u) << fixed.out;
  EXPECT_NE(fixed.out.find("\"segment_bytes\": 65536, \"fixed_segment\": true, "
                           "\"flat_room\": 4096, \"ranking\": [{\"algorithm\": "),
            std::string::npos) << fixed.out;
  EXPECT_NE(fixed.out.find("{\"algorithm\": \"ring\", \"segment_bytes\": 65536, "
                           "\"segment_matters\": false, \"flat\": false, \"seconds\": "),
            std::string::npos) << fixed.out;
  EXPECT_EQ(fixed.out.find("\"segment_bytes\": 524288"), std::string::npos) << fixed.out;
  EXPECT_NE(fixed.out.find("\"by\": \"model\", \"table\": \"ring\"}"), std::string::npos)
      << fixed.out;
  // A default segment: the pipelined algorithms are priced at each candidate segment.
  const ProcessResult free = info({"explain", "allreduce", "4M", "--ranks", "4", "--model", model,
                                   "--segment", "256K", "--json"});
  ASSERT_EQ(free.exitCode(), 0) << free.err;
  EXPECT_NE(free.out.find("\"segment_bytes\": 262144, \"fixed_segment\": false"),
            std::string::npos) << free.out;
  EXPECT_NE(free.out.find("{\"algorithm\": \"ring\", \"segment_bytes\": 1048576, "
                          "\"segment_matters\": true"),
            std::string::npos) << free.out;
  // Sizes as tutti-bench's: an all-gather of 64K on 4 ranks contributes 16K a rank.
  const ProcessResult gather = info({"explain", "allgather", "64K", "--ranks", "4", "--model",
                                     model, "--json"});
  ASSERT_EQ(gather.exitCode(), 0) << gather.err;
  EXPECT_NE(gather.out.find("\"bytes\": 65536, \"count\": 4096, "), std::string::npos)
      << gather.out;
  const ProcessResult bad = info({"explain", "allreduce", "4M", "--ranks", "4", "--model", model,
                                  "--segment", "0"});
  EXPECT_EQ(bad.exitCode(), 1);
  EXPECT_NE(bad.err.find("--segment '0': a size in bytes"), std::string::npos) << bad.err;
}

TEST(TuttiInfo, TuneProbesPrintsAndLoadsTheFileItWrites) {
  const ProcessResult probed = info({"tune", "--probe", "--json", "--budget-ms", "20"});
  ASSERT_EQ(probed.exitCode(), 0) << probed.err;
  auto model = tuning::fromJson(probed.out);
  ASSERT_TRUE(model.ok()) << model.status().message() << "\n" << probed.out;
  const std::string path = ::testing::TempDir() + "tutti_info_tune.json";
  std::ofstream(path, std::ios::trunc) << probed.out;
  ::setenv("TUTTI_TUNING_FILE", path.c_str(), 1);
  const ProcessResult shown = info({"tune"});
  const ProcessResult json = info({"tune", "--json"});
  std::ofstream(path, std::ios::trunc) << "{\"format\": \"tutti-machine-model\"}";
  const ProcessResult bad = info({"tune"});
  ::unsetenv("TUTTI_TUNING_FILE");
  ASSERT_EQ(shown.exitCode(), 0) << shown.err;
  EXPECT_NE(shown.out.find("machine model (file " + path + ")"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("same_l3"), std::string::npos);
  ASSERT_EQ(json.exitCode(), 0) << json.err;
  EXPECT_EQ(tuning::toJson(*tuning::fromJson(json.out)), tuning::toJson(*model));
  EXPECT_EQ(bad.exitCode(), 1);
  EXPECT_NE(bad.err.find("TUTTI_TUNING_FILE: model file " + path + ": line 1: version: missing"),
            std::string::npos) << bad.err;
}

TEST(TuttiInfo, TuneProbeSaveReplacesTheCacheOrSaysWhyNot) {
  const std::string dir = ::testing::TempDir() + "tutti_info_save";
  std::filesystem::remove_all(dir);
  ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  const ProcessResult saved = info({"tune", "--probe", "--save", "--budget-ms", "20"});
  const ProcessResult shown = info({"tune"});
  const ProcessResult alone = info({"tune", "--save"});
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(alone.exitCode(), 2);  // --save needs --probe
  // Whether this host was quiet enough for a complete probe is not the test's to choose:
  // either the cache holds it, or the tool says the probe was incomplete and wrote nothing.
  if (saved.exitCode() == 0) {
    EXPECT_NE(saved.out.find("; saved in " + dir + "/tutti/model-"), std::string::npos) << saved.out;
    EXPECT_NE(shown.out.find("machine model (cache " + dir + "/tutti/model-"), std::string::npos)
        << shown.out;
  } else {
    EXPECT_EQ(saved.exitCode(), 1) << saved.err;
    EXPECT_NE(saved.err.find("--save: the probe was incomplete"), std::string::npos) << saved.err;
    EXPECT_NE(shown.out.find("machine model (defaults: nothing cached"), std::string::npos)
        << shown.out;
  }
}

TEST(InfoReports, TheModelIsDescribedWithItsOrigin) {
  tuning::MachineModel m = tuning::defaults();
  m.origin = "cache /x";
  const std::string text = info::describeModel(m, {"copy_beta: 1 MiB copies"});
  EXPECT_EQ(text.rfind("machine model (cache /x)\n", 0), 0u) << text;
  EXPECT_NE(text.find("  network         25.000 us      1.25 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("    float32   8.00 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("    copy_beta: 1 MiB copies\n"), std::string::npos) << text;
}

TEST(InfoReports, EveryAlgorithmIsListedUnderItsCollective) {
  auto text = info::describeAlgorithms(3, 1);
  ASSERT_TRUE(text.ok());
  for (const AlgorithmInfo& a : algorithmRegistry()) {
    const std::string heading = std::string(collectiveName(a.kind)) + ":\n";
    const auto at = text->find(heading);
    ASSERT_NE(at, std::string::npos) << heading;
    EXPECT_NE(text->find(std::string("  ") + a.name + " ", at), std::string::npos) << a.name;
  }
}

}  // namespace
}  // namespace tutti::test

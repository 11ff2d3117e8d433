// Where a host's model comes from (tuning/model_cache.h) and how the ranks agree on it at
// creation (core/model_setup.h): the cache written once and then read, TUTTI_TUNING_FILE in
// its place, an unwritable cache a warning, and every rank ending with rank 0's model.
#include "tuning/model_cache.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/model_setup.h"
#include "tuning/model_json.h"
#include "tutti/build_config.h"

namespace tutti::tuning {
namespace {

// A fresh directory under the test's temporary one.
std::string freshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "tutti_model_cache_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

MachineModel marked(double copyBeta) {
  MachineModel m = defaults();
  m.copyBeta = copyBeta;
  m.coresPerHost = 3;
  return m;
}

// A stand-in for the probe, so that what is cached never depends on how busy the host is:
// the defaults with a mark, complete unless `incomplete`.
ProbeReport fakeProbe(bool incomplete) {
  ProbeReport report;
  report.model = defaults();
  report.model.copyBeta = 7e-3;
  report.model.origin = "probe";
  report.complete = !incomplete;
  return report;
}

// A cache file's header for this library and the test host, measured `ageSeconds` ago.
ModelFileInfo cacheInfo(double ageSeconds, bool complete = true,
                        const std::string& library = cacheLibraryTag(),
                        const std::string& host = "test-host") {
  return {library, host, static_cast<std::int64_t>(std::time(nullptr) - ageSeconds), complete};
}

ModelSource sourceIn(const std::string& dir, bool incomplete = false) {
  ModelSource s;
  s.cacheDir = dir;
  s.hostId = "test-host";
  s.prober = [incomplete](const ProbeOptions&) { return fakeProbe(incomplete); };
  return s;
}

TEST(ModelCache, TheDirectoryFollowsXdgThenHome) {
  auto config = Config::fromMap({{"XDG_CACHE_HOME", "/x/cache"}, {"HOME", "/home/u"}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(cacheDirectory(*config), "/x/cache/tutti");
  config = Config::fromMap({{"XDG_CACHE_HOME", "relative"}, {"HOME", "/home/u"}});
  EXPECT_EQ(cacheDirectory(*config), "/home/u/.cache/tutti");  // XDG: relative ones are ignored
  EXPECT_EQ(cacheDirectory(Config::defaults()), "");
  const std::string a = cacheFilePath("/d", "host-a");
  EXPECT_EQ(a.rfind(std::string("/d/model-") + cacheLibraryTag() + "-", 0), 0u) << a;
  EXPECT_NE(a, cacheFilePath("/d", "host-b"));
  EXPECT_EQ(a, cacheFilePath("/d", "host-a"));
}

TEST(ModelCache, TheFirstLoadProbesAndWritesTheNextReads) {
  const ModelSource source = sourceIn(freshDir("first") + "/deeper");
  auto first = loadHostModel(source);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const std::string path = cacheFilePath(source.cacheDir, source.hostId);
  EXPECT_EQ(first->origin, "probe, cached in " + path);
  auto second = loadHostModel(source);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->origin, "cache " + path);
  EXPECT_EQ(toJson(*second), toJson(*first));
}

TEST(ModelCache, ACacheIsUsedAsWrittenAndAnotherHostsIsReplaced) {
  const ModelSource source = sourceIn(freshDir("used"));
  ASSERT_EQ(::mkdir(source.cacheDir.c_str(), 0700), 0);
  const std::string path = cacheFilePath(source.cacheDir, source.hostId);
  ASSERT_TRUE(writeModelFile(path, marked(1e-3), cacheInfo(60)).ok());
  auto model = loadHostModel(source);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->copyBeta, 1e-3);  // the file's, not the probe's (7e-3)
  EXPECT_EQ(model->origin, "cache " + path);
  // Written by another library version, by this version's earlier probe (which measured
  // fewer parameters), or for another host: measured anew, replaced.
  ASSERT_TRUE(writeModelFile(path, marked(1e-3), cacheInfo(60, true, TUTTI_VERSION_STRING)).ok());
  EXPECT_EQ(loadHostModel(source)->copyBeta, 7e-3);
  ASSERT_TRUE(writeModelFile(path, marked(1e-3), cacheInfo(60, true, "0.0.0-other")).ok());
  model = loadHostModel(source);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->copyBeta, 7e-3);
  ModelFileInfo info;
  ASSERT_TRUE(loadModelFile(path, &info).ok());
  EXPECT_EQ(info.library, cacheLibraryTag());
  ASSERT_TRUE(
      writeModelFile(path, marked(1e-3), cacheInfo(60, true, cacheLibraryTag(), "another-host")).ok());
  EXPECT_EQ(loadHostModel(source)->copyBeta, 7e-3);
  // A malformed cache is measured anew too.
  { std::ofstream(path, std::ios::trunc) << "{\"format\":"; }
  model = loadHostModel(source);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->origin, "probe, cached in " + path);
}

TEST(ModelCache, AnIncompleteProbeIsCachedMarkedAndMeasuredAgainMinutesLater) {
  const ModelSource source = sourceIn(freshDir("incomplete"), true);
  const std::string path = cacheFilePath(source.cacheDir, source.hostId);
  auto model = loadHostModel(source);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->copyBeta, 7e-3);
  EXPECT_EQ(model->origin, "probe, incomplete (the host was busy), cached in " + path);
  ModelFileInfo written;
  ASSERT_TRUE(loadModelFile(path, &written).ok());
  EXPECT_FALSE(written.complete);
  // The next process within kIncompleteRetrySeconds uses it rather than probing again...
  ModelSource complete = sourceIn(source.cacheDir);
  ASSERT_TRUE(writeModelFile(path, marked(1e-3), cacheInfo(60, false)).ok());
  EXPECT_EQ(loadHostModel(complete)->origin, "cache " + path);
  // ...and one after it measures anew.
  ASSERT_TRUE(writeModelFile(path, marked(1e-3), cacheInfo(kIncompleteRetrySeconds + 60, false)).ok());
  model = loadHostModel(complete);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->origin, "probe, cached in " + path);
  ASSERT_TRUE(loadModelFile(path, &written).ok());
  EXPECT_TRUE(written.complete);
}

TEST(ModelCache, APhaseReportedContendedMakesTheProbeIncomplete) {
  // The real probe, with its same_l3 phase reported contended through the test seam: used
  // (same_l3 from the nearest trusted class, or the defaults) and cached marked incomplete.
  ModelSource source = sourceIn(freshDir("contended"));
  source.prober = probeHost;
  source.probe.budgetSeconds = 0.01;
  source.probe.contended = [](std::string_view phase) { return phase == "same_l3"; };
  auto model = loadHostModel(source);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const std::string path = cacheFilePath(source.cacheDir, source.hostId);
  EXPECT_EQ(model->origin, "probe, incomplete (the host was busy), cached in " + path);
  ModelFileInfo written;
  ASSERT_TRUE(loadModelFile(path, &written).ok());
  EXPECT_FALSE(written.complete);
}

TEST(ModelCache, AnExpiredOrUndatedOrIncompleteCacheIsMeasuredAnew) {
  const ModelSource source = sourceIn(freshDir("expired"));
  ASSERT_EQ(::mkdir(source.cacheDir.c_str(), 0700), 0);
  const std::string path = cacheFilePath(source.cacheDir, source.hostId);
  const double day = 86400;
  // Six days old: used.
  ASSERT_TRUE(writeModelFile(path, marked(1e-3), cacheInfo(6 * day)).ok());
  EXPECT_EQ(loadHostModel(source)->copyBeta, 1e-3);
  // Eight days old, undated (an older build's), recorded incomplete past the retry time, or
  // from the future: each measured anew and replaced by a dated, complete one.
  for (const ModelFileInfo& info :
       {cacheInfo(8 * day), ModelFileInfo{cacheLibraryTag(), "test-host", 0, true},
        cacheInfo(kIncompleteRetrySeconds + 60, false), cacheInfo(-2 * day)}) {
    ASSERT_TRUE(writeModelFile(path, marked(1e-3), info).ok());
    auto model = loadHostModel(source);
    ASSERT_TRUE(model.ok());
    EXPECT_EQ(model->copyBeta, 7e-3) << info.measured << " " << info.complete;
    EXPECT_EQ(model->origin, "probe, cached in " + path);
    ModelFileInfo written;
    ASSERT_TRUE(loadModelFile(path, &written).ok());
    EXPECT_TRUE(written.complete);
    EXPECT_LE(std::abs(static_cast<double>(written.measured - std::time(nullptr))), 60);
  }
  // The age is the source's to choose.
  ModelSource strict = source;
  strict.maxAgeSeconds = 0.5 * day;
  ASSERT_TRUE(writeModelFile(path, marked(1e-3), cacheInfo(day)).ok());
  EXPECT_EQ(loadHostModel(strict)->copyBeta, 7e-3);
}

TEST(ModelCache, SaveReplacesTheCacheWithACompleteProbeOnly) {
  const ModelSource source = sourceIn(freshDir("save") + "/deeper");
  const std::string path = cacheFilePath(source.cacheDir, source.hostId);
  ProbeReport report = fakeProbe(false);
  report.model.copyBeta = 3e-3;
  auto saved = saveHostModel(source, report);
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  EXPECT_EQ(*saved, path);
  auto model = loadHostModel(source);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->copyBeta, 3e-3);  // the saved one, not a new probe's (7e-3)
  EXPECT_EQ(model->origin, "cache " + path);
  // Saving again replaces it.
  report.model.copyBeta = 4e-3;
  ASSERT_TRUE(saveHostModel(source, report).ok());
  EXPECT_EQ(loadHostModel(source)->copyBeta, 4e-3);
  // An incomplete probe is refused and the cache stays as it was.
  saved = saveHostModel(source, fakeProbe(true));
  ASSERT_FALSE(saved.ok());
  EXPECT_NE(saved.status().message().find("the probe was incomplete"), std::string::npos);
  EXPECT_EQ(loadHostModel(source)->copyBeta, 4e-3);
  ModelSource none = source;
  none.cacheDir.clear();
  EXPECT_FALSE(saveHostModel(none, report).ok());
}

TEST(ModelCache, AnUnwritableCacheIsAWarningNotAnError) {
  ModelSource source = sourceIn("/proc/tutti-no-such-cache");
  auto model = loadHostModel(source);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->origin.rfind("probe, not cached: ", 0), 0u) << model->origin;
  source.cacheDir.clear();
  model = loadHostModel(source);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->origin.rfind("probe, not cached: ", 0), 0u) << model->origin;
}

TEST(ModelCache, TheTuningFileReplacesTheCache) {
  const std::string dir = freshDir("file");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::string file = dir + "/mine.json";
  ASSERT_TRUE(writeModelFile(file, marked(2e-3)).ok());
  ModelSource source = sourceIn(dir);
  source.tuningFile = file;
  auto model = loadHostModel(source);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->copyBeta, 2e-3);
  EXPECT_EQ(model->origin, "file " + file);
  EXPECT_FALSE(std::filesystem::exists(cacheFilePath(dir, source.hostId)));  // no probe ran
  source.tuningFile = dir + "/missing.json";
  model = loadHostModel(source);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("TUTTI_TUNING_FILE: model file " + source.tuningFile),
            std::string::npos) << model.status().message();
}

// Ranks as threads agreeing through a store, rank 0 with `rank0Config`, the others with a
// file of their own that they must not use.
std::vector<Result<std::shared_ptr<const MachineModel>>> agree(const Config& rank0Config,
                                                               const Config& othersConfig,
                                                               int ranks) {
  const auto store = makeMemoryStore();
  std::vector<Result<std::shared_ptr<const MachineModel>>> out(
      static_cast<std::size_t>(ranks), Status(ErrorCode::kInternal, "not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      detail::ModelRequest q{store.get(), "c/", r, ranks, "test-host", Deadline::afterSeconds(30)};
      out[static_cast<std::size_t>(r)] = detail::agreeOnModel(q, r == 0 ? rank0Config : othersConfig);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST(ModelSetup, EveryRankEndsWithRankZerosModel) {
  const std::string dir = freshDir("agree");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_TRUE(writeModelFile(dir + "/zero.json", marked(4e-3)).ok());
  ASSERT_TRUE(writeModelFile(dir + "/other.json", marked(5e-3)).ok());
  auto zero = Config::fromMap({{"TUTTI_TUNING_FILE", dir + "/zero.json"}});
  auto other = Config::fromMap({{"TUTTI_TUNING_FILE", dir + "/other.json"}});
  ASSERT_TRUE(zero.ok() && other.ok());
  const auto models = agree(*zero, *other, 4);
  for (const auto& m : models) {
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ((*m)->copyBeta, 4e-3);
    EXPECT_EQ(toJson(**m), toJson(*models[0].value()));
    EXPECT_EQ((*m)->origin, "file " + dir + "/zero.json");
  }
}

TEST(ModelSetup, RankZerosBadFileFailsEveryRankNamingIt) {
  const std::string dir = freshDir("bad");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  { std::ofstream(dir + "/bad.json") << "{\"format\": \"tutti-machine-model\", \"version\": 1,\n\"speed\": 1}"; }
  auto bad = Config::fromMap({{"TUTTI_TUNING_FILE", dir + "/bad.json"}});
  ASSERT_TRUE(bad.ok());
  const auto models = agree(*bad, Config::defaults(), 3);
  for (const auto& m : models) {
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("bad.json: line 2: speed: unknown key"), std::string::npos)
        << m.status().message();
  }
  EXPECT_NE(models[1].status().message().find("rank 0 has no machine model"), std::string::npos);
}

TEST(ModelSetup, OneRankUsesTheDefaultsAndTheStoreValueRoundTrips) {
  const auto one = agree(Config::defaults(), Config::defaults(), 1);
  ASSERT_TRUE(one[0].ok());
  EXPECT_EQ((*one[0])->origin, "defaults");
  MachineModel m = marked(6e-3);
  m.origin = "cache /a\nb";
  auto back = detail::decodeModel(detail::encodeModel(m));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->copyBeta, 6e-3);
  EXPECT_EQ(back->origin, "cache /a b");
  EXPECT_FALSE(detail::decodeModel("no newline").ok());
  EXPECT_FALSE(detail::decodeModel("origin\n{}").ok());
}

}  // namespace
}  // namespace tutti::tuning

#include "run/spawn.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "run/launcher.h"

namespace tutti::run {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(JobEnvironment, SetsLauncherVariablesPerRank) {
  const JobEnvironment env({"HOME=/root", "PATH=/bin"}, {});
  const auto vars = env.forRank(3, 8, "127.0.0.1:5000", "job-7", "s3cret-0123456789");
  EXPECT_TRUE(contains(vars, "HOME=/root"));
  EXPECT_TRUE(contains(vars, "PATH=/bin"));
  EXPECT_TRUE(contains(vars, "TUTTI_RANK=3"));
  EXPECT_TRUE(contains(vars, "TUTTI_WORLD_SIZE=8"));
  EXPECT_TRUE(contains(vars, "TUTTI_LOCAL_RANK=3"));
  EXPECT_TRUE(contains(vars, "TUTTI_LOCAL_WORLD_SIZE=8"));
  EXPECT_TRUE(contains(vars, "TUTTI_STORE_ADDR=127.0.0.1:5000"));
  EXPECT_TRUE(contains(vars, "TUTTI_JOB_ID=job-7"));
  EXPECT_TRUE(contains(vars, "TUTTI_SECRET=s3cret-0123456789"));
}

// With --hosts a rank's local coordinates are its place among its host's ranks.
TEST(JobEnvironment, LocalCoordinatesOfARankOnAnotherHost) {
  const JobEnvironment env({}, {});
  const auto vars = env.forRank(4, 5, 1, 2, "10.0.0.1:5000", "job-7", "s3cret-0123456789");
  EXPECT_TRUE(contains(vars, "TUTTI_RANK=4"));
  EXPECT_TRUE(contains(vars, "TUTTI_WORLD_SIZE=5"));
  EXPECT_TRUE(contains(vars, "TUTTI_LOCAL_RANK=1"));
  EXPECT_TRUE(contains(vars, "TUTTI_LOCAL_WORLD_SIZE=2"));
}

TEST(JobEnvironment, ExtraAssignmentsOverrideAndInheritedCoordinatesAreDropped) {
  // As if tutti-run were started by a rank of another job.
  const JobEnvironment env({"TUTTI_RANK=5", "TUTTI_STORE_ADDR=10.0.0.1:1", "A=old", "B=x=y",
                            "TUTTI_SECRET=outer-job-secret-0123", "TUTTI_SECRET_FILE=/tmp/s"},
                           {{"A", "new"}, {"EMPTY", ""}});
  EXPECT_EQ(env.value("A"), "new");
  EXPECT_EQ(env.value("B"), "x=y");
  const auto vars = env.forRank(0, 1, "127.0.0.1:9", "j", "this-job-secret-0123");
  EXPECT_TRUE(contains(vars, "A=new"));
  EXPECT_FALSE(contains(vars, "A=old"));
  EXPECT_TRUE(contains(vars, "EMPTY="));
  EXPECT_TRUE(contains(vars, "TUTTI_RANK=0"));
  EXPECT_FALSE(contains(vars, "TUTTI_RANK=5"));
  EXPECT_FALSE(contains(vars, "TUTTI_STORE_ADDR=10.0.0.1:1"));
  // The ranks get this job's secret only: an enclosing job's secret, or a secret file the
  // user's environment names, would make them disagree with tutti-run's store.
  EXPECT_TRUE(contains(vars, "TUTTI_SECRET=this-job-secret-0123"));
  EXPECT_FALSE(contains(vars, "TUTTI_SECRET=outer-job-secret-0123"));
  for (const std::string& v : vars) EXPECT_NE(v.rfind("TUTTI_SECRET_FILE=", 0), 0u) << v;
}

TEST(PlanExec, ProgramWithSlashIsTriedAsGiven) {
  auto plan = planExec({"./prog", "a", "b"}, "/usr/bin:/bin");
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->candidates, std::vector<std::string>({"./prog"}));
  EXPECT_EQ(plan->argv, std::vector<std::string>({"./prog", "a", "b"}));
}

TEST(PlanExec, BareNameIsSearchedOnPath) {
  auto plan = planExec({"prog"}, "/opt/bin::/usr/bin");
  ASSERT_TRUE(plan.ok());
  // An empty PATH entry is the current directory, as in execvp.
  EXPECT_EQ(plan->candidates,
            std::vector<std::string>({"/opt/bin/prog", "./prog", "/usr/bin/prog"}));
  auto fallback = planExec({"prog"}, "");
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->candidates, std::vector<std::string>({"/bin/prog", "/usr/bin/prog"}));
}

TEST(PlanExec, EmptyCommandIsAnError) {
  EXPECT_EQ(planExec({}, "/bin").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(planExec({""}, "/bin").status().code(), ErrorCode::kInvalidArgument);
}

TEST(ValidateOptions, RejectsBadValuesByName) {
  LaunchOptions ok;
  ok.numRanks = 4;
  ok.command = {"prog"};
  ok.extraEnv = {{"FOO_1", "x"}};
  EXPECT_TRUE(validateOptions(ok).ok());

  LaunchOptions o = ok;
  o.numRanks = 0;
  EXPECT_NE(validateOptions(o).message().find("-n 0"), std::string::npos);
  o = ok;
  o.numRanks = kMaxRanks + 1;
  EXPECT_FALSE(validateOptions(o).ok());
  o = ok;
  o.graceSeconds = -1;
  EXPECT_NE(validateOptions(o).message().find("--grace"), std::string::npos);
  o = ok;
  o.timeoutSeconds = -2;
  EXPECT_NE(validateOptions(o).message().find("--timeout"), std::string::npos);
  o = ok;
  o.command.clear();
  EXPECT_FALSE(validateOptions(o).ok());
  o = ok;
  o.extraEnv = {{"1BAD", "x"}};
  EXPECT_NE(validateOptions(o).message().find("not a valid variable name"), std::string::npos);
  o = ok;
  o.extraEnv = {{"TUTTI_WORLD_SIZE", "3"}};
  const Status reserved = validateOptions(o);
  EXPECT_EQ(reserved.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(reserved.message().find("TUTTI_WORLD_SIZE"), std::string::npos);
  for (const char* name : {"TUTTI_SECRET", "TUTTI_SECRET_FILE"}) {
    o = ok;
    o.extraEnv = {{name, "chosen-by-the-user-0123"}};
    EXPECT_EQ(validateOptions(o).message(),
              std::string("-x ") + name + ": tutti-run decides " + name +
                  " itself for every rank");
  }
}

TEST(ValidateOptions, CpuBindIsNoneBlockOrAuto) {
  LaunchOptions o;
  o.command = {"prog"};
  EXPECT_EQ(o.cpuBind, "auto");
  for (const char* good : {"none", "block", "auto"}) {
    o.cpuBind = good;
    EXPECT_TRUE(validateOptions(o).ok()) << good;
  }
  o.cpuBind = "cores";
  const Status bad = validateOptions(o);
  EXPECT_EQ(bad.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "--cpu-bind cores: expected none, block or auto");
}

// Consecutive ranks share a CPU when they outnumber the CPUs; one CPU each otherwise.
TEST(CpuForRank, SplitsRanksIntoConsecutiveBlocks) {
  auto all = [](int ranks, const std::vector<int>& cpus) {
    std::vector<int> out;
    for (int r = 0; r < ranks; ++r) out.push_back(cpuForRank(r, ranks, cpus));
    return out;
  };
  EXPECT_EQ(all(4, {0, 1}), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(all(8, {0, 1}), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(all(3, {0, 1}), (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(all(2, {0, 1}), (std::vector<int>{0, 1}));
  EXPECT_EQ(all(2, {0, 1, 2, 3}), (std::vector<int>{0, 2}));
  EXPECT_EQ(all(3, {5, 7}), (std::vector<int>{5, 5, 7}));  // the CPUs allowed, not 0..n-1
  EXPECT_EQ(all(1, {3}), (std::vector<int>{3}));
  EXPECT_EQ(cpuForRank(0, 4, {}), -1);
}

// auto binds only when every CPU gets the same number of ranks, more than one.
TEST(AutoBinds, OnlyRanksThatOutnumberTheCpusAndSplitEvenly) {
  EXPECT_TRUE(autoBinds(4, 2));
  EXPECT_TRUE(autoBinds(8, 2));
  EXPECT_TRUE(autoBinds(6, 3));
  EXPECT_FALSE(autoBinds(3, 2));  // two ranks on one core, one alone on the other
  EXPECT_FALSE(autoBinds(5, 4));
  EXPECT_FALSE(autoBinds(2, 2));  // one rank per CPU: the kernel's placement
  EXPECT_FALSE(autoBinds(1, 2));
  EXPECT_FALSE(autoBinds(4, 0));  // the CPUs could not be read
  EXPECT_FALSE(autoBinds(0, 2));
}

}  // namespace
}  // namespace tutti::run

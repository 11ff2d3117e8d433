// LaunchEnv::detect from Config snapshots built with Config::fromMap: every launcher, the
// precedence between them, store-address rules, Slurm's task layout, and every error.

#include "bootstrap/launch_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tutti {
namespace {

using Env = std::map<std::string, std::string>;

Result<LaunchEnv> detectFrom(const Env& env) {
  auto config = Config::fromMap(env);
  EXPECT_TRUE(config.ok()) << config.status().toString();
  if (!config.ok()) return config.status();
  return LaunchEnv::detect(*config);
}

LaunchEnv detectOk(const Env& env) {
  auto result = detectFrom(env);
  EXPECT_TRUE(result.ok()) << result.status().toString();
  return result.ok() ? *result : LaunchEnv{};
}

// Expects kInvalidArgument whose message mentions every string in `mentions`.
void expectError(const Env& env, std::initializer_list<const char*> mentions) {
  auto result = detectFrom(env);
  ASSERT_FALSE(result.ok()) << "detected " << result->toString();
  EXPECT_EQ(result.status().code(), ErrorCode::kInvalidArgument) << result.status().toString();
  for (const char* m : mentions)
    EXPECT_NE(result.status().message().find(m), std::string::npos)
        << "'" << m << "' not in: " << result.status().message();
}

TEST(LaunchEnv, NoLauncherIsAOneRankJobServingItsOwnStore) {
  LaunchEnv env = detectOk({});
  EXPECT_EQ(env.launcher, Launcher::kNone);
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.size, 1);
  EXPECT_EQ(env.localRank, 0);
  EXPECT_EQ(env.localSize, 1);
  EXPECT_TRUE(env.serveStore);
  EXPECT_EQ(env.storeAddress.host, "127.0.0.1");
  EXPECT_EQ(env.storeAddress.port, 0);
  EXPECT_TRUE(env.jobId.empty());

  env = detectOk({{"TUTTI_STORE_ADDR", "10.1.2.3:7000"}});
  EXPECT_EQ(env.launcher, Launcher::kNone);
  EXPECT_TRUE(env.serveStore);
  EXPECT_EQ(env.storeAddress.toString(), "10.1.2.3:7000");
}

TEST(LaunchEnv, TuttiRun) {
  LaunchEnv env = detectOk({{"TUTTI_RANK", "2"},
                            {"TUTTI_WORLD_SIZE", "4"},
                            {"TUTTI_LOCAL_RANK", "0"},
                            {"TUTTI_LOCAL_WORLD_SIZE", "2"},
                            {"TUTTI_STORE_ADDR", "[fe80::1]:4000"},
                            {"TUTTI_JOB_ID", "job-17"}});
  EXPECT_EQ(env.launcher, Launcher::kTuttiRun);
  EXPECT_EQ(env.rank, 2);
  EXPECT_EQ(env.size, 4);
  EXPECT_EQ(env.localRank, 0);
  EXPECT_EQ(env.localSize, 2);
  EXPECT_EQ(env.storeAddress.host, "fe80::1");
  EXPECT_EQ(env.storeAddress.port, 4000);
  EXPECT_FALSE(env.serveStore);
  EXPECT_EQ(env.jobId, "job-17");
  // tutti-run serves the store itself, even for rank 0.
  env = detectOk({{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "4"}, {"TUTTI_STORE_ADDR", "h:1"}});
  EXPECT_FALSE(env.serveStore);
}

TEST(LaunchEnv, Torchrun) {
  Env env = {{"RANK", "0"},
             {"WORLD_SIZE", "8"},
             {"LOCAL_RANK", "0"},
             {"LOCAL_WORLD_SIZE", "4"},
             {"MASTER_ADDR", "node0"},
             {"MASTER_PORT", "29500"}};
  LaunchEnv e = detectOk(env);
  EXPECT_EQ(e.launcher, Launcher::kTorchrun);
  EXPECT_EQ(e.size, 8);
  EXPECT_EQ(e.localSize, 4);
  // torch's own store holds MASTER_PORT, so tutti's goes on the next port.
  EXPECT_EQ(e.storeAddress.toString(), "node0:29501");
  EXPECT_TRUE(e.serveStore);
  env["RANK"] = "5";
  env["LOCAL_RANK"] = "1";
  e = detectOk(env);
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.localRank, 1);
  EXPECT_FALSE(e.serveStore);
  // TUTTI_STORE_ADDR overrides MASTER_ADDR/MASTER_PORT.
  env["TUTTI_STORE_ADDR"] = "elsewhere:9000";
  e = detectOk(env);
  EXPECT_EQ(e.storeAddress.toString(), "elsewhere:9000");
}

TEST(LaunchEnv, OpenMpiUsesMasterPortAsIs) {
  LaunchEnv e = detectOk({{"OMPI_COMM_WORLD_RANK", "3"},
                          {"OMPI_COMM_WORLD_SIZE", "6"},
                          {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                          {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                          {"MASTER_ADDR", "10.0.0.1"},
                          {"MASTER_PORT", "29500"}});
  EXPECT_EQ(e.launcher, Launcher::kOpenMpi);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.size, 6);
  EXPECT_EQ(e.localRank, 0);
  EXPECT_EQ(e.localSize, 3);
  EXPECT_EQ(e.storeAddress.toString(), "10.0.0.1:29500");
  EXPECT_FALSE(e.serveStore);
}

TEST(LaunchEnv, Pmi) {
  LaunchEnv e = detectOk({{"PMI_RANK", "0"},
                          {"PMI_SIZE", "3"},
                          {"MPI_LOCALRANKID", "0"},
                          {"MPI_LOCALNRANKS", "3"},
                          {"TUTTI_STORE_ADDR", "127.0.0.1:5555"}});
  EXPECT_EQ(e.launcher, Launcher::kPmi);
  EXPECT_EQ(e.size, 3);
  EXPECT_EQ(e.localSize, 3);
  EXPECT_TRUE(e.serveStore);
  EXPECT_EQ(e.storeAddress.port, 5555);
}

TEST(LaunchEnv, SlurmReadsLocalSizeFromTheTaskLayout) {
  Env env = {{"SLURM_PROCID", "9"},          {"SLURM_NTASKS", "11"},
             {"SLURM_LOCALID", "1"},         {"SLURM_STEP_TASKS_PER_NODE", "4(x2),3"},
             {"SLURM_NODEID", "2"},          {"SLURM_JOB_ID", "8812"},
             {"TUTTI_STORE_ADDR", "n0:6000"}};
  LaunchEnv e = detectOk(env);
  EXPECT_EQ(e.launcher, Launcher::kSlurm);
  EXPECT_EQ(e.rank, 9);
  EXPECT_EQ(e.size, 11);
  EXPECT_EQ(e.localRank, 1);
  EXPECT_EQ(e.localSize, 3);
  EXPECT_EQ(e.jobId, "8812");
  env["SLURM_NODEID"] = "1";
  EXPECT_EQ(detectOk(env).localSize, 4);
  env["TUTTI_JOB_ID"] = "mine";
  EXPECT_EQ(detectOk(env).jobId, "mine");
  // Without the layout the local size is unknowable: the rank counts as alone on its host.
  env.erase("SLURM_STEP_TASKS_PER_NODE");
  e = detectOk(env);
  EXPECT_EQ(e.localRank, 0);
  EXPECT_EQ(e.localSize, 1);
}

TEST(LaunchEnv, MissingLocalVariablesMeanAloneOnTheHost) {
  LaunchEnv e = detectOk({{"OMPI_COMM_WORLD_RANK", "1"},
                          {"OMPI_COMM_WORLD_SIZE", "2"},
                          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                          {"TUTTI_STORE_ADDR", "h:1"}});
  EXPECT_EQ(e.localRank, 0);
  EXPECT_EQ(e.localSize, 1);
}

TEST(LaunchEnv, PrecedenceFollowsTheDocumentedOrder) {
  Env env = {{"TUTTI_RANK", "1"},
             {"TUTTI_WORLD_SIZE", "2"},
             {"RANK", "2"},
             {"WORLD_SIZE", "3"},
             {"OMPI_COMM_WORLD_RANK", "3"},
             {"OMPI_COMM_WORLD_SIZE", "4"},
             {"PMI_RANK", "4"},
             {"PMI_SIZE", "5"},
             {"SLURM_PROCID", "5"},
             {"SLURM_NTASKS", "6"},
             {"TUTTI_STORE_ADDR", "h:1"}};
  const Launcher order[] = {Launcher::kTuttiRun, Launcher::kTorchrun, Launcher::kOpenMpi,
                            Launcher::kPmi, Launcher::kSlurm};
  const char* rankVars[] = {"TUTTI_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                            "SLURM_PROCID"};
  for (int i = 0; i < 5; ++i) {
    LaunchEnv e = detectOk(env);
    EXPECT_EQ(e.launcher, order[i]) << launcherName(e.launcher);
    EXPECT_EQ(e.rank, i + 1);
    EXPECT_EQ(e.size, i + 2);
    env.erase(rankVars[i]);
  }
  EXPECT_EQ(detectOk(env).launcher, Launcher::kNone);
}

TEST(LaunchEnv, OneRankJobUnderALauncherNeedsNoStoreAddress) {
  LaunchEnv e = detectOk({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}});
  EXPECT_EQ(e.launcher, Launcher::kOpenMpi);
  EXPECT_TRUE(e.serveStore);
  EXPECT_EQ(e.storeAddress.toString(), "127.0.0.1:0");
}

TEST(LaunchEnv, RankAndSizeErrorsNameTheVariable) {
  expectError({{"TUTTI_RANK", "abc"}, {"TUTTI_WORLD_SIZE", "2"}, {"TUTTI_STORE_ADDR", "h:1"}},
              {"TUTTI_RANK", "abc", "not an integer"});
  expectError({{"RANK", "1"}, {"WORLD_SIZE", "x2"}}, {"WORLD_SIZE", "x2"});
  expectError({{"RANK", "1"}}, {"RANK", "WORLD_SIZE", "not set"});
  expectError({{"PMI_RANK", "4"}, {"PMI_SIZE", "4"}, {"TUTTI_STORE_ADDR", "h:1"}},
              {"PMI_RANK=4", "PMI_SIZE=4", "out of range"});
  expectError({{"SLURM_PROCID", "-1"}, {"SLURM_NTASKS", "4"}}, {"SLURM_PROCID=-1"});
  expectError({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}},
              {"OMPI_COMM_WORLD_SIZE=0"});
  expectError({{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}, {"WORLD_SIZE", "out of range"});
}

TEST(LaunchEnv, LocalErrorsNameTheVariable) {
  Env base = {{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "4"}, {"TUTTI_STORE_ADDR", "h:1"}};
  Env env = base;
  env["TUTTI_LOCAL_RANK"] = "2";
  env["TUTTI_LOCAL_WORLD_SIZE"] = "2";
  expectError(env, {"TUTTI_LOCAL_RANK=2", "TUTTI_LOCAL_WORLD_SIZE=2"});
  env["TUTTI_LOCAL_WORLD_SIZE"] = "8";
  expectError(env, {"TUTTI_LOCAL_WORLD_SIZE=8", "job size 4"});
  env["TUTTI_LOCAL_WORLD_SIZE"] = "two";
  expectError(env, {"TUTTI_LOCAL_WORLD_SIZE", "two"});
  env = base;
  env["TUTTI_LOCAL_RANK"] = "-1";
  env["TUTTI_LOCAL_WORLD_SIZE"] = "2";
  expectError(env, {"TUTTI_LOCAL_RANK=-1"});
  Env slurm = {{"SLURM_PROCID", "0"},  {"SLURM_NTASKS", "8"},
               {"SLURM_LOCALID", "3"}, {"SLURM_STEP_TASKS_PER_NODE", "4,3"},
               {"SLURM_NODEID", "1"},  {"TUTTI_STORE_ADDR", "h:1"}};
  expectError(slurm, {"SLURM_LOCALID=3", "SLURM_STEP_TASKS_PER_NODE"});
  slurm["SLURM_NODEID"] = "2";
  expectError(slurm, {"SLURM_NODEID=2", "beyond"});
  slurm["SLURM_NODEID"] = "first";
  expectError(slurm, {"SLURM_NODEID", "first"});
  slurm["SLURM_NODEID"] = "0";
  slurm["SLURM_STEP_TASKS_PER_NODE"] = "4(2)";
  expectError(slurm, {"SLURM_STEP_TASKS_PER_NODE", "4(2)"});
}

TEST(LaunchEnv, StoreAddressErrors) {
  expectError({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
              {"TUTTI_STORE_ADDR=host:port", "4-rank", "Open MPI"});
  expectError({{"TUTTI_RANK", "1"}, {"TUTTI_WORLD_SIZE", "2"}}, {"TUTTI_STORE_ADDR", "tutti-run"});
  expectError({{"TUTTI_STORE_ADDR", "no-port-here"}}, {"TUTTI_STORE_ADDR", "no-port-here"});
  expectError({{"TUTTI_STORE_ADDR", "h:70000"}}, {"TUTTI_STORE_ADDR"});
  Env torch = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}};
  expectError(torch, {"MASTER_PORT", "not"});
  torch["MASTER_PORT"] = "65535";
  expectError(torch, {"MASTER_PORT=65535", "MASTER_PORT+1"});
  torch["MASTER_PORT"] = "0";
  expectError(torch, {"MASTER_PORT=0"});
  torch["MASTER_PORT"] = "http";
  expectError(torch, {"MASTER_PORT", "http"});
  torch.erase("MASTER_ADDR");
  torch["MASTER_PORT"] = "29500";
  expectError(torch, {"MASTER_ADDR", "not"});
  // Without torch's +1 the top port is usable.
  LaunchEnv e = detectOk(
      {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "65535"}});
  EXPECT_EQ(e.storeAddress.port, 65535);
}

TEST(LaunchEnv, SlurmTaskLayoutParsing) {
  auto on = [](const std::string& layout, int node) {
    return detail::slurmTasksOnNode(layout, node);
  };
  EXPECT_EQ(*on("4(x2),3", 0), 4);
  EXPECT_EQ(*on("4(x2),3", 1), 4);
  EXPECT_EQ(*on("4(x2),3", 2), 3);
  EXPECT_EQ(*on("8", 0), 8);
  EXPECT_EQ(*on("1,2,3(x3),16", 5), 16);
  EXPECT_EQ(*on("1,2,3(x3),16", 4), 3);
  // Repeats are walked, not expanded: a billion nodes cost nothing.
  EXPECT_EQ(*on("2(x1000000000),5", 999999999), 2);
  EXPECT_EQ(*on("2(x1000000000),5", 1000000000), 5);
  EXPECT_EQ(on("4(x2),3", 3).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(on("4", -1).status().code(), ErrorCode::kInvalidArgument);
  for (const char* bad : {"", "x", "4,", ",4", "0", "-1", "+4", " 4", "4(x0)", "4(x)", "4(2)",
                          "4(x2", "4(x2)junk", "(x2)", "4(x-1)", "99999999999", "4(x2),,3"}) {
    auto r = on(bad, 0);
    ASSERT_FALSE(r.ok()) << "'" << bad << "' parsed as " << *r;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("SLURM_STEP_TASKS_PER_NODE"), std::string::npos);
  }
}

TEST(LaunchEnv, LauncherNames) {
  EXPECT_STREQ(launcherName(Launcher::kTuttiRun), "tutti-run");
  EXPECT_STREQ(launcherName(Launcher::kTorchrun), "torchrun");
  EXPECT_STREQ(launcherName(Launcher::kOpenMpi), "Open MPI");
  EXPECT_STREQ(launcherName(Launcher::kPmi), "PMI");
  EXPECT_STREQ(launcherName(Launcher::kSlurm), "Slurm");
  EXPECT_STREQ(launcherName(Launcher::kNone), "none");
}

}  // namespace
}  // namespace tutti

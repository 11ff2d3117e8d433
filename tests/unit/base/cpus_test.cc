#include "base/cpus.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/wait.h"

namespace tutti {
namespace {

namespace fs = std::filesystem;

// A directory standing in for / : the test writes the /proc files and the groups' files
// under it, as a kernel would show them.
class FakeRoot {
 public:
  FakeRoot() {
    char name[] = "/tmp/tutti-cgroup-XXXXXX";
    if (::mkdtemp(name) != nullptr) path_ = name;
  }
  ~FakeRoot() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  FakeRoot(const FakeRoot&) = delete;
  FakeRoot& operator=(const FakeRoot&) = delete;

  const std::string& path() const { return path_; }

  void write(const std::string& file, const std::string& text) const {
    const fs::path full = fs::path(path_ + file);
    fs::create_directories(full.parent_path());
    std::ofstream(full) << text;
  }

 private:
  std::string path_;
};

constexpr const char* kV2Mount =
    "25 1 0:22 / / rw - ext4 /dev/vda1 rw\n"
    "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

TEST(CgroupCpuLimit, ReadsTheQuotaOfAContainerThatSeesItsGroupAsTheRoot) {
  FakeRoot root;
  ASSERT_FALSE(root.path().empty());
  root.write("/proc/self/mountinfo", kV2Mount);
  root.write("/proc/self/cgroup", "0::/\n");
  root.write("/sys/fs/cgroup/cpu.max", "200000 100000\n");
  const auto limit = cgroupCpuLimit(root.path());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(*limit, 2.0);
}

TEST(CgroupCpuLimit, TakesTheSmallestQuotaFromTheGroupUpToTheRoot) {
  FakeRoot root;
  ASSERT_FALSE(root.path().empty());
  root.write("/proc/self/mountinfo", kV2Mount);
  root.write("/proc/self/cgroup", "0::/job.slice/step/task\n");
  root.write("/sys/fs/cgroup/job.slice/cpu.max", "150000 100000\n");
  root.write("/sys/fs/cgroup/job.slice/step/cpu.max", "max 100000\n");
  root.write("/sys/fs/cgroup/job.slice/step/task/cpu.max", "400000 100000\n");
  const auto limit = cgroupCpuLimit(root.path());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(*limit, 1.5);
}

TEST(CgroupCpuLimit, NoQuotaAnywhereIsNoLimit) {
  FakeRoot root;
  ASSERT_FALSE(root.path().empty());
  root.write("/proc/self/mountinfo", kV2Mount);
  root.write("/proc/self/cgroup", "0::/user.slice/session\n");
  root.write("/sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
  root.write("/sys/fs/cgroup/user.slice/session/cpu.max", "max 100000\n");
  EXPECT_FALSE(cgroupCpuLimit(root.path()).has_value());
}

TEST(CgroupCpuLimit, ReadsTheV1CpuControllerOfAHybridHost) {
  FakeRoot root;
  ASSERT_FALSE(root.path().empty());
  // cgroup2 mounted without controllers (no cpu.max there), cpu in a v1 hierarchy it
  // shares with cpuacct.
  root.write("/proc/self/mountinfo",
             "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
             "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
             "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
             "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
  root.write("/proc/self/cgroup",
             "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/docker/abc\n");
  root.write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  root.write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  root.write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "50000\n");
  root.write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  // A memory group's files with a cpu-looking name are not read.
  root.write("/sys/fs/cgroup/memory/docker/abc/cpu.cfs_quota_us", "1000\n");
  const auto limit = cgroupCpuLimit(root.path());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(*limit, 0.5);
}

TEST(CgroupCpuLimit, AGroupMountedAsTheRootIsReadAtTheMountPoint) {
  FakeRoot root;
  ASSERT_FALSE(root.path().empty());
  // Docker without a cgroup namespace on v1: the container's own group is bind-mounted
  // at the mount point, and /proc/self/cgroup still names the host's path to it.
  root.write("/proc/self/mountinfo",
             "700 690 0:29 /docker/abc /sys/fs/cgroup/cpu ro,nosuid - cgroup cgroup rw,cpu\n");
  root.write("/proc/self/cgroup", "3:cpu:/docker/abc\n");
  root.write("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "300000\n");
  root.write("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  const auto limit = cgroupCpuLimit(root.path());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(*limit, 3.0);
}

TEST(CgroupCpuLimit, MissingOrMalformedFilesAreNoLimit) {
  FakeRoot root;
  ASSERT_FALSE(root.path().empty());
  EXPECT_FALSE(cgroupCpuLimit(root.path()).has_value());  // no /proc at all
  root.write("/proc/self/mountinfo", kV2Mount);
  root.write("/proc/self/cgroup", "garbage without colons\n");
  EXPECT_FALSE(cgroupCpuLimit(root.path()).has_value());
  root.write("/proc/self/cgroup", "0::/\n");
  root.write("/sys/fs/cgroup/cpu.max", "lots of cpu\n");
  EXPECT_FALSE(cgroupCpuLimit(root.path()).has_value());
  root.write("/sys/fs/cgroup/cpu.max", "-5 100000\n");
  EXPECT_FALSE(cgroupCpuLimit(root.path()).has_value());
  root.write("/sys/fs/cgroup/cpu.max", "100000 0\n");
  EXPECT_FALSE(cgroupCpuLimit(root.path()).has_value());
}

TEST(CgroupCpuLimit, QuotasBecomeWholeCores) {
  EXPECT_EQ(coresOfQuota(0.25), 1);
  EXPECT_EQ(coresOfQuota(1.0), 1);
  EXPECT_EQ(coresOfQuota(1.5), 1);
  EXPECT_EQ(coresOfQuota(1.9), 2);
  EXPECT_EQ(coresOfQuota(2.0), 2);
  EXPECT_EQ(coresOfQuota(3.2), 3);
}

TEST(CgroupCpuLimit, UsableCoresIsNeverMoreThanTheAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_GE(usableCores(), 1);
  EXPECT_LE(usableCores(), CPU_COUNT(&set));
}

TEST(CpuList, AllowedCpusAreThisProcessesMaskInOrder) {
  const std::vector<int> cpus = allowedCpuList();
  ASSERT_FALSE(cpus.empty());
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
  EXPECT_GE(cpus.front(), 0);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(cpus.size(), static_cast<std::size_t>(CPU_COUNT(&set)));
}

TEST(CpuList, MaskFieldsCarryAnUnknownMaskAsADash) {
  EXPECT_EQ(formatMaskField({}), "-");
  EXPECT_EQ(formatMaskField({0, 1, 2, 5}), "0-2,5");
  EXPECT_EQ(parseMaskField("-"), std::optional<std::vector<int>>(std::vector<int>()));
  EXPECT_EQ(parseMaskField("0-2,5"), std::optional<std::vector<int>>({0, 1, 2, 5}));
  EXPECT_EQ(parseMaskField(""), std::nullopt);  // a field that is missing is malformed
  EXPECT_EQ(parseMaskField("--"), std::nullopt);
  EXPECT_EQ(parseMaskField("3-1"), std::nullopt);
}

TEST(CpuList, FormatsRangesAndReadsThemBack) {
  EXPECT_EQ(formatCpuList({}), "");
  EXPECT_EQ(formatCpuList({3}), "3");
  EXPECT_EQ(formatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  const std::vector<int> many = {0, 2, 4, 5, 6, 7, 63, 64, 1023};
  EXPECT_EQ(parseCpuList(formatCpuList(many)), many);
  EXPECT_EQ(parseCpuList("0-3,8\n"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parseCpuList(""), std::vector<int>{});
  EXPECT_EQ(parseCpuList("5,1-2,2"), (std::vector<int>{1, 2, 5}));  // sorted, once each
  for (const char* bad : {"x", "1-", "-1", "3-1", "1,,2", "70000", "1 2", "0-99999"})
    EXPECT_FALSE(parseCpuList(bad).has_value()) << bad;
  EXPECT_EQ(parseCpuList(formatCpuList(allowedCpuList())), allowedCpuList());
}

TEST(EachRankHasCores, RanksBoundOneToACoreEachHaveOne) {
  // mpirun --bind-to core, srun --cpu-bind=cores: every mask one CPU, all different.
  EXPECT_TRUE(eachRankHasCores({{0}, {1}, {2}, {3}}, 1, INT_MAX));
  // tutti-run's oversubscribed binding: 4 ranks on 2 CPUs, two to each.
  EXPECT_FALSE(eachRankHasCores({{0}, {0}, {1}, {1}}, 1, INT_MAX));
  // Unbound: every mask the whole machine.
  EXPECT_TRUE(eachRankHasCores({{0, 1}, {0, 1}}, 1, INT_MAX));
  EXPECT_FALSE(eachRankHasCores({{0, 1}, {0, 1}, {0, 1}}, 1, INT_MAX));
  EXPECT_TRUE(eachRankHasCores({{0, 1, 2, 3}, {0, 1, 2, 3}}, 2, INT_MAX));   // two threads each
  EXPECT_FALSE(eachRankHasCores({{0, 1, 2}, {0, 1, 2}}, 2, INT_MAX));
}

TEST(EachRankHasCores, AMatchingIsFoundWhereAGreedyChoiceWouldFail) {
  // Rank 0 may take CPU 0 or 1, rank 1 only CPU 0: rank 0 must give CPU 0 up.
  EXPECT_TRUE(eachRankHasCores({{0, 1}, {0}}, 1, INT_MAX));
  // A longer chain of such moves.
  EXPECT_TRUE(eachRankHasCores({{0, 1}, {1, 2}, {2, 3}, {0}}, 1, INT_MAX));
  // The union has 4 CPUs for 3 ranks, but two ranks share their only one.
  EXPECT_FALSE(eachRankHasCores({{0}, {0}, {1, 2, 3}}, 1, INT_MAX));
  EXPECT_FALSE(eachRankHasCores({{0}, {}}, 1, INT_MAX));  // a mask not known
}

TEST(EachRankHasCores, TheQuotaCapsTheCores) {
  // A container with --cpus=2 on a 64-CPU machine: the masks list every CPU.
  std::vector<int> all(64);
  for (int i = 0; i < 64; ++i) all[static_cast<std::size_t>(i)] = i;
  EXPECT_TRUE(eachRankHasCores({all, all}, 1, 2));
  EXPECT_FALSE(eachRankHasCores({all, all, all}, 1, 2));
  EXPECT_FALSE(eachRankHasCores({all, all}, 2, 2));
  EXPECT_TRUE(eachRankHasCores({all, all}, 2, 4));
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// On the real kernel: a process moved into a new group with a quota of one core reads
// that quota. Needs root and a writable cgroup hierarchy with the cpu controller.
TEST(CgroupCpuLimit, AProcessInAGroupWithAQuotaReadsIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a control group";
  const std::string name = "tutti-test-" + std::to_string(::getpid());
  std::string dir;
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers")) {
    // Unified hierarchy: the cpu controller must be enabled for the root's children.
    writeFile("/sys/fs/cgroup/cgroup.subtree_control", "+cpu");
    dir = "/sys/fs/cgroup/" + name;
    if (::mkdir(dir.c_str(), 0755) != 0)
      GTEST_SKIP() << "cannot create " << dir << ": " << std::strerror(errno);
    if (!writeFile(dir + "/cpu.max", "100000 100000")) {
      ::rmdir(dir.c_str());
      GTEST_SKIP() << "cannot set cpu.max in " << dir;
    }
  } else {
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
      if (fs::exists(std::string(mount) + "/cpu.cfs_quota_us")) {
        dir = std::string(mount) + "/" + name;
        break;
      }
    }
    if (dir.empty()) GTEST_SKIP() << "no cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu";
    if (::mkdir(dir.c_str(), 0755) != 0)
      GTEST_SKIP() << "cannot create " << dir << ": " << std::strerror(errno);
    if (!writeFile(dir + "/cpu.cfs_period_us", "100000") ||
        !writeFile(dir + "/cpu.cfs_quota_us", "100000")) {
      ::rmdir(dir.c_str());
      GTEST_SKIP() << "cannot set a quota in " << dir;
    }
  }
  int toChild[2], toParent[2];
  ASSERT_EQ(::pipe(toChild), 0);
  ASSERT_EQ(::pipe(toParent), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    char go = 0;
    if (::read(toChild[0], &go, 1) != 1) ::_exit(2);
    const auto limit = cgroupCpuLimit();
    const double value = limit ? *limit : -1.0;
    ::_exit(::write(toParent[1], &value, sizeof(value)) == sizeof(value) ? 0 : 3);
  }
  const bool moved = writeFile(dir + "/cgroup.procs", std::to_string(pid));
  const char go = 1;
  EXPECT_EQ(::write(toChild[1], &go, 1), 1);
  double value = -2.0;
  EXPECT_EQ(::read(toParent[0], &value, sizeof(value)), static_cast<ssize_t>(sizeof(value)));
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  for (int fd : {toChild[0], toChild[1], toParent[0], toParent[1]}) ::close(fd);
  ::rmdir(dir.c_str());
  ASSERT_TRUE(moved) << "could not move the child into " << dir;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_DOUBLE_EQ(value, 1.0) << "in " << dir;
}

}  // namespace
}  // namespace tutti

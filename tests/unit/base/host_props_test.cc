#include "base/host_props.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/cpus.h"

namespace tutti {
namespace {

namespace fs = std::filesystem;

// A directory standing in for /sys/devices/system/cpu, written as the kernel shows it.
class FakeCpuDir {
 public:
  FakeCpuDir() {
    char name[] = "/tmp/tutti-sysfs-XXXXXX";
    if (::mkdtemp(name) != nullptr) path_ = name;
  }
  ~FakeCpuDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  FakeCpuDir(const FakeCpuDir&) = delete;
  FakeCpuDir& operator=(const FakeCpuDir&) = delete;

  const std::string& path() const { return path_; }

  void write(const std::string& file, const std::string& text) const {
    const fs::path full = fs::path(path_ + "/" + file);
    fs::create_directories(full.parent_path());
    std::ofstream(full) << text << "\n";
  }
  void cache(int cpu, int index, int level, const std::string& type, const std::string& size,
             const std::string& shared) const {
    const std::string dir = "cpu" + std::to_string(cpu) + "/cache/index" + std::to_string(index);
    write(dir + "/level", std::to_string(level));
    write(dir + "/type", type);
    write(dir + "/size", size);
    write(dir + "/shared_cpu_list", shared);
  }
  // A core: L1 data and instruction caches of its own, an L2 for `l2Cpus`, an L3 for `l3Cpus`.
  void core(int cpu, const std::string& l2, const std::string& l2Cpus, const std::string& l3,
            const std::string& l3Cpus) const {
    cache(cpu, 0, 1, "Data", "48K", std::to_string(cpu));
    cache(cpu, 1, 1, "Instruction", "32K", std::to_string(cpu));
    cache(cpu, 2, 2, "Unified", l2, l2Cpus);
    cache(cpu, 3, 3, "Unified", l3, l3Cpus);
  }

 private:
  std::string path_;
};

// Two L3s of two cores each, cores of two CPUs (SMT siblings) sharing their L2; the second
// L3's cores have twice the L2. The siblings' own directories are left empty: a CPU whose
// L2 was read with its sibling's is not read again.
void writeTwoL3s(const FakeCpuDir& dir) {
  dir.core(0, "1024K", "0-1", "32768K", "0-3");
  dir.core(2, "1024K", "2-3", "32768K", "0-3");
  dir.core(4, "2048K", "4-5", "16384K", "4-7");
  dir.core(6, "2048K", "6-7", "16384K", "4-7");
  for (int sibling : {1, 3, 5, 7}) dir.write("cpu" + std::to_string(sibling) + "/online", "1");
  dir.write("cpufreq/boost", "1");  // not a CPU
  dir.write("cpuidle/current_driver", "none");
  dir.write("online", "0-7");
}

TEST(CpuCaches, ReadsEachCpusL2AndL3FromSysfs) {
  FakeCpuDir dir;
  ASSERT_FALSE(dir.path().empty());
  writeTwoL3s(dir);
  const std::vector<CpuCaches> caches = readCpuCaches(dir.path());
  ASSERT_EQ(caches.size(), 8u);
  for (int cpu = 0; cpu < 8; ++cpu) {
    const CpuCaches& c = caches[static_cast<std::size_t>(cpu)];
    EXPECT_EQ(c.cpu, cpu);
    EXPECT_EQ(c.l2Bytes, (cpu < 4 ? 1u : 2u) << 20) << cpu;
    EXPECT_EQ(c.l3Bytes, (cpu < 4 ? 32u : 16u) << 20) << cpu;
    EXPECT_EQ(c.l3Cpus, cpu < 4 ? "0-3" : "4-7") << cpu;
  }
}

TEST(CpuCaches, PropsOfASetOfCpusAreItsSmallestCachesAndWhetherOneL3HoldsThem) {
  FakeCpuDir dir;
  ASSERT_FALSE(dir.path().empty());
  writeTwoL3s(dir);
  const std::vector<CpuCaches> caches = readCpuCaches(dir.path());
  const CacheProps near = cachePropsOf(caches, {3, 0, 1});
  EXPECT_EQ(near.l2Bytes, 1u << 20);
  EXPECT_EQ(near.l3Bytes, 32u << 20);
  EXPECT_TRUE(near.l3Shared);
  const CacheProps big = cachePropsOf(caches, {5, 6});
  EXPECT_EQ(big.l2Bytes, 2u << 20);
  EXPECT_EQ(big.l3Bytes, 16u << 20);
  EXPECT_TRUE(big.l3Shared);
  const CacheProps apart = cachePropsOf(caches, {6, 1});
  EXPECT_EQ(apart.l2Bytes, 1u << 20);
  EXPECT_EQ(apart.l3Bytes, 16u << 20);
  EXPECT_FALSE(apart.l3Shared);
  const CacheProps all = cachePropsOf(caches, {});  // no masks known: the whole host
  EXPECT_EQ(all.l2Bytes, 1u << 20);
  EXPECT_FALSE(all.l3Shared);
  const CacheProps unlisted = cachePropsOf(caches, {8, 9});
  EXPECT_EQ(unlisted.l2Bytes, 0u);
  EXPECT_EQ(unlisted.l3Bytes, 0u);
  EXPECT_FALSE(unlisted.l3Shared);
}

// A CPU without cache directories (or a host without an L3) reads as not known, and so does
// a set that includes it: no threshold is taken from a cache nobody described.
TEST(CpuCaches, MissingCachesReadAsNotKnown) {
  FakeCpuDir dir;
  ASSERT_FALSE(dir.path().empty());
  dir.cache(0, 0, 1, "Data", "32K", "0");
  dir.cache(0, 1, 2, "Unified", "512K", "0");
  dir.write("cpu1/online", "1");
  const std::vector<CpuCaches> caches = readCpuCaches(dir.path());
  ASSERT_EQ(caches.size(), 2u);
  EXPECT_EQ(caches[0].l2Bytes, 512u << 10);
  EXPECT_EQ(caches[0].l3Bytes, 0u);
  EXPECT_EQ(caches[1].l2Bytes, 0u);
  EXPECT_EQ(cachePropsOf(caches, {0}).l2Bytes, 512u << 10);
  EXPECT_FALSE(cachePropsOf(caches, {0}).l3Shared);
  EXPECT_EQ(cachePropsOf(caches, {0, 1}).l2Bytes, 0u);
  EXPECT_TRUE(readCpuCaches(dir.path() + "/nothing-here").empty());
}

// This host's caches are read from the real sysfs: every CPU this process may use is listed.
TEST(CpuCaches, ThisHostListsTheCpusOfThisProcess) {
  if (!fs::exists("/sys/devices/system/cpu/cpu0")) GTEST_SKIP() << "no sysfs here";
  const std::vector<CpuCaches>& caches = hostCpuCaches();
  EXPECT_EQ(&hostCpuCaches(), &caches);  // read once
  for (int cpu : allowedCpuList()) {
    bool listed = false;
    for (const CpuCaches& c : caches) listed = listed || c.cpu == cpu;
    EXPECT_TRUE(listed) << cpu;
  }
}

// The ratio is measured (a real copy takes time either way, and the kernel's copy works
// within a process), once, in the hundredths that ranks publish to each other.
TEST(KernelCopyRatio, IsMeasuredOnceInHundredths) {
  const double ratio = kernelCopyRatio();
  EXPECT_GT(ratio, 0.0);
  EXPECT_LT(ratio, 1e6);
  EXPECT_EQ(static_cast<double>(std::lround(ratio * 100)) / 100, ratio);
  EXPECT_EQ(kernelCopyRatio(), ratio);
}

// The rules over the ratio (docs/host-rules.md): costly past 2.5 times memcpy's time; not
// known (0) is not costly. One-host ring segments are half a ring where it is costly, an
// eighth elsewhere.
TEST(HostRules, TheKernelsCopyIsCostlyPastTwoAndAHalfMemcpys) {
  EXPECT_FALSE(kernelCopyCostly(0.0));
  EXPECT_FALSE(kernelCopyCostly(1.8));
  EXPECT_FALSE(kernelCopyCostly(kCostlyKernelCopyRatio));
  EXPECT_TRUE(kernelCopyCostly(kCostlyKernelCopyRatio + 0.01));
  EXPECT_TRUE(kernelCopyCostly(3.2));
  EXPECT_TRUE(kernelCopyCostly(9.0));
  EXPECT_EQ(oneHostRingShare(0.0), 8u);
  EXPECT_EQ(oneHostRingShare(2.2), 8u);
  EXPECT_EQ(oneHostRingShare(3.2), 2u);
  EXPECT_EQ(oneHostRingShare(8.5), 2u);
}

}  // namespace
}  // namespace tutti

#include "base/host_props.h"

#include <dirent.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "base/cpus.h"
#include "base/strings.h"

namespace tutti {
namespace {

std::optional<std::string> readLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return std::string(trim(line));
}

// The CPU numbers of root's cpuN directories, ascending.
std::vector<int> listCpus(const std::string& root) {
  std::vector<int> cpus;
  DIR* dir = opendir(root.c_str());
  if (dir == nullptr) return cpus;
  while (const dirent* entry = readdir(dir)) {
    const std::string_view name(entry->d_name);
    if (name.size() < 4 || name.substr(0, 3) != "cpu") continue;
    const std::optional<std::int64_t> n = parseInt(name.substr(3));
    if (n && *n >= 0 && *n <= 65535 && name[3] != '+' && name[3] != '-')
      cpus.push_back(static_cast<int>(*n));
  }
  closedir(dir);
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

// One CPU's L2 and L3, and the CPUs its L2 serves (so that they need not be read again).
CpuCaches readCpu(const std::string& root, int cpu, std::vector<int>* l2Cpus) {
  CpuCaches c;
  c.cpu = cpu;
  const std::string base = root + "/cpu" + std::to_string(cpu) + "/cache/index";
  for (int index = 0;; ++index) {
    const std::string dir = base + std::to_string(index) + "/";
    const std::optional<std::string> level = readLine(dir + "level");
    if (!level) break;
    if (*level != "2" && *level != "3") continue;
    if (readLine(dir + "type").value_or("Unified") == "Instruction") continue;
    const std::optional<std::uint64_t> size = parseBytes(readLine(dir + "size").value_or(""));
    const std::string shared = readLine(dir + "shared_cpu_list").value_or("");
    if (*level == "2") {
      c.l2Bytes = size.value_or(0);
      *l2Cpus = parseCpuList(shared).value_or(std::vector<int>{});
    } else {
      c.l3Bytes = size.value_or(0);
      c.l3Cpus = shared;
    }
  }
  return c;
}

double measureKernelCopyRatio() {
  constexpr std::size_t kBytes = 256u << 10;
  std::vector<char> from(kBytes, 1), to(kBytes, 2);  // touched: no page faults timed
  using Clock = std::chrono::steady_clock;
  Clock::duration copy = Clock::duration::max(), kernel = Clock::duration::max();
  for (int i = 0; i < 16; ++i) {
    const auto start = Clock::now();
    std::memcpy(to.data(), from.data(), kBytes);
    asm volatile("" : : "r"(to.data()) : "memory");  // the copy happens here
    const auto copied = Clock::now();
    iovec mine{to.data(), kBytes};
    iovec theirs{from.data(), kBytes};
    if (process_vm_readv(getpid(), &mine, 1, &theirs, 1, 0) != static_cast<ssize_t>(kBytes))
      return 0.0;
    const auto read = Clock::now();
    copy = std::min(copy, copied - start);
    kernel = std::min(kernel, read - copied);
  }
  const double ratio = static_cast<double>(kernel.count()) /
                       static_cast<double>(std::max<Clock::rep>(1, copy.count()));
  return std::floor(ratio * 100) / 100;
}

}  // namespace

std::vector<CpuCaches> readCpuCaches(const std::string& root) {
  std::vector<CpuCaches> caches;
  std::map<int, std::size_t> sameL2;  // a CPU -> the entry of a CPU read before that shares its L2
  for (int cpu : listCpus(root)) {
    if (auto it = sameL2.find(cpu); it != sameL2.end()) {
      CpuCaches c = caches[it->second];
      c.cpu = cpu;
      caches.push_back(c);
      continue;
    }
    std::vector<int> l2Cpus;
    caches.push_back(readCpu(root, cpu, &l2Cpus));
    for (int other : l2Cpus) sameL2.emplace(other, caches.size() - 1);
  }
  return caches;
}

const std::vector<CpuCaches>& hostCpuCaches() {
  static const std::vector<CpuCaches> caches = readCpuCaches("/sys/devices/system/cpu");
  return caches;
}

CacheProps cachePropsOf(const std::vector<CpuCaches>& caches, std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  CacheProps props;
  const std::string* l3 = nullptr;
  bool first = true;
  for (const CpuCaches& c : caches) {
    if (!cpus.empty() && !std::binary_search(cpus.begin(), cpus.end(), c.cpu)) continue;
    props.l2Bytes = first ? c.l2Bytes : std::min(props.l2Bytes, c.l2Bytes);
    props.l3Bytes = first ? c.l3Bytes : std::min(props.l3Bytes, c.l3Bytes);
    props.l3Shared = first ? c.l3Bytes > 0 : props.l3Shared && c.l3Bytes > 0 && c.l3Cpus == *l3;
    if (first) l3 = &c.l3Cpus;
    first = false;
  }
  return props;
}

double kernelCopyRatio() {
  static const double ratio = measureKernelCopyRatio();
  return ratio;
}

}  // namespace tutti

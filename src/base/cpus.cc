#include "base/cpus.h"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/strings.h"

namespace tutti {
namespace {

std::optional<std::string> readText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<long long> readInteger(const std::string& path) {
  auto text = readText(path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  long long value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

// One mounted hierarchy: where it is mounted, and which group of it is the mount's root
// (a container usually sees its own group mounted as the root).
struct Mount {
  std::string point;
  std::string root;
};

// From /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - TYPE SOURCE
// SUPEROPTIONS". cgroup v1 hierarchies name their controllers in the super options.
std::optional<Mount> findMount(const std::string& mountinfo, bool v2) {
  std::istringstream lines(mountinfo);
  std::string line;
  while (std::getline(lines, line)) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash));
    std::istringstream tail(line.substr(dash + 3));
    std::string id, parent, dev, root, point, type, source, superOptions;
    if (!(head >> id >> parent >> dev >> root >> point)) continue;
    if (!(tail >> type >> source)) continue;
    tail >> superOptions;
    if (v2 ? type != "cgroup2" : type != "cgroup") continue;
    if (!v2) {
      const auto options = splitString(superOptions, ',');
      if (std::find(options.begin(), options.end(), "cpu") == options.end()) continue;
    }
    return Mount{point, root};
  }
  return std::nullopt;
}

// The group of this process in the hierarchy: "0::PATH" for v2, "N:CONTROLLERS:PATH" with
// `cpu` among the controllers for v1.
std::optional<std::string> findGroup(const std::string& cgroups, bool v2) {
  std::istringstream lines(cgroups);
  std::string line;
  while (std::getline(lines, line)) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (v2) {
      if (line.substr(0, first) == "0" && controllers.empty()) return path;
    } else {
      const auto names = splitString(controllers, ',');
      if (std::find(names.begin(), names.end(), "cpu") != names.end()) return path;
    }
  }
  return std::nullopt;
}

// The limit, in cores, that one group's files state; nullopt where it sets none.
std::optional<double> groupLimit(const std::string& dir, bool v2) {
  if (v2) {
    auto text = readText(dir + "/cpu.max");
    if (!text) return std::nullopt;
    std::istringstream in(*text);
    std::string quota;
    long long period = 0;
    if (!(in >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
    char* end = nullptr;
    const long long q = std::strtoll(quota.c_str(), &end, 10);
    if (end == quota.c_str() || q <= 0) return std::nullopt;
    return static_cast<double>(q) / static_cast<double>(period);
  }
  const auto quota = readInteger(dir + "/cpu.cfs_quota_us");
  const auto period = readInteger(dir + "/cpu.cfs_period_us");
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

// The smallest limit from the process's group up to the hierarchy's visible root.
std::optional<double> hierarchyLimit(const std::string& root, const std::string& mountinfo,
                                     const std::string& cgroups, bool v2) {
  const auto mount = findMount(mountinfo, v2);
  const auto group = findGroup(cgroups, v2);
  if (!mount || !group) return std::nullopt;
  // The group's path is relative to the hierarchy's root; the mount shows mount->root
  // of it. A group outside what is mounted (another namespace's view) is read at the mount.
  std::string relative = *group;
  if (mount->root != "/") {
    if (relative.compare(0, mount->root.size(), mount->root) == 0 &&
        (relative.size() == mount->root.size() || relative[mount->root.size()] == '/'))
      relative = relative.substr(mount->root.size());
    else
      relative.clear();
  }
  std::vector<std::string> parts;
  for (const std::string& part : splitString(relative, '/'))
    if (!part.empty() && part != "." && part != "..") parts.push_back(part);
  std::optional<double> limit;
  for (std::size_t depth = parts.size() + 1; depth-- > 0;) {
    std::string dir = root + mount->point;
    for (std::size_t i = 0; i < depth; ++i) dir += "/" + parts[i];
    const auto here = groupLimit(dir, v2);
    if (here && (!limit || *here < *limit)) limit = here;
  }
  return limit;
}

}  // namespace

std::optional<double> cgroupCpuLimit(const std::string& root) {
  const auto mountinfo = readText(root + "/proc/self/mountinfo");
  const auto cgroups = readText(root + "/proc/self/cgroup");
  if (!mountinfo || !cgroups) return std::nullopt;
  std::optional<double> limit;
  for (bool v2 : {true, false}) {
    const auto here = hierarchyLimit(root, *mountinfo, *cgroups, v2);
    if (here && (!limit || *here < *limit)) limit = here;
  }
  return limit;
}

int coresOfQuota(double limit) {
  return std::max(1, static_cast<int>(std::floor(limit + 0.1)));
}

int quotaCores() {
  // Read once: a group's limit rarely changes under a running job, and the files cost tens
  // of microseconds a read.
  static const int cores = [] {
    const std::optional<double> limit = cgroupCpuLimit();
    return limit ? coresOfQuota(*limit) : INT_MAX;
  }();
  return cores;
}

std::vector<int> allowedCpuList() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::string text;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(cpus[i]);
    if (j > i) text += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return text;
}

std::string formatMaskField(const std::vector<int>& cpus) {
  return cpus.empty() ? std::string("-") : formatCpuList(cpus);
}

std::optional<std::vector<int>> parseMaskField(std::string_view text) {
  if (text == "-") return std::vector<int>();
  if (text.empty()) return std::nullopt;
  return parseCpuList(text);
}

std::optional<std::vector<int>> parseCpuList(std::string_view text) {
  constexpr long kMaxCpu = 65535;
  std::vector<int> cpus;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return cpus;
  auto number = [](std::string_view digits) -> std::optional<long> {
    if (digits.empty() || digits.size() > 5) return std::nullopt;
    long value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    return value <= kMaxCpu ? std::optional<long>(value) : std::nullopt;
  };
  for (const std::string& item : splitString(text, ',')) {
    const auto dash = item.find('-');
    const auto first = number(std::string_view(item).substr(0, dash));
    const auto last = dash == std::string::npos ? first : number(std::string_view(item).substr(dash + 1));
    if (!first || !last || *last < *first) return std::nullopt;
    for (long cpu = *first; cpu <= *last; ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

bool eachRankHasCores(const std::vector<std::vector<int>>& masks, int perRank, int quotaCores) {
  if (perRank <= 0 || masks.empty()) return true;
  const long long needed = static_cast<long long>(masks.size()) * perRank;
  if (needed > quotaCores) return false;
  // Each rank stands for perRank claimants; Kuhn's augmenting paths give each claimant a
  // CPU of its mask not held by another, moving earlier claims where that frees one.
  std::vector<int> owner;  // by CPU number: the claimant holding it, -1 for none
  for (const auto& mask : masks)
    for (int cpu : mask)
      if (cpu >= 0 && static_cast<std::size_t>(cpu) >= owner.size()) owner.resize(static_cast<std::size_t>(cpu) + 1, -1);
  if (static_cast<long long>(owner.size()) < needed) return false;
  std::vector<char> visited(owner.size());
  auto maskOf = [&](int claimant) -> const std::vector<int>& {
    return masks[static_cast<std::size_t>(claimant / perRank)];
  };
  // Iterative depth-first search for an augmenting path from `start`.
  auto augment = [&](int start) {
    struct Frame {
      int claimant;
      std::size_t next;  // index into its mask
      int viaCpu;        // the CPU taken from this claimant's holder to reach it (-1: start)
    };
    std::vector<Frame> stack{{start, 0, -1}};
    while (!stack.empty()) {
      Frame& top = stack.back();
      const std::vector<int>& mask = maskOf(top.claimant);
      if (top.next == mask.size()) {
        stack.pop_back();
        continue;
      }
      const int cpu = mask[top.next++];
      if (cpu < 0 || visited[static_cast<std::size_t>(cpu)]) continue;
      visited[static_cast<std::size_t>(cpu)] = 1;
      const int holder = owner[static_cast<std::size_t>(cpu)];
      if (holder < 0) {
        // Free: every claimant on the path takes the CPU it reached the next one by.
        int take = cpu;
        for (std::size_t i = stack.size(); i-- > 0;) {
          const int previous = stack[i].viaCpu;
          owner[static_cast<std::size_t>(take)] = stack[i].claimant;
          take = previous;
        }
        return true;
      }
      stack.push_back({holder, 0, cpu});
    }
    return false;
  };
  for (int claimant = 0; claimant < needed; ++claimant) {
    std::fill(visited.begin(), visited.end(), 0);
    if (!augment(claimant)) return false;
  }
  return true;
}

}  // namespace tutti

// The host probe (probe.h): short measurements, the best of repeats, within a budget.
#include "tuning/probe.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "base/cpus.h"
#include "base/strings.h"
#include "base/wait.h"
#include "reduce/reduce.h"
#include "topology/nics.h"

namespace tutti::tuning {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A buffer whose pages are all touched, so that no measurement pays their first faults.
struct Buffer {
  explicit Buffer(std::size_t n) : bytes(n), data(new char[n]) { std::memset(data.get(), 1, n); }
  char* get() { return data.get(); }
  std::size_t bytes;
  std::unique_ptr<char[]> data;
};

// The smallest time `body` takes over at most `reps` runs, stopping at `until`; 0 where
// not one run finished in time. The smallest, not the mean: other work on the host only
// ever adds time.
template <typename Body>
double bestTime(int reps, Clock::time_point until, Body&& body) {
  double best = 0;
  for (int i = 0; i < reps && Clock::now() < until; ++i) {
    const Clock::time_point start = Clock::now();
    body();
    const double t = secondsSince(start);
    if (best == 0 || t < best) best = t;
  }
  return best;
}

void pinTo(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
}

// Waits until `word` holds `value`: spins, then gives the CPU away (the two threads may
// share one). False once `until` has passed.
bool waitFor(const std::atomic<std::uint32_t>& word, std::uint32_t value, Clock::time_point until) {
  for (std::uint32_t spins = 0; word.load(std::memory_order_acquire) != value; ++spins) {
    if (spins < 2000) {
      cpuRelax();
      continue;
    }
    if ((spins & 63) == 0 && Clock::now() >= until) return false;
    sched_yield();
  }
  return true;
}

// Two threads pinned to a pair of CPUs passing messages through shared memory (both new
// threads: the caller's affinity stays as it was).
class PairProbe {
 public:
  static constexpr std::size_t kMessageBytes = 256 << 10;
  static constexpr std::size_t kSmallBytes = 64;  // a message header's worth

  PairProbe(int cpuA, int cpuB) : cpuA_(cpuA), cpuB_(cpuB), shared_(kMessageBytes),
                                  mineA_(kMessageBytes), mineB_(kMessageBytes) {}

  // Measures alpha, beta and overhead; nullopt where the threads could not finish a
  // measurement by `until`.
  std::optional<LinkCost> measure(Clock::time_point until) {
    until_ = until;
    std::optional<LinkCost> cost;
    std::thread other([this] { answer(); });
    std::thread leader([&] {
      pinTo(cpuA_);
      cost = lead();
      stop_.store(true, std::memory_order_release);
      seq_.store(~0u, std::memory_order_release);
    });
    leader.join();
    other.join();
    return cost;
  }

 private:
  enum Kind : std::uint32_t { kPing = 0, kCopy = 1 };

  // One exchange: the leader writes (per kind), signals, and waits for the answer.
  bool roundTrip(Kind kind, std::size_t bytes) {
    const std::uint32_t s = ++sent_;
    kind_.store(kind, std::memory_order_relaxed);
    bytes_ = bytes;
    if (kind != kPing) reduce::copy(shared_.get(), mineA_.get(), bytes);
    seq_.store(s, std::memory_order_release);
    return waitFor(ack_, s, until_);
  }

  std::optional<LinkCost> lead() {
    const int kRounds = 16;
    bool ok = true;
    auto pings = [&] {
      for (int i = 0; i < kRounds && ok; ++i) ok = roundTrip(kPing, 0);
    };
    const Clock::time_point half = Clock::now() + (until_ - Clock::now()) / 2;
    const double rtt = bestTime(24, half, pings) / kRounds;
    if (!ok || rtt <= 0) return std::nullopt;
    // The sender's own time per small message: the copy in and the signal, without the
    // wait for the answer.
    auto post = [&] {
      for (int i = 0; i < kRounds; ++i) {
        reduce::copy(shared_.get(), mineA_.get(), kSmallBytes);
        seq_.store(sent_, std::memory_order_release);  // the value the answerer already saw
      }
    };
    const double overhead = bestTime(8, until_, post) / kRounds;
    auto copies = [&] { ok = ok && roundTrip(kCopy, kMessageBytes); };
    const double copyTrip = bestTime(16, until_, copies);
    if (!ok || copyTrip <= 0) return std::nullopt;
    LinkCost cost;
    cost.alpha = rtt / 2;
    cost.beta = std::max(copyTrip - rtt, copyTrip / 2) / static_cast<double>(kMessageBytes);
    cost.overhead = overhead;
    return cost;
  }

  void answer() {
    pinTo(cpuB_);
    std::uint32_t seen = 0;
    while (!stop_.load(std::memory_order_acquire)) {
      std::uint32_t s;
      for (std::uint32_t spins = 0; (s = seq_.load(std::memory_order_acquire)) == seen; ++spins) {
        if (spins < 2000) cpuRelax();
        else sched_yield();
        if (stop_.load(std::memory_order_acquire)) return;
      }
      if (s == ~0u) return;
      if (kind_.load(std::memory_order_relaxed) != kPing)
        reduce::copy(mineB_.get(), shared_.get(), bytes_);
      seen = s;
      ack_.store(s, std::memory_order_release);
    }
  }

  const int cpuA_;
  const int cpuB_;
  Clock::time_point until_;
  Buffer shared_;
  Buffer mineA_;
  Buffer mineB_;
  std::uint32_t sent_ = 0;
  std::size_t bytes_ = 0;  // published by seq_'s release
  alignas(64) std::atomic<std::uint32_t> seq_{0};
  alignas(64) std::atomic<std::uint32_t> ack_{0};
  std::atomic<std::uint32_t> kind_{kPing};
  std::atomic<bool> stop_{false};
};

// Rounds of a two-rank flat exchange: each thread writes its contribution into its slot of
// the round's half (two halves, alternating, so that one meeting per round suffices), meets
// the other at a counter, and reads both contributions.
class FlatProbe {
 public:
  static constexpr std::size_t kLargeBytes = 64 << 10;
  static constexpr int kRounds = 16;

  FlatProbe(int cpuA, int cpuB) : cpus_{cpuA, cpuB}, shared_(4 * kLargeBytes),
                                  mine_{Buffer(2 * kLargeBytes), Buffer(2 * kLargeBytes)} {}

  // {flatAlpha, flatBeta}, or nullopt where the rounds did not finish by `until`.
  std::optional<std::pair<double, double>> measure(Clock::time_point until) {
    until_ = until;
    double small = 0;
    double large = 0;
    std::thread other([this] { follow(); });
    std::thread leader([&] {
      pinTo(cpus_[0]);
      const Clock::time_point half = Clock::now() + (until - Clock::now()) / 2;
      small = bestTime(8, half, [&] { ok_ = ok_ && rounds(0, 8); }) / kRounds;
      large = bestTime(8, until, [&] { ok_ = ok_ && rounds(0, kLargeBytes); }) / kRounds;
      command_.store(kStop, std::memory_order_release);
      go_.fetch_add(1, std::memory_order_acq_rel);
    });
    leader.join();
    other.join();
    if (!ok_ || small <= 0 || large <= 0) return std::nullopt;
    const double perByte = std::max(large - small, large / 2) / (2.0 * kLargeBytes);
    return std::make_pair(small, perByte);
  }

 private:
  static constexpr std::uint32_t kStop = ~0u;

  // kRounds rounds of `bytes` per contribution, as rank `me`; the leader (me 0) first
  // tells the follower the size.
  bool rounds(int me, std::size_t bytes) {
    if (me == 0) {
      command_.store(static_cast<std::uint32_t>(bytes), std::memory_order_relaxed);
      go_.fetch_add(1, std::memory_order_release);
    }
    for (int r = 0; r < kRounds; ++r) {
      char* half = shared_.get() + static_cast<std::size_t>(round_[me] % 2) * 2 * kLargeBytes;
      reduce::copy(half + static_cast<std::size_t>(me) * kLargeBytes, mine_[me].get(), bytes);
      const std::uint32_t target = 2 * ++round_[me];
      arrived_.fetch_add(1, std::memory_order_acq_rel);
      if (!waitAtLeast(arrived_, target)) return false;
      for (int from = 0; from < 2; ++from)
        reduce::copy(mine_[me].get() + static_cast<std::size_t>(from) * kLargeBytes,
                     half + static_cast<std::size_t>(from) * kLargeBytes, bytes);
    }
    return true;
  }

  bool waitAtLeast(const std::atomic<std::uint32_t>& word, std::uint32_t value) {
    for (std::uint32_t spins = 0; word.load(std::memory_order_acquire) < value; ++spins) {
      if (spins < 2000) {
        cpuRelax();
        continue;
      }
      if ((spins & 63) == 0 && Clock::now() >= until_) return false;
      sched_yield();
    }
    return true;
  }

  void follow() {
    pinTo(cpus_[1]);
    for (std::uint32_t seen = 0;;) {
      if (!waitAtLeast(go_, seen + 1)) return;
      seen = go_.load(std::memory_order_acquire);
      const std::uint32_t command = command_.load(std::memory_order_acquire);
      if (command == kStop || !rounds(1, command)) return;
    }
  }

  const int cpus_[2];
  Clock::time_point until_;
  Buffer shared_;
  Buffer mine_[2];
  std::uint32_t round_[2] = {0, 0};
  bool ok_ = true;
  alignas(64) std::atomic<std::uint32_t> arrived_{0};
  alignas(64) std::atomic<std::uint32_t> go_{0};
  std::atomic<std::uint32_t> command_{0};
};

// Bytes copied per second by `threads` threads at once, each with its own 8 MiB buffers
// (reduce::copy writes them past the caches); 0 where it did not finish in time.
double memoryBandwidth(const std::vector<int>& cpus, Clock::time_point until) {
  constexpr std::size_t kBytes = 8 << 20;
  const std::size_t n = cpus.size();
  std::vector<double> best(n, 0);
  std::atomic<std::uint32_t> ready{0};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      pinTo(cpus[i]);
      Buffer src(kBytes), dst(kBytes);
      ready.fetch_add(1);
      while (ready.load() < n && Clock::now() < until) sched_yield();
      best[i] = bestTime(3, until, [&] { reduce::copy(dst.get(), src.get(), kBytes); });
    });
  }
  for (std::thread& t : threads) t.join();
  double total = 0;
  for (const double t : best) {
    if (t <= 0) return 0;
    total += static_cast<double>(kBytes) / t;
  }
  return total;
}

double copyBeta(Clock::time_point until) {
  constexpr std::size_t kBytes = 1 << 20;
  Buffer src(kBytes), dst(kBytes);
  const double t = bestTime(8, until, [&] { reduce::copy(dst.get(), src.get(), kBytes); });
  return t / kBytes;
}

// Seconds per byte of one operand, per dtype; 0 where it did not run in time.
std::array<double, kNumDataTypes> gammas(Clock::time_point until) {
  constexpr std::size_t kBytes = 128 << 10;
  // Zeros: every dtype's sum of zeros stays normal (no denormal or NaN slow paths).
  std::vector<char> a(kBytes, 0), b(kBytes, 0);
  std::array<double, kNumDataTypes> out{};
  for (int t = 0; t < kNumDataTypes; ++t) {
    const auto dtype = static_cast<DataType>(t);
    const std::size_t count = kBytes / dataTypeSize(dtype);
    const Clock::time_point share = Clock::now() + (until - Clock::now()) / (kNumDataTypes - t);
    out[static_cast<std::size_t>(t)] =
        bestTime(6, share, [&] { reduce::combine(a.data(), a.data(), b.data(), count, dtype, ReduceOp::kSum); }) /
        kBytes;
  }
  return out;
}

// The position of each allowed CPU: its package and L3 group (-1: not known).
struct Place {
  int cpu;
  int package;
  int l3;
};

int groupOf(const std::vector<std::vector<int>>& groups, int cpu) {
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (std::find(groups[g].begin(), groups[g].end(), cpu) != groups[g].end()) return static_cast<int>(g);
  return -1;
}

// The fastest NIC other than loopback that reports a speed, bytes/s; 0 where none does.
std::pair<double, std::string> fastestNic() {
  std::pair<double, std::string> best{0, ""};
  for (const topo::Nic& nic : topo::hostNics()) {
    if (nic.loopback || nic.speedMbps <= 0) continue;
    const double bytes = nic.speedMbps * 1e6 / 8;
    if (bytes > best.first) best = {bytes, nic.name};
  }
  return best;
}

}  // namespace

std::array<std::optional<std::pair<int, int>>, 3> cpuPairsByClass(const topo::Machine& machine,
                                                                  const std::vector<int>& allowed) {
  std::array<std::optional<std::pair<int, int>>, 3> pairs;
  if (allowed.empty()) return pairs;
  const bool described = machine.error.empty() && !machine.packages.empty();
  std::vector<Place> places;
  for (const int cpu : allowed)
    places.push_back({cpu, described ? groupOf(machine.packages, cpu) : 0,
                      described && !machine.l3Groups.empty() ? groupOf(machine.l3Groups, cpu) : 0});
  for (std::size_t i = 0; i < places.size(); ++i) {
    for (std::size_t j = i + 1; j < places.size(); ++j) {
      const Place& a = places[i];
      const Place& b = places[j];
      int c = 2;  // other packages
      if (a.package == b.package) c = a.l3 == b.l3 ? 0 : 1;
      if (!pairs[static_cast<std::size_t>(c)]) pairs[static_cast<std::size_t>(c)] = {{a.cpu, b.cpu}};
    }
  }
  if (places.size() == 1) pairs[0] = {{places[0].cpu, places[0].cpu}};
  return pairs;
}

std::vector<std::string> fillMissingClasses(const std::array<std::optional<LinkCost>, 3>& measured,
                                            MachineModel& model) {
  // Nearest first: for each class, the others by distance (inner before outer at a tie).
  static constexpr int kNearest[3][2] = {{1, 2}, {0, 2}, {1, 0}};
  std::vector<std::string> filled;
  for (int c = 0; c < 3; ++c) {
    if (measured[static_cast<std::size_t>(c)]) {
      model.paths[static_cast<std::size_t>(c)] = *measured[static_cast<std::size_t>(c)];
      continue;
    }
    for (const int other : kNearest[c]) {
      if (!measured[static_cast<std::size_t>(other)]) continue;
      model.paths[static_cast<std::size_t>(c)] = *measured[static_cast<std::size_t>(other)];
      filled.push_back(strFormat("%s: as %s", pathClassName(static_cast<PathClass>(c)),
                                 pathClassName(static_cast<PathClass>(other))));
      break;
    }
  }
  return filled;
}

namespace {

// The budget's shares, in order of the phases (they add up to 1).
struct Shares {
  double copy = 0.03, gamma = 0.12, memory = 0.25, paths = 0.45, flat = 0.15;
};

void probePaths(const std::vector<int>& allowed, Clock::time_point until, ProbeReport& report) {
  const auto pairs = cpuPairsByClass(topo::localMachine(), allowed);
  int present = 0;
  for (const auto& p : pairs) present += p ? 1 : 0;
  std::array<std::optional<LinkCost>, 3> measured;
  for (int c = 0; c < 3; ++c) {
    const auto& pair = pairs[static_cast<std::size_t>(c)];
    const char* name = pathClassName(static_cast<PathClass>(c));
    if (!pair) continue;
    const Clock::time_point share = Clock::now() + (until - Clock::now()) / std::max(1, present--);
    PairProbe probe(pair->first, pair->second);
    measured[static_cast<std::size_t>(c)] = probe.measure(share);
    report.notes.push_back(measured[static_cast<std::size_t>(c)]
                               ? strFormat("%s: CPUs %d and %d", name, pair->first, pair->second)
                               : strFormat("%s: CPUs %d and %d did not answer in time (default)",
                                           name, pair->first, pair->second));
  }
  for (std::string& line : fillMissingClasses(measured, report.model))
    report.notes.push_back(line + " (no such pair of CPUs here)");
}

void probeNetwork(ProbeReport& report) {
  MachineModel& m = report.model;
  const auto [bandwidth, name] = fastestNic();
  LinkCost& net = m.paths[static_cast<int>(PathClass::kNetwork)];
  if (bandwidth > 0) {
    m.nicBandwidth = bandwidth;
    net.beta = 1 / bandwidth;
    report.notes.push_back(strFormat("network: %s at %.0f Mbit/s; latency %.0f us (default)",
                                     name.c_str(), bandwidth * 8 / 1e6, net.alpha * 1e6));
  } else {
    report.notes.push_back(strFormat("network: no NIC reports its speed (virtual links): "
                                     "%.0f Mbit/s and %.0f us (defaults)",
                                     m.nicBandwidth * 8 / 1e6, net.alpha * 1e6));
  }
}

}  // namespace

ProbeReport probeHost(const ProbeOptions& options) {
  const Clock::time_point start = Clock::now();
  const auto budget = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, options.budgetSeconds)));
  const Shares shares;
  Clock::time_point until = start;
  auto phase = [&](double share) {
    until += std::chrono::duration_cast<Clock::duration>(budget * share);
    return until;
  };
  ProbeReport report;
  MachineModel& m = report.model;
  m = defaults();
  m.origin = "probe";
  std::vector<int> allowed = allowedCpuList();
  m.coresPerHost = std::max(1, usableCores());
  report.notes.push_back(strFormat("cores_per_host: %d usable CPUs (affinity mask and CPU quota)",
                                   m.coresPerHost));

  // A phase whose time is up before it starts is skipped whole (its buffers included).
  auto open = [](Clock::time_point end) { return Clock::now() < end; };
  if (const double beta = copyBeta(phase(shares.copy)); beta > 0) m.copyBeta = beta;
  const auto gamma = gammas(phase(shares.gamma));
  for (int t = 0; t < kNumDataTypes; ++t)
    if (gamma[static_cast<std::size_t>(t)] > 0) m.gamma[static_cast<std::size_t>(t)] = gamma[static_cast<std::size_t>(t)];

  std::vector<int> memoryCpus(allowed.begin(),
                              allowed.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(
                                                    allowed.size(), std::min(4, m.coresPerHost))));
  if (memoryCpus.empty()) memoryCpus.push_back(-1);
  const Clock::time_point memoryEnd = phase(shares.memory);
  if (const double bw = open(memoryEnd) ? memoryBandwidth(memoryCpus, memoryEnd) : 0; bw > 0) {
    m.hostMemoryBandwidth = bw;
    report.notes.push_back(strFormat("host_memory_bandwidth: %zu threads copying at once",
                                     memoryCpus.size()));
  } else {
    report.notes.push_back("host_memory_bandwidth: not measured in time (default)");
  }

  if (const Clock::time_point end = phase(shares.paths); open(end)) {
    probePaths(allowed, end, report);
  } else {
    report.notes.push_back("paths: not measured in time (defaults)");
  }
  probeNetwork(report);

  const auto pairs = cpuPairsByClass(topo::localMachine(), allowed);
  const auto& flatPair = pairs[0] ? pairs[0] : pairs[1] ? pairs[1] : pairs[2];
  if (const Clock::time_point end = phase(shares.flat); flatPair && open(end)) {
    FlatProbe flat(flatPair->first, flatPair->second);
    if (const auto cost = flat.measure(end)) {
      m.flatAlpha = cost->first;
      m.flatBeta = cost->second;
      report.notes.push_back(strFormat("flat: two threads on CPUs %d and %d", flatPair->first,
                                       flatPair->second));
    } else {
      report.notes.push_back("flat: not measured in time (defaults)");
    }
  }
  report.seconds = secondsSince(start);
  return report;
}

}  // namespace tutti::tuning

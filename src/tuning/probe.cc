// The host probe (probe.h): short measurements, the best of repeats, within a budget.
#include "tuning/probe.h"

#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>
#include <memory>
#include <thread>

#include "base/cpus.h"
#include "base/host_props.h"
#include "base/fd.h"
#include "base/strings.h"
#include "base/wait.h"
#include "reduce/reduce.h"
#include "tuning/probe_messages.h"
#include "tuning/probe_places.h"
#include "topology/nics.h"

namespace tutti::tuning {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A buffer whose pages are all present (MAP_POPULATE: the kernel faults them in at once,
// far faster than touching them one by one), so that no measurement pays first faults.
class Buffer {
 public:
  // hugePages: backed by transparent huge pages where the kernel allows them (madvise),
  // then populated by the first write rather than MAP_POPULATE's 4 KiB pages.
  explicit Buffer(std::size_t n, bool hugePages = false) : bytes_(n) {
    const int populate = hugePages ? 0 : MAP_POPULATE;
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | populate, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
    if (data_ != nullptr && hugePages) {
#ifdef MADV_HUGEPAGE
      (void)::madvise(data_, n, MADV_HUGEPAGE);  // best effort
#endif
      std::memset(data_, 1, n);
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  bool ok() const { return data_ != nullptr; }
  char* get() { return data_; }

 private:
  std::size_t bytes_;
  char* data_ = nullptr;
};

// The smallest time `body` takes over at most `reps` runs, stopping at `until` after the
// first: one run always happens, so that a host too busy to finish a phase in its share
// still gives a (pessimistic) figure, at the cost of one run. The smallest, not the mean:
// other work on the host only ever adds time.
template <typename Body>
double bestTime(int reps, Clock::time_point until, Body&& body) {
  double best = 0;
  for (int i = 0; i < reps && (i == 0 || Clock::now() < until); ++i) {
    const Clock::time_point start = Clock::now();
    body();
    const double t = secondsSince(start);
    if (best == 0 || t < best) best = t;
  }
  return best;
}

// How long a thread has waited for a CPU while runnable (schedstat's run_delay, ns), or
// where the kernel keeps no such account its involuntary context switches: a counter that
// moves when the thread was kept off a CPU it wanted. A batch of an exchange between two
// threads is clean where neither's moved: neither was preempted, nor waited behind other
// work after giving its CPU away. Opened once, read with pread per batch (~1 us, outside
// the timed part).
class WaitCounter {
 public:
  explicit WaitCounter(int tid) {
    const std::string dir = strFormat("/proc/self/task/%d/", tid);
    fd_ = UniqueFd(::open((dir + "schedstat").c_str(), O_RDONLY | O_CLOEXEC));
    if (fd_.valid() && read() != kUnknown) return;
    fd_ = UniqueFd(::open((dir + "status").c_str(), O_RDONLY | O_CLOEXEC));
    status_ = true;
  }
  static constexpr std::uint64_t kUnknown = ~0ull;
  // The counter now; kUnknown where it cannot be read (every batch then counts as clean,
  // and the consistency rules alone judge the result).
  std::uint64_t read() const {
    if (!fd_.valid()) return kUnknown;
    char text[2048];
    const ssize_t n = ::pread(fd_.get(), text, sizeof(text) - 1, 0);
    if (n <= 0) return kUnknown;
    text[n] = '\0';
    unsigned long long a = 0, b = 0;
    if (!status_) return std::sscanf(text, "%llu %llu", &a, &b) == 2 ? b : kUnknown;
    const char* line = std::strstr(text, "nonvoluntary_ctxt_switches:");
    return line != nullptr && std::sscanf(line, "nonvoluntary_ctxt_switches: %llu", &a) == 1 ? a
                                                                                              : kUnknown;
  }

 private:
  UniqueFd fd_;
  bool status_ = false;
};

int currentTid() { return static_cast<int>(::syscall(SYS_gettid)); }

// The batches of an exchange between two threads: the best time of those neither thread
// waited for a CPU in, and how many there were of each.
struct Batches {
  double best = 0;     // 0: no clean batch
  double bestAny = 0;  // of every batch: what a contended phase reports
  int clean = 0;
  int runs = 0;
};

// bestTime over clean batches: runs `body` until `reps` clean batches or `until` (at least
// once), reading both threads' WaitCounters around each. `watch` false (the two threads
// share one CPU: each waits for the other by design) counts every batch as clean.
template <typename Body>
Batches bestCleanTime(int reps, Clock::time_point until, const WaitCounter& self,
                      const WaitCounter& partner, bool watch, Body&& body) {
  Batches out;
  while (out.clean < reps && (out.runs == 0 || Clock::now() < until)) {
    const std::uint64_t a0 = self.read(), b0 = partner.read();
    const Clock::time_point start = Clock::now();
    body();
    const double t = secondsSince(start);
    const bool clean = !watch || (self.read() == a0 && partner.read() == b0);
    ++out.runs;
    if (out.bestAny == 0 || t < out.bestAny) out.bestAny = t;
    if (!clean) continue;
    ++out.clean;
    if (out.best == 0 || t < out.best) out.best = t;
  }
  return out;
}

// The calling thread's CPU time, in seconds: what a single-threaded measurement uses, so
// that time the thread spends preempted on a busy host is not counted.
double threadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// bestTime in the thread's CPU time, at least `minReps` runs: for work of one thread alone
// (copies, reductions), whose CPU time is its cost whatever else the host runs.
template <typename Body>
double bestCpuTime(int minReps, int reps, Clock::time_point until, Body&& body) {
  double best = 0;
  for (int i = 0; i < reps && (i < minReps || Clock::now() < until); ++i) {
    const double start = threadCpuSeconds();
    body();
    const double t = threadCpuSeconds() - start;
    if (t > 0 && (best == 0 || t < best)) best = t;
  }
  return best;
}

// How long a thread waits for its partner past the phase's end before giving up: on a busy
// host the partner may need a time slice (a few ms) to run at all.
constexpr auto kGrace = std::chrono::milliseconds(10);


// Waits until `word` holds `value`: spins, then gives the CPU away (the two threads may
// share one). False once `until` has passed.
bool waitFor(const std::atomic<std::uint32_t>& word, std::uint32_t value, Clock::time_point until) {
  for (std::uint32_t spins = 0; word.load(std::memory_order_acquire) != value; ++spins) {
    if (spins < 2000) {
      cpuRelax();
      continue;
    }
    // Every time: one sched_yield may hand the CPU away for a whole time slice.
    if (Clock::now() >= until + kGrace) return false;
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

  // Measures alpha, beta and overhead: nullopt where the threads could not finish a
  // measurement by `until`; `contended` says why where no batch of a measurement was free
  // of waiting for a CPU (the figure is then the preempted one's, not the machine's).
  std::optional<LinkCost> measure(Clock::time_point until, std::string& contended) {
    if (!shared_.ok() || !mineA_.ok() || !mineB_.ok()) return std::nullopt;
    until_ = until;
    std::optional<LinkCost> cost;
    std::thread other([this] { answer(); });
    std::thread leader([&] {
      pinThread(cpuA_);
      cost = lead(contended);
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

  std::optional<LinkCost> lead(std::string& contended) {
    // Short batches, many of them, of which only those neither thread waited for a CPU in
    // count: on a busy host the best batch is one neither thread was preempted in.
    const int kRounds = 4;
    bool ok = true;
    // The answerer's first answer: it is running, and its thread id is published.
    if (!roundTrip(kPing, 0)) return std::nullopt;
    const WaitCounter self(currentTid());
    const WaitCounter partner(partnerTid_.load(std::memory_order_acquire));
    const bool watch = cpuA_ != cpuB_;
    auto note = [&](const char* what, const Batches& b) {
      if (b.clean == 0 && contended.empty())
        contended = strFormat("%s: none of %d batches ran without waiting for a CPU", what, b.runs);
    };
    auto pings = [&] {
      for (int i = 0; i < kRounds && ok; ++i) ok = roundTrip(kPing, 0);
    };
    const Clock::time_point half = Clock::now() + (until_ - Clock::now()) / 2;
    const Batches pingBatches = bestCleanTime(64, half, self, partner, watch, pings);
    if (!ok) return std::nullopt;
    note("latency", pingBatches);
    const double rtt = (pingBatches.best > 0 ? pingBatches.best : pingBatches.bestAny) / kRounds;
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
    const Batches copyBatches = bestCleanTime(16, until_, self, partner, watch, copies);
    if (!ok) return std::nullopt;
    note("bandwidth", copyBatches);
    const double copyTrip = copyBatches.best > 0 ? copyBatches.best : copyBatches.bestAny;
    if (!ok || copyTrip <= 0) return std::nullopt;
    LinkCost cost;
    cost.alpha = rtt / 2;
    cost.beta = std::max(copyTrip - rtt, copyTrip / 2) / static_cast<double>(kMessageBytes);
    cost.overhead = overhead;
    return cost;
  }

  void answer() {
    pinThread(cpuB_);
    partnerTid_.store(currentTid(), std::memory_order_release);
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
  std::atomic<int> partnerTid_{0};
};

// Rounds of a two-rank flat exchange: each thread writes its contribution into its slot of
// the round's half (two halves, alternating, so that one meeting per round suffices), meets
// the other at a counter, and reads both contributions.
class FlatProbe {
 public:
  static constexpr std::size_t kLargeBytes = 64 << 10;
  static constexpr int kRounds = 4;

  FlatProbe(int cpuA, int cpuB) : cpus_{cpuA, cpuB}, shared_(4 * kLargeBytes),
                                  mine_{Buffer(2 * kLargeBytes), Buffer(2 * kLargeBytes)} {}

  // {flatAlpha, flatBeta}, or nullopt where the rounds did not finish by `until`;
  // `contended` says why where no batch ran without either thread waiting for a CPU.
  std::optional<std::pair<double, double>> measure(Clock::duration share, std::string& contended) {
    if (!shared_.ok() || !mine_[0].ok() || !mine_[1].ok()) return std::nullopt;
    const Clock::time_point until = Clock::now() + share;
    until_ = until;
    double small = 0;
    double large = 0;
    std::thread other([this] { follow(); });
    std::thread leader([&] {
      pinThread(cpus_[0]);
      const WaitCounter self(currentTid());
      while (followerTid_.load(std::memory_order_acquire) == 0 && Clock::now() < until + kGrace)
        sched_yield();  // past that, the rounds' own waits judge the follower
      const WaitCounter partner(followerTid_.load(std::memory_order_acquire));
      const bool watch = cpus_[0] != cpus_[1];
      const Clock::time_point half = Clock::now() + (until - Clock::now()) / 2;
      const Batches smallBatches = bestCleanTime(32, half, self, partner, watch,
                                                 [&] { ok_ = ok_ && rounds(0, 8); });
      const Batches largeBatches = bestCleanTime(16, until, self, partner, watch,
                                                 [&] { ok_ = ok_ && rounds(0, kLargeBytes); });
      for (const auto& [what, b] : {std::pair{"8 B rounds", smallBatches},
                                    std::pair{"64 KiB rounds", largeBatches}}) {
        if (b.clean == 0 && contended.empty())
          contended = strFormat("%s: none of %d batches ran without waiting for a CPU", what, b.runs);
      }
      small = (smallBatches.best > 0 ? smallBatches.best : smallBatches.bestAny) / kRounds;
      large = (largeBatches.best > 0 ? largeBatches.best : largeBatches.bestAny) / kRounds;
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
      // Each publishes its round on a cache line of its own and waits for the other's, as
      // the transport's flat slots do (one counter both increment costs a contended
      // read-modify-write a round: twice the exchange's time).
      const std::uint32_t round = ++round_[me];
      published_[me].round.store(round, std::memory_order_release);
      if (!waitAtLeast(published_[1 - me].round, round)) return false;
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
      if (Clock::now() >= until_ + kGrace) return false;
      sched_yield();
    }
    return true;
  }

  void follow() {
    pinThread(cpus_[1]);
    followerTid_.store(currentTid(), std::memory_order_release);
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
  struct Published {
    alignas(64) std::atomic<std::uint32_t> round{0};
  };
  Published published_[2];
  alignas(64) std::atomic<std::uint32_t> go_{0};
  std::atomic<std::uint32_t> command_{0};
  std::atomic<int> followerTid_{0};
};

// Bytes per second the threads on `cpus` copy at once: 2 MiB each within the caches
// (first), and from memory to memory (second) through buffers that together hold twice the
// last-level cache `llcBytes` (16 to 64 MiB each; 0: 16), as a large call's buffers do,
// 2 MiB at a time with ordinary stores as messages are copied; 0 where a thread could not
// make its buffers. The large buffers are backed by huge pages where the kernel gives them
// (a few faults, not thousands: populating 4 KiB pages was most of the probe's time), and
// first written whole, untimed.
std::pair<double, double> memoryBandwidth(const std::vector<int>& cpus, std::uint64_t llcBytes,
                                          Clock::duration share) {
  constexpr std::size_t kBytes = 2 << 20;
  const std::size_t n = cpus.size();
  const std::size_t large = std::clamp<std::size_t>(
      static_cast<std::size_t>(2 * llcBytes / std::max<std::size_t>(1, 2 * n)), 8 << 20, 32 << 20);
  std::vector<double> cached(n, 0), fromMemory(n, 0);
  std::atomic<std::size_t> ready{0};
  std::atomic<std::int64_t> startNs{0};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      pinThread(cpus[i]);
      Buffer src(kBytes), dst(kBytes);
      Buffer bigSrc(large, true), bigDst(large, true);
      // The clock starts when every thread has its buffers: they copy at once.
      if (ready.fetch_add(1) + 1 == n)
        startNs.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
      while (startNs.load(std::memory_order_acquire) == 0) sched_yield();
      if (!src.ok() || !dst.ok()) return;
      const Clock::time_point begin =
          Clock::time_point(Clock::duration(startNs.load(std::memory_order_acquire)));
      cached[i] = bestCpuTime(2, 3, begin + share / 3, [&] {
        reduce::copy(dst.get(), src.get(), kBytes, reduce::kCopyStreamingBytes);
      });
      if (!bigSrc.ok() || !bigDst.ok()) return;
      // In pieces under reduce::copy's streaming threshold: with the ordinary stores of the
      // copies messages make (a shared-memory ring's, the kernel's between processes).
      auto copyLarge = [&] {
        for (std::size_t at = 0; at < large; at += kBytes)
          reduce::copy(bigDst.get() + at, bigSrc.get() + at, std::min(kBytes, large - at));
      };
      fromMemory[i] = bestCpuTime(2, 3, begin + share, copyLarge);
    });
  }
  for (std::thread& t : threads) t.join();
  auto total = [&](const std::vector<double>& times, std::size_t bytes) {
    double sum = 0;
    for (const double t : times) {
      if (t <= 0) return 0.0;
      sum += static_cast<double>(bytes) / t;
    }
    return sum;
  };
  return {total(cached, kBytes), total(fromMemory, large)};
}

double copyBeta(Clock::duration share) {
  constexpr std::size_t kBytes = 1 << 20;
  Buffer src(kBytes), dst(kBytes);
  if (!src.ok() || !dst.ok()) return 0;
  const double t = bestCpuTime(3, 8, Clock::now() + share,
                               [&] { reduce::copy(dst.get(), src.get(), kBytes); });
  return t / kBytes;
}

// Seconds per byte of one operand, per dtype; 0 where the buffers could not be made. 1 MiB
// operands: past a core's L2, as the messages of a large call are.
std::array<double, kNumDataTypes> gammas(Clock::duration share) {
  constexpr std::size_t kBytes = 1 << 20;
  // Zeros (as mapped): every dtype's sum of zeros stays normal (no denormal or NaN slow paths).
  Buffer a(kBytes), b(kBytes);
  std::array<double, kNumDataTypes> out{};
  if (!a.ok() || !b.ok()) return out;
  // Once unmeasured: the first call pays for the kernel's choice and the operands' first
  // trip into the caches.
  reduce::combine(a.get(), a.get(), b.get(), kBytes, DataType::kUint8, ReduceOp::kSum);
  const Clock::time_point until = Clock::now() + share;
  for (int t = 0; t < kNumDataTypes; ++t) {
    const auto dtype = static_cast<DataType>(t);
    const std::size_t count = kBytes / dataTypeSize(dtype);
    const Clock::time_point end = Clock::now() + (until - Clock::now()) / (kNumDataTypes - t);
    out[static_cast<std::size_t>(t)] =
        bestCpuTime(2, 4, end, [&] { reduce::combine(a.get(), a.get(), b.get(), count, dtype, ReduceOp::kSum); }) /
        kBytes;
  }
  return out;
}

}  // namespace

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

// The budget's shares, in order of the phases: they add up to less than 1, leaving room
// for what no phase's clock counts (buffers, threads starting).
struct Shares {
  double copy = 0.03, gamma = 0.08, paths = 0.3, flat = 0.1, memory = 0.2, tcp = 0.1,
         switchCost = 0.04;
};

// The consistency rules (probe.h): a pair of threads spinning on one cache line answer each
// other in well under a microsecond, and through a futex (a sleeping thread woken) in a few;
// a one-way latency past kMaxPairAlpha means a thread was not running. And a message passed
// through a shared buffer is two copies and the cache lines' trip between the cores: far
// past kMaxCopyRatio local copies of the same bytes, a thread was waiting.
constexpr double kMaxPairAlpha = 10e-6;
constexpr double kMaxCopyRatio = 16;

}  // namespace

std::string implausiblePair(double alpha, double beta, double copyBeta) {
  if (alpha > kMaxPairAlpha)
    return strFormat("latency %.1f us is past %.0f us, longer than a futex wake-up: a thread "
                     "was not running", alpha * 1e6, kMaxPairAlpha * 1e6);
  if (copyBeta > 0 && beta > kMaxCopyRatio * copyBeta)
    return strFormat("bandwidth %.2f GB/s is under 1/%.0f of the local copy's %.2f GB/s",
                     1e-9 / beta, kMaxCopyRatio, 1e-9 / copyBeta);
  return "";
}

namespace {

// Why the phase `name` is untrusted: `contended` (the probe's own account), else the
// options' stand-in, else the consistency rules; empty where it is trusted.
std::string judge(const ProbeOptions& options, const char* name, std::string contended,
                  double alpha, double beta, double copyBeta) {
  if (!contended.empty()) return contended;
  if (options.contended && options.contended(name)) return "contended (as the caller's stand-in says)";
  return implausiblePair(alpha, beta, copyBeta);
}

void probePaths(const ProbeOptions& options, const topo::Machine& machine,
                const std::vector<int>& allowed, Clock::duration share, ProbeReport& report) {
  const auto pairs = cpuPairsByClass(machine, allowed);
  int present = 0;
  for (const auto& p : pairs) present += p ? 1 : 0;
  std::array<std::optional<LinkCost>, 3> measured;
  for (int c = 0; c < 3; ++c) {
    const auto& pair = pairs[static_cast<std::size_t>(c)];
    const char* name = pathClassName(static_cast<PathClass>(c));
    if (!pair) continue;
    PairProbe probe(pair->first, pair->second);
    std::string contended;
    auto& cost = measured[static_cast<std::size_t>(c)];
    cost = probe.measure(Clock::now() + share / present, contended);
    if (!cost) {
      report.complete = false;
      report.notes.push_back(strFormat("%s: CPUs %d and %d did not answer in time (not used)",
                                       name, pair->first, pair->second));
      continue;
    }
    const std::string why =
        judge(options, name, contended, cost->alpha, cost->beta, report.model.copyBeta);
    if (!why.empty()) {
      report.complete = false;
      report.notes.push_back(strFormat("%s: CPUs %d and %d untrusted (%.3f us, %.2f GB/s), not "
                                       "used: %s", name, pair->first, pair->second,
                                       cost->alpha * 1e6, 1e-9 / cost->beta, why.c_str()));
      cost.reset();
      continue;
    }
    report.notes.push_back(strFormat("%s: CPUs %d and %d", name, pair->first, pair->second));
  }
  for (std::string& line : fillMissingClasses(measured, report.model))
    report.notes.push_back(line + " (no pair of CPUs here, or none trusted)");
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
  // Each phase gets its share from when its buffers and threads are ready, so that a slow
  // set-up on a busy host does not starve the phases after it, and takes at least one
  // sample. Past twice the budget (a host too busy to run anything), the phases left keep
  // their defaults.
  const Clock::time_point hardEnd = start + 2 * budget;
  const Shares shares;
  auto share = [&](double part) { return std::chrono::duration_cast<Clock::duration>(budget * part); };
  auto ms = [](Clock::time_point from) { return secondsSince(from) * 1e3; };
  ProbeReport report;
  MachineModel& m = report.model;
  m = defaults();
  m.origin = "probe";
  auto late = [&](const char* what) {
    if (Clock::now() < hardEnd) return false;
    report.notes.push_back(strFormat("%s: the probe's time ran out (defaults)", what));
    report.complete = false;
    return true;
  };
  const topo::Machine& machine = topo::localMachine();
  const std::vector<int> allowed = hostCpus(machine);
  m.coresPerHost = std::max(1, std::min(static_cast<int>(allowed.size()), quotaCores()));
  report.notes.push_back(strFormat("cores_per_host: %d CPUs of the host this process may run on "
                                   "(its cpuset and CPU quota, not its affinity mask)",
                                   m.coresPerHost));

  Clock::time_point t0 = Clock::now();
  if (const double beta = copyBeta(share(shares.copy)); beta > 0) {
    m.copyBeta = beta;
    report.notes.push_back(strFormat("copy_beta: 1 MiB copies (%.1f ms)", ms(t0)));
  }
  t0 = Clock::now();
  if (!late("gamma")) {
    const auto gamma = gammas(share(shares.gamma));
    for (int t = 0; t < kNumDataTypes; ++t)
      if (gamma[static_cast<std::size_t>(t)] > 0) m.gamma[static_cast<std::size_t>(t)] = gamma[static_cast<std::size_t>(t)];
    report.notes.push_back(strFormat("gamma: sums of 1 MiB operands (%.1f ms)", ms(t0)));
  }

  t0 = Clock::now();
  if (!late("paths")) {
    probePaths(options, machine, allowed, share(shares.paths), report);
    report.notes.push_back(strFormat("paths: %.1f ms", ms(t0)));
  }
  probeNetwork(report);

  const auto pairs = cpuPairsByClass(machine, allowed);
  const auto& flatPair = pairs[0] ? pairs[0] : pairs[1] ? pairs[1] : pairs[2];
  t0 = Clock::now();
  if (flatPair && !late("flat")) {
    std::string contended;
    const auto flat = FlatProbe(flatPair->first, flatPair->second).measure(share(shares.flat), contended);
    const std::string why =
        flat ? judge(options, "flat", contended, flat->first, flat->second, m.copyBeta) : "";
    if (flat && why.empty()) {
      m.flatAlpha = flat->first;
      m.flatBeta = flat->second;
      report.notes.push_back(strFormat("flat: two threads on CPUs %d and %d (%.1f ms)",
                                       flatPair->first, flatPair->second, ms(t0)));
    } else if (flat) {
      report.notes.push_back(strFormat("flat: untrusted (%.3f us a round), defaults: %s",
                                       flat->first * 1e6, why.c_str()));
      report.complete = false;
    } else {
      report.notes.push_back("flat: the threads did not answer in time (defaults)");
      report.complete = false;
    }
  }

  if (const double ratio = kernelCopyRatio(); ratio > 0) {
    m.kernelCopyRatio = ratio;
    report.notes.push_back(strFormat("kernel_copy_ratio: process_vm_readv against memcpy, 256 KiB "
                                     "(base/host_props.h): %.2f", ratio));
  }
  const CacheProps caches = cachePropsOf(hostCpuCaches(), allowed);
  if (caches.l3Bytes > 0 || caches.l2Bytes > 0) {
    m.llcBytes = caches.l3Bytes > 0 ? caches.l3Bytes : caches.l2Bytes;
    report.notes.push_back(strFormat("llc_bytes: the %s of the CPUs (sysfs)",
                                     caches.l3Bytes > 0 ? "smallest L3" : "smallest L2 (no L3 listed)"));
  }
  std::vector<int> memoryCpus(allowed.begin(),
                              allowed.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(
                                                    allowed.size(), std::min(4, m.coresPerHost))));
  if (memoryCpus.empty()) memoryCpus.push_back(-1);
  t0 = Clock::now();
  if (!late("host_memory_bandwidth")) {
    const auto [cached, fromMemory] = memoryBandwidth(memoryCpus, m.llcBytes, share(shares.memory));
    if (cached > 0) m.cacheBandwidth = cached;
    if (fromMemory > 0) m.hostMemoryBandwidth = fromMemory;
    report.notes.push_back(strFormat("host_memory_bandwidth, cache_bandwidth: %zu threads copying "
                                     "at once, buffers of twice the last-level cache together, "
                                     "and 2 MiB each (%.1f ms)",
                                     memoryCpus.size(), ms(t0)));
  }
  probeLibraryPaths(options, flatPair, share(shares.tcp), share(shares.switchCost), late, report);
  report.seconds = secondsSince(start);
  return report;
}

}  // namespace tutti::tuning

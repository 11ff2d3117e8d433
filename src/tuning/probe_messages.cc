// Messages through the TCP transport between two threads, and a context switch
// (probe_messages.h). Rank 0's thread leads: before each batch of round trips it sends a
// head naming the batch's kind (8-byte or 1 MiB messages, or the end), so that rank 1's
// thread follows without a clock of its own; each batch is timed by rank 0 alone, and the
// best batch of each kind counts.
#include "tuning/probe_messages.h"

#include <pthread.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/strings.h"
#include "base/net.h"
#include "transport/link.h"
#include "transport/tcp/tcp_transport.h"

namespace tutti::tuning {

namespace {

// Large enough that the 8-byte round trip's own error (a few microseconds) is small beside
// its time, which it is subtracted from.
constexpr std::size_t kBulkBytes = 1 << 20;
constexpr int kSmallRounds = 32, kBulkRounds = 8;  // round trips per batch
// Each wait polls until its message comes, as the executor's waits do where every rank has
// a core (a sleep and its wake-up are switch_cost's part, not a message's).
constexpr std::int64_t kSpinNs = 2'000'000;
constexpr Tag kHeadTag = 1, kDataTag = 2;

enum Kind : std::uint64_t { kEnd = 0, kSmall = 1, kBulk = 2 };

double secondsSince(ProbeClock::time_point start) {
  return std::chrono::duration<double>(ProbeClock::now() - start).count();
}

// Two TCP transports over one connection on 127.0.0.1 (a listener on an ephemeral port).
bool makeTcp(TransportPair& pair, Deadline deadline, std::string* why) {
  auto fail = [&](const Status& s) {
    *why = s.toString();
    return false;
  };
  auto listener = listenTcp("127.0.0.1", 0, 1);
  if (!listener.ok()) return fail(listener.status());
  auto address = localAddress(listener->get());
  if (!address.ok()) return fail(address.status());
  auto connected = connectTcp(*address, deadline, false);
  if (!connected.ok()) return fail(connected.status());
  auto accepted = acceptTcp(listener->get());
  if (!accepted.ok()) return fail(accepted.status());
  std::array<UniqueFd, 2> ends{std::move(connected).value(), std::move(accepted).value()};
  const std::vector<std::string> names = {"rank 0", "rank 1"};
  for (int r = 0; r < 2; ++r) {
    UniqueFd& fd = ends[static_cast<std::size_t>(r)];
    if (Status s = setNoDelay(fd.get()); !s.ok()) return fail(s);
    std::vector<UniqueFd> sockets(2);
    sockets[static_cast<std::size_t>(1 - r)] = std::move(fd);
    auto t = tcp::TcpTransport::adopt(r, 2, std::move(sockets), names, 64u << 20);
    if (!t.ok()) return fail(t.status());
    pair[static_cast<std::size_t>(r)] = std::move(t).value();
  }
  return true;
}

struct Best {
  double smallWall = 0, bulkWall = 0;
  void keep(double& slot, double value) {
    if (value > 0 && (slot == 0 || value < slot)) slot = value;
  }
};

// Rank 0's side: batches of each kind in turn until `until`, then the end.
void lead(Transport& t, ProbeClock::time_point until, Deadline deadline, Best& best, bool& ok) {
  std::vector<std::uint8_t> bulk(kBulkBytes, 1);
  std::uint64_t small = 0, answer = 0;
  const std::vector<Kind> kinds = {kSmall, kBulk};
  // The first bulk batch is not timed: a new connection's socket buffers start small and the
  // kernel grows them with use (autotuning), so that it measured a connection still growing
  // (3x slower in some probes than in others) where the communicator's are long-lived.
  constexpr std::size_t kMinBatches = 2 * 2;
  for (std::size_t batch = 0; ok; ++batch) {
    // At least two batches of each kind; then until the time is up.
    const Kind kind = batch >= kMinBatches && ProbeClock::now() >= until ? kEnd : kinds[batch % kinds.size()];
    std::uint64_t head = kind;
    const std::int64_t spin = kSpinNs;
    if (!sendMessage(t, 1, kHeadTag, &head, sizeof head, deadline, kSpinNs)) {
      ok = false;
      return;
    }
    if (kind == kEnd) return;
    const auto start = ProbeClock::now();
    const int rounds = kind == kBulk ? kBulkRounds : kSmallRounds;
    for (int i = 0; i < rounds && ok; ++i) {
      ok = kind == kBulk ? sendMessage(t, 1, kDataTag, bulk.data(), bulk.size(), deadline, spin)
                         : sendMessage(t, 1, kDataTag, &small, sizeof small, deadline, spin);
      ok = ok && recvMessage(t, 1, kDataTag, &answer, sizeof answer, deadline, spin);
    }
    if (!ok) return;
    const double wall = secondsSince(start) / rounds;
    if (kind == kSmall) best.keep(best.smallWall, wall);
    if (kind == kBulk && batch >= kinds.size()) best.keep(best.bulkWall, wall);
  }
}

// Rank 1's side: as each head says.
void follow(Transport& t, Deadline deadline, bool& ok) {
  std::vector<std::uint8_t> bulk(kBulkBytes);
  std::uint64_t small = 0, answer = 0;
  while (ok) {
    std::uint64_t head = kEnd;
    if (!recvMessage(t, 0, kHeadTag, &head, sizeof head, deadline, kSpinNs)) {
      ok = false;
      return;
    }
    if (head == kEnd) return;
    const std::int64_t spin = kSpinNs;
    const int rounds = head == kBulk ? kBulkRounds : kSmallRounds;
    for (int i = 0; i < rounds && ok; ++i) {
      ok = head == kBulk ? recvMessage(t, 0, kDataTag, bulk.data(), bulk.size(), deadline, spin)
                         : recvMessage(t, 0, kDataTag, &small, sizeof small, deadline, spin);
      ok = ok && sendMessage(t, 0, kDataTag, &answer, sizeof answer, deadline, spin);
    }
  }
}

// Far past these, a thread waited for a CPU: tens of microseconds one way through
// loopback, a few for a switch.
constexpr double kMaxLoopbackOneWay = 500e-6;
constexpr double kMaxSwitch = 50e-6;

}  // namespace

std::optional<TransportPair> tcpPairOnLoopback(Deadline deadline, std::string* why) {
  TransportPair pair;
  if (!makeTcp(pair, deadline, why)) return std::nullopt;
  return pair;
}

bool awaitRequest(Transport& t, TransferRequest& request, Deadline deadline,
                  std::int64_t spinNs) {
  while (!request.done()) {
    const std::uint32_t seen = t.progressSignal().snapshot();
    if (request.done()) break;
    if (!t.waitForProgress(seen, deadline, spinNs) && deadline.expired()) return false;
  }
  return request.status().ok();
}

bool sendMessage(Transport& t, int peer, Tag tag, const void* data, std::size_t bytes,
                 Deadline deadline, std::int64_t spinNs) {
  TransferRequest request;
  t.link(peer).postSend(&request, tag, data, bytes);
  if (awaitRequest(t, request, deadline, spinNs)) return true;
  t.link(peer).cancel(&request);
  return false;
}

bool recvMessage(Transport& t, int peer, Tag tag, void* data, std::size_t bytes,
                 Deadline deadline, std::int64_t spinNs) {
  TransferRequest request;
  t.link(peer).postRecv(&request, tag, data, bytes);
  if (awaitRequest(t, request, deadline, spinNs)) return true;
  t.link(peer).cancel(&request);
  return false;
}

void pinThread(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
}

std::optional<MessageCosts> measureLoopback(int cpuA, int cpuB, ProbeClock::time_point until,
                                            std::string* why) {
  std::string ignored;
  if (why == nullptr) why = &ignored;
  // Past the phase's end, a few seconds to finish what is in flight (a thread pinned to a
  // CPU that other work holds may wait that long for it); a peer that stops answering is a
  // failed measurement, never a hang.
  const Deadline deadline = Deadline::afterSeconds(
      std::max(0.0, std::chrono::duration<double>(until - ProbeClock::now()).count()) + 3.0);
  TransportPair pair;
  if (!makeTcp(pair, deadline, why)) return std::nullopt;
  Best best;
  bool ok0 = true, ok1 = true;
  std::thread leader([&] {
    pinThread(cpuA);
    pair[0]->setDriving(true);
    lead(*pair[0], until, deadline, best, ok0);
    pair[0]->setDriving(false);
  });
  std::thread follower([&] {
    pinThread(cpuB);
    pair[1]->setDriving(true);
    follow(*pair[1], deadline, ok1);
    pair[1]->setDriving(false);
  });
  leader.join();
  follower.join();
  for (auto& t : pair) t->shutdown(Deadline::afterSeconds(1));
  if (!ok0 || !ok1) {
    *why = "a message did not complete in time";
    return std::nullopt;
  }
  if (best.smallWall <= 0 || best.bulkWall <= 0) {
    *why = "no batch finished";
    return std::nullopt;
  }
  MessageCosts out;
  out.oneWay = best.smallWall / 2;
  // A bulk round trip: the 1 MiB message one way and 8 bytes back.
  out.beta = std::max(0.0, best.bulkWall - best.smallWall) / static_cast<double>(kBulkBytes);
  return out;
}

namespace {

// Two threads pinned to `cpu` handing a word back and forth, `self` timing batches of
// hand-overs: each waits for the word's parity that makes it its turn with `await` (which
// also returns once `stop` is set) and hands the turn over with `pass`. Half the best
// round trip; nullopt where no batch finished by `until`.
template <typename Await, typename Pass>
std::optional<double> timeHandOvers(int cpu, ProbeClock::time_point until, Await await, Pass pass) {
  std::atomic<std::uint32_t> turn{0};
  std::atomic<bool> stop{false};
  constexpr std::uint32_t kHandovers = 64;
  double best = 0;
  // The other thread answers: whenever the word is odd, it makes it even again.
  std::thread other([&] {
    pinThread(cpu);
    for (;;) {
      const std::uint32_t seen = await(turn, 1u, stop);
      if (stop.load(std::memory_order_acquire)) return;
      pass(turn, seen + 1);
    }
  });
  std::thread self([&] {
    pinThread(cpu);
    std::uint32_t value = 0;
    // Handing over only works while both run on the one CPU; elsewhere (pinning refused)
    // the figure is a cross-CPU wake-up (or a cache line's trip), still a fair price.
    for (int batch = 0; batch < 2 || ProbeClock::now() < until; ++batch) {
      const auto start = ProbeClock::now();
      for (std::uint32_t i = 0; i < kHandovers; ++i) {
        pass(turn, ++value);
        value = await(turn, 0u, stop);
      }
      const double t = secondsSince(start) / (2.0 * kHandovers);
      if (best == 0 || t < best) best = t;
      if (batch > 1000) break;
    }
    stop.store(true, std::memory_order_release);
    pass(turn, ++value);  // wakes the other thread, which then sees `stop`
  });
  self.join();
  other.join();
  if (best <= 0) return std::nullopt;
  return best;
}

}  // namespace

std::optional<double> measureSwitch(int cpu, ProbeClock::time_point until) {
  auto await = [](std::atomic<std::uint32_t>& turn, std::uint32_t parity, std::atomic<bool>& stop) {
    std::uint32_t v = turn.load(std::memory_order_acquire);
    while (v % 2 != parity && !stop.load(std::memory_order_acquire)) {
      turn.wait(v, std::memory_order_acquire);
      v = turn.load(std::memory_order_acquire);
    }
    return v;
  };
  auto pass = [](std::atomic<std::uint32_t>& turn, std::uint32_t v) {
    turn.store(v, std::memory_order_release);
    turn.notify_one();
  };
  return timeHandOvers(cpu, until, await, pass);
}

std::optional<double> measureYield(int cpu, ProbeClock::time_point until) {
  // As a rank waiting over shared memory does on a host with more ranks than cores.
  auto await = [](std::atomic<std::uint32_t>& turn, std::uint32_t parity, std::atomic<bool>& stop) {
    std::uint32_t v = turn.load(std::memory_order_acquire);
    while (v % 2 != parity && !stop.load(std::memory_order_acquire)) {
      sched_yield();
      v = turn.load(std::memory_order_acquire);
    }
    return v;
  };
  auto pass = [](std::atomic<std::uint32_t>& turn, std::uint32_t v) {
    turn.store(v, std::memory_order_release);
  };
  return timeHandOvers(cpu, until, await, pass);
}

void probeLibraryPaths(const ProbeOptions& options, const std::optional<std::pair<int, int>>& pair,
                       ProbeClock::duration tcpShare, ProbeClock::duration switchShare,
                       const std::function<bool(const char*)>& late, ProbeReport& report) {
  MachineModel& m = report.model;
  const int a = pair ? pair->first : -1, b = pair ? pair->second : -1;
  auto distrusted = [&](const char* name, const std::string& why) {
    report.complete = false;
    report.notes.push_back(strFormat("%s: %s (defaults)", name, why.c_str()));
  };
  ProbeClock::time_point t0 = ProbeClock::now();
  if (!late("loopback")) {
    std::string why;
    const auto tcp = measureLoopback(a, b, ProbeClock::now() + tcpShare, &why);
    const bool contended = options.contended && options.contended("loopback");
    if (!tcp) {
      distrusted("loopback", "the TCP transport over 127.0.0.1: " + why);
    } else if (contended || tcp->oneWay > kMaxLoopbackOneWay) {
      distrusted("loopback", strFormat("untrusted (%.1f us one way: a thread was not running)",
                                       tcp->oneWay * 1e6));
    } else {
      // Over loopback no wire waits: the one-way time is the two kernels' work, the
      // sender's (its send carries the segment to the receiving socket) and the receiver's,
      // so it is CPU time, half at each end.
      m.loopback.overhead = tcp->oneWay / 2;
      m.loopback.alpha = 0;
      if (tcp->beta > 0) m.loopback.beta = tcp->beta;
      report.notes.push_back(strFormat("loopback: the TCP transport over 127.0.0.1, %.1f us one "
                                       "way (CPU time, half at each end), %.2f GB/s (%.1f ms)",
                                       tcp->oneWay * 1e6, 1e-9 / m.loopback.beta,
                                       secondsSince(t0) * 1e3));
    }
  }
  t0 = ProbeClock::now();
  if (!late("switch_cost")) {
    const auto cost = measureSwitch(a, ProbeClock::now() + switchShare);
    const bool contended = options.contended && options.contended("switch_cost");
    if (!cost) {
      distrusted("switch_cost", "no hand-over finished");
    } else if (contended || *cost > kMaxSwitch) {
      distrusted("switch_cost", strFormat("untrusted (%.1f us)", *cost * 1e6));
    } else {
      m.switchCost = *cost;
      report.notes.push_back(strFormat("switch_cost: two threads on CPU %d handing a futex over, "
                                       "%.2f us (%.1f ms)", a, *cost * 1e6, secondsSince(t0) * 1e3));
    }
  }
  t0 = ProbeClock::now();
  if (!late("yield_cost")) {
    // Half of the switch's share: a yield's hand-over is the cheaper of the two.
    const auto cost = measureYield(a, ProbeClock::now() + switchShare / 2);
    const bool contended = options.contended && options.contended("yield_cost");
    if (!cost) {
      distrusted("yield_cost", "no hand-over finished");
    } else if (contended || *cost > kMaxSwitch) {
      distrusted("yield_cost", strFormat("untrusted (%.1f us)", *cost * 1e6));
    } else {
      m.yieldCost = *cost;
      report.notes.push_back(strFormat("yield_cost: two threads on CPU %d handing it over by "
                                       "sched_yield, %.2f us (%.1f ms)",
                                       a, *cost * 1e6, secondsSince(t0) * 1e3));
    }
  }
}

}  // namespace tutti::tuning

// The network probe between two hosts (probe_network.h).
#include "tuning/probe_network.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/strings.h"
#include "transport/tag.h"
#include "tuning/probe_messages.h"

namespace tutti::tuning {
namespace {

using Clock = std::chrono::steady_clock;

constexpr Tag kHeadTag = setupTag(0), kDataTag = setupTag(1), kAnswerTag = setupTag(2);
// The follower answers within a few microseconds of a message's arrival, as the executor's
// waits do while a rank has its core; past this a wait blocks (the other ranks of both hosts
// sleep in the store meanwhile).
constexpr std::int64_t kSpinNs = 200'000;
constexpr int kLatencyBatches = 5;
constexpr std::uint64_t kRoundTrips = 8;
constexpr std::uint64_t kFirstRound = 256 << 10, kLastRound = 64 << 20;
constexpr std::uint64_t kChunksPerRound = 16, kMaxChunk = 1 << 20;
constexpr std::size_t kWindow = 8;  // chunks in flight at each end
constexpr double kLongRound = 10e-3;

enum Kind : std::uint64_t { kEnd = 0, kLatency = 1, kStream = 2 };

// What the leader announces before each batch: its kind, and for a stream its bytes and
// chunk size, for a latency batch its round trips (in `chunk`).
struct Head {
  std::uint64_t kind = kEnd;
  std::uint64_t bytes = 0;
  std::uint64_t chunk = 0;
};

// A bucket smaller than this much of the rate is a packet's worth, not a burst allowance.
constexpr double kLeastBurstSeconds = 1e-3;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::uint64_t chunkOf(std::uint64_t roundBytes) {
  return std::min(kMaxChunk, roundBytes / kChunksPerRound);
}

// `count` messages of `chunk` bytes each under kDataTag, at most kWindow pending at once: sent
// from `buffer` (one chunk, every send reads it), or received into it (kWindow chunks, each
// message into its own slot while pending). Every request still pending when it fails is
// cancelled.
bool stream(Transport& t, int peer, bool sending, char* buffer, std::uint64_t chunk,
            std::uint64_t count, Deadline deadline) {
  std::vector<TransferRequest> requests(count);
  Link& link = t.link(peer);
  auto post = [&](std::uint64_t i) {
    if (sending)
      link.postSend(&requests[i], kDataTag, buffer, chunk);
    else
      link.postRecv(&requests[i], kDataTag, buffer + (i % kWindow) * chunk, chunk);
  };
  std::uint64_t posted = 0;
  for (; posted < std::min<std::uint64_t>(kWindow, count); ++posted) post(posted);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!awaitRequest(t, requests[i], deadline, kSpinNs)) {
      for (std::uint64_t j = i; j < posted; ++j) link.cancel(&requests[j]);
      return false;
    }
    if (posted < count) post(posted++);
  }
  return true;
}

}  // namespace

const StreamRound& fastest(const std::vector<StreamRound>& rounds) {
  return *std::max_element(rounds.begin(), rounds.end(), [](const StreamRound& a, const StreamRound& b) {
    return a.rate() < b.rate();
  });
}

void applyRounds(const std::vector<StreamRound>& rounds, std::optional<double> drained,
                 NetworkCosts& out) {
  if (rounds.empty()) return;
  const StreamRound& last = rounds.back();
  out.roundBytes = last.bytes;
  out.beta = (drained ? *drained : last.seconds) / static_cast<double>(last.bytes);
  out.burstBytes = 0;
  out.lineBeta = 0;
  if (!drained || out.beta <= 0) return;
  // Every byte of the rounds before the drained one passed on a token: the bucket's at the
  // start, or one refilled at the rate meanwhile (the link was busy throughout, but for a
  // round trip between rounds). What a round carried beyond the rate came from the bucket;
  // a round slower than the rate (a sender that waited for a CPU, a stall) took none, and
  // counts for nothing rather than against the others.
  const double rate = 1 / out.beta;
  double burst = 0;
  for (const StreamRound& r : rounds)
    burst += std::max(0.0, static_cast<double>(r.bytes) - rate * r.seconds);
  if (burst < rate * kLeastBurstSeconds) return;
  out.burstBytes = static_cast<std::uint64_t>(burst);
  // The fastest round went at the line's rate while the bucket lasted (the first may be
  // slower, in TCP's slow start): a floor of that rate.
  out.lineBeta = 1 / fastest(rounds).rate();
}

std::optional<NetworkCosts> leadNetworkProbe(Transport& t, int peer, Deadline deadline,
                                             std::string* why) {
  std::string ignored;
  if (why == nullptr) why = &ignored;
  const Clock::time_point start = Clock::now();
  auto failed = [&](const char* what) -> std::optional<NetworkCosts> {
    const Status health = t.health();
    *why = strFormat("%s did not complete%s", what,
                     health.ok() ? " in time" : (": " + health.toString()).c_str());
    return std::nullopt;
  };
  NetworkCosts out;
  std::uint64_t word = 0;
  Head head{kLatency, sizeof word, kRoundTrips};
  for (int b = 0; b < kLatencyBatches; ++b) {
    if (!sendMessage(t, peer, kHeadTag, &head, sizeof head, deadline, kSpinNs))
      return failed("a head");
    const Clock::time_point t0 = Clock::now();
    for (std::uint64_t i = 0; i < kRoundTrips; ++i) {
      if (!sendMessage(t, peer, kDataTag, &word, sizeof word, deadline, kSpinNs) ||
          !recvMessage(t, peer, kDataTag, &word, sizeof word, deadline, kSpinNs))
        return failed("an 8-byte round trip");
    }
    const double oneWay = secondsSince(t0) / (2.0 * kRoundTrips);
    if (out.oneWay == 0 || oneWay < out.oneWay) out.oneWay = oneWay;
  }
  std::vector<char> chunk(kMaxChunk, 1);
  // One round of `bytes`: from the first send to the follower's word that the last chunk
  // arrived.
  auto round = [&](std::uint64_t bytes) -> std::optional<double> {
    head = {kStream, bytes, chunkOf(bytes)};
    if (!sendMessage(t, peer, kHeadTag, &head, sizeof head, deadline, kSpinNs)) return std::nullopt;
    const Clock::time_point t0 = Clock::now();
    if (!stream(t, peer, true, chunk.data(), head.chunk, bytes / head.chunk, deadline) ||
        !recvMessage(t, peer, kAnswerTag, &word, sizeof word, deadline, kSpinNs))
      return std::nullopt;
    return secondsSince(t0);
  };
  std::vector<StreamRound> rounds;
  for (std::uint64_t bytes = kFirstRound;; bytes *= 4) {
    const std::optional<double> seconds = round(bytes);
    if (!seconds) return failed("a stream");
    rounds.push_back({bytes, *seconds});
    if (*seconds >= kLongRound || bytes >= kLastRound) break;
  }
  // The last round again, right after it: on a link shaped by a token bucket, the rounds
  // before may have passed at the line's rate until the bucket was empty, and the last one
  // may still have had some of it; this one finds the bucket drained.
  const std::optional<double> again = round(rounds.back().bytes);
  if (!again) return failed("a stream");
  applyRounds(rounds, again, out);
  head = Head{};
  if (!sendMessage(t, peer, kHeadTag, &head, sizeof head, deadline, kSpinNs))
    return failed("the end");
  out.seconds = secondsSince(start);
  return out;
}

bool followNetworkProbe(Transport& t, int leader, Deadline deadline, std::string* why) {
  std::string ignored;
  if (why == nullptr) why = &ignored;
  auto failed = [&](const std::string& what) {
    const Status health = t.health();
    *why = what + (health.ok() ? " did not complete in time" : ": " + health.toString());
    return false;
  };
  std::vector<char> slots;
  for (;;) {
    Head head;
    if (!recvMessage(t, leader, kHeadTag, &head, sizeof head, deadline, kSpinNs))
      return failed("the leader's head");
    if (head.kind == kEnd) return true;
    if (head.kind == kLatency && head.bytes == sizeof(std::uint64_t) && head.chunk <= 1000) {
      std::uint64_t word = 0;
      for (std::uint64_t i = 0; i < head.chunk; ++i) {
        if (!recvMessage(t, leader, kDataTag, &word, sizeof word, deadline, kSpinNs) ||
            !sendMessage(t, leader, kDataTag, &word, sizeof word, deadline, kSpinNs))
          return failed("an 8-byte round trip");
      }
      continue;
    }
    if (head.kind != kStream || head.chunk == 0 || head.chunk > kMaxChunk ||
        head.bytes > kLastRound || head.bytes % head.chunk != 0) {
      *why = strFormat("the leader sent a malformed head (kind %llu, %llu bytes, %llu)",
                       static_cast<unsigned long long>(head.kind),
                       static_cast<unsigned long long>(head.bytes),
                       static_cast<unsigned long long>(head.chunk));
      return false;
    }
    slots.resize(std::max<std::size_t>(slots.size(), kWindow * head.chunk));
    if (!stream(t, leader, false, slots.data(), head.chunk, head.bytes / head.chunk, deadline))
      return failed("a stream");
    const std::uint64_t done = head.bytes;
    if (!sendMessage(t, leader, kAnswerTag, &done, sizeof done, deadline, kSpinNs))
      return failed("the answer");
  }
}

void applyNetworkCosts(const NetworkCosts& costs, MachineModel& model) {
  LinkCost& net = model.paths[static_cast<int>(PathClass::kNetwork)];
  if (model.loopback.overhead > 0) net.overhead = model.loopback.overhead;
  net.alpha = std::max(0.0, costs.oneWay - 2 * net.overhead);
  net.beta = costs.beta;
  // The bucket empties at the NIC's own speed (the host probe's, from the system), where
  // that is above what the stream's fastest round showed (a floor of it).
  const double nominal = model.nicBandwidth;
  model.nicBandwidth = 1 / costs.beta;
  model.nicBurstBytes = costs.burstBytes;
  model.nicLineBandwidth =
      costs.burstBytes > 0 && costs.lineBeta > 0 ? std::max(1 / costs.lineBeta, nominal) : 0;
}

std::string implausibleNetwork(const NetworkCosts& costs) {
  if (!std::isfinite(costs.oneWay) || !std::isfinite(costs.beta) || costs.oneWay <= 0 ||
      costs.beta <= 0)
    return strFormat("not a measurement (%g s one way, %g s/B)", costs.oneWay, costs.beta);
  if (costs.oneWay > 1.0) return strFormat("%.1f s one way", costs.oneWay);
  return "";
}

}  // namespace tutti::tuning

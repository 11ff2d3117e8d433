// Flat exchanges over shared memory (FlatExchange::flatExchange): the one round of a direct
// all-reduce, all-gather or barrier of up to 8 KiB per rank, without messages. Each rank
// writes its contribution into a slot of its own segment (FlatSlot, segment.h) and reads
// every other rank's where it lies, so a call costs one store of a line or two, one read of
// each peer's, and none of a message's bookkeeping (queues, requests, ring tails).
//
// Waiting is the transport's: a short spin on the peers' lines, then waitForProgress(),
// which watches the same lines (flatWatch_), passes over the links (a message of another
// call from a peer shows a mismatch there, CallChecker::onArrival), finds dead peers and
// aborts, yields and sleeps on the doorbell. A publication wakes a sleeping peer exactly as
// a message does (the slot's seq is stored sequentially consistent before the peer's
// sleeping flag is read; Segment::wakeIfSleeping).

#include <cstring>

#include "base/assert.h"
#include "base/fd.h"
#include "base/strings.h"
#include "base/wait.h"
#include "transport/call_checker.h"
#include "transport/shm/shm_transport.h"

namespace tutti::shm {

namespace {
// Turns of a first spin on the peers' lines before the general wait (which passes over the
// links first) takes over. Short: where ranks outnumber cores the peer waited for may need
// this very core. Alternating runs, 8 bytes (time against 64 turns, or against none where
// the spin budget is 0): 2 ranks 0.95, 4 ranks on 2 cores 0.95; 8 ranks 64 turns took 1.5
// times as long as 16, and 16 1.2 times as long as 4.
constexpr int kFlatSpins = 4;
// The same where every rank of the host has a core of its own: nobody needs this core, and
// the general wait's turns read several more lines (the doorbell, the rings' arrivals)
// between two looks at the slots. 2 ranks, 8 bytes, alternating runs on an AMD EPYC: 0.84
// of the time with 4 turns (64, 1000 and 100000 turns alike).
constexpr int kFlatSpinsWithCores = 64;

// Writes this rank's contribution to `call` into `mine` and publishes it.
inline void publish(FlatSlot& mine, const FlatCall& call) {
  // Marked as being rewritten first: a reader checking stamps on the side must not pair
  // the last call's seq with this call's stamp.
  // (Release stores: a reader whose acquire load sees either then sees seq at 0 or later.)
  mine.seq.store(0, std::memory_order_relaxed);
  mine.stampWhat.store(call.stamp.what, std::memory_order_release);
  mine.stampCount.store(call.stamp.count, std::memory_order_release);
  // Stored only when it changes: the line stays shared with the readers (FlatSlot).
  if (mine.stampOpen.load(std::memory_order_relaxed) != call.stamp.open)
    mine.stampOpen.store(call.stamp.open, std::memory_order_release);
  mine.bytes = static_cast<std::uint32_t>(call.bytes);
  if (call.bytes > 0) std::memcpy(mine.data, call.data, call.bytes);
  mine.seq.store(call.seq + 1, std::memory_order_seq_cst);  // publishes; see wakeIfSleeping
}

// The bytes rank `r` must contribute to `call`.
inline std::size_t wantedBytes(const FlatCall& call, int r) {
  return call.peerBytes != nullptr ? call.peerBytes[static_cast<std::size_t>(r)] : call.bytes;
}

// Whether a published contribution belongs to `call` as rank `r`'s: the same call, and the
// size expected of `r`.
inline bool fits(const FlatSlot& slot, const FlatCall& call, int r) {
  return (slot.sameCall(call.stamp) || !stampsConflict(slot.stamp(), call.stamp)) &&
         slot.bytes == wantedBytes(call, r);
}

// Where one look at the peers' slots got to.
struct FlatScan {
  std::size_t next = 0;   // local[next] is the first peer not seen (local.size(): none left)
  std::uint64_t sum = 0;  // the seq of every slot read, for the wait (flatSeen_)
  int bad = -1;           // a rank whose contribution does not fit the call (fits)
};

// Reads the slots of the peers local[from...] for `call`: a peer's contribution counts
// (its view is set) once it and every one before it are in. Peers before `from` are done:
// their slots stay put until this rank publishes again.
inline FlatScan scan(const std::vector<int>& local, const std::vector<Segment>& peers,
                     const FlatCall& call, std::uint64_t parity, std::size_t from,
                     const char** views) {
  const std::uint64_t expected = call.seq + 1;
  FlatScan out;
  out.next = from;
  std::size_t missing = local.size();
  for (std::size_t i = from; i < local.size(); ++i) {
    const int r = local[i];
    const FlatSlot& slot = peers[static_cast<std::size_t>(r)].flat(parity);
    const std::uint64_t seq = slot.seq.load(std::memory_order_seq_cst);
    out.sum += seq;
    if (seq != expected) {
      if (missing == local.size()) missing = i;
      continue;
    }
    if (missing != local.size()) continue;  // checked once all before it are in
    if (!fits(slot, call, r)) {
      out.bad = r;
      return out;
    }
    views[r] = slot.data;
    out.next = i + 1;
  }
  return out;
}

}  // namespace

std::size_t ShmTransport::flatBytes() const {
  return local_.size() + 1 == static_cast<std::size_t>(size_) ? kFlatBytes : 0;
}

Status ShmTransport::flatExchange(const FlatCall& call, const char** views, FlatStop* stop) {
  TUTTI_ASSERT(flatBytes() > 0);
  TUTTI_ASSERT_CMP(call.bytes, <=, kFlatBytes);
  if (failed_.load(std::memory_order_acquire)) return health();
  const std::uint64_t parity = call.index & 1;
  FlatSlot& mine = own_.flat(parity);
  publish(mine, call);
  for (int r : local_) peers_[static_cast<std::size_t>(r)].wakeIfSleeping();
  views[rank_] = mine.data;
  std::size_t next = 0;  // local_[next] is the first peer whose contribution was not seen
  // A failure names the first rank still missing (the hang report says whom each rank
  // waited for, whatever ended its wait).
  auto stopped = [&](Status status) {
    if (stop->peer < 0 && next < local_.size()) stop->peer = local_[next];
    return status;
  };
  if (call.checker != nullptr && !call.stamp.empty()) {
    // Messages of this call that arrived early, from a peer running another call, were
    // kept: begin() checks them.
    Status early = call.checker->begin(call.seq, call.stamp);
    if (!early.ok()) return stopped(std::move(early));
  }
  ScopeExit unwatch([&] { flatWatch_ = -1; });
  const int spinTurns = coreEach_ ? kFlatSpinsWithCores : kFlatSpins;
  int spins = 0;
  while (true) {
    const FlatScan seen = scan(local_, peers_, call, parity, next, views);
    if (seen.bad >= 0) return flatRefused(call, parity, seen.bad, stop);
    next = seen.next;
    if (next == local_.size()) return flatDone(call, parity);
    if (++spins < spinTurns) {
      cpuRelax();
      continue;
    }
    if (failed_.load(std::memory_order_acquire)) return stopped(health());
    // Until a watched slot's seq moves off the sum (every rewrite and publication moves one)
    // or something else happens; the sum comes from the very reads that found a peer missing,
    // so a publication after them cannot be missed.
    flatWatch_ = static_cast<int>(parity);
    flatSeen_ = seen.sum + static_cast<std::uint64_t>(next) * (call.seq + 1);
    const bool progressed = waitForProgress(progress_.snapshot(), call.deadline, call.spinNs);
    if (!progressed && call.deadline.expired())
      return stopped(Status(ErrorCode::kTimeout,
                            strFormat("rank %d (flat exchange)", local_[next]), local_[next]));
    if (failed_.load(std::memory_order_acquire)) return stopped(health());
    spins = 0;
  }
}

Status ShmTransport::flatDone(const FlatCall& call, std::uint64_t parity) {
  // The next exchange writes the other slot, which the peers last read an exchange ago: ask
  // for its line now, so that it is likely this core's again by then.
  prefetchForWrite(&own_.flat(parity + 1));
  // Every peer published this call after whatever it sent for earlier ones: a message of an
  // earlier call still unread is in the rings now, and is checked now and then.
  if (call.seq % kStrayCheckCalls == 0) {
    readStrays(call.seq);
    if (failed_.load(std::memory_order_acquire)) return health();
  }
  return Status::Ok();
}

Status ShmTransport::flatRefused(const FlatCall& call, std::uint64_t parity, int r,
                                 FlatStop* stop) const {
  const FlatSlot& slot = peers_[static_cast<std::size_t>(r)].flat(parity);
  stop->peer = r;
  if (!slot.sameCall(call.stamp) && stampsConflict(slot.stamp(), call.stamp)) {
    stop->peerStamp = slot.stamp();
    return Status(ErrorCode::kMismatch,
                  strFormat("rank %d contributed to call #%llu under another stamp", r,
                            static_cast<unsigned long long>(call.seq)),
                  r);
  }
  return Status(ErrorCode::kProtocolError,
                strFormat("rank %d contributed %u bytes to call #%llu, this rank expected %zu",
                          r, slot.bytes, static_cast<unsigned long long>(call.seq),
                          wantedBytes(call, r)),
                r);
}

}  // namespace tutti::shm

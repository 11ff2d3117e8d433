#include "transport/call_checker.h"

#include <thread>

#include "base/strings.h"

namespace tutti {
namespace {

constexpr std::uint64_t kSeqBits = 24;
constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << kSeqBits) - 1;

}  // namespace

bool CallChecker::writeEarly(Entry& e, std::uint64_t seq, const CallStamp& stamp,
                             int from) const {
  std::uint64_t current = e.seq.load(std::memory_order_relaxed);
  // Busy, or another thread's stamp for this very call published since our read(): never
  // overwrite it unread (the caller reads it again and compares).
  if (current == kBusy || current == seq) return false;
  if (concurrent_) {
    // Several receiving threads (hybrid: shm's caller and TCP's loop; TCP: its loop and a
    // driving caller) may race for it: the loser waits for the winner's stamp and compares
    // (onArrival), or it would never be checked against it.
    if (!e.seq.compare_exchange_strong(current, kBusy, std::memory_order_acq_rel)) return false;
  } else {
    e.seq.store(kBusy, std::memory_order_relaxed);
  }
  // Release stores: a reader whose acquire load sees a new field also sees kBusy (or a
  // later sequence) when it reads the sequence again, so it never takes a torn entry. No
  // standalone fences: ThreadSanitizer cannot check them (and GCC refuses them under it).
  e.what.store(stamp.what, std::memory_order_release);
  e.count.store(stamp.count, std::memory_order_release);
  e.open.store(stamp.open, std::memory_order_release);
  e.peer.store(from, std::memory_order_release);
  // Sequentially consistent when begin() may run meanwhile: the arrival side's half of the
  // store-then-load handshake (see the header).
  // (Two stores, not one with a computed order: GCC treats an order that is not a constant
  // as sequentially consistent.)
  if (concurrent_) e.seq.store(seq, std::memory_order_seq_cst);
  else e.seq.store(seq, std::memory_order_release);
  return true;
}

bool CallChecker::read(const Entry& e, std::uint64_t seq, CallStamp* stamp, int* peer) {
  // Sequentially consistent first load: the reading half of the handshake between
  // begin() and onArrival(); acquire loads of the fields keep the re-check after them.
  if (e.seq.load(std::memory_order_seq_cst) != seq) return false;
  stamp->what = e.what.load(std::memory_order_acquire);
  stamp->count = e.count.load(std::memory_order_acquire);
  stamp->open = e.open.load(std::memory_order_acquire);
  *peer = static_cast<int>(e.peer.load(std::memory_order_acquire));
  return e.seq.load(std::memory_order_relaxed) == seq;  // not rewritten meanwhile
}

Status CallChecker::conflict(int peer, std::uint64_t seq, const CallStamp& theirs, int otherRank,
                             const CallStamp& other) const {
  return Status(ErrorCode::kMismatch,
                strFormat("rank %d called %s while rank %d called %s", peer,
                          describe_(theirs, seq).c_str(), otherRank,
                          describe_(other, seq).c_str()),
                peer);
}

std::uint64_t CallChecker::widen(std::uint64_t seq24, std::uint64_t latest) const {
  // The full number closest to `latest` whose low bits are seq24.
  const std::uint64_t half = std::uint64_t{1} << (kSeqBits - 1);
  std::uint64_t full = (latest & ~kSeqMask) | seq24;
  if (full + half < latest) full += kSeqMask + 1;
  else if (full > latest + half && full > kSeqMask) full -= kSeqMask + 1;
  return full;
}

Status CallChecker::begin(std::uint64_t seq, const CallStamp& stamp) {
  // This thread is the history's only writer: no compare-and-swap needed.
  Entry& mine = history_[seq % kWindow];
  mine.seq.store(kBusy, std::memory_order_relaxed);
  mine.what.store(stamp.what, std::memory_order_release);
  mine.count.store(stamp.count, std::memory_order_release);
  mine.open.store(stamp.open, std::memory_order_release);
  mine.peer.store(rank_, std::memory_order_release);
  begun_.store(seq + 1, std::memory_order_release);
  // Publish (sequentially consistent), then look at what arrived early (a sequentially
  // consistent load, in read()); onArrival does the converse with the early entry and this
  // one, so in the single order of those operations one of the two sees the other.
  if (concurrent_) mine.seq.store(seq, std::memory_order_seq_cst);
  else mine.seq.store(seq, std::memory_order_release);  // see writeEarly
  const Entry& early = early_[seq % kWindow];
  CallStamp theirs;
  int peer = -1;
  if (read(early, seq, &theirs, &peer) && stampsConflict(theirs, stamp))
    return conflict(peer, seq, theirs, rank_, stamp);
  return Status::Ok();
}

Status CallChecker::checkHistory(int peer, std::uint64_t seq, const CallStamp& stamp) const {
  CallStamp mine;
  int self = -1;
  if (read(history_[seq % kWindow], seq, &mine, &self) && stampsConflict(stamp, mine))
    return conflict(peer, seq, stamp, rank_, mine);
  return Status::Ok();
}

Status CallChecker::onArrival(int peer, Tag tag, const CallStamp& stamp) {
  if (!isCollectiveTag(tag) || stamp.empty()) return Status::Ok();
  const std::uint64_t seq24 = (tag >> 24) & kSeqMask;
  const std::uint64_t begun = begun_.load(std::memory_order_acquire);
  const std::uint64_t seq = widen(seq24, begun == 0 ? 0 : begun - 1);
  if (seq < begun) return checkHistory(peer, seq, stamp);
  // Early (the peer is ahead), or begin() is under way. Leave the stamp for begin(),
  // unless another peer's is there already.
  Entry& early = early_[seq % kWindow];
  for (int tries = 0;; ++tries) {
    CallStamp prior;
    int priorPeer = -1;
    if (read(early, seq, &prior, &priorPeer)) {
      if (stampsConflict(stamp, prior)) return conflict(peer, seq, stamp, priorPeer, prior);
      break;
    }
    if (writeEarly(early, seq, stamp, peer)) break;
    // Another thread is writing the entry: a few stores, done at once unless that thread
    // was preempted, so look again (yielding after a few tries).
    if (tries >= 64) std::this_thread::yield();
  }
  // Published; now see whether the call was begun meanwhile (begin() may have missed it).
  Status found = checkHistory(peer, seq, stamp);
  // A sequentially consistent load after the published entry: close() stores the flag,
  // then scans the entries, so one of the two sees the other.
  if (found.ok() && closed_.load(std::memory_order_seq_cst)) return neverCalled(peer, seq, stamp);
  return found;
}

Status CallChecker::neverCalled(int peer, std::uint64_t seq, const CallStamp& stamp) const {
  return Status(ErrorCode::kMismatch,
                strFormat("rank %d called %s, which rank %d never called: it destroyed the "
                          "communicator first",
                          peer, describe_(stamp, seq).c_str(), rank_),
                peer);
}

Status CallChecker::close() {
  closed_.store(true, std::memory_order_seq_cst);
  return unbegunCall();
}

Status CallChecker::unbegunCall() const {
  const std::uint64_t begun = begun_.load(std::memory_order_acquire);
  for (const Entry& e : early_) {
    const std::uint64_t seq = e.seq.load(std::memory_order_acquire);
    if (seq == kEmpty || seq == kBusy || seq < begun) continue;
    CallStamp stamp;
    int peer = -1;
    if (!read(e, seq, &stamp, &peer)) continue;
    return neverCalled(peer, seq, stamp);
  }
  return Status::Ok();
}

}  // namespace tutti

// Failure in the shared-memory transport: health, the abort record every peer gets (the
// first failure, naming the rank at fault), peers found dead through their pidfd, and
// leaving (shutdown). Set-up is shm_transport.cc's, progress and waiting shm_progress.cc's.

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/assert.h"
#include "base/log.h"
#include "base/strings.h"
#include "transport/shm/shm_link.h"
#include "transport/shm/shm_transport.h"

namespace tutti::shm {

Status ShmTransport::health() const {
  // Asked on every turn of the executor's loop: healthy is answered without the mutex.
  // failed_ is set (under the mutex) before health_, so a reader that sees it unset has
  // nothing to read, and one that sees it set reads health_ under the mutex.
  if (!failed_.load(std::memory_order_acquire) &&
      own_.control().abortState.load(std::memory_order_acquire) != 2)
    return Status();
  std::lock_guard<SpinLock> lock(mutex_);
  // A peer's abort counts before this rank's next progress pass adopts it.
  if (!failed_ && own_.control().abortState.load(std::memory_order_acquire) == 2)
    return abortRecord();
  return health_;
}

Status ShmTransport::abortRecord() const {
  const Control& c = own_.control();
  const int blamed = c.abortPeer >= 0 && c.abortPeer < size_ ? c.abortPeer : Status::kNoRank;
  return Status(static_cast<ErrorCode>(c.abortCode),
                std::string(c.abortText, strnlen(c.abortText, kAbortTextBytes)), blamed);
}

bool ShmTransport::peerDead(int peer) const {
  const int pidfd = pidfds_[static_cast<std::size_t>(peer)];
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;  // readable once the process has exited
  }
  return kill(pids_[static_cast<std::size_t>(peer)], 0) != 0 && errno == ESRCH;
}

Status ShmTransport::deathOf(int peer) const {
  return Status(ErrorCode::kPeerFailure,
                strFormat("rank %d (pid %d) died", peer, pids_[static_cast<std::size_t>(peer)]),
                peer);
}

void ShmTransport::checkPeersLocked(DoneList& done) {
  for (int r : local_) {
    if (failed_ || own_.left(r).load(std::memory_order_acquire) != 0) continue;
    // It may have left properly just now: its flag is set before it exits.
    if (peerDead(r) && own_.left(r).load(std::memory_order_acquire) == 0)
      failLocked(deathOf(r), done);
  }
}

void ShmTransport::writeAbortTo(int peer, const Status& status) {
  const Segment& segment = peers_[static_cast<std::size_t>(peer)];
  if (segment.base() == nullptr) return;
  Control& c = segment.control();
  std::uint32_t expected = 0;
  if (!c.abortState.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  c.abortCode = static_cast<std::int32_t>(status.code());
  c.abortPeer = status.peerRank();
  c.abortFrom = rank_;
  const std::string& text = status.message();
  const std::size_t len = std::min(text.size(), kAbortTextBytes - 1);
  std::memcpy(c.abortText, text.data(), len);
  c.abortText[len] = '\0';
  c.abortState.store(2, std::memory_order_release);
  segment.ring();
}

void ShmTransport::failLocked(const Status& status, DoneList& done) {
  if (failed_) return;
  failed_.store(true, std::memory_order_release);
  health_ = status;
  // A peer's abort that arrived first is the root cause; this failure may be its symptom
  // (a read from a rank that already left because of it).
  if (own_.control().abortState.load(std::memory_order_acquire) == 2) health_ = abortRecord();
  TUTTI_WARN(kShm, "rank %d: shared-memory transport failed: %s", rank_, health_.toString().c_str());
  for (int r : local_) {
    writeAbortTo(r, health_);
    links_[static_cast<std::size_t>(r)]->failAllLocked(health_, done);
  }
  progress_.notify();  // waiters re-check health even when no request was pending
}

void ShmTransport::fail(const Status& status) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    failLocked(status, done);
  }
  finish(done);
}

void ShmTransport::shutdown(Deadline deadline) {
  {
    std::lock_guard<SpinLock> lock(mutex_);
    if (shutDown_) return;
  }
  // Sends still queued (a peer has not made room yet) are flushed, within the deadline.
  while (true) {
    const std::uint32_t seen = progress_.snapshot();
    {
      std::lock_guard<SpinLock> lock(mutex_);
      bool pending = false;
      for (const auto& l : links_) pending = pending || (l && l->sendsPendingLocked());
      if (!pending || failed_ || deadline.expired()) break;
    }
    waitForProgress(seen, deadline, 0);
  }
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    shutDown_ = true;
    // A failed communicator says why it leaves. A peer's abort that this rank only read
    // (health() reports it before a progress pass adopts it, and a call refused on it
    // never made one) is adopted now, which passes it on to every peer: the peer that
    // wrote it may not have reached them yet, and a peer that saw this rank leave first
    // would blame it instead of the culprit.
    checkAbortLocked(done);
    for (int r : local_) {
      const Segment& peer = peers_[static_cast<std::size_t>(r)];
      peer.left(rank_).store(1, std::memory_order_release);
      peer.ring();
    }
  }
  finish(done);
}

}  // namespace tutti::shm

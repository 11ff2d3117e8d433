// The rendezvous path of a shared-memory link: a large message copied once between the
// processes, by the kernel (process_vm_readv / process_vm_writev) or through a mapping of a
// memAlloc buffer, in pieces that either end may claim (RndvShare, segment.h): the
// receiver's reads, the sender's help, two-way exchanges left to each sender, and the
// receive's completion and ack. The ring path is shm_link_send.cc (sending) and
// shm_link.cc (receiving).

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/assert.h"
#include "base/log.h"
#include "base/strings.h"
#include "transport/shm/shm_link.h"
#include "transport/shm/shm_transport.h"

namespace tutti::shm {

const char* ShmLink::mappedPeer(const BufferRef& buffer, std::uint64_t remote,
                                std::size_t bytes) const {
  if (!buffer.valid()) return nullptr;
  return owner_->peerBuffers_.translate(owner_->pids_[static_cast<std::size_t>(peer_)], buffer,
                                        remote, bytes);
}

Status ShmLink::copyWithPeer(bool read, char* local, std::uint64_t remote, std::size_t bytes,
                             std::size_t msgBytes, const BufferRef& buffer) const {
  if (const char* mapped = mappedPeer(buffer, remote, bytes); mapped != nullptr) {
    const auto copy = owner_->options_.copy;
    if (read)
      copy(local, mapped, bytes, msgBytes);
    else
      copy(const_cast<char*>(mapped), local, bytes, msgBytes);
    owner_->mappedBytes_.fetch_add(bytes, std::memory_order_relaxed);
    return Status::Ok();
  }
  const int pid = owner_->pids_[static_cast<std::size_t>(peer_)];
  std::size_t done = 0;
  while (done < bytes) {
    iovec mine{local + done, bytes - done};
    iovec theirs{reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t n = read ? process_vm_readv(pid, &mine, 1, &theirs, 1, 0)
                           : process_vm_writev(pid, &mine, 1, &theirs, 1, 0);
    if (n <= 0) {
      const int error = n == 0 ? 0 : errno;
      // ESRCH: the peer is gone (died mid-message); anything else is a real fault.
      if (error == ESRCH || owner_->peerDead(peer_)) return owner_->deathOf(peer_);
      return Status(ErrorCode::kSystemError,
                    strFormat("%s a %zu-byte message %s rank %d with %s: %s",
                              read ? "reading" : "writing", msgBytes, read ? "from" : "to", peer_,
                              read ? "process_vm_readv" : "process_vm_writev",
                              error == 0 ? "nothing copied" : std::strerror(error)),
                    peer_);
    }
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

namespace {

constexpr std::uint64_t kFrontMask = 0xffffffffull;
std::uint64_t frontOf(std::uint64_t claim) { return claim & kFrontMask; }
std::uint64_t backOf(std::uint64_t claim) { return claim >> 32; }
std::uint64_t chunksOf(std::uint64_t bytes) {
  const std::uint64_t piece = shareChunkBytes(bytes);
  return (bytes + piece - 1) / piece;
}

// Claims half of the pieces nobody has claimed yet (at least one) from the front or the
// back: few system calls when the other end is busy, balanced ends when both copy (guided
// self-scheduling); all of them when the other end claims none (RndvShare::senderCopies).
// Returns how many, 0 when none are left; *first is the lowest claimed.
std::uint64_t claimPieces(RndvShare& share, std::uint64_t chunks, bool fromBack, bool all,
                          std::uint64_t* first) {
  std::uint64_t c = share.claim.load(std::memory_order_acquire);
  while (frontOf(c) + backOf(c) < chunks) {
    const std::uint64_t left = chunks - frontOf(c) - backOf(c);
    const std::uint64_t k = all ? left : std::max<std::uint64_t>(1, left / 2);
    const std::uint64_t next = fromBack ? c + (k << 32) : c + k;
    if (share.claim.compare_exchange_weak(c, next, std::memory_order_acq_rel,
                                          std::memory_order_acquire)) {
      *first = fromBack ? chunks - backOf(c) - k : frontOf(c);
      return k;
    }
  }
  return 0;
}

// How long a failing receiver waits for the peer to finish the pieces it is writing (one
// claim, at most half a message: milliseconds unless the peer is descheduled or stopped).
constexpr double kHelperWaitSec = 10;

}  // namespace

void ShmLink::readCombiningLocked(TransferRequest* request, const Offer& offer,
                                  DoneList& done) {
  const std::uint64_t bytes = request->bytes;
  char* bounce = owner_->bounce_.data();
  const std::size_t piece = owner_->bounce_.size();
  // A memAlloc buffer is reduced straight from this process's mapping of it.
  const char* mapped = mappedPeer(offer.buffer, offer.remoteAddr, bytes);
  if (mapped != nullptr) owner_->mappedBytes_.fetch_add(bytes, std::memory_order_relaxed);
  Status status;
  for (std::uint64_t at = 0; at < bytes && status.ok(); at += piece) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(piece, bytes - at));
    if (mapped != nullptr) {
      request->combine->take(at, mapped + at, n);
      continue;
    }
    status = copyWithPeer(true, bounce, offer.remoteAddr + at, n, bytes, BufferRef{});
    if (status.ok()) request->combine->take(at, bounce, n);
  }
  if (!status.ok()) {
    owner_->failLocked(status, done);
    completeLocked(request, owner_->health_, done);  // in no queue: failAll missed it
    return;
  }
  request->combined = true;
  finishRendezvousLocked(request, offer.rndvId, offer.rndvSeq, false, done);
}

void ShmLink::readRendezvousLocked(TransferRequest* request, const Offer& offer, DoneList& done) {
  const std::uint64_t remoteAddr = offer.remoteAddr, rndvId = offer.rndvId,
                      rndvSeq = offer.rndvSeq;
  TUTTI_ASSERT_CMP(rndvId, <, kRndvSlots);
  // Read through the cache rather than into staging and out again: a message that is
  // reduced on arrival costs one pass over memory instead of three.
  if (request->combine != nullptr && !owner_->bounce_.empty() &&
      owner_->bounce_.size() % request->combine->granule() == 0) {
    readCombiningLocked(request, offer, done);
    return;
  }
  const std::uint64_t bytes = request->bytes;
  const std::uint64_t chunks = chunksOf(bytes);
  RndvShare& share = peerSegment_->share(owner_->rank(), rndvId);
  // A message of one piece is read in one call, unless it is half of an exchange from a
  // heap buffer into a memAlloc one: its sender then writes it through its mapping of the
  // destination, a memcpy where this rank's read would be the kernel's copy (2 ranks,
  // in-place 64 KiB all-to-all from memAlloc buffers, whose sends leave from scratch).
  const BufferRef destBuffer = findUserBuffer(request->data, bytes);
  const bool shared =
      chunks > 1 || (!offer.buffer.valid() && destBuffer.valid() && exchangingLocked(bytes));
  if (!shared) {  // the whole message in one call
    const Status status =
        copyWithPeer(true, request->data, remoteAddr, bytes, bytes, offer.buffer);
    if (!status.ok()) {
      owner_->failLocked(status, done);
      completeLocked(request, owner_->health_, done);  // in no queue: failAll missed it
      return;
    }
    finishRendezvousLocked(request, rndvId, rndvSeq, false, done);
    return;
  }
  // A two-way exchange (exchangingLocked) is left to the sender: each end then writes its
  // own message, from its own cache, with one system call (2 ranks, 1 MiB all-gather from
  // heap buffers: 0.74 of the time of both ends reading).
  const bool exchange = exchangingLocked(bytes);
  // Offered whether or not the sender will help: one that cannot or is busy claims none.
  share.dest.store(reinterpret_cast<std::uint64_t>(request->data), std::memory_order_relaxed);
  share.claim.store(0, std::memory_order_relaxed);
  share.written.store(0, std::memory_order_relaxed);
  share.senderCopies.store(exchange ? 1 : 0, std::memory_order_relaxed);
  share.destBuffer = destBuffer;
  share.seq.store(rndvSeq, std::memory_order_release);
  peerSegment_->ring();  // the sender's waiter looks at its shares on its next pass
  // The id is the sender's and stays busy until the ack: no other message holds it.
  TUTTI_ASSERT(helped_[rndvId].request == nullptr);
  Helped& h = helped_[rndvId];
  h = Helped{request, rndvSeq, chunks, remoteAddr, offer.buffer, !exchange};
  ++helpedCount_;
  // Found while posting the receive, a message that could be exchanged waits for this
  // rank's next pass (usually its wait, right after it has issued its own sends), which
  // can tell an exchange; others are read now.
  if (!exchange && !(deferReads_ && owner_->leavesExchangeToSender(peer_, bytes))) {
    readClaimsLocked(rndvId, done);
    finishHelpedLocked(rndvId, done);  // at once when the sender wrote no piece still open
  }
}

bool ShmLink::startDeferredLocked(DoneList& done) {
  if (helpedCount_ == 0) return false;
  bool moved = false;
  for (std::size_t id = 0; id < kRndvSlots && !owner_->failed_; ++id) {
    Helped& h = helped_[id];
    if (h.request == nullptr || !h.reads) continue;
    if (exchangingLocked(h.request->bytes)) {
      h.reads = false;
      // The rest in one claim.
      peerSegment_->share(owner_->rank(), id).senderCopies.store(1, std::memory_order_relaxed);
    } else {
      moved = readClaimsLocked(id, done) || moved;
    }
  }
  return moved;
}

bool ShmLink::exchangingLocked(std::uint64_t bytes) const {
  if (rndvCount_ == 0 || !owner_->leavesExchangeToSender(peer_, bytes)) return false;
  for (std::size_t id = 0; id < kRndvSlots; ++id)
    if (rndvInflight_[id] != nullptr &&
        own_->ack(peer_, id).load(std::memory_order_acquire) != rndvSeqs_[id])
      return true;
  return false;
}

bool ShmLink::readClaimsLocked(std::size_t id, DoneList& done) {
  Helped& h = helped_[id];
  h.reads = false;
  TransferRequest* request = h.request;
  RndvShare& share = peerSegment_->share(owner_->rank(), id);
  const std::uint64_t bytes = request->bytes;
  const std::uint64_t piece = shareChunkBytes(bytes);
  Status status;
  bool read = false;
  std::uint64_t first = 0, k = 0;
  while (status.ok() && (k = claimPieces(share, h.chunks, false, false, &first)) > 0) {
    const std::uint64_t from = first * piece;
    const std::uint64_t to = std::min(bytes, (first + k) * piece);
    status = copyWithPeer(true, request->data + from, h.remoteAddr + from, to - from, bytes,
                          h.buffer);
    read = true;
  }
  if (status.ok()) return read;
  owner_->failLocked(status, done);
  closeShareLocked(id, h.chunks);
  h.request = nullptr;
  --helpedCount_;
  completeLocked(request, owner_->health_, done);  // in no queue: failAll missed it
  return true;
}

void ShmLink::finishRendezvousLocked(TransferRequest* request, std::uint64_t rndvId,
                                     std::uint64_t rndvSeq, bool helped, DoneList& done) {
  if (helped) {
    // A sender whose write failed aborts the communicator before it counts the piece as
    // written: a receiver that saw the count sees the abort here.
    owner_->checkAbortLocked(done);
    if (owner_->failed_) {
      completeLocked(request, owner_->health_, done);
      return;
    }
  }
  peerSegment_->ack(owner_->rank(), rndvId).store(rndvSeq, std::memory_order_release);
  peerSegment_->ring();
  completeLocked(request, Status::Ok(), done);
}

bool ShmLink::checkHelpedLocked(DoneList& done) {
  if (helpedCount_ == 0) return false;
  bool moved = false;
  for (std::size_t id = 0; id < kRndvSlots && !owner_->failed_; ++id)
    moved = finishHelpedLocked(id, done) || moved;
  return moved;
}

bool ShmLink::finishHelpedLocked(std::size_t id, DoneList& done) {
  Helped& h = helped_[id];
  if (h.request == nullptr || h.reads) return false;
  const RndvShare& share = peerSegment_->share(owner_->rank(), id);
  // Every piece claimed (left to the sender, it may not have claimed yet) and written.
  const std::uint64_t claim = share.claim.load(std::memory_order_acquire);
  if (frontOf(claim) + backOf(claim) < h.chunks ||
      share.written.load(std::memory_order_acquire) < backOf(claim))
    return false;
  TransferRequest* request = h.request;
  h.request = nullptr;
  --helpedCount_;
  finishRendezvousLocked(request, id, h.rndvSeq, backOf(claim) > 0, done);
  return true;
}

void ShmLink::closeShareLocked(std::size_t rndvId, std::uint64_t chunks) {
  RndvShare& share = peerSegment_->share(owner_->rank(), rndvId);
  std::uint64_t c = share.claim.load(std::memory_order_acquire);
  while (frontOf(c) + backOf(c) < chunks &&
         !share.claim.compare_exchange_weak(c, (c & ~kFrontMask) | (chunks - backOf(c)),
                                            std::memory_order_acq_rel, std::memory_order_acquire)) {
  }
  const std::uint64_t back = backOf(share.claim.load(std::memory_order_acquire));
  const Deadline deadline = Deadline::afterSeconds(kHelperWaitSec);
  while (share.written.load(std::memory_order_acquire) < back) {
    if (owner_->peerDead(peer_) || deadline.expired()) {
      TUTTI_WARN(kShm, "rank %d: rank %d did not finish writing its part of a message; the "
                 "receive buffer may still change", owner_->rank(), peer_);
      return;
    }
    std::this_thread::yield();
  }
}

bool ShmLink::helpLocked(std::size_t id, DoneList& done) {
  TransferRequest* request = rndvInflight_[id];
  RndvShare& share = own_->share(peer_, id);
  if (share.seq.load(std::memory_order_acquire) != rndvSeqs_[id]) return false;  // not started
  const std::uint64_t bytes = request->bytes;
  const std::uint64_t piece = shareChunkBytes(bytes);
  const std::uint64_t chunks = chunksOf(bytes);
  const std::uint64_t dest = share.dest.load(std::memory_order_relaxed);
  const BufferRef destBuffer = share.destBuffer;  // written with dest, before seq
  const bool all = share.senderCopies.load(std::memory_order_relaxed) != 0;
  std::uint64_t first = 0, k = 0;
  bool moved = false;
  while ((k = claimPieces(share, chunks, true, all, &first)) > 0) {
    const std::uint64_t from = first * piece;
    const std::uint64_t to = std::min(bytes, (first + k) * piece);
    Status status =
        copyWithPeer(false, request->data + from, dest + from, to - from, bytes, destBuffer);
    if (status.ok()) owner_->writtenBytes_.fetch_add(to - from, std::memory_order_relaxed);
    // Failed: abort first, then count the pieces, so the receiver cannot take them as done.
    if (!status.ok()) owner_->failLocked(status, done);
    share.written.fetch_add(static_cast<std::uint32_t>(k), std::memory_order_release);
    moved = true;
    if (!status.ok()) break;
  }
  if (moved) peerSegment_->ring();  // the receiver may be waiting for these pieces
  return moved;
}

}  // namespace tutti::shm

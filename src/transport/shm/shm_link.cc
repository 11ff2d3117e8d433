#include "transport/shm/shm_link.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/assert.h"
#include "base/log.h"
#include "base/strings.h"
#include "transport/call_checker.h"
#include "transport/shm/shm_transport.h"

namespace tutti::shm {

ShmLink::ShmLink(ShmTransport* owner, int peer, const Segment* own, const Segment* peerSegment)
    : owner_(owner),
      peer_(peer),
      own_(own),
      peerSegment_(peerSegment),
      out_(peerSegment->ringFrom(owner->rank())),
      in_(own->ringFrom(peer)),
      slotBytes_(owner->layout_.slotBytes) {
  // A transport is built fresh for every communicator: both counters start at zero.
  outTail_ = out_.tail->load(std::memory_order_acquire);
  outHead_ = outTail_;
  inTail_ = in_.tail->load(std::memory_order_acquire);
}

std::string ShmLink::describe(Tag tag) const {
  return strFormat("message with tag 0x%llx from rank %d", static_cast<unsigned long long>(tag),
                   peer_);
}

std::string ShmLink::describePeer() const { return strFormat("rank %d", peer_); }

void ShmLink::completeLocked(TransferRequest* request, Status status, DoneList& done) {
  request->status_ = std::move(status);
  request->state.store(TransferRequest::kDone, std::memory_order_release);
  done.add(request);
}

// ---- sending ------------------------------------------------------------------------------

void ShmLink::postSend(TransferRequest* request, Tag tag, const void* data, std::size_t bytes) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(owner_->mutex_);
    request->tag = tag;
    request->data = const_cast<char*>(static_cast<const char*>(data));
    request->bytes = bytes;
    request->progress = 0;
    request->state.store(TransferRequest::kPending, std::memory_order_relaxed);
    if (owner_->failed_) {
      completeLocked(request, owner_->health_, done);
    } else {
      sendQueue_.push_back(request);
      pumpSendsLocked(done);
    }
  }
  owner_->finish(done);
}

bool ShmLink::roomLocked() {
  if (outHead_ - outTail_ < out_.count) return true;
  // Read only when the last value read says the ring is full: reading it pulls its cache
  // line over from the receiver, which writes it for every slot it frees.
  outTail_ = out_.tail->load(std::memory_order_seq_cst);  // see wakeIfSleeping
  return outHead_ - outTail_ < out_.count;
}

bool ShmLink::sendRendezvousLocked(TransferRequest* request, const BufferRef& buffer) {
  std::size_t id = 0;
  while (id < kRndvSlots && rndvInflight_[id] != nullptr) ++id;
  if (id == kRndvSlots) return false;  // wait for acks
  if (!roomLocked()) return false;
  SlotHeader* h = out_.header(outHead_);
  h->tag = request->tag;
  h->msgBytes = request->bytes;
  h->offset = 0;
  h->chunkBytes = 0;
  h->kind = SlotKind::kRndv;
  h->remoteAddr = reinterpret_cast<std::uint64_t>(request->data);
  h->buffer = buffer;
  h->rndvId = static_cast<std::uint16_t>(id);
  h->stamp = request->stamp;
  h->rndvSeq = ++rndvSeq_;
  rndvInflight_[id] = request;
  ++rndvCount_;
  rndvSeqs_[id] = h->rndvSeq;
  h->seq.store(++outHead_, std::memory_order_seq_cst);  // publishes; see wakeIfSleeping
  return true;
}

std::size_t ShmLink::pieceBytes(std::uint64_t msgBytes) const {
  // A piece is copied in by the sender while the receiver copies out or reduces the one
  // before: small pieces pipeline a mid-size message, large ones cost fewer publications
  // per byte. Powers of two, so every piece but the last holds whole elements.
  constexpr std::size_t kSmallPiece = 32u << 10;
  constexpr std::uint64_t kPiecesPerMessage = 16;
  if (slotBytes_ <= kSmallPiece) return slotBytes_;
  std::size_t piece = kSmallPiece;
  while (piece * 2 <= slotBytes_ && piece * 2 * kPiecesPerMessage <= msgBytes) piece *= 2;
  return piece;
}

// Returns true once the whole message is in the ring.
bool ShmLink::sendEagerLocked(TransferRequest* request) {
  while (true) {
    if (!roomLocked()) return false;
    const std::size_t chunk =
        std::min<std::size_t>(pieceBytes(request->bytes), request->bytes - request->progress);
    SlotHeader* h = out_.header(outHead_);
    h->tag = request->tag;
    h->msgBytes = request->bytes;
    h->chunkBytes = static_cast<std::uint32_t>(chunk);
    h->kind = SlotKind::kData;
    if (request->progress == 0) h->stamp = request->stamp;
    if (request->bytes <= kInlineBytes) {
      // The whole message in the header's first line: the second is left alone.
      if (chunk > 0) std::memcpy(h->inlineData, request->data, chunk);
    } else {
      h->offset = request->progress;
      std::memcpy(out_.payload(outHead_), request->data + request->progress, chunk);
    }
    h->seq.store(++outHead_, std::memory_order_seq_cst);  // publishes; see wakeIfSleeping
    // The next slot's header: the receiver read it a lap ago, so its line is shared; ask
    // for it exclusive now rather than wait on the invalidation when publishing into it.
    prefetchForWrite(out_.header(outHead_));
    request->progress += chunk;
    if (request->progress >= request->bytes) return true;
  }
}

bool ShmLink::pumpSendsLocked(DoneList& done) {
  bool moved = false;
  while (!sendQueue_.empty()) {
    TransferRequest* request = sendQueue_.front();
    // A user's point-to-point send must complete without its receive (it may be queued
    // behind that send on the peer, as in a ring of send-then-receive): those are always
    // copied. A collective's schedule is verified to progress with no buffering at all,
    // so its large messages may wait for their receive.
    //
    // A send from a memAlloc buffer goes by rendezvous from mappedBytes (lower than cmaBytes)
    // and even when it prefers a copy (its receiver reduces it): the receiver reads or
    // reduces it straight from its mapping, one pass over the data where the ring takes two.
    const ShmTransport::Options& o = owner_->options_;
    const std::uint64_t cma = owner_->cmaFrom_ == 0 ? UINT64_MAX : owner_->cmaFrom_;
    const std::uint64_t mapped = o.mappedBytes == 0 ? UINT64_MAX : o.mappedBytes;
    bool rendezvous = request->progress == 0 && !isP2pTag(request->tag) &&
                      request->bytes >= std::min(cma, mapped) && owner_->rendezvousTo(peer_);
    BufferRef buffer;
    if (rendezvous) {
      buffer = findUserBuffer(request->data, request->bytes);
      rendezvous = buffer.valid() ? request->bytes >= mapped
                                  : request->bytes >= cma && !request->preferCopy;
    }
    if (rendezvous) {
      if (!sendRendezvousLocked(request, buffer)) break;
      sendQueue_.pop_front();
      moved = true;
      continue;
    }
    const std::size_t before = request->progress;
    const std::uint64_t headBefore = outHead_;
    const bool whole = sendEagerLocked(request);
    moved = moved || request->progress != before || outHead_ != headBefore;
    if (!whole) break;
    sendQueue_.pop_front();
    completeLocked(request, Status::Ok(), done);  // the bytes are in the ring
  }
  if (moved) peerSegment_->wakeIfSleeping();  // its spin watches the slots
  return moved;
}

bool ShmLink::checkAcksLocked(DoneList& done) {
  if (rndvCount_ == 0) return false;
  bool moved = false;
  const bool helps = owner_->helpsWrite(peer_);
  for (std::size_t id = 0; id < kRndvSlots && !owner_->failed_; ++id) {
    TransferRequest* request = rndvInflight_[id];
    if (request == nullptr) continue;
    if (helps && helpLocked(id, done)) moved = true;
    if (owner_->failed_) break;
    if (own_->ack(peer_, id).load(std::memory_order_acquire) != rndvSeqs_[id]) continue;
    rndvInflight_[id] = nullptr;
    --rndvCount_;
    completeLocked(request, Status::Ok(), done);
    moved = true;
  }
  return moved;
}

// ---- receiving ----------------------------------------------------------------------------

bool ShmLink::checkSizeLocked(TransferRequest* request, std::uint64_t bytes, DoneList& done) {
  if (request->bytes == bytes) return true;
  owner_->failLocked(
      Status(ErrorCode::kMismatch,
             strFormat("rank %d sent %llu bytes under tag 0x%llx where rank %d expected %zu",
                       peer_, static_cast<unsigned long long>(bytes),
                       static_cast<unsigned long long>(request->tag), owner_->rank(),
                       request->bytes),
             peer_),
      done);
  return false;
}

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
  const bool shared = chunks > 1;
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
  share.destBuffer = findUserBuffer(request->data, bytes);
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

void ShmLink::deliverLocked(TransferRequest* request, const char* bytes, std::size_t count) {
  if (request->combine != nullptr) {
    if (count > 0) request->combine->take(0, bytes, count);
    request->combined = true;
  } else if (count > 0) {
    std::memcpy(request->data, bytes, count);
  }
}

void ShmLink::postRecv(TransferRequest* request, Tag tag, void* data, std::size_t bytes) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(owner_->mutex_);
    request->tag = tag;
    request->data = static_cast<char*>(data);
    request->bytes = bytes;
    request->progress = 0;
    request->state.store(TransferRequest::kPending, std::memory_order_relaxed);
    auto it = std::find_if(unexpected_.begin(), unexpected_.end(), [&](const auto& u) {
      return u->tag == tag && u->claimedBy == nullptr;
    });
    if (owner_->failed_) {
      completeLocked(request, owner_->health_, done);
    } else if (it == unexpected_.end()) {
      posted_.push_back(request);
      deferReads_ = true;
      drainLocked(done);
      deferReads_ = false;
    } else if (stampsConflict((*it)->stamp, request->stamp)) {
      // The executor words the error and fails the transport; the message stays unread.
      completeLocked(request, stampMismatch(request, peer_, describePeer(), (*it)->stamp), done);
    } else if (!checkSizeLocked(request, (*it)->bytes, done)) {
      completeLocked(request, owner_->health_, done);
    } else {
      Unexpected& u = **it;
      if (u.rendezvous) {
        const Offer offer = u.offer;
        recycleLocked(it);
        deferReads_ = true;
        readRendezvousLocked(request, offer, done);
        deferReads_ = false;
      } else if (u.received < u.bytes) {
        u.claimedBy = request;  // completed when its last piece arrives
      } else {
        deliverLocked(request, u.data.data(), u.bytes);
        unexpectedBytes_ -= u.bytes;
        recycleLocked(it);
        completeLocked(request, Status::Ok(), done);
        drainLocked(done);  // room may have been waiting for
      }
    }
  }
  owner_->finish(done);
}

std::unique_ptr<ShmLink::Unexpected> ShmLink::takeUnexpectedLocked(std::uint64_t bytes) {
  // The smallest spare buffer that holds `bytes`, else any (it grows), else a new one.
  auto best = spare_.end();
  for (auto it = spare_.begin(); it != spare_.end(); ++it) {
    const std::size_t capacity = (*it)->data.capacity();
    if (capacity >= bytes && (best == spare_.end() || capacity < (*best)->data.capacity())) best = it;
  }
  if (best == spare_.end() && !spare_.empty()) best = spare_.begin();
  if (best == spare_.end()) return std::make_unique<Unexpected>();
  std::unique_ptr<Unexpected> u = std::move(*best);
  spare_.erase(best);
  spareBytes_ -= u->data.capacity();
  std::vector<char> keep = std::move(u->data);
  *u = Unexpected{};
  u->data = std::move(keep);
  return u;
}

void ShmLink::recycleLocked(std::deque<std::unique_ptr<Unexpected>>::iterator it) {
  std::unique_ptr<Unexpected> u = std::move(*it);
  unexpected_.erase(it);
  // Kept up to the unexpected budget, so a warm link receives early messages without
  // allocating (or faulting in fresh pages).
  if (spareBytes_ + u->data.capacity() > owner_->options_.maxUnexpectedBytes) return;
  spareBytes_ += u->data.capacity();
  spare_.push_back(std::move(u));
}

bool ShmLink::postedForLocked(Tag tag) const {
  return std::any_of(posted_.begin(), posted_.end(),
                     [&](const TransferRequest* r) { return r->tag == tag; });
}

bool ShmLink::startMessageLocked(const SlotView& h, DoneList& done) {
  auto it = std::find_if(posted_.begin(), posted_.end(),
                    [&](const TransferRequest* r) { return r->tag == h.tag; });
  if (it != posted_.end()) {
    TransferRequest* request = *it;
    if (stampsConflict(h.stamp, request->stamp)) {
      // Refused before a byte lands in the receiver's buffer; the pieces that follow are
      // dropped (a rendezvous send is never acknowledged: its sender learns of the failure).
      posted_.erase(it);
      completeLocked(request, stampMismatch(request, peer_, describePeer(), h.stamp), done);
      streamTo_ = nullptr;
      streamUnexpected_ = nullptr;
      streaming_ = h.kind == SlotKind::kData;
      return true;
    }
    if (!checkSizeLocked(request, h.msgBytes, done)) return false;
    // Usually the oldest receive: popping it is cheaper than a general erase.
    if (it == posted_.begin())
      posted_.pop_front();
    else
      posted_.erase(it);
    if (h.kind == SlotKind::kRndv) {
      readRendezvousLocked(request, Offer{h.remoteAddr, h.rndvId, h.rndvSeq, h.buffer}, done);
      return !owner_->failed_;
    }
    streamTo_ = request;
    // Pieces start at multiples of the slot size and end there or at the message's end (a
    // multiple of the granule, being the receive's length): whole elements when the slot
    // holds whole elements.
    streamCombine_ = request->combine != nullptr && slotBytes_ % request->combine->granule() == 0;
    streamUnexpected_ = nullptr;
    streaming_ = true;
    return true;
  }
  // Unexpected: nobody may ever receive it (another call here), so the checker looks at it
  // now. A message that matched a receive was checked against that receive's stamp above,
  // which is this rank's call for the same sequence number; the checker would repeat it.
  if (CallChecker* checker = owner_->callChecker(); checker != nullptr) {
    Status conflict = checker->onArrival(peer_, h.tag, h.stamp);
    if (!conflict.ok()) {
      owner_->failLocked(conflict, done);
      return false;
    }
  }
  std::unique_ptr<Unexpected> u = takeUnexpectedLocked(h.msgBytes);
  u->tag = h.tag;
  u->stamp = h.stamp;
  u->bytes = h.msgBytes;
  if (h.kind == SlotKind::kRndv) {
    u->rendezvous = true;
    u->offer = Offer{h.remoteAddr, h.rndvId, h.rndvSeq, h.buffer};
    unexpected_.push_back(std::move(u));
    return true;
  }
  // Past the cap the ring is left full: the sender waits until receives are posted.
  if (unexpectedBytes_ + h.msgBytes > owner_->options_.maxUnexpectedBytes && unexpectedBytes_ > 0)
    return false;
  u->data.resize(h.msgBytes);
  unexpectedBytes_ += h.msgBytes;
  streamUnexpected_ = u.get();
  streamTo_ = nullptr;
  streaming_ = true;
  unexpected_.push_back(std::move(u));
  return true;
}

bool ShmLink::drainLocked(DoneList& done) {
  bool moved = false;
  const std::size_t doneBefore = done.size();
  while (!owner_->failed_ && in_.published(inTail_)) {
    const SlotView h = in_.read(inTail_);
    if (h.kind != SlotKind::kData && h.kind != SlotKind::kRndv) {
      owner_->failLocked(Status(ErrorCode::kProtocolError,
                                strFormat("rank %d's ring holds a slot of unknown kind %u", peer_,
                                          static_cast<unsigned>(h.kind)),
                                peer_),
                         done);
      break;
    }
    const bool first = h.kind == SlotKind::kRndv || h.offset == 0;
    if (first && !streaming_) {
      // A receive completed in this pass: its poster usually posts the next one as soon as
      // the pass ends, so a message that nobody waits for yet stays in the ring until then
      // instead of being copied into a buffer and out again. The next pass takes it either
      // way (buffered if still unexpected), so nothing waits on it for more than a pass.
      if (done.size() > doneBefore && !postedForLocked(h.tag)) break;
      if (!startMessageLocked(h, done)) break;
    }
    if (h.kind == SlotKind::kData) {
      if (h.chunkBytes > slotBytes_ || h.offset + h.chunkBytes > h.msgBytes) {
        owner_->failLocked(Status(ErrorCode::kProtocolError,
                                  strFormat("rank %d's ring holds a malformed piece of a %s",
                                            peer_, describe(h.tag).c_str()),
                                  peer_),
                           done);
        break;
      }
      const char* src = h.data;
      if (streamTo_ != nullptr && h.chunkBytes > 0) {
        if (streamCombine_)
          streamTo_->combine->take(h.offset, src, h.chunkBytes);
        else
          owner_->options_.copy(streamTo_->data + h.offset, src, h.chunkBytes, h.msgBytes);
      } else if (streamUnexpected_ != nullptr && h.chunkBytes > 0) {
        std::memcpy(streamUnexpected_->data.data() + h.offset, src, h.chunkBytes);
      }
      if (h.offset + h.chunkBytes >= h.msgBytes) {  // the last piece
        if (streamTo_ != nullptr) {
          streamTo_->combined = streamCombine_;
          completeLocked(streamTo_, Status::Ok(), done);
        }
        if (streamUnexpected_ != nullptr) {
          streamUnexpected_->received = h.msgBytes;
          TransferRequest* claimed = streamUnexpected_->claimedBy;
          if (claimed != nullptr) {
            deliverLocked(claimed, streamUnexpected_->data.data(), h.msgBytes);
            unexpectedBytes_ -= h.msgBytes;
            auto it = std::find_if(unexpected_.begin(), unexpected_.end(),
                                   [&](const auto& u) { return u.get() == streamUnexpected_; });
            recycleLocked(it);
            completeLocked(claimed, Status::Ok(), done);
          }
        }
        streamTo_ = nullptr;
        streamUnexpected_ = nullptr;
        streaming_ = false;
      } else if (streamUnexpected_ != nullptr) {
        streamUnexpected_->received = h.offset + h.chunkBytes;
      }
    }
    in_.tail->store(++inTail_, std::memory_order_seq_cst);  // see wakeIfSleeping
    moved = true;
  }
  if (moved) peerSegment_->wakeIfSleeping();  // the sender may be waiting for room
  return moved;
}

// ---- bookkeeping --------------------------------------------------------------------------

void ShmLink::cancel(TransferRequest* request) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(owner_->mutex_);
    if (request->done()) return;
    auto posted = std::find(posted_.begin(), posted_.end(), request);
    if (posted != posted_.end()) posted_.erase(posted);
    if (streamTo_ == request) streamTo_ = nullptr;  // the rest of it is dropped
    for (std::size_t id = 0; id < kRndvSlots; ++id) {
      if (helped_[id].request != request) continue;
      // Read, but the peer may still be writing its pieces: stop it, then fail (the message
      // was taken, so the sender would wait for an ack that never comes).
      closeShareLocked(id, helped_[id].chunks);
      helped_[id].request = nullptr;
      --helpedCount_;
      owner_->failLocked(Status(ErrorCode::kAborted,
                                strFormat("a receive from rank %d was cancelled while the "
                                          "rank wrote into it", peer_)),
                         done);
    }
    for (auto& u : unexpected_) {
      if (u->claimedBy == request) u->claimedBy = nullptr;
    }
    auto queued = std::find(sendQueue_.begin(), sendQueue_.end(), request);
    if (queued != sendQueue_.end()) {
      const bool begun = request->progress > 0;
      sendQueue_.erase(queued);
      // Part of it is in the ring: the peer would take what follows for the rest.
      if (begun)
        owner_->failLocked(Status(ErrorCode::kAborted,
                                  strFormat("a send to rank %d was cancelled half-way", peer_)),
                           done);
    }
    for (std::size_t id = 0; id < kRndvSlots; ++id) {
      if (rndvInflight_[id] != request) continue;
      rndvInflight_[id] = nullptr;
      --rndvCount_;
      // The peer may be reading the buffer right now; only a failed transport makes that
      // harmless (its operation fails too).
      owner_->failLocked(Status(ErrorCode::kAborted,
                                strFormat("a send to rank %d was cancelled while it could be "
                                          "reading it", peer_)),
                         done);
    }
    if (!request->done()) completeLocked(request, Status(ErrorCode::kAborted, "transfer cancelled"), done);
  }
  owner_->finish(done);
}

bool ShmLink::needsPeerLocked() const {
  return !posted_.empty() || streaming_ || sendsPendingLocked() || helpedCount_ > 0 ||
         std::any_of(unexpected_.begin(), unexpected_.end(),
                     [](const auto& u) { return u->claimedBy != nullptr; });
}

bool ShmLink::sendsPendingLocked() const {
  return !sendQueue_.empty() || rndvCount_ > 0;
}

void ShmLink::failAllLocked(const Status& status, DoneList& done) {
  for (TransferRequest* r : sendQueue_) completeLocked(r, status, done);
  sendQueue_.clear();
  for (TransferRequest*& r : rndvInflight_) {
    if (r != nullptr) completeLocked(r, status, done);
    r = nullptr;
  }
  rndvCount_ = 0;
  for (std::size_t id = 0; id < kRndvSlots; ++id) {
    Helped& h = helped_[id];
    if (h.request == nullptr) continue;
    closeShareLocked(id, h.chunks);
    completeLocked(h.request, status, done);
    h.request = nullptr;
  }
  helpedCount_ = 0;
  for (TransferRequest* r : posted_) completeLocked(r, status, done);
  posted_.clear();
  if (streamTo_ != nullptr) completeLocked(streamTo_, status, done);
  streamTo_ = nullptr;
  for (auto& u : unexpected_) {
    if (u->claimedBy != nullptr) completeLocked(u->claimedBy, status, done);
    u->claimedBy = nullptr;
  }
}

}  // namespace tutti::shm

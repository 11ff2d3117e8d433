// A shared-memory link's ring path: messages and pieces through the per-peer rings, the
// sender's queue and acks, matching, unexpected messages, cancel and failure. Rendezvous
// messages (copied between the processes directly) are in shm_rendezvous.cc.

#include "transport/shm/shm_link.h"

#include <algorithm>
#include <cstring>
#include <limits>

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
  // Room for an executor's window of requests and more, so that how many happen to be
  // pending at once never makes a call allocate.
  sendQueue_.reserve(kQueuedRequests);
  posted_.reserve(kQueuedRequests);
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
    request->postedOn = this;
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
  // per byte. Powers of two, so every piece but the last holds whole elements. Two pieces
  // per message at least (with 256 KiB slots, between 2 ranks): alternating runs against
  // 16 (scripts/ab_latency.sh -r 11, 2 ranks), all-gather and all-to-all 1 MiB 0.91-0.92;
  // -r 5: gather 1 MiB 0.86, broadcast 256 KiB 0.92, reduce-scatter 1 MiB 0.95,
  // all-reduce 1 MiB 0.98, 512 KiB 0.95; level (within the noise, 0.95-1.06) at 512 KiB
  // and 4 MiB, where the pieces are the same. With slots of 32 KiB (more ranks) nothing
  // changes.
  constexpr std::size_t kSmallPiece = 32u << 10;
  constexpr std::uint64_t kPiecesPerMessage = 2;
  if (slotBytes_ <= kSmallPiece) return slotBytes_;
  std::size_t piece = kSmallPiece;
  while (piece * 2 <= slotBytes_ && piece * 2 * kPiecesPerMessage <= msgBytes) piece *= 2;
  return piece;
}

SlotHeader* ShmLink::pieceHeaderLocked(const TransferRequest* request, std::size_t chunk) {
  SlotHeader* h = out_.header(outHead_);
  h->tag = request->tag;
  h->msgBytes = request->bytes;
  h->chunkBytes = static_cast<std::uint32_t>(chunk);
  h->kind = SlotKind::kData;
  if (request->progress == 0) h->stamp = request->stamp;
  return h;
}

// Returns true once the whole message is in the ring.
bool ShmLink::sendEagerLocked(TransferRequest* request) {
  while (true) {
    if (!roomLocked()) return false;
    const std::size_t chunk =
        std::min<std::size_t>(pieceBytes(request->bytes), request->bytes - request->progress);
    if (request->fed && request->progress + chunk > request->fedBytes) return false;
    SlotHeader* h = pieceHeaderLocked(request, chunk);
    if (request->bytes <= kInlineBytes) {
      // The whole message in the header's first line: the second is left alone.
      if (chunk > 0) std::memcpy(h->inlineData, request->data, chunk);
    } else {
      h->offset = request->progress;
      char* slot = out_.payload(outHead_);
      const char* from = request->data + request->progress;
      const std::uint64_t streamFrom = owner_->streamedFrom();
      if (request->streamPieces && streamFrom != 0 && request->bytes >= streamFrom) {
        // Past the caches (TransferRequest::streamPieces): the copy routine streams what it
        // is told is part of a large output.
        constexpr std::size_t kLarge = std::numeric_limits<std::size_t>::max();
        owner_->options_.copy(slot, from, chunk, kLarge);
        if (request->mirror != nullptr)
          owner_->options_.copy(request->mirror + request->progress, from, chunk,
                                request->bytes);
      } else if (request->mirror != nullptr) {
        // One pass over the source writes the slot and the mirror, and the piece is published
        // after both. Copying the slot, publishing, then writing the mirror from cache took
        // 1.33 times as long for a 2-rank all-gather of 64 MiB (streaming mirror, AMD EPYC
        // VM), and copying both before publishing 1.18; at 1 and 8 MiB (two memcpys
        // either way) 0.99 and 0.96 of the time.
        owner_->options_.copyTwo(slot, request->mirror + request->progress, from, chunk,
                                 request->bytes);
      } else {
        std::memcpy(slot, from, chunk);
      }
    }
    h->seq.store(++outHead_, std::memory_order_seq_cst);  // publishes; see wakeIfSleeping
    if (request->mirror != nullptr && chunk > 0 && request->bytes <= kInlineBytes)
      std::memcpy(request->mirror, request->data, chunk);
    // The next slot's header: the receiver read it a lap ago, so its line is shared; ask
    // for it exclusive now rather than wait on the invalidation when publishing into it.
    prefetchForWrite(out_.header(outHead_));
    request->progress += chunk;
    if (request->progress >= request->bytes) {
      request->mirrored = request->mirror != nullptr;
      return true;
    }
  }
}

bool ShmLink::byRendezvous(Tag tag, const void* data, std::size_t bytes, bool preferCopy,
                           BufferRef* buffer) const {
  const ShmTransport::Options& o = owner_->options_;
  const std::uint64_t cma = owner_->cmaFrom_ == 0 ? UINT64_MAX : owner_->cmaFrom_;
  const std::uint64_t mapped = o.mappedBytes == 0 ? UINT64_MAX : o.mappedBytes;
  if (isP2pTag(tag) || bytes < std::min(cma, mapped) || !owner_->rendezvousTo(peer_))
    return false;
  *buffer = findUserBuffer(data, bytes);
  return buffer->valid() ? bytes >= mapped : bytes >= cma && !preferCopy;
}

bool ShmLink::copiesSend(Tag tag, const void* data, std::size_t bytes, bool preferCopy) const {
  BufferRef buffer;
  return !byRendezvous(tag, data, bytes, preferCopy, &buffer);
}

bool ShmLink::firstPieceFedLocked(const TransferRequest* request) const {
  return !request->fed ||
         request->fedBytes >= std::min<std::size_t>(pieceBytes(request->bytes), request->bytes);
}

void ShmLink::finishSendLocked(TransferRequest* request, DoneList& done) {
  auto it = std::find(sendQueue_.begin(), sendQueue_.end(), request);
  TUTTI_ASSERT(it != sendQueue_.end());
  sendQueue_.erase(it);
  completeLocked(request, Status::Ok(), done);
}

bool ShmLink::pumpSendsLocked(DoneList& done) {
  bool moved = false;
  // A message's pieces follow each other in the ring: one that is half-way goes on first.
  if (outStream_ != nullptr) {
    TransferRequest* request = outStream_;
    const std::size_t before = request->progress;
    const bool whole = sendEagerLocked(request);
    moved = request->progress != before;
    if (whole) {
      outStream_ = nullptr;
      finishSendLocked(request, done);  // the bytes are in the ring
    }
  }
  std::size_t i = 0;
  while (outStream_ == nullptr && i < sendQueue_.size()) {
    TransferRequest* request = sendQueue_[i];
    // A fed send waits for its first piece without holding up the sends behind it: they
    // may be what the peers need to produce it.
    if (!firstPieceFedLocked(request)) {
      ++i;
      continue;
    }
    // A user's point-to-point send must complete without its receive (it may be queued
    // behind that send on the peer, as in a ring of send-then-receive): those are always
    // copied. A collective's schedule is verified to progress with no buffering at all,
    // so its large messages may wait for their receive.
    //
    // A send from a memAlloc buffer goes by rendezvous from mappedBytes (lower than cmaBytes)
    // and even when it prefers a copy (its receiver reduces it): the receiver reads or
    // reduces it straight from its mapping, one pass over the data where the ring takes two.
    // A fed send is never sent by rendezvous (canFeed).
    BufferRef buffer;
    const bool rendezvous = !request->fed &&
                            byRendezvous(request->tag, request->data, request->bytes,
                                         request->preferCopy, &buffer);
    if (rendezvous) {
      if (!sendRendezvousLocked(request, buffer)) break;
      sendQueue_.erase(RingQueue<TransferRequest*>::const_iterator(&sendQueue_, i));
      moved = true;
      continue;
    }
    const std::uint64_t headBefore = outHead_;
    const bool whole = sendEagerLocked(request);
    moved = moved || outHead_ != headBefore;
    if (!whole) {
      if (request->progress > 0) outStream_ = request;
      break;
    }
    finishSendLocked(request, done);  // the bytes are in the ring
  }
  if (moved) peerSegment_->wakeIfSleeping();  // its spin watches the slots
  return moved;
}

bool ShmLink::canFeed(const Link& to, Tag tag, const void* data, std::size_t bytes,
                      bool preferCopy) const {
  const auto* link = dynamic_cast<const ShmLink*>(&to);
  return link != nullptr && link->owner_ == owner_ && !isP2pTag(tag) &&
         link->copiesSend(tag, data, bytes, preferCopy);
}

void ShmLink::feed(TransferRequest* request, std::size_t bytes) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(owner_->mutex_);
    if (!request->done() && bytes > request->fedBytes) {
      request->fedBytes = bytes;
      pumpSendsLocked(done);
    }
  }
  owner_->finish(done);
}

bool ShmLink::forwardLocked(const SlotView& h, const char* src, DoneList& done) {
  TransferRequest* send = streamTo_->feeds;
  // A piece goes into the send's next slot: reduced there and then, unless the step wants
  // it only for the send (feedsOnly), copied from there into the destination; or copied
  // into the slot and the destination at once.
  const bool reduces = streamTo_->combine != nullptr;
  if (send == nullptr || (reduces && !streamCombine_)) return false;
  auto* to = static_cast<ShmLink*>(send->postedOn);
  char* into = to->forwardSlotLocked(send, h.offset, h.chunkBytes);
  if (into == nullptr) return false;
  // The send goes from the ring, not from dst: this step does not read dst back.
  if (reduces) {
    streamTo_->combine->takeInto(h.offset, src, h.chunkBytes, into);
    if (!streamTo_->feedsOnly) {
      owner_->options_.copy(streamTo_->combine->destination() + h.offset, into, h.chunkBytes,
                            copyExtent(h, false));
    }
  } else {
    // One pass over the piece for both copies, where a memcpy into the ring and then a copy
    // into dst read it twice: 16 MiB all-reduce on 2 cores 1.05x faster at 4 ranks, 1.06x
    // at 8 (scripts/ab_latency.sh -s, 11 rounds, Intel VM).
    owner_->options_.copyTwo(into, streamTo_->data + h.offset, src, h.chunkBytes,
                             copyExtent(h, false));
  }
  to->publishForwardLocked(send, h.chunkBytes, done);
  return true;
}

std::size_t ShmLink::copyExtent(const SlotView& h, bool readBack) const {
  // A destination that a fed send reads next counts as the message alone; any other, the
  // outputs of every rank on the host (TransferRequest::destinationBytes): where together
  // they pass the caches, the copy's non-temporal threshold writes them past.
  if (readBack) return h.msgBytes;
  const std::size_t ranks = owner_->localPeers() + 1;
  return std::max<std::size_t>(h.msgBytes, streamTo_->destinationBytes * ranks);
}

char* ShmLink::forwardSlotLocked(TransferRequest* send, std::size_t offset, std::size_t chunk) {
  // The piece must be the send's next, cut as the send would cut it, with nothing else
  // half-way through the ring and a slot free.
  if (send->done() || send->progress != offset || send->bytes <= kInlineBytes ||
      (outStream_ != send && outStream_ != nullptr) ||
      chunk != std::min<std::size_t>(pieceBytes(send->bytes), send->bytes - send->progress) ||
      !roomLocked())
    return nullptr;
  pieceHeaderLocked(send, chunk)->offset = send->progress;
  return out_.payload(outHead_);
}

void ShmLink::publishForwardLocked(TransferRequest* send, std::size_t chunk, DoneList& done) {
  SlotHeader* h = out_.header(outHead_);
  h->seq.store(++outHead_, std::memory_order_seq_cst);  // publishes; see wakeIfSleeping
  prefetchForWrite(out_.header(outHead_));
  send->progress += chunk;
  send->fedBytes = send->progress;  // what was forwarded counts as fed
  if (send->progress >= send->bytes) {
    if (outStream_ == send) outStream_ = nullptr;
    finishSendLocked(send, done);
  } else {
    outStream_ = send;
  }
  peerSegment_->wakeIfSleeping();
}

void ShmLink::fedLocked(TransferRequest* receive, std::size_t bytes, DoneList& done) {
  TransferRequest* send = receive->feeds;
  if (send->done() || bytes <= send->fedBytes) return;
  send->fedBytes = bytes;
  static_cast<ShmLink*>(send->postedOn)->pumpSendsLocked(done);
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
    if (!isP2pTag(tag)) owner_->noteCallLocked(tag);
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

void ShmLink::recycleLocked(RingQueue<std::unique_ptr<Unexpected>>::iterator it) {
  std::unique_ptr<Unexpected> u = std::move(*it);
  unexpected_.erase(it);
  spare_.give(std::move(u), owner_->options_.maxUnexpectedBytes);
}

bool ShmLink::awaitsPointToPointLocked() const {
  return std::any_of(posted_.begin(), posted_.end(),
                     [](const TransferRequest* r) { return isP2pTag(r->tag); });
}

bool ShmLink::postedForLocked(Tag tag) const {
  return std::any_of(posted_.begin(), posted_.end(),
                     [&](const TransferRequest* r) { return r->tag == tag; });
}

bool ShmLink::takeProbeLocked(const SlotView& h, DoneList& done) {
  if (CallChecker* checker = owner_->callChecker(); checker != nullptr) {
    Status conflict = checker->onArrival(peer_, h.tag, h.stamp);
    if (!conflict.ok()) {
      owner_->failLocked(conflict, done);
      return false;
    }
  }
  // Its one empty piece is consumed as a message nobody receives.
  streamTo_ = nullptr;
  streamUnexpected_ = nullptr;
  streaming_ = h.kind == SlotKind::kData;
  return true;
}

bool ShmLink::startMessageLocked(const SlotView& h, DoneList& done) {
  if (isProbeTag(h.tag)) return takeProbeLocked(h, done);
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
  if (h.kind == SlotKind::kRndv) {
    std::unique_ptr<Unexpected> u = spare_.take(0);
    u->tag = h.tag;
    u->stamp = h.stamp;
    u->bytes = h.msgBytes;
    u->rendezvous = true;
    u->offer = Offer{h.remoteAddr, h.rndvId, h.rndvSeq, h.buffer};
    pushEarly(unexpected_, std::move(u));
    return true;
  }
  // Past the cap the ring is left full: the sender waits until receives are posted. Payloads
  // and entries both count (empty messages are held to the cap too); the first message is
  // always let in, as a message larger than the cap must be.
  if (unexpectedBytes_ + h.msgBytes + unexpected_.size() * kEntryBytes + kEntryBytes >
          owner_->options_.maxUnexpectedBytes &&
      !unexpected_.empty())
    return false;
  // Past the run-ahead allowance, a message of a collective call later than the last one
  // this rank has posted a receive for waits in the ring too: the sender (a reduce's leaf,
  // which sends and leaves) stops there instead of filling buffers that miss the cache.
  // It is let in when this rank posts a receive of that call, or any point-to-point
  // receive from this peer (which may sit behind it). No deadlock: one communicator runs
  // its calls in the same order on every rank, so whatever this rank's current call still
  // waits for was sent before the held message, by ranks in calls no later than this one.
  const std::uint64_t runAhead = owner_->options_.runAheadBytes;
  const std::uint64_t runAheadCount = owner_->options_.runAheadMessages;
  const bool pastAllowance =
      (runAhead > 0 && unexpectedBytes_ > 0 && unexpectedBytes_ + h.msgBytes > runAhead) ||
      (runAheadCount > 0 && unexpected_.size() >= runAheadCount);
  if (pastAllowance && owner_->hasCall_ && isEarlierCall(owner_->lastCall_, h.tag) &&
      !awaitsPointToPointLocked())
    return false;
  std::unique_ptr<Unexpected> u = spare_.take(h.msgBytes);
  u->tag = h.tag;
  u->stamp = h.stamp;
  u->bytes = h.msgBytes;
  unexpectedBytes_ += h.msgBytes;
  streamUnexpected_ = u.get();
  streamTo_ = nullptr;
  streaming_ = true;
  pushEarly(unexpected_, std::move(u));
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
      if (streamTo_ != nullptr && h.chunkBytes > 0 && forwardLocked(h, src, done)) {
        // Reduced straight into the fed send's slot.
      } else if (streamTo_ != nullptr && h.chunkBytes > 0) {
        if (streamCombine_)
          streamTo_->combine->take(h.offset, src, h.chunkBytes);
        else
          owner_->options_.copy(streamTo_->data + h.offset, src, h.chunkBytes,
                                copyExtent(h, streamTo_->feeds != nullptr));
        // Where the piece landed where its fed send reads (not a staging buffer), the send
        // copies it on while it is in cache.
        if (streamTo_->feeds != nullptr && (streamCombine_ || streamTo_->combine == nullptr))
          fedLocked(streamTo_, h.offset + h.chunkBytes, done);
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
    if (outStream_ == request) outStream_ = nullptr;
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
  outStream_ = nullptr;
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
